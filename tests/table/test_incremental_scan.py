"""Incremental append scans: ``table.scan(start_snapshot_id=..., end_snapshot_id=...)``
returns exactly the rows the range's appends added (start exclusive, end inclusive),
reads only the manifests those snapshots wrote, refuses a range with overwrite or delete
snapshots unless told to skip them, and skips compactions silently."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

import neve
from neve.catalog.base import Catalog
from neve.errors import NonAppendSnapshotError
from neve.planning import incremental
from neve.table.table import Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("cat", pa.string()),
        pa.field("v", pa.int32()),
    ]
)


def rows(ids: range | list[int], v: int = 0) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {"id": ids, "cat": [["a", "b", "c"][i % 3] for i in ids], "v": [v + i for i in ids]},
        schema=SCHEMA,
    )


def ids_of(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())


@pytest.fixture(params=["sqlite", "filesystem"])
def table(request: pytest.FixtureRequest, catalog_factory: Callable[[str], Catalog]) -> Table:
    cat = catalog_factory(request.param)
    cat.create_namespace("db")
    return cat.create_table("db.t", SCHEMA, partition_by=["cat"])


def head(t: Table) -> int:
    s = t.current_snapshot()
    assert s is not None
    return s.snapshot_id


def test_range_returns_the_appended_rows(table: Table) -> None:
    table.append(rows(range(0, 10)))
    s1 = head(table)
    table.append(rows(range(10, 25)))
    s2 = head(table)
    table.append(rows(range(25, 30)))
    s3 = head(table)
    assert ids_of(table.scan(start_snapshot_id=s1, end_snapshot_id=s3).to_arrow()) == list(
        range(10, 30)
    )
    assert ids_of(table.scan(start_snapshot_id=s1, end_snapshot_id=s2).to_arrow()) == list(
        range(10, 25)
    )
    # end defaults to the head, no start means from the first snapshot
    assert ids_of(table.scan(start_snapshot_id=s2).to_arrow()) == list(range(25, 30))
    assert ids_of(table.scan(end_snapshot_id=s2).to_arrow()) == list(range(0, 25))
    assert table.scan(start_snapshot_id=s3).to_arrow().num_rows == 0
    # filters and columns prune and project as in a scan
    got = table.scan(start_snapshot_id=s1, filter="cat = 'a' and id < 20", columns=["id"])
    assert got.to_arrow().column_names == ["id"]
    assert ids_of(got.to_arrow()) == [i for i in range(10, 20) if i % 3 == 0]


def test_range_by_time(table: Table) -> None:
    table.append(rows(range(0, 5)))
    first = table.current_snapshot()
    table.append(rows(range(5, 9)))
    assert first is not None
    got = table.scan(start_time=first.timestamp_ms + 1).to_arrow()
    later = [s for s in table.snapshots() if s.timestamp_ms > first.timestamp_ms]
    expected = list(range(5, 9)) if later else []
    assert ids_of(got) == expected
    assert ids_of(table.scan(end_time=first.timestamp_ms).to_arrow()) == list(range(0, 5))


def test_only_the_ranges_manifests_are_read(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(4):
        table.append(rows(range(10 * i, 10 * i + 10)))
    s3 = table.snapshots()[2].snapshot_id
    read: list[Any] = []
    real = incremental.load_manifests

    def counting(io: Any, manifests: Any, *args: Any, **kw: Any) -> Any:
        read.extend(manifests)
        return real(io, manifests, *args, **kw)

    monkeypatch.setattr(incremental, "load_manifests", counting)
    got = table.scan(start_snapshot_id=s3).to_arrow()
    assert ids_of(got) == list(range(30, 40))
    last = head(table)
    assert read and all(m.added_snapshot_id == last for m in read)


def test_non_append_snapshots_fail_unless_skipped(table: Table) -> None:
    table.append(rows(range(0, 10)))
    s1 = head(table)
    table.delete("id < 3")
    table.append(rows(range(10, 15)))
    table.update({"v": 99}, "id = 12")
    table.append(rows(range(15, 20)))
    with pytest.raises(NonAppendSnapshotError, match="streaming-skip-delete-snapshots"):
        table.scan(start_snapshot_id=s1)
    with pytest.raises(NonAppendSnapshotError, match="streaming-skip-overwrite-snapshots"):
        table.scan(start_snapshot_id=s1, options={incremental.SKIP_DELETE_SNAPSHOTS: "true"})
    both = {incremental.SKIP_DELETE_SNAPSHOTS: "true", incremental.SKIP_OVERWRITE_SNAPSHOTS: "1"}
    got = table.scan(start_snapshot_id=s1, options=both).to_arrow()
    # the rows as appended: the update's new row is not an append
    assert ids_of(got) == list(range(10, 20))
    assert sorted(got.column("v").to_pylist()) == sorted(range(10, 20))
    with pytest.raises(NonAppendSnapshotError, match="true or false"):
        table.scan(start_snapshot_id=s1, options={incremental.SKIP_DELETE_SNAPSHOTS: "maybe"})


def test_replace_snapshots_are_skipped(table: Table) -> None:
    table.append(rows(range(0, 10)))
    s1 = head(table)
    table.append(rows(range(10, 20)))
    table.maintenance.rewrite_data_files(options={"rewrite-all": "true"})
    assert table.current_snapshot() is not None
    assert table.current_snapshot().operation.value == "replace"  # type: ignore[union-attr]
    table.append(rows(range(20, 22)))
    assert ids_of(table.scan(start_snapshot_id=s1).to_arrow()) == list(range(10, 22))


def test_range_off_the_branch_is_refused(table: Table) -> None:
    table.append(rows(range(0, 3)))
    s1 = head(table)
    table.create_branch("b")
    table.append(rows(range(3, 6)), branch="b")
    on_b = table.snapshot_by_name("b")
    assert on_b is not None
    assert ids_of(table.scan(start_snapshot_id=s1, ref="b").to_arrow()) == [3, 4, 5]
    with pytest.raises(neve.ValidationError, match="not an ancestor"):
        table.scan(start_snapshot_id=s1, end_snapshot_id=on_b.snapshot_id)
    with pytest.raises(neve.ValidationError, match="leave out snapshot_id"):
        table.scan(snapshot_id=s1, start_snapshot_id=s1)
