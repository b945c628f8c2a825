"""Read Iceberg data files into Arrow, projected to a schema by field id.

Columns are matched by field id, never by name (spec "Column Projection"): renamed
columns are found, dropped ones vanish, added ones read as their ``initial_default``
or null, promoted types are widened, and columns missing from the file that are
identity partition sources take the file's partition value. Files written without
field ids are read through the table's name mapping.

The row filter prunes row groups by their statistics (pyarrow dataset) and is then
applied exactly to the rows. Deletes are applied before the filter: position deletes
and deletion vectors by file-global row position, equality deletes by value.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from pyroaring import BitMap64

from neve.arrow.deletes import (
    apply_positions,
    equality_keep_mask,
    read_deletion_vector,
    read_position_deletes,
)
from neve.arrow.expression import to_arrow_expression
from neve.arrow.schema import (
    NameMapping,
    apply_name_mapping,
    constant_array,
    field_id,
    from_arrow_schema,
    has_field_ids,
    to_arrow_schema,
    to_arrow_type,
)
from neve.errors import NeveError, NeveIOError, SchemaError
from neve.expressions.evaluator import compile_predicate
from neve.expressions.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    And,
    BooleanExpression,
    BoundPredicate,
    BoundReference,
    Or,
    and_,
    or_,
)
from neve.expressions.visitors import references, rewrite_not
from neve.io.fileio import FileIO
from neve.spec.manifest import DataFile, DataFileContent, FileFormat
from neve.spec.partition import PartitionSpec
from neve.spec.schema import Schema
from neve.spec.transforms import IdentityTransform
from neve.spec.types import STRING, ListType, MapType, NestedField, StructType

__all__ = [
    "DeleteCache",
    "identity_partition_constants",
    "iter_data_file_batches",
    "project_batch",
    "read_data_file",
]

DEFAULT_BATCH_SIZE = 131_072


# -- projection by field id ---------------------------------------------------------------


def project_batch(
    batch: pa.RecordBatch,
    file_schema: pa.Schema,
    target: Schema,
    constants: Mapping[int, Any] | None = None,
) -> pa.RecordBatch:
    """``batch`` (with columns of ``file_schema``, which carries field ids) as a batch
    of ``to_arrow_schema(target)``, matching fields by id at every depth."""
    columns = [(f, batch.column(f.name)) for f in file_schema if f.name in batch.schema.names]
    arrays = _project_fields(columns, target.fields, batch.num_rows, constants or {})
    return pa.RecordBatch.from_arrays(arrays, schema=to_arrow_schema(target))


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
            out.append(_project_value(hit[1], hit[0], target, constants))
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


def _project_value(
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
        values = _project_value(
            arr.values.slice(start, length), ft.value_field, t.element_field, constants
        )
        mask = pc.is_null(arr) if arr.null_count else None
        return pa.LargeListArray.from_arrays(offsets, values, type=target_type, mask=mask)
    if isinstance(t, MapType):
        if not pa.types.is_map(arr.type):
            raise _incompatible(target, file_field)
        offsets, start, length = _window(arr)
        keys = _project_value(arr.keys.slice(start, length), ft.key_field, t.key_field, constants)
        items = _project_value(
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


def _merge_fields(base: Sequence[NestedField], extra: Sequence[NestedField]) -> list[NestedField]:
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
            merged = _merge_fields(mine.field_type.fields, f.field_type.fields)
            out[i] = mine.with_(field_type=StructType(*merged))
    return out


def _prune_to(schema: Schema, ids: set[int]) -> list[NestedField]:
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


def _struct_path(schema: pa.Schema, fid: int) -> tuple[str, ...] | None:
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


def _column_at(batch: pa.RecordBatch | pa.Table, path: Sequence[str]) -> Any:
    col = batch.column(path[0])
    for name in path[1:]:
        col = pc.struct_field(col, [col.type.get_field_index(name)])
    return col


def identity_partition_constants(
    spec: PartitionSpec | None, partition: Sequence[Any]
) -> dict[int, Any]:
    """Source field id -> value for the identity fields of a file's partition."""
    if spec is None:
        return {}
    return {
        f.source_id: value
        for f, value in zip(spec.fields, partition, strict=False)
        if isinstance(f.transform, IdentityTransform)
    }


# -- filters ------------------------------------------------------------------------------


