"""The pyarrow write path of the table layer: write rows as data files of a table's
current schema and spec, and rewrite files without the rows a filter matches
(copy-on-write deletes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from neve.arrow.expression import delete_filter
from neve.arrow.reader import DeleteCache, read_data_file
from neve.arrow.schema import parse_name_mapping
from neve.arrow.writer import LocationProvider, delete_written_files, write_data_files
from neve.expressions import BooleanExpression
from neve.spec.manifest import DataFile

if TYPE_CHECKING:
    from neve.table.table import Table

__all__ = ["rewrite_without", "write_table_files"]


def write_table_files(table: Table, data: pa.Table) -> list[DataFile]:
    """Write ``data`` (columns matched to the table's by name) under the table's
    location, partitioned by its default spec."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    md = table.metadata
    return write_data_files(
        table.io,
        md.schema(),
        md.spec(),
        data,
        LocationProvider(md.location, md.properties),
        md.properties,
        sort_order_id=md.default_sort_order_id or None,
    )


def rewrite_without(
    table: Table,
    snapshot_id: int,
    files: Sequence[DataFile],
    expr: BooleanExpression,
    case_sensitive: bool,
) -> list[DataFile]:
    """New data files holding the live rows of ``files`` that ``expr`` does not match.

    Rows are read with the deletes that apply to them at ``snapshot_id`` (so rows
    deleted by merge-on-read deletes stay deleted) and with the current schema."""
    md = table.metadata
    schema = md.schema()
    wanted = {f.file_path for f in files}
    tasks = [
        t for t in table.scan(snapshot_id=snapshot_id).plan_files() if t.file.file_path in wanted
    ]
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
                schema,
                spec=md.spec_by_id(task.spec_id),
                delete_files=task.delete_files,
                name_mapping=mapping,
                cache=cache,
            )
            keep = rows.filter(keep_expr)
            if keep.num_rows:
                written += write_table_files(table, keep)
    except BaseException:
        delete_written_files(table.io, written)
        raise
    return written
