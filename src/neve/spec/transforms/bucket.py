"""The bucket transform and Iceberg's 32-bit Murmur3 hashing of single values (spec Appendix B)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mmh3

from neve.errors import ValidationError
from neve.spec.transforms.base import (
    INT_MAX,
    NANO_TYPES,
    TIMESTAMP_TYPES,
    Transform,
    Transformer,
    check_param,
)
from neve.spec.types import (
    INT,
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
    TimeType,
    UUIDType,
)
from neve.spec.values import (
    decimal_min_bytes,
    decimal_to_unscaled,
)

__all__ = ["BucketTransform", "hash_value"]


_LONG = struct.Struct("<q")
_DOUBLE_BITS = struct.Struct("<d")
_CANONICAL_NAN = struct.pack("<Q", 0x7FF8000000000000)


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
    if isinstance(t, NANO_TYPES):
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
    *TIMESTAMP_TYPES,
    StringType,
    UUIDType,
    FixedType,
    BinaryType,
)


@dataclass(frozen=True)
class BucketTransform(Transform):
    """Murmur3 hash of the value, mod ``num_buckets``."""

    num_buckets: int

    def __post_init__(self) -> None:
        check_param("num_buckets", self.num_buckets)

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
            return (hasher(value) & INT_MAX) % n

        return bucket
