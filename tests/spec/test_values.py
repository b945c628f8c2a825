"""Single values: Appendix D binary form, JSON single-value form, bound truncation and
the calendar/decimal helpers."""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neve.errors import ValidationError
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
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)
from neve.spec.values import (
    civil_to_days,
    days_to_civil,
    decimal_min_bytes,
    decimal_to_unscaled,
    from_bytes,
    from_json,
    parse_timestamp,
    to_bytes,
    to_json,
    truncate_lower_bound,
    truncate_upper_bound,
    unscaled_to_decimal,
)
from strategies import SIMPLE_PRIMITIVES, values_of

# Every primitive with a strategy for its values (decimals with a negative scale too).
PRIMITIVES: list[tuple[PrimitiveType, st.SearchStrategy[Any]]] = [
    (t, values_of(t))
    for t in (
        *SIMPLE_PRIMITIVES,
        FixedType(5),
        DecimalType(9, 2),
        DecimalType(38, 6),
        DecimalType(9, -2),
    )
]
IDS = [str(t) for t, _ in PRIMITIVES]

# --------------------------------------------------------------------------- binary form


@pytest.mark.parametrize(
    ("t", "value", "hex_bytes"),
    [
        (BOOLEAN, True, "01"),
        (BOOLEAN, False, "00"),
        (INT, 1, "01000000"),
        (INT, -2, "feffffff"),
        (LONG, 1, "0100000000000000"),
        (FLOAT, 1.0, "0000803f"),
        (DOUBLE, 1.0, "000000000000f03f"),
        (DATE, 17486, "4e440000"),
        (TIME, 1, "0100000000000000"),
        (TIMESTAMP, -1, "ffffffffffffffff"),
        (TIMESTAMPTZ_NS, 256, "0001000000000000"),
        (STRING, "iceberg", "69636562657267"),
        (STRING, "é", "c3a9"),
        (
            UUID,
            uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
            "f79c3e09677c4bbda4793f349cb785e7",
        ),
        (FixedType(4), bytes([0, 1, 2, 3]), "00010203"),
        (BINARY, b"", ""),
        (DecimalType(4, 2), Decimal("14.20"), "058c"),
        (DecimalType(9, 0), Decimal(0), "00"),
        (DecimalType(9, 0), Decimal(127), "7f"),
        (DecimalType(9, 0), Decimal(128), "0080"),
        (DecimalType(9, 0), Decimal(-1), "ff"),
        (DecimalType(9, 0), Decimal(-128), "80"),
        (DecimalType(9, 0), Decimal(-129), "ff7f"),
        (DecimalType(9, 3), Decimal("1.5"), "05dc"),
    ],
)
def test_binary_form(t: PrimitiveType, value: Any, hex_bytes: str) -> None:
    assert to_bytes(t, value).hex() == hex_bytes
    assert from_bytes(t, bytes.fromhex(hex_bytes)) == value


def test_decimal_reads_back_with_the_type_scale() -> None:
    value = from_bytes(DecimalType(9, 3), bytes.fromhex("05dc"))
    assert value == Decimal("1.500") and value.as_tuple().exponent == -3


@pytest.mark.parametrize(("t", "values"), PRIMITIVES, ids=IDS)
def test_binary_round_trip(t: PrimitiveType, values: st.SearchStrategy[Any]) -> None:
    @given(values)
    def check(value: Any) -> None:
        assert from_bytes(t, to_bytes(t, value)) == value

    check()


def test_promoted_bounds_are_read() -> None:
    # Iceberg-Java keeps bounds written before int -> long and float -> double promotion.
    assert from_bytes(LONG, to_bytes(INT, -7)) == -7
    assert from_bytes(DOUBLE, to_bytes(FLOAT, 1.5)) == 1.5
    assert from_bytes(DOUBLE, to_bytes(FLOAT, 0.1)) == pytest.approx(0.1, rel=1e-7)


