"""Partition transforms (spec "Partition Transforms", Appendix B hashing).

Transforms are frozen value objects, not bound to a source type: ``apply(source, value)``
and ``transformer(source)`` take the source type. Values use neve's representation (see
:mod:`neve.spec.values`). ``str(t)`` is the spec name ("bucket[16]") and
:func:`parse_transform` reads it back; :func:`parse_partition_term` reads user terms
such as ``"day(ts)"`` or ``"bucket(16, id)"``.

Where Iceberg-Java's behaviour is observable on disk (bucket numbers, truncation with
32/64-bit overflow, hours beyond 2**31 cast to int, partition directory names) it is
followed exactly; :func:`wrapped_ranges` and :func:`exact_transformer` describe where
the overflow makes stored values differ from the exact ones.
"""

from __future__ import annotations

import base64
import math
import re
import struct
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

import mmh3

from neve.errors import ValidationError
from neve.spec.types import (
    DATE,
    INT,
    STRING,
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
    PrimitiveType,
    StringType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UUIDType,
    VariantType,
)
from neve.spec.values import (
    days_to_civil,
    decimal_min_bytes,
    decimal_to_unscaled,
    unscaled_to_decimal,
)

__all__ = [
    "BucketTransform",
    "DayTransform",
    "HourTransform",
    "IdentityTransform",
    "MonthTransform",
    "Transform",
    "TruncateTransform",
    "UnknownTransform",
    "VoidTransform",
    "WrappedRange",
    "YearTransform",
    "exact_transformer",
    "hash_value",
    "parse_partition_term",
    "parse_transform",
    "to_human_string",
    "wrapped_ranges",
]

_MICROS_PER_HOUR = 3_600_000_000
_MICROS_PER_DAY = 86_400_000_000
_NANOS_PER_HOUR = _MICROS_PER_HOUR * 1000
_NANOS_PER_DAY = _MICROS_PER_DAY * 1000
_EPOCH_YEAR = 1970

_TIMESTAMP_TYPES = (TimestampType, TimestamptzType, TimestampNsType, TimestamptzNsType)
_NANO_TYPES = (TimestampNsType, TimestamptzNsType)
_MICRO_TYPES = (TimestampType, TimestamptzType)

Transformer = Callable[[Any], Any]


class Transform(ABC):
    """A partition (or sort) transform. Subclasses are frozen dataclasses."""

    __slots__ = ()

    @abstractmethod
    def __str__(self) -> str: ...

    @abstractmethod
    def can_transform(self, source: IcebergType) -> bool:
        """Whether the spec allows this transform on a column of type ``source``."""

    def result_type(self, source: IcebergType) -> IcebergType:
        """Type of the transformed values (the partition field's type)."""
        return source

    @abstractmethod
    def _make_transformer(self, source: IcebergType) -> Transformer: ...

    def transformer(self, source: IcebergType) -> Transformer:
        """A per-value function bound to ``source``; null in gives null out."""
        key = (self, source)
        fn = _TRANSFORMERS.get(key)
        if fn is None:
            if not self.can_transform(source):
                raise ValidationError(
                    f"transform {self} cannot be applied to a {source} column; "
                    f"choose a transform the spec allows for {source}"
                )
            fn = self._make_transformer(source)
            _TRANSFORMERS[key] = fn
        return fn

    def apply(self, source: IcebergType, value: Any) -> Any:
        """Transform one value of type ``source`` (None gives None)."""
        if value is None:
            return None
        return self.transformer(source)(value)

    @property
    def preserves_order(self) -> bool:
        """True when a < b implies apply(a) <= apply(b)."""
        return False

    def satisfies_order_of(self, other: Transform) -> bool:
        """Whether data ordered by this transform is also ordered by ``other``."""
        return self == other

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        """The value as Iceberg-Java prints it in partition paths ("null" for None)."""
        return to_human_string(result_type, value)

    def dedup_name(self) -> str:
        """Name used to find redundant partition fields on one column (time transforms
        share "time": day(ts) and hour(ts) on one column are redundant)."""
        return str(self)


