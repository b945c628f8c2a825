"""Read Iceberg data files into Arrow, projected to a schema by field id.

Columns are matched by field id, never by name (spec "Column Projection"): renamed
columns are found, dropped ones vanish, added ones read as their ``initial_default``
or null, promoted types are widened, and columns missing from the file that are
identity partition sources take the file's partition value. Files written without
field ids are read through the table's name mapping.

The row filter prunes row groups by their statistics (Iceberg rules, row_groups) and is then
applied exactly to the rows. Deletes are applied before the filter: position deletes
and deletion vectors by file-global row position, equality deletes by value. The v3
row lineage columns, when projected, take the values stored in the file, else inherit
them (spec "Row Lineage").
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
from pyroaring import BitMap64

from neve.arrow.deletes import (
    apply_positions,
    equality_keep_mask,
    read_deletion_vector,
    read_position_deletes,
)
from neve.arrow.expression import to_arrow_expression
from neve.arrow.fragments import open_fragment, row_group_batches
from neve.arrow.metrics import row_group_offsets
from neve.arrow.page_filter import page_skipper
from neve.arrow.pages import finish_rows, live_rows_at
from neve.arrow.projection import (
    column_at,
    leaf_field,
    merge_fields,
    project_array,
    project_batch,
    prune_fields,
    struct_path,
)
from neve.arrow.row_groups import matching_row_groups
from neve.arrow.schema import (
    NameMapping,
    apply_name_mapping,
    field_id,
    from_arrow_schema,
    has_field_ids,
    to_arrow_field,
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
from neve.spec.schema import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, ROW_POSITION, Schema
from neve.spec.transforms import IdentityTransform
from neve.spec.types import STRING, NestedField

__all__ = [
    "DeleteCache",
    "deleted_positions",
    "identity_partition_constants",
    "iter_data_file_batches",
    "read_data_file",
    "read_workers",
]

DEFAULT_BATCH_SIZE = 131_072


def read_workers() -> int:
    """How many data files one process reads at once (threads: pyarrow and polars
    release the GIL while decoding): twice the cores, at most 16."""
    return min(16, (os.cpu_count() or 2) * 2)


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
    path = struct_path(file_schema, ref.field_id)
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
    equality delete rows by delete file. Share one cache across the files of a scan,
    also across threads."""

    positions: dict[str, dict[str, BitMap64]] = field(default_factory=dict)
    equality: dict[str, pa.Table] = field(default_factory=dict)
    # readers in threads share a cache: each delete file is loaded once
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


def deleted_positions(
    io: FileIO, data_file: DataFile, delete_files: Sequence[DataFile], cache: DeleteCache
) -> BitMap64 | None:
    """The positions of ``data_file`` that ``delete_files`` delete (a deletion vector,
    when there is one, replaces the position delete files); None when none do."""
    dvs = [
        d
        for d in delete_files
        if d.file_format is FileFormat.PUFFIN
        and d.referenced_data_file in (None, data_file.file_path)
    ]
    result: BitMap64 | None = None
    if dvs:  # a deletion vector replaces every position delete file of its data file
        for dv in dvs:
            bits = read_deletion_vector(io, dv)
            result = bits if result is None else result | bits
        return result
    for d in delete_files:
        if d.content is not DataFileContent.POSITION_DELETES:
            continue
        with cache.lock:
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
        with cache.lock:
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
    paths = {t.field_id: struct_path(file_schema, t.field_id) for t in targets}
    top = sorted({p[0] for p in paths.values() if p is not None})
    try:
        table = fragment.to_table(columns=top)
    except (OSError, pa.ArrowException) as exc:
        raise NeveIOError(f"cannot read equality delete file {path}: {exc}") from exc
    arrays = []
    for t in targets:
        p = paths[t.field_id]
        if p is None:
            arrays.append(pa.nulls(table.num_rows, to_arrow_type(t.field_type)))
            continue
        col = column_at(table, p)
        leaf = leaf_field(file_schema, p)
        chunks = [project_array(c, leaf, t, {}) for c in col.chunks]
        arrays.append(pa.chunked_array(chunks, type=to_arrow_type(t.field_type)))
    return pa.table(arrays, names=[t.name for t in targets])


