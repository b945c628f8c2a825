"""End-to-end table operations on the embedded default (SQLite + local warehouse)."""

from __future__ import annotations

import datetime as dt
import os
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import neve
from neve.errors import (
    CommitConflictError,
    DataSchemaMismatchError,
    ExpressionError,
    NoSuchSnapshotError,
    SchemaError,
    UnsupportedFormatVersionError,
)

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("amount", pa.float64()),
    ]
)


def rows(start: int, n: int, day0: int = 0) -> pa.Table:
    base = dt.datetime(2024, 1, 1, tzinfo=UTC)
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "name": [f"name-{i % 7}" for i in range(start, start + n)],
            "ts": [base + dt.timedelta(days=day0 + i % 10, hours=i % 24) for i in range(n)],
            "amount": [float(i) * 1.5 for i in range(start, start + n)],
        },
        schema=SCHEMA,
    )


def sorted_ids(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())


def files_under(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file()}


@pytest.fixture()
def table(sqlite_catalog: neve.Catalog) -> neve.Table:
    return sqlite_catalog.create_table(
        "db.events", SCHEMA, partition_by=["day(ts)", "bucket(4, id)"]
    )


def test_append_and_scan(table: neve.Table) -> None:
    table.append(rows(0, 100))
    table.append(rows(100, 50))
    assert len(table.snapshots()) == 2
    out = table.scan().to_arrow()
    assert sorted_ids(out) == list(range(150))
    snap = table.current_snapshot()
    assert snap is not None
    assert snap.summary["total-records"] == "150"
    assert snap.summary["added-records"] == "50"


def test_required_column_and_schema_mismatch_are_rejected_without_files(
    table: neve.Table, sqlite_catalog: neve.Catalog
) -> None:
    before = files_under(Path(sqlite_catalog.warehouse))
    bad = pa.table({"id": pa.array([1, None], pa.int64()), "name": ["a", "b"]})
    with pytest.raises(DataSchemaMismatchError):
        table.append(bad)
    with pytest.raises(DataSchemaMismatchError):
        table.append(pa.table({"id": [1], "nope": ["x"]}))
    assert table.current_snapshot() is None
    assert files_under(Path(sqlite_catalog.warehouse)) == before


def test_delete_whole_files_and_partial_rewrite(table: neve.Table) -> None:
    table.append(rows(0, 200))
    data_files_before = {t.file.file_path for t in table.scan().plan_files()}
    table.delete("id < 50")
    out = table.scan().to_arrow()
    assert sorted_ids(out) == list(range(50, 200))
    snap = table.current_snapshot()
    assert snap is not None and snap.operation.value in ("delete", "overwrite")
    # a whole day partition: dropped from metadata without rewriting
    table.delete("ts >= '2024-01-03T00:00:00+00:00' and ts < '2024-01-04T00:00:00+00:00'")
    out = table.scan().to_arrow()
    days = pc.day(out.column("ts")).to_pylist()
    assert 3 not in days
    assert table.current_snapshot().summary.get("added-data-files") is None  # type: ignore[union-attr]
    assert data_files_before  # sanity: the table had files


def test_delete_with_bad_filter_changes_nothing(table: neve.Table) -> None:
    table.append(rows(0, 10))
    loc = table.metadata_location
    with pytest.raises(ExpressionError):
        table.delete("no_such_column = 1")
    with pytest.raises(ExpressionError):
        table.delete("id = = 1")
    assert table.metadata_location == loc


def test_overwrite_with_filter_and_everything(table: neve.Table) -> None:
    table.append(rows(0, 100))
    table.overwrite(
        rows(1000, 5, day0=2),
        filter="ts >= '2024-01-03T00:00:00+00:00' and ts < '2024-01-05T00:00:00+00:00'",
    )
    out = table.scan().to_arrow()
    kept = [r for r in rows(0, 100).to_pylist() if not (3 <= r["ts"].day < 5)]
    expected = sorted([r["id"] for r in kept] + list(range(1000, 1005)))
    assert sorted_ids(out) == expected
    table.overwrite(rows(5000, 3))
    assert sorted_ids(table.scan().to_arrow()) == [5000, 5001, 5002]


