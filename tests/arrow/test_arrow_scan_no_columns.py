"""``scan(columns=[])`` returns the rows with no columns (as many rows as a scan of
every column, not none), whatever has to be read to find them: filters, deletes, splits."""

from __future__ import annotations

import pyarrow as pa
import pytest

import neve
from neve.arrow.deletes import write_position_delete_file

ROWS = 3000
IDS = range(ROWS + 10)  # the rows of the table below


def data(start: int, n: int) -> pa.Table:
    ids = range(start, start + n)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "grp": pa.array([i % 4 for i in ids], pa.int32()),
            "payload": pa.array([f"value-{i:08d}" for i in ids]),
        }
    )


@pytest.fixture
def table(sqlite_catalog: neve.Catalog) -> neve.Table:
    t = sqlite_catalog.create_table(
        "db.t",
        data(0, 1).schema,
        partition_by=["grp"],
        properties={"write.parquet.row-group-size-bytes": "2048"},
    )
    t.append(data(0, ROWS))
    t.append(data(ROWS, 10))
    return t


def no_columns(t: neve.Table, **scan: object) -> pa.Table:
    out = t.scan(columns=[], **scan).to_arrow()  # type: ignore[arg-type]
    assert out.num_columns == 0
    return out


def test_no_columns_keeps_the_rows(table: neve.Table) -> None:
    assert no_columns(table).num_rows == ROWS + 10
    expected = sum(1 for i in IDS if i < 100 or i % 4 == 3)
    assert no_columns(table, filter="id < 100 or grp = 3").num_rows == expected
    assert no_columns(table, filter="id < 0").num_rows == 0
    streamed = list(table.scan(columns=[], filter="grp = 1").to_batches())
    assert all(b.num_columns == 0 for b in streamed)
    assert sum(b.num_rows for b in streamed) == sum(1 for i in IDS if i % 4 == 1)


def test_no_columns_over_splits_and_deletes(table: neve.Table) -> None:
    tasks = table.scan(filter="grp = 2").plan_files()
    f = max((t.file for t in tasks), key=lambda f: f.record_count)
    dels = write_position_delete_file(
        table.io,
        f"{table.location}/data/pos.parquet",
        {f.file_path: [0, 5, 600]},
        partition=f.partition,
        spec_id=f.spec_id,
    )
    table.row_delta(delete_files=[dels])
    table.set_properties({"read.split.target-size": "1"})
    t = table.refresh()
    assert len(t.scan().plan_files()) > len({x.file.file_path for x in t.scan().plan_files()})
    assert no_columns(t).num_rows == ROWS + 10 - 3
    assert no_columns(t, filter="grp = 2").num_rows == sum(1 for i in IDS if i % 4 == 2) - 3


def test_no_columns_of_an_empty_table(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.e", data(0, 1).schema)
    assert no_columns(t).num_rows == 0