def _key_table(
    batch: pa.RecordBatch,
    schema: Schema,
    ids: Sequence[int],
    dropped: Mapping[int, pa.Array],
) -> pa.Table:
    """The equality columns of ``batch`` named k0..kn; columns dropped from the table
    come from ``dropped`` (read from the data file by id)."""
    arrays = [
        dropped[fid] if fid in dropped else column_at(batch, _names_to(schema, fid)) for fid in ids
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
    io: FileIO, path: str, mapping: NameMapping | None, size: int | None = None
) -> tuple[ds.ParquetFileFragment, pa.Schema]:
    try:
        fragment, file_schema = open_fragment(io, path, size)
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
    split: tuple[int, int] | None = None,
    data_sequence_number: int | None = None,
    filter_rows: bool = True,
    only_positions: BitMap64 | None = None,
) -> Iterator[pa.RecordBatch]:
    """Batches of a data file's live rows matching ``row_filter``, with the Arrow
    schema of ``projected_schema`` (see :func:`read_data_file`).

    ``split = (start, length)`` reads only the row groups that start in that byte
    range, so splits of a file at its ``split_offsets`` read each row exactly once.
    ``filter_rows=False`` uses ``row_filter`` only to skip row groups, for callers
    that match the rows themselves. ``only_positions`` reads just the rows at those
    file positions (and the row groups holding them): a changelog reads the rows a new
    deletion vector marks this way.
    """
    table_schema = table_schema or projected_schema
    cache = cache or DeleteCache()
    constants = identity_partition_constants(spec, data_file.partition)
    expr = rewrite_not(row_filter) if row_filter is not None else ALWAYS_TRUE
    if expr is ALWAYS_FALSE:
        return

    fragment, file_schema = _open(
        io, data_file.file_path, name_mapping, data_file.file_size_in_bytes
    )
    key_fields = _key_fields(table_schema, file_schema, delete_files)
    equality = _equality_deletes(io, delete_files, key_fields, name_mapping, cache)
    # equality columns the table has dropped still apply; they are read from the file
    dropped = {
        fid: f for fid, f in key_fields.items() if table_schema.find_field_or_none(fid) is None
    }

    # rows are read into projection + filter columns + equality columns, then narrowed
    need = {i for e in equality for i in e.ids}
    if filter_rows:
        need |= {r.field_id for r in references(expr)}
    # the row position column (``_pos``) is not in files: it is added while reading
    with_pos = any(f.field_id == ROW_POSITION.field_id for f in projected_schema.fields)
    stored = [f for f in projected_schema.fields if f.field_id != ROW_POSITION.field_id]
    read_schema = Schema(*merge_fields(stored, prune_fields(table_schema, need)))
    wanted = {f.field_id for f in read_schema.fields} | need
    file_columns = [f.name for f in file_schema if _contains_any(f, wanted)]

    exact = None if expr is ALWAYS_TRUE or not filter_rows else to_arrow_expression(expr)
    lineage = _Lineage.of(read_schema, data_file.first_row_id, data_sequence_number)
    row_groups = _row_groups(fragment, expr, file_schema, constants)
    if split is not None:
        offsets = row_group_offsets(fragment.metadata)
        lo, hi = split[0], split[0] + split[1]
        row_groups = [rg for rg in row_groups if lo <= offsets[rg] < hi]
    deleted = deleted_positions(io, data_file, delete_files, cache) if row_groups else None
    starts = _row_group_starts(fragment)
    if only_positions is not None:
        sizes = [fragment.metadata.row_group(rg).num_rows for rg in range(len(starts))]
        row_groups = [
            rg
            for rg in row_groups
            if only_positions.range_cardinality(starts[rg], starts[rg] + sizes[rg])
        ]
        # rows outside ``only_positions`` are dropped as deleted rows are
        outside = only_positions.flip(0, sum(sizes))
        deleted = outside if deleted is None else deleted | outside

    def finish(live: pa.RecordBatch) -> pa.RecordBatch | None:
        """The projected, filtered rows of ``live`` (raw rows, no deleted row left;
        with their file positions when lineage or ``_pos`` needs them)."""
        batch = project_batch(live, file_schema, read_schema, constants)
        if lineage is not None:
            batch = lineage.fill(batch, live)
        if with_pos:
            batch = batch.append_column(_POS_FIELD, live.column(_POSITION))
        old_keys = _dropped_key_columns(live, file_schema, dropped)
        for e in equality:
            keys = _key_table(batch, table_schema, e.ids, old_keys)
            keep = equality_keep_mask(keys, e.rows, keys.column_names)
            if keep is not None:
                batch = batch.filter(keep)
                old_keys = {k: v.filter(keep) for k, v in old_keys.items()}
        if exact is not None and batch.num_rows:
            batch = batch.filter(exact)
        return project_batch(batch, batch.schema, projected_schema) if batch.num_rows else None

    path = data_file.file_path  # only the pages holding wanted rows, by the page index:
    paged = live_rows_at(io, path, file_schema, file_columns, row_groups, deleted, only_positions)
    if paged is not None:
        yield from finish_rows(paged, _POSITION, finish, path, batch_size)
        return

    if only_positions is not None and len(row_groups) == len(starts):
        # the wanted rows alone, gathered by polars, whose decoder is the faster one;
        # it reads every row group, so only when each holds wanted rows (else pyarrow
        # reads just the row groups that do)
        wanted_rows = BitMap64()
        wanted_rows.add_range(0, sum(sizes))
        if deleted is not None:  # the file's deletes and every row outside only_positions
            wanted_rows -= deleted
        gathered = _gather_positions(
            io, data_file.file_path, file_schema, file_columns, wanted_rows
        )
        if gathered is not None:
            try:
                for live in gathered.to_batches():
                    out = finish(live)
                    if out is not None:
                        yield out
            except NeveError:
                raise
            except (OSError, pa.ArrowException) as exc:
                raise NeveIOError(f"reading {data_file.file_path} failed: {exc}") from exc
            return

    remote = not io.is_local(data_file.file_path)
    pushed = None if expr is ALWAYS_TRUE else _file_filter(expr, file_schema, constants)
    skip = page_skipper(io, path, fragment.metadata, pushed, file_schema)  # by column index
    for rg in row_groups:
        position = starts[rg]
        skipping = skip(rg, position, file_columns, deleted) if skip is not None else None
        if skipping is not None:
            yield from finish_rows(skipping, _POSITION, finish, path, batch_size)
            continue
        try:
            raw_batches = row_group_batches(fragment, rg, file_columns, batch_size, remote)
            for raw in raw_batches:
                n = raw.num_rows
                if with_pos or (lineage is not None and lineage.needs_positions):
                    # file positions ride along through the position deletes
                    raw = raw.append_column(_POSITION, _positions(position, n))
                live = apply_positions(raw, position, deleted)
                position += n
                if live.num_rows == 0:
                    continue
                out = finish(live)
                if out is not None:
                    yield out
        except NeveError:
            raise
        except (OSError, pa.ArrowException) as exc:
            raise NeveIOError(f"reading {data_file.file_path} failed: {exc}") from exc