_TRANSFORMERS: dict[tuple[Transform, IcebergType], Transformer] = {}


# --------------------------------------------------------------------------- hashing

_LONG = struct.Struct("<q")
_DOUBLE_BITS = struct.Struct("<d")
_CANONICAL_NAN = struct.pack("<Q", 0x7FF8000000000000)
_INT_MAX = 0x7FFFFFFF


def _murmur3(data: bytes) -> int:
    return int(mmh3.hash(data, 0, True))


def _hash_long(value: int) -> int:
    try:
        return int(mmh3.hash(_LONG.pack(value), 0, True))
    except struct.error as exc:
        raise ValidationError(f"value {value!r} is not a 64-bit integer") from exc


def _hash_nanos(value: int) -> int:
    # timestamp_ns hashes its microseconds, rounded down (Appendix B, v3).
    return _hash_long(value // 1000)


def _hash_double(value: float) -> int:
    v = float(value)
    if v != v:
        return _murmur3(_CANONICAL_NAN)
    return _murmur3(_DOUBLE_BITS.pack(v + 0.0))  # + 0.0 turns -0.0 into 0.0


def _hash_str(value: str) -> int:
    try:
        return _murmur3(value.encode("utf-8"))
    except (AttributeError, UnicodeEncodeError) as exc:
        raise ValidationError(f"expected a valid Unicode str, got {value!r}") from exc


def _hash_bytes(value: bytes) -> int:
    return _murmur3(bytes(value))


def _hasher(t: IcebergType) -> Callable[[Any], int]:
    """Appendix B hash for values of type ``t`` (also boolean, float and double,
    which the spec defines but does not allow for bucketing)."""
    if isinstance(t, (IntegerType, LongType, DateType, TimeType, TimestampType, TimestamptzType)):
        return _hash_long
    if isinstance(t, _NANO_TYPES):
        return _hash_nanos
    if isinstance(t, DecimalType):
        scale = t.scale
        return lambda v: _murmur3(decimal_min_bytes(decimal_to_unscaled(v, scale)))
    if isinstance(t, StringType):
        return _hash_str
    if isinstance(t, UUIDType):
        return lambda v: _murmur3(v.bytes)
    if isinstance(t, (FixedType, BinaryType)):
        return _hash_bytes
    if isinstance(t, BooleanType):
        return lambda v: _hash_long(1 if v else 0)
    if isinstance(t, (FloatType, DoubleType)):
        return _hash_double
    raise ValidationError(f"values of type {t} cannot be hashed")


def hash_value(t: IcebergType, value: Any) -> int:
    """The signed 32-bit Murmur3 hash of a value, as Appendix B defines it."""
    return _hasher(t)(value)


# --------------------------------------------------------------------------- transforms

_BUCKET_TYPES = (
    IntegerType,
    LongType,
    DecimalType,
    DateType,
    TimeType,
    *_TIMESTAMP_TYPES,
    StringType,
    UUIDType,
    FixedType,
    BinaryType,
)


@dataclass(frozen=True)
class IdentityTransform(Transform):
    """The source value, unmodified."""

    def __str__(self) -> str:
        return "identity"

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, PrimitiveType) and not isinstance(source, VariantType)

    def _make_transformer(self, source: IcebergType) -> Transformer:
        return _identity

    @property
    def preserves_order(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform) -> bool:
        # Ordering by the value orders by anything that preserves order.
        return other.preserves_order


def _identity(value: Any) -> Any:
    return value


