"""Row-group pruning by Parquet statistics with Iceberg's rules (neve.arrow.row_groups).

Real Parquet files with several row groups; a filter keeps exactly the groups where a
row may match. NaN is invisible to Parquet statistics, so NaN rows must never be
pruned (whole-table scans of such files are in
tests/differential/test_edge_value_scans.py).
"""

from __future__ import annotations

import math
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neve.arrow.row_groups import leaf_columns, matching_row_groups
from neve.expressions import ALWAYS_FALSE, ALWAYS_TRUE, bind, parse
from neve.expressions.visitors import rewrite_not
from neve.spec.schema import Schema
from neve.spec.types import (
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    DecimalType,
    ListType,
    NestedField,
    StructType,
)

NAN = math.nan


def _groups(tmp_path: Path, table: pa.Table, rows_per_group: int) -> pq.FileMetaData:
    path = tmp_path / "data.parquet"
    pq.write_table(table, path, row_group_size=rows_per_group)
    return pq.ParquetFile(path).metadata


def _kept(
    tmp_path: Path, schema: Schema, table: pa.Table, rows_per_group: int, text: str
) -> list[int]:
    metadata = _groups(tmp_path, table, rows_per_group)
    expr = rewrite_not(bind(schema, parse(text)))
    return matching_row_groups(metadata, metadata.schema.to_arrow_schema(), expr)


FLOATS = Schema(NestedField(1, "d", DOUBLE), NestedField(2, "f", FLOAT))
# four groups of two rows: one value and NaN (Parquet min = max = 1.0), two values,
# only NaN (no min/max), only nulls
FLOAT_ROWS = pa.table(
    {
        "d": pa.array([1.0, NAN, 2.0, 3.0, NAN, NAN, None, None]),
        "f": pa.array([-0.0, NAN, -7.0, 5.0, NAN, NAN, None, None], pa.float32()),
    }
)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("d != 1.0", [0, 1, 2, 3]),  # nulls satisfy != too
        ("NOT d = 1.0", [0, 1, 2, 3]),
        ("d NOT IN (1.0, 2.0)", [0, 1, 2, 3]),
        ("d IS NaN", [0, 1, 2]),  # NaN counts are unknown: any group with values
        ("d IS NOT NaN", [0, 1, 2, 3]),
        ("d = 1.0", [0, 2]),
        ("d > 1.5", [1, 2]),
        ("d <= 1.0", [0, 2]),
        ("d IS NULL", [3]),
        ("d IS NOT NULL", [0, 1, 2]),
        ("f NOT IN (-7.0, -0.0)", [0, 1, 2, 3]),
        ("f = 0.0", [0, 1, 2]),  # -0.0 equals 0.0; 0.0 lies between -7.0 and 5.0
        ("f < 0.0", [1, 2]),  # -0.0 is not below 0.0; -7.0 is
    ],
)
def test_float_row_groups_keep_their_nan_rows(tmp_path: Path, text: str, kept: list[int]) -> None:
    assert _kept(tmp_path, FLOATS, FLOAT_ROWS, 2, text) == kept


def test_integer_string_and_nested_columns(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "l", ListType(2, INT)),
        NestedField(3, "i", INT),
        NestedField(4, "s", STRING),
        NestedField(5, "st", StructType(NestedField(6, "x", LONG))),
    )
    table = pa.table(
        {
            "l": [[100], [200, 300], None, [1]],
            "i": pa.array([1, 2, 10, None], pa.int32()),
            "s": ["aa", "ab", "b", "c"],
            "st": [{"x": 5}, {"x": 5}, {"x": 7}, None],
        }
    )
    assert _kept(tmp_path, schema, table, 2, "i < 5") == [0]
    # the list's leaves come first in the file: i is leaf 1, not 0
    assert _kept(tmp_path, schema, table, 2, "i >= 10") == [1]
    assert _kept(tmp_path, schema, table, 2, "s LIKE 'ab%'") == [0]
    assert _kept(tmp_path, schema, table, 2, "s NOT LIKE 'a%'") == [1]
    assert _kept(tmp_path, schema, table, 2, "st.x = 5") == [0]
    assert _kept(tmp_path, schema, table, 2, "st.x IS NULL") == [1]
    assert leaf_columns(table.schema) == {("i",): 1, ("s",): 2, ("st", "x"): 3}


def test_statistics_of_uncertain_meaning_are_not_used(tmp_path: Path) -> None:
    # unsigned ints read as long, a decimal of another scale, millisecond timestamps
    schema = Schema(
        NestedField(1, "u", LONG),
        NestedField(2, "dec", DecimalType(9, 3)),
        NestedField(3, "ts", TIMESTAMP),
    )
    table = pa.table(
        {
            "u": pa.array([4_000_000_000, 4_000_000_001], pa.uint32()),
            "dec": pa.array([Decimal("1.00"), Decimal("2.00")], pa.decimal128(9, 2)),
            "ts": pa.array([1_000, 2_000], pa.timestamp("ms")),
        }
    )
    assert _kept(tmp_path, schema, table, 2, "u < 5") == [0]  # unknown: kept
    assert _kept(tmp_path, schema, table, 2, "dec > 5") == [0]
    # milliseconds are scaled exactly to the column's microseconds
    assert _kept(tmp_path, schema, table, 2, "ts < 1500000") == [0]
    assert _kept(tmp_path, schema, table, 2, "ts > 3000000") == []


def test_constant_filters(tmp_path: Path) -> None:
    metadata = _groups(tmp_path, FLOAT_ROWS, 3)
    arrow_schema = metadata.schema.to_arrow_schema()
    assert matching_row_groups(metadata, arrow_schema, ALWAYS_TRUE) == [0, 1, 2]
    assert matching_row_groups(metadata, arrow_schema, ALWAYS_FALSE) == []
