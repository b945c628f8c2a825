"""Reading planned scan tasks with pyarrow: files in parallel, each projected to the
scan's schema by field id, with its residual filter and deletes applied."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pyarrow as pa

from neve.arrow.reader import DeleteCache, iter_data_file_batches, read_data_file
from neve.arrow.schema import NameMapping, parse_name_mapping, to_arrow_schema
from neve.expressions.binding import bind
from neve.table.scan import FileScanTask

if TYPE_CHECKING:
    from neve.table.scan import TableScan

__all__ = ["scan_batches", "scan_to_table"]


def _mapping(scan: TableScan) -> NameMapping | None:
    text = scan.metadata.properties.get("schema.name-mapping.default")
    return parse_name_mapping(text) if text else None


def _workers() -> int:
    return min(16, (os.cpu_count() or 2) * 2)


def _read(
    scan: TableScan, task: FileScanTask, cache: DeleteCache, mapping: NameMapping | None
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
    )


def _whole_files(tasks: Sequence[FileScanTask]) -> list[FileScanTask]:
    """The pyarrow reader reads whole files: merge the splits of a file back together."""
    seen: dict[str, FileScanTask] = {}
    for t in tasks:
        seen.setdefault(t.file.file_path, t)
    return list(seen.values())


def scan_to_table(scan: TableScan, tasks: Sequence[FileScanTask]) -> pa.Table:
    schema = to_arrow_schema(scan.projected_schema())
    files = _whole_files(tasks)
    if not files:
        return schema.empty_table()
    cache = DeleteCache()
    mapping = _mapping(scan)
    if len(files) == 1:
        parts = [_read(scan, files[0], cache, mapping)]
    else:
        with ThreadPoolExecutor(max_workers=_workers()) as ex:
            parts = list(ex.map(lambda t: _read(scan, t, cache, mapping), files))
    return pa.concat_tables(parts).cast(schema) if parts else schema.empty_table()


def scan_batches(scan: TableScan, tasks: Sequence[FileScanTask]) -> Iterator[pa.RecordBatch]:
    """Stream record batches file by file (memory bounded by one file's batches)."""
    cache = DeleteCache()
    mapping = _mapping(scan)
    schema = scan.table_schema
    for task in _whole_files(tasks):
        yield from iter_data_file_batches(
            scan.io,
            task.file,
            scan.projected_schema(),
            table_schema=schema,
            spec=scan.metadata.spec_by_id(task.spec_id),
            row_filter=bind(schema, task.residual, scan.case_sensitive),
            delete_files=task.delete_files,
            name_mapping=mapping,
            cache=cache,
        )