def _check_param(kind: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= _INT_MAX:
        raise ValidationError(
            f"{kind} must be a positive 32-bit integer, got {value!r}; e.g. {kind}=16"
        )


@dataclass(frozen=True)
class BucketTransform(Transform):
    """Murmur3 hash of the value, mod ``num_buckets``."""

    num_buckets: int

    def __post_init__(self) -> None:
        _check_param("num_buckets", self.num_buckets)

    def __str__(self) -> str:
        return f"bucket[{self.num_buckets}]"

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, _BUCKET_TYPES)

    def result_type(self, source: IcebergType) -> IcebergType:
        return INT

    def _make_transformer(self, source: IcebergType) -> Transformer:
        hasher = _hasher(source)
        n = self.num_buckets

        def bucket(value: Any) -> Any:
            if value is None:
                return None
            return (hasher(value) & _INT_MAX) % n

        return bucket


def _java_rem(a: int, b: int) -> int:
    """Java's ``%``: the remainder takes the sign of the dividend."""
    r = abs(a) % b
    return -r if a < 0 else r


def _java_truncate(bits: int) -> Callable[[int], Callable[[Any], Any]]:
    """``v - (((v % W) + W) % W)`` evaluated with Java's wrapping int (long) arithmetic,
    so values near the type's limits partition exactly as Iceberg-Java does."""
    half = 1 << (bits - 1)
    mask = (1 << bits) - 1

    def wrap(x: int) -> int:
        return ((x + half) & mask) - half

    def make(width: int) -> Callable[[Any], Any]:
        def truncate(value: Any) -> Any:
            if value is None:
                return None
            m = _java_rem(wrap(_java_rem(value, width) + width), width)
            return wrap(value - m)

        return truncate

    return make


_TRUNCATE_INT = _java_truncate(32)
_TRUNCATE_LONG = _java_truncate(64)


@dataclass(frozen=True)
class WrappedRange:
    """Source values ``lo..hi`` (inclusive) whose stored partition value is their exact
    transform result plus ``offset``: where Iceberg-Java's int or long arithmetic
    wraps, neve writes the same wrapped value (see :func:`wrapped_ranges`)."""

    lo: int
    hi: int
    offset: int


def _truncate_wraps(bits: int, width: int) -> tuple[WrappedRange, ...]:
    """Where ``v - (((v % W) + W) % W)`` in ``bits``-bit Java arithmetic differs from
    the exact floor truncation ``v - v mod W``.

    Two steps can wrap. ``v - m`` (m = v mod W once the sum has not wrapped) falls
    below the minimum for the values of the lowest, partial multiple of W: those
    store the multiple plus 2**bits. ``(v % W) + W`` exceeds the maximum only when
    W > 2**(bits-2), for 0 <= v < W with v > MAX - W; then the rest taken again
    either stays below -W (the value stored is 2**bits - 2W) or not (-W is stored).
    Exact and wrapped values are compared for every value of 8 and 10-bit integers
    in the tests.
    """
    span = 1 << bits
    lo_v, hi_v = -(span >> 1), (span >> 1) - 1
    out: list[WrappedRange] = []
    lowest = lo_v - lo_v % width  # the exact truncation of the minimum
    if lowest < lo_v:
        out.append(WrappedRange(lo_v, lowest + width - 1, span))
    first, last = hi_v - width + 1, width - 1  # (v % W) + W wraps for these
    if first <= last:
        split = span - 2 * width  # v <= split: the rest stays below -W
        if first <= min(last, split):
            out.append(WrappedRange(first, min(last, split), span - 2 * width))
        if max(first, split + 1) <= last:
            out.append(WrappedRange(max(first, split + 1), last, -width))
    return tuple(out)


def _wrap(bits: int, value: int) -> int:
    half = 1 << (bits - 1)
    return ((value + half) & ((1 << bits) - 1)) - half


