"""Cross-engine reads of a table neve maintained on Spark (issue 13): neve compacts a
merge-on-read history (v2 position deletes, v3 deletion vectors) with
``neve.spark.maintenance.rewrite_data_files``, then expires the superseded snapshots
on Spark; Iceberg-Java 1.10.2 and pyiceberg read every kept snapshot with neve's rows
(and, in v3, Java reads the same row ids and sequence numbers)."""

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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "table"))
from test_expire_snapshots import history_table

pytestmark = [pytest.mark.java, pytest.mark.spark]


def neve_rows(t: Table, snapshot_id: int, columns: list[str]) -> Counter[Any]:
    return canon_rows(t.scan(snapshot_id=snapshot_id, columns=columns).to_arrow().to_pylist())


@pytest.mark.parametrize("version", [2, 3])
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
    done = maintenance.rewrite_data_files(spark, t, options={"min-input-files": "2"})
    assert done.rewritten_data_files_count > 0
    t = java_catalog.load_table((java_ns, "t"))
    head = t.current_snapshot()
    assert head is not None and head.operation is Operation.REPLACE
    before = {s.snapshot_id: neve_rows(t, s.snapshot_id, cols) for s in t.snapshots()}
    kept_from = t.snapshots()[-3]  # keep the compaction and the two snapshots before it
    gone = maintenance.expire_snapshots(spark, t, older_than=kept_from.timestamp_ms)
    assert gone.expired_snapshot_ids and sum(gone.deleted.values()) > 0 and not gone.failed
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
