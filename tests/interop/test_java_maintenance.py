"""Snapshot expiration agrees with Iceberg-Java 1.10.2: on the same merge-on-read
history, Java's ``expire_snapshots`` procedure keeps the snapshots neve's plan keeps and
deletes as many files of each kind as neve's dry run says; after neve expires a table,
Java and pyiceberg read every kept snapshot with neve's rows."""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergCatalog

from javaengine import IcebergJava, canon_rows
from neve.catalog import SqlCatalog
from neve.table.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "table"))
from test_expire_snapshots import SCHEMA, history_table, rows

pytestmark = pytest.mark.java


def history(catalog: SqlCatalog, ns: str, name: str, version: int) -> Table:
    return history_table(catalog, version, name=f"{ns}.{name}")


def java_timestamp(ms: int) -> str:
    when = dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)
    return f"TIMESTAMP '{when.strftime('%Y-%m-%d %H:%M:%S.%f')[:-3]}'"


def neve_rows(t: Table, snapshot_id: int) -> Counter[Any]:
    return canon_rows(t.scan(snapshot_id=snapshot_id).to_arrow().to_pylist())


@pytest.mark.parametrize("version", [2, 3])
def test_java_expires_what_neve_plans(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str, version: int
) -> None:
    t = history(java_catalog, java_ns, "t", version)
    snaps = t.snapshots()
    cutoff = snaps[5].timestamp_ms
    plan = t.maintenance.expire_snapshots(older_than=cutoff, dry_run=True)
    out = iceberg_java.sql(
        f"CALL neve.system.expire_snapshots(table => '{java_ns}.t', "
        f"older_than => {java_timestamp(cutoff)}, retain_last => 1)"
    ).dicts()[0]
    java_counts = {
        k.removeprefix("deleted_").removesuffix("_count"): int(v) for k, v in out.items()
    }
    assert java_counts == dict(plan.deleted)
    kept = {s.snapshot_id for s in java_catalog.load_table((java_ns, "t")).snapshots()}
    assert kept == {s.snapshot_id for s in snaps} - set(plan.expired_snapshot_ids)


@pytest.mark.parametrize("version", [2, 3])
def test_java_and_pyiceberg_read_what_neve_expired(
    iceberg_java: IcebergJava,
    java_catalog: SqlCatalog,
    java_ns: str,
    java_setup: Any,
    version: int,
) -> None:
    t = history(java_catalog, java_ns, "t", version)
    snaps = t.snapshots()
    before = {s.snapshot_id: neve_rows(t, s.snapshot_id) for s in snaps}
    result = t.maintenance.expire_snapshots(older_than=snaps[4].timestamp_ms)
    assert len(result.expired_snapshot_ids) == 4
    t = java_catalog.load_table((java_ns, "t"))
    pyice = PyIcebergCatalog("neve", uri=java_setup.uri, warehouse=f"file://{java_setup.warehouse}")
    theirs = pyice.load_table(f"{java_ns}.t")
    for s in t.snapshots():
        sid = s.snapshot_id
        assert neve_rows(t, sid) == before[sid]
        got = iceberg_java.sql(f"SELECT id, cat, v FROM neve.{java_ns}.t VERSION AS OF {sid}")
        assert canon_rows(got.rows) == before[sid]
        assert canon_rows(theirs.scan(snapshot_id=sid).to_arrow().to_pylist()) == before[sid]
    java_snapshots = iceberg_java.sql(f"SELECT snapshot_id FROM neve.{java_ns}.t.snapshots").rows
    assert {r[0] for r in java_snapshots} == {s.snapshot_id for s in t.snapshots()}


