"""How the columns of a Parquet data file map to a table's fields for Spark's reader:
field ids walked through nested types, the paths Spark names nested fields by, private
names for columns that a dropped-and-re-added or renamed field shadows, columns
matched by name where a file has no field ids (a name mapping), the footers that say
which, and filling a field that a file lacks."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from neve.arrow.schema import (
    field_id,
)
from neve.errors import NeveIOError
from neve.io.fileio import FileIO
from neve.spark.expression import column_ref
from neve.spark.schema import field_id_of, to_spark_field, to_spark_type
from neve.spec.manifest import DataFile
from neve.spec.schema import Schema
from neve.spec.table_metadata import TableMetadata
from neve.spec.types import IcebergType, ListType, MapType, NestedField, StructType

if TYPE_CHECKING:
    pass

__all__ = [
    "arrow_ids",
    "by_names",
    "fill_field",
    "footer_schema",
    "has_column",
    "historical_field",
    "names_to",
    "schema_with",
    "struct_fields",
    "top_column",
    "unsafe_names",
    "walk_ids",
    "with_private_names",
]


def top_column(name: str) -> Column:
    """The top-level column ``name``, quoted for Spark."""
    return F.col("`" + name.replace("`", "``") + "`")


def walk_ids(fields: Sequence[NestedField]) -> list[tuple[str, int]]:
    """``(name, field id)`` of ``fields`` and of every field nested in them."""
    out: list[tuple[str, int]] = []
    for f in fields:
        out.append((f.name, f.field_id))
        if isinstance(f.field_type, StructType):
            out.extend(walk_ids(f.field_type.fields))
    return out


def struct_fields(fields: Sequence[NestedField]) -> list[NestedField]:
    """Every struct field at or below ``fields``, through lists and maps."""
    out: list[NestedField] = []

    def walk(t: IcebergType) -> None:
        if isinstance(t, StructType):
            for c in t.fields:
                out.append(c)
                walk(c.field_type)
        elif isinstance(t, (ListType, MapType)):
            for c in t.children:
                walk(c.field_type)

    walk(StructType(*fields))
    return out


def _steps(t: IcebergType, fid: int) -> list[str] | None:
    """How to reach field ``fid`` from a value of type ``t``: struct field names, and
    ``[]`` for a list's elements or ``{}`` for a map's values."""
    if isinstance(t, StructType):
        for f in t.fields:
            if f.field_id == fid:
                return [f.name]
            below = _steps(f.field_type, fid)
            if below is not None:
                return [f.name, *below]
    elif isinstance(t, ListType):
        below = _steps(t.element_type, fid)
        return None if below is None else ["[]", *below]
    elif isinstance(t, MapType):
        below = _steps(t.value_type, fid)
        return None if below is None else ["{}", *below]
    return None


def _filled(c: Column, steps: Sequence[str], value: Column) -> Column:
    """``c`` with the field at ``steps`` (see :func:`_steps`) coalesced with ``value``;
    null structs, lists and maps stay null."""
    if not steps:
        return F.coalesce(c, value)
    step, rest = steps[0], steps[1:]
    if step == "[]":
        return F.transform(c, lambda e: _filled(e, rest, value))
    if step == "{}":
        return F.transform_values(c, lambda _k, v: _filled(v, rest, value))
    inner = _filled(c.getField(step), rest, value)
    return F.when(c.isNull(), c).otherwise(c.withField("`" + step.replace("`", "``") + "`", inner))


def names_to(schema: Schema, fid: int) -> list[str]:
    """The names from the top of ``schema`` down to the field ``fid``."""
    chain = [fid]
    parent = schema.parent_id(fid)
    while parent is not None:
        chain.append(parent)
        parent = schema.parent_id(parent)
    return [schema.find_field(i).name for i in reversed(chain)]


def historical_field(md: TableMetadata, fid: int) -> NestedField | None:
    """The field ``fid`` as the newest schema that has it defines it (None: none does)."""
    for s in sorted(md.schemas, key=lambda s: s.schema_id, reverse=True):
        f = s.find_field_or_none(fid)
        if f is not None:
            return f
    return None


def schema_with(md: TableMetadata, schema: Schema, fid: int, f: NestedField) -> Schema:
    """A schema holding field ``fid``: ``schema`` or, for a dropped field, the latest
    schema that had it."""
    if schema.find_field_or_none(fid) is not None:
        return schema
    for s in sorted(md.schemas, key=lambda s: s.schema_id, reverse=True):
        if s.find_field_or_none(fid) is not None:
            return s
    return Schema(f)


def unsafe_names(md: TableMetadata, schema: Schema) -> set[int]:
    """Ids of fields whose name path (ignoring case) some schema of the table gave to
    a different field id: Spark's filter pushdown would find the wrong column."""
    owners: dict[tuple[str, ...], set[int]] = {}
    for s in [*md.schemas, schema]:
        for path, fid in _paths(s.fields, ()):
            owners.setdefault(path, set()).add(fid)
    return {fid for path, fid in _paths(schema.fields, ()) if len(owners.get(path, set())) > 1}


def _paths(
    fields: Sequence[NestedField], prefix: tuple[str, ...]
) -> list[tuple[tuple[str, ...], int]]:
    out: list[tuple[tuple[str, ...], int]] = []
    for f in fields:
        path = (*prefix, f.name.lower())
        out.append((path, f.field_id))
        t = f.field_type
        if isinstance(t, StructType):
            out.extend(_paths(t.fields, path))
        elif isinstance(t, ListType):
            out.extend(_paths([t.element_field], path))
        elif isinstance(t, MapType):
            out.extend(_paths([t.key_field, t.value_field], path))
    return out