@dataclass(frozen=True)
class TruncateTransform(Transform):
    """Truncate to a multiple of ``width`` (numbers) or a prefix of ``width`` code points
    (strings) or bytes (binary)."""

    width: int

    def __post_init__(self) -> None:
        _check_param("width", self.width)

    def __str__(self) -> str:
        return f"truncate[{self.width}]"

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, (IntegerType, LongType, DecimalType, StringType, BinaryType))

    def _make_transformer(self, source: IcebergType) -> Transformer:
        w = self.width
        if isinstance(source, IntegerType):
            return _TRUNCATE_INT(w)
        if isinstance(source, LongType):
            return _TRUNCATE_LONG(w)
        if isinstance(source, DecimalType):
            scale = source.scale

            def truncate_decimal(value: Any) -> Any:
                if value is None:
                    return None
                unscaled = decimal_to_unscaled(value, scale)
                return unscaled_to_decimal(unscaled - unscaled % w, scale)

            return truncate_decimal
        if isinstance(source, StringType):
            return lambda v: None if v is None else v[:w]
        return lambda v: None if v is None else bytes(v[:w])

    @property
    def preserves_order(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform) -> bool:
        # As Iceberg-Java: a wider truncation orders by any narrower one.
        return isinstance(other, TruncateTransform) and other.width <= self.width


def _to_days(source: IcebergType) -> Callable[[int], int]:
    if isinstance(source, DateType):
        return _identity
    per_day = _NANOS_PER_DAY if isinstance(source, _NANO_TYPES) else _MICROS_PER_DAY
    return lambda v: v // per_day


class _TimeTransform(Transform):
    """year, month, day and hour: whole units since 1970-01-01, rounded down (floor)
    so that pre-1970 values fall in the unit they belong to."""

    __slots__ = ()
    _rank: ClassVar[int]  # hour 0 < day 1 < month 2 < year 3
    _name: ClassVar[str]

    def __str__(self) -> str:
        return self._name

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, (DateType, *_TIMESTAMP_TYPES))

    def result_type(self, source: IcebergType) -> IcebergType:
        return INT

    def _make_transformer(self, source: IcebergType) -> Transformer:
        to_days = _to_days(source)
        unit = self._unit

        def transform(value: Any) -> Any:
            if value is None:
                return None
            return unit(to_days(value))

        return transform

    @staticmethod
    def _unit(days: int) -> int:
        raise NotImplementedError

    @property
    def preserves_order(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform) -> bool:
        # A finer unit orders by any coarser one: hour satisfies day, month and year.
        return isinstance(other, _TimeTransform) and self._rank <= other._rank

    def dedup_name(self) -> str:
        return "time"


def _same_day(days: int) -> int:
    return days


def _years(days: int) -> int:
    return days_to_civil(days)[0] - _EPOCH_YEAR


def _months(days: int) -> int:
    year, month, _ = days_to_civil(days)
    return (year - _EPOCH_YEAR) * 12 + month - 1


@dataclass(frozen=True)
class YearTransform(_TimeTransform):
    """Years since 1970."""

    _rank: ClassVar[int] = 3
    _name: ClassVar[str] = "year"
    _unit = staticmethod(_years)

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null" if value is None else f"{_EPOCH_YEAR + value:04d}"


@dataclass(frozen=True)
class MonthTransform(_TimeTransform):
    """Months since 1970-01."""

    _rank: ClassVar[int] = 2
    _name: ClassVar[str] = "month"
    _unit = staticmethod(_months)

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        if value is None:
            return "null"
        return f"{_EPOCH_YEAR + value // 12:04d}-{value % 12 + 1:02d}"


@dataclass(frozen=True)
class DayTransform(_TimeTransform):
    """Days since 1970-01-01; the result type is ``date`` (v3 spec; readers accept int)."""

    _rank: ClassVar[int] = 1
    _name: ClassVar[str] = "day"
    _unit = staticmethod(_same_day)

    def result_type(self, source: IcebergType) -> IcebergType:
        return DATE

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null" if value is None else _human_day(value)


