"""Metadata tables (``table.inspect``): values checked against what the tables were built
from, and against pyiceberg's ``inspect`` tables on the same catalog."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

import neve
from neve.arrow.deletes import write_equality_delete_file, write_position_delete_file
from neve.catalog import Catalog, SqlCatalog
from neve.errors import NoSuchSnapshotError
from neve.spec.manifest import DataFile
from neve.spec.snapshot import Snapshot
from neve.spec.values import civil_to_days
from reference_reader import manifest_list

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("cat", pa.string()),
        pa.field("d", pa.date32()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("price", pa.decimal128(10, 2)),
    ]
)


def rows(ids: range) -> pa.Table:
    t0 = dt.datetime(2024, 1, 1, tzinfo=UTC)
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "cat": [["a", "b", "c"][i % 3] for i in ids],
            "d": [dt.date(2024, 1 + i % 4, 1 + i % 28) for i in ids],
            "ts": [t0 + dt.timedelta(hours=5 * i) for i in ids],
            "price": [Decimal(i) / Decimal(4) for i in ids],
        },
        schema=SCHEMA,
    )


def month_of(d: dt.date) -> int:
    return (d.year - 1970) * 12 + d.month - 1


def ms(col: pa.ChunkedArray) -> list[int | None]:
    """Timestamps as epoch milliseconds (neve's are UTC-aware, pyiceberg's naive)."""
    return col.cast(pa.timestamp("ms")).cast(pa.int64()).to_pylist()  # type: ignore[no-any-return]


def snap(t: neve.Table) -> Snapshot:
    s = t.current_snapshot()
    assert s is not None
    return s


def pyiceberg_table(catalog: SqlCatalog, name: str) -> Any:
    """``name`` as pyiceberg loads it from the same SQLite database."""
    pyiceberg = PyIcebergSqlCatalog(
        catalog.name, uri=catalog.uri, warehouse=f"file://{catalog.warehouse}"
    )
    return pyiceberg.load_table(name)


def add_delete_files(t: neve.Table, files: list[DataFile]) -> None:
    with t.transaction() as tx:
        tx.add_files(files)


# -- tables from the metadata file ---------------------------------------------------


def test_snapshots_history_refs_and_metadata_log(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    t = catalog.create_table("db.events", SCHEMA, partition_by=["cat"])
    t.append(rows(range(0, 30)))
    s1 = snap(t)
    t.append(rows(range(30, 40)), snapshot_properties={"writer": "test"})
    s2 = snap(t)
    t.delete("cat = 'a'")
    s3 = snap(t)
    t.create_tag("v1", s1.snapshot_id, max_ref_age_ms=86_400_000)
    t.create_branch("dev", s2.snapshot_id, min_snapshots_to_keep=3, max_snapshot_age_ms=1000)
    t.append(rows(range(100, 105)), branch="dev")
    dev_head = t.metadata.refs["dev"].snapshot_id

    inspect = t.inspect
    snaps = inspect.snapshots()
    assert snaps.column("snapshot_id").to_pylist() == [
        s1.snapshot_id,
        s2.snapshot_id,
        s3.snapshot_id,
        dev_head,
    ]
    assert snaps.column("parent_id").to_pylist() == [
        None,
        s1.snapshot_id,
        s2.snapshot_id,
        s2.snapshot_id,
    ]
    assert snaps.column("operation").to_pylist() == ["append", "append", "delete", "append"]
    assert ms(snaps.column("committed_at")) == [s.timestamp_ms for s in t.snapshots()]
    assert snaps.column("manifest_list").to_pylist() == [s.manifest_list for s in t.snapshots()]
    summaries = [dict(m) for m in snaps.column("summary").to_pylist()]
    assert [s["total-records"] for s in summaries] == ["30", "40", "26", "45"]
    assert summaries[1]["writer"] == "test"
    assert summaries[2]["deleted-records"] == "14"
    assert all("operation" not in s for s in summaries)

    history = inspect.history()
    assert history.column("snapshot_id").to_pylist() == [
        s1.snapshot_id,
        s2.snapshot_id,
        s3.snapshot_id,
    ]  # a commit to another branch is not in main's log
    assert history.column("parent_id").to_pylist() == [None, s1.snapshot_id, s2.snapshot_id]
    assert history.column("is_current_ancestor").to_pylist() == [True, True, True]
    assert ms(history.column("made_current_at")) == [e.timestamp_ms for e in t.history()]

    refs = {r["name"]: r for r in inspect.refs().to_pylist()}
    assert refs == {
        "main": {
            "name": "main",
            "type": "BRANCH",
            "snapshot_id": s3.snapshot_id,
            "max_reference_age_in_ms": None,
            "min_snapshots_to_keep": None,
            "max_snapshot_age_in_ms": None,
        },
        "v1": {
            "name": "v1",
            "type": "TAG",
            "snapshot_id": s1.snapshot_id,
            "max_reference_age_in_ms": 86_400_000,
            "min_snapshots_to_keep": None,
            "max_snapshot_age_in_ms": None,
        },
        "dev": {
            "name": "dev",
            "type": "BRANCH",
            "snapshot_id": dev_head,
            "max_reference_age_in_ms": None,
            "min_snapshots_to_keep": 3,
            "max_snapshot_age_in_ms": 1000,
        },
    }

    log = inspect.metadata_log_entries()
    md = t.metadata
    assert log.column("file").to_pylist() == [
        *(e.metadata_file for e in md.metadata_log),
        t.metadata_location,
    ]
    assert len(log) == 7  # create, 3 commits on main, tag, branch, commit on dev
    assert ms(log.column("timestamp")) == [
        *(e.timestamp_ms for e in md.metadata_log),
        md.last_updated_ms,
    ]
    # the snapshot current on main when each file was written: none for the created
    # table, then s1, s2, s3, s3 (tag), s3 (branch), s3 (dev commit leaves main alone)
    expected = [None, s1, s2, s3, s3, s3, s3]
    assert log.column("latest_snapshot_id").to_pylist() == [
        s.snapshot_id if s else None for s in expected
    ]
    assert log.column("latest_sequence_number").to_pylist() == [
        s.sequence_number if s else None for s in expected
    ]
    assert log.column("latest_schema_id").to_pylist() == [
        s.schema_id if s else None for s in expected
    ]


def test_history_marks_rolled_back_snapshots(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.rb", SCHEMA)
    t.append(rows(range(0, 5)))
    s1 = snap(t)
    t.append(rows(range(5, 10)))
    s2 = snap(t)
    t.rollback_to_snapshot(s1.snapshot_id)
    t.append(rows(range(10, 12)))
    s3 = snap(t)
    history = t.inspect.history().to_pylist()
    assert [(h["snapshot_id"], h["parent_id"], h["is_current_ancestor"]) for h in history] == [
        (s1.snapshot_id, None, True),
        (s2.snapshot_id, s1.snapshot_id, False),
        (s1.snapshot_id, None, True),
        (s3.snapshot_id, s1.snapshot_id, True),
    ]


def test_empty_table_gives_empty_tables_and_unknown_snapshot_raises(
    sqlite_catalog: neve.Catalog,
) -> None:
    t = sqlite_catalog.create_table("db.empty", SCHEMA, partition_by=["cat"])
    inspect = t.inspect
    for name in ("snapshots", "history", "refs"):
        assert getattr(inspect, name)().num_rows == 0, name
    for name in (
        "manifests",
        "files",
        "data_files",
        "delete_files",
        "entries",
        "partitions",
    ):
        out = getattr(inspect, name)()
        assert out.num_rows == 0, name
        if name not in ("manifests", "entries"):
            assert out.schema.field("partition").type.names == ["cat"], name
    assert inspect.entries().schema.field("data_file").type.field("partition").type.names == ["cat"]
    assert inspect.metadata_log_entries().column("file").to_pylist() == [t.metadata_location]
    t.append(rows(range(3)))
    with pytest.raises(NoSuchSnapshotError):
        t.inspect.files(snapshot_id=123)
    with pytest.raises(NoSuchSnapshotError):
        t.inspect.partitions(snapshot_id=123)


# -- tables from manifests -----------------------------------------------------------


def test_files_entries_manifests_and_partitions_of_a_partitioned_table(
    sqlite_catalog: neve.Catalog,
) -> None:
    t = sqlite_catalog.create_table("db.parts", SCHEMA, partition_by=["cat", "month(d)"])
    first = rows(range(0, 60))
    t.append(first)
    s1 = snap(t)
    t.append(rows(range(60, 90)))
    s2 = snap(t)
    t.delete("cat = 'b'")  # drops whole files of partition cat=b
    s3 = snap(t)
    t.overwrite(rows(range(200, 236, 3)), filter="cat = 'c'")  # all cat=c
    s4 = snap(t)
    live = t.scan().to_arrow()

    # files: one row per live file; counts per partition add up to the live rows
    files = t.inspect.files()
    assert files.num_rows == len(t.scan().plan_files())
    assert sum(files.column("record_count").to_pylist()) == live.num_rows
    assert set(files.column("content").to_pylist()) == {0}
    assert set(files.column("file_format").to_pylist()) == {"PARQUET"}
    assert set(files.column("spec_id").to_pylist()) == {0}
    assert {p["cat"] for p in files.column("partition").to_pylist()} == {"a", "c"}
    expected_parts = Counter(
        (c, month_of(d))
        for c, d in zip(live.column("cat").to_pylist(), live.column("d").to_pylist(), strict=True)
    )
    got: Counter[tuple[str, int]] = Counter()
    for p, n in zip(
        files.column("partition").to_pylist(), files.column("record_count").to_pylist(), strict=True
    ):
        got[(p["cat"], p["d_month"])] += n
    assert got == expected_parts
    assert files.equals(t.inspect.data_files())
    assert t.inspect.delete_files().num_rows == 0

    # time travel: the first snapshot had every partition of the first append
    old = t.inspect.files(snapshot_id=s1.snapshot_id)
    assert sum(old.column("record_count").to_pylist()) == 60
    first_parts = {(r["cat"], month_of(r["d"])) for r in first.to_pylist()}
    assert {(p["cat"], p["d_month"]) for p in old.column("partition").to_pylist()} == first_parts

    # partitions: row, file and size totals per partition
    parts = t.inspect.partitions().to_pylist()
    assert {
        (r["partition"]["cat"], r["partition"]["d_month"]): r["record_count"] for r in parts
    } == dict(expected_parts)
    files_per_part = Counter(
        (p["cat"], p["d_month"]) for p in files.column("partition").to_pylist()
    )
    assert {
        (r["partition"]["cat"], r["partition"]["d_month"]): r["file_count"] for r in parts
    } == dict(files_per_part)
    assert sum(r["total_data_file_size_in_bytes"] for r in parts) == sum(
        files.column("file_size_in_bytes").to_pylist()
    )
    assert all(r["spec_id"] == 0 and r["position_delete_file_count"] == 0 for r in parts)
    # cat=c was rewritten by the overwrite (s4); cat=a files were added by s1 or s2
    by_cat: dict[str, set[int]] = {}
    for r in parts:
        by_cat.setdefault(r["partition"]["cat"], set()).add(r["last_updated_snapshot_id"])
    assert by_cat["c"] == {s4.snapshot_id}
    assert by_cat["a"] <= {s1.snapshot_id, s2.snapshot_id}
    times = {s.snapshot_id: s.timestamp_ms for s in t.snapshots()}
    parts_tbl = t.inspect.partitions()
    assert ms(parts_tbl.column("last_updated_at")) == [
        times[i] for i in parts_tbl.column("last_updated_snapshot_id").to_pylist()
    ]
    old_parts = t.inspect.partitions(snapshot_id=s2.snapshot_id)
    assert sum(old_parts.column("record_count").to_pylist()) == 90
    assert sum(old_parts.column("file_count").to_pylist()) == len(
        t.scan(snapshot_id=s2.snapshot_id).plan_files()
    )

    # entries: deleted entries of the current snapshot's manifests are there too
    entries = t.inspect.entries()
    status = Counter(entries.column("status").to_pylist())
    assert status[0] + status[1] == files.num_rows
    data_files = entries.column("data_file").to_pylist()
    statuses = entries.column("status").to_pylist()
    deleted = [f for f, s in zip(data_files, statuses, strict=True) if s == 2]
    assert deleted and {f["partition"]["cat"] for f in deleted} == {"c"}
    assert set(entries.column("snapshot_id").to_pylist()) >= {s4.snapshot_id}
    live_paths = {f["file_path"] for f, s in zip(data_files, statuses, strict=True) if s != 2}
    assert live_paths == set(files.column("file_path").to_pylist())
    for e in entries.to_pylist():
        assert e["sequence_number"] is not None and e["file_sequence_number"] is not None
        if e["status"] == 1:
            assert e["snapshot_id"] == s4.snapshot_id and e["sequence_number"] == s4.sequence_number
    s1_entries = t.inspect.entries(snapshot_id=s1.snapshot_id)
    assert set(s1_entries.column("status").to_pylist()) == {1}
    assert set(s1_entries.column("snapshot_id").to_pylist()) == {s1.snapshot_id}
    assert set(s1_entries.column("sequence_number").to_pylist()) == {s1.sequence_number}

    # manifests: counts agree with the entries of each manifest
    manifests = t.inspect.manifests()
    listed = manifest_list(t.metadata_location)  # read apart from neve
    assert manifests.num_rows == len(listed)
    assert set(manifests.column("path").to_pylist()) == {m["manifest_path"] for m in listed}
    assert sum(manifests.column("added_data_files_count").to_pylist()) == status[1]
    assert sum(manifests.column("existing_data_files_count").to_pylist()) == status[0]
    assert sum(manifests.column("deleted_data_files_count").to_pylist()) == status[2]
    assert set(manifests.column("partition_spec_id").to_pylist()) == {0}
    summaries = [s for ms_ in manifests.column("partition_summaries").to_pylist() for s in ms_]
    cats = [s for i, s in enumerate(summaries) if i % 2 == 0]
    months = [s for i, s in enumerate(summaries) if i % 2 == 1]
    assert {s["lower_bound"] for s in cats} <= {"a", "b", "c"}
    assert all(m["lower_bound"] is None or m["lower_bound"].startswith("2024-0") for m in months)
    old_manifests = t.inspect.manifests(snapshot_id=s1.snapshot_id).to_pylist()
    assert len(old_manifests) == 1
    only = old_manifests[0]
    assert only["added_snapshot_id"] == s1.snapshot_id
    assert only["added_data_files_count"] == len(first_parts)
    assert [s["lower_bound"] for s in only["partition_summaries"]] == ["a", "2024-01"]
    assert [s["upper_bound"] for s in only["partition_summaries"]] == ["c", "2024-04"]
    after_delete = t.inspect.partitions(snapshot_id=s3.snapshot_id)
    assert "b" not in {p["cat"] for p in after_delete.column("partition").to_pylist()}
    assert sum(after_delete.column("record_count").to_pylist()) == 60


def test_readable_metrics_are_decoded_bounds(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.metrics", SCHEMA)
    data = rows(range(10, 50))
    t.append(data)
    files = t.inspect.files()
    assert files.num_rows == 1
    assert "partition" not in files.schema.names  # unpartitioned, as Iceberg-Java
    rm = files.column("readable_metrics")[0].as_py()
    assert list(rm) == ["id", "cat", "d", "ts", "price"]
    assert rm["id"]["lower_bound"] == 10 and rm["id"]["upper_bound"] == 49
    assert rm["id"]["value_count"] == 40 and rm["id"]["null_value_count"] == 0
    assert rm["cat"]["lower_bound"] == "a" and rm["cat"]["upper_bound"] == "c"
    assert rm["d"]["lower_bound"] == min(data.column("d").to_pylist())
    assert rm["d"]["upper_bound"] == max(data.column("d").to_pylist())
    assert rm["ts"]["lower_bound"] == min(data.column("ts").to_pylist())
    assert rm["price"]["lower_bound"] == Decimal("2.50")
    assert rm["price"]["upper_bound"] == Decimal("12.25")
    assert rm["id"]["column_size"] == dict(files.column("column_sizes")[0].as_py())[1]
    mtype = files.schema.field("readable_metrics").type
    assert mtype.field("d").type.field("lower_bound").type == pa.date32()
    assert mtype.field("ts").type.field("upper_bound").type == pa.timestamp("us", tz="UTC")
    assert mtype.field("price").type.field("lower_bound").type == pa.decimal128(10, 2)

    parts = t.inspect.partitions()
    assert "partition" not in parts.schema.names
    assert parts.column("record_count").to_pylist() == [40]
    assert parts.column("file_count").to_pylist() == [1]
    entries = t.inspect.entries()
    assert "partition" not in entries.schema.field("data_file").type.names


def test_nested_columns_get_readable_metrics_by_full_name(sqlite_catalog: neve.Catalog) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("loc", pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.int32())])),
        ]
    )
    t = sqlite_catalog.create_table("db.nested", schema)
    t.append(
        pa.table(
            {"id": [1, 2], "loc": [{"x": 1.5, "y": 3}, {"x": float("nan"), "y": -4}]},
            schema=schema,
        )
    )
    rm = t.inspect.files().column("readable_metrics")[0].as_py()
    assert list(rm) == ["id", "loc.x", "loc.y"]
    assert rm["loc.y"]["lower_bound"] == -4 and rm["loc.y"]["upper_bound"] == 3
    assert rm["loc.x"]["nan_value_count"] == 1
    assert rm["loc.x"]["lower_bound"] == 1.5


def test_delete_files_and_their_partition_counts(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.deletes", SCHEMA, partition_by=["cat"])
    t.append(rows(range(0, 30)))
    by_cat = {f.partition[0]: f for f in (task.file for task in t.scan().plan_files())}
    a = by_cat["a"]
    pos = write_position_delete_file(
        t.io,
        f"{t.location}/data/cat=a/pos-1.parquet",
        {a.file_path: [0, 2, 4]},
        partition=a.partition,
        spec_id=a.spec_id,
    )
    eq_rows = pa.table({"id": pa.array([1, 4], pa.int64())})
    eq = write_equality_delete_file(
        t.io,
        f"{t.location}/data/cat=b/eq-1.parquet",
        t.schema(),
        [t.schema().find_field("id").field_id],
        eq_rows,
        partition=("b",),
        spec_id=0,
    )
    add_delete_files(t, [pos, eq])
    s2 = snap(t)

    deletes = t.inspect.delete_files()
    assert sorted(deletes.column("content").to_pylist()) == [1, 2]
    by_content = {r["content"]: r for r in deletes.to_pylist()}
    assert by_content[1]["file_path"] == pos.file_path
    assert by_content[1]["record_count"] == 3
    assert by_content[1]["referenced_data_file"] == a.file_path
    assert by_content[1]["partition"] == {"cat": "a"}
    assert by_content[2]["equality_ids"] == [1]
    assert by_content[2]["record_count"] == 2
    assert by_content[2]["readable_metrics"]["id"]["lower_bound"] == 1
    assert t.inspect.data_files().num_rows == 3
    assert t.inspect.files().num_rows == 5
    assert set(t.inspect.data_files().column("content").to_pylist()) == {0}

    parts = {r["partition"]["cat"]: r for r in t.inspect.partitions().to_pylist()}
    assert parts["a"]["position_delete_file_count"] == 1
    assert parts["a"]["position_delete_record_count"] == 3
    assert parts["a"]["record_count"] == 10 and parts["a"]["file_count"] == 1
    assert parts["a"]["last_updated_snapshot_id"] == s2.snapshot_id
    assert parts["b"]["equality_delete_file_count"] == 1
    assert parts["b"]["equality_delete_record_count"] == 2
    assert parts["c"]["last_updated_snapshot_id"] != s2.snapshot_id
    assert parts["c"]["equality_delete_file_count"] == parts["c"]["position_delete_file_count"] == 0

    manifests = t.inspect.manifests().to_pylist()
    delete_manifests = [m for m in manifests if m["content"] == 1]
    assert len(delete_manifests) == 1
    assert delete_manifests[0]["added_delete_files_count"] == 2
    assert delete_manifests[0]["added_data_files_count"] == 0
    assert sum(m["existing_data_files_count"] + m["added_data_files_count"] for m in manifests) == 3

    entries = t.inspect.entries()
    contents = Counter(f["content"] for f in entries.column("data_file").to_pylist())
    assert contents == Counter({0: 3, 1: 1, 2: 1})


def test_schema_and_spec_evolution(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.evolve", SCHEMA)
    t.append(rows(range(0, 10)))
    s1 = snap(t)
    with t.update_spec() as u:
        u.add_field("cat")
    t.append(rows(range(10, 22)))
    with t.update_spec() as u:
        u.add_field("month(d)")
    with t.update_schema() as us:
        us.rename_column("cat", "category")
        us.add_column("extra", "long")
    later = rows(range(30, 36)).rename_columns(["id", "category", "d", "ts", "price"])
    t.append(later.append_column("extra", pa.array([7] * 6, pa.int64())))

    files = t.inspect.files()
    ptype = files.schema.field("partition").type
    assert ptype.names == ["cat", "d_month"]  # field names as the specs named them
    parts_by_spec: dict[int, list[dict[str, Any]]] = {}
    for spec_id, p in zip(
        files.column("spec_id").to_pylist(), files.column("partition").to_pylist(), strict=True
    ):
        parts_by_spec.setdefault(spec_id, []).append(p)
    assert parts_by_spec[0] == [{"cat": None, "d_month": None}]
    assert {p["cat"] for p in parts_by_spec[1]} == {"a", "b", "c"}
    assert all(p["d_month"] is None for p in parts_by_spec[1])
    assert all(p["cat"] is not None and p["d_month"] is not None for p in parts_by_spec[2])
    months = {month_of(dt.date(2024, 1 + i % 4, 1 + i % 28)) for i in range(30, 36)}
    assert {p["d_month"] for p in parts_by_spec[2]} == months

    # readable metrics follow the current schema: renamed and added columns
    rm = files.column("readable_metrics").to_pylist()
    assert list(rm[0]) == ["id", "category", "d", "ts", "price", "extra"]
    extra = {
        sid: r["extra"]["lower_bound"]
        for sid, r in zip(files.column("spec_id").to_pylist(), rm, strict=True)
    }
    assert extra[0] is None and extra[1] is None and extra[2] == 7

    parts = t.inspect.partitions().to_pylist()
    key = {(r["partition"]["cat"], r["partition"]["d_month"]): r for r in parts}
    assert key[(None, None)]["spec_id"] == 0 and key[(None, None)]["record_count"] == 10
    assert sum(r["record_count"] for r in parts if r["spec_id"] == 1) == 12
    assert sum(r["record_count"] for r in parts if r["spec_id"] == 2) == 6
    assert sum(r["record_count"] for r in parts) == 28

    old = t.inspect.files(snapshot_id=s1.snapshot_id)
    assert old.column("partition").to_pylist() == [{"cat": None, "d_month": None}]
    manifests = t.inspect.manifests().to_pylist()
    by_spec = {m["partition_spec_id"]: m for m in manifests}
    assert by_spec[0]["partition_summaries"] == []
    assert [s["lower_bound"] for s in by_spec[2]["partition_summaries"]][1].startswith("2024-")


def test_partition_on_a_dropped_source_column(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.dropped", SCHEMA, partition_by=["cat"])
    t.append(rows(range(0, 6)))
    with t.update_spec() as u:
        u.remove_field("cat")
    with t.update_schema() as us:
        us.delete_column("cat")
    files = t.inspect.files()
    assert files.schema.field("partition").type.field("cat").type == pa.string()
    assert {p["cat"] for p in files.column("partition").to_pylist()} == {"a", "b", "c"}
    assert "cat" not in files.schema.field("readable_metrics").type.names
    manifests = t.inspect.manifests().to_pylist()
    assert [s["lower_bound"] for m in manifests for s in m["partition_summaries"]] == ["a"]


# -- cross-check with pyiceberg ------------------------------------------------------


def _rows_by(t: pa.Table, key: str, columns: list[str]) -> dict[Any, dict[str, Any]]:
    return {r[key]: {c: r[c] for c in columns} for r in t.select([key, *columns]).to_pylist()}


def _normal(v: Any) -> Any:
    """Maps as dicts (pyiceberg keeps insertion order, neve sorts by key)."""
    if isinstance(v, list) and v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
        return dict(v)
    if isinstance(v, dict):
        return {k: _normal(x) for k, x in v.items()}
    return v


FILE_COLUMNS = [
    "content",
    "file_format",
    "spec_id",
    "partition",
    "record_count",
    "file_size_in_bytes",
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
    "key_metadata",
    "split_offsets",
    "equality_ids",
    "sort_order_id",
    "readable_metrics",
]


def _cast_string_dictionaries(t: pa.Table) -> pa.Table:
    for i, f in enumerate(t.schema):
        if pa.types.is_dictionary(f.type):
            t = t.set_column(i, f.name, t.column(i).cast(pa.string()))
    return t


def test_cross_check_with_pyiceberg(sqlite_catalog: SqlCatalog) -> None:
    t = sqlite_catalog.create_table("db.cross", SCHEMA, partition_by=["cat", "month(d)"])
    t.append(rows(range(0, 40)))
    s1 = snap(t)
    t.append(rows(range(40, 55)))
    t.delete("cat = 'b'")
    t.overwrite(rows(range(300, 306)), filter="cat = 'a'")
    a_file = next(task.file for task in t.scan().plan_files() if task.file.partition[0] == "c")
    pos = write_position_delete_file(
        t.io,
        f"{t.location}/data/pos-x.parquet",
        {a_file.file_path: [1]},
        partition=a_file.partition,
        spec_id=0,
    )
    add_delete_files(t, [pos])
    t.create_tag("first", s1.snapshot_id)
    t.create_branch("audit", s1.snapshot_id, min_snapshots_to_keep=2)
    ours = t.inspect
    theirs = pyiceberg_table(sqlite_catalog, "db.cross").inspect

    # snapshots
    a, b = ours.snapshots(), theirs.snapshots()
    assert a.column("snapshot_id").to_pylist() == b.column("snapshot_id").to_pylist()
    assert a.column("parent_id").to_pylist() == b.column("parent_id").to_pylist()
    assert a.column("operation").to_pylist() == b.column("operation").to_pylist()
    assert a.column("manifest_list").to_pylist() == b.column("manifest_list").to_pylist()
    assert ms(a.column("committed_at")) == ms(b.column("committed_at"))
    assert [dict(x) for x in a.column("summary").to_pylist()] == [
        dict(x) for x in b.column("summary").to_pylist()
    ]

    # history, refs, metadata log
    a, b = ours.history(), theirs.history()
    for col in ("snapshot_id", "parent_id", "is_current_ancestor"):
        assert a.column(col).to_pylist() == b.column(col).to_pylist(), col
    assert ms(a.column("made_current_at")) == ms(b.column("made_current_at"))
    ref_cols = [
        "type",
        "snapshot_id",
        "max_reference_age_in_ms",
        "min_snapshots_to_keep",
        "max_snapshot_age_in_ms",
    ]
    assert _rows_by(ours.refs(), "name", ref_cols) == _rows_by(
        _cast_string_dictionaries(theirs.refs()), "name", ref_cols
    )
    a, b = ours.metadata_log_entries(), theirs.metadata_log_entries()
    for col in ("file", "latest_snapshot_id", "latest_schema_id", "latest_sequence_number"):
        assert a.column(col).to_pylist() == b.column(col).to_pylist(), col
    assert ms(a.column("timestamp")) == ms(b.column("timestamp"))

    # manifests (pyiceberg: current snapshot only)
    a, b = ours.manifests(), theirs.manifests()
    assert a.num_rows == b.num_rows >= 2
    assert _rows_by(a, "path", a.schema.names[:1] + a.schema.names[2:]) == _rows_by(
        b, "path", a.schema.names[:1] + a.schema.names[2:]
    )

    # files / data_files / delete_files, now and at the first snapshot
    for name, kwargs in [
        ("files", {}),
        ("data_files", {}),
        ("delete_files", {}),
        ("files", {"snapshot_id": s1.snapshot_id}),
    ]:
        a = getattr(ours, name)(**kwargs)
        b = _cast_string_dictionaries(getattr(theirs, name)(**kwargs))
        assert a.num_rows == b.num_rows, name
        mine = {k: _normal(v) for k, v in _rows_by(a, "file_path", FILE_COLUMNS).items()}
        other = {k: _normal(v) for k, v in _rows_by(b, "file_path", FILE_COLUMNS).items()}
        assert mine == other, name
    assert ours.delete_files().num_rows == 1

    # entries, deleted ones included
    for kwargs in ({}, {"snapshot_id": s1.snapshot_id}):
        a, b = ours.entries(**kwargs), theirs.entries(**kwargs)
        assert a.num_rows == b.num_rows

        def key(t: pa.Table) -> dict[tuple[str, int], dict[str, Any]]:
            out = {}
            for r in t.to_pylist():
                f = r["data_file"]
                out[(f["file_path"], r["status"])] = _normal(
                    {
                        "snapshot_id": r["snapshot_id"],
                        "sequence_number": r["sequence_number"],
                        "file_sequence_number": r["file_sequence_number"],
                        "readable_metrics": r["readable_metrics"],
                        **{
                            c: f[c]
                            for c in FILE_COLUMNS
                            if c not in ("spec_id", "readable_metrics")
                        },
                    }
                )
            return out

        assert key(a) == key(b)

    # partitions, now and at the first snapshot
    part_cols = [
        "spec_id",
        "record_count",
        "file_count",
        "total_data_file_size_in_bytes",
        "position_delete_record_count",
        "position_delete_file_count",
        "equality_delete_record_count",
        "equality_delete_file_count",
        "last_updated_snapshot_id",
    ]
    for snapshot_id in (None, s1.snapshot_id):
        a, b = ours.partitions(snapshot_id), theirs.partitions(snapshot_id)

        def by_partition(t: pa.Table) -> dict[tuple[Any, ...], dict[str, Any]]:
            out = {}
            for r, when in zip(t.to_pylist(), ms(t.column("last_updated_at")), strict=True):
                k = tuple(r["partition"].values())
                out[k] = {c: r[c] for c in part_cols} | {"last_updated_at": when}
            return out

        assert by_partition(a) == by_partition(b)
        assert a.num_rows == b.num_rows > 1
    assert any(r["position_delete_file_count"] == 1 for r in ours.partitions().to_pylist())


def test_partition_values_keep_their_types(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.types", SCHEMA, partition_by=["d", "price", "day(ts)"])
    t.append(rows(range(0, 3)))
    parts = t.inspect.partitions()
    ptype = parts.schema.field("partition").type
    assert ptype.field("d").type == pa.date32()
    assert ptype.field("price").type == pa.decimal128(10, 2)
    assert ptype.field("ts_day").type == pa.date32()
    values = sorted(p["d"] for p in parts.column("partition").to_pylist())
    assert values == [dt.date(2024, 1, 1), dt.date(2024, 2, 2), dt.date(2024, 3, 3)]
    assert civil_to_days(2024, 1, 1) == (values[0] - dt.date(1970, 1, 1)).days
    assert sorted(p["price"] for p in parts.column("partition").to_pylist()) == [
        Decimal("0.00"),
        Decimal("0.25"),
        Decimal("0.50"),
    ]