@pytest.mark.parametrize(
    ("t", "data"),
    [
        (INT, b"\x01"),
        (LONG, b"\x01\x02"),
        (DOUBLE, b"\x00" * 3),
        (UUID, b"\x00" * 15),
        (BOOLEAN, b""),
    ],
)
def test_wrong_lengths_are_rejected(t: PrimitiveType, data: bytes) -> None:
    with pytest.raises(ValidationError):
        from_bytes(t, data)


@pytest.mark.parametrize(
    ("t", "value"),
    [
        (INT, 2**31),
        (LONG, -(2**63) - 1),
        (INT, "1"),
        (INT, True),
        (STRING, b"x"),
        (STRING, "\ud800"),
        (BINARY, "x"),
        (DecimalType(9, 2), Decimal("1.234")),
        (DecimalType(9, 2), Decimal("NaN")),
        (DecimalType(9, 2), 1.5),
        (LONG, None),
    ],
)
def test_bad_values_are_rejected(t: PrimitiveType, value: Any) -> None:
    with pytest.raises(ValidationError):
        to_bytes(t, value)


def test_invalid_utf8_bound_is_rejected() -> None:
    with pytest.raises(ValidationError):
        from_bytes(STRING, b"\xff")


# --------------------------------------------------------------------------- JSON form


@pytest.mark.parametrize(
    ("t", "value", "expected"),
    [
        (BOOLEAN, True, True),
        (INT, 34, 34),
        (LONG, 34, 34),
        (FLOAT, 1.0, 1.0),
        (DOUBLE, 1.0, 1.0),
        (DecimalType(9, 2), Decimal("14.20"), "14.20"),
        (DecimalType(9, 2), Decimal("14.2"), "14.20"),
        (DecimalType(38, 10), Decimal("1E-10"), "0.0000000001"),
        (DecimalType(9, -2), Decimal("2E+2"), "2E+2"),
        (DATE, 17486, "2017-11-16"),
        (DATE, -719163, "0000-12-31"),
        (DATE, -719163 - 366, "-0001-12-31"),
        (TIME, 81068123456, "22:31:08.123456"),
        (TIME, 1, "00:00:00.000001"),
        (TIMESTAMP, 1510871468123456, "2017-11-16T22:31:08.123456"),
        (TIMESTAMPTZ, 1510871468123456, "2017-11-16T22:31:08.123456+00:00"),
        (TIMESTAMP_NS, 1510871468123456789, "2017-11-16T22:31:08.123456789"),
        (TIMESTAMPTZ_NS, 1510871468123456789, "2017-11-16T22:31:08.123456789+00:00"),
        (TIMESTAMP, -1, "1969-12-31T23:59:59.999999"),
        (STRING, "iceberg", "iceberg"),
        (
            UUID,
            uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
            "f79c3e09-677c-4bbd-a479-3f349cb785e7",
        ),
        (FixedType(4), bytes([0, 1, 2, 0xFF]), "000102ff"),
        (BINARY, bytes([0, 1, 2, 0xFF]), "000102ff"),
        (FLOAT, math.inf, "Infinity"),
    ],
)
def test_json_form(t: IcebergType, value: Any, expected: Any) -> None:
    assert to_json(t, value) == expected
    assert from_json(t, expected) == value


def test_json_nan() -> None:
    assert to_json(DOUBLE, math.nan) == "NaN"
    assert math.isnan(from_json(DOUBLE, "NaN"))


NESTED = StructType(
    NestedField(1, "id", INT, True),
    NestedField(2, "data", STRING),
    NestedField(3, "tags", ListType(4, STRING)),
    NestedField(5, "props", MapType(6, STRING, 7, LONG)),
    NestedField(8, "inner", StructType(NestedField(9, "x", DATE))),
)


def test_json_nested_values() -> None:
    value = (1, "bar", ["a", "b"], {"k": 7}, (17486,))
    encoded = to_json(NESTED, value)
    assert encoded == {
        "1": 1,
        "2": "bar",
        "3": ["a", "b"],
        "5": {"keys": ["k"], "values": [7]},
        "8": {"9": "2017-11-16"},
    }
    assert from_json(NESTED, json.loads(json.dumps(encoded))) == value


