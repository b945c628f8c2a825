"""Converting filter values to a column's type (neve's value representation).

:func:`to_type` turns a Python value (or an ISO / hex / numeric string, as the parser
produces them) into the representation of an Iceberg primitive type: dates as days,
timestamps as micros or nanos, decimals rescaled to the column's scale, and so on.
Conversions that would change the value are refused with :class:`ExpressionError`.

A whole number beyond the range of an ``int``/``long`` column (or of the int days of a
date, the long counts of a time or timestamp), or a decimal beyond the column's
precision, is not an error: it converts to :data:`ABOVE_MAX` or :data:`BELOW_MIN`, and
binding simplifies the comparison (``int_col < 2**40`` holds for every non-null value,
``int_col = 2**40`` for none).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import enum
import math
import struct
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from neve.errors import ExpressionError
from neve.spec import temporal, values
from neve.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = ["ABOVE_MAX", "BELOW_MIN", "OutOfRange", "to_type"]


class OutOfRange(enum.Enum):
    """A value beyond every value the column can hold."""

    ABOVE_MAX = "above max"
    BELOW_MIN = "below min"


ABOVE_MAX = OutOfRange.ABOVE_MAX
BELOW_MIN = OutOfRange.BELOW_MIN

_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)
_FLOAT_MAX = struct.unpack(">f", bytes.fromhex("7f7fffff"))[0]
_CTX = decimal.Context(prec=200, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


class _Refused(Exception):
    """Internal: the value cannot be converted; the message says why."""


def to_type(value: Any, field_type: IcebergType, column: str = "value") -> Any:
    """Convert ``value`` to ``field_type``'s representation for comparing with ``column``.

    Returns the converted value, or :data:`ABOVE_MAX` / :data:`BELOW_MIN` for whole
    numbers and decimals outside the column's range. Raises :class:`ExpressionError`
    when the value cannot be compared with the column.
    """
    try:
        return _convert(value, field_type)
    except _Refused as exc:
        raise ExpressionError(
            f"cannot compare column {column!r} of type {field_type} with "
            f"{type(value).__name__} {value!r}: {exc}"
        ) from None


def _convert(value: Any, t: IcebergType) -> Any:
    if isinstance(t, BooleanType):
        return _to_bool(value)
    if isinstance(t, IntegerType):
        return _to_int(value, _INT_RANGE)
    if isinstance(t, LongType):
        return _to_int(value, _LONG_RANGE)
    if isinstance(t, FloatType):
        return _to_float32(_to_float(value))
    if isinstance(t, DoubleType):
        return _to_float(value)
    if isinstance(t, DecimalType):
        return _to_decimal(value, t)
    if isinstance(t, StringType):
        if isinstance(value, str):
            return value
        raise _Refused("use a string value")
    # dates are int days and times and timestamps long counts: beyond those ranges a
    # value is out of range like an int's (and would not hash nor serialize)
    if isinstance(t, DateType):
        return _in_range(_to_date(value), _INT_RANGE)
    if isinstance(t, TimeType):
        return _in_range(_to_time(value), _LONG_RANGE)
    if isinstance(t, (TimestampType, TimestamptzType)):
        return _in_range(
            _to_timestamp(value, isinstance(t, TimestamptzType), nanos=False), _LONG_RANGE
        )
    if isinstance(t, (TimestampNsType, TimestamptzNsType)):
        return _in_range(
            _to_timestamp(value, isinstance(t, TimestamptzNsType), nanos=True), _LONG_RANGE
        )
    if isinstance(t, UUIDType):
        return _to_uuid(value)
    if isinstance(t, FixedType):
        data = _to_bytes(value)
        if len(data) != t.length:
            raise _Refused(f"a fixed[{t.length}] value must be {t.length} bytes, got {len(data)}")
        return data
    if isinstance(t, BinaryType):
        return _to_bytes(value)
    raise _Refused(f"columns of type {t} cannot be compared with values")


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _Refused("use true or false")


def _whole(value: Any) -> int:
    """The integer equal to ``value``, or _Refused."""
    if isinstance(value, bool):
        raise _Refused("booleans are not numbers; use a whole number")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise _Refused("the value is not a whole number; round it first")
    if isinstance(value, Decimal):
        if value.is_finite() and value == value.to_integral_value():
            return int(value)
        raise _Refused("the value is not a whole number; round it first")
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return _whole(Decimal(text))
        except decimal.InvalidOperation:
            pass
    raise _Refused("use a whole number")


def _to_int(value: Any, bounds: tuple[int, int]) -> int | OutOfRange:
    return _in_range(_whole(value), bounds)


def _in_range(n: int, bounds: tuple[int, int]) -> int | OutOfRange:
    if n > bounds[1]:
        return ABOVE_MAX
    if n < bounds[0]:
        return BELOW_MIN
    return n


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise _Refused("booleans are not numbers; use a number")
    if isinstance(value, (int, float, Decimal, str)):
        try:
            f = float(value)
        except OverflowError:
            raise _Refused("the number is too large for a floating-point column") from None
        except ValueError:
            raise _Refused("use a number") from None
        if math.isnan(f):
            raise _Refused("NaN is not a value to compare with; use is_nan / not_nan")
        if math.isinf(f) and not isinstance(value, float):
            text = str(value).lower()
            if not (isinstance(value, str) and "inf" in text):
                raise _Refused("the number is too large for a floating-point column")
        return f
    raise _Refused("use a number")


def _to_float32(f: float) -> float:
    # Round to the nearest 32-bit float as Iceberg-Java does, so that comparisons with
    # the stored values (and with Arrow float32 columns) mean the same thing everywhere.
    if math.isfinite(f) and abs(f) > _FLOAT_MAX:
        raise _Refused(f"the number is beyond the float range (at most {_FLOAT_MAX!r})")
    try:
        rounded: float = struct.unpack(">f", struct.pack(">f", f))[0]
    except OverflowError:  # between FLT_MAX and the next power: rounds to infinity
        raise _Refused(f"the number is beyond the float range (at most {_FLOAT_MAX!r})") from None
    return rounded


def _to_decimal(value: Any, t: DecimalType) -> Decimal | OutOfRange:
    if isinstance(value, bool):
        raise _Refused("booleans are not numbers; use a decimal number")
    d: Decimal
    if isinstance(value, Decimal):
        d = value
    elif isinstance(value, int):
        d = Decimal(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise _Refused("use a finite number")
        d = Decimal(repr(value))  # the shortest text of the float, as the user wrote it
    elif isinstance(value, str):
        try:
            d = Decimal(value.strip())
        except decimal.InvalidOperation:
            raise _Refused("use a decimal number such as '12.34'") from None
    else:
        raise _Refused("use a decimal number")
    if not d.is_finite():
        raise _Refused("use a finite number")
    exp = Decimal(1).scaleb(-t.scale, _CTX)
    q = d.quantize(exp, context=_CTX)
    if q.compare(d, _CTX) != 0:
        raise _Refused(
            f"the value has more than {t.scale} digits after the point; round it to "
            f"{t.scale} places first"
        )
    if q.scaleb(t.scale, _CTX).copy_abs() >= 10**t.precision:  # abs() would round
        return ABOVE_MAX if q > 0 else BELOW_MIN
    return q


def _to_date(value: Any) -> int:
    if isinstance(value, _dt.datetime):
        if value.time() != _dt.time(0) or value.tzinfo is not None:
            raise _Refused("a date column compares with dates, not with times of day")
        return temporal.date_to_days(value.date())
    if isinstance(value, _dt.date):
        return temporal.date_to_days(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _parse(value, temporal.parse_iso_date, values.parse_date, "date")
    raise _Refused("use a date or an ISO date string such as '2024-01-31'")


def _parse(
    text: str, first: Callable[[str], int], fallback: Callable[[str], int], what: str
) -> int:
    """Parse with :mod:`neve.spec.temporal`, then with the any-year ISO parser."""
    try:
        return first(text)
    except ValueError:
        pass
    try:
        return fallback(text)
    except ValueError:
        raise _Refused(f"{text!r} is not an ISO {what}") from None


def _to_time(value: Any) -> int:
    if isinstance(value, _dt.time):
        if value.tzinfo is not None:
            raise _Refused("time columns have no time zone; use a time without an offset")
        return temporal.time_to_micros(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _parse(value, temporal.parse_iso_time, values.parse_time, "time")
    raise _Refused("use a time or an ISO time string such as '13:45:00'")


def _to_timestamp(value: Any, with_tz: bool, nanos: bool) -> int:
    scale = 1000 if nanos else 1
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None and not with_tz:
            raise _Refused(
                "the column has no time zone; use a naive datetime (local wall-clock time)"
            )
        return temporal.datetime_to_micros(value) * scale
    if isinstance(value, _dt.date):
        return temporal.date_to_days(value) * 86_400_000_000 * scale
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            if nanos:
                return temporal.parse_iso_timestamp_ns(value, with_tz)
            return temporal.parse_iso_timestamp(value, with_tz)
        except ValueError:
            pass
        try:  # years beyond 1..9999 and more fraction digits
            return values.parse_timestamp(value, nanos=nanos, with_zone=with_tz)
        except ValueError:
            pass
        if not with_tz:
            raise _Refused(
                "use an ISO timestamp without offset such as '2024-01-31T13:45:00' "
                "(the column has no time zone)"
            )
    raise _Refused("use a datetime or an ISO timestamp string such as '2024-01-31T13:45:00+00:00'")


def _to_uuid(value: Any) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str):
        try:
            return uuid.UUID(value.strip())
        except ValueError:
            pass
    if isinstance(value, (bytes, bytearray, memoryview)) and len(value) == 16:
        return uuid.UUID(bytes=bytes(value))
    raise _Refused("use a uuid.UUID, a UUID string or 16 bytes")


def _to_bytes(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        text = value.strip()
        if text[:2].lower() == "0x":
            text = text[2:]
        try:
            return bytes.fromhex(text)
        except ValueError:
            pass
        raise _Refused("strings compare with binary columns as hex digits, such as '00ff'")
    raise _Refused("use bytes or a hex string")
