"""Iceberg partition transforms as Spark column expressions, equal to
:mod:`neve.spec.transforms` value for value.

identity, void, truncate and the time transforms are plain JVM expressions (integer
arithmetic with floor semantics, so pre-1970 values land in the unit they belong to;
Java's wrapping for truncation at the limits of int and long, as Iceberg-Java). bucket
runs neve's vectorized Arrow transform in an Arrow UDF: Spark's ``hash()`` is Murmur3
with seed 42 and a non-standard tail for strings and binary, so it cannot give Iceberg's
bucket numbers.

Values follow neve's representation: year, month, day (as days since 1970-01-01, an
int) and hour are ints, truncate keeps the source type.

:func:`partition_key` turns a transform result into a value that is safe as a Hive
partition directory name (Spark would otherwise escape characters, turn empty strings
into nulls and print values in its own way), and :func:`decode_partition_key` reads
such a directory value back exactly.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from neve.errors import ValidationError
from neve.spark.schema import to_spark_type
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
)
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
    TimestampType,
    TimestamptzType,
)
from neve.spec.values import decimal_to_unscaled, unscaled_to_decimal

__all__ = [
    "HIVE_NULL",
    "INVALID_MARK",
    "bucket_column",
    "decode_partition_key",
    "partition_key",
    "transform_column",
]

#: Marks the message of an error a Spark job raises for a value it refuses; the
#: driver turns it back into neve's ValidationError (neve.spark.job).
INVALID_MARK = "NEVE_INVALID_VALUE"

#: The directory value Spark writes for a null partition value.
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

_MICROS_PER_DAY = 86_400_000_000
_MICROS_PER_HOUR = 3_600_000_000
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN = -(2**63)
_EPOCH_NTZ = "TIMESTAMP_NTZ'1970-01-01 00:00:00'"


def _lit_long(value: int) -> Column:
    return F.lit(value).cast(T.LongType())


def _floor_div(values: Column, divisor: int) -> Column:
    """Exact floor division of a long column by a positive constant (Spark's ``div``
    truncates toward zero: one less where the remainder is negative), without
    arithmetic that could overflow near the limits of long."""
    d = _lit_long(divisor)
    quotient = F.call_function("div", values, d)
    return quotient - F.when(values % d < _lit_long(0), _lit_long(1)).otherwise(_lit_long(0))


def _micros(source: IcebergType, col: Column) -> Column:
    if isinstance(source, TimestamptzType):
        return F.unix_micros(col)
    # timestamp without zone (TIMESTAMP_NTZ): a difference needs no time zone
    return F.timestamp_diff("MICROSECOND", F.expr(_EPOCH_NTZ), col)


def _days(source: IcebergType, col: Column) -> Column:
    if isinstance(source, DateType):
        return F.unix_date(col)
    if isinstance(source, TimestampType):
        return F.unix_date(col.cast(T.DateType()))  # local date of a zone-less timestamp
    return _floor_div(_micros(source, col), _MICROS_PER_DAY)


def _truncate_integer(col: Column, width: int, is_long: bool) -> Column:
    """``v - (((v % W) + W) % W)`` with Java's wrapping int (long) arithmetic, as
    Iceberg-Java computes it, from operations that cannot overflow in Spark (ANSI)."""
    v = col.cast(T.LongType())
    w = _lit_long(width)
    s = (v % w) + w  # Spark's % is Java's: the sign of the dividend; |v % w| < w < 2^31
    if not is_long:
        s = F.when(s > _lit_long(_INT_MAX), s - _lit_long(2**32)).otherwise(s)  # int wrap
        diff = v - (s % w)
        wrapped = (
            F.when(diff > _lit_long(_INT_MAX), diff - _lit_long(2**32))
            .when(diff < _lit_long(_INT_MIN), diff + _lit_long(2**32))
            .otherwise(diff)
        )
        return wrapped.cast(T.IntegerType())
    exact = v.cast(T.DecimalType(20, 0)) - (s % w)  # may fall below Long.MIN_VALUE
    wrapped = F.when(exact < F.lit(Decimal(_LONG_MIN)), exact + F.lit(Decimal(2**64)))
    return wrapped.otherwise(exact).cast(T.LongType())


def _truncate(transform: TruncateTransform, source: IcebergType, col: Column) -> Column:
    width = transform.width
    if isinstance(source, (IntegerType, LongType)):
        return _truncate_integer(col, width, isinstance(source, LongType))
    if isinstance(source, (StringType, BinaryType)):
        # Spark's substring counts code points of strings and bytes of binary
        return F.substring(col, 1, width)
    if isinstance(source, DecimalType):
        return _truncate_decimal(transform, source, col)
    raise ValidationError(f"truncate cannot be applied to a {source} column")


def _truncate_decimal(transform: TruncateTransform, source: DecimalType, col: Column) -> Column:
    p, s = source.precision, source.scale
    spark_type = T.DecimalType(p, s)
    if p >= 38:
        # Spark types ``col - rem`` at decimal(38) as decimal(38, s - 1) and rounds the
        # last digit away (allowPrecisionLoss): computed exactly in Arrow instead.
        return _arrow_udf(transform, source, spark_type)(col)
    width = transform.width
    rem = F.pmod(col, F.lit(unscaled_to_decimal(width, s)))
    # Rounding down near the type's minimum leaves the precision (truncate[5] of
    # decimal(3,2) -9.99 is -10.00, as in Java); no writer can store that, so the row is
    # refused as the pyarrow engine refuses it. Exactly the values below the smallest
    # multiple of the width that the type holds round below its minimum.
    lowest = -((10**p - 1) // width) * width
    below = col < F.lit(unscaled_to_decimal(lowest, s)).cast(spark_type)
    refuse = F.raise_error(F.lit(f"{INVALID_MARK}: {decimal_truncate_overflow(transform, source)}"))
    # decimal(p) - decimal(<= p, s) is typed decimal(p + 1, s) here: exact
    return F.when(below, refuse).otherwise((col - rem).cast(spark_type))


def _arrow_udf(
    transform: Transform, source: IcebergType, result: T.DataType
) -> Callable[[Column], Column]:
    arrow_type = pa.int32() if isinstance(result, T.IntegerType) else None

    def apply(arr: pa.Array) -> pa.Array:
        # runs in a Spark Python worker: imported there
        from neve.arrow.transforms import transform_array

        try:
            out = transform_array(transform, source, arr)
        except ValidationError as exc:  # the driver turns it back (neve.spark.job)
            raise ValidationError(f"{INVALID_MARK}: {exc}") from None
        return out if arrow_type is None else out.cast(arrow_type)

    udf: Callable[[Column], Column] = F.arrow_udf(apply, result)  # type: ignore[attr-defined]
    return udf


def bucket_column(transform: BucketTransform, source: IcebergType, col: Column) -> Column:
    """Iceberg's bucket number (Murmur3 seed 0 over the spec's bytes, then
    ``(hash & Integer.MAX_VALUE) % N``) of each value, computed by an Arrow UDF."""
    return _arrow_udf(transform, source, T.IntegerType())(col)


def transform_column(transform: Transform, source: IcebergType, col: Column) -> Column:
    """``transform`` applied to ``col`` (a column of Iceberg type ``source``), as a
    Spark column of neve values: ints for bucket, year, month, day and hour; the source
    type for identity and truncate; a typed null for void."""
    transform.transformer(source)  # validates the pair, as the spec allows it
    if isinstance(transform, IdentityTransform):
        return col
    if isinstance(transform, VoidTransform):
        return F.lit(None).cast(to_spark_type(source))
    if isinstance(transform, BucketTransform):
        return bucket_column(transform, source, col)
    if isinstance(transform, TruncateTransform):
        return _truncate(transform, source, col)
    if isinstance(transform, HourTransform):
        # Iceberg-Java casts the hours to int, wrapping beyond 2**31 hours from 1970
        # (neve.spec.transforms.wrapped_ranges); Spark's ANSI cast would fail instead
        hours = _floor_div(_micros(source, col), _MICROS_PER_HOUR)
        wrapped = F.pmod(hours + _lit_long(2**31), _lit_long(2**32)) - _lit_long(2**31)
        return wrapped.cast(T.IntegerType())
    if isinstance(transform, (YearTransform, MonthTransform, DayTransform)):
        days = _days(source, col)
        if isinstance(transform, DayTransform):
            return days.cast(T.IntegerType())
        date = F.date_from_unix_date(days)
        years = F.year(date) - F.lit(1970)
        if isinstance(transform, YearTransform):
            return years.cast(T.IntegerType())
        return (years * F.lit(12) + F.month(date) - F.lit(1)).cast(T.IntegerType())
    raise ValidationError(f"transform {transform} has no Spark implementation")


# -- directory-safe partition keys ----------------------------------------------------


def partition_key(transform: Transform, source: IcebergType, col: Column) -> Column:
    """A column whose values are safe, exact directory names for ``transform``'s
    result: integers as themselves, strings and binary as ``x`` + upper-case hex of
    their bytes, decimals, booleans and floats as text; nulls stay null."""
    value = transform_column(transform, source, col)
    result = transform.result_type(source)
    if isinstance(transform, IdentityTransform):
        if isinstance(source, DateType):
            return F.unix_date(col)
        if isinstance(source, (TimestampType, TimestamptzType)):
            return _micros(source, col)
    if isinstance(result, (IntegerType, LongType, DateType)):
        return value
    if isinstance(result, (StringType, BinaryType, FixedType)):
        return F.concat(F.lit("x"), F.hex(value))
    if isinstance(result, (DecimalType, BooleanType, FloatType, DoubleType)):
        return value.cast(T.StringType())
    if isinstance(result, (TimestampType, TimestamptzType)):
        return _micros(result, value)
    raise ValidationError(f"partition values of type {result} cannot be written with Spark")


def decode_partition_key(result: IcebergType, text: str) -> Any:
    """The neve value of a directory value made by :func:`partition_key` for a
    partition field of type ``result``."""
    if text == HIVE_NULL:
        return None
    if isinstance(result, (IntegerType, LongType, DateType, TimestampType, TimestamptzType)):
        return int(text)
    if isinstance(result, StringType):
        return bytes.fromhex(text[1:]).decode("utf-8")
    if isinstance(result, (BinaryType, FixedType)):
        return bytes.fromhex(text[1:])
    if isinstance(result, DecimalType):
        # exactly: Decimal.scaleb would round to the context's 28 digits
        return unscaled_to_decimal(decimal_to_unscaled(Decimal(text), result.scale), result.scale)
    if isinstance(result, BooleanType):
        return text == "true"
    if isinstance(result, FloatType):
        return struct.unpack("<f", struct.pack("<f", float(text)))[0]
    if isinstance(result, DoubleType):
        return float(text)
    raise ValidationError(f"cannot read a partition value of type {result}")