def _polars_exact(t: pa.DataType) -> bool:
    """Whether polars decodes a file column of type ``t`` to exactly the values pyarrow
    does (after a cast back to ``t``); files with other columns are read by pyarrow."""
    return bool(
        pa.types.is_signed_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_boolean(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_decimal128(t)
        or pa.types.is_date32(t)
    )


def _gather_positions(
    io: FileIO, path: str, file_schema: pa.Schema, columns: list[str], positions: BitMap64
) -> pa.Table | None:
    """The rows of a data file at ``positions`` (columns ``columns``, the types pyarrow
    reads, plus their positions in ``_POSITION``), decoded by polars, which skips
    materialising the other rows. ``None`` when a column's type is not one polars
    decodes exactly (:func:`_polars_exact`) or polars cannot read the file: the caller
    reads it with pyarrow then."""
    types = pa.schema([file_schema.field(c) for c in columns])
    if not all(_polars_exact(f.type) for f in types):
        return None
    wanted = np.frombuffer(positions.to_array(), dtype=np.uint64).astype(np.int64)
    fs, inner = io.filesystem(path)
    try:
        source: Any = inner
        if not isinstance(fs, pafs.LocalFileSystem):  # polars reads the bytes then
            source = io.read_bytes(path)  # in one request on object stores
        frame = (
            pl.scan_parquet(source)
            .select(columns)
            .with_row_index(_POSITION)
            .filter(pl.col(_POSITION).is_in(pl.Series(wanted).implode(), nulls_equal=False))
            .collect()
        )
    except (pl.exceptions.PolarsError, OSError):
        return None
    out = frame.to_arrow()
    if out.num_rows != len(wanted):
        return None  # not the rows asked for: let pyarrow read them
    arrays = [out.column(c).cast(types.field(c).type) for c in columns]
    arrays.append(out.column(_POSITION).cast(pa.int64()))
    return pa.table(arrays, schema=pa.schema([*types, pa.field(_POSITION, pa.int64())]))


#: The column of file positions added to raw batches while lineage is read.
_POSITION = "__neve_file_position"


_POS_FIELD = to_arrow_field(ROW_POSITION)


def _positions(start: int, n: int) -> pa.Array:
    return pa.array(np.arange(start, start + n, dtype=np.int64))


@dataclass(frozen=True)
class _Lineage:
    """Fills the row lineage columns of a read (spec "Row Lineage"): a value stored in
    the file wins; a null is inherited: ``_row_id`` as the file's ``first_row_id`` plus
    the row's position, ``_last_updated_sequence_number`` as the file's data sequence
    number. Without a ``first_row_id`` (rows older than the table's v3 upgrade) or a
    known sequence number, the inherited value is null."""

    row_id: int | None  # column index in the read schema
    sequence_number: int | None
    first_row_id: int | None
    data_sequence_number: int | None

    @staticmethod
    def of(schema: Schema, first_row_id: int | None, data_seq: int | None) -> _Lineage | None:
        index = {f.field_id: i for i, f in enumerate(schema.fields)}
        row_id = index.get(ROW_ID.field_id)
        seq = index.get(LAST_UPDATED_SEQUENCE_NUMBER.field_id)
        if row_id is None and seq is None:
            return None
        return _Lineage(row_id, seq, first_row_id, data_seq)

    @property
    def needs_positions(self) -> bool:
        return self.row_id is not None and self.first_row_id is not None

    def fill(self, batch: pa.RecordBatch, raw: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` with lineage filled in; ``raw`` is the batch it was projected
        from, with the file positions of its rows in column ``_POSITION``."""
        if self.row_id is not None and self.first_row_id is not None:
            inherited = pc.add(raw.column(_POSITION), pa.scalar(self.first_row_id, pa.int64()))
            batch = _coalesce_column(batch, self.row_id, inherited)
        if self.sequence_number is not None and self.data_sequence_number is not None:
            constant = pa.scalar(self.data_sequence_number, pa.int64())
            batch = _coalesce_column(batch, self.sequence_number, constant)
        return batch


def _coalesce_column(
    batch: pa.RecordBatch, i: int, fallback: pa.Array | pa.Scalar
) -> pa.RecordBatch:
    stored = batch.column(i)
    if stored.null_count == 0:
        return batch
    filled = fallback if stored.null_count == len(stored) else pc.coalesce(stored, fallback)
    if isinstance(filled, pa.Scalar):
        filled = pa.array(np.full(len(stored), filled.as_py(), dtype=np.int64))
    return batch.set_column(i, batch.schema.field(i), filled.cast(stored.type))


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
        path = struct_path(file_schema, fid)
        if path is None:
            out[fid] = pa.nulls(batch.num_rows, to_arrow_type(f.field_type))
        else:
            col = column_at(batch, path)
            out[fid] = project_array(col, leaf_field(file_schema, path), f, {})
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
    # Iceberg's metrics rules on each row group's statistics, not pyarrow's: Parquet
    # statistics leave NaN out, and pyarrow would drop the NaN rows (issue 9)
    return matching_row_groups(fragment.metadata, file_schema, pushed)


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
    split: tuple[int, int] | None = None,
    data_sequence_number: int | None = None,
    filter_rows: bool = True,
    only_positions: BitMap64 | None = None,
) -> pa.Table:
    """The live rows of a data file that match ``row_filter``, as a table with the
    Arrow schema of ``projected_schema``.

    ``table_schema`` (default: ``projected_schema``) is the schema ``row_filter`` is
    bound to; ``spec`` is the data file's partition spec (for identity partition
    values); ``delete_files`` are the deletes the planner found for this file (a
    deletion vector, if present, replaces the position delete files); ``split``
    limits the read to a byte range of row groups (see :func:`iter_data_file_batches`).
    The row lineage columns (:data:`~neve.spec.schema.ROW_ID`,
    :data:`~neve.spec.schema.LAST_UPDATED_SEQUENCE_NUMBER`), when projected, take the
    values stored in the file or else inherit them from the file's ``first_row_id``
    and ``data_sequence_number``.
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
            split=split,
            data_sequence_number=data_sequence_number,
            filter_rows=filter_rows,
            only_positions=only_positions,
        )
    )
    return pa.Table.from_batches(batches, schema=to_arrow_schema(projected_schema))
