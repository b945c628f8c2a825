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
from neve.arrow.fragments import open_fragment, row_group_batches
from neve.arrow.gather import gather_positions
from neve.arrow.lineage import POSITION_COLUMN, RowLineage
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
from neve.spec.schema import ROW_POSITION, Schema
from neve.spec.transforms import IdentityTransform
from neve.spec.types import STRING, NestedField

__all__ = [
    "DeleteCache",
    "FileRead",
    "deleted_positions",
    "file_read",
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
    #: for random access (arrow/take.py), which reads rows of the same files again and
    #: again: keep each data file's opened footer and deletion vectors too, and read the
    #: pages holding the rows asked for even where they are most of a file
    random_access: bool = False
    footers: dict[str, tuple[ds.ParquetFileFragment, pa.Schema]] = field(default_factory=dict)
    vectors: dict[tuple[str, int | None], BitMap64] = field(default_factory=dict)
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
            bits = cache.vectors.get((dv.file_path, dv.content_offset))
            if bits is None:
                bits = read_deletion_vector(io, dv)
                if cache.random_access:
                    with cache.lock:
                        cache.vectors[(dv.file_path, dv.content_offset)] = bits
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


@dataclass
class FileRead:
    """What reading one data file needs once its footer is known: the columns to read,
    how raw rows become projected rows (:meth:`finish`), and which rows are gone."""

    data_file: DataFile
    fragment: ds.ParquetFileFragment
    file_schema: pa.Schema
    projected_schema: Schema
    table_schema: Schema
    read_schema: Schema
    file_columns: list[str]
    constants: dict[int, Any]
    equality: list[_EqualityDelete]
    dropped: dict[int, NestedField]
    exact: pc.Expression | None
    lineage: RowLineage | None
    with_pos: bool

    def finish(self, live: pa.RecordBatch) -> pa.RecordBatch | None:
        """The projected, filtered rows of ``live`` (raw rows, no deleted row left;
        with their file positions when lineage or ``_pos`` needs them)."""
        batch = project_batch(live, self.file_schema, self.read_schema, self.constants)
        if self.lineage is not None:
            batch = self.lineage.fill(batch, live)
        if self.with_pos:
            batch = batch.append_column(_POS_FIELD, live.column(_POSITION))
        old_keys = _dropped_key_columns(live, self.file_schema, self.dropped)
        for e in self.equality:
            keys = _key_table(batch, self.table_schema, e.ids, old_keys)
            keep = equality_keep_mask(keys, e.rows, keys.column_names)
            if keep is not None:
                batch = batch.filter(keep)
                old_keys = {k: v.filter(keep) for k, v in old_keys.items()}
        if self.exact is not None and batch.num_rows:
            batch = batch.filter(self.exact)
        if not batch.num_rows:
            return None
        if batch.schema.equals(to_arrow_schema(self.projected_schema), check_metadata=True):
            return batch  # already the projection (a take: its columns, then _pos)
        return project_batch(batch, batch.schema, self.projected_schema)

    def row_group_batches(
        self,
        io: FileIO,
        expr: BooleanExpression,
        row_groups: Sequence[int],
        deleted: BitMap64 | None,
        batch_size: int,
    ) -> Iterator[pa.RecordBatch]:
        """The live rows of ``row_groups`` (pages skipped by the column index where the
        file has one), finished."""
        path = self.data_file.file_path
        starts = _row_group_starts(self.fragment)
        remote = not io.is_local(path)
        pushed = (
            None if expr is ALWAYS_TRUE else _file_filter(expr, self.file_schema, self.constants)
        )
        skip = page_skipper(io, path, self.fragment.metadata, pushed, self.file_schema)
        positions = self.with_pos or (self.lineage is not None and self.lineage.needs_positions)
        for rg in row_groups:
            position = starts[rg]
            skipping = skip(rg, position, self.file_columns, deleted) if skip is not None else None
            if skipping is not None:
                yield from finish_rows(skipping, _POSITION, self.finish, path, batch_size)
                continue
            try:
                for raw in row_group_batches(
                    self.fragment, rg, self.file_columns, batch_size, remote
                ):
                    n = raw.num_rows
                    if positions:  # file positions ride along through the position deletes
                        raw = raw.append_column(_POSITION, _positions(position, n))
                    live = apply_positions(raw, position, deleted)
                    position += n
                    out = self.finish(live) if live.num_rows else None
                    if out is not None:
                        yield out
            except NeveError:
                raise
            except (OSError, pa.ArrowException) as exc:
                raise NeveIOError(f"reading {path} failed: {exc}") from exc


def file_read(
    io: FileIO,
    data_file: DataFile,
    projected_schema: Schema,
    table_schema: Schema,
    expr: BooleanExpression,
    constants: dict[int, Any],
    delete_files: Sequence[DataFile],
    name_mapping: NameMapping | None,
    cache: DeleteCache,
    data_sequence_number: int | None,
    filter_rows: bool,
) -> FileRead:
    path = data_file.file_path
    opened = cache.footers.get(path)
    if opened is None:
        opened = _open(io, path, name_mapping, data_file.file_size_in_bytes)
        if cache.random_access:
            with cache.lock:
                cache.footers[path] = opened
    fragment, file_schema = opened
    key_fields = _key_fields(table_schema, file_schema, delete_files)
    equality = _equality_deletes(io, delete_files, key_fields, name_mapping, cache)
    # rows are read into projection + filter columns + equality columns, then narrowed
    need = {i for e in equality for i in e.ids}
    if filter_rows:
        need |= {r.field_id for r in references(expr)}
    # the row position column (``_pos``) is not in files: it is added while reading
    stored = [f for f in projected_schema.fields if f.field_id != ROW_POSITION.field_id]
    read_schema = Schema(*merge_fields(stored, prune_fields(table_schema, need)))
    wanted = {f.field_id for f in read_schema.fields} | need
    return FileRead(
        data_file=data_file,
        fragment=fragment,
        file_schema=file_schema,
        projected_schema=projected_schema,
        table_schema=table_schema,
        read_schema=read_schema,
        file_columns=[f.name for f in file_schema if _contains_any(f, wanted)],
        constants=constants,
        equality=equality,
        # equality columns the table has dropped still apply; they are read from the file
        dropped={
            fid: f for fid, f in key_fields.items() if table_schema.find_field_or_none(fid) is None
        },
        exact=None if expr is ALWAYS_TRUE or not filter_rows else to_arrow_expression(expr),
        lineage=RowLineage.of(read_schema, data_file.first_row_id, data_sequence_number),
        with_pos=any(f.field_id == ROW_POSITION.field_id for f in projected_schema.fields),
    )


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
    read = file_read(
        io,
        data_file,
        projected_schema,
        table_schema,
        expr,
        constants,
        delete_files,
        name_mapping,
        cache,
        data_sequence_number,
        filter_rows,
    )
    fragment = read.fragment
    row_groups = _row_groups(fragment, expr, read.file_schema, constants)
    if split is not None:
        offsets = row_group_offsets(fragment.metadata)
        lo, hi = split[0], split[0] + split[1]
        row_groups = [rg for rg in row_groups if lo <= offsets[rg] < hi]
    deleted = deleted_positions(io, data_file, delete_files, cache) if row_groups else None
    starts = _row_group_starts(fragment)
    sizes = [fragment.metadata.row_group(rg).num_rows for rg in range(len(starts))]
    if only_positions is not None:
        row_groups = [
            rg
            for rg in row_groups
            if only_positions.range_cardinality(starts[rg], starts[rg] + sizes[rg])
        ]
        # rows outside ``only_positions`` are dropped as deleted rows are
        outside = only_positions.flip(0, sum(sizes))
        deleted = outside if deleted is None else deleted | outside

    path = data_file.file_path  # only the pages holding wanted rows, by the page index:
    paged = live_rows_at(
        io,
        path,
        read.file_schema,
        read.file_columns,
        row_groups,
        deleted,
        only_positions,
        random_access=cache.random_access,
    )
    if paged is not None:
        yield from finish_rows(paged, _POSITION, read.finish, path, batch_size)
        return
    if only_positions is not None and len(row_groups) == len(starts):
        # the wanted rows alone, gathered by polars, whose decoder is the faster one;
        # it reads every row group, so only when each holds wanted rows (else pyarrow
        # reads just the row groups that do)
        wanted_rows = BitMap64()
        wanted_rows.add_range(0, sum(sizes))
        if deleted is not None:  # the file's deletes and every row outside only_positions
            wanted_rows -= deleted
        gathered = gather_positions(io, path, read.file_schema, read.file_columns, wanted_rows)
        if gathered is not None:
            try:
                for live in gathered.to_batches():
                    out = read.finish(live)
                    if out is not None:
                        yield out
            except NeveError:
                raise
            except (OSError, pa.ArrowException) as exc:
                raise NeveIOError(f"reading {path} failed: {exc}") from exc
            return
    yield from read.row_group_batches(io, expr, row_groups, deleted, batch_size)


#: The column of file positions added to raw batches (lineage, deletes, ``_pos``).
_POSITION = POSITION_COLUMN


_POS_FIELD = to_arrow_field(ROW_POSITION)


def _positions(start: int, n: int) -> pa.Array:
    return pa.array(np.arange(start, start + n, dtype=np.int64))


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
