"""Changelog reads on the pyarrow engine: the range rules, replace snapshots, delete
files written by other engines (equality deletes, position deletes scoped to a
partition), pairing with and without a key, projections and filters, planning only the
manifests of the range, and the errors."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import neve
from neve.arrow.changelog import changelog_batches
from neve.arrow.deletes import write_equality_delete_file, write_position_delete_file
from neve.errors import NoSuchSnapshotError, ValidationError
from neve.planning.changelog import ChangeKind
from neve.planning.manifest_cache import cached_manifest_list, manifest_cache
from reference_reader import live_entries

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("cat", pa.string()),
        pa.field("v", pa.int64()),
    ]
)


def rows(ids: list[int], v: int = 0, cat: str = "a") -> pa.Table:
    return pa.table({"id": ids, "cat": [cat] * len(ids), "v": [v + i for i in ids]}, schema=SCHEMA)


def changes(t: neve.Table, **kwargs: Any) -> list[tuple[str, int, int, int | None]]:
    """(type, ordinal, id, v) sorted."""
    out = t.changes(**kwargs).to_pylist()
    return sorted((r["_change_type"], r["_change_ordinal"], r["id"], r["v"]) for r in out)


@pytest.fixture(params=["sqlite", pytest.param("rest", marks=pytest.mark.rest)])
def cat(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    catalog_factory: Callable[[str], neve.Catalog],
) -> neve.Catalog:
    """A SQLite catalog, and neve's REST client against ``neve serve``."""
    c = (
        catalog_factory("rest")
        if request.param == "rest"
        else neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse=f"{tmp_path}/wh")
    )
    c.create_namespace("db")
    return c


def keyed(cat: neve.Catalog, version: int = 2, **kwargs: Any) -> neve.Table:
    return cat.create_table(
        f"db.t{uuid.uuid4().hex[:6]}",
        SCHEMA,
        primary_key=["id"],
        format_version=version,
        **kwargs,
    )


def test_range_is_start_exclusive_end_inclusive(cat: neve.Catalog) -> None:
    t = keyed(cat)
    t.append(rows([1, 2]))
    t.append(rows([3]))
    t.delete("id = 1")
    t.append(rows([4]))
    s = [x.snapshot_id for x in t.snapshots()]
    assert changes(t, start_snapshot_id=s[0], end_snapshot_id=s[2]) == [
        ("DELETE", 1, 1, 1),
        ("INSERT", 0, 3, 3),
    ]
    got = t.changes(start_snapshot_id=s[2])
    assert got.column("_commit_snapshot_id").to_pylist() == [s[3]]
    assert got.column("_change_ordinal").to_pylist() == [0]
    assert changes(t, end_snapshot_id=s[0]) == [("INSERT", 0, 1, 1), ("INSERT", 0, 2, 2)]
    assert changes(t, start_snapshot_id=s[3]) == []
    assert t.changes().schema.names == [
        "id",
        "cat",
        "v",
        "_change_type",
        "_change_ordinal",
        "_commit_snapshot_id",
    ]


def test_time_range(cat: neve.Catalog) -> None:
    t = keyed(cat)
    t.append(rows([1]))
    time.sleep(0.01)
    t.append(rows([2]))
    time.sleep(0.01)
    t.append(rows([3]))
    snaps = t.snapshots()
    # start_time takes the snapshots committed at or after it; end_time ends at the
    # snapshot that was the head then
    got = changes(t, start_time=snaps[1].timestamp_ms, end_time=snaps[1].timestamp_ms)
    assert got == [("INSERT", 0, 2, 2)]
    assert changes(t, start_time=snaps[2].timestamp_ms + 1) == []
    assert [c[2] for c in changes(t, end_time=snaps[1].timestamp_ms)] == [1, 2]


def test_replace_snapshots_contribute_nothing(cat: neve.Catalog) -> None:
    t = keyed(cat)
    for i in range(4):
        t.append(rows([i]))
    t.delete("id = 0")
    # one unpartitioned group of at least min-input-files files: all of them go
    live_files = [e.path for e in live_entries(t.metadata_location) if e.content == 0]
    result = t.maintenance.rewrite_data_files(options={"min-input-files": "2"})
    assert result.rewritten_data_files_count == len(live_files) >= 2
    assert t.refresh().current_snapshot().operation.value == "replace"
    t.append(rows([9]))
    before = [x.snapshot_id for x in t.snapshots()][-3]
    # the compaction rewrote every row: no change, and it takes no ordinal
    assert changes(t, start_snapshot_id=before) == [("INSERT", 0, 9, 9)]


