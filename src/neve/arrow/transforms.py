"""Partition transforms over whole Arrow arrays, giving exactly what
:meth:`neve.spec.transforms.Transform.apply` gives value by value.

Bucketing of int, long, date, time and timestamp columns runs Murmur3 on the 8-byte
little-endian long as vectorized pyarrow.compute arithmetic on uint32 lanes, and so do
decimals of precision up to 18 (their minimal big-endian bytes); strings, binary, fixed,
uuid and wider decimals hash value by value with the mmh3 C function (measured faster
than a vectorized variable-length hash in pyarrow). numpy is not a dependency. Truncate
and the time transforms are pyarrow.compute kernels with floor semantics for negatives.

Result types: int32 for bucket/year/month/hour, date32 for day, the input's own type
for identity and truncate, and a null-typed array for void.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mmh3
import pyarrow as pa
import pyarrow.compute as pc

from neve.errors import ValidationError
from neve.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
    decimal_truncate_overflow,
    hash_value,
)
from neve.spec.types import (
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    TimestampNsType,
    TimestamptzNsType,
)
from neve.spec.values import decimal_to_unscaled

__all__ = ["result_arrow_type", "transform_array"]

_U32 = pa.uint32()
_NANO_TYPES = (TimestampNsType, TimestamptzNsType)
# Units per second of each Arrow time unit.
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def result_arrow_type(transform: Transform, arrow_type: pa.DataType) -> pa.DataType:
    """Arrow type of ``transform_array``'s result for an input of ``arrow_type``."""
    if isinstance(transform, VoidTransform):
        return pa.null()
    if isinstance(transform, DayTransform):
        return pa.date32()
    if isinstance(transform, (BucketTransform, YearTransform, MonthTransform, HourTransform)):
        return pa.int32()
    if pa.types.is_dictionary(arrow_type) and not isinstance(transform, IdentityTransform):
        return arrow_type.value_type
    return arrow_type


def transform_array(
    transform: Transform, source: IcebergType, arr: pa.Array | pa.ChunkedArray
) -> pa.Array:
    """Apply ``transform`` to every value of ``arr`` (a column of Iceberg type ``source``).

    Nulls stay null. Raises ValidationError when the spec does not allow the transform
    on ``source`` or the transform is unknown.
    """
    transform.transformer(source)  # validates the pair (and rejects unknown transforms)
    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks == 1:
            return transform_array(transform, source, arr.chunk(0))
        out_type = result_arrow_type(transform, arr.type)
        parts = [transform_array(transform, source, c) for c in arr.chunks]
        if not parts:
            return pa.array([], out_type)
        return pa.concat_arrays(parts)
    if isinstance(transform, VoidTransform):
        return pa.nulls(len(arr))
    if isinstance(transform, IdentityTransform):
        return arr
    if pa.types.is_dictionary(arr.type):
        values = transform_array(transform, source, arr.dictionary)
        return pc.take(values, arr.indices)
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), result_arrow_type(transform, arr.type))
    try:
        if isinstance(transform, BucketTransform):
            return _bucket(source, arr, transform.num_buckets)
        if isinstance(transform, TruncateTransform):
            return _truncate(source, arr, transform)
        if isinstance(transform, HourTransform):
            # Iceberg-Java casts hours to int, wrapping beyond 2**31 hours from 1970
            # (see neve.spec.transforms.wrapped_ranges): so does this cast
            hours = _floor_div(*_epoch_values(source, arr), 3600)
            return pc.cast(hours, pa.int32(), safe=False)
        if isinstance(transform, (YearTransform, MonthTransform, DayTransform)):
            return _date_part(transform, _days(source, arr))
    except (pa.ArrowInvalid, OverflowError) as exc:
        raise ValidationError(
            f"cannot apply {transform} to {arr.type} values of a {source} column: {exc}"
        ) from exc
    raise ValidationError(f"transform {transform} has no Arrow implementation")


