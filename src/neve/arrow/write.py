"""The pyarrow write path of the table layer: write rows as data files of a table's
current schema and spec, rewrite files without the rows a filter matches
(copy-on-write deletes), and compact groups of files (keeping where every row went)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from neve.actions.base import TableState
from neve.arrow.expression import delete_filter
from neve.arrow.partitioning import partition_table
from neve.arrow.positions import read_task
from neve.arrow.reader import DeleteCache
from neve.arrow.sorting import sort_indices
from neve.arrow.writer import delete_written_files, write_data_files
from neve.engine.origins import CompactedFiles, RowOrigins
from neve.expressions import BooleanExpression
from neve.io.locations import LocationProvider
from neve.planning.compaction import ZOrder
from neve.planning.delete import rewrite_schema
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile
from neve.spec.schema import ROW_POSITION, Schema
from neve.spec.sort_order import SortOrder
from neve.spec.table_metadata import TableMetadata

__all__ = [
    "compact_groups",
    "compact_with_origins",
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
