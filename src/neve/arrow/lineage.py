"""Row lineage as a read fills it in (spec "Row Lineage"): the ``_row_id`` and
``_last_updated_sequence_number`` a row inherits from its data file when the file
stores none."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from neve.spec.schema import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, Schema

__all__ = ["POSITION_COLUMN", "RowLineage", "coalesce_column"]

#: The column of file positions added to the raw batches of a read (lineage, deletes,
#: ``_pos``).
POSITION_COLUMN = "__neve_file_position"


@dataclass(frozen=True)
class RowLineage:
    """Fills the row lineage columns of a read (spec "Row Lineage"): a value stored in
    the file wins; a null is inherited: ``_row_id`` as the file's ``first_row_id`` plus
    the row's position, ``_last_updated_sequence_number`` as the file's data sequence
    number. Without a ``first_row_id`` (rows older than the table's v3 upgrade) or a
    known sequence number, the inherited value is null."""

    row_id: int | None  # column index in the read schema
    sequence_number: int | None
    first_row_id: int | None
    data_sequence_number: int | None

    @staticmethod
    def of(schema: Schema, first_row_id: int | None, data_seq: int | None) -> RowLineage | None:
        index = {f.field_id: i for i, f in enumerate(schema.fields)}
        row_id = index.get(ROW_ID.field_id)
        seq = index.get(LAST_UPDATED_SEQUENCE_NUMBER.field_id)
        if row_id is None and seq is None:
            return None
        return RowLineage(row_id, seq, first_row_id, data_seq)

    @property
    def needs_positions(self) -> bool:
        return self.row_id is not None and self.first_row_id is not None

    def fill(self, batch: pa.RecordBatch, raw: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` with lineage filled in; ``raw`` is the batch it was projected
        from, with the file positions of its rows in column ``POSITION_COLUMN``."""
        if self.row_id is not None and self.first_row_id is not None:
            inherited = pc.add(
                raw.column(POSITION_COLUMN), pa.scalar(self.first_row_id, pa.int64())
            )
            batch = coalesce_column(batch, self.row_id, inherited)
        if self.sequence_number is not None and self.data_sequence_number is not None:
            constant = pa.scalar(self.data_sequence_number, pa.int64())
            batch = coalesce_column(batch, self.sequence_number, constant)
        return batch


def coalesce_column(
    batch: pa.RecordBatch, i: int, fallback: pa.Array | pa.Scalar
) -> pa.RecordBatch:
    """``batch`` with the nulls of column ``i`` replaced by ``fallback``."""
    stored = batch.column(i)
    if stored.null_count == 0:
        return batch
    filled = fallback if stored.null_count == len(stored) else pc.coalesce(stored, fallback)
    if isinstance(filled, pa.Scalar):
        filled = pa.array(np.full(len(stored), filled.as_py(), dtype=np.int64))
    if filled.type != stored.type:  # (a cast to the same type still costs a call)
        filled = filled.cast(stored.type)
    return batch.set_column(i, batch.schema.field(i), filled)