def with_private_names(schema: Schema, unsafe: set[int]) -> T.StructType:
    """The Spark read schema (field ids attached); top-level columns holding a field
    with an unsafe name get private names, which Spark's pushdown cannot resolve."""
    out = []
    for f in schema.fields:
        sf = to_spark_field(f)
        if any(fid in unsafe for _path, fid in _paths([f], ())):
            sf = T.StructField(
                f"__neve_c{f.field_id}",
                _private_nested(sf.dataType, unsafe),
                sf.nullable,
                sf.metadata,
            )
        out.append(sf)
    return T.StructType(out)


def _private_nested(t: T.DataType, unsafe: set[int]) -> T.DataType:
    if isinstance(t, T.StructType):
        fields = []
        for sf in t.fields:
            fid = field_id_of(sf)
            name = f"__neve_c{fid}" if fid in unsafe else sf.name
            fields.append(
                T.StructField(name, _private_nested(sf.dataType, unsafe), sf.nullable, sf.metadata)
            )
        return T.StructType(fields)
    if isinstance(t, T.ArrayType):
        return T.ArrayType(_private_nested(t.elementType, unsafe), t.containsNull)
    if isinstance(t, T.MapType):
        return T.MapType(
            _private_nested(t.keyType, unsafe),
            _private_nested(t.valueType, unsafe),
            t.valueContainsNull,
        )
    return t


def by_names(fields: Sequence[NestedField], file_fields: list[pa.Field]) -> T.StructType:
    """A Spark read schema without field ids, shaped like ``fields`` but named as the
    columns of a name-mapped file (``file_fields`` carry the mapped ids); fields the
    file lacks get names no file column has, so they read as null."""
    by_id = {field_id(f): f for f in file_fields if field_id(f) is not None}
    out = []
    for f in fields:
        found = by_id.get(f.field_id)
        name = found.name if found is not None else f"__neve_missing_{f.field_id}"
        out.append(T.StructField(name, _type_by_names(f, found), True))
    return T.StructType(out)


def _type_by_names(f: NestedField, found: pa.Field | None) -> T.DataType:
    t = f.field_type
    if isinstance(t, StructType):
        children = list(found.type) if found is not None and pa.types.is_struct(found.type) else []
        return by_names(t.fields, children)
    if isinstance(t, ListType):
        elem = None
        if found is not None and (
            pa.types.is_list(found.type) or pa.types.is_large_list(found.type)
        ):
            elem = found.type.value_field
        return T.ArrayType(_type_by_names(t.element_field, elem), not t.element_required)
    if isinstance(t, MapType):
        key = value = None
        if found is not None and pa.types.is_map(found.type):
            key, value = found.type.key_field, found.type.item_field
        return T.MapType(
            _type_by_names(t.key_field, key),
            _type_by_names(t.value_field, value),
            not t.value_required,
        )
    return to_spark_type(t)


def arrow_ids(schema: pa.Schema) -> list[int]:
    """The Iceberg field ids an Arrow schema's fields carry, nested ones included."""
    out: list[int] = []

    def walk(f: pa.Field) -> None:
        fid = field_id(f)
        if fid is not None:
            out.append(fid)
        t = f.type
        if pa.types.is_struct(t):
            for c in t:
                walk(c)
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_field)
        elif pa.types.is_map(t):
            walk(t.key_field)
            walk(t.item_field)

    for f in schema:
        walk(f)
    return out


_FOOTERS: OrderedDict[str, pa.Schema] = OrderedDict()
_FOOTERS_LOCK = threading.Lock()
_FOOTERS_MAX = 4096


def footer_schema(io: FileIO, path: str) -> pa.Schema:
    """The Arrow schema of a Parquet file (data files never change, so it is cached)."""
    with _FOOTERS_LOCK:
        cached = _FOOTERS.get(path)
        if cached is not None:
            _FOOTERS.move_to_end(path)
            return cached
    try:
        with io.open_input(path) as f:
            schema = pq.ParquetFile(f).schema_arrow
    except (OSError, pa.ArrowException) as exc:
        raise NeveIOError(f"cannot read the Parquet footer of {path}: {exc}") from exc
    with _FOOTERS_LOCK:
        _FOOTERS[path] = schema
        while len(_FOOTERS) > _FOOTERS_MAX:
            _FOOTERS.popitem(last=False)
    return schema


def has_column(f: DataFile, fid: int, present: set[int] | None) -> bool:
    """Whether the data file surely holds column ``fid``: from its (name-mapped) footer
    when known, else from its metrics. Unknown counts as absent (filling a present
    identity column with its partition value changes nothing)."""
    if present is not None:
        return fid in present
    for metric in (f.column_sizes, f.value_counts, f.null_value_counts):
        if metric and fid in metric:
            return True
    return False


def fill_field(df: DataFrame, schema: Schema, fid: int, value: Column) -> DataFrame:
    """``df`` with field ``fid`` (top level, in structs, or in list elements and map
    values) coalesced with ``value``."""
    steps = _steps(schema.struct, fid)
    if steps is not None and ("[]" in steps or "{}" in steps):
        return df.withColumn(steps[0], _filled(top_column(steps[0]), steps[1:], value))
    names = names_to(schema, fid)
    if len(names) == 1:
        return df.withColumn(names[0], F.coalesce(top_column(names[0]), value))
    top = top_column(names[0])
    inner = ".".join("`" + n.replace("`", "``") + "`" for n in names[1:])
    filled = top.withField(inner, F.coalesce(column_ref(names), value))
    return df.withColumn(names[0], F.when(top.isNull(), top).otherwise(filled))
