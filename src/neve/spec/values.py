"""Single values: the binary form of Appendix D (bounds), the JSON single-value form
(defaults), and truncation of string/binary bounds as Iceberg-Java's metrics do it.

Values use neve's Python representation: int for int/long/date/time/timestamps, float,
bool, :class:`decimal.Decimal`, str, :class:`uuid.UUID`, bytes; structs are tuples in
field order, lists are lists and maps are dicts. The helpers for decimals (unscaled
integers) and the proleptic Gregorian calendar are shared with the transforms.
"""

from __future__ import annotations

import math
import re
import struct
import uuid
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from neve.errors import ValidationError
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
    ListType,
    LongType,
    MapType,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

__all__ = [
    "civil_to_days",
    "days_to_civil",
    "decimal_min_bytes",
    "decimal_to_unscaled",
    "format_date",
    "format_time",
    "format_timestamp",
    "from_bytes",
    "from_json",
    "parse_date",
    "parse_time",
    "parse_timestamp",
    "to_bytes",
    "to_json",
    "truncate_lower_bound",
    "truncate_upper_bound",
    "unscaled_to_decimal",
]

# --------------------------------------------------------------------------- calendar


def days_to_civil(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count since 1970-01-01, for any year (proleptic
    Gregorian, no limits like :mod:`datetime` has)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return year, month, day


def civil_to_days(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date."""
    y = year - (1 if month <= 2 else 0)
    era = y // 400
    yoe = y - era * 400
    mp = month - 3 if month > 2 else month + 9
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _check_date(year: int, month: int, day: int, text: str) -> None:
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= month <= 12 or not 1 <= day <= _DAYS_IN_MONTH[month - 1]:
        raise ValidationError(f"invalid date {text!r}; use an ISO date such as '2024-01-05'")
    if month == 2 and day == 29 and not leap:
        raise ValidationError(f"invalid date {text!r}: {year} is not a leap year")


def format_date(days: int) -> str:
    """ISO-8601 date ("2024-01-05"); years past 9999 get a '+' as in Java's ISO format."""
    y, m, d = days_to_civil(days)
    if y > 9999:
        year = f"+{y}"
    elif y < 0:
        year = f"-{-y:04d}"
    else:
        year = f"{y:04d}"
    return f"{year}-{m:02d}-{d:02d}"


def format_time(micros: int, digits: int = 6) -> str:
    """``HH:MM:SS.ffffff`` of a time of day in units of 10**-digits seconds (micros by
    default; nanos with ``digits=9``), always with all fraction digits."""
    per_second = 10**digits
    seconds, frac = divmod(micros, per_second)
    minutes, s = divmod(seconds, 60)
    h, m = divmod(minutes, 60)
    return f"{h:02d}:{m:02d}:{s:02d}.{frac:0{digits}d}"


def format_timestamp(value: int, nanos: bool = False, with_zone: bool = False) -> str:
    """ISO-8601 timestamp of micros (or nanos) since the epoch, always with 6 (or 9)
    fraction digits; ``+00:00`` is appended for the with-zone types."""
    per_day = 86_400 * (10**9 if nanos else 10**6)
    days, rest = divmod(value, per_day)
    text = f"{format_date(days)}T{format_time(rest, 9 if nanos else 6)}"
    return text + "+00:00" if with_zone else text


_DATE_RE = re.compile(r"([+-]?\d{4,})-(\d{2})-(\d{2})")
_TIME_RE = re.compile(r"(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9})\d*)?)?")
_OFFSET_RE = re.compile(r"(?:([Zz])|([+-])(\d{2}):?(\d{2})(?::?(\d{2}))?)")
_TIMESTAMP_RE = re.compile(
    rf"{_DATE_RE.pattern}(?:[Tt ]{_TIME_RE.pattern})?\s*(?:{_OFFSET_RE.pattern})?"
)


def parse_date(text: str) -> int:
    """Days since the epoch of an ISO-8601 date."""
    m = _DATE_RE.fullmatch(text.strip())
    if m is None:
        raise ValidationError(f"invalid date {text!r}; use an ISO date such as '2024-01-05'")
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    _check_date(y, mo, d, text)
    return civil_to_days(y, mo, d)


def _time_units(h: str, mi: str, s: str | None, frac: str | None, digits: int, text: str) -> int:
    hour, minute, second = int(h), int(mi), int(s or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise ValidationError(f"invalid time in {text!r}; use HH:MM:SS[.ffffff]")
    fraction = int(((frac or "") + "0" * 9)[:digits])
    per_second: int = 10**digits
    return ((hour * 60 + minute) * 60 + second) * per_second + fraction


def parse_time(text: str) -> int:
    """Microseconds since midnight of an ISO-8601 time ("22:31:08.123456")."""
    m = _TIME_RE.fullmatch(text.strip())
    if m is None:
        raise ValidationError(f"invalid time {text!r}; use HH:MM:SS[.ffffff]")
    return _time_units(m.group(1), m.group(2), m.group(3), m.group(4), 6, text)


def parse_timestamp(text: str, nanos: bool = False, with_zone: bool = False) -> int:
    """Micros (or nanos) since the epoch of an ISO-8601 timestamp.

    For the with-zone types an offset is applied (no offset means UTC); for the types
    without a zone an offset is rejected, since such a value names no instant.
    """
    m = _TIMESTAMP_RE.fullmatch(text.strip())
    if m is None:
        raise ValidationError(
            f"invalid timestamp {text!r}; use ISO-8601 such as '2024-01-05T13:45:00.000001'"
        )
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    _check_date(y, mo, d, text)
    digits = 9 if nanos else 6
    per_second: int = 10**digits
    units = 0
    if m.group(4) is not None:
        units = _time_units(m.group(4), m.group(5), m.group(6), m.group(7), digits, text)
    value = civil_to_days(y, mo, d) * 86_400 * per_second + units
    if m.group(9) is not None:  # a numeric offset
        if not with_zone:
            raise ValidationError(
                f"timestamp without time zone cannot carry an offset: {text!r}; drop the offset"
            )
        sign = 1 if m.group(9) == "+" else -1
        offset_s = int(m.group(10)) * 3600 + int(m.group(11)) * 60 + int(m.group(12) or 0)
        value -= sign * offset_s * per_second
    elif m.group(8) is not None and not with_zone:
        raise ValidationError(
            f"timestamp without time zone cannot carry an offset: {text!r}; drop the 'Z'"
        )
    return value


# --------------------------------------------------------------------------- decimals


def decimal_to_unscaled(value: Decimal | int, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale`` (14.20 at scale 2 -> 1420).

    Raises ValidationError when the value has more fraction digits than the scale allows,
    or is NaN/infinite.
    """
    if isinstance(value, bool) or not isinstance(value, (Decimal, int)):
        raise ValidationError(
            f"expected a decimal.Decimal, got {type(value).__name__} {value!r}; "
            "pass decimal values as decimal.Decimal"
        )
    if isinstance(value, int):
        return value * 10**scale if scale >= 0 else _exact_div(value, 10**-scale, value, scale)
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise ValidationError(f"decimal value {value} is not finite; use a finite number")
    coefficient = int("".join(map(str, digits))) if digits else 0
    shift = exponent + scale
    unscaled: int
    if shift >= 0:
        unscaled = coefficient * 10**shift
    else:
        unscaled = _exact_div(coefficient, 10**-shift, value, scale)
    return -unscaled if sign else unscaled


def _exact_div(n: int, d: int, value: object, scale: int) -> int:
    q, r = divmod(n, d)
    if r:
        raise ValidationError(
            f"decimal {value} has more digits after the point than scale {scale}; "
            "round it to the column's scale first"
        )
    return q


def unscaled_to_decimal(unscaled: int, scale: int) -> Decimal:
    """The exact Decimal ``unscaled * 10**-scale`` with exponent ``-scale``."""
    return Decimal(f"{unscaled}E{-scale}")


def decimal_min_bytes(unscaled: int) -> bytes:
    """Two's-complement big-endian bytes of minimum length (what Java's
    BigInteger.toByteArray gives): 0 -> 00, 127 -> 7f, 128 -> 00 80, -1 -> ff."""
    n = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return unscaled.to_bytes(n, "big", signed=True)


# --------------------------------------------------------------------------- binary form

_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")


def _pack(s: struct.Struct, t: PrimitiveType) -> Callable[[Any], bytes]:
    def pack(value: Any) -> bytes:
        if isinstance(value, bool) and s in (_I32, _I64):
            raise ValidationError(f"expected an integer for {t}, got bool {value!r}")
        try:
            return s.pack(value)
        except struct.error as exc:
            raise ValidationError(f"value {value!r} does not fit type {t}: {exc}") from exc

    return pack


def _to_bytes_fn(t: PrimitiveType) -> Callable[[Any], bytes]:
    if isinstance(t, BooleanType):
        return lambda v: b"\x01" if v else b"\x00"
    if isinstance(t, (IntegerType, DateType)):
        return _pack(_I32, t)
    if isinstance(t, (LongType, TimeType, TimestampType, TimestamptzType)):
        return _pack(_I64, t)
    if isinstance(t, (TimestampNsType, TimestamptzNsType)):
        return _pack(_I64, t)
    if isinstance(t, FloatType):
        return _pack(_F32, t)
    if isinstance(t, DoubleType):
        return _pack(_F64, t)
    if isinstance(t, StringType):
        return _encode_utf8
    if isinstance(t, UUIDType):
        return lambda v: _as_uuid(v).bytes
    if isinstance(t, (FixedType, BinaryType)):
        return _as_bytes
    if isinstance(t, DecimalType):
        scale = t.scale
        return lambda v: decimal_min_bytes(decimal_to_unscaled(v, scale))
    raise ValidationError(f"type {t} has no single-value binary form; bounds need a primitive")


def _encode_utf8(value: Any) -> bytes:
    if not isinstance(value, str):
        raise ValidationError(f"expected a str, got {type(value).__name__} {value!r}")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(f"string {value!r} is not valid Unicode: {exc}") from exc


def _as_uuid(value: Any) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, (bytes, bytearray)) and len(value) == 16:
        return uuid.UUID(bytes=bytes(value))
    if isinstance(value, str):
        try:
            return uuid.UUID(value)
        except ValueError as exc:
            raise ValidationError(f"invalid uuid {value!r}") from exc
    raise ValidationError(f"expected a uuid.UUID, got {type(value).__name__} {value!r}")


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise ValidationError(f"expected bytes, got {type(value).__name__} {value!r}")


def to_bytes(t: PrimitiveType, value: Any) -> bytes:
    """Appendix D single-value binary form of ``value`` (a non-null value of type ``t``)."""
    if value is None:
        raise ValidationError("null has no single-value binary form; leave the bound out")
    return _to_bytes_fn(t)(value)


def _unpack(s: struct.Struct, t: PrimitiveType, data: bytes) -> Any:
    if len(data) != s.size:
        raise ValidationError(
            f"a {t} value takes {s.size} bytes, got {len(data)}: the bound is corrupt "
            "or was written for another type"
        )
    return s.unpack(data)[0]


def from_bytes(t: PrimitiveType, data: bytes) -> Any:
    """Read an Appendix D single value of type ``t``.

    Accepts the narrower forms older writers leave after type promotion: a 4-byte int
    for a long, a 4-byte float for a double (Iceberg-Java keeps such bounds as written).
    """
    data = bytes(data)
    if isinstance(t, BooleanType):
        if len(data) != 1:
            raise ValidationError(f"a boolean value takes 1 byte, got {len(data)}")
        return data[0] != 0
    if isinstance(t, (IntegerType, DateType)):
        return _unpack(_I32, t, data)
    if isinstance(t, LongType):
        return _unpack(_I32 if len(data) == 4 else _I64, t, data)
    if isinstance(t, (TimeType, TimestampType, TimestamptzType)):
        return _unpack(_I64, t, data)
    if isinstance(t, (TimestampNsType, TimestamptzNsType)):
        return _unpack(_I64, t, data)
    if isinstance(t, FloatType):
        return _unpack(_F32, t, data)
    if isinstance(t, DoubleType):
        return _unpack(_F32 if len(data) == 4 else _F64, t, data)
    if isinstance(t, StringType):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"string bound is not valid UTF-8: {exc}") from exc
    if isinstance(t, UUIDType):
        if len(data) != 16:
            raise ValidationError(f"a uuid value takes 16 bytes, got {len(data)}")
        return uuid.UUID(bytes=data)
    if isinstance(t, (FixedType, BinaryType)):
        return data
    if isinstance(t, DecimalType):
        if not data:
            raise ValidationError("a decimal value takes at least 1 byte, got 0")
        return unscaled_to_decimal(int.from_bytes(data, "big", signed=True), t.scale)
    raise ValidationError(f"type {t} has no single-value binary form")


# --------------------------------------------------------------------------- JSON form

_INT_RANGE: dict[type[IcebergType], tuple[int, int]] = {
    IntegerType: (-(2**31), 2**31 - 1),
    DateType: (-(2**31), 2**31 - 1),
    LongType: (-(2**63), 2**63 - 1),
}


def _json_float(value: Any, t: IcebergType) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"expected a number for {t}, got {value!r}")
    f = float(value)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return f


def _check_int(value: Any, t: IcebergType) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"expected an integer for {t}, got {value!r}")
    low, high = _INT_RANGE.get(type(t), (-(2**63), 2**63 - 1))
    if not low <= value <= high:
        raise ValidationError(f"value {value} is out of range for {t}")
    return value


def to_json(t: IcebergType, value: Any) -> Any:
    """JSON single-value form (spec "JSON single-value serialization"), as a JSON-ready
    Python object: numbers, strings, lists and dicts."""
    if value is None:
        return None
    if isinstance(t, BooleanType):
        if not isinstance(value, bool):
            raise ValidationError(f"expected a bool for boolean, got {value!r}")
        return value
    if isinstance(t, (IntegerType, LongType)):
        return _check_int(value, t)
    if isinstance(t, (FloatType, DoubleType)):
        return _json_float(value, t)
    if isinstance(t, DecimalType):
        d = unscaled_to_decimal(decimal_to_unscaled(value, t.scale), t.scale)
        return format(d, "f") if t.scale >= 0 else str(d)
    if isinstance(t, DateType):
        return format_date(_check_int(value, t))
    if isinstance(t, TimeType):
        return format_time(_check_int(value, t))
    if isinstance(t, (TimestampType, TimestamptzType, TimestampNsType, TimestamptzNsType)):
        nanos = isinstance(t, (TimestampNsType, TimestamptzNsType))
        zone = isinstance(t, (TimestamptzType, TimestamptzNsType))
        return format_timestamp(_check_int(value, t), nanos, zone)
    if isinstance(t, StringType):
        if not isinstance(value, str):
            raise ValidationError(f"expected a str for string, got {value!r}")
        return value
    if isinstance(t, UUIDType):
        return str(_as_uuid(value))
    if isinstance(t, FixedType):
        data = _as_bytes(value)
        if len(data) != t.length:
            raise ValidationError(f"{t} takes {t.length} bytes, got {len(data)}")
        return data.hex()
    if isinstance(t, BinaryType):
        return _as_bytes(value).hex()
    if isinstance(t, StructType):
        return _struct_to_json(t, value)
    if isinstance(t, ListType):
        if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
            raise ValidationError(f"expected a list for {t}, got {value!r}")
        return [to_json(t.element_type, v) for v in value]
    if isinstance(t, MapType):
        if not isinstance(value, Mapping):
            raise ValidationError(f"expected a dict for {t}, got {value!r}")
        return {
            "keys": [to_json(t.key_type, k) for k in value],
            "values": [to_json(t.value_type, v) for v in value.values()],
        }
    if isinstance(t, UnknownType):
        raise ValidationError("a value of type unknown is always null")
    raise ValidationError(f"type {t} has no JSON single-value form")


def _struct_to_json(t: StructType, value: Any) -> dict[str, Any]:
    """Structs are objects keyed by field id; null fields are left out (as Java does).
    The value is a tuple in field order, or a mapping keyed by field id."""
    out: dict[str, Any] = {}
    if isinstance(value, Mapping):
        for f in t.fields:
            v = value.get(f.field_id, value.get(str(f.field_id)))
            if v is not None:
                out[str(f.field_id)] = to_json(f.field_type, v)
        return out
    if not isinstance(value, Sequence) or len(value) != len(t.fields):
        raise ValidationError(f"expected a tuple of {len(t.fields)} values for {t}, got {value!r}")
    for f, v in zip(t.fields, value, strict=True):
        if v is not None:
            out[str(f.field_id)] = to_json(f.field_type, v)
    return out


def _expect_str(data: Any, t: IcebergType) -> str:
    if not isinstance(data, str):
        raise ValidationError(f"expected a JSON string for {t}, got {data!r}")
    return data


_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def from_json(t: IcebergType, data: Any) -> Any:
    """Read the JSON single-value form (as parsed by :mod:`json`) into a Python value."""
    if data is None:
        return None
    if isinstance(t, BooleanType):
        if not isinstance(data, bool):
            raise ValidationError(f"expected true or false for boolean, got {data!r}")
        return data
    if isinstance(t, (IntegerType, LongType)):
        return _check_int(data, t)
    if isinstance(t, (FloatType, DoubleType)):
        if isinstance(data, str) and data in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS[data]
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise ValidationError(f"expected a JSON number for {t}, got {data!r}")
        return float(data)
    if isinstance(t, DecimalType):
        text = _expect_str(data, t) if not isinstance(data, (int, float)) else str(data)
        try:
            d = Decimal(text.strip())
        except ArithmeticError as exc:
            raise ValidationError(f"invalid decimal {data!r} for {t}") from exc
        return unscaled_to_decimal(decimal_to_unscaled(d, t.scale), t.scale)
    if isinstance(t, DateType):
        return parse_date(_expect_str(data, t))
    if isinstance(t, TimeType):
        return parse_time(_expect_str(data, t))
    if isinstance(t, (TimestampType, TimestamptzType, TimestampNsType, TimestamptzNsType)):
        nanos = isinstance(t, (TimestampNsType, TimestamptzNsType))
        zone = isinstance(t, (TimestamptzType, TimestamptzNsType))
        return parse_timestamp(_expect_str(data, t), nanos, zone)
    if isinstance(t, StringType):
        return _expect_str(data, t)
    if isinstance(t, UUIDType):
        return _as_uuid(_expect_str(data, t))
    if isinstance(t, (FixedType, BinaryType)):
        try:
            raw = bytes.fromhex(_expect_str(data, t))
        except ValueError as exc:
            raise ValidationError(f"expected a hex string for {t}, got {data!r}") from exc
        if isinstance(t, FixedType) and len(raw) != t.length:
            raise ValidationError(f"{t} takes {t.length} bytes, got {len(raw)}")
        return raw
    if isinstance(t, StructType):
        if not isinstance(data, Mapping):
            raise ValidationError(f"expected a JSON object keyed by field id for {t}")
        return tuple(from_json(f.field_type, data.get(str(f.field_id))) for f in t.fields)
    if isinstance(t, ListType):
        if not isinstance(data, list):
            raise ValidationError(f"expected a JSON array for {t}, got {data!r}")
        return [from_json(t.element_type, v) for v in data]
    if isinstance(t, MapType):
        if (
            not isinstance(data, Mapping)
            or not isinstance(data.get("keys"), list)
            or not isinstance(data.get("values"), list)
            or len(data["keys"]) != len(data["values"])
        ):
            raise ValidationError(
                f'expected {{"keys": [...], "values": [...]}} of equal length for {t}'
            )
        return {
            from_json(t.key_type, k): from_json(t.value_type, v)
            for k, v in zip(data["keys"], data["values"], strict=True)
        }
    if isinstance(t, UnknownType):
        raise ValidationError("a value of type unknown is always null")
    raise ValidationError(f"type {t} has no JSON single-value form")


# --------------------------------------------------------------------------- bounds

_MAX_CODE_POINT = 0x10FFFF


def _check_length(length: int) -> None:
    if length <= 0:
        raise ValidationError(f"bound truncation length must be positive, got {length}")


def truncate_lower_bound(t: IcebergType, value: Any, length: int = 16) -> Any:
    """A lower bound of at most ``length`` code points (strings) or bytes (binary,
    fixed); other types are returned unchanged. A prefix is never greater."""
    _check_length(length)
    if isinstance(t, StringType):
        return value[:length]
    if isinstance(t, (BinaryType, FixedType)):
        return bytes(value[:length])
    return value


def truncate_upper_bound(t: IcebergType, value: Any, length: int = 16) -> Any | None:
    """An upper bound of at most ``length`` code points/bytes, or None when none exists.

    Past the limit, the prefix gets its last incrementable code point (byte) incremented
    and everything after it dropped; code points skip the surrogate range and stop at
    U+10FFFF, bytes stop at 0xFF. Other types are returned unchanged.
    """
    _check_length(length)
    if isinstance(t, StringType):
        if len(value) <= length:
            return value
        for i in range(length - 1, -1, -1):
            cp = ord(value[i]) + 1
            if 0xD800 <= cp <= 0xDFFF:
                cp = 0xE000
            if cp <= _MAX_CODE_POINT:
                return value[:i] + chr(cp)
        return None
    if isinstance(t, (BinaryType, FixedType)):
        data = bytes(value)
        if len(data) <= length:
            return data
        for i in range(length - 1, -1, -1):
            if data[i] != 0xFF:
                return data[:i] + bytes((data[i] + 1,))
        return None
    return value
