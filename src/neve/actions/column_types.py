"""What a schema change may do with a column's type (spec "Schema Evolution").

A type is promoted only along the spec's widenings, and the types that need format
version 3 are refused in older tables, also deep inside a nested type.
"""

from __future__ import annotations

from neve.errors import SchemaError
from neve.spec.types import (
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedType,
    PrimitiveType,
    TimestampNsType,
    TimestamptzNsType,
    UnknownType,
    VariantType,
)

__all__ = ["check_format_types", "is_promotion_allowed"]

_V3_TYPES = (TimestampNsType, TimestamptzNsType, UnknownType, VariantType)


def is_promotion_allowed(old: IcebergType, new: IcebergType, format_version: int = 2) -> bool:
    """True when a column of type ``old`` may be changed to ``new`` (spec "Schema
    Evolution": int -> long, float -> double, decimal(P,S) -> decimal(P2,S) with P2 > P;
    in v3 also ``unknown`` -> any primitive type)."""
    if old == new:
        return True
    if isinstance(old, IntegerType):
        return isinstance(new, LongType)
    if isinstance(old, FloatType):
        return isinstance(new, DoubleType)
    if isinstance(old, DecimalType):
        return (
            isinstance(new, DecimalType)
            and new.scale == old.scale
            and new.precision > old.precision
        )
    if isinstance(old, UnknownType):
        return format_version >= 3 and isinstance(new, PrimitiveType)
    return False


def check_format_types(t: IcebergType, format_version: int, where: str) -> None:
    """Refuse a type that needs format version 3 (``where`` names the column) in an
    older table, anywhere inside ``t``."""
    if format_version >= 3:
        return
    if isinstance(t, _V3_TYPES):
        raise SchemaError(
            f"type {t} of {where!r} needs format version 3; upgrade the table first "
            "(set format-version to 3) or use another type"
        )
    if isinstance(t, NestedType):
        for c in t.children:
            check_format_types(c.field_type, format_version, where)
