"""The truncate transform, with Iceberg-Java's 32/64-bit overflow at the integer extremes (the wrapped ranges say where stored values differ from exact ones)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from neve.errors import ValidationError
from neve.spec.transforms.base import Transform, Transformer, WrappedRange, check_param
from neve.spec.types import (
    BinaryType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
)
from neve.spec.values import (
    decimal_to_unscaled,
    unscaled_to_decimal,
)

__all__ = [
    "TruncateTransform",
    "decimal_truncate_overflow",
    "java_truncate",
    "truncate_wraps",
    "wrap_int",
]


def _java_rem(a: int, b: int) -> int:
    """Java's ``%``: the remainder takes the sign of the dividend."""
    r = abs(a) % b
    return -r if a < 0 else r


def java_truncate(bits: int) -> Callable[[int], Callable[[Any], Any]]:
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


_TRUNCATE_INT = java_truncate(32)
_TRUNCATE_LONG = java_truncate(64)


def truncate_wraps(bits: int, width: int) -> tuple[WrappedRange, ...]:
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


def decimal_truncate_overflow(transform: Transform, source: DecimalType) -> ValidationError:
    """The error for a value that truncation rounds below the smallest value of its
    decimal type (truncate[50] of decimal(4,2) -99.99 is -100.00): no writer can
    store such a partition value, so both engines refuse the write."""
    return ValidationError(
        f"{transform} rounds a value below the smallest {source}; use a smaller width "
        "or a decimal type with more precision"
    )


def wrap_int(bits: int, value: int) -> int:
    half = 1 << (bits - 1)
    return ((value + half) & ((1 << bits) - 1)) - half


@dataclass(frozen=True)
class TruncateTransform(Transform):
    """Truncate to a multiple of ``width`` (numbers) or a prefix of ``width`` code points
    (strings) or bytes (binary)."""

    width: int

    def __post_init__(self) -> None:
        check_param("width", self.width)

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
