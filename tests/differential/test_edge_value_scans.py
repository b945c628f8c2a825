"""Scans and deletes over edge values find exactly the matching rows: partition values
that wrap at the integer limits (truncate, hour), NaN in row groups whose Parquet
statistics have min = max, dates and timestamps far from 1970 in year and month
partitions, comparisons with literals beyond a column's range, NaN and -0.0.

Each test writes a small table with neve and checks the rows a scan returns and a
delete leaves, for cases the differential scan tests found. They use only the public
API (and the shared ``sqlite_catalog`` fixture).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from neve.catalog import Catalog
from neve.spec.schema import Schema
from neve.spec.types import (
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    TIMESTAMP,
    DecimalType,
    NestedField,
)
from neve.table.table import Table

NAN = math.nan
INT_MIN, LONG_MIN, LONG_MAX = -(2**31), -(2**63), 2**63 - 1


def _table(
    catalog: Catalog, fields: list[NestedField], data: dict[str, pa.Array], partition_by: list[str]
) -> Table:
    schema = Schema(NestedField(1, "id", LONG, True), *fields)
    table = catalog.create_table("db.t", schema, partition_by=partition_by)
    n = len(next(iter(data.values())))
    table.append(pa.table({"id": pa.array(range(1, n + 1), pa.int64()), **data}))
    return table.refresh()


def ids(table: Table, text: str | None = None) -> list[int]:
    return sorted(table.scan(filter=text).to_arrow().column("id").to_pylist())


# -- partition values that wrap at the integer limits -------------------------------------


@pytest.mark.parametrize(("column_type", "minimum"), [(INT, INT_MIN), (LONG, LONG_MIN)])
def test_rows_of_the_integer_minimum_are_found_and_deleted(
    sqlite_catalog: Catalog, column_type: Any, minimum: int
) -> None:
    """truncate(100) of the minimum wraps to a large positive partition value (as
    Iceberg-Java writes it); planning must still find and delete that row."""
    arrow = pa.int32() if column_type == INT else pa.int64()
    table = _table(
        sqlite_catalog,
        [NestedField(2, "i", column_type)],
        {"i": pa.array([minimum, minimum + 47, 5, -7, None], arrow)},
        ["truncate(100, i)"],
    )
    assert ids(table, "i < -5") == [1, 2, 4]
    assert ids(table, f"i <= {minimum}") == [1]
    assert ids(table, f"i = {minimum + 47}") == [2]
    assert ids(table, "i > -5") == [3]  # the wrapped partition is not all > -5
    assert ids(table, f"i IN ({minimum}, 5)") == [1, 3]
    table.delete("i > 0")  # must not take the wrapped partition whole
    assert ids(table.refresh()) == [1, 2, 4, 5]
    table.delete("i < 0")
    assert ids(table.refresh()) == [5]


def test_hours_beyond_an_int_are_found(sqlite_catalog: Catalog) -> None:
    """hour() of timestamps 245,000 years from 1970 wraps like Iceberg-Java's int cast."""
    values = [LONG_MAX, LONG_MIN + 1, 0, 2**31 * 3_600_000_000]
    table = _table(
        sqlite_catalog,
        [NestedField(2, "ts", TIMESTAMP)],
        {"ts": pa.array(values, pa.int64()).cast(pa.timestamp("us"))},
        ["hour(ts)"],
    )
    assert ids(table, "ts > 0") == [1, 4]
    assert ids(table, "ts < 0") == [2]
    assert ids(table, f"ts = {LONG_MAX}") == [1]
    table.delete("ts < 1")
    assert ids(table.refresh()) == [1, 4]


# -- row-group pruning keeps the NaN rows of single-value row groups ---------------------


def test_scans_return_the_nan_rows_of_single_value_row_groups(
    sqlite_catalog: Catalog,
) -> None:
    """A row group of 1.0, NaN, 1.0 has Parquet min = max = 1.0: pruning by those
    statistics must keep it for these filters, which match the NaN row."""
    table = _table(
        sqlite_catalog,
        [NestedField(2, "d", DOUBLE), NestedField(3, "f", FLOAT)],
        {"d": pa.array([1.0, NAN, 1.0]), "f": pa.array([-0.0, NAN, -0.0], pa.float32())},
        [],
    )
    for text in ("d IS NaN", "d != 1.0", "d NOT IN (1.0, 2.0)", "NOT (d = 1.0)"):
        assert ids(table, text) == [2], text
    assert ids(table, "f NOT IN (-7.0, -0.0)") == [2]
    assert ids(table, "f IS NOT NaN") == [1, 3]
    table.delete("d IS NaN")
    assert ids(table.refresh()) == [1, 3]


