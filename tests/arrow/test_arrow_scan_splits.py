"""Scans read planned splits (byte ranges of row groups) and apply deletes per split."""

from __future__ import annotations

import itertools

import pyarrow as pa
import pytest

import neve
from neve.arrow.deletes import write_position_delete_file
from neve.arrow.scan import scan_batches, scan_to_table

ROWS = 20_000


def data(n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "grp": pa.array([i % 5 for i in range(n)], pa.int32()),
            "payload": pa.array([f"value-{i:08d}-{i * 7919 % 10007}" for i in range(n)]),
        }
    )


@pytest.fixture()
def table(sqlite_catalog: neve.Catalog) -> neve.Table:
    t = sqlite_catalog.create_table(
        "db.t",
        data(1).schema,
        properties={"write.parquet.row-group-size-bytes": "16384"},
    )
    t.append(data(ROWS))
    return t


def one_file(t: neve.Table) -> neve.FileScanTask:
    (task,) = t.scan().plan_files()
    return task


def test_file_has_many_row_groups_and_small_split_size_makes_many_tasks(
    table: neve.Table,
) -> None:
    f = one_file(table).file
    assert f.split_offsets is not None and len(f.split_offsets) >= 6
    tasks = table.scan(options={"read.split.target-size": "1"}).plan_files()
    assert len(tasks) == len(f.split_offsets)
    # the ranges tile the file
    assert tasks[0].start == 0
    for a, b in itertools.pairwise(tasks):
        assert a.start + a.length == b.start
    assert tasks[-1].start + tasks[-1].length == f.file_size_in_bytes


def _delete_positions(table: neve.Table, positions: list[int]) -> None:
    f = one_file(table).file
    path = f"{table.location}/data/pos-deletes.parquet"
    dfile = write_position_delete_file(table.io, path, {f.file_path: positions})
    with table.transaction() as tx:
        tx.row_delta(delete_files=[dfile])


@pytest.mark.parametrize("target", ["1", "30000", "60000"])
def test_splits_read_exactly_the_rows_of_one_task(table: neve.Table, target: str) -> None:
    # position deletes in several row groups, including the first and last rows
    deleted = [0, 1, 777, 5_000, 5_001, 12_345, ROWS - 1]
    _delete_positions(table, deleted)
    flt = "grp <> 3 and id >= 1"

    whole = table.scan(filter=flt).to_arrow().sort_by("id")
    expected = [i for i in range(1, ROWS) if i % 5 != 3 and i not in set(deleted)]
    assert whole.column("id").to_pylist() == expected

    scan = table.scan(filter=flt, options={"read.split.target-size": target})
    tasks = scan.plan_files()
    assert len(tasks) > 1
    assert all(t.delete_files for t in tasks)
    split = scan_to_table(scan, tasks).sort_by("id")
    assert split.equals(whole)
    streamed = pa.Table.from_batches(list(scan_batches(scan, tasks)), schema=split.schema)
    assert streamed.sort_by("id").equals(whole)
    # each split on its own reads a disjoint part of the rows
    parts = [scan_to_table(scan, [t]).column("id").to_pylist() for t in tasks]
    assert sum(len(p) for p in parts) == len(expected)
    assert sorted(i for p in parts for i in p) == expected
    assert sum(1 for p in parts if p) > 1


def test_scan_to_arrow_uses_splits_without_duplicates(table: neve.Table) -> None:
    table.set_properties({"read.split.target-size": "1"})
    assert len(table.scan().plan_files()) > 1
    out = table.scan().to_arrow()
    assert out.num_rows == ROWS
    assert sorted(out.column("id").to_pylist()) == list(range(ROWS))
