"""Partition values as human-readable strings, as Iceberg-Java writes them in partition paths."""

from __future__ import annotations

import base64
import math
import struct
from decimal import Decimal
from typing import Any

from neve.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
)
from neve.spec.values import (
    days_to_civil,
    decimal_to_unscaled,
    unscaled_to_decimal,
)

__all__ = ["human_day", "to_human_string"]


def human_day(days: int) -> str:
    y, m, d = days_to_civil(days)
    return f"{y:04d}-{m:02d}-{d:02d}"


def _iso_date(days: int) -> str:
    # Java's ISO_LOCAL_DATE: 4+ digit year, '+' above 9999.
    y, m, d = days_to_civil(days)
    year = f"+{y}" if y > 9999 else (f"-{-y:04d}" if y < 0 else f"{y:04d}")
    return f"{year}-{m:02d}-{d:02d}"


def _iso_time(nanos_of_day: int) -> str:
    # Java's ISO_LOCAL_TIME: seconds always, fraction only as long as needed.
    seconds, nanos = divmod(nanos_of_day, 1_000_000_000)
    minutes, s = divmod(seconds, 60)
    h, mi = divmod(minutes, 60)
    text = f"{h:02d}:{mi:02d}:{s:02d}"
    if nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    return text


def _java_local_time(nanos_of_day: int) -> str:
    # Java's LocalTime.toString: seconds only when non-zero, fraction in 3/6/9 digits.
    seconds, nanos = divmod(nanos_of_day, 1_000_000_000)
    minutes, s = divmod(seconds, 60)
    h, mi = divmod(minutes, 60)
    text = f"{h:02d}:{mi:02d}"
    if s or nanos:
        text += f":{s:02d}"
        if nanos:
            if nanos % 1_000_000 == 0:
                text += f".{nanos // 1_000_000:03d}"
            elif nanos % 1000 == 0:
                text += f".{nanos // 1000:06d}"
            else:
                text += f".{nanos:09d}"
    return text


def _iso_timestamp(value: int, per_second: int, with_zone: bool) -> str:
    per_day = 86_400 * per_second
    days, rest = divmod(value, per_day)
    text = f"{_iso_date(days)}T{_iso_time(rest * (1_000_000_000 // per_second))}"
    return text + "+00:00" if with_zone else text


_F32 = struct.Struct("<f")


def _round_trips_as_float32(text: str, f32: float) -> bool:
    try:
        return bool(_F32.unpack(_F32.pack(float(text)))[0] == f32)
    except OverflowError:  # rounds past the largest float
        return False


def _java_float_string(value: float, single: bool) -> str:
    """Java's Float/Double.toString: shortest digits, plain for 1e-3 <= |v| < 1e7,
    otherwise "d.dddE±n"."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    if single:
        try:
            f32 = _F32.unpack(_F32.pack(value))[0]
        except OverflowError:
            return "Infinity" if value > 0 else "-Infinity"
        for p in range(9):
            text = f"{f32:.{p}e}"
            if _round_trips_as_float32(text, f32):
                break
    else:
        text = repr(value)
    sign, digits, exponent = Decimal(text).normalize().as_tuple()
    assert isinstance(exponent, int)
    ds = "".join(map(str, digits))
    sci = exponent + len(ds) - 1  # value = d.ddd * 10**sci
    prefix = "-" if sign else ""
    if -3 <= sci < 7:
        if sci >= 0:
            whole, frac = ds[: sci + 1].ljust(sci + 1, "0"), ds[sci + 1 :]
        else:
            whole, frac = "0", "0" * (-sci - 1) + ds
        return f"{prefix}{whole}.{frac or '0'}"
    return f"{prefix}{ds[0]}.{ds[1:] or '0'}E{sci}"


def to_human_string(t: IcebergType, value: Any) -> str:
    """A value of type ``t`` as Iceberg-Java's Transform.toHumanString prints it:
    ISO dates and timestamps, base64 for binary, plain text otherwise."""
    if value is None:
        return "null"
    if isinstance(t, DateType):
        return human_day(value)
    if isinstance(t, TimeType):
        return _java_local_time(value * 1000)
    if isinstance(t, (TimestampType, TimestamptzType)):
        return _iso_timestamp(value, 1_000_000, isinstance(t, TimestamptzType))
    if isinstance(t, (TimestampNsType, TimestamptzNsType)):
        return _iso_timestamp(value, 1_000_000_000, isinstance(t, TimestamptzNsType))
    if isinstance(t, (FixedType, BinaryType)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(t, BooleanType):
        return "true" if value else "false"
    if isinstance(t, (FloatType, DoubleType)):
        return _java_float_string(float(value), isinstance(t, FloatType))
    if isinstance(t, DecimalType):
        # Decimal's str() follows the same rules as Java's BigDecimal.toString().
        return str(unscaled_to_decimal(decimal_to_unscaled(value, t.scale), t.scale))
    return str(value)
