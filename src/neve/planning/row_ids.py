"""Where a snapshot's rows are, for random access: the live data files in their stable
order (manifest order, as a scan plans them) with the deletes that apply, which file a
row id falls in, and how many live rows each file holds where metadata tells.

Row ids (format v3, spec "Row Lineage") map to files through the ``first_row_id``
each data file is assigned: a row inherits ``first_row_id + position`` unless the file
stores a ``_row_id`` for it, which a rewrite does for every row it copies (compaction,
copy-on-write, an update). So an id is found at its inherited place or, when the row
was copied since, in one of the files that store ids (their ``_row_id`` bounds, when
the manifest keeps them, narrow the search).

Indexes are kept per table and snapshot in a small process-wide cache, like the
planner's manifest cache: a snapshot's files never change.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from neve.io.fileio import FileIO
from neve.planning.delete import whole_file_tasks
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile, DataFileContent, FileFormat
from neve.spec.schema import ROW_ID
from neve.spec.snapshot import Snapshot
from neve.spec.table_metadata import TableMetadata

__all__ = ["RowIdIndex", "row_id_index", "row_id_index_cache"]

Ints = npt.NDArray[np.int64]

#: Indexes kept in memory (one per table snapshot read at random).
_CAPACITY = 64


def _stored_bounds(f: DataFile) -> tuple[int, int] | bool | None:
    """What the manifest says of the ``_row_id`` values ``f`` stores: their bounds, or
    False when it stores none (every value null), or None when it does not say."""
    fid = ROW_ID.field_id
    lo = (f.lower_bounds or {}).get(fid)
    hi = (f.upper_bounds or {}).get(fid)
    if lo is not None and hi is not None and len(lo) == 8 and len(hi) == 8:
        return int.from_bytes(lo, "little", signed=True), int.from_bytes(hi, "little", signed=True)
    values = (f.value_counts or {}).get(fid)
    nulls = (f.null_value_counts or {}).get(fid)
    if values is not None and nulls is not None and values == nulls:
        return False
    return None


def _deleted_from_metadata(task: FileScanTask) -> int:
    """How many rows of the task's file its deletes delete, where the metadata alone
    tells (none, or one deletion vector, whose cardinality is its record count); -1
    when the delete files must be read (position deletes may repeat a position or
    cover other files; equality deletes need the data)."""
    deletes = task.delete_files
    if not deletes:
        return 0
    dvs = [d for d in deletes if d.file_format is FileFormat.PUFFIN]
    if len(dvs) == 1 and not any(d.content is DataFileContent.EQUALITY_DELETES for d in deletes):
        return int(dvs[0].record_count)  # a DV replaces the file's position deletes
    return -1


@dataclass(frozen=True)
class RowIdIndex:
    """A snapshot's live data files (one whole-file task each, in scan order) and what
    metadata tells of their rows."""

    snapshot_id: int | None
    tasks: tuple[FileScanTask, ...]
    #: per task: its file's first row id (-1 where the file has none: rows written
    #: before the table's v3 upgrade), rows, and deleted rows (-1: read to know)
    first_row_ids: Ints
    record_counts: Ints
    deleted: Ints
    #: tasks whose files may store ``_row_id`` values, with their bounds when known
    stored: tuple[tuple[int, tuple[int, int] | None], ...]
    _by_first: Ints
    _firsts_sorted: Ints

    @staticmethod
    def of(snapshot: Snapshot | None, tasks: list[FileScanTask]) -> RowIdIndex:
        files = whole_file_tasks(tasks)
        n = len(files)
        firsts = np.full(n, -1, dtype=np.int64)
        counts = np.zeros(n, dtype=np.int64)
        deleted = np.zeros(n, dtype=np.int64)
        stored: list[tuple[int, tuple[int, int] | None]] = []
        for i, t in enumerate(files):
            f = t.file
            if f.first_row_id is not None:
                firsts[i] = f.first_row_id
            counts[i] = f.record_count
            deleted[i] = _deleted_from_metadata(t)
            bounds = _stored_bounds(f)
            if bounds is not False:
                stored.append((i, bounds if isinstance(bounds, tuple) else None))
        known = np.flatnonzero(firsts >= 0)
        order = known[np.argsort(firsts[known], kind="stable")]
        return RowIdIndex(
            snapshot.snapshot_id if snapshot is not None else None,
            tuple(files),
            firsts,
            counts,
            deleted,
            tuple(stored),
            order,
            firsts[order],
        )

    def locate(self, row_ids: Ints) -> tuple[Ints, Ints]:
        """For each row id, the task whose inherited id range holds it and the position
        there (-1 and -1 where no file's range does)."""
        task = np.full(len(row_ids), -1, dtype=np.int64)
        pos = np.full(len(row_ids), -1, dtype=np.int64)
        if not len(self._by_first):
            return task, pos
        slot = np.searchsorted(self._firsts_sorted, row_ids, side="right") - 1
        ok = slot >= 0
        candidate = self._by_first[np.where(ok, slot, 0)]
        offset = row_ids - self.first_row_ids[candidate]
        ok &= (offset >= 0) & (offset < self.record_counts[candidate])
        task[ok] = candidate[ok]
        pos[ok] = offset[ok]
        return task, pos

    def storing(self, row_ids: Ints) -> list[int]:
        """The tasks whose files may store one of ``row_ids`` as a ``_row_id``."""
        if not len(row_ids):
            return []
        lo, hi = int(row_ids.min()), int(row_ids.max())
        out = []
        for i, bounds in self.stored:
            if bounds is None:
                out.append(i)
            elif bounds[0] <= hi and lo <= bounds[1]:
                inside = (row_ids >= bounds[0]) & (row_ids <= bounds[1])
                if inside.any():
                    out.append(i)
        return out


class _IndexCache:
    def __init__(self, capacity: int = _CAPACITY) -> None:
        self.capacity = capacity
        self._items: OrderedDict[tuple[str, int | None], RowIdIndex] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, int | None]) -> RowIdIndex | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[str, int | None], index: RowIdIndex) -> None:
        with self._lock:
            self._items[key] = index
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


#: The process-wide cache of row id indexes, by table UUID and snapshot id.
row_id_index_cache = _IndexCache()


def row_id_index(
    metadata: TableMetadata,
    io: FileIO,
    *,
    snapshot_id: int | None = None,
    as_of: object = None,
    ref: str | None = None,
) -> RowIdIndex:
    """The index of the snapshot ``snapshot_id`` / ``as_of`` / ``ref`` names (default:
    the current one), from the cache or planned (manifests only)."""
    plan = ScanPlan(metadata, io, snapshot_id=snapshot_id, as_of=as_of, ref=ref)
    snap = plan.snapshot()
    key = (metadata.table_uuid, snap.snapshot_id if snap is not None else None)
    found = row_id_index_cache.get(key)
    if found is not None:
        return found
    index = RowIdIndex.of(snap, plan.plan_files())
    row_id_index_cache.put(key, index)
    return index