@dataclass(frozen=True)
class HourTransform(_TimeTransform):
    """Hours since 1970-01-01 00:00 (timestamps only)."""

    _rank: ClassVar[int] = 0
    _name: ClassVar[str] = "hour"

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, _TIMESTAMP_TYPES)

    def _make_transformer(self, source: IcebergType) -> Transformer:
        if isinstance(source, _NANO_TYPES):  # at most 2.6 million hours: no overflow
            return lambda v: None if v is None else v // _NANOS_PER_HOUR
        # Iceberg-Java casts the hours of a microsecond timestamp to int: beyond 2**31
        # hours from 1970 the value wraps, and neve writes the same (wrapped_ranges)
        return lambda v: None if v is None else _wrap(32, v // _MICROS_PER_HOUR)

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        if value is None:
            return "null"
        days, hour = divmod(value, 24)
        return f"{_human_day(days)}-{hour:02d}"


def wrapped_ranges(transform: Transform, source: IcebergType) -> tuple[WrappedRange, ...]:
    """The source ranges where the stored partition value differs from the exact one
    (:func:`exact_transformer`) because Iceberg-Java's arithmetic wraps, which neve
    reproduces so that both write the same partition values: ``truncate`` of int
    and long values within a width of their limits (or any, for widths above a
    quarter of the range), and ``hour`` of microsecond timestamps more than 2**31
    hours (about 245,000 years) from 1970. Projections use them so that such rows
    are never pruned nor wrongly counted as matching."""
    if isinstance(transform, TruncateTransform) and isinstance(source, (IntegerType, LongType)):
        return _truncate_wraps(32 if isinstance(source, IntegerType) else 64, transform.width)
    if isinstance(transform, HourTransform) and isinstance(source, _MICRO_TYPES):
        first_above = (_INT_MAX + 1) * _MICROS_PER_HOUR
        last_below = -(_INT_MAX + 1) * _MICROS_PER_HOUR - 1
        return (
            WrappedRange(-(1 << 63), last_below, 1 << 32),
            WrappedRange(first_above, (1 << 63) - 1, -(1 << 32)),
        )
    return ()


def exact_transformer(transform: Transform, source: IcebergType) -> Transformer:
    """The transform computed without wrapping: equal to ``transform.transformer(source)``
    except in the :func:`wrapped_ranges`, where its results may lie beyond the
    partition field's type. Projections reason with it."""
    if isinstance(transform, TruncateTransform) and isinstance(source, (IntegerType, LongType)):
        w = transform.width
        return lambda v: None if v is None else v - v % w
    if isinstance(transform, HourTransform) and isinstance(source, _MICRO_TYPES):
        return lambda v: None if v is None else v // _MICROS_PER_HOUR
    return transform.transformer(source)


@dataclass(frozen=True)
class VoidTransform(Transform):
    """Always null: keeps a dropped partition field in place (v1 tables)."""

    def __str__(self) -> str:
        return "void"

    def can_transform(self, source: IcebergType) -> bool:
        return True

    def _make_transformer(self, source: IcebergType) -> Transformer:
        return _void

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null"


def _void(value: Any) -> None:
    return None


@dataclass(frozen=True)
class UnknownTransform(Transform):
    """A transform neve does not know, kept so such tables can still be read."""

    text: str

    def __str__(self) -> str:
        return self.text

    def can_transform(self, source: IcebergType) -> bool:
        return True

    def result_type(self, source: IcebergType) -> IcebergType:
        return STRING  # the real result type is not known (as Iceberg-Java)

    def _make_transformer(self, source: IcebergType) -> Transformer:
        raise ValidationError(
            f"cannot apply unknown transform {self.text!r}; neve can read this table "
            "but cannot write data to a partition spec that uses it"
        )

    def apply(self, source: IcebergType, value: Any) -> Any:
        return self.transformer(source)(value)


# --------------------------------------------------------------------------- human strings


def _human_day(days: int) -> str:
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
        return _human_day(value)
    if isinstance(t, TimeType):
        return _java_local_time(value * 1000)
    if isinstance(t, (TimestampType, TimestamptzType)):
        return _iso_timestamp(value, 1_000_000, isinstance(t, TimestamptzType))
    if isinstance(t, _NANO_TYPES):
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


# --------------------------------------------------------------------------- parsing

_SIMPLE: dict[str, Transform] = {
    "identity": IdentityTransform(),
    "year": YearTransform(),
    "month": MonthTransform(),
    "day": DayTransform(),
    "hour": HourTransform(),
    "void": VoidTransform(),
}
_PARAMETERIZED = re.compile(r"^(bucket|truncate)\s*\[\s*(\d+)\s*\]$")


def parse_transform(text: str) -> Transform:
    """Read a transform's spec name ("identity", "bucket[16]", "day", ...). A name
    neve does not know gives an :class:`UnknownTransform`, so the table stays readable."""
    key = text.strip().lower()
    simple = _SIMPLE.get(key)
    if simple is not None:
        return simple
    m = _PARAMETERIZED.match(key)
    if m is not None:
        n = int(m.group(2))
        return BucketTransform(n) if m.group(1) == "bucket" else TruncateTransform(n)
    return UnknownTransform(text)


_TERM_FUNCTIONS: dict[str, Transform] = {
    "identity": IdentityTransform(),
    "year": YearTransform(),
    "years": YearTransform(),
    "month": MonthTransform(),
    "months": MonthTransform(),
    "day": DayTransform(),
    "days": DayTransform(),
    "date": DayTransform(),
    "hour": HourTransform(),
    "hours": HourTransform(),
    "date_hour": HourTransform(),
    "void": VoidTransform(),
}
_CALL = re.compile(r"^([A-Za-z_]\w*)\s*\((.*)\)$", re.DOTALL)
_TERM_HELP = (
    "use a column name or one of year(col), month(col), day(col), hour(col), "
    "bucket(N, col), truncate(W, col), identity(col), void(col)"
)


def _column_name(text: str, term: str) -> str:
    name = text.strip()
    if len(name) >= 2 and name[0] == name[-1] == "`":
        name = name[1:-1].replace("``", "`")
    elif "`" in name or "(" in name or ")" in name or "," in name:
        raise ValidationError(f"invalid column name {text.strip()!r} in {term!r}; {_TERM_HELP}")
    if not name:
        raise ValidationError(f"missing column name in partition term {term!r}; {_TERM_HELP}")
    return name


def _split_args(args: str) -> list[str]:
    """Split on commas outside backquotes."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in args:
        if ch == "`":
            quoted = not quoted
        if ch == "," and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def parse_partition_term(text: str) -> tuple[Transform, str]:
    """Read a partition term as users write it: ``"category"``, ``"day(ts)"``,
    ``"bucket(16, id)"``, ``"truncate(4, name)"`` (the number may also come second, as
    in Spark's ``truncate(name, 4)``). Returns the transform and the column name."""
    term = text.strip()
    m = _CALL.match(term)
    if m is None:
        return IdentityTransform(), _column_name(term, text)
    func = m.group(1).lower()
    args = _split_args(m.group(2))
    if func in ("bucket", "truncate"):
        if len(args) != 2:
            raise ValidationError(
                f"{func} takes a number and a column, got {text.strip()!r}; "
                f"write e.g. {func}(16, col)"
            )
        first, second = (a.strip() for a in args)
        if first.isdigit():
            number, column = int(first), second
        elif second.isdigit():
            number, column = int(second), first
        else:
            raise ValidationError(
                f"{func} needs a positive whole number in {text.strip()!r}; "
                f"write e.g. {func}(16, col)"
            )
        transform: Transform = (
            BucketTransform(number) if func == "bucket" else TruncateTransform(number)
        )
        return transform, _column_name(column, text)
    found = _TERM_FUNCTIONS.get(func)
    if found is None:
        raise ValidationError(
            f"unknown partition transform {func!r} in {text.strip()!r}; {_TERM_HELP}"
        )
    if len(args) != 1:
        raise ValidationError(f"{func} takes exactly one column, got {text.strip()!r}")
    return found, _column_name(args[0], text)