# --------------------------------------------------------------------------- helpers


def _scalar(value: int, arrow_type: pa.DataType) -> pa.Scalar:
    return pa.scalar(value, arrow_type)


def _floor_div_by(values: pa.Array, divisor: int) -> pa.Array:
    """Floor division of an int64 array by a positive constant (pyarrow's divide
    truncates toward zero; pre-1970 values must round down)."""
    d = _scalar(divisor, pa.int64())
    quotient = pc.divide(values, d)
    adjust = pc.and_(pc.less(values, _scalar(0, pa.int64())), pc.not_equal(pc.modulo(values, d), 0))
    return pc.subtract(quotient, pc.cast(adjust, pa.int64()))


def _to_int32(values: pa.Array) -> pa.Array:
    return pc.cast(values, pa.int32())


def _as_int64(arr: pa.Array) -> pa.Array:
    t = arr.type
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pc.cast(arr.view(pa.int32()), pa.int64())
    if pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_date64(t):
        return arr.view(pa.int64())
    if pa.types.is_integer(t):
        return pc.cast(arr, pa.int64())
    raise ValidationError(f"expected integer or temporal Arrow values, got {arr.type}")


def _source_unit(source: IcebergType) -> str:
    if isinstance(source, DateType):
        return "D"
    return "ns" if isinstance(source, _NANO_TYPES) else "us"


def _arrow_unit(source: IcebergType, arr: pa.Array) -> str:
    """Unit of the integer values behind ``arr``: an Arrow temporal type carries its
    own; plain integers are in the source type's unit."""
    t = arr.type
    if pa.types.is_timestamp(t) or pa.types.is_time(t):
        return str(t.unit)
    if pa.types.is_date32(t):
        return "D"
    if pa.types.is_date64(t):
        return "ms"
    return _source_unit(source)


def _epoch_values(source: IcebergType, arr: pa.Array) -> tuple[pa.Array, int]:
    """Int64 values and how many of them make a second (days: 1/86400 -> see _days)."""
    unit = _arrow_unit(source, arr)
    values = _as_int64(arr)
    if unit == "D":
        return pc.multiply_checked(values, _scalar(86_400, pa.int64())), 1
    return values, _PER_SECOND[unit]


def _floor_div(values: pa.Array, per_second: int, seconds: int) -> pa.Array:
    return _floor_div_by(values, per_second * seconds)


def _days(source: IcebergType, arr: pa.Array) -> pa.Array:
    if _arrow_unit(source, arr) == "D":
        return _as_int64(arr)
    values, per_second = _epoch_values(source, arr)
    return _floor_div(values, per_second, 86_400)


