"""The pyarrow write path of the table layer: write rows as data files of a table's
current schema and spec, rewrite files without the rows a filter matches
(copy-on-write deletes), and compact groups of files (keeping where every row went)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from pyroaring import BitMap64

from neve.actions.base import TableState
from neve.arrow.expression import delete_filter
from neve.arrow.partitioning import partition_table
from neve.arrow.positions import read_task
from neve.arrow.reader import DeleteCache
from neve.arrow.sorting import sort_indices
from neve.arrow.writer import delete_written_files, write_data_files
from neve.expressions import BooleanExpression
from neve.io.locations import LocationProvider
from neve.planning.compaction import ZOrder
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile
from neve.spec.schema import ROW_POSITION, Schema, with_row_lineage
from neve.spec.sort_order import SortOrder
from neve.spec.table_metadata import TableMetadata

__all__ = [
    "CompactedFiles",
    "RowOrigins",
    "compact_groups",
    "compact_with_origins",
    "rewrite_schema",
    "rewrite_without",
    "write_table_files",
]


def write_table_files(
    table: TableState, data: pa.Table, *, schema: Schema | None = None
) -> list[DataFile]:
    """Write ``data`` (columns matched to the table's by name) under the table's
    location, partitioned by its default spec. ``schema`` (default: the table's)
    is the schema the files are written with."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    md = table.metadata
    return write_data_files(
        table.io,
        schema if schema is not None else md.schema(),
        md.spec(),
        data,
        LocationProvider(md.location, md.properties),
        md.properties,
        sort_order_id=md.default_sort_order_id or None,
    )


def rewrite_schema(md: TableMetadata) -> Schema:
    """The schema rows are read and written with when a rewrite copies them to new
    files: the current schema, and in v3 the row lineage columns, so that copied rows
    keep their ``_row_id`` and ``_last_updated_sequence_number`` (spec "Row Lineage":
    a row moved to another file unchanged keeps both)."""
    schema = md.schema()
    return with_row_lineage(schema) if md.format_version >= 3 else schema


def _live_rows(table: TableState) -> Callable[[FileScanTask], pa.Table]:
    """A reader of a whole-file task's live rows as a rewrite copies them: with the
    deletes planning attached, the current schema, and in v3 the row lineage columns."""
    rows_schema = rewrite_schema(table.metadata)
    cache = DeleteCache()
    return lambda task: read_task(table, task, rows_schema, cache=cache)


def rewrite_without(
    table: TableState,
    tasks: Sequence[FileScanTask],
    expr: BooleanExpression,
    case_sensitive: bool,
) -> list[DataFile]:
    """New data files holding the live rows of the planned ``tasks`` (one whole-file
    task per data file, :func:`neve.planning.delete.plan_delete`) that ``expr`` does
    not match. Each file is read once, with the deletes planning attached to it (so
    rows deleted by merge-on-read deletes stay deleted) and with the current schema; in
    v3 the copied rows keep their row lineage."""
    md = table.metadata
    keep_expr = delete_filter(expr, md.schema(), case_sensitive)
    read = _live_rows(table)
    written: list[DataFile] = []
    try:
        for task in tasks:
            keep = read(task).filter(keep_expr)
            if keep.num_rows:
                written += write_table_files(table, keep, schema=rewrite_schema(md))
    except BaseException:
        delete_written_files(table.io, written)
        raise
    return written


_Ints32 = npt.NDArray[np.int32]
_Ints64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class RowOrigins:
    """Where the rows of one written file came from, run-length encoded: run ``i`` is
    ``count[i]`` rows copied in order from source ``source[i]`` (an index into a list
    of source files), starting at position ``first[i]`` there. A bin-packed file has
    about one run per source file, a sorted one more; rows a reader dropped (deleted
    already) are in no run."""

    source: _Ints32
    first: _Ints64
    count: _Ints64

    @staticmethod
    def of(source: npt.ArrayLike, position: npt.ArrayLike) -> RowOrigins:
        """The runs of rows given one by one: ``source[k]``, ``position[k]`` for row k."""
        src = np.asarray(source, dtype=np.int32)
        pos = np.asarray(position, dtype=np.int64)
        n = len(src)
        if n == 0:
            return _NO_ORIGINS
        starts = np.ones(n, dtype=bool)
        starts[1:] = (src[1:] != src[:-1]) | (pos[1:] != pos[:-1] + 1)
        at = np.flatnonzero(starts)
        return RowOrigins(src[at], pos[at], np.diff(np.append(at, n)).astype(np.int64))

    @staticmethod
    def concat(parts: Sequence[RowOrigins]) -> RowOrigins:
        """The runs of ``parts``' rows one after the other (a run that goes on across
        two parts becomes one)."""
        if not parts:
            return _NO_ORIGINS
        src = np.concatenate([p.source for p in parts])
        first = np.concatenate([p.first for p in parts])
        count = np.concatenate([p.count for p in parts])
        if len(src) < 2:
            return RowOrigins(src, first, count)
        starts = np.ones(len(src), dtype=bool)
        starts[1:] = (src[1:] != src[:-1]) | (first[1:] != first[:-1] + count[:-1])
        at = np.flatnonzero(starts)
        return RowOrigins(src[at], first[at], np.add.reduceat(count, at).astype(np.int64))

    @property
    def rows(self) -> int:
        """How many rows the runs cover."""
        return int(self.count.sum())

    def expand(self) -> tuple[_Ints32, _Ints64]:
        """Each row's source and position, row by row (the inverse of :meth:`of`)."""
        src = np.repeat(self.source, self.count)
        offsets = np.repeat(np.cumsum(self.count) - self.count, self.count)
        pos = np.repeat(self.first, self.count) + (np.arange(self.rows) - offsets)
        return src, pos.astype(np.int64)

    def rows_at(self, marked: Mapping[int, _Ints64]) -> _Ints64:
        """The rows (positions in the written file, ascending) copied from the source
        positions ``marked`` (source index -> sorted positions there)."""
        offsets = np.cumsum(self.count) - self.count
        found: list[_Ints64] = []
        for source, positions in marked.items():
            runs = np.flatnonzero(self.source == source)
            if not len(runs) or not len(positions):
                continue
            lo = np.searchsorted(positions, self.first[runs], side="left")
            hi = np.searchsorted(positions, self.first[runs] + self.count[runs], side="left")
            hits = hi - lo
            keep = hits > 0
            runs, lo, hits = runs[keep], lo[keep], hits[keep]
            if not len(runs):
                continue
            run_of = np.repeat(np.arange(len(runs)), hits)
            within = np.arange(int(hits.sum())) - np.repeat(np.cumsum(hits) - hits, hits)
            at = positions[lo[run_of] + within]
            found.append(offsets[runs][run_of] + (at - self.first[runs][run_of]))
        if not found:
            return np.zeros(0, dtype=np.int64)
        return np.sort(np.concatenate(found)).astype(np.int64)


_NO_ORIGINS = RowOrigins(
    np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
)


@dataclass
class CompactedFiles:
    """The files a compaction wrote, and where each of their rows came from:
    ``origins[path]`` tells, per row of the written file in order, the index of its
    source data file in ``sources`` and its position there (:class:`RowOrigins`). With
    it a delete that a concurrent commit added to a source file is carried to the
    written files (:meth:`map_positions`). Either engine builds one: the pyarrow one
    here, the Spark one from its executors' runs."""

    files: list[DataFile] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    origins: dict[str, RowOrigins] = field(default_factory=dict)

    def map_positions(self, deleted: Mapping[str, BitMap64]) -> dict[str, BitMap64]:
        """The positions in the written files of the rows at ``deleted`` (source data
        file path -> positions); rows the compaction did not copy map to nothing."""
        index = {p: i for i, p in enumerate(self.sources)}
        wanted = {
            index[p]: np.array(bits.to_array(), dtype=np.int64)
            for p, bits in deleted.items()
            if p in index and bits
        }
        out: dict[str, BitMap64] = {}
        if not wanted:
            return out
        for path, origins in self.origins.items():
            hit = origins.rows_at(wanted)
            if len(hit):
                out[path] = BitMap64(hit.tolist())
        return out


def _sort_order_id(md: TableMetadata, sort: SortOrder | ZOrder | None) -> int | None:
    """The sort order id written files record: the table order they are sorted by
    (bin-packed files keep recording the default order, as before)."""
    if sort is None:
        return md.default_sort_order_id or None
    if isinstance(sort, SortOrder):
        for order in md.sort_orders:
            if order.fields == sort.fields and order.order_id:
                return order.order_id
    return None


_SOURCE = "__neve_source"


def compact_with_origins(
    table: TableState,
    groups: Sequence[Sequence[FileScanTask]],
    target_size: int,
    sort: SortOrder | ZOrder | None = None,
    on_group: Callable[[int], None] | None = None,
) -> CompactedFiles:
    """New data files holding the live rows of each group of whole-file tasks, written
    together (partitioned by the current spec, ``target_size`` bytes per file; with
    ``sort``, the rows of each group in that order); in v3 the rows keep their row
    lineage. Records where each row came from. ``on_group(rows)`` is called after each
    group. Nothing is left behind when writing fails."""
    md = table.metadata
    rows_schema = rewrite_schema(md)
    read_schema = Schema(*rows_schema.fields, ROW_POSITION)
    properties = {**md.properties, "write.target-file-size-bytes": str(target_size)}
    cache = DeleteCache()
    spec = md.spec()
    order_id = _sort_order_id(md, sort)
    out = CompactedFiles()
    try:
        for group in groups:
            parts = []
            for task in group:
                rows = read_task(table, task, read_schema, cache=cache)
                source = np.full(rows.num_rows, len(out.sources), dtype=np.int32)
                out.sources.append(task.file.file_path)
                parts.append(rows.append_column(_SOURCE, pa.array(source)))
            rows = pa.concat_tables(parts) if parts else None
            if rows is None or not rows.num_rows:
                continue
            for part in partition_table(rows, rows_schema, spec):
                data = part.table
                if sort is not None:
                    data = data.take(sort_indices(data, rows_schema, sort))
                src = data.column(_SOURCE).to_numpy().astype(np.int32)
                pos = data.column(ROW_POSITION.name).to_numpy().astype(np.int64)
                files = write_data_files(
                    table.io,
                    rows_schema,
                    spec,
                    data.drop_columns([_SOURCE, ROW_POSITION.name]),
                    LocationProvider(md.location, md.properties),
                    properties,
                    sort_order_id=order_id,
                )
                start = 0
                for f in files:
                    end = start + f.record_count
                    out.origins[f.file_path] = RowOrigins.of(src[start:end], pos[start:end])
                    start = end
                out.files += files
            if on_group is not None:
                on_group(rows.num_rows)
    except BaseException:
        delete_written_files(table.io, out.files)
        raise
    return out


def compact_groups(
    table: TableState,
    groups: Sequence[Sequence[FileScanTask]],
    target_size: int,
    sort: SortOrder | ZOrder | None = None,
) -> list[DataFile]:
    """New data files holding the live rows of each group of whole-file tasks
    (:func:`compact_with_origins` without the row origins)."""
    return compact_with_origins(table, groups, target_size, sort).files