def _file_filter(
    expr: BooleanExpression, file_schema: pa.Schema, constants: Mapping[int, Any]
) -> BooleanExpression:
    """``expr`` addressing the file's column names; predicates on columns the file
    lacks become true or false from the value the projection fills in."""
    if expr is ALWAYS_TRUE or expr is ALWAYS_FALSE:
        return expr
    if isinstance(expr, And):
        return and_(
            _file_filter(expr.left, file_schema, constants),
            _file_filter(expr.right, file_schema, constants),
        )
    if isinstance(expr, Or):
        return or_(
            _file_filter(expr.left, file_schema, constants),
            _file_filter(expr.right, file_schema, constants),
        )
    if not isinstance(expr, BoundPredicate):
        raise SchemaError(f"cannot push {expr} into a file scan; bind and rewrite it first")
    ref = expr.term
    path = _struct_path(file_schema, ref.field_id)
    if path is not None:
        return BoundPredicate(expr.op, replace(ref, path=path), expr.literals)
    value = constants.get(ref.field_id, ref.field.initial_default)
    single = BoundReference(ref.field, (0,), (ref.field.name,), ref.produces_null)
    holds = compile_predicate(BoundPredicate(expr.op, single, expr.literals))((value,))
    return ALWAYS_TRUE if holds else ALWAYS_FALSE


# -- deletes ------------------------------------------------------------------------------


@dataclass
class DeleteCache:
    """Delete files loaded once per scan: position deletes by delete file, and
    equality delete rows by delete file. Share one cache across the files of a scan."""

    positions: dict[str, dict[str, BitMap64]] = field(default_factory=dict)
    equality: dict[str, pa.Table] = field(default_factory=dict)


def _deleted_positions(
    io: FileIO, data_file: DataFile, delete_files: Sequence[DataFile], cache: DeleteCache
) -> BitMap64 | None:
    dvs = [d for d in delete_files if d.file_format is FileFormat.PUFFIN]
    result: BitMap64 | None = None
    if dvs:  # a deletion vector replaces every position delete file of its data file
        for dv in dvs:
            if dv.referenced_data_file not in (None, data_file.file_path):
                continue
            bits = read_deletion_vector(io, dv)
            result = bits if result is None else result | bits
        return result
    for d in delete_files:
        if d.content is not DataFileContent.POSITION_DELETES:
            continue
        loaded = cache.positions.get(d.file_path)
        if loaded is None:
            loaded = read_position_deletes(io, d)
            cache.positions[d.file_path] = loaded
        found = loaded.get(data_file.file_path)
        if found is not None:
            result = found if result is None else result | found
    return result


@dataclass(frozen=True)
class _EqualityDelete:
    ids: tuple[int, ...]
    rows: pa.Table  # key columns k0..kn, typed like the data's columns


def _equality_deletes(
    io: FileIO,
    delete_files: Sequence[DataFile],
    key_types: Mapping[int, NestedField],
    name_mapping: NameMapping | None,
    cache: DeleteCache,
) -> list[_EqualityDelete]:
    out = []
    for d in delete_files:
        if d.content is not DataFileContent.EQUALITY_DELETES:
            continue
        if not d.equality_ids:
            raise NeveIOError(
                f"equality delete file {d.file_path} has no equality_ids; the manifest is invalid"
            )
        ids = tuple(d.equality_ids)
        rows = cache.equality.get(d.file_path)
        if rows is None:
            targets = [
                NestedField(fid, f"k{i}", key_types[fid].field_type, False)
                for i, fid in enumerate(ids)
            ]
            rows = _read_keys(io, d.file_path, targets, name_mapping)
            cache.equality[d.file_path] = rows
        out.append(_EqualityDelete(ids, rows))
    return out


def _read_keys(
    io: FileIO, path: str, targets: Sequence[NestedField], mapping: NameMapping | None
) -> pa.Table:
    """Columns of a delete file found by id at any struct depth, named k0..kn."""
    fragment, file_schema = _open(io, path, mapping)
    paths = {t.field_id: _struct_path(file_schema, t.field_id) for t in targets}
    top = sorted({p[0] for p in paths.values() if p is not None})
    table = fragment.to_table(columns=top)
    arrays = []
    for t in targets:
        p = paths[t.field_id]
        if p is None:
            arrays.append(pa.nulls(table.num_rows, to_arrow_type(t.field_type)))
            continue
        col = _column_at(table, p)
        leaf = _leaf_field(file_schema, p)
        chunks = [_project_value(c, leaf, t, {}) for c in col.chunks]
        arrays.append(pa.chunked_array(chunks, type=to_arrow_type(t.field_type)))
    return pa.table(arrays, names=[t.name for t in targets])


def _leaf_field(schema: pa.Schema, path: Sequence[str]) -> pa.Field:
    f = schema.field(path[0])
    for name in path[1:]:
        f = f.type.field(name)
    return f