# -- far values and out-of-range literals: nothing pruned or taken wrongly ----------------


def test_far_dates_and_timestamps_in_year_and_month_partitions(
    sqlite_catalog: Catalog,
) -> None:
    """Year and month partition values of dates and timestamps beyond 100 million
    days from 1970 (where pyarrow's calendar kernels go wrong) agree with what the
    projections of filters on them expect."""
    table = _table(
        sqlite_catalog,
        [NestedField(2, "dt", DATE), NestedField(3, "ts", TIMESTAMP)],
        {
            "dt": pa.array([2**31 - 1, INT_MIN, 0], pa.int32()).cast(pa.date32()),
            "ts": pa.array([LONG_MAX, LONG_MIN, 0], pa.int64()).cast(pa.timestamp("us")),
        },
        ["year(dt)", "month(ts)"],
    )
    assert ids(table, "dt > 100000000") == [1]
    assert ids(table, "dt < -100000000") == [2]
    assert ids(table, "ts > 9000000000000000000") == [1]
    assert ids(table, "ts < -9000000000000000000") == [2]


def test_comparisons_beyond_the_range_of_a_column_select_no_nulls(
    sqlite_catalog: Catalog,
) -> None:
    """A null satisfies no comparison: ``i < 2**40`` holds for every value of an int
    column but not for its nulls (so it must not be simplified to true), and its
    negation holds for nothing (not ``NOT false``)."""
    table = _table(
        sqlite_catalog,
        [NestedField(2, "i", INT), NestedField(3, "dec", DecimalType(4, 2))],
        {
            "i": pa.array([1, None, -5], pa.int32()),
            "dec": pa.array([Decimal("1.00"), Decimal("-99.99"), None], pa.decimal128(4, 2)),
        },
        [],
    )
    assert ids(table, "i < 1099511627776") == [1, 3]
    assert ids(table, "i > -1099511627776") == [1, 3]
    assert ids(table, "NOT i < 1099511627776") == []
    assert ids(table, "NOT i > 1099511627776") == [1, 3]
    assert ids(table, "i != 1099511627776") == [1, 2, 3]  # != holds for nulls
    assert ids(table, "dec > -1000") == [1, 2]
    assert ids(table, "NOT (dec <= -1000)") == [1, 2]
    table.delete("i < 1099511627776")
    assert ids(table.refresh()) == [2]


def test_nan_and_negative_zero_in_partitioned_files_of_nan_next_to_one_value(
    sqlite_catalog: Catalog,
) -> None:
    """``d IS NaN`` and ``f NOT IN (-7.0, -0.0)`` over a partitioned table whose files
    hold NaN next to a single value (no file's NaN or -0.0 rows may be pruned)."""
    d_by_k: dict[int, list[float | None]] = {0: [1.0, NAN], 1: [NAN, None], 2: [2.0, NAN, 3.0]}
    f_by_k: dict[int, list[float | None]] = {0: [-0.0, NAN], 1: [-7.0, NAN, None], 2: [5.0, 0.0]}
    k = [n % 3 for n in range(30)]
    d = [d_by_k[kn][(n // 3) % len(d_by_k[kn])] for n, kn in enumerate(k)]
    f = [f_by_k[kn][(n // 3) % len(f_by_k[kn])] for n, kn in enumerate(k)]
    table = _table(
        sqlite_catalog,
        [NestedField(2, "d", DOUBLE), NestedField(3, "f", FLOAT), NestedField(4, "k", INT)],
        {"d": pa.array(d), "f": pa.array(f, pa.float32()), "k": pa.array(k, pa.int32())},
        ["k"],
    )
    nan_d = [n + 1 for n, v in enumerate(d) if v is not None and math.isnan(v)]
    assert ids(table, "d IS NaN") == nan_d
    expected = [n + 1 for n, v in enumerate(f) if v is None or v not in (-7.0, 0.0)]
    assert ids(table, "f NOT IN (-7.0, -0.0)") == expected
    assert ids(table, "f = 0.0") == [n + 1 for n, v in enumerate(f) if v == 0.0]
    assert ids(table, "d != 1.0") == [n + 1 for n, v in enumerate(d) if v != 1.0]
