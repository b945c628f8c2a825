"""Random access keeps state across takes (issue 26): the opened snapshot (its row id
index, schemas, the data files' footers and deletion vectors) per table handle and
snapshot, and each file's layout and page index by path. A take through a handle that
changed since (a delete, an update, an append, a compaction, a schema change, a
refresh after another writer's commit) must see the new snapshot, never the cached
one: after a delete the deleted rows are gone; takes of an older snapshot still see
them. The oracle is a full scan of the same snapshot."""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neve
from budget import examples
from neve.errors import NoSuchRowError

pytestmark = pytest.mark.property

STEPS = ("take", "take", "delete", "update", "append", "compact", "other writer", "add column")


def _rows(start: int, n: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "v": pa.array([f"v{i}" * (i % 5) for i in ids.tolist()])})


def _check(table: neve.Table, asked: list[int], snapshot_id: int | None = None) -> None:
    """Takes of ``asked`` (row ids) equal a full scan of the same snapshot."""
    full = table.scan(columns=["id", "v", "_row_id"], snapshot_id=snapshot_id).to_arrow()
    by_row_id = {rid: i for i, rid in enumerate(full.column("_row_id").to_pylist())}
    live = [i for i in asked if i in by_row_id]
    got = table.take(live, columns=["id", "v", "_row_id"], snapshot_id=snapshot_id)
    assert got.column("_row_id").to_pylist() == live
    expected = full.take(pa.array([by_row_id[i] for i in live], pa.int64()))
    assert got.column("id").to_pylist() == expected.column("id").to_pylist()
    assert got.column("v").to_pylist() == expected.column("v").to_pylist()
    # every column, the ones added since included
    whole = table.take(live, snapshot_id=snapshot_id)
    assert whole.schema == table.scan(snapshot_id=snapshot_id).to_arrow().schema
    if len(live) < len(asked):
        with pytest.raises(NoSuchRowError):
            table.take(asked, columns=["id"], snapshot_id=snapshot_id)
    if full.num_rows:
        places = [p % full.num_rows for p in asked]
        rows = table.take_rows(places, columns=["id"], snapshot_id=snapshot_id)
        assert rows.column("id").to_pylist() == [full.column("id")[p].as_py() for p in places]
    assert table.live_row_count(snapshot_id=snapshot_id) == full.num_rows


@settings(
    max_examples=examples(8, 200),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_takes_follow_every_change_of_the_table(
    sqlite_catalog: neve.Catalog, data: st.DataObject
) -> None:
    name = f"db.t{uuid.uuid4().hex}"  # a table per example (hypothesis repeats draws)
    props = {
        "write.parquet.layout": "random-access",
        "write.parquet.page-row-limit": "3",
        "write.delete.mode": "merge-on-read",
        "write.update.mode": data.draw(st.sampled_from(["merge-on-read", "copy-on-write"])),
    }
    table = sqlite_catalog.create_table(
        name, _rows(0, 1).schema, properties=props, format_version=3
    )
    other = sqlite_catalog.load_table(name)
    table.append(_rows(0, 40))
    written = 40
    snapshots = [table.metadata.current_snapshot_id]
    for step in data.draw(st.lists(st.sampled_from(STEPS), min_size=2, max_size=8)):
        next_id = table.metadata.next_row_id or 0
        asked = data.draw(st.lists(st.integers(0, next_id + 2), min_size=1, max_size=10))
        lo = data.draw(st.integers(0, written))
        where = f"id >= {lo} and id < {lo + data.draw(st.integers(1, 15))}"
        if step == "take":
            _check(table, asked)
            continue
        if step == "delete":
            table.delete(where)
        elif step == "update":
            table.update({"v": "changed"}, where)
        elif step == "append":
            table.append(_rows(written, 7))
            written += 7
        elif step == "compact":
            table.maintenance.rewrite_data_files(options={"rewrite-all": "true"})
        elif step == "add column":
            with table.update_schema() as u:
                u.add_column(f"c{len(snapshots)}", "int")
        else:  # another handle commits; this one sees it after a refresh
            other.refresh().delete(where)
            table.refresh()
        snapshots.append(table.metadata.current_snapshot_id)
        _check(table, asked)
        # an older snapshot still holds what it held
        old = data.draw(st.sampled_from(snapshots))
        _check(table, asked, snapshot_id=old)


def test_a_kept_snapshot_is_not_taken_for_an_equal_but_invalid_choice(
    sqlite_catalog: neve.Catalog,
) -> None:
    """An ``as_of`` given as a float equals the same int as a dictionary key: after a
    take with the int, the float still raises as it would have (and so does True)."""
    from neve.errors import ValidationError

    table = sqlite_catalog.create_table("db.t", _rows(0, 1).schema, format_version=3)
    table.append(_rows(0, 5))
    when = table.metadata.snapshots[-1].timestamp_ms
    assert table.take([1], columns=["id"], as_of=when).column("id").to_pylist() == [1]
    for wrong in (when * 1.0, True):
        with pytest.raises(ValidationError):
            table.take([1], columns=["id"], as_of=wrong)
