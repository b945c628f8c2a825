"""Iceberg data types (spec section "Schemas and Data Types").

Primitive types are frozen value objects; the parameterless ones are also exposed as
module-level singletons (``LONG``, ``STRING`` ...). ``str(t)`` gives the spec's type
string ("long", "decimal(9,2)", "fixed[16]"), and :func:`parse_type` reads it back.
Nested types carry the field ids of their children.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from neve.errors import SchemaError

__all__ = [
    "BINARY",
    "BOOLEAN",
    "DATE",
    "DOUBLE",
    "FLOAT",
    "INT",
    "LONG",
    "STRING",
    "TIME",
    "TIMESTAMP",
    "TIMESTAMPTZ",
    "TIMESTAMPTZ_NS",
    "TIMESTAMP_NS",
    "UNKNOWN",
    "UUID",
    "VARIANT",
    "BinaryType",
    "BooleanType",
    "DateType",
    "DecimalType",
    "DoubleType",
    "FixedType",
    "FloatType",
    "IcebergType",
    "IntegerType",
    "ListType",
    "LongType",
    "MapType",
    "NestedField",
    "NestedType",
    "PrimitiveType",
    "StringType",
    "StructType",
    "TimeType",
    "TimestampNsType",
    "TimestampType",
    "TimestamptzNsType",
    "TimestamptzType",
    "UUIDType",
    "UnknownType",
    "VariantType",
    "decimal_required_bytes",
    "parse_type",
]


class IcebergType:
    """Base of all Iceberg types."""

    __slots__ = ()

    @property
    def is_primitive(self) -> bool:
        return isinstance(self, PrimitiveType)

    @property
    def is_nested(self) -> bool:
        return isinstance(self, NestedType)


class PrimitiveType(IcebergType):
    """A type without children. ``str()`` is the spec's type string."""

    __slots__ = ()
    _name: str = ""

    def __str__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


class BooleanType(PrimitiveType):
    __slots__ = ()
    _name = "boolean"


class IntegerType(PrimitiveType):
    __slots__ = ()
    _name = "int"


class LongType(PrimitiveType):
    __slots__ = ()
    _name = "long"


class FloatType(PrimitiveType):
    __slots__ = ()
    _name = "float"


class DoubleType(PrimitiveType):
    __slots__ = ()
    _name = "double"


class DateType(PrimitiveType):
    __slots__ = ()
    _name = "date"


class TimeType(PrimitiveType):
    __slots__ = ()
    _name = "time"


class TimestampType(PrimitiveType):
    """Microseconds since the epoch, without time zone."""

    __slots__ = ()
    _name = "timestamp"


class TimestamptzType(PrimitiveType):
    """Microseconds since the epoch, UTC."""

    __slots__ = ()
    _name = "timestamptz"


class TimestampNsType(PrimitiveType):
    """Nanoseconds since the epoch, without time zone (v3)."""

    __slots__ = ()
    _name = "timestamp_ns"


class TimestamptzNsType(PrimitiveType):
    """Nanoseconds since the epoch, UTC (v3)."""

    __slots__ = ()
    _name = "timestamptz_ns"


class StringType(PrimitiveType):
    __slots__ = ()
    _name = "string"


class UUIDType(PrimitiveType):
    __slots__ = ()
    _name = "uuid"


class BinaryType(PrimitiveType):
    __slots__ = ()
    _name = "binary"


class UnknownType(PrimitiveType):
    """A type not yet known; always null (v3)."""

    __slots__ = ()
    _name = "unknown"


class VariantType(PrimitiveType):
    """Semi-structured value (v3). Stored, not interpreted, by neve."""

    __slots__ = ()
    _name = "variant"


class DecimalType(PrimitiveType):
    """Fixed-point decimal with precision P (at most 38) and scale S."""

    __slots__ = ("precision", "scale")

    def __init__(self, precision: int, scale: int) -> None:
        if not 0 < precision <= 38:
            raise SchemaError(f"decimal precision must be in 1..38, got {precision}")
        object.__setattr__(self, "precision", precision)
        object.__setattr__(self, "scale", scale)

    precision: int
    scale: int

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("DecimalType is immutable")

    def __str__(self) -> str:
        return f"decimal({self.precision}, {self.scale})"

    def __repr__(self) -> str:
        return f"DecimalType({self.precision}, {self.scale})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DecimalType)
            and self.precision == other.precision
            and self.scale == other.scale
        )

    def __hash__(self) -> int:
        return hash((DecimalType, self.precision, self.scale))

    def __reduce__(self) -> tuple[Any, ...]:
        return (DecimalType, (self.precision, self.scale))


class FixedType(PrimitiveType):
    """Fixed-length byte array of ``length`` bytes."""

    __slots__ = ("length",)

    length: int

    def __init__(self, length: int) -> None:
        if length <= 0:
            raise SchemaError(f"fixed length must be positive, got {length}")
        object.__setattr__(self, "length", length)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("FixedType is immutable")

    def __str__(self) -> str:
        return f"fixed[{self.length}]"

    def __repr__(self) -> str:
        return f"FixedType({self.length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FixedType) and self.length == other.length

    def __hash__(self) -> int:
        return hash((FixedType, self.length))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FixedType, (self.length,))