def _micros(source: IcebergType, arr: pa.Array) -> pa.Array:
    """Values as the long that Appendix B hashes: days for dates, micros (rounded down)
    for times and timestamps, including the nanosecond types."""
    unit = _arrow_unit(source, arr)
    values = _as_int64(arr)
    if isinstance(source, (IntegerType, LongType)):
        return values
    if isinstance(source, DateType):
        if unit == "D":
            return values
        return _floor_div(values, _PER_SECOND[unit], 86_400)
    if unit == "D":
        return pc.multiply_checked(values, _scalar(86_400_000_000, pa.int64()))
    per_second = _PER_SECOND[unit]
    if per_second > 1_000_000:
        return _floor_div_by(values, per_second // 1_000_000)
    return pc.multiply_checked(values, _scalar(1_000_000 // per_second, pa.int64()))


def _date_part(transform: Transform, days: pa.Array) -> pa.Array:
    if isinstance(transform, DayTransform):
        return pc.cast(pc.cast(days, pa.int32()), pa.date32())
    year, month = _civil(pc.cast(days, pa.int64()))
    years = pc.subtract(year, _scalar(1970, pa.int64()))
    if isinstance(transform, YearTransform):
        return _to_int32(years)
    months = pc.add(
        pc.multiply(years, _scalar(12, pa.int64())), pc.subtract(month, _scalar(1, pa.int64()))
    )
    return _to_int32(months)


def _civil(days: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Proleptic Gregorian (year, month) of int64 day numbers since 1970-01-01, exact
    for every day a date or timestamp holds (pyarrow's year and month kernels go wrong
    beyond about 100 million days from 1970). The civil-from-days algorithm of
    :func:`neve.spec.values.days_to_civil`, on arrays: eras of 400 years (146097
    days) starting on March 1st of year 0."""
    i64 = pa.int64()

    def k(value: int) -> pa.Scalar:
        return _scalar(value, i64)

    def div(a: pa.Array, b: int) -> pa.Array:  # a >= 0: truncation is floor
        return pc.divide(a, k(b))

    z = pc.add(days, k(719_468))
    era = _floor_div_by(z, 146_097)
    doe = pc.subtract(z, pc.multiply(era, k(146_097)))  # day of era, 0..146096
    yoe = div(
        pc.add(pc.subtract(doe, div(doe, 1460)), pc.subtract(div(doe, 36_524), div(doe, 146_096))),
        365,
    )  # year of era, 0..399
    doy = pc.subtract(
        doe, pc.subtract(pc.add(pc.multiply(yoe, k(365)), div(yoe, 4)), div(yoe, 100))
    )  # day of the year that starts on March 1st
    mp = div(pc.add(pc.multiply(doy, k(5)), k(2)), 153)  # month from March, 0..11
    month = pc.if_else(pc.less(mp, k(10)), pc.add(mp, k(3)), pc.subtract(mp, k(9)))
    year = pc.add(pc.add(yoe, pc.multiply(era, k(400))), pc.cast(pc.less_equal(month, k(2)), i64))
    return year, month


def _with_nulls_of(arr: pa.Array, result: pa.Array) -> pa.Array:
    if arr.null_count == 0:
        return result
    return pc.if_else(pc.is_valid(arr), result, pa.scalar(None, result.type))


# --------------------------------------------------------------------------- bucket

_C1 = 0xCC9E2D51
_C2 = 0x1B873593


def _rotl(x: pa.Array, r: int) -> pa.Array:
    return pc.bit_wise_or(
        pc.shift_left(x, _scalar(r, _U32)), pc.shift_right(x, _scalar(32 - r, _U32))
    )


def _mix_block(h: pa.Array, k: pa.Array) -> pa.Array:
    k = pc.multiply(k, _scalar(_C1, _U32))
    k = _rotl(k, 15)
    k = pc.multiply(k, _scalar(_C2, _U32))
    h = pc.bit_wise_xor(h, k)
    h = _rotl(h, 13)
    return pc.add(pc.multiply(h, _scalar(5, _U32)), _scalar(0xE6546B64, _U32))


def _fmix(h: pa.Array) -> pa.Array:
    h = pc.bit_wise_xor(h, pc.shift_right(h, _scalar(16, _U32)))
    h = pc.multiply(h, _scalar(0x85EBCA6B, _U32))
    h = pc.bit_wise_xor(h, pc.shift_right(h, _scalar(13, _U32)))
    h = pc.multiply(h, _scalar(0xC2B2AE35, _U32))
    return pc.bit_wise_xor(h, pc.shift_right(h, _scalar(16, _U32)))


def _murmur3_longs(values: pa.Array) -> pa.Array:
    """Murmur3 x86_32 (seed 0) of each int64 as 8 little-endian bytes, as uint32:
    two 4-byte blocks (low word, then high word), no tail, length 8."""
    bits = pc.cast(values, pa.uint64(), safe=False)
    low = pc.cast(pc.bit_wise_and(bits, _scalar(0xFFFFFFFF, pa.uint64())), _U32)
    high = pc.cast(pc.shift_right(bits, _scalar(32, pa.uint64())), _U32)
    h = pa.repeat(_scalar(0, _U32), len(values))
    h = _mix_block(h, low)
    h = _mix_block(h, high)
    h = pc.bit_wise_xor(h, _scalar(8, _U32))
    return _fmix(h)


def _bucket_of_hashes(hashes: pa.Array, num_buckets: int) -> pa.Array:
    """(hash & Integer.MAX_VALUE) % N for unsigned or signed 32-bit hashes."""
    positive = pc.cast(
        pc.bit_wise_and(pc.cast(hashes, _U32, safe=False), _scalar(0x7FFFFFFF, _U32)), pa.int32()
    )
    return pc.modulo(positive, _scalar(num_buckets, pa.int32()))


def _per_value_hashes(values: list[Any], hasher: Callable[[Any], int]) -> pa.Array:
    return pa.array([0 if v is None else hasher(v) for v in values], pa.int32())


def _is_variable_bytes(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_string_view(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
    )


def _bucket(source: IcebergType, arr: pa.Array, num_buckets: int) -> pa.Array:
    t = arr.type
    if _is_variable_bytes(t):
        data = pc.fill_null(pc.cast(arr, pa.large_binary()), b"")
        hashes = pa.array(map(mmh3.hash, data.to_pylist()), pa.int32())
    elif pa.types.is_fixed_size_binary(t):
        hashes = _per_value_hashes(arr.to_pylist(), mmh3.hash)
    elif pa.types.is_decimal(t):
        hashes = _decimal_hashes(source, arr)
    else:
        hashes = _murmur3_longs(_micros(source, arr))
    return _with_nulls_of(arr, _bucket_of_hashes(hashes, num_buckets))


def _decimal_unscaled_int64(arr: pa.Array) -> pa.Array | None:
    """The unscaled values of a decimal array as int64, when its precision allows."""
    t = arr.type
    if t.precision > 18:
        return None
    if not pa.types.is_decimal128(t):
        arr = pc.cast(arr, pa.decimal128(t.precision, t.scale))
    as_integers = pa.Array.from_buffers(
        pa.decimal128(t.precision, 0), len(arr), arr.buffers(), offset=arr.offset
    )
    return pc.cast(as_integers, pa.int64())


def _decimal_hashes(source: IcebergType, arr: pa.Array) -> pa.Array:
    unscaled = _decimal_unscaled_int64(arr)
    if unscaled is not None:
        return _murmur3_min_bytes(unscaled)
    return _per_value_hashes(arr.to_pylist(), lambda v: hash_value(source, v))


def _murmur3_min_bytes(unscaled: pa.Array) -> pa.Array:
    """Murmur3 of each int64's minimal two's-complement big-endian bytes (1 to 8 of
    them), as Appendix B hashes decimals; every row takes the same steps, masked by its
    own byte count."""
    i64, u64 = pa.int64(), pa.uint64()
    magnitude = pc.if_else(pc.less(unscaled, _scalar(0, i64)), pc.bit_wise_not(unscaled), unscaled)
    length = pa.repeat(_scalar(1, i64), len(unscaled))
    for k in range(1, 8):  # one more byte for each sign-bit threshold passed
        passed = pc.greater_equal(magnitude, _scalar(1 << (8 * k - 1), i64))
        length = pc.add(length, pc.cast(passed, i64))
    bits = pc.cast(unscaled, u64, safe=False)
    zero = _scalar(0, _U32)
    byte: list[pa.Array] = []  # byte[j]: j-th byte of the big-endian form, 0 past the end
    for j in range(8):
        shift = pc.multiply(pc.subtract(length, _scalar(j + 1, i64)), _scalar(8, i64))
        present = pc.greater(length, _scalar(j, i64))
        safe_shift = pc.cast(pc.max_element_wise(shift, _scalar(0, i64)), u64)
        value = pc.bit_wise_and(pc.shift_right(bits, safe_shift), _scalar(0xFF, u64))
        byte.append(pc.if_else(present, pc.cast(value, _U32), zero))

    def word(first: int, count: int) -> pa.Array:
        out = byte[first]
        for i in range(1, count):
            out = pc.bit_wise_or(out, pc.shift_left(byte[first + i], _scalar(8 * i, _U32)))
        return out

    blocks = pc.divide(length, _scalar(4, i64))
    h = pa.repeat(zero, len(unscaled))
    h = pc.if_else(pc.greater_equal(blocks, _scalar(1, i64)), _mix_block(h, word(0, 4)), h)
    h = pc.if_else(pc.greater_equal(blocks, _scalar(2, i64)), _mix_block(h, word(4, 4)), h)
    tail = pc.if_else(pc.equal(blocks, _scalar(0, i64)), word(0, 3), word(4, 3))
    tail = pc.multiply(_rotl(pc.multiply(tail, _scalar(_C1, _U32)), 15), _scalar(_C2, _U32))
    has_tail = pc.not_equal(pc.bit_wise_and(length, _scalar(3, i64)), _scalar(0, i64))
    h = pc.if_else(has_tail, pc.bit_wise_xor(h, tail), h)
    h = pc.bit_wise_xor(h, pc.cast(length, _U32))
    return _fmix(h)


# --------------------------------------------------------------------------- truncate


def _truncate(source: IcebergType, arr: pa.Array, transform: TruncateTransform) -> pa.Array:
    width = transform.width
    t = arr.type
    if isinstance(source, (IntegerType, LongType)):
        return _truncate_integers(arr, width, 32 if isinstance(source, IntegerType) else 64)
    if isinstance(source, DecimalType):
        return _truncate_decimals(source, arr, transform)
    if pa.types.is_string_view(t):
        arr = pc.cast(arr, pa.large_string())
    elif pa.types.is_binary_view(t):
        arr = pc.cast(arr, pa.large_binary())
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        out = pc.utf8_slice_codeunits(arr, 0, width)
    else:
        out = pc.binary_slice(arr, 0, width)
    return out.cast(t) if out.type != t else out


def _truncate_integers(arr: pa.Array, width: int, bits: int) -> pa.Array:
    """``v - (((v % W) + W) % W)`` in Java's wrapping 32/64-bit arithmetic; pyarrow's
    divide truncates toward zero like Java, and its unchecked ops wrap like Java's."""
    work = pa.int32() if bits == 32 else pa.int64()
    v = pc.cast(arr, work)
    w = _scalar(width, work)

    def java_rem(x: pa.Array) -> pa.Array:
        return pc.subtract(x, pc.multiply(pc.divide(x, w), w))

    m = java_rem(pc.add(java_rem(v), w))
    out = pc.subtract(v, m)
    return out if arr.type == work else pc.cast(out, arr.type)


def _truncate_decimals(
    source: DecimalType, arr: pa.Array, transform: TruncateTransform
) -> pa.Array:
    t = arr.type
    smallest = -(10**t.precision - 1)
    unscaled = _decimal_unscaled_int64(arr)
    if unscaled is None:  # precision > 18: value by value, exact
        fn = transform.transformer(source)
        values = [fn(v) for v in arr.to_pylist()]
        if any(v is not None and decimal_to_unscaled(v, t.scale) < smallest for v in values):
            raise decimal_truncate_overflow(transform, source)
        return pa.array(values, t)
    w = _scalar(transform.width, pa.int64())
    # Unscaled floor-truncation cannot overflow int64 for precision <= 18.
    truncated = pc.subtract(unscaled, pc.modulo(unscaled, w))
    lowest = pc.min(truncated).as_py()
    if lowest is not None and lowest < smallest:
        raise decimal_truncate_overflow(transform, source)
    wide = pc.cast(truncated, pa.decimal128(38, 0))
    out = pa.Array.from_buffers(
        pa.decimal128(t.precision, t.scale), len(wide), wide.buffers(), offset=wide.offset
    )
    return out if out.type == t else pc.cast(out, t)
