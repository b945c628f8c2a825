"""Scan tasks: what planning hands to an engine to read. A leaf module (tasks are
picklable and travel to Spark executors)."""

from __future__ import annotations

from dataclasses import dataclass

from neve.expressions import BooleanExpression
from neve.spec.manifest import DataFile

__all__ = ["FileScanTask"]


@dataclass(frozen=True)
class FileScanTask:
    """One unit of reading: a byte range of a data file, its residual row filter and
    the delete files that apply to it. ``data_sequence_number`` is the file's data
    sequence number (what rows inherit as ``_last_updated_sequence_number``; None when
    unknown)."""

    file: DataFile
    residual: BooleanExpression
    delete_files: tuple[DataFile, ...]
    start: int
    length: int
    spec_id: int
    data_sequence_number: int | None = None
