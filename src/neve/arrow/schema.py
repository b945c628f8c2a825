"""Iceberg schemas as Arrow schemas and back, name mappings, and value conversion.

Every Arrow field made here carries its Iceberg field id as ``PARQUET:field_id``
metadata (list elements and map keys/values too), which pyarrow writes into the
Parquet schema, so files are readable by id as the spec ("Parquet", "Column
Projection") requires. Required fields become non-nullable Arrow fields.

Type choices, made on purpose:

- ``string``/``binary`` map to ``large_string``/``large_binary`` and lists to
  ``large_list`` (``large_types=True``, the default): a single column of a large table
  may pass 2 GiB, which 32-bit offsets cannot address, and pyiceberg makes the same
  choice, so tables read by either tool concatenate without casts. Readers accept both.
- ``uuid`` maps to plain ``fixed_size_binary(16)``, not the ``arrow.uuid`` extension:
  pyarrow writes the extension with the Parquet UUID annotation, which Spark's native
  Parquet reader rejects (PARQUET_TYPE_ILLEGAL), and Iceberg readers (Java, pyiceberg)
  read an unannotated fixed[16] by field id just as well. ``arrow.uuid`` is accepted
  on input.
- ``time`` is ``time64('us')``; timestamps are ``timestamp('us'|'ns')``, with
  ``tz='UTC'`` for the ``tz`` variants. Arrow timestamps in any zone are UTC instants,
  so every zone converts to ``timestamptz`` without loss.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import functools
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from neve.errors import SchemaError
from neve.spec.name_mapping import (
    NAME_MAPPING_PROPERTY,
    MappedField,
    NameMapping,
    create_name_mapping,
    parse_name_mapping,
)
from neve.spec.schema import Schema
from neve.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UNKNOWN,
    UUID,
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
    NestedField,
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
    "FIELD_ID_KEY",
    "NAME_MAPPING_PROPERTY",
    "MappedField",
    "NameMapping",
    "apply_name_mapping",
    "arrow_to_values",
    "constant_array",
    "create_name_mapping",
    "field_id",
    "from_arrow_schema",
    "has_field_ids",
    "parse_name_mapping",
    "to_arrow_field",
    "to_arrow_schema",
    "to_arrow_type",
    "values_to_arrow",
]

#: Field metadata key under which pyarrow reads and writes Parquet field ids.
FIELD_ID_KEY = b"PARQUET:field_id"


# -- Iceberg -> Arrow --------------------------------------------------------------------


def _id_metadata(field_id: int) -> dict[bytes, bytes]:
    return {FIELD_ID_KEY: str(field_id).encode()}


def to_arrow_type(t: IcebergType, *, large_types: bool = True) -> pa.DataType:
    """The Arrow type of an Iceberg type (nested children carry field ids)."""
    if isinstance(t, StructType):
        return pa.struct([to_arrow_field(f, large_types=large_types) for f in t.fields])
    if isinstance(t, ListType):
        element = to_arrow_field(t.element_field, large_types=large_types)
        return pa.large_list(element) if large_types else pa.list_(element)
    if isinstance(t, MapType):
        key = to_arrow_field(t.key_field, large_types=large_types)
        value = to_arrow_field(t.value_field, large_types=large_types)
        return pa.map_(key, value)
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, FixedType):
        return pa.binary(t.length)
    if isinstance(t, StringType):
        return pa.large_string() if large_types else pa.string()
    if isinstance(t, BinaryType):
        return pa.large_binary() if large_types else pa.binary()
    simple = _SIMPLE_TO_ARROW.get(type(t))
    if simple is None:
        raise SchemaError(
            f"type {t} has no Arrow representation in neve; "
            "store such columns through Spark or change the column type"
        )
    return simple


_SIMPLE_TO_ARROW: dict[type, pa.DataType] = {
    BooleanType: pa.bool_(),
    IntegerType: pa.int32(),
    LongType: pa.int64(),
    FloatType: pa.float32(),
    DoubleType: pa.float64(),
    DateType: pa.date32(),
    TimeType: pa.time64("us"),
    TimestampType: pa.timestamp("us"),
    TimestamptzType: pa.timestamp("us", tz="UTC"),
    TimestampNsType: pa.timestamp("ns"),
    TimestamptzNsType: pa.timestamp("ns", tz="UTC"),
    UUIDType: pa.binary(16),
    UnknownType: pa.null(),
}


def to_arrow_field(f: NestedField, *, large_types: bool = True) -> pa.Field:
    """An Arrow field with the field's id as ``PARQUET:field_id`` metadata."""
    return pa.field(
        f.name,
        to_arrow_type(f.field_type, large_types=large_types),
        nullable=not f.required,
        metadata=_id_metadata(f.field_id),
    )


