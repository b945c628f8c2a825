"""The pyarrow write path of the table layer: write rows as data files of a table's
current schema and spec, and rewrite files without the rows a filter matches
(copy-on-write deletes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa

from neve.actions.base import TableState
from neve.arrow.expression import delete_filter
from neve.arrow.positions import read_task
from neve.arrow.reader import DeleteCache
from neve.arrow.writer import delete_written_files, write_data_files
from neve.expressions import BooleanExpression
from neve.io.locations import LocationProvider
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile
from neve.spec.schema import Schema, with_row_lineage
from neve.spec.table_metadata import TableMetadata

__all__ = ["rewrite_schema", "rewrite_without", "write_table_files"]


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


def compact_groups(
    table: TableState, groups: Sequence[Sequence[FileScanTask]], target_size: int
) -> list[DataFile]:
    """New data files holding the live rows of each group of whole-file tasks, written
    together (partitioned by the current spec, ``target_size`` bytes per file); in v3
    the rows keep their row lineage. Nothing is left behind when writing fails."""
    md = table.metadata
    rows_schema = rewrite_schema(md)
    properties = {**md.properties, "write.target-file-size-bytes": str(target_size)}
    read = _live_rows(table)
    written: list[DataFile] = []
    try:
        for group in groups:
            parts = [read(task) for task in group]
            rows = pa.concat_tables(parts) if parts else None
            if rows is not None and rows.num_rows:
                written += write_data_files(
                    table.io,
                    rows_schema,
                    md.spec(),
                    rows,
                    LocationProvider(md.location, md.properties),
                    properties,
                    sort_order_id=md.default_sort_order_id or None,
                )
    except BaseException:
        delete_written_files(table.io, written)
        raise
    return written
