"""Arrow <-> Iceberg schemas with field ids, name mappings and value conversion."""

from __future__ import annotations

import decimal
import json
import uuid

import pyarrow as pa
import pytest

from neve.arrow.schema import (
    FIELD_ID_KEY,
    MappedField,
    NameMapping,
    apply_name_mapping,
    arrow_to_values,
    constant_array,
    create_name_mapping,
    field_id,
    from_arrow_schema,
    has_field_ids,
    parse_name_mapping,
    to_arrow_schema,
    to_arrow_type,
    values_to_arrow,
)
from neve.errors import SchemaError
from neve.spec.schema import Schema
from neve.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UUID,
    DecimalType,
    FixedType,
    ListType,
    MapType,
    NestedField,
    StructType,
)

FULL = Schema(
    NestedField(1, "b", BOOLEAN, True),
    NestedField(2, "i", INT),
    NestedField(3, "l", LONG, True),
    NestedField(4, "f", FLOAT),
    NestedField(5, "d", DOUBLE),
    NestedField(6, "dec", DecimalType(38, 10)),
    NestedField(7, "date", DATE),
    NestedField(8, "time", TIME),
    NestedField(9, "ts", TIMESTAMP),
    NestedField(10, "tstz", TIMESTAMPTZ),
    NestedField(11, "tsns", TIMESTAMP_NS),
    NestedField(12, "tstzns", TIMESTAMPTZ_NS),
    NestedField(13, "s", STRING),
    NestedField(14, "u", UUID),
    NestedField(15, "fx", FixedType(7)),
    NestedField(16, "bin", BINARY),
    NestedField(
        17,
        "st",
        StructType(NestedField(18, "x", INT, True), NestedField(19, "y", STRING)),
        True,
    ),
    NestedField(20, "lst", ListType(21, LONG, False)),
    NestedField(22, "m", MapType(23, STRING, 24, ListType(25, DOUBLE, True), False)),
)


def test_every_type_maps_to_the_documented_arrow_type() -> None:
    s = to_arrow_schema(FULL)
    assert s.field("b").type == pa.bool_()
    assert s.field("i").type == pa.int32()
    assert s.field("f").type == pa.float32()
    assert s.field("dec").type == pa.decimal128(38, 10)
    assert s.field("date").type == pa.date32()
    assert s.field("time").type == pa.time64("us")
    assert s.field("ts").type == pa.timestamp("us")
    assert s.field("tstz").type == pa.timestamp("us", tz="UTC")
    assert s.field("tsns").type == pa.timestamp("ns")
    assert s.field("tstzns").type == pa.timestamp("ns", tz="UTC")
    assert s.field("s").type == pa.large_string()
    assert s.field("u").type == pa.binary(16)
    assert s.field("fx").type == pa.binary(7)
    assert s.field("bin").type == pa.large_binary()
    assert pa.types.is_large_list(s.field("lst").type)
    small = to_arrow_schema(FULL, large_types=False)
    assert small.field("s").type == pa.string()
    assert pa.types.is_list(small.field("lst").type)


def test_field_ids_and_nullability_at_every_depth() -> None:
    s = to_arrow_schema(FULL)
    assert field_id(s.field("b")) == 1 and not s.field("b").nullable
    assert s.field("i").nullable
    st = s.field("st").type
    assert field_id(st.field("x")) == 18 and not st.field("x").nullable
    lst = s.field("lst").type
    assert field_id(lst.value_field) == 21 and lst.value_field.nullable
    m = s.field("m").type
    assert field_id(m.key_field) == 23 and not m.key_field.nullable
    assert field_id(m.item_field) == 24 and m.item_field.nullable
    assert field_id(m.item_field.type.value_field) == 25


def test_round_trip_with_ids() -> None:
    # uuid is stored as plain fixed_size_binary(16) (Spark rejects the UUID annotation),
    # so it reads back as fixed[16]; everything else round-trips exactly
    expected = Schema(
        *(f.with_(field_type=FixedType(16)) if f.field_type == UUID else f for f in FULL.fields)
    )
    assert from_arrow_schema(to_arrow_schema(FULL), format_version=3) == expected
    assert from_arrow_schema(to_arrow_schema(FULL, large_types=False), format_version=3) == expected


def test_nanosecond_timestamps_before_v3_become_micros() -> None:
    s = from_arrow_schema(pa.schema([("a", pa.timestamp("ns")), ("b", pa.timestamp("ns", "UTC"))]))
    assert [f.field_type for f in s.fields] == [TIMESTAMP, TIMESTAMPTZ]


def test_fresh_ids_follow_iceberg_java_order() -> None:
    # all fields of a struct first, then their children (TypeUtil.assignFreshIds)
    s = from_arrow_schema(
        pa.schema(
            [
                pa.field("a", pa.struct([("x", pa.int8()), ("y", pa.string())])),
                pa.field("b", pa.int64(), nullable=False),
                pa.field("l", pa.list_(pa.field("item", pa.float32(), nullable=False))),
                pa.field("m", pa.map_(pa.string(), pa.list_(pa.int32()))),
            ]
        )
    )
    assert [f.field_id for f in s.fields] == [1, 2, 3, 4]
    assert s.find_field("a.x").field_id == 5 and s.find_field("a.y").field_id == 6
    assert s.find_field("l.element").field_id == 7
    assert s.find_field("m.key").field_id == 8 and s.find_field("m.value").field_id == 9
    assert s.find_field("m.value.element").field_id == 10
    assert s.find_field("b").required and not s.find_field("a").required
    lt = s.find_type("l")
    assert isinstance(lt, ListType) and lt.element_required


