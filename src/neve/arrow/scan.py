"""Reading planned scan tasks with pyarrow: tasks in parallel, each projected to the
scan's schema by field id, with its residual filter and deletes applied.

A task is a byte range of a data file (the planner splits large files at their
``split_offsets``); the reader reads the row groups that start in that range, and
counts row positions from the start of the file, so position deletes and deletion
vectors apply to each split as they do to the whole file. The splits of a file read
each row exactly once."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pyarrow as pa

from neve.arrow.reader import DeleteCache, iter_data_file_batches, read_data_file, read_workers
from neve.arrow.schema import NameMapping, parse_name_mapping, to_arrow_schema
from neve.expressions.binding import bind
from neve.planning.tasks import FileScanTask
from neve.spec.schema import Schema

if TYPE_CHECKING:
    from neve.planning.scan import ScanPlan

__all__ = ["scan_batches", "scan_to_table", "task_batches"]


def _mapping(scan: ScanPlan) -> NameMapping | None:
    text = scan.metadata.properties.get("schema.name-mapping.default")
    return parse_name_mapping(text) if text else None


def _split(task: FileScanTask) -> tuple[int, int] | None:
    """The task's byte range, or None when it is the whole file."""
    if task.start == 0 and task.length >= task.file.file_size_in_bytes:
        return None
    return (task.start, task.length)


def _read(
    scan: ScanPlan, task: FileScanTask, cache: DeleteCache, mapping: NameMapping | None
) -> pa.Table:
    schema = scan.table_schema
    return read_data_file(
        scan.io,
        task.file,
        scan.projected_schema(),
        table_schema=schema,
        spec=scan.metadata.spec_by_id(task.spec_id),
        row_filter=bind(schema, task.residual, scan.case_sensitive),
        delete_files=task.delete_files,
        name_mapping=mapping,
        cache=cache,
        split=_split(task),
        data_sequence_number=task.data_sequence_number,
    )


def _concat(parts: Sequence[pa.Table], schema: pa.Schema) -> pa.Table:
    if not len(schema):
        # concat_tables and cast lose the row count of tables without columns
        return pa.Table.from_batches([b for p in parts for b in p.to_batches()], schema=schema)
    return pa.concat_tables(parts).cast(schema)


def scan_to_table(scan: ScanPlan, tasks: Sequence[FileScanTask]) -> pa.Table:
    """The rows of ``tasks``, in task order; tasks are read in parallel."""
    schema = to_arrow_schema(scan.projected_schema())
    if not tasks:
        return schema.empty_table()
    cache = DeleteCache()
    mapping = _mapping(scan)
    if len(tasks) == 1:
        parts = [_read(scan, tasks[0], cache, mapping)]
    else:
        with ThreadPoolExecutor(max_workers=min(read_workers(), len(tasks))) as ex:
            parts = list(ex.map(lambda t: _read(scan, t, cache, mapping), tasks))
    return _concat(parts, schema)


def scan_batches(scan: ScanPlan, tasks: Sequence[FileScanTask]) -> Iterator[pa.RecordBatch]:
    """Stream record batches task by task (memory bounded by one task's batches)."""
    cache = DeleteCache()
    mapping = _mapping(scan)
    schema = scan.table_schema
    projected = scan.projected_schema()
    for task in tasks:
        yield from iter_data_file_batches(
            scan.io,
            task.file,
            projected,
            table_schema=schema,
            spec=scan.metadata.spec_by_id(task.spec_id),
            row_filter=bind(schema, task.residual, scan.case_sensitive),
            delete_files=task.delete_files,
            name_mapping=mapping,
            cache=cache,
            split=_split(task),
            data_sequence_number=task.data_sequence_number,
        )


def task_batches(
    scan: ScanPlan, task: FileScanTask, projected: Schema, apply_residual: bool = True
) -> Iterator[pa.RecordBatch]:
    """The live rows of one task as record batches, with the columns of ``projected``
    (which may hold ``_pos`` and the row lineage columns); the task's residual filter
    applied when ``apply_residual``."""
    schema = scan.table_schema
    residual = bind(schema, task.residual, scan.case_sensitive) if apply_residual else None
    yield from iter_data_file_batches(
        scan.io,
        task.file,
        projected,
        table_schema=schema,
        spec=scan.metadata.spec_by_id(task.spec_id),
        row_filter=residual,
        delete_files=task.delete_files,
        name_mapping=_mapping(scan),
        cache=DeleteCache(),
        split=_split(task),
        data_sequence_number=task.data_sequence_number,
    )