def test_dynamic_partition_overwrite(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.dyn", SCHEMA, partition_by=["day(ts)"])
    t.append(rows(0, 100))  # days 1..10
    new = rows(900, 3)  # days 1..3
    t.dynamic_partition_overwrite(new)
    out = t.scan().to_arrow()
    old_kept = [r["id"] for r in rows(0, 100).to_pylist() if r["ts"].day > 3]
    assert sorted_ids(out) == sorted([*old_kept, 900, 901, 902])


def test_schema_evolution_reads_old_files(table: neve.Table) -> None:
    table.append(rows(0, 10))
    with table.update_schema() as u:
        u.rename_column("name", "label")
        u.add_column("extra", "long")
    table.append(
        pa.table(
            {
                "id": pa.array([100], pa.int64()),
                "label": ["new"],
                "ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=UTC)], pa.timestamp("us", tz="UTC")),
                "amount": [1.0],
                "extra": pa.array([7], pa.int64()),
            }
        )
    )
    out = table.scan().to_arrow()
    assert "label" in out.column_names and "name" not in out.column_names
    by_id = {r["id"]: r for r in out.to_pylist()}
    assert by_id[3]["label"] == "name-3" and by_id[3]["extra"] is None
    assert by_id[100]["extra"] == 7
    with pytest.raises(SchemaError), table.update_schema() as u:
        u.update_column("amount", field_type="int")  # double -> int is not a promotion


def test_time_travel_refs_and_rollback(table: neve.Table) -> None:
    table.append(rows(0, 10))
    first = table.current_snapshot()
    assert first is not None
    table.append(rows(10, 10))
    table.create_tag("v1", first.snapshot_id)
    table.create_branch("dev")
    assert sorted_ids(table.scan(ref="v1").to_arrow()) == list(range(10))
    assert sorted_ids(table.scan(snapshot_id=first.snapshot_id).to_arrow()) == list(range(10))
    assert sorted_ids(table.scan(as_of=first.timestamp_ms).to_arrow()) == list(range(10))
    table.append(rows(500, 2), branch="dev")
    assert sorted_ids(table.scan(ref="dev").to_arrow()) == [*range(20), 500, 501]
    assert sorted_ids(table.scan().to_arrow()) == list(range(20))
    table.rollback_to_snapshot(first.snapshot_id)
    assert sorted_ids(table.scan().to_arrow()) == list(range(10))
    with pytest.raises(NoSuchSnapshotError):
        table.scan(ref="nope")
    table.remove_tag("v1")
    assert "v1" not in table.refs()
    assert [e.snapshot_id for e in table.history()][-1] == first.snapshot_id


def test_concurrent_appends_all_land(sqlite_catalog: neve.Catalog) -> None:
    sqlite_catalog.create_table("db.conc", SCHEMA)
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            t = sqlite_catalog.load_table("db.conc")
            for j in range(3):
                t.append(rows(k * 100 + j * 10, 10))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    t = sqlite_catalog.load_table("db.conc")
    assert len(t.snapshots()) == 12
    assert len(sorted_ids(t.scan().to_arrow())) == 120


def test_conflicting_overwrite_fails_and_cleans_up(sqlite_catalog: neve.Catalog) -> None:
    t1 = sqlite_catalog.create_table("db.cf", SCHEMA, partition_by=["day(ts)"])
    t1.append(rows(0, 20))
    t2 = sqlite_catalog.load_table("db.cf")
    # a concurrent writer adds data inside the range t2 is about to replace
    t1.append(rows(100, 1))
    before = files_under(Path(sqlite_catalog.warehouse))
    with pytest.raises(CommitConflictError):
        t2.overwrite(rows(900, 1), filter="ts < '2024-01-02T00:00:00+00:00'")
    assert files_under(Path(sqlite_catalog.warehouse)) == before
    # an append from a stale handle rebases instead
    t2.append(rows(700, 1))
    assert 700 in sorted_ids(sqlite_catalog.load_table("db.cf").scan().to_arrow())


def test_transaction_commits_once(table: neve.Table) -> None:
    table.append(rows(0, 5))
    n_meta = len(table.metadata.metadata_log)
    with table.transaction() as tx:
        tx.set_properties({"owner": "tests"})
        tx.append(rows(5, 5))
    assert table.properties["owner"] == "tests"
    assert len(table.metadata.metadata_log) == n_meta + 1
    assert sorted_ids(table.scan().to_arrow()) == list(range(10))


def test_manifest_merging(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table(
        "db.merge", SCHEMA, properties={"commit.manifest.min-count-to-merge": "5"}
    )
    for i in range(12):
        t.append(rows(i * 2, 2))
    from neve.planning.manifests import read_manifest_list

    snap = t.current_snapshot()
    assert snap is not None
    manifests = read_manifest_list(t.io, snap.manifest_list)
    assert len(manifests) < 12
    assert sorted_ids(t.scan().to_arrow()) == list(range(24))


def test_v1_table_and_unknown_version(sqlite_catalog: neve.Catalog, tmp_path: Path) -> None:
    t = sqlite_catalog.create_table("db.v1", SCHEMA, partition_by=["month(ts)"], format_version=1)
    t.append(rows(0, 10))
    t.delete("id < 3")
    assert sorted_ids(sqlite_catalog.load_table("db.v1").scan().to_arrow()) == list(range(3, 10))
    with pytest.raises(UnsupportedFormatVersionError):
        sqlite_catalog.create_table("db.v9", SCHEMA, format_version=9)
    path = tmp_path / "bad.metadata.json"
    path.write_text('{"format-version": 7, "location": "/x", "last-column-id": 0}')
    with pytest.raises(UnsupportedFormatVersionError):
        sqlite_catalog.register_table("db.bad", str(path))
    assert not sqlite_catalog.table_exists("db.bad")


def test_rolled_files_respect_target_size(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table(
        "db.roll", SCHEMA, properties={"write.target-file-size-bytes": "20000"}
    )
    t.append(rows(0, 20000))
    assert len(t.scan().plan_files()) > 1
    assert len(sorted_ids(t.scan().to_arrow())) == 20000


def test_metadata_files_are_json_in_metadata_dir(table: neve.Table) -> None:
    table.append(rows(0, 3))
    assert table.metadata_location.endswith(".metadata.json")
    assert os.path.exists(table.metadata_location)


def test_to_batches_of_chosen_tasks(table: neve.Table) -> None:
    """to_batches(tasks) reads exactly the given planned tasks (the command's progress
    bar reads a scan one task at a time): together they give the whole scan's rows."""
    table.append(rows(0, 50))
    table.append(rows(50, 50, day0=3))
    table.delete("id < 10")
    scan = table.scan(filter="id < 80", columns=["id", "name"])
    tasks = scan.plan_files()
    assert len(tasks) >= 2
    per_task = [
        pa.Table.from_batches(list(scan.to_batches([t])), scan.to_arrow().schema) for t in tasks
    ]
    assert sum(t.num_rows for t in per_task) == scan.to_arrow().num_rows == 70
    assert sorted(i for t in per_task for i in t.column("id").to_pylist()) == list(range(10, 80))
    assert list(scan.to_batches([])) == []
    assert scan.arrow_schema() == scan.to_arrow().schema
    assert scan.arrow_schema().names == ["id", "name"]
