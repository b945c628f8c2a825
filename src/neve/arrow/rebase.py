"""Commits that rebase instead of failing: what a change does when a concurrent commit
won the compare-and-swap (the commit loop calls these as an action's ``rebase`` hook,
before validating the action against the concurrent commits).

- :class:`DeltaRebase`, for merge-on-read deletes, updates and merges. When a
  concurrent commit marked rows of a data file this change also marks, the two
  deletion vectors (or v2 file-scoped position delete files) are unioned into a new
  one that replaces the concurrent one; the change's own earlier file is dropped. An
  update whose rows a concurrent commit also changed cannot be carried over (both
  would write a new version of the row): :class:`CommitConflictError`. A primary-key
  upsert (deduplicate engine) re-locates its keys in the data files the concurrent
  commits added and marks those rows too, so each key keeps exactly one live row,
  the later committer's.
- :class:`NewKeysCheck`, for appends to a primary-key table: keys a concurrent commit
  added are refused with :class:`DuplicateKeyError`.

docs/MERGE-ENGINES.md has the whole matrix of operation x concurrent operation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyroaring import BitMap64

from neve.actions.row_delta import RowDelta
from neve.actions.snapshot import SnapshotAction, file_key
from neve.actions.validation import added_since
from neve.arrow.keys import duplicate_key_error, find_keys, key_filter
from neve.arrow.positions import write_deletes
from neve.arrow.reader import DeleteCache, deleted_positions
from neve.errors import CommitConflictError
from neve.expressions import ALWAYS_TRUE, BooleanExpression
from neve.io.fileio import FileIO
from neve.planning.delete import whole_file_tasks
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile, DataFileContent, ManifestContent
from neve.spec.snapshot import Snapshot
from neve.spec.table_metadata import TableMetadata

__all__ = ["DeltaRebase", "NewKeysCheck"]


@dataclass(frozen=True)
class _Version:
    """A table state at one metadata version (what the engine's readers take)."""

    io: FileIO
    metadata: TableMetadata


def _tasks_at(
    md: TableMetadata, io: FileIO, snapshot: Snapshot, expr: BooleanExpression = ALWAYS_TRUE
) -> dict[str, FileScanTask]:
    scan = ScanPlan(md, io, filter=expr, snapshot_id=snapshot.snapshot_id)
    return {t.file.file_path: t for t in whole_file_tasks(scan.plan_files())}


def _added_data_paths(action: SnapshotAction, md: TableMetadata, parent: Snapshot) -> set[str]:
    return {
        e.data_file.file_path
        for e in added_since(
            md, action.io, action.base_snapshot_id, parent, action.ignore_snapshot_ids
        )
    }


class NewKeysCheck:
    """Refuses an append to a primary-key table whose keys a concurrent commit added."""

    def __init__(self, keys: pa.Table, on: Sequence[str]) -> None:
        self.keys = keys.select(list(on))
        self.on = list(on)

    def __call__(self, action: SnapshotAction, md: TableMetadata, parent: Snapshot) -> None:
        added = _added_data_paths(action, md, parent)
        if not added:
            return
        tasks = _tasks_at(md, action.io, parent, key_filter(self.keys, self.on))
        candidates = [t for p, t in tasks.items() if p in added]
        hits = find_keys(_Version(action.io, md), self.keys, self.on, candidates)
        if hits:
            found = pa.concat_tables([h.keys for h in hits])
            raise duplicate_key_error(found, self.on, "were added by a concurrent commit")


class DeltaRebase:
    """Carries a merge-on-read row delta over concurrent commits (see the module
    docstring). ``writes_rows``: the change writes new versions of the rows it marks
    (an update or merge), so marking the same rows as a concurrent commit is a
    conflict. ``keys``/``on``: a primary-key upsert's keys, re-located in concurrently
    added files; ``relocate=False`` (merge engines other than deduplicate) refuses
    instead when a concurrent commit added one of the keys."""

    def __init__(
        self,
        *,
        writes_rows: bool,
        keys: pa.Table | None = None,
        on: Sequence[str] = (),
        relocate: bool = True,
    ) -> None:
        self.writes_rows = writes_rows
        self.keys = keys.select(list(on)) if keys is not None else None
        self.on = list(on)
        self.relocate = relocate

    def attach(self, action: RowDelta) -> RowDelta:
        action.rebase = self
        action.locates_keys = self.keys is not None
        return action

    def __call__(self, action: SnapshotAction, md: TableMetadata, parent: Snapshot) -> None:
        if not isinstance(action, RowDelta):
            raise TypeError("DeltaRebase rebases row deltas only")
        io = action.io
        concurrent_deletes = [
            e.data_file
            for e in added_since(
                md,
                io,
                action.base_snapshot_id,
                parent,
                action.ignore_snapshot_ids,
                ManifestContent.DELETES,
            )
        ]
        shared = {
            d.referenced_data_file
            for d in concurrent_deletes
            if d.referenced_data_file is not None and d.referenced_data_file in action.deletes_from
        }
        added = _added_data_paths(action, md, parent) if self.keys is not None else set()
        if not shared and not added:
            return
        tasks = _tasks_at(md, io, parent)
        cache = DeleteCache()
        marks: dict[str, BitMap64] = {}
        superseded: list[DataFile] = []
        for path in sorted(shared):
            task = tasks.get(path)
            if task is None:
                continue  # removed concurrently: validation names it
            mine = [
                f
                for f in action.added_files
                if f.content is DataFileContent.POSITION_DELETES and f.referenced_data_file == path
            ]
            ours = deleted_positions(io, task.file, mine, cache) or BitMap64()
            replaced = [
                f
                for f in action.removed_paths.values()
                if f.content is not DataFileContent.DATA and f.referenced_data_file == path
            ]
            if self.writes_rows and self.keys is None:
                before = deleted_positions(io, task.file, replaced, cache) or BitMap64()
                theirs = deleted_positions(io, task.file, task.delete_files, cache) or BitMap64()
                both = (ours - before) & (theirs - before)
                if both:
                    raise CommitConflictError(
                        f"a concurrent commit changed {len(both)} of the rows this change "
                        f"rewrites in {path}; both would keep a new version of them. Reload "
                        "the table and run the change again"
                    )
            marks[path] = ours
            superseded += mine
            for f in replaced:
                del action.removed_paths[file_key(f)]
        if self.keys is not None and added:
            candidates = [t for p, t in tasks.items() if p in added]
            hits = find_keys(_Version(io, md), self.keys, self.on, candidates, cache=cache)
            if hits and not self.relocate:
                raise CommitConflictError(
                    f"a concurrent commit added rows with {sum(len(h.positions) for h in hits)} "
                    "of this upsert's keys, and the table's merge engine combines rows, so "
                    "this commit cannot simply replace them; reload the table and run the "
                    "upsert again"
                )
            for h in hits:
                path = h.task.file.file_path
                marks[path] = marks.get(path, BitMap64()) | h.positions
        if not marks:
            return
        deletes = write_deletes(
            _Version(io, md), [(tasks[p], bits) for p, bits in marks.items() if bits], cache
        )
        for f in superseded:
            action.added_files.remove(f)
        still_used = {f.file_path for f in action.added_files}
        for path in {f.file_path for f in superseded} - still_used:
            io.delete(path)  # written by an attempt that lost: never committed
            action.owned_files.discard(path)
        action.owned_files.update(d.file_path for d in deletes.added)
        for path in marks:
            action.delete_from(tasks[path].file)
        for d in deletes.added:
            action.add_deletes(d)
        for d in deletes.replaced:
            action.remove_deletes(d)
        action.files_changed()
