"""The pyarrow write path of the table layer: write rows as data files of a table's
current schema and spec, and rewrite files without the rows a filter matches
(copy-on-write deletes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pyarrow as pa

from neve.actions.base import TableState
from neve.arrow.expression import delete_filter
from neve.arrow.reader import DeleteCache, read_data_file
from neve.arrow.schema import parse_name_mapping
from neve.arrow.writer import delete_written_files, write_data_files
from neve.errors import CommitConflictError
from neve.expressions import BooleanExpression
from neve.io.locations import LocationProvider
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile
from neve.spec.schema import Schema, with_row_lineage
from neve.spec.table_metadata import TableMetadata

__all__ = ["rewrite_schema", "rewrite_tasks", "rewrite_without", "write_table_files"]


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


def rewrite_tasks(
    table: TableState, snapshot_id: int, files: Sequence[DataFile]
) -> list[FileScanTask]:
    """One task per data file of ``files`` covering the whole file, with the deletes
    that apply to it at ``snapshot_id``.

    Planning splits large files into several tasks; a rewrite copies each file's rows
    once, so the splits of a file are merged back into one task (and a file given twice
    is rewritten once). A file that is not live at the snapshot raises
    :class:`CommitConflictError`."""
    wanted = {f.file_path for f in files}
    found: dict[str, FileScanTask] = {}
    for t in ScanPlan(table.metadata, table.io, snapshot_id=snapshot_id).plan_files():
        path = t.file.file_path
        if path in wanted and path not in found:
            found[path] = replace(t, start=0, length=t.file.file_size_in_bytes)
    missing = wanted - found.keys()
    if missing:
        raise CommitConflictError(
            f"data file {sorted(missing)[0]} is not in snapshot {snapshot_id} any more "
            f"({len(missing)} file(s) to rewrite are gone); reload the table and retry"
        )
    return [found[f.file_path] for f in _unique(files)]


def rewrite_without(
    table: TableState,
    snapshot_id: int,
    files: Sequence[DataFile],
    expr: BooleanExpression,
    case_sensitive: bool,
) -> list[DataFile]:
    """New data files holding the live rows of ``files`` that ``expr`` does not match.

    Each file is read once, whole, with the deletes that apply to it at
    ``snapshot_id`` (so rows deleted by merge-on-read deletes stay deleted) and with
    the current schema; in v3 the copied rows keep their row lineage."""
    md = table.metadata
    schema = md.schema()
    rows_schema = rewrite_schema(md)
    tasks = rewrite_tasks(table, snapshot_id, files)
    keep_expr = delete_filter(expr, schema, case_sensitive)
    mapping_text = md.properties.get("schema.name-mapping.default")
    mapping = parse_name_mapping(mapping_text) if mapping_text else None
    cache = DeleteCache()
    written: list[DataFile] = []
    try:
        for task in tasks:
            rows = read_data_file(
                table.io,
                task.file,
                rows_schema,
                table_schema=schema,
                spec=md.spec_by_id(task.spec_id),
                delete_files=task.delete_files,
                name_mapping=mapping,
                cache=cache,
                data_sequence_number=task.data_sequence_number,
            )
            keep = rows.filter(keep_expr)
            if keep.num_rows:
                written += write_table_files(table, keep, schema=rows_schema)
    except BaseException:
        delete_written_files(table.io, written)
        raise
    return written


def _unique(files: Sequence[DataFile]) -> list[DataFile]:
    seen: dict[str, DataFile] = {}
    for f in files:
        seen.setdefault(f.file_path, f)
    return list(seen.values())
