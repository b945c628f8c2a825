"""Project Arrow data to an Iceberg schema by field id (spec "Column Projection").

The source arrays come with an Arrow schema whose fields carry ``PARQUET:field_id``
metadata (as read from a data file, or after applying a name mapping). Target fields
are found by id at every depth: renamed fields are found, fields the source lacks are
filled with a constant (an identity partition value, the ``initial_default``, or null),
and primitive values are widened to the target type (int to long, float to double,
decimal precision, string to large_string ...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from neve.arrow.schema import constant_array, field_id, to_arrow_schema, to_arrow_type
from neve.errors import SchemaError
from neve.spec.schema import Schema
from neve.spec.types import ListType, MapType, NestedField, StructType

__all__ = [
    "column_at",
    "leaf_field",
    "merge_fields",
    "project_array",
    "project_batch",
    "prune_fields",
    "struct_path",
]


# -- projection by field id ---------------------------------------------------------------


def project_batch(
    batch: pa.RecordBatch,
    file_schema: pa.Schema,
    target: Schema,
    constants: Mapping[int, Any] | None = None,
) -> pa.RecordBatch:
    """``batch`` (with columns of ``file_schema``, which carries field ids) as a batch
    of ``to_arrow_schema(target)``, matching fields by id at every depth."""
    schema = to_arrow_schema(target)
    if not target.fields:
        # no columns, but still the rows (a batch built from no arrays has none)
        return batch.select([]).replace_schema_metadata(schema.metadata)
    have = set(batch.schema.names)  # (``batch.schema`` is a new object at each call)
    columns = [(f, batch.column(f.name)) for f in file_schema if f.name in have]
    arrays = _project_fields(columns, target.fields, batch.num_rows, constants or {})
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _project_fields(
    columns: Sequence[tuple[pa.Field, pa.Array]],
    targets: Sequence[NestedField],
    length: int,
    constants: Mapping[int, Any],
) -> list[pa.Array]:
    by_id: dict[int, tuple[pa.Field, pa.Array]] = {}
    for f, arr in columns:
        fid = field_id(f)
        if fid is not None:
            by_id[fid] = (f, arr)
    out = []
    for target in targets:
        hit = by_id.get(target.field_id)
        if hit is not None:
            out.append(project_array(hit[1], hit[0], target, constants))
        elif target.field_id in constants:
            out.append(constant_array(constants[target.field_id], target.field_type, length))
        elif target.initial_default is not None:
            out.append(constant_array(target.initial_default, target.field_type, length))
        elif target.required:
            raise SchemaError(
                f"required field {target.name!r} (id {target.field_id}) is missing from the "
                "data file and has no initial default; the file does not belong to this table "
                "schema"
            )
        else:
            out.append(pa.nulls(length, to_arrow_type(target.field_type)))
    return out


def project_array(
    arr: pa.Array, file_field: pa.Field, target: NestedField, constants: Mapping[int, Any]
) -> pa.Array:
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    t = target.field_type
    target_type = to_arrow_type(t)
    ft = file_field.type
    if isinstance(ft, pa.BaseExtensionType):
        ft = ft.storage_type
    if isinstance(t, StructType):
        if not pa.types.is_struct(arr.type):
            raise _incompatible(target, file_field)
        children = [(ft.field(i), arr.field(i)) for i in range(ft.num_fields)]
        values = _project_fields(children, t.fields, len(arr), constants)
        mask = pc.is_null(arr) if arr.null_count else None
        return pa.StructArray.from_arrays(values, fields=list(target_type), mask=mask)
    if isinstance(t, ListType):
        if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
            if pa.types.is_fixed_size_list(arr.type):
                arr = arr.cast(pa.large_list(arr.type.value_field))
                ft = arr.type
            else:
                raise _incompatible(target, file_field)
        offsets, start, length = _window(arr)
        values = project_array(
            arr.values.slice(start, length), ft.value_field, t.element_field, constants
        )
        mask = pc.is_null(arr) if arr.null_count else None
        return pa.LargeListArray.from_arrays(offsets, values, type=target_type, mask=mask)
    if isinstance(t, MapType):
        if not pa.types.is_map(arr.type):
            raise _incompatible(target, file_field)
        offsets, start, length = _window(arr)
        keys = project_array(arr.keys.slice(start, length), ft.key_field, t.key_field, constants)
        items = project_array(
            arr.items.slice(start, length), ft.item_field, t.value_field, constants
        )
        mask = pc.is_null(arr) if arr.null_count else None
        return pa.MapArray.from_arrays(
            offsets.cast(pa.int32()), keys, items, type=target_type, mask=mask
        )
    if arr.type == target_type:
        return arr
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), target_type)
    try:
        return arr.cast(target_type, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaError(
            f"column {target.name!r} (id {target.field_id}) is stored as {arr.type}, which "
            f"cannot be read as {t}: {exc}; the file does not fit the table schema"
        ) from exc


def _window(arr: pa.Array) -> tuple[pa.Array, int, int]:
    offsets = arr.offsets.cast(pa.int64())
    start = offsets[0].as_py()
    end = offsets[len(offsets) - 1].as_py()
    return pc.subtract(offsets, start), start, end - start


def _incompatible(target: NestedField, file_field: pa.Field) -> SchemaError:
    return SchemaError(
        f"field {target.name!r} (id {target.field_id}) is {target.field_type} in the table "
        f"but {file_field.type} in the data file; the file does not fit the table schema"
    )


# -- schema helpers -----------------------------------------------------------------------


def merge_fields(base: Sequence[NestedField], extra: Sequence[NestedField]) -> list[NestedField]:
    """``base`` plus the fields of ``extra`` it lacks, merging struct children by id."""
    out = list(base)
    index = {f.field_id: i for i, f in enumerate(out)}
    for f in extra:
        i = index.get(f.field_id)
        if i is None:
            index[f.field_id] = len(out)
            out.append(f)
            continue
        mine = out[i]
        if isinstance(mine.field_type, StructType) and isinstance(f.field_type, StructType):
            merged = merge_fields(mine.field_type.fields, f.field_type.fields)
            out[i] = mine.with_(field_type=StructType(*merged))
    return out


def prune_fields(schema: Schema, ids: set[int]) -> list[NestedField]:
    """Top-level fields of ``schema`` reduced to the struct paths leading to ``ids``."""

    def prune(f: NestedField) -> NestedField | None:
        if f.field_id in ids:
            return f
        t = f.field_type
        if isinstance(t, StructType):
            kept = [c for c in (prune(c) for c in t.fields) if c is not None]
            if kept:
                return f.with_(field_type=StructType(*kept))
        return None

    return [p for p in (prune(f) for f in schema.fields) if p is not None]


def struct_path(schema: pa.Schema, fid: int) -> tuple[str, ...] | None:
    """Names leading to field id ``fid`` through structs only, or None."""

    def find(fields: Sequence[pa.Field], prefix: tuple[str, ...]) -> tuple[str, ...] | None:
        for f in fields:
            if field_id(f) == fid:
                return (*prefix, f.name)
            if pa.types.is_struct(f.type):
                found = find(list(f.type), (*prefix, f.name))
                if found is not None:
                    return found
        return None

    return find(list(schema), ())


def column_at(batch: pa.RecordBatch | pa.Table, path: Sequence[str]) -> Any:
    col = batch.column(path[0])
    for name in path[1:]:
        col = pc.struct_field(col, [col.type.get_field_index(name)])
    return col


def leaf_field(schema: pa.Schema, path: Sequence[str]) -> pa.Field:
    f = schema.field(path[0])
    for name in path[1:]:
        f = f.type.field(name)
    return f
