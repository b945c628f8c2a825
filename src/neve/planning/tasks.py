"""Scan tasks: what planning hands to an engine to read. A leaf module (tasks are
picklable and travel to Spark executors)."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from neve.expressions import BooleanExpression
from neve.spec.manifest import DataFile

__all__ = ["FileScanTask", "group_tasks"]


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


def group_tasks(tasks: Sequence[FileScanTask], count: int) -> list[list[FileScanTask]]:
    """Spread ``tasks`` (files or byte ranges of files) over at most ``count`` groups
    of about equal bytes, largest first (one group per Spark task)."""
    n = max(1, min(count, len(tasks)))
    heap = [(0, i) for i in range(n)]
    groups: list[list[FileScanTask]] = [[] for _ in range(n)]
    for task in sorted(tasks, key=lambda t: -t.length):
        size, i = heapq.heappop(heap)
        groups[i].append(task)
        heapq.heappush(heap, (size + task.length, i))
    return [g for g in groups if g]