def _key_table(
    batch: pa.RecordBatch,
    schema: Schema,
    ids: Sequence[int],
    dropped: Mapping[int, pa.Array],
) -> pa.Table:
    """The equality columns of ``batch`` named k0..kn; columns dropped from the table
    come from ``dropped`` (read from the data file by id)."""
    arrays = [
        dropped[fid] if fid in dropped else _column_at(batch, _names_to(schema, fid)) for fid in ids
    ]
    return pa.table(arrays, names=[f"k{i}" for i in range(len(ids))])


def _names_to(schema: Schema, fid: int) -> list[str]:
    chain = [fid]
    parent = schema.parent_id(fid)
    while parent is not None:
        chain.append(parent)
        parent = schema.parent_id(parent)
    return [schema.find_field(i).name for i in reversed(chain)]


# -- reading ------------------------------------------------------------------------------


def _open(
    io: FileIO, path: str, mapping: NameMapping | None
) -> tuple[ds.ParquetFileFragment, pa.Schema]:
    fs, inner = io.filesystem(path)
    fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit="us"))
    try:
        fragment = fmt.make_fragment(inner, filesystem=fs)
        file_schema = fragment.physical_schema
    except FileNotFoundError as exc:
        raise NeveIOError(f"data file not found: {path}") from exc
    except (OSError, pa.ArrowException) as exc:
        raise NeveIOError(f"cannot read Parquet file {path}: {exc}") from exc
    if not has_field_ids(file_schema):
        if mapping is None:
            raise SchemaError(
                f"{path} has no Iceberg field ids and the table has no name mapping; set "
                "the table property schema.name-mapping.default to read such files"
            )
        file_schema = apply_name_mapping(file_schema, mapping)
    return fragment, file_schema


def iter_data_file_batches(
    io: FileIO,
    data_file: DataFile,
    projected_schema: Schema,
    *,
    table_schema: Schema | None = None,
    spec: PartitionSpec | None = None,
    row_filter: BooleanExpression | None = None,
    delete_files: Sequence[DataFile] = (),
    name_mapping: NameMapping | None = None,
    cache: DeleteCache | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> Iterator[pa.RecordBatch]:
    """Batches of a data file's live rows matching ``row_filter``, with the Arrow
    schema of ``projected_schema`` (see :func:`read_data_file`)."""
    table_schema = table_schema or projected_schema
    cache = cache or DeleteCache()
    constants = identity_partition_constants(spec, data_file.partition)
    expr = rewrite_not(row_filter) if row_filter is not None else ALWAYS_TRUE
    if expr is ALWAYS_FALSE:
        return

    fragment, file_schema = _open(io, data_file.file_path, name_mapping)
    key_fields = _key_fields(table_schema, file_schema, delete_files)
    equality = _equality_deletes(io, delete_files, key_fields, name_mapping, cache)
    # equality columns the table has dropped still apply; they are read from the file
    dropped = {
        fid: f for fid, f in key_fields.items() if table_schema.find_field_or_none(fid) is None
    }

    # rows are read into projection + filter columns + equality columns, then narrowed
    need = {r.field_id for r in references(expr)} | {i for e in equality for i in e.ids}
    read_schema = Schema(*_merge_fields(projected_schema.fields, _prune_to(table_schema, need)))
    wanted = {f.field_id for f in read_schema.fields} | need
    file_columns = [f.name for f in file_schema if _contains_any(f, wanted)]

    exact = None if expr is ALWAYS_TRUE else to_arrow_expression(expr)
    row_groups = _row_groups(fragment, expr, file_schema, constants)
    deleted = _deleted_positions(io, data_file, delete_files, cache) if row_groups else None
    starts = _row_group_starts(fragment)

    for rg in row_groups:
        position = starts[rg]
        try:
            raw_batches = fragment.subset(row_group_ids=[rg]).to_batches(
                columns=file_columns, batch_size=batch_size
            )
            for raw in raw_batches:
                live = apply_positions(raw, position, deleted)
                position += raw.num_rows
                if live.num_rows == 0:
                    continue
                batch = project_batch(live, file_schema, read_schema, constants)
                old_keys = _dropped_key_columns(live, file_schema, dropped)
                for e in equality:
                    keys = _key_table(batch, table_schema, e.ids, old_keys)
                    keep = equality_keep_mask(keys, e.rows, keys.column_names)
                    if keep is not None:
                        batch = batch.filter(keep)
                        old_keys = {k: v.filter(keep) for k, v in old_keys.items()}
                if exact is not None and batch.num_rows:
                    batch = batch.filter(exact)
                if batch.num_rows:
                    yield project_batch(batch, batch.schema, projected_schema)
        except NeveError:
            raise
        except (OSError, pa.ArrowException) as exc:
            raise NeveIOError(f"reading {data_file.file_path} failed: {exc}") from exc


def _contains_any(f: pa.Field, ids: set[int]) -> bool:
    if field_id(f) in ids:
        return True
    if pa.types.is_struct(f.type):
        return any(_contains_any(c, ids) for c in f.type)
    return False


def _dropped_key_columns(
    batch: pa.RecordBatch, file_schema: pa.Schema, fields: Mapping[int, NestedField]
) -> dict[int, pa.Array]:
    """Equality columns that the table no longer has, read from the raw file batch."""
    out = {}
    for fid, f in fields.items():
        path = _struct_path(file_schema, fid)
        if path is None:
            out[fid] = pa.nulls(batch.num_rows, to_arrow_type(f.field_type))
        else:
            col = _column_at(batch, path)
            out[fid] = _project_value(col, _leaf_field(file_schema, path), f, {})
    return out


def _key_fields(
    table_schema: Schema, file_schema: pa.Schema, delete_files: Sequence[DataFile]
) -> dict[int, NestedField]:
    """Fields of all equality ids, from the table schema or, for dropped columns, the
    data file (the delete rows are cast to the same type)."""
    ids = {
        i
        for d in delete_files
        if d.content is DataFileContent.EQUALITY_DELETES
        for i in d.equality_ids or ()
    }
    out: dict[int, NestedField] = {}
    file_iceberg: Schema | None = None
    for fid in ids:
        f = table_schema.find_field_or_none(fid)
        if f is None:
            if file_iceberg is None:
                file_iceberg = _iceberg_of(file_schema)
            f = file_iceberg.find_field_or_none(fid) if file_iceberg is not None else None
        if f is None:  # in neither: only null keys can match, typed as string
            f = NestedField(fid, f"__eq_{fid}", STRING, False)
        out[fid] = f
    return out


def _iceberg_of(file_schema: pa.Schema) -> Schema | None:
    try:
        return from_arrow_schema(_only_with_ids(file_schema), format_version=3)
    except SchemaError:
        return None


def _only_with_ids(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f for f in schema if field_id(f) is not None])


