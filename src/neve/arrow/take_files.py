"""The rows at given positions of several data files read at once, for a take of few
rows (:mod:`neve.arrow.take`): each file's pages are planned and read, and the pages
of all files decoded together where their columns splice alike
(:func:`neve.arrow.pages.read_positions_of_files`): one pyarrow decode per column
group for the take instead of one per file. Deletes apply as in
:func:`neve.arrow.reader.read_data_file`; a file this cannot read (equality deletes,
no page index to read pages by, most of its pages wanted) is left to that reader.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from pyroaring import BitMap64

from neve.arrow.lineage import POSITION_COLUMN
from neve.arrow.pages import TAKE_SPARSE_SHARE, finish_rows, read_positions_of_files
from neve.arrow.reader import DeleteCache, deleted_positions, file_read
from neve.arrow.reader import identity_partition_constants as constants_of
from neve.arrow.schema import NameMapping, to_arrow_schema
from neve.expressions.expressions import ALWAYS_TRUE
from neve.io.fileio import FileIO
from neve.planning.tasks import FileScanTask
from neve.spec.partition import PartitionSpec
from neve.spec.schema import Schema

__all__ = ["read_files_at"]


def read_files_at(
    io: FileIO,
    tasks: Sequence[tuple[FileScanTask, PartitionSpec, BitMap64]],
    projected: Schema,
    table_schema: Schema,
    name_mapping: NameMapping | None,
    cache: DeleteCache,
) -> list[pa.Table | None]:
    """Per ``(task, spec, positions)``: the live rows of the task's data file at those
    file positions, as :func:`neve.arrow.reader.read_data_file` with
    ``only_positions`` reads them (columns of ``projected``, in position order); None
    for a file left to that reader."""
    reads = []
    todo = []
    for k, (task, spec, positions) in enumerate(tasks):
        f = task.file
        read = file_read(
            io,
            f,
            projected,
            table_schema,
            ALWAYS_TRUE,
            constants_of(spec, f.partition),
            task.delete_files,
            name_mapping,
            cache,
            task.data_sequence_number,
            True,
        )
        if read.equality:  # only the rows read tell which an equality delete removes
            continue
        wanted = BitMap64(positions)
        deleted = deleted_positions(io, f, task.delete_files, cache)
        if deleted is not None:
            wanted -= deleted
        where = np.frombuffer(wanted.to_array(), dtype=np.uint64).astype(np.int64)
        where = where[where < f.record_count]
        target = pa.schema([read.file_schema.field(c) for c in read.file_columns])
        reads.append((f.file_path, target, where))
        todo.append((k, read, where))
    out: list[pa.Table | None] = [None] * len(tasks)
    schema = to_arrow_schema(projected)
    found = read_positions_of_files(io, reads, sparse_share=TAKE_SPARSE_SHARE)
    for (k, read, where), rows in zip(todo, found, strict=True):
        if rows is None:
            continue
        path = read.data_file.file_path
        batches = finish_rows((rows, where), POSITION_COLUMN, read.finish, path, 1 << 30)
        out[k] = pa.Table.from_batches(list(batches), schema=schema)
    return out
