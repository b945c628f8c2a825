"""Transactions see their own staged changes (each staged change is planned against the
transaction's state), and writes to branches start where Iceberg-Java starts them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import neve
from neve.catalog import Catalog
from neve.errors import CommitConflictError, NoSuchSnapshotError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.int32())])


def rows(ids: range | list[int]) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "part": pa.array([i % 3 for i in ids], pa.int32())},
        schema=SCHEMA,
    )


def ids_of(table: neve.Table, **scan: object) -> list[int]:
    return sorted(table.scan(**scan).to_arrow().column("id").to_pylist())  # type: ignore[arg-type]


@pytest.fixture(params=["sqlite", "filesystem"])
def cat(request: pytest.FixtureRequest, catalog_factory: Callable[[str], Catalog]) -> Catalog:
    c = catalog_factory(request.param)
    c.create_namespace("db")
    return c


@pytest.fixture(params=[[], ["part"]], ids=["unpartitioned", "identity"])
def table(request: pytest.FixtureRequest, cat: Catalog) -> neve.Table:
    return cat.create_table("db.t", SCHEMA, partition_by=request.param)


def files_under(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file()}


# -- each staged change is planned against the transaction's state -----------------------


def test_delete_after_append_in_one_transaction_deletes_appended_rows(table: neve.Table) -> None:
    table.append(rows(range(0, 10)))
    with table.transaction() as tx:
        tx.append(rows(range(10, 20)))
        tx.delete("id >= 5 and id < 15")
    assert ids_of(table) == [*range(0, 5), *range(15, 20)]


def test_overwrite_everything_after_append_replaces_appended_rows(table: neve.Table) -> None:
    table.append(rows(range(0, 10)))
    with table.transaction() as tx:
        tx.append(rows(range(10, 20)))
        tx.overwrite(rows([100, 101]))
    assert ids_of(table) == [100, 101]


def test_two_row_level_changes_of_one_file(table: neve.Table) -> None:
    table.append(rows(range(0, 30)))
    with table.transaction() as tx:
        tx.delete("id = 3")
        tx.delete("id = 4")
        tx.overwrite(rows([1000]), filter="id = 5")
    assert ids_of(table) == sorted([*(i for i in range(30) if i not in (3, 4, 5)), 1000])


def test_dynamic_overwrite_after_append_sees_it(table: neve.Table) -> None:
    table.append(rows(range(0, 6)))
    with table.transaction() as tx:
        tx.append(rows(range(6, 12)))
        tx.dynamic_partition_overwrite(rows([300]))  # part 0
    got = ids_of(table)
    if table.spec().is_unpartitioned:
        assert got == [300]
    else:
        assert got == sorted([300, *(i for i in range(12) if i % 3 != 0)])


def test_append_after_schema_change_uses_new_schema(table: neve.Table) -> None:
    table.append(rows(range(0, 3)))
    wide = rows(range(3, 6)).append_column("extra", pa.array(["a", "b", "c"]))
    with table.transaction() as tx:
        with tx.update_schema() as u:
            u.add_column("extra", "string")
        tx.append(wide)
    got = table.scan().to_arrow().sort_by("id")
    assert got.column("extra").to_pylist() == [None, None, None, "a", "b", "c"]


def test_branch_created_in_transaction_points_at_staged_snapshot(table: neve.Table) -> None:
    table.append(rows(range(0, 3)))
    with table.transaction() as tx:
        tx.append(rows(range(3, 6)))
        tx.create_tag("after")
    assert ids_of(table, ref="after") == list(range(6))


def test_transaction_snapshots_chain_and_rows_at_each(table: neve.Table) -> None:
    table.append(rows(range(0, 4)))
    before = len(table.snapshots())
    with table.transaction() as tx:
        tx.append(rows(range(4, 8)))
        tx.delete("id < 2")
    snaps = table.snapshots()[before:]
    assert len(snaps) == 2
    assert snaps[1].parent_snapshot_id == snaps[0].snapshot_id
    assert ids_of(table, snapshot_id=snaps[0].snapshot_id) == list(range(8))
    assert ids_of(table) == list(range(2, 8))


def test_transaction_rebases_onto_a_concurrent_append(cat: Catalog, table: neve.Table) -> None:
    table.append(rows(range(0, 10)))
    other = cat.load_table("db.t")
    tx = table.transaction()
    tx.append(rows(range(10, 20)))
    tx.delete("id >= 15")
    other.append(rows([-2, -1]))  # outside the delete's range: no conflict
    tx.commit()
    assert ids_of(cat.load_table("db.t")) == [-2, -1, *range(0, 15)]


def test_transaction_delete_conflicts_with_concurrent_append_in_range(
    cat: Catalog, table: neve.Table, tmp_path: Path
) -> None:
    table.append(rows(range(0, 10)))
    table.set_properties({"write.delete.mode": "copy-on-write"})
    other = cat.load_table("db.t")
    tx = table.transaction()
    tx.append(rows(range(10, 20)))
    tx.delete("id >= 15")
    other.append(rows([16]))  # inside the delete's range: serializable conflict
    before = files_under(tmp_path)
    with pytest.raises(CommitConflictError):
        tx.commit()
    fresh = cat.load_table("db.t")
    assert ids_of(fresh) == [*range(0, 10), 16]
    # the transaction's files are gone (only the catalog may have changed)
    assert {p for p in files_under(tmp_path) - before if not p.endswith(".db")} == set()


def test_transaction_merge_on_read_delete_applies_to_a_concurrent_append_in_range(
    cat: Catalog, table: neve.Table
) -> None:
    """A merge-on-read delete rebases: it applies its condition to the rows the
    concurrent append added, as if it had committed after it (a serial order)."""
    table.append(rows(range(0, 10)))
    table.set_properties({"write.delete.mode": "merge-on-read"})
    other = cat.load_table("db.t")
    tx = table.transaction()
    tx.append(rows(range(10, 20)))
    tx.delete("id >= 15")
    other.append(rows([16, 3]))
    tx.commit()
    assert ids_of(cat.load_table("db.t")) == sorted([*range(0, 15), 3])


def test_aborted_transaction_leaves_no_files(table: neve.Table, tmp_path: Path) -> None:
    table.append(rows(range(0, 10)))
    before = files_under(tmp_path)
    with pytest.raises(RuntimeError), table.transaction() as tx:
        tx.append(rows(range(10, 20)))
        tx.delete("id = 3")
        raise RuntimeError("boom")
    assert files_under(tmp_path) == before
    assert ids_of(table) == list(range(10))


# -- branches ------------------------------------------------------------------------------


def test_append_to_new_branch_starts_from_main(table: neve.Table) -> None:
    table.append(rows(range(0, 5)))
    main_head = table.current_snapshot()
    assert main_head is not None
    table.append(rows(range(5, 8)), branch="dev")
    dev = table.snapshot_by_name("dev")
    assert dev is not None and dev.parent_snapshot_id == main_head.snapshot_id
    assert ids_of(table, ref="dev") == list(range(8))
    assert ids_of(table) == list(range(5))


def test_overwrite_to_new_branch_starts_from_main(table: neve.Table) -> None:
    table.append(rows(range(0, 5)))
    table.overwrite(rows([9]), filter="id < 2", branch="dev")
    assert ids_of(table, ref="dev") == [2, 3, 4, 9]
    assert ids_of(table) == list(range(5))


def test_delete_on_missing_branch_fails_and_creates_nothing(table: neve.Table) -> None:
    table.append(rows(range(0, 5)))
    refs = dict(table.refs())
    location = table.metadata_location
    with pytest.raises(NoSuchSnapshotError, match="devv"):
        table.delete("id = 1", branch="devv")
    assert table.refs() == refs
    assert table.catalog.load_table(table.identifier).metadata_location == location


def test_rollback_on_missing_branch_fails(table: neve.Table) -> None:
    table.append(rows(range(0, 5)))
    sid = table.metadata.current_snapshot_id
    assert sid is not None
    with pytest.raises(NoSuchSnapshotError):
        table.rollback_to_snapshot(sid, branch="nope")


def test_append_to_tag_fails(table: neve.Table) -> None:
    table.append(rows(range(0, 5)))
    table.create_tag("v1")
    with pytest.raises(neve.ValidationError, match="tag"):
        table.append(rows([7]), branch="v1")
    assert ids_of(table, ref="v1") == list(range(5))
