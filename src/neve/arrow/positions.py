"""Merge-on-read on the pyarrow engine: the file positions of the rows a change deletes,
and the delete files that mark them (Iceberg spec "Position Delete Files", "Deletion
Vectors"), written as Iceberg-Java 1.10 writes them.

- Format v3: one deletion vector per data file. A new DV holds the file's new positions
  and every position already deleted (its previous DV, or the position delete files
  that applied before it), and the DV and file-scoped position deletes it merges are
  replaced in the same commit, so a data file never has two DVs. One Puffin file holds
  the DVs of one change.
- Format v2: a file-scoped position delete file (``referenced_data_file`` set) per data
  file, merging that file's earlier file-scoped position deletes, which it replaces.
  Position deletes scoped to a partition (other writers') cover other files too and
  stay; their positions still apply.

Positions are held as roaring bitmaps: a few scattered rows cost a few bytes, a dense
run costs a run container, so small and large deletes both stay cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyarrow as pa
from pyroaring import BitMap64

from neve.actions.base import TableState
from neve.arrow.deletes import write_deletion_vector_puffin, write_position_delete_file
from neve.arrow.reader import DeleteCache, deleted_positions, read_data_file
from neve.arrow.schema import parse_name_mapping
from neve.arrow.writer import delete_written_files
from neve.expressions import BooleanExpression
from neve.expressions.binding import bind
from neve.io.locations import LocationProvider
from neve.planning.delete import DeleteFiles, file_scoped_deletes
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile, DataFileContent
from neve.spec.schema import ROW_POSITION, Schema

__all__ = [
    "mark_matching",
    "matching_positions",
    "merge_deletes",
    "positions_of",
    "read_task",
    "write_deletes",
]


def read_task(
    table: TableState,
    task: FileScanTask,
    projected: Schema,
    row_filter: BooleanExpression | None = None,
    *,
    case_sensitive: bool = True,
    cache: DeleteCache | None = None,
    filter_rows: bool = True,
) -> pa.Table:
    """The live rows of ``task``'s data file that match ``row_filter`` (unbound), with
    the columns of ``projected`` (which may hold ``_pos`` and the row lineage columns);
    with ``filter_rows=False`` the filter only skips row groups."""
    md = table.metadata
    schema = md.schema()
    mapping_text = md.properties.get("schema.name-mapping.default")
    return read_data_file(
        table.io,
        task.file,
        projected,
        table_schema=schema,
        spec=md.spec_by_id(task.spec_id),
        row_filter=bind(schema, row_filter, case_sensitive) if row_filter is not None else None,
        delete_files=task.delete_files,
        name_mapping=parse_name_mapping(mapping_text) if mapping_text else None,
        cache=cache,
        data_sequence_number=task.data_sequence_number,
        filter_rows=filter_rows,
    )


def positions_of(rows: pa.Table) -> BitMap64:
    """The ``_pos`` column of ``rows`` as a bitmap."""
    column = rows.column(ROW_POSITION.name).combine_chunks()
    return BitMap64(column.to_numpy(zero_copy_only=False).tolist())


def matching_positions(
    table: TableState,
    task: FileScanTask,
    expr: BooleanExpression,
    case_sensitive: bool = True,
    cache: DeleteCache | None = None,
) -> BitMap64:
    """Positions of the live rows of ``task``'s data file that ``expr`` matches, read
    from only the filter's columns."""
    rows = read_task(
        table, task, Schema(ROW_POSITION), expr, case_sensitive=case_sensitive, cache=cache
    )
    return positions_of(rows)


def mark_matching(
    table: TableState,
    tasks: Sequence[FileScanTask],
    expr: BooleanExpression,
    case_sensitive: bool = True,
) -> DeleteFiles:
    """Delete files marking the live rows of ``tasks`` that ``expr`` matches (the
    pyarrow engine's delete writer)."""
    cache = DeleteCache()
    marks = [(t, matching_positions(table, t, expr, case_sensitive, cache)) for t in tasks]
    return write_deletes(table, marks, cache)


def write_deletes(
    table: TableState,
    marks: Iterable[tuple[FileScanTask, BitMap64]],
    cache: DeleteCache | None = None,
) -> DeleteFiles:
    """Delete files marking ``marks`` (per planned whole-file task, the positions to
    delete), merged with the deletes each data file has: DVs in v3, file-scoped
    position delete files in v2. Nothing is left behind when writing fails."""
    md = table.metadata
    io = table.io
    cache = cache or DeleteCache()
    v3 = md.format_version >= 3
    merged: dict[str, BitMap64] = {}
    data_files: dict[str, DataFile] = {}
    replaced: list[DataFile] = []
    for task, positions in marks:
        if not positions:
            continue
        f = task.file
        own = file_scoped_deletes(task)
        # a DV replaces every position delete of its file, so it takes them all in
        old = deleted_positions(io, f, task.delete_files if v3 else own, cache)
        merged[f.file_path] = positions | old if old is not None else BitMap64(positions)
        data_files[f.file_path] = f
        replaced += own
    if not merged:
        return DeleteFiles()
    locations = LocationProvider(md.location, md.properties)
    written: list[DataFile] = []
    paths: list[str] = []
    try:
        if v3:
            path = locations.new_file_path(suffix="-deletes.puffin")
            paths.append(path)
            written = write_deletion_vector_puffin(io, path, merged, data_files=data_files)
        else:
            for data_path, positions in merged.items():
                f = data_files[data_path]
                path = locations.new_file_path(suffix="-deletes.parquet")
                paths.append(path)
                written.append(
                    write_position_delete_file(
                        io,
                        path,
                        {data_path: positions},
                        partition=f.partition,
                        spec_id=f.spec_id,
                        properties=md.properties,
                    )
                )
    except BaseException:
        delete_written_files(io, paths)
        raise
    return DeleteFiles(tuple(written), tuple(_unique(replaced)))


def _unique(files: Sequence[DataFile]) -> list[DataFile]:
    seen: dict[tuple[str, int | None], DataFile] = {}
    for f in files:
        seen.setdefault((f.file_path, f.content_offset), f)
    return list(seen.values())


def merge_deletes(
    table: TableState, tasks: Iterable[FileScanTask], cache: DeleteCache | None = None
) -> DeleteFiles:
    """One delete file per task's data file holding every position its position
    deletes delete (a DV in v3, a file-scoped position delete file in v2);
    ``replaced`` lists the file-scoped deletes merged in."""
    cache = cache or DeleteCache()
    marks = []
    for t in tasks:
        positions = [d for d in t.delete_files if d.content is DataFileContent.POSITION_DELETES]
        found = deleted_positions(table.io, t.file, positions, cache)
        if found:
            marks.append((t, found))
    return write_deletes(table, marks, cache)