def test_java_cleans_the_specs_and_schemas_neve_plans_to_clean(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    t = java_catalog.create_table((java_ns, "t"), SCHEMA, partition_by=["cat"])
    t.append(rows(range(0, 12)))
    with t.update_spec() as u:
        u.add_field("bucket(2, id)")
    with t.update_schema() as s:
        s.add_column("extra", "long")
    t = java_catalog.load_table((java_ns, "t"))
    t.overwrite(rows(range(20, 26)))
    t.append(rows(range(30, 33)))
    t = java_catalog.load_table((java_ns, "t"))
    now = int(time.time() * 1000) + 1
    plan = t.maintenance.expire_snapshots(
        older_than=now, retain_last=1, clean_expired_metadata=True, dry_run=True
    )
    assert (plan.removed_spec_ids, plan.removed_schema_ids) == ((0,), (0,))
    out = iceberg_java.sql(
        f"CALL neve.system.expire_snapshots(table => '{java_ns}.t', "
        f"older_than => {java_timestamp(now)}, retain_last => 1, clean_expired_metadata => true)"
    ).dicts()[0]
    java_counts = {
        k.removeprefix("deleted_").removesuffix("_count"): int(v) for k, v in out.items()
    }
    assert java_counts == dict(plan.deleted)
    after = java_catalog.load_table((java_ns, "t"))
    assert sorted(after.specs()) == [1] and sorted(after.schemas()) == [1]
    assert [s.snapshot_id for s in after.snapshots()] == [t.snapshots()[-1].snapshot_id]


@pytest.mark.parametrize("upgrade", [False, True])
def test_neve_merges_javas_partition_scoped_position_deletes(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str, upgrade: bool
) -> None:
    """Iceberg-Java writes v2 position deletes per partition (several per data file);
    neve merges them into one file-scoped file per data file (or DVs after an upgrade to
    v3), and Java reads the same rows at every snapshot."""
    name = f"neve.{java_ns}.t"
    iceberg_java.sql(
        f"CREATE TABLE {name} (id bigint NOT NULL, cat string, v int) USING iceberg "
        "PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='2', "
        "'write.delete.mode'='merge-on-read', 'write.delete.granularity'='partition')"
    )
    for start in (0, 30):
        values = ", ".join(f"({i}, '{'ab'[i % 2]}', {i})" for i in range(start, start + 30))
        iceberg_java.sql(f"INSERT INTO {name} VALUES {values}")
    for where in ("id % 7 = 0", "id % 5 = 1", "id > 55"):
        iceberg_java.sql(f"DELETE FROM {name} WHERE {where}")
    t = java_catalog.load_table((java_ns, "t"))
    kinds = iceberg_java.sql(f"SELECT referenced_data_file FROM {name}.delete_files").rows
    assert len(kinds) >= 4 and all(r[0] is None for r in kinds)  # partition-scoped
    before = {s.snapshot_id: neve_rows(t, s.snapshot_id) for s in t.snapshots()}
    if upgrade:
        t.upgrade_format_version(3)
        t = java_catalog.load_table((java_ns, "t"))
    result = t.maintenance.rewrite_position_delete_files()
    assert result.data_files == 4
    t = java_catalog.load_table((java_ns, "t"))
    after = iceberg_java.sql(
        f"SELECT file_format, referenced_data_file FROM {name}.delete_files"
    ).rows
    data = {r[0] for r in iceberg_java.sql(f"SELECT file_path FROM {name}.data_files").rows}
    assert sorted(r[1] for r in after) == sorted(data)  # one per data file, file-scoped
    assert {r[0] for r in after} == ({"PUFFIN"} if upgrade else {"PARQUET"})
    for sid, want in before.items():
        got = iceberg_java.sql(f"SELECT id, cat, v FROM {name} VERSION AS OF {sid}").rows
        assert canon_rows(got) == want
        assert neve_rows(t, sid) == want
    assert (
        canon_rows(iceberg_java.sql(f"SELECT id, cat, v FROM {name}").rows)
        == max(before.items(), key=lambda kv: t.snapshot_by_id(kv[0]).sequence_number)[1]
    )


@pytest.mark.parametrize("version", [2, 3])
def test_java_reads_the_manifests_neve_rewrote(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str, version: int
) -> None:
    t = java_catalog.create_table(
        (java_ns, "t"),
        SCHEMA,
        partition_by=["cat"],
        format_version=version,
        properties={"commit.manifest-merge.enabled": "false"},
    )
    for i in range(6):
        t.append(rows(range(i * 10, i * 10 + 10)))
    t.delete("id in (3, 14, 25)")
    name = f"neve.{java_ns}.t"
    cols = "id, cat, v" + (", _row_id, _last_updated_sequence_number" if version >= 3 else "")
    before = canon_rows(iceberg_java.sql(f"SELECT {cols} FROM {name}").rows)
    result = java_catalog.load_table((java_ns, "t")).maintenance.rewrite_manifests()
    assert result.rewritten_manifests_count >= 6 and result.added_manifests_count == 1
    assert canon_rows(iceberg_java.sql(f"SELECT {cols} FROM {name}").rows) == before
    manifests = iceberg_java.sql(f"SELECT content FROM {name}.manifests").rows
    assert [r[0] for r in manifests].count(0) == 1  # one data manifest


@pytest.mark.parametrize("version", [2, 3])
def test_neve_compacts_a_java_merge_on_read_table(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str, version: int
) -> None:
    """Iceberg-Java writes small files and merge-on-read deletes (position deletes in
    v2, DVs in v3); neve compacts them; Java reads the same rows (and row ids in v3)."""
    name = f"neve.{java_ns}.t"
    iceberg_java.sql(
        f"CREATE TABLE {name} (id bigint NOT NULL, cat string, v int) USING iceberg "
        f"PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='{version}', "
        "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')"
    )
    for start in range(0, 60, 10):
        values = ", ".join(f"({i}, '{'ab'[i % 2]}', {i})" for i in range(start, start + 10))
        iceberg_java.sql(f"INSERT INTO {name} VALUES {values}")
    iceberg_java.sql(f"DELETE FROM {name} WHERE id % 7 = 0")
    iceberg_java.sql(f"UPDATE {name} SET v = -1 WHERE id % 9 = 1")
    cols = "id, cat, v" + (", _row_id" if version >= 3 else "")
    before = canon_rows(iceberg_java.sql(f"SELECT {cols} FROM {name}").rows)
    t = java_catalog.load_table((java_ns, "t"))
    result = t.maintenance.rewrite_data_files()
    assert result.rewritten_data_files_count >= 12 and result.added_data_files_count == 2
    assert canon_rows(iceberg_java.sql(f"SELECT {cols} FROM {name}").rows) == before
    files = iceberg_java.sql(f"SELECT count(*) FROM {name}.data_files").scalar()
    assert files == 2
    # Java's v2 position deletes that are not file-scoped stay behind, applying to no
    # file (as after Java's own compaction without remove-dangling-deletes); the
    # delete file rewrite drops them as dangling
    java_catalog.load_table((java_ns, "t")).maintenance.rewrite_position_delete_files()
    assert iceberg_java.sql(f"SELECT count(*) FROM {name}.delete_files").scalar() == 0
    assert canon_rows(iceberg_java.sql(f"SELECT {cols} FROM {name}").rows) == before


@pytest.mark.parametrize("version", [2, 3])
def test_neve_compaction_rebases_over_a_java_delete(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str, version: int
) -> None:
    """neve plans and reads a sorting compaction, then Iceberg-Java deletes rows of the
    files being compacted (partition-scoped position deletes in v2, DVs in v3); neve
    carries the deletes over to its new files, keeps the starting sequence number and
    removes the deletes left dangling; Java reads the rows it left, and the new files
    with the starting snapshot's data sequence number."""
    name = f"neve.{java_ns}.t"
    iceberg_java.sql(
        f"CREATE TABLE {name} (id bigint NOT NULL, cat string, v int) USING iceberg "
        f"PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='{version}', "
        "'write.delete.mode'='merge-on-read', 'write.delete.granularity'='partition')"
    )
    for start in range(0, 60, 10):
        values = ", ".join(f"({i}, '{'ab'[i % 2]}', {i})" for i in range(start, start + 10))
        iceberg_java.sql(f"INSERT INTO {name} VALUES {values}")
    iceberg_java.sql(f"DELETE FROM {name} WHERE id % 7 = 0")
    t = java_catalog.load_table((java_ns, "t"))
    start = t.current_snapshot()
    assert start is not None
    cols = "id, cat, v" + (", _row_id" if version >= 3 else "")

    def race(done: int, total: int) -> None:
        if done == 1:  # written, not committed: Java deletes from the same files
            iceberg_java.sql(f"DELETE FROM {name} WHERE id % 5 = 1")

    result = t.maintenance.rewrite_data_files(
        strategy="sort",
        sort_order="v desc",
        options={"remove-dangling-deletes": "true"},
        progress=race,
    )
    assert result.added_data_files_count == 2
    want = {(i, "ab"[i % 2], i) for i in range(60) if i % 7 and i % 5 != 1}
    got = iceberg_java.sql(f"SELECT {cols} FROM {name}").rows
    assert {tuple(r[:3]) for r in got} == want and len(got) == len(want)
    seqs = iceberg_java.sql(
        f"SELECT DISTINCT sequence_number FROM {name}.entries "
        "WHERE status < 2 AND data_file.content = 0"
    ).rows
    assert [r[0] for r in seqs] == [start.sequence_number]
    # v3: only the carried-over DVs of the new files are left. v2: Java's
    # partition-scoped position deletes stay too: their sequence numbers are not lower
    # than the new files' (the starting one), so by Iceberg-Java's rule they are not
    # dangling; the delete file rewrite, which reads them, drops them
    count = f"SELECT count(*) FROM {name}.delete_files"
    assert iceberg_java.sql(count).scalar() == (2 if version >= 3 else 6)
    java_catalog.load_table((java_ns, "t")).maintenance.rewrite_position_delete_files()
    assert iceberg_java.sql(count).scalar() == 2
    got = iceberg_java.sql(f"SELECT {cols} FROM {name}").rows
    assert {tuple(r[:3]) for r in got} == want and len(got) == len(want)