@pytest.mark.parametrize(
    ("arrow", "iceberg"),
    [
        (pa.int8(), INT),
        (pa.int16(), INT),
        (pa.uint8(), INT),
        (pa.uint16(), INT),
        (pa.uint32(), LONG),
        (pa.float16(), FLOAT),
        (pa.large_string(), STRING),
        (pa.string_view(), STRING),
        (pa.binary_view(), BINARY),
        (pa.date64(), DATE),
        (pa.time32("ms"), TIME),
        (pa.timestamp("ms", tz="Europe/Paris"), TIMESTAMPTZ),
        (pa.dictionary(pa.int32(), pa.string()), STRING),
        (pa.uuid(), UUID),
        (pa.decimal256(20, 3), DecimalType(20, 3)),
        (pa.binary(16), FixedType(16)),
    ],
)
def test_accepted_arrow_types(arrow: pa.DataType, iceberg: object) -> None:
    assert from_arrow_schema(pa.schema([("c", arrow)])).find_type("c") == iceberg


@pytest.mark.parametrize(
    "arrow",
    [pa.uint64(), pa.decimal256(40, 2), pa.null(), pa.duration("s"), pa.month_day_nano_interval()],
)
def test_unsupported_arrow_types_are_schema_errors(arrow: pa.DataType) -> None:
    with pytest.raises(SchemaError, match="'c'"):
        from_arrow_schema(pa.schema([("c", arrow)]))


def test_partial_ids_are_rejected() -> None:
    s = pa.schema(
        [pa.field("a", pa.int32(), metadata={FIELD_ID_KEY: b"1"}), pa.field("b", pa.int32())]
    )
    with pytest.raises(SchemaError, match="'b' has no PARQUET:field_id"):
        from_arrow_schema(s)


def test_name_mapping_json_round_trip_and_lookup() -> None:
    text = json.dumps(
        [
            {"field-id": 1, "names": ["id", "record_id"]},
            {"names": ["unmapped"]},
            {
                "field-id": 2,
                "names": ["loc"],
                "fields": [
                    {
                        "field-id": 3,
                        "names": ["element"],
                        "fields": [{"field-id": 4, "names": ["lat"]}],
                    }
                ],
            },
        ]
    )
    m = parse_name_mapping(text)
    assert m.find("record_id") == m.find("id")
    assert m.find("id") is not None and m.find("id").field_id == 1  # type: ignore[union-attr]
    assert m.find("unmapped") == MappedField(("unmapped",), None)
    assert m.find("loc", "element", "lat").field_id == 4  # type: ignore[union-attr]
    assert m.find("loc", "nope") is None
    assert parse_name_mapping(m.to_json()) == m


@pytest.mark.parametrize(
    "bad", ["{", '{"a": 1}', '[{"field-id": 1}]', '[{"field-id": "x", "names": ["a"]}]']
)
def test_malformed_name_mapping(bad: str) -> None:
    with pytest.raises(SchemaError):
        parse_name_mapping(bad)


def test_create_and_apply_name_mapping() -> None:
    mapping = create_name_mapping(FULL)
    stripped = pa.schema(
        [
            pa.field("l", pa.int64()),
            pa.field("st", pa.struct([("y", pa.string()), ("zz", pa.int32())])),
            pa.field("lst", pa.list_(pa.field("array", pa.int64()))),
            pa.field("m", pa.map_(pa.string(), pa.list_(pa.float64()))),
            pa.field("other", pa.int32()),
        ]
    )
    assert not has_field_ids(stripped)
    mapped = apply_name_mapping(stripped, mapping)
    assert field_id(mapped.field("l")) == 3
    assert field_id(mapped.field("st").type.field("y")) == 19
    assert field_id(mapped.field("st").type.field("zz")) is None
    # list elements are found as "element" whatever the Arrow name is
    assert field_id(mapped.field("lst").type.value_field) == 21
    assert field_id(mapped.field("m").type.item_field.type.value_field) == 25
    assert field_id(mapped.field("other")) is None
    assert has_field_ids(mapped)


def test_name_mapping_to_schema() -> None:
    mapping = NameMapping((MappedField(("a", "alias"), 7), MappedField(("b",), 9)))
    s = from_arrow_schema(pa.schema([("alias", pa.int32()), ("b", pa.string())]), mapping)
    assert [f.field_id for f in s.fields] == [7, 9]
    with pytest.raises(SchemaError, match="not in the name mapping"):
        from_arrow_schema(pa.schema([("c", pa.int32())]), mapping)


def test_value_conversions_round_trip() -> None:
    cases = [
        (DATE, [19000, None, -3]),
        (TIME, [0, 86_399_999_999]),
        (TIMESTAMP, [1_700_000_000_123_456, -1]),
        (TIMESTAMPTZ, [1_700_000_000_123_456]),
        (TIMESTAMP_NS, [1_700_000_000_123_456_789]),
        (UUID, [uuid.UUID(int=5), None]),
        (DecimalType(38, 10), [decimal.Decimal("1234567890123456789012345678.0123456789")]),
        (STRING, ["ä€𝄞", None]),
        (FixedType(3), [b"abc"]),
    ]
    for t, values in cases:
        arr = values_to_arrow(values, t)
        assert arr.type == to_arrow_type(t)
        assert arrow_to_values(arr, t) == values


def test_constant_arrays() -> None:
    assert constant_array(5, LONG, 3).to_pylist() == [5, 5, 5]
    assert constant_array(None, STRING, 2).type == pa.large_string()
    st = StructType(NestedField(1, "a", INT), NestedField(2, "b", STRING))
    arr = constant_array((1, "x"), st, 2)
    assert arr.to_pylist() == [{"a": 1, "b": "x"}] * 2
    assert constant_array(19000, DATE, 1).to_pylist()[0].isoformat() == "2022-01-08"