def to_arrow_schema(schema: Schema, *, large_types: bool = True) -> pa.Schema:
    """The Arrow schema of an Iceberg schema, field ids included (kept for the schemas
    met most recently: readers convert the same few for every batch, and a take for
    every file it reads)."""
    try:
        return _arrow_schema(schema, large_types)
    except TypeError:  # a default value that cannot be hashed: not kept
        return _arrow_schema.__wrapped__(schema, large_types)


@functools.lru_cache(maxsize=256)
def _arrow_schema(schema: Schema, large_types: bool) -> pa.Schema:
    return pa.schema([to_arrow_field(f, large_types=large_types) for f in schema.fields])


# -- Arrow -> Iceberg --------------------------------------------------------------------


def field_id(f: pa.Field) -> int | None:
    """The Iceberg field id stored in an Arrow field's metadata, or None."""
    meta = f.metadata
    if not meta or FIELD_ID_KEY not in meta:
        return None
    try:
        value = int(meta[FIELD_ID_KEY])
    except ValueError as exc:
        raise SchemaError(
            f"field {f.name!r} has a malformed field id {meta[FIELD_ID_KEY]!r}"
        ) from exc
    return value if value >= 0 else None


def _children(t: pa.DataType) -> list[tuple[str, pa.Field]]:
    """The child fields of a nested Arrow type, with their Iceberg role names."""
    if pa.types.is_struct(t):
        return [(t.field(i).name, t.field(i)) for i in range(t.num_fields)]
    if pa.types.is_map(t):
        return [("key", t.key_field), ("value", t.item_field)]
    if _is_list(t):
        return [("element", t.value_field)]
    return []


def _is_list(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )


def has_field_ids(pa_schema: pa.Schema) -> bool:
    """True when any field (at any depth) carries a field id."""

    def walk(fields: Iterable[pa.Field]) -> bool:
        return any(field_id(f) is not None or walk(c for _, c in _children(f.type)) for f in fields)

    return walk(pa_schema)


IdSource = Callable[[pa.Field, tuple[str, ...]], int]


def from_arrow_schema(
    pa_schema: pa.Schema,
    name_mapping: NameMapping | None = None,
    *,
    format_version: int = 2,
    schema_id: int = 0,
) -> Schema:
    """An Iceberg schema for an Arrow schema.

    Field ids come from ``PARQUET:field_id`` metadata when the schema has any (then
    every field needs one), else from ``name_mapping``, else they are assigned fresh
    from 1 the way Iceberg-Java does on table creation: all fields of a struct first,
    then their children. Non-nullable fields become required. Nanosecond timestamps
    become ``timestamp_ns`` in format v3 and microsecond ``timestamp`` before (the
    writer then checks that no value loses precision).
    """
    if has_field_ids(pa_schema):
        source: IdSource = _ids_from_metadata
    elif name_mapping is not None:
        source = _ids_from_mapping(name_mapping)
    else:
        source = _fresh_ids()
    conv = _ArrowToIceberg(source, format_version)
    return Schema(*conv.struct_fields(list(pa_schema), ()), schema_id=schema_id)


def _fresh_ids() -> IdSource:
    counter = iter(range(1, 1 << 31))

    def source(_f: pa.Field, _path: tuple[str, ...]) -> int:
        return next(counter)

    return source


def _ids_from_metadata(f: pa.Field, path: tuple[str, ...]) -> int:
    fid = field_id(f)
    if fid is None:
        raise SchemaError(
            f"field {'.'.join(path)!r} has no PARQUET:field_id while other fields do; "
            "give every field an id or none at all"
        )
    return fid


def _ids_from_mapping(mapping: NameMapping) -> IdSource:
    def source(_f: pa.Field, path: tuple[str, ...]) -> int:
        mapped = mapping.find(*path)
        if mapped is None or mapped.field_id is None:
            raise SchemaError(
                f"field {'.'.join(path)!r} is not in the name mapping; "
                "add it to schema.name-mapping.default"
            )
        return mapped.field_id

    return source


