from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neve.errors import ExpressionError
from neve.expressions.literals import ABOVE_MAX, BELOW_MIN, to_type
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
)
from strategies import SIMPLE_PRIMITIVES, values_of

U = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")


@pytest.mark.parametrize(
    ("value", "t", "expected"),
    [
        (True, BOOLEAN, True),
        ("FALSE", BOOLEAN, False),
        (5, INT, 5),
        (5.0, INT, 5),
        (Decimal("7"), LONG, 7),
        ("42", LONG, 42),
        ("-3.000", INT, -3),
        (2**31 - 1, INT, 2**31 - 1),
        (2**31, INT, ABOVE_MAX),
        (-(2**31) - 1, INT, BELOW_MIN),
        (2**63, LONG, ABOVE_MAX),
        (-(2**63), LONG, -(2**63)),
        (3, DOUBLE, 3.0),
        (Decimal("0.1"), DOUBLE, 0.1),
        ("1e3", DOUBLE, 1000.0),
        ("-inf", DOUBLE, float("-inf")),
        (0.1, FLOAT, 0.10000000149011612),  # rounded to float32 like Iceberg-Java
        (1, DecimalType(9, 2), Decimal("1.00")),
        (Decimal("1.5"), DecimalType(9, 2), Decimal("1.50")),
        (0.25, DecimalType(9, 2), Decimal("0.25")),
        ("12.340", DecimalType(9, 2), Decimal("12.34")),
        (Decimal("10000000.00"), DecimalType(9, 2), ABOVE_MAX),
        (Decimal("-10000000"), DecimalType(9, 2), BELOW_MIN),
        (Decimal("9" * 36 + ".25"), DecimalType(38, 2), Decimal("9" * 36 + ".25")),
        ("abc", STRING, "abc"),
        ("2024-02-29", DATE, 19782),
        (dt.date(1969, 12, 31), DATE, -1),
        (dt.datetime(2024, 2, 29), DATE, 19782),
        (19782, DATE, 19782),
        ("10:00:01.5", TIME, 36_001_500_000),
        (dt.time(0, 0, 1), TIME, 1_000_000),
        ("1970-01-01T00:00:01", TIMESTAMP, 1_000_000),
        ("1970-01-01", TIMESTAMP, 0),
        (dt.datetime(1970, 1, 1, 0, 0, 2), TIMESTAMP, 2_000_000),
        (dt.date(1970, 1, 2), TIMESTAMP, 86_400_000_000),
        ("1970-01-01T01:00:00+01:00", TIMESTAMPTZ, 0),
        ("1970-01-01T00:00:00Z", TIMESTAMPTZ, 0),
        ("1970-01-01T00:00:00", TIMESTAMPTZ, 0),  # no offset: UTC
        (dt.datetime(1970, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))), TIMESTAMPTZ, 0),
        ("1970-01-01T00:00:00.000000001", TIMESTAMP_NS, 1),
        ("1970-01-01T00:00:01+00:00", TIMESTAMPTZ_NS, 1_000_000_000),
        (dt.datetime(1970, 1, 1, 0, 0, 0, 3), TIMESTAMP_NS, 3000),
        (str(U), UUID, U),
        (U.bytes, UUID, U),
        (U, UUID, U),
        ("0x00ff", BINARY, b"\x00\xff"),
        (b"ab", BINARY, b"ab"),
        (bytearray(b"ab"), FixedType(2), b"ab"),
        ("6162", FixedType(2), b"ab"),
    ],
)
def test_conversions(value: Any, t: IcebergType, expected: Any) -> None:
    result = to_type(value, t, "c")
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("value", "t", "message"),
    [
        (1, BOOLEAN, "true or false"),
        (True, INT, "booleans are not numbers"),
        (2.5, LONG, "not a whole number"),
        ("abc", INT, "whole number"),
        ("nan", DOUBLE, "is_nan"),
        (10**400, DOUBLE, "too large"),
        (1e39, FLOAT, "float range"),
        (Decimal("1.234"), DecimalType(9, 2), "round it to 2 places"),
        (0.1 + 0.2, DecimalType(9, 2), "round it"),
        ("x", DecimalType(9, 2), "decimal number"),
        (5, STRING, "use a string"),
        ("2024-13-01", DATE, "ISO date"),
        (dt.datetime(2024, 1, 1, 10), DATE, "not with times of day"),
        ("25:00", TIME, "ISO time"),
        ("2024-01-01T00:00:00+01:00", TIMESTAMP, "without offset"),
        (dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc), TIMESTAMP, "naive datetime"),
        ("yesterday", TIMESTAMPTZ, "ISO timestamp"),
        ("not-a-uuid", UUID, "UUID string"),
        ("zz", BINARY, "hex digits"),
        (b"abc", FixedType(2), "must be 2 bytes"),
        (1, ListType(1, INT), "cannot be compared"),
    ],
)
def test_impossible_conversions_say_why(value: Any, t: IcebergType, message: str) -> None:
    with pytest.raises(ExpressionError, match=message) as info:
        to_type(value, t, "col")
    assert "'col'" in str(info.value)


_REPRESENTED = [*SIMPLE_PRIMITIVES, DecimalType(9, 2), DecimalType(38, 10), FixedType(3)]


@given(st.sampled_from(_REPRESENTED).flatmap(lambda t: st.tuples(st.just(t), values_of(t))))
def test_values_in_neve_representation_convert_to_themselves(case: tuple[IcebergType, Any]) -> None:
    t, value = case
    result = to_type(value, t)
    assert result == value
    assert type(result) is type(value)