def test_json_struct_leaves_out_nulls_and_accepts_mappings() -> None:
    assert to_json(NESTED, (1, None, None, None, None)) == {"1": 1}
    assert to_json(NESTED, {1: 5, "2": "x"}) == {"1": 5, "2": "x"}
    assert from_json(NESTED, {"1": 1}) == (1, None, None, None, None)


@pytest.mark.parametrize(
    ("t", "data", "value"),
    [
        (BINARY, "000102FF", bytes([0, 1, 2, 0xFF])),
        (TIMESTAMPTZ, "2017-11-16T22:31:08Z", 1510871468000000),
        (TIMESTAMPTZ, "2017-11-16T14:31:08-08:00", 1510871468000000),
        (TIMESTAMPTZ, "2017-11-16T22:31:08", 1510871468000000),
        (TIMESTAMP, "2017-11-16T22:31:08.1", 1510871468100000),
        (TIMESTAMP, "2017-11-16 22:31", 1510871460000000),
        (TIMESTAMP, "2017-11-16", 1510790400000000),
        (TIMESTAMP_NS, "2017-11-16T22:31:08.123", 1510871468123000000),
        (TIMESTAMP, "2017-11-16T22:31:08.1234567", 1510871468123456),
        (TIME, "22:31", 81060000000),
        (TIME, "22:31:08", 81068000000),
        (DecimalType(9, 2), "14.2", Decimal("14.20")),
        (DOUBLE, 3, 3.0),
        (DATE, "+10000-01-01", civil_to_days(10000, 1, 1)),
    ],
)
def test_json_readers_are_lenient(t: IcebergType, data: Any, value: Any) -> None:
    assert from_json(t, data) == value


@pytest.mark.parametrize(
    ("t", "data"),
    [
        (TIMESTAMP, "2017-11-16T22:31:08+00:00"),
        (TIMESTAMP, "2017-11-16T22:31:08Z"),
        (DATE, "2017-02-29"),
        (DATE, "2017-13-01"),
        (DATE, 17486),
        (TIME, "25:00:00"),
        (INT, 2**31),
        (INT, 1.5),
        (BOOLEAN, "true"),
        (DecimalType(9, 2), "1.234"),
        (DecimalType(9, 2), "abc"),
        (FixedType(2), "00"),
        (BINARY, "zz"),
        (UUID, "nope"),
        (ListType(1, INT), {"a": 1}),
        (MapType(1, INT, 2, INT), {"keys": [1], "values": []}),
        (NESTED, [1]),
    ],
)
def test_json_readers_reject_bad_values(t: IcebergType, data: Any) -> None:
    with pytest.raises(ValidationError):
        from_json(t, data)


@pytest.mark.parametrize(("t", "values"), PRIMITIVES, ids=IDS)
def test_json_round_trip(t: PrimitiveType, values: st.SearchStrategy[Any]) -> None:
    @given(values)
    def check(value: Any) -> None:
        assert from_json(t, json.loads(json.dumps(to_json(t, value)))) == value

    check()


@given(st.integers(-(2**62), 2**62), st.sampled_from([0, 1, -1, 5, -5, 14, -12]))
def test_timestamptz_offsets_name_the_same_instant(micros: int, hours: int) -> None:
    text = to_json(TIMESTAMP, micros)
    with_offset = f"{text}{'+' if hours >= 0 else '-'}{abs(hours):02d}:00"
    assert from_json(TIMESTAMPTZ, with_offset) == micros - hours * 3_600_000_000


