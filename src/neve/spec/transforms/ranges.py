"""Where a transform's stored values differ from exact ones (overflow at the extremes), for projections that must never prune a matching row."""

from __future__ import annotations

from neve.spec.transforms.base import (
    INT_MAX,
    MICRO_TYPES,
    MICROS_PER_HOUR,
    Transform,
    Transformer,
    WrappedRange,
)
from neve.spec.transforms.temporal import HourTransform
from neve.spec.transforms.truncate import TruncateTransform, truncate_wraps
from neve.spec.types import (
    IcebergType,
    IntegerType,
    LongType,
)

__all__ = ["exact_transformer", "wrapped_ranges"]


def wrapped_ranges(transform: Transform, source: IcebergType) -> tuple[WrappedRange, ...]:
    """The source ranges where the stored partition value differs from the exact one
    (:func:`exact_transformer`) because Iceberg-Java's arithmetic wraps, which neve
    reproduces so that both write the same partition values: ``truncate`` of int
    and long values within a width of their limits (or any, for widths above a
    quarter of the range), and ``hour`` of microsecond timestamps more than 2**31
    hours (about 245,000 years) from 1970. Projections use them so that such rows
    are never pruned nor wrongly counted as matching."""
    if isinstance(transform, TruncateTransform) and isinstance(source, (IntegerType, LongType)):
        return truncate_wraps(32 if isinstance(source, IntegerType) else 64, transform.width)
    if isinstance(transform, HourTransform) and isinstance(source, MICRO_TYPES):
        first_above = (INT_MAX + 1) * MICROS_PER_HOUR
        last_below = -(INT_MAX + 1) * MICROS_PER_HOUR - 1
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
    if isinstance(transform, HourTransform) and isinstance(source, MICRO_TYPES):
        return lambda v: None if v is None else v // MICROS_PER_HOUR
    return transform.transformer(source)