BOOLEAN = BooleanType()
INT = IntegerType()
LONG = LongType()
FLOAT = FloatType()
DOUBLE = DoubleType()
DATE = DateType()
TIME = TimeType()
TIMESTAMP = TimestampType()
TIMESTAMPTZ = TimestamptzType()
TIMESTAMP_NS = TimestampNsType()
TIMESTAMPTZ_NS = TimestamptzNsType()
STRING = StringType()
UUID = UUIDType()
BINARY = BinaryType()
UNKNOWN = UnknownType()
VARIANT = VariantType()

_SIMPLE: dict[str, PrimitiveType] = {
    str(t): t
    for t in (
        BOOLEAN,
        INT,
        LONG,
        FLOAT,
        DOUBLE,
        DATE,
        TIME,
        TIMESTAMP,
        TIMESTAMPTZ,
        TIMESTAMP_NS,
        TIMESTAMPTZ_NS,
        STRING,
        UUID,
        BINARY,
        UNKNOWN,
        VARIANT,
    )
}
_ALIASES: dict[str, PrimitiveType] = {"integer": INT, "bool": BOOLEAN, "bigint": LONG}
_DECIMAL = re.compile(r"^decimal\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_FIXED = re.compile(r"^fixed\s*\[\s*(\d+)\s*\]$")


def parse_type(text: str) -> PrimitiveType:
    """Parse a primitive type string such as ``"long"`` or ``"decimal(9,2)"``."""
    key = text.strip().lower()
    if key in _SIMPLE:
        return _SIMPLE[key]
    if key in _ALIASES:
        return _ALIASES[key]
    m = _DECIMAL.match(key)
    if m:
        return DecimalType(int(m.group(1)), int(m.group(2)))
    m = _FIXED.match(key)
    if m:
        return FixedType(int(m.group(1)))
    raise SchemaError(
        f"unknown type {text!r}; use a spec type name such as 'long', 'string', "
        "'decimal(9,2)' or 'fixed[16]'"
    )


def decimal_required_bytes(precision: int) -> int:
    """Minimum bytes of a two's-complement integer holding ``precision`` digits."""
    for n in range(1, 24):
        if 2 ** (8 * n - 1) > 10**precision:
            return n
    return 24


@dataclass(frozen=True)
class NestedField:
    """A named, id'd field of a struct (also used for list elements and map entries)."""

    field_id: int
    name: str
    field_type: IcebergType
    required: bool = False
    doc: str | None = None
    initial_default: Any = None
    write_default: Any = None

    @property
    def optional(self) -> bool:
        return not self.required

    def with_(self, **changes: Any) -> NestedField:
        """Return a copy with the given attributes replaced."""
        values = {
            "field_id": self.field_id,
            "name": self.name,
            "field_type": self.field_type,
            "required": self.required,
            "doc": self.doc,
            "initial_default": self.initial_default,
            "write_default": self.write_default,
        }
        values.update(changes)
        return NestedField(**values)

    def __str__(self) -> str:
        req = "required" if self.required else "optional"
        return f"{self.field_id}: {self.name}: {req} {self.field_type}"


class NestedType(IcebergType):
    """A struct, list or map."""

    __slots__ = ()

    @property
    def children(self) -> tuple[NestedField, ...]:
        raise NotImplementedError


@dataclass(frozen=True, eq=True)
class StructType(NestedType):
    """An ordered tuple of fields with unique names and ids."""

    fields: tuple[NestedField, ...] = field(default=())

    def __init__(self, *fields: NestedField) -> None:
        object.__setattr__(self, "fields", tuple(fields))

    @property
    def children(self) -> tuple[NestedField, ...]:
        return self.fields

    @cached_property
    def _by_id(self) -> dict[int, NestedField]:
        return {f.field_id: f for f in self.fields}

    @cached_property
    def _by_name(self) -> dict[str, NestedField]:
        return {f.name: f for f in self.fields}

    def field(self, field_id: int) -> NestedField | None:
        return self._by_id.get(field_id)

    def field_by_name(self, name: str, case_sensitive: bool = True) -> NestedField | None:
        if case_sensitive:
            return self._by_name.get(name)
        low = name.lower()
        for f in self.fields:
            if f.name.lower() == low:
                return f
        return None

    def __str__(self) -> str:
        return "struct<" + ", ".join(str(f) for f in self.fields) + ">"

    def __hash__(self) -> int:
        return hash(self.fields)

    def __reduce__(self) -> tuple[Any, ...]:
        return (StructType, self.fields)


@dataclass(frozen=True)
class ListType(NestedType):
    """A list whose element is a field with id ``element_id``."""

    element_id: int
    element_type: IcebergType
    element_required: bool = True

    @cached_property
    def element_field(self) -> NestedField:
        return NestedField(self.element_id, "element", self.element_type, self.element_required)

    @property
    def children(self) -> tuple[NestedField, ...]:
        return (self.element_field,)

    def __str__(self) -> str:
        return f"list<{self.element_type}>"


@dataclass(frozen=True)
class MapType(NestedType):
    """A map with key field ``key_id`` (always required) and value field ``value_id``."""

    key_id: int
    key_type: IcebergType
    value_id: int
    value_type: IcebergType
    value_required: bool = True

    @cached_property
    def key_field(self) -> NestedField:
        return NestedField(self.key_id, "key", self.key_type, True)

    @cached_property
    def value_field(self) -> NestedField:
        return NestedField(self.value_id, "value", self.value_type, self.value_required)

    @property
    def children(self) -> tuple[NestedField, ...]:
        return (self.key_field, self.value_field)

    def __str__(self) -> str:
        return f"map<{self.key_type}, {self.value_type}>"