def test_equality_and_partition_position_deletes_of_other_engines(
    cat: neve.Catalog,
) -> None:
    t = cat.create_table("db.eq", SCHEMA, partition_by=["cat"], format_version=2)
    t.append(pa.concat_tables([rows([1, 2, 3], cat="a"), rows([4, 5], cat="b")]))
    t.append(rows([6, 7], cat="a"))
    files = {task.file.file_path: task for task in t.scan().plan_files()}
    schema = t.schema()
    eq = write_equality_delete_file(
        t.io,
        f"{t.location}/data/eq-{uuid.uuid4().hex}.parquet",
        schema,
        [schema.find_field("v").field_id],
        pa.table({"v": pa.array([2, 6, 4], pa.int64())}),  # 4 is in partition b
        partition=("a",),
        spec_id=t.spec().spec_id,
    )
    t.row_delta([], [eq])
    eq_snapshot = t.current_snapshot().snapshot_id
    # rows of older files that match and were live: 2 and 6 (not 4: other partition)
    assert changes(t, start_snapshot_id=t.current_snapshot().parent_snapshot_id) == [
        ("DELETE", 0, 2, 2),
        ("DELETE", 0, 6, 6),
    ]
    # a position delete file scoped to the partition, covering two data files, one
    # position already deleted by the equality delete
    in_a = [p for p, task in files.items() if task.file.partition == ("a",)]
    marks = {in_a[0]: [0, 1], in_a[1]: [0]}
    pos = write_position_delete_file(
        t.io,
        f"{t.location}/data/pos-{uuid.uuid4().hex}.parquet",
        marks,
        partition=("a",),
        spec_id=t.spec().spec_id,
    )
    assert pos.referenced_data_file is None
    t.row_delta([], [pos])
    live_before = {r["id"] for r in t.scan(snapshot_id=eq_snapshot).to_arrow().to_pylist()}
    live_after = {r["id"] for r in t.scan().to_arrow().to_pylist()}
    got = changes(t, start_snapshot_id=eq_snapshot)
    assert [c[2] for c in got] == sorted(live_before - live_after)
    assert {c[0] for c in got} == {"DELETE"}
    assert got  # the delete file did delete something new


def test_pairing_needs_a_key(cat: neve.Catalog) -> None:
    t = cat.create_table("db.nokey", SCHEMA, format_version=2)
    t.append(rows([1, 2]))
    t.update({"v": 100}, "id = 1")
    # no identifier fields: a delete and an insert, as Iceberg-Java without a key
    assert changes(t, start_snapshot_id=t.snapshots()[0].snapshot_id) == [
        ("DELETE", 0, 1, 1),
        ("INSERT", 0, 1, 100),
    ]
    assert changes(
        t, start_snapshot_id=t.snapshots()[0].snapshot_id, identifier_columns=["id"]
    ) == [("UPDATE_AFTER", 0, 1, 100), ("UPDATE_BEFORE", 0, 1, 1)]
    # a key that is not unique in one snapshot cannot be paired
    t.append(rows([1], v=50))
    t.update({"v": 7}, "id = 1")
    with pytest.raises(ValidationError, match="identifier_columns"):
        t.changes(identifier_columns=["id"])
    # unpaired, every change of the history is there: the update of both rows keyed 1
    # deletes both and inserts both
    assert changes(t, identifier_columns=["id"], compute_updates=False) == [
        ("DELETE", 1, 1, 1),
        ("DELETE", 3, 1, 51),
        ("DELETE", 3, 1, 100),
        ("INSERT", 0, 1, 1),
        ("INSERT", 0, 2, 2),
        ("INSERT", 1, 1, 100),
        ("INSERT", 2, 1, 51),
        ("INSERT", 3, 1, 7),
        ("INSERT", 3, 1, 7),
    ]
    with pytest.raises(ValidationError, match="not a column"):
        t.changes(identifier_columns=["nope"])


