"""Cross-engine reads of a table neve maintained on Spark: neve compacts a merge-on-read
history (v2 position deletes, v3 deletion vectors) with
``neve.spark.maintenance.rewrite_data_files``, then expires the superseded snapshots on
Spark; Iceberg-Java 1.10.2 and pyiceberg read every kept snapshot with neve's rows (and,
in v3, Java reads the same row ids and sequence numbers); Java reads a v3 Spark
compaction that rebased over a delete committed meanwhile (DVs on the new files)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergCatalog
from pyspark.sql import SparkSession

from javaengine import IcebergJava, canon_rows
from neve.catalog import SqlCatalog
from neve.spark import maintenance
from neve.spec.snapshot import Operation
from neve.table.table import Table
from reference_reader import live_entries, reached_files

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "table"))
from test_expire_snapshots import history_table

pytestmark = [pytest.mark.java, pytest.mark.spark]


def neve_rows(t: Table, snapshot_id: int, columns: list[str]) -> Counter[Any]:
    return canon_rows(t.scan(snapshot_id=snapshot_id, columns=columns).to_arrow().to_pylist())


# v2 (position delete files) in make test-long only (make test's time budget): v3
# compacts deletion vectors, and tests/spark/test_spark_maintenance_rewrites.py compacts
# and expires v2 tables on Spark
@pytest.mark.parametrize("version", [pytest.param(2, marks=pytest.mark.long), 3])
def test_java_and_pyiceberg_read_what_neve_compacted_and_expired_on_spark(
    spark: SparkSession,
    iceberg_java: IcebergJava,
    java_catalog: SqlCatalog,
    java_ns: str,
    java_setup: Any,
    version: int,
) -> None:
    t = history_table(java_catalog, version, name=f"{java_ns}.t")
    lineage = ["_row_id", "_last_updated_sequence_number"] if version >= 3 else []
    cols = ["id", "cat", "v"]
    want = neve_rows(t, t.snapshots()[-1].snapshot_id, cols + lineage)
    # min-input-files=2: the data files of every partition holding two or more go
    per_partition = Counter(
        e.partition for e in live_entries(t.metadata_location) if e.content == 0
    )
    done = maintenance.rewrite_data_files(spark, t, options={"min-input-files": "2"})
    assert done.rewritten_data_files_count == sum(n for n in per_partition.values() if n >= 2)
    t = java_catalog.load_table((java_ns, "t"))
    head = t.current_snapshot()
    assert head is not None and head.operation is Operation.REPLACE
    before = {s.snapshot_id: neve_rows(t, s.snapshot_id, cols) for s in t.snapshots()}
    kept_from = t.snapshots()[-3]  # keep the compaction and the two snapshots before it
    # by kind, the files only the expired snapshots reach, read from the metadata apart
    # from neve
    ids = [s.snapshot_id for s in t.snapshots()]
    only_expired = reached_files(t.metadata_location, ids[:-3])
    still_kept = reached_files(t.metadata_location, ids[-3:])
    gone = maintenance.expire_snapshots(spark, t, older_than=kept_from.timestamp_ms)
    assert gone.expired_snapshot_ids == tuple(sorted(ids[:-3])) and not gone.failed
    for kind, paths in only_expired.items():
        assert gone.deleted[kind] == len(paths - still_kept[kind]), kind
    t = java_catalog.load_table((java_ns, "t"))
    assert len(t.snapshots()) == 3

    name = f"neve.{java_ns}.t"
    pyice = PyIcebergCatalog("neve", uri=java_setup.uri, warehouse=f"file://{java_setup.warehouse}")
    theirs = pyice.load_table(f"{java_ns}.t")
    for s in t.snapshots():
        sid = s.snapshot_id
        assert neve_rows(t, sid, cols) == before[sid]
        got = iceberg_java.sql(f"SELECT id, cat, v FROM {name} VERSION AS OF {sid}")
        assert canon_rows(got.rows) == before[sid]
        assert canon_rows(theirs.scan(snapshot_id=sid).to_arrow().to_pylist()) == before[sid]
    java_head = iceberg_java.sql(f"SELECT {', '.join(cols + lineage)} FROM {name}").rows
    assert canon_rows(java_head) == want
    assert iceberg_java.sql(f"SELECT count(*) FROM {name}.delete_files").scalar() == 0


def test_java_reads_a_spark_compaction_that_rebased_over_a_delete(
    spark: SparkSession, iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    """v3: a delete lands between the Spark job and the commit; the compaction carries
    it over as DVs on the files Spark wrote, and Java reads the same rows and lineage."""
    t = history_table(java_catalog, 3, name=f"{java_ns}.r")
    other = java_catalog.load_table((java_ns, "r"))
    old = {task.file.file_path for task in t.scan().plan_files()}

    def race(done: int, total: int) -> None:
        if done == 1:  # written, not committed
            other.delete("id in (11, 14, 15, 18)")

    maintenance.rewrite_data_files(spark, t, options={"min-input-files": "2"}, progress=race)
    t = java_catalog.load_table((java_ns, "r"))
    head = t.current_snapshot()
    assert head is not None and head.operation is Operation.REPLACE
    carried = [
        d
        for task in t.scan().plan_files()
        for d in task.delete_files
        if d.referenced_data_file not in old
    ]
    assert carried and all(d.is_deletion_vector for d in carried)
    cols = ["id", "cat", "v", "_row_id", "_last_updated_sequence_number"]
    want = neve_rows(t, head.snapshot_id, cols)
    assert not {r[0] for r in want} & {11, 14, 15, 18}
    got = iceberg_java.sql(f"SELECT {', '.join(cols)} FROM neve.{java_ns}.r").rows
    assert canon_rows(got) == want