class _ArrowToIceberg:
    def __init__(self, ids: IdSource, format_version: int) -> None:
        self._ids = ids
        self._v3 = format_version >= 3

    def struct_fields(self, fields: Sequence[pa.Field], path: tuple[str, ...]) -> list[NestedField]:
        # ids of all siblings first, then their children (Iceberg-Java's order)
        ids = [self._ids(f, (*path, f.name)) for f in fields]
        return [
            NestedField(fid, f.name, self.convert(f.type, (*path, f.name)), not f.nullable)
            for fid, f in zip(ids, fields, strict=True)
        ]

    def convert(self, t: pa.DataType, path: tuple[str, ...]) -> IcebergType:
        if pa.types.is_dictionary(t):
            return self.convert(t.value_type, path)
        if pa.types.is_struct(t):
            return StructType(*self.struct_fields([t.field(i) for i in range(t.num_fields)], path))
        if pa.types.is_map(t):
            kf, vf = t.key_field, t.item_field
            kid = self._ids(kf, (*path, "key"))
            vid = self._ids(vf, (*path, "value"))
            kt = self.convert(kf.type, (*path, "key"))
            vt = self.convert(vf.type, (*path, "value"))
            return MapType(kid, kt, vid, vt, not vf.nullable)
        if _is_list(t):
            ef = t.value_field
            eid = self._ids(ef, (*path, "element"))
            return ListType(eid, self.convert(ef.type, (*path, "element")), not ef.nullable)
        return self.primitive(t, path)

    def primitive(self, t: pa.DataType, path: tuple[str, ...]) -> PrimitiveType:
        types = pa.types
        if isinstance(t, pa.BaseExtensionType):
            if t.extension_name == "arrow.uuid":
                return UUID
            raise SchemaError(
                f"column {'.'.join(path)!r} has the Arrow extension type {t.extension_name!r}, "
                "which neve cannot store; convert it to its storage type first"
            )
        if types.is_boolean(t):
            return BOOLEAN
        if types.is_int8(t) or types.is_int16(t) or types.is_int32(t):
            return INT
        if types.is_uint8(t) or types.is_uint16(t):
            return INT
        if types.is_int64(t) or types.is_uint32(t):
            return LONG
        if types.is_float16(t) or types.is_float32(t):
            return FLOAT
        if types.is_float64(t):
            return DOUBLE
        if types.is_decimal(t):
            if t.precision > 38:
                raise SchemaError(
                    f"column {'.'.join(path)!r} is {t}, wider than Iceberg's decimal limit "
                    "of 38 digits; reduce its precision"
                )
            return DecimalType(t.precision, t.scale)
        if types.is_date(t):
            return DATE
        if types.is_time(t):
            return TIME
        if types.is_timestamp(t):
            ns = t.unit == "ns" and self._v3
            if t.tz is None:
                return TIMESTAMP_NS if ns else TIMESTAMP
            return TIMESTAMPTZ_NS if ns else TIMESTAMPTZ
        if types.is_string(t) or types.is_large_string(t) or types.is_string_view(t):
            return STRING
        if types.is_binary(t) or types.is_large_binary(t) or types.is_binary_view(t):
            return BINARY
        if types.is_fixed_size_binary(t):
            return FixedType(t.byte_width)
        if types.is_null(t) and self._v3:
            return UNKNOWN
        raise SchemaError(
            f"column {'.'.join(path)!r} has Arrow type {t}, which has no Iceberg equivalent"
            + ("" if self._v3 or not types.is_null(t) else " before format v3")
            + "; cast it to a supported type (see neve.arrow.schema)"
        )


# -- name mapping ------------------------------------------------------------------------


def apply_name_mapping(pa_schema: pa.Schema, mapping: NameMapping) -> pa.Schema:
    """Set field ids on an Arrow schema from a name mapping, replacing any present.

    Fields the mapping does not know get no id; readers then treat them as absent.
    List elements and map keys/values are looked up as ``element``/``key``/``value``
    whatever their Arrow names, as Iceberg-Java does.
    """
    return pa.schema([_map_field(f, mapping.find(f.name)) for f in pa_schema])


def _map_field(f: pa.Field, mapped: MappedField | None) -> pa.Field:
    meta = {k: v for k, v in (f.metadata or {}).items() if k != FIELD_ID_KEY}
    if mapped is not None and mapped.field_id is not None:
        meta.update(_id_metadata(mapped.field_id))

    def sub(name: str) -> MappedField | None:
        return None if mapped is None else mapped.child(name)

    t = f.type
    new_type: pa.DataType = t
    if pa.types.is_struct(t):
        new_type = pa.struct(
            [_map_field(t.field(i), sub(t.field(i).name)) for i in range(t.num_fields)]
        )
    elif pa.types.is_map(t):
        key = _map_field(t.key_field, sub("key"))
        item = _map_field(t.item_field, sub("value"))
        new_type = pa.map_(key, item, keys_sorted=t.keys_sorted)
    elif pa.types.is_large_list(t):
        new_type = pa.large_list(_map_field(t.value_field, sub("element")))
    elif pa.types.is_list(t):
        new_type = pa.list_(_map_field(t.value_field, sub("element")))
    elif pa.types.is_fixed_size_list(t):
        new_type = pa.list_(_map_field(t.value_field, sub("element")), t.list_size)
    return pa.field(f.name, new_type, f.nullable, metadata=meta or None)