def _row_group_starts(fragment: ds.ParquetFileFragment) -> list[int]:
    md = fragment.metadata
    starts = []
    total = 0
    for i in range(md.num_row_groups):
        starts.append(total)
        total += md.row_group(i).num_rows
    return starts


def _row_groups(
    fragment: ds.ParquetFileFragment,
    expr: BooleanExpression,
    file_schema: pa.Schema,
    constants: Mapping[int, Any],
) -> list[int]:
    all_groups = list(range(fragment.metadata.num_row_groups))
    if expr is ALWAYS_TRUE:
        return all_groups
    pushed = _file_filter(expr, file_schema, constants)
    if pushed is ALWAYS_FALSE:
        return []
    if pushed is ALWAYS_TRUE:
        return all_groups
    try:
        return [rg.id for rg in fragment.subset(filter=to_arrow_expression(pushed)).row_groups]
    except (pa.ArrowException, NeveError):
        # statistics pruning is an optimisation; the exact filter still runs on rows
        return all_groups


def read_data_file(
    io: FileIO,
    data_file: DataFile,
    projected_schema: Schema,
    *,
    table_schema: Schema | None = None,
    spec: PartitionSpec | None = None,
    row_filter: BooleanExpression | None = None,
    delete_files: Sequence[DataFile] = (),
    name_mapping: NameMapping | None = None,
    cache: DeleteCache | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> pa.Table:
    """The live rows of a data file that match ``row_filter``, as a table with the
    Arrow schema of ``projected_schema``.

    ``table_schema`` (default: ``projected_schema``) is the schema ``row_filter`` is
    bound to; ``spec`` is the data file's partition spec (for identity partition
    values); ``delete_files`` are the deletes the planner found for this file (a
    deletion vector, if present, replaces the position delete files).
    """
    batches = list(
        iter_data_file_batches(
            io,
            data_file,
            projected_schema,
            table_schema=table_schema,
            spec=spec,
            row_filter=row_filter,
            delete_files=delete_files,
            name_mapping=name_mapping,
            cache=cache,
            batch_size=batch_size,
        )
    )
    return pa.Table.from_batches(batches, schema=to_arrow_schema(projected_schema))
