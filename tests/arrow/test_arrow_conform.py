"""Fitting written data to the table schema by name."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from neve.arrow.conform import conform_table
from neve.arrow.schema import to_arrow_schema
from neve.errors import DataSchemaMismatchError
from neve.spec.schema import Schema
from neve.spec.types import (
    BINARY,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    DecimalType,
    FixedType,
    ListType,
    MapType,
    NestedField,
    StructType,
)

SCHEMA = Schema(
    NestedField(1, "id", LONG, True),
    NestedField(2, "name", STRING),
    NestedField(3, "score", DOUBLE),
)


def test_result_has_the_table_arrow_schema_and_column_order() -> None:
    data = pa.table(
        {"score": [1.5], "id": pa.array([7], pa.int32()), "name": pa.array(["x"], pa.string())}
    )
    out = conform_table(data, SCHEMA)
    assert out.schema == to_arrow_schema(SCHEMA)
    assert out.schema.equals(to_arrow_schema(SCHEMA), check_metadata=True)
    assert out.to_pylist() == [{"id": 7, "name": "x", "score": 1.5}]


def test_missing_optional_column_is_null_and_write_default_is_used() -> None:
    schema = Schema(
        NestedField(1, "id", LONG, True),
        NestedField(2, "name", STRING),
        NestedField(3, "flag", INT, True, write_default=42),
    )
    out = conform_table(pa.table({"id": [1, 2]}), schema)
    assert out.column("name").to_pylist() == [None, None]
    assert out.column("flag").to_pylist() == [42, 42]


def test_missing_required_column() -> None:
    with pytest.raises(DataSchemaMismatchError, match="required column 'id' is missing"):
        conform_table(pa.table({"name": ["a"]}), SCHEMA)


def test_nulls_in_required_column_are_counted() -> None:
    data = pa.table({"id": [1, None, None, 4]})
    with pytest.raises(DataSchemaMismatchError, match=r"'id' is required but has 2 null"):
        conform_table(data, SCHEMA)


def test_extra_columns_are_rejected() -> None:
    with pytest.raises(DataSchemaMismatchError, match=r"\['extra'\]"):
        conform_table(pa.table({"id": [1], "extra": [2]}), SCHEMA)


def test_duplicate_names_are_rejected() -> None:
    data = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["id", "id"])
    with pytest.raises(DataSchemaMismatchError, match="duplicate"):
        conform_table(data, SCHEMA)


@pytest.mark.parametrize(
    ("field_type", "array", "expected"),
    [
        (LONG, pa.array([1, 2], pa.int8()), [1, 2]),
        (INT, pa.array([1, 2], pa.int64()), [1, 2]),  # checked narrowing: values fit
        (DOUBLE, pa.array([1.5], pa.float32()), [1.5]),
        (FLOAT, pa.array([1.5], pa.float16()), [1.5]),
        (STRING, pa.array(["a"], pa.string_view()), ["a"]),
        (BINARY, pa.array([b"ab"], pa.binary(2)), [b"ab"]),
        (FixedType(2), pa.array([b"ab"], pa.binary()), [b"ab"]),
        (DecimalType(10, 2), pa.array([Decimal("1.25")], pa.decimal128(5, 2)), [Decimal("1.25")]),
        (DATE, pa.array([dt.date(2024, 1, 2)], pa.date64()), [dt.date(2024, 1, 2)]),
        (TIMESTAMP, pa.array([1_000], pa.timestamp("ms")), [dt.datetime(1970, 1, 1, 0, 0, 1)]),
        (TIMESTAMP, pa.array([5_000], pa.timestamp("ns")), [dt.datetime(1970, 1, 1, 0, 0, 0, 5)]),
        (TIMESTAMPTZ, pa.array([0], pa.timestamp("us", tz="Asia/Tokyo")), None),
        (UUID, pa.array([b"x" * 16], pa.uuid()), [b"x" * 16]),
        (STRING, pa.array(["a", "a"]).dictionary_encode(), ["a", "a"]),
        (LONG, pa.nulls(1), [None]),
    ],
)
def test_safe_casts(field_type: object, array: pa.Array, expected: list[object] | None) -> None:
    schema = Schema(NestedField(1, "c", field_type))  # type: ignore[arg-type]
    out = conform_table(pa.table({"c": array}), schema)
    assert out.schema == to_arrow_schema(schema)
    if expected is not None:
        assert out.column("c").to_pylist() == expected


@pytest.mark.parametrize(
    ("field_type", "array", "message"),
    [
        (INT, pa.array([2**40], pa.int64()), "not in range"),
        (FLOAT, pa.array([1.5], pa.float64()), "cannot be written"),
        (LONG, pa.array(["1"]), "cannot be written"),
        (LONG, pa.array([1.0]), "cannot be written"),
        (TIMESTAMP, pa.array([1_500], pa.timestamp("ns")), "lose data"),
        (TIMESTAMP, pa.array([0], pa.timestamp("us", tz="UTC")), "cannot be written"),
        (TIMESTAMPTZ, pa.array([0], pa.timestamp("us")), "cannot be written"),
        (FixedType(2), pa.array([b"abc"]), "widths must match"),
        (DecimalType(3, 2), pa.array([Decimal("12.34")], pa.decimal128(10, 2)), ""),
    ],
)
def test_unsafe_casts_name_column_and_types(
    field_type: object, array: pa.Array, message: str
) -> None:
    schema = Schema(NestedField(1, "c", field_type))  # type: ignore[arg-type]
    with pytest.raises(DataSchemaMismatchError, match="'c'") as info:
        conform_table(pa.table({"c": array}), schema)
    assert message in str(info.value)
    assert str(field_type) in str(info.value) or str(array.type) in str(info.value)


def test_decimal_rescale_that_loses_digits_is_rejected() -> None:
    schema = Schema(NestedField(1, "c", DecimalType(10, 1)))
    arr = pa.array([Decimal("1.25")], pa.decimal128(10, 2))
    with pytest.raises(DataSchemaMismatchError, match="'c'"):
        conform_table(pa.table({"c": arr}), schema)


NESTED = Schema(
    NestedField(
        1,
        "s",
        StructType(NestedField(2, "a", INT, True), NestedField(3, "b", STRING)),
    ),
    NestedField(4, "l", ListType(5, LONG, True)),
    NestedField(6, "m", MapType(7, STRING, 8, DOUBLE, False)),
)


def test_nested_columns_are_conformed_by_name() -> None:
    data = pa.table(
        {
            "m": pa.array([[("k", 1.0)], None], pa.map_(pa.string(), pa.float32())),
            "l": pa.array([[1, 2], None], pa.list_(pa.int32())),
            "s": pa.array(
                [{"b": "x", "a": 1}, None], pa.struct([("b", pa.string()), ("a", pa.int8())])
            ),
        }
    )
    out = conform_table(data, NESTED)
    assert out.schema == to_arrow_schema(NESTED)
    assert out.to_pylist() == [
        {"s": {"a": 1, "b": "x"}, "l": [1, 2], "m": [("k", 1.0)]},
        {"s": None, "l": None, "m": None},
    ]


def test_sliced_nested_columns_keep_their_window() -> None:
    data = pa.table({"l": pa.array([[1], [2, 3], None, [4]], pa.list_(pa.int64()))}).slice(1, 2)
    out = conform_table(data, NESTED)
    assert out.column("l").to_pylist() == [[2, 3], None]


def test_required_struct_child_may_be_null_only_under_a_null_parent() -> None:
    ok = pa.array([{"a": 1}, None], pa.struct([("a", pa.int32())]))
    assert conform_table(pa.table({"s": ok}), NESTED).column("s").to_pylist() == [
        {"a": 1, "b": None},
        None,
    ]
    bad = pa.array([{"a": None}, None], pa.struct([("a", pa.int32())]))
    with pytest.raises(DataSchemaMismatchError, match=r"'s.a' is required but has 1 null"):
        conform_table(pa.table({"s": bad}), NESTED)


def test_required_list_element_nulls_and_extra_struct_fields() -> None:
    with pytest.raises(DataSchemaMismatchError, match=r"'l.element' is required"):
        conform_table(pa.table({"l": pa.array([[1, None]])}), NESTED)
    extra = pa.array([{"a": 1, "zz": 2}])
    with pytest.raises(DataSchemaMismatchError, match=r"'s'.*\['zz'\]"):
        conform_table(pa.table({"s": extra}), NESTED)
    with pytest.raises(DataSchemaMismatchError, match="'l'"):
        conform_table(pa.table({"l": pa.array([1])}), NESTED)
