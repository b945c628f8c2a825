"""Splitting Arrow data by partition and naming partition directories."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from neve.arrow.conform import conform_table
from neve.arrow.partitioning import partition_path, partition_table, url_encode
from neve.spec.partition import UNPARTITIONED, PartitionField, PartitionSpec
from neve.spec.schema import Schema
from neve.spec.transforms import parse_transform
from neve.spec.types import (
    DOUBLE,
    INT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    DecimalType,
    NestedField,
    StructType,
)

SCHEMA = Schema(
    NestedField(1, "id", LONG, True),
    NestedField(2, "cat", STRING),
    NestedField(3, "ts", TIMESTAMPTZ),
    NestedField(4, "loc", StructType(NestedField(5, "city", STRING), NestedField(6, "zip", INT))),
    NestedField(7, "price", DecimalType(9, 2)),
    NestedField(8, "x", DOUBLE),
)


def spec(*terms: tuple[int, str, str]) -> PartitionSpec:
    return PartitionSpec(
        0,
        tuple(
            PartitionField(src, 1000 + i, parse_transform(t), name)
            for i, (src, t, name) in enumerate(terms)
        ),
    )


def data() -> pa.Table:
    utc = dt.timezone.utc
    return conform_table(
        pa.table(
            {
                "id": list(range(8)),
                "cat": ["a", "b", None, "a", "b", "a", None, "a"],
                "ts": [dt.datetime(2024, 3, 1 + i % 3, 5, tzinfo=utc) for i in range(8)],
                "loc": [
                    {"city": "Oslo", "zip": 1},
                    None,
                    {"city": "Bergen", "zip": 2},
                    {"city": "Oslo", "zip": 3},
                    {"city": None, "zip": 4},
                    None,
                    {"city": "Oslo", "zip": 5},
                    {"city": "Bergen", "zip": 6},
                ],
                "price": pa.array([Decimal(f"{i}.99") for i in range(8)], pa.decimal128(9, 2)),
                "x": [1.0, float("nan"), 2.0, float("nan"), 1.0, None, 2.0, 1.0],
            }
        ),
        SCHEMA,
    )


def test_unpartitioned_is_one_slice() -> None:
    table = data()
    (only,) = partition_table(table, SCHEMA, UNPARTITIONED)
    assert only.partition == () and only.path == "" and only.table is table


def test_groups_keep_row_order_and_cover_all_rows() -> None:
    table = data()
    slices = partition_table(table, SCHEMA, spec((2, "identity", "cat")))
    by_value = {s.partition: s.table.column("id").to_pylist() for s in slices}
    assert by_value == {("a",): [0, 3, 5, 7], ("b",): [1, 4], (None,): [2, 6]}
    assert {s.path for s in slices} == {"cat=a", "cat=b", "cat=null"}


def test_nested_source_null_parent_gives_null_partition() -> None:
    slices = partition_table(data(), SCHEMA, spec((5, "identity", "city")))
    by_value = {s.partition: s.table.column("id").to_pylist() for s in slices}
    assert by_value == {("Oslo",): [0, 3, 6], ("Bergen",): [2, 7], (None,): [1, 4, 5]}


def test_values_use_neve_representation() -> None:
    slices = partition_table(
        data(),
        SCHEMA,
        spec(
            (3, "day", "ts_day"), (7, "truncate[2]", "p"), (1, "bucket[3]", "b"), (3, "hour", "h")
        ),
    )
    for s in slices:
        day, price, bucket, hour = s.partition
        assert isinstance(day, int) and isinstance(price, Decimal)
        assert isinstance(bucket, int) and 0 <= bucket < 3 and isinstance(hour, int)
        assert hour // 24 == day
        first = s.table.column("ts")[0].as_py()
        assert day == (first.date() - dt.date(1970, 1, 1)).days
        assert s.path.startswith(f"ts_day={first.date().isoformat()}/p=")
    assert sum(s.table.num_rows for s in slices) == 8


def test_nan_is_one_partition() -> None:
    slices = partition_table(data(), SCHEMA, spec((8, "identity", "x")))
    assert len(slices) == 4  # 1.0, NaN, 2.0, null
    nan_slice = next(s for s in slices if s.partition[0] != s.partition[0])
    assert nan_slice.table.column("id").to_pylist() == [1, 3]
    assert nan_slice.path == "x=NaN"


def test_empty_table_has_no_partitions() -> None:
    empty = data().slice(0, 0)
    assert partition_table(empty, SCHEMA, spec((2, "identity", "cat"))) == []


@pytest.mark.parametrize(
    ("text", "encoded"),
    [
        ("plain-._*", "plain-._*"),
        ("a b", "a+b"),
        ("x/y=z&%", "x%2Fy%3Dz%26%25"),
        ("~tilde", "%7Etilde"),
        ("ä€", "%C3%A4%E2%82%AC"),
    ],
)
def test_url_encode_is_javas(text: str, encoded: str) -> None:
    assert url_encode(text) == encoded


def test_partition_path_names_are_encoded_too() -> None:
    s = PartitionSpec(0, (PartitionField(2, 1000, parse_transform("identity"), "my cat"),))
    assert partition_path(s, SCHEMA, ("x y",)) == "my+cat=x+y"