# -- values ------------------------------------------------------------------------------


def arrow_to_values(arr: pa.Array | pa.ChunkedArray, t: IcebergType) -> list[Any]:
    """Python values of a primitive column in neve's representation (dates as day
    numbers, timestamps as micro/nanoseconds, uuids as UUID ...)."""
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.cast(arr.type.storage_type)
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    if pa.types.is_null(arr.type):  # e.g. the values of a void partition field
        return [None] * len(arr)
    if isinstance(t, DateType):
        return arr.cast(pa.date32()).cast(pa.int32()).to_pylist()  # type: ignore[no-any-return]
    if isinstance(t, TimeType):
        return arr.cast(pa.time64("us")).cast(pa.int64()).to_pylist()  # type: ignore[no-any-return]
    if isinstance(t, (TimestampType, TimestamptzType)):
        return _timestamps(arr, "us")
    if isinstance(t, (TimestampNsType, TimestamptzNsType)):
        return _timestamps(arr, "ns")
    if isinstance(t, UUIDType):
        return [None if v is None else uuid.UUID(bytes=v) for v in arr.to_pylist()]
    if isinstance(t, (StringType, BinaryType, FixedType)) or not pa.types.is_temporal(arr.type):
        return arr.to_pylist()  # type: ignore[no-any-return]
    raise SchemaError(f"cannot convert Arrow {arr.type} to values of type {t}")


def _timestamps(arr: pa.Array | pa.ChunkedArray, unit: str) -> list[Any]:
    if pa.types.is_integer(arr.type):
        return arr.to_pylist()  # type: ignore[no-any-return]
    if pa.types.is_date(arr.type):  # a date is midnight of its day
        arr = arr.cast(pa.timestamp(unit))
    tz = arr.type.tz
    return arr.cast(pa.timestamp(unit, tz=tz)).cast(pa.int64()).to_pylist()  # type: ignore[no-any-return]


def values_to_arrow(values: Sequence[Any], t: IcebergType, *, large_types: bool = True) -> pa.Array:
    """An Arrow array of ``to_arrow_type(t)`` from neve-represented primitive values."""
    target = to_arrow_type(t, large_types=large_types)
    if isinstance(t, DateType):
        return pa.array(values, pa.int32()).cast(target)
    if isinstance(
        t, (TimeType, TimestampType, TimestamptzType, TimestampNsType, TimestamptzNsType)
    ):
        return pa.array([_to_int(v, t) for v in values], pa.int64()).cast(target)
    if isinstance(t, UUIDType):
        return pa.array([None if v is None else _uuid_bytes(v) for v in values], target)
    if isinstance(t, DecimalType):
        return pa.array([None if v is None else decimal.Decimal(v) for v in values], target)
    return pa.array(values, target)


def _to_int(v: Any, t: IcebergType) -> int | None:
    if v is None or isinstance(v, int):
        return v
    if isinstance(v, _dt.time):
        return (v.hour * 3600 + v.minute * 60 + v.second) * 1_000_000 + v.microsecond
    raise SchemaError(f"value {v!r} is not in neve's representation of {t} (an int)")


def _uuid_bytes(v: Any) -> bytes:
    if isinstance(v, uuid.UUID):
        return v.bytes
    if isinstance(v, bytes) and len(v) == 16:
        return v
    return uuid.UUID(str(v)).bytes


def constant_array(
    value: Any, t: IcebergType, length: int, *, large_types: bool = True
) -> pa.Array:
    """An array of ``length`` copies of one neve value (null when ``value`` is None)."""
    target = to_arrow_type(t, large_types=large_types)
    if value is None:
        return pa.nulls(length, target)
    if isinstance(t, StructType):
        # neve represents structs as tuples in field order; a mapping by field id is
        # accepted too
        if isinstance(value, Mapping):
            parts = [value.get(c.field_id, c.initial_default) for c in t.fields]
        elif isinstance(value, (tuple, list)) and len(value) == len(t.fields):
            parts = list(value)
        else:
            raise SchemaError(f"struct value {value!r} must be a tuple with one value per field")
        children = [
            constant_array(v, c.field_type, length, large_types=large_types)
            for v, c in zip(parts, t.fields, strict=True)
        ]
        return pa.StructArray.from_arrays(children, fields=list(target))
    if not t.is_primitive:
        raise SchemaError(f"a constant of type {t} must be null")
    scalar = values_to_arrow([value], t, large_types=large_types)[0]
    return pa.repeat(scalar, length)