def test_net_changes_by_key_and_by_row(cat: neve.Catalog) -> None:
    t = keyed(cat)
    t.append(rows([1, 2, 3]))
    start = t.current_snapshot().snapshot_id
    t.append(rows([4]))
    t.delete("id = 4")  # inserted then deleted: nothing
    t.update({"v": 20}, "id = 2")
    t.update({"v": 2}, "id = 2")  # back to its first value: nothing
    t.update({"v": 30}, "id = 3")
    t.update({"v": 31}, "id = 3")  # one update from the first to the last value
    t.delete("id = 1")
    assert changes(t, start_snapshot_id=start, net_changes=True) == [
        ("DELETE", 6, 1, 1),
        ("UPDATE_AFTER", 5, 3, 31),
        ("UPDATE_BEFORE", 4, 3, 3),
    ]
    assert changes(t, start_snapshot_id=start, net_changes=True, compute_updates=False) == [
        ("DELETE", 4, 3, 3),
        ("DELETE", 6, 1, 1),
        ("INSERT", 5, 3, 31),
    ]
    # without a key, identical rows cancel across the range (Iceberg-Java's net_changes)
    nokey = cat.create_table("db.nk", SCHEMA, format_version=2)
    nokey.append(rows([1]))
    s0 = nokey.current_snapshot().snapshot_id
    nokey.update({"v": 5}, "id = 1")
    nokey.update({"v": 1}, "id = 1")
    nokey.append(rows([8]))
    assert changes(nokey, start_snapshot_id=s0, net_changes=True) == [("INSERT", 2, 8, 8)]


def test_columns_and_filter(cat: neve.Catalog) -> None:
    t = cat.create_table(
        "db.part", SCHEMA, partition_by=["cat"], primary_key=["id"], format_version=3
    )
    t.append(pa.concat_tables([rows([1, 2], cat="a"), rows([3, 4], cat="b")]))
    start = t.current_snapshot().snapshot_id
    t.update({"v": 0}, "id IN (1, 3)")
    t.delete("id = 4")
    got = t.changes(start_snapshot_id=start, columns=["id", "v"], filter="cat = 'b'")
    assert got.schema.names == ["id", "v", "_change_type", "_change_ordinal", "_commit_snapshot_id"]
    assert sorted((r["_change_type"], r["id"], r["v"]) for r in got.to_pylist()) == [
        ("DELETE", 4, 4),
        ("UPDATE_AFTER", 3, 0),
        ("UPDATE_BEFORE", 3, 3),
    ]
    # the filter prunes files like a scan: partition a is not planned
    plan = t.plan_changes(start_snapshot_id=start, filter="cat = 'b'")
    assert plan.tasks and all(task.file.partition == ("b",) for task in plan.tasks)
    # the filter applies to each image: an update out of the filter is half an update
    got = changes(t, start_snapshot_id=start, filter="v > 2")
    assert got == [("DELETE", 0, 3, 3), ("DELETE", 1, 4, 4)]
    batches = list(changelog_batches(t.io, t.plan_changes(start_snapshot_id=start)))
    assert [b.column("_change_ordinal")[0].as_py() for b in batches] == [0, 1]


def test_merge_on_read_rows_are_read_back_by_position(cat: neve.Catalog) -> None:
    t = keyed(cat, version=3)
    t.append(rows(list(range(100))))
    start = t.current_snapshot().snapshot_id
    t.delete("id IN (3, 50)")
    t.delete("id = 7")  # a new DV replaces the first one: only 7 is new
    plan = t.plan_changes(start_snapshot_id=t.current_snapshot().parent_snapshot_id)
    assert [task.kind for task in plan.tasks] == [ChangeKind.DELETED_ROWS]
    assert changes(t, start_snapshot_id=start) == [
        ("DELETE", 0, 3, 3),
        ("DELETE", 0, 50, 50),
        ("DELETE", 1, 7, 7),
    ]


def test_plans_only_the_manifests_of_the_range(cat: neve.Catalog) -> None:
    t = keyed(cat)
    t.append(rows([1, 2]))
    first = t.current_snapshot()
    old = [
        m.manifest_path
        for m in cached_manifest_list(t.io, first.manifest_list)
        if m.added_snapshot_id == first.snapshot_id
    ]
    t.append(rows([3]))
    t.append(rows([4]))
    # the first snapshot's manifests are gone: a changelog after it never reads them
    for path in old:
        Path(path.removeprefix("file://")).unlink()
    manifest_cache().clear()
    assert changes(t, start_snapshot_id=first.snapshot_id) == [
        ("INSERT", 0, 3, 3),
        ("INSERT", 1, 4, 4),
    ]