def test_timestamp_parsing_matches_python() -> None:
    moment = dt.datetime(1901, 12, 13, 20, 45, 52, 7)
    micros = (moment - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    assert parse_timestamp(moment.isoformat()) == micros


# --------------------------------------------------------------------------- bounds


def test_lower_bound_truncation() -> None:
    assert truncate_lower_bound(STRING, "abcdef", 3) == "abc"
    assert truncate_lower_bound(STRING, "😀😀😀😀", 2) == "😀😀"
    assert truncate_lower_bound(STRING, "ab", 3) == "ab"
    assert truncate_lower_bound(BINARY, b"\x01\x02\x03", 2) == b"\x01\x02"
    assert truncate_lower_bound(FixedType(3), b"\x01\x02\x03", 1) == b"\x01"
    assert truncate_lower_bound(LONG, 12345, 2) == 12345
    assert len(truncate_lower_bound(STRING, "x" * 100)) == 16


def test_upper_bound_truncation() -> None:
    assert truncate_upper_bound(STRING, "abcdef", 3) == "abd"
    assert truncate_upper_bound(STRING, "abc", 3) == "abc"
    assert truncate_upper_bound(STRING, "ab\U0010ffffzz", 3) == "ac"
    assert truncate_upper_bound(STRING, "a\ud7ffzz", 2) == "a\ue000"
    assert truncate_upper_bound(STRING, "\U0010ffff\U0010ffffx", 2) is None
    assert truncate_upper_bound(BINARY, b"\x01\x02\x03", 2) == b"\x01\x03"
    assert truncate_upper_bound(BINARY, b"\x01\xff\x03", 2) == b"\x02"
    assert truncate_upper_bound(BINARY, b"\xff\xff\x03", 2) is None
    assert truncate_upper_bound(BINARY, b"\xff\xff", 2) == b"\xff\xff"
    assert truncate_upper_bound(DOUBLE, 1.5, 1) == 1.5
    with pytest.raises(ValidationError):
        truncate_upper_bound(STRING, "abc", 0)


@given(st.text(), st.integers(1, 20))
def test_string_bounds_enclose_the_value(value: str, length: int) -> None:
    lower = truncate_lower_bound(STRING, value, length)
    upper = truncate_upper_bound(STRING, value, length)
    assert lower <= value
    assert len(lower) <= length
    if upper is not None:
        assert value <= upper and len(upper) <= length
        # UTF-8 byte order agrees with code point order, so the bound serializes safely.
        assert value.encode("utf-8") <= to_bytes(STRING, upper)


@given(st.binary(), st.integers(1, 20))
def test_binary_bounds_enclose_the_value(value: bytes, length: int) -> None:
    lower = truncate_lower_bound(BINARY, value, length)
    upper = truncate_upper_bound(BINARY, value, length)
    assert lower <= value and len(lower) <= length
    if upper is not None:
        assert value <= upper and len(upper) <= length
    else:
        assert value[:length] == b"\xff" * length


# --------------------------------------------------------------------------- helpers


@given(st.integers(-800_000, 3_000_000))
def test_calendar_matches_python(days: int) -> None:
    y, m, d = days_to_civil(days)
    if 1 <= y <= 9999:
        assert dt.date(y, m, d) == dt.date(1970, 1, 1) + dt.timedelta(days=days)
    assert civil_to_days(y, m, d) == days


@given(st.integers(-(10**40), 10**40))
def test_decimal_min_bytes_round_trip(unscaled: int) -> None:
    data = decimal_min_bytes(unscaled)
    assert int.from_bytes(data, "big", signed=True) == unscaled
    # minimal: dropping the first byte changes the value (or leaves nothing)
    assert len(data) == 1 or int.from_bytes(data[1:], "big", signed=True) != unscaled


def test_decimal_unscaled_helpers() -> None:
    assert decimal_to_unscaled(Decimal("14.2"), 2) == 1420
    assert decimal_to_unscaled(Decimal("-0.05"), 2) == -5
    assert decimal_to_unscaled(7, 2) == 700
    assert decimal_to_unscaled(Decimal("200"), -2) == 2
    assert decimal_to_unscaled(Decimal("1.2300"), 2) == 123
    big = 10**38 - 1
    assert decimal_to_unscaled(unscaled_to_decimal(big, 10), 10) == big
    with pytest.raises(ValidationError):
        decimal_to_unscaled(Decimal("250"), -2)