def test_bad_ranges_are_refused(cat: neve.Catalog) -> None:
    t = keyed(cat)
    assert t.changes().num_rows == 0  # no snapshots yet: an empty changelog
    t.append(rows([1]))
    t.append(rows([2]))
    s = [x.snapshot_id for x in t.snapshots()]
    with pytest.raises(NoSuchSnapshotError):
        t.changes(start_snapshot_id=12345)
    with pytest.raises(ValidationError, match="ancestor"):
        t.changes(start_snapshot_id=s[1], end_snapshot_id=s[0])
    with pytest.raises(ValidationError, match="not both"):
        t.changes(start_snapshot_id=s[0], start_time=0)
    with pytest.raises(ValidationError):
        t.changes(filter="nope > 1")
    t.create_branch("b", s[0])
    t.append(rows([3]), branch="b")
    with pytest.raises(ValidationError, match="branch"):
        t.changes(end_snapshot_id=t.refresh().snapshot_by_name("b").snapshot_id)
    assert changes(t, branch="b", start_snapshot_id=s[0]) == [("INSERT", 0, 3, 3)]


def test_a_snapshot_whose_parent_expired_reads_its_parent_deletes_from_itself(
    cat: neve.Catalog,
) -> None:
    # after expiration the range starts at a snapshot whose parent is gone; rows the
    # parent had deleted already (by a delete file still live: another engine's v2
    # position deletes, added beside the older ones) are no change of it
    t = cat.create_table("db.expired_parent", SCHEMA, format_version=2)
    t.append(rows(list(range(10))))
    (path,) = {task.file.file_path for task in t.scan().plan_files()}

    def mark(positions: list[int]) -> None:
        pos = write_position_delete_file(
            t.io, f"{t.location}/data/pos-{uuid.uuid4().hex}.parquet", {path: positions}
        )
        t.refresh().row_delta([], [pos])

    mark([0, 1, 2])
    parent = t.refresh().current_snapshot()
    assert parent is not None
    mark([2, 7])  # 2 again: already deleted at the parent
    want = changes(t.refresh(), start_snapshot_id=parent.snapshot_id)
    assert want == [("DELETE", 0, 7, 7)]
    history = [s.snapshot_id for s in t.refresh().snapshots()]
    t.refresh().maintenance.expire_snapshots(snapshot_ids=history[:2])
    t = t.refresh()
    assert not t.metadata.has_snapshot(parent.snapshot_id)
    assert changes(t) == want


@pytest.mark.parametrize("version", [2, 3])
def test_a_range_starts_after_a_snapshot_whose_parent_took_its_baseline_along(
    cat: neve.Catalog, version: int
) -> None:
    # neve's merge-on-read deletes replace a file's delete file (a DV, or the merged
    # position deletes): expiring the parent deletes the replaced one, so the rows the
    # parent had deleted cannot be told apart any more; that snapshot becomes the
    # range's starting state
    t = keyed(cat, version, properties={"write.delete.mode": "merge-on-read"})
    t.append(rows(list(range(10))))
    t.refresh().delete("id < 3")
    t.refresh().delete("id = 7")  # the file's delete file is replaced
    oldest_kept = t.refresh().current_snapshot()
    assert oldest_kept is not None
    t.refresh().set_properties({"write.delete.mode": "copy-on-write"})
    t.refresh().delete("id = 5")  # copy-on-write: the file and its deletes go
    want = changes(t.refresh(), start_snapshot_id=oldest_kept.snapshot_id)
    assert want == [("DELETE", 0, 5, 5)]
    history = [s.snapshot_id for s in t.refresh().snapshots()]
    t.refresh().maintenance.expire_snapshots(snapshot_ids=history[:2])
    t = t.refresh()
    assert t.metadata.has_snapshot(oldest_kept.snapshot_id)
    assert changes(t) == want
    assert changes(t, start_time=0) == want
    plan = t.plan_changes()
    assert [s.snapshot_id for s in plan.snapshots] == [t.current_snapshot().snapshot_id]
