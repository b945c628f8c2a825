"""Commits that rebase instead of failing: what a change does when a concurrent commit
won the compare-and-swap (the commit loop calls these as an action's ``rebase`` hook,
before validating the action against the concurrent commits).

- :class:`DeltaRebase`, for merge-on-read deletes, updates and merges. A delete also
  applies its condition to the rows concurrent commits added, so its outcome is that of
  running after them (no serializable conflict to report). When a
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

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyroaring import BitMap64

from neve.actions.base import TableState
from neve.actions.row_delta import RowDelta
from neve.actions.snapshot import SnapshotAction, file_key
from neve.actions.validation import added_since
from neve.arrow.keys import duplicate_key_error, find_keys, key_filter
from neve.arrow.positions import matching_positions, write_deletes
from neve.arrow.reader import DeleteCache, deleted_positions
from neve.arrow.rowlevel import RowChanges
from neve.errors import CommitConflictError
from neve.expressions import ALWAYS_TRUE, BooleanExpression
from neve.io.fileio import FileIO
from neve.planning.delete import file_scoped_deletes, whole_file_tasks
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile, DataFileContent, ManifestContent
from neve.spec.snapshot import Operation, Snapshot
from neve.spec.table_metadata import TableMetadata

__all__ = ["DeltaRebase", "NewKeysCheck", "added_data_paths"]


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


def added_data_paths(action: SnapshotAction, md: TableMetadata, parent: Snapshot) -> set[str]:
    """The data files the commits since ``action``'s base added, up to ``parent``."""
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
        added = added_data_paths(action, md, parent)
        if not added:
            return
        tasks = _tasks_at(md, action.io, parent, key_filter(self.keys, self.on))
        candidates = [t for p, t in tasks.items() if p in added]
        hits = find_keys(_Version(action.io, md), self.keys, self.on, candidates, expect_new=True)
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
        rerun: Callable[[TableState], RowChanges] | None = None,
        condition: BooleanExpression | None = None,
        case_sensitive: bool = True,
    ) -> None:
        if condition is not None and (writes_rows or keys is not None):
            raise ValueError("a condition is re-applied by pure deletes only")
        self.writes_rows = writes_rows
        self.keys = keys.select(list(on)) if keys is not None else None
        self.on = list(on)
        self.rerun = rerun
        self.condition = condition
        self.case_sensitive = case_sensitive

    def attach(self, action: RowDelta) -> RowDelta:
        """Make ``action`` rebase with this; it then retries a lost swap until the
        total timeout, as appends do (its checks still refuse what cannot rebase)."""
        action.rebase = self
        action.relocates = self.keys is not None or self.condition is not None
        action.always_rebases = True
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
        concurrent = _concurrent_snapshots(action, md, parent)
        removing = [s for s in concurrent if s.summary.get("deleted-data-files", "0") != "0"]
        # a file a concurrent delete removed whole had its rows deleted, not moved (a
        # copy-on-write rewrite or a compaction moves rows: validation refuses those)
        only_deletes_removed = all(s.operation is Operation.DELETE for s in removing)
        removed_data = {
            f.file_path for f in action.removed_paths.values() if f.content is DataFileContent.DATA
        }
        shared = {
            d.referenced_data_file
            for d in concurrent_deletes
            if d.referenced_data_file is not None
            and (
                d.referenced_data_file in action.deletes_from
                or d.referenced_data_file in removed_data
            )
        }
        relocates = self.keys is not None or self.condition is not None
        added = added_data_paths(action, md, parent) if relocates else set()
        if not shared and not added and not removing:
            return
        tasks = _tasks_at(md, io, parent)
        cache = DeleteCache()
        marks: dict[str, BitMap64] = {}
        superseded: list[DataFile] = []

        def own_deletes(path: str) -> list[DataFile]:
            return [
                f
                for f in action.added_files
                if f.content is DataFileContent.POSITION_DELETES and f.referenced_data_file == path
            ]

        def drop_scoped_removals(path: str) -> list[DataFile]:
            scoped = [
                f
                for f in action.removed_paths.values()
                if f.content is not DataFileContent.DATA and f.referenced_data_file == path
            ]
            for f in scoped:
                del action.removed_paths[file_key(f)]
            return scoped

        can_drop = only_deletes_removed and not (self.writes_rows and self.keys is None)
        gone = False
        for path in sorted(set(action.deletes_from) | removed_data):
            if path in tasks or not can_drop:
                continue  # live; or gone in a way validation refuses
            gone = True
            # deleted whole by a concurrent delete: the rows this change marks are gone
            superseded += own_deletes(path)
            drop_scoped_removals(path)
            action.deletes_from.pop(path, None)
            for key in [k for k, f in action.removed_paths.items() if f.file_path == path]:
                del action.removed_paths[key]
        for path in sorted(removed_data & set(tasks)):
            # removed whole by this change: so go the delete files it has now
            drop_scoped_removals(path)
            for d in file_scoped_deletes(tasks[path]):
                action.remove_deletes(d)
        for path in sorted(shared - removed_data):
            task = tasks.get(path)
            if task is None:
                continue  # removed concurrently: handled above, or validation names it
            mine = own_deletes(path)
            if not mine:
                # planned as a candidate, but no row of it matched: not this change's
                action.deletes_from.pop(path, None)
                continue
            ours = deleted_positions(io, task.file, mine, cache) or BitMap64()
            replaced = drop_scoped_removals(path)
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
        hits = []
        if self.keys is not None and added:
            candidates = [t for p, t in tasks.items() if p in added]
            hits = find_keys(_Version(io, md), self.keys, self.on, candidates, cache=cache)
        if self.rerun is not None and (hits or shared or gone):
            # the concurrent commits touched this change's keys: merge again at the head
            self._redo(action, md)
            return
        if hits:
            for h in hits:
                path = h.task.file.file_path
                marks[path] = marks.get(path, BitMap64()) | h.positions
        if self.condition is not None and added:
            # a delete applies its condition to the rows concurrent commits added, as if
            # it had run after them
            version = _Version(io, md)
            matched = _tasks_at(md, io, parent, self.condition)
            for path, task in matched.items():
                if path in added:
                    found = matching_positions(
                        version, task, self.condition, self.case_sensitive, cache
                    )
                    if found:
                        marks[path] = marks.get(path, BitMap64()) | found
        for path in set(marks) - (shared - removed_data):
            # rows found in files added concurrently: an earlier attempt of this change
            # may have marked some already; its delete file for them is merged in
            mine = own_deletes(path)
            if mine:
                marks[path] |= deleted_positions(io, tasks[path].file, mine, cache) or BitMap64()
                superseded += mine
            drop_scoped_removals(path)
        if not marks:
            if superseded:
                self._drop(action, superseded)
                action.files_changed()
            return
        deletes = write_deletes(
            _Version(io, md), [(tasks[p], bits) for p, bits in marks.items() if bits], cache
        )
        self._drop(action, superseded)
        action.owned_files.update(d.file_path for d in deletes.added)
        for path in marks:
            action.delete_from(tasks[path].file)
        for d in deletes.added:
            action.add_deletes(d)
        for d in deletes.replaced:
            action.remove_deletes(d)
        action.files_changed()

    def _redo(self, action: RowDelta, md: TableMetadata) -> None:
        """Make the change again at the new head (``rerun``) and put what it wrote in
        place of everything the lost attempts wrote."""
        assert self.rerun is not None
        changes = self.rerun(_Version(action.io, md))
        for path in list(action.owned_files):
            action.io.delete(path)  # written by attempts that lost: never committed
        action.owned_files.clear()
        action.added_files.clear()
        action.removed_paths.clear()
        action.deletes_from.clear()
        action.owned_files.update(changes.written_paths())
        for f in changes.data_files:
            action.add_rows(f)
        for t in changes.deleted_from:
            action.delete_from(t.file)
        for d in changes.deletes.added:
            action.add_deletes(d)
        for d in changes.deletes.replaced:
            action.remove_deletes(d)
        action.files_changed()

    @staticmethod
    def _drop(action: RowDelta, superseded: list[DataFile]) -> None:
        """Take the change's own delete files that a rebase replaced out of it, and
        delete those no other entry of it uses (never committed: the attempt lost)."""
        for f in superseded:
            action.added_files.remove(f)
        still_used = {f.file_path for f in action.added_files}
        for path in {f.file_path for f in superseded} - still_used:
            action.io.delete(path)
            action.owned_files.discard(path)


def _concurrent_snapshots(
    action: SnapshotAction, md: TableMetadata, parent: Snapshot
) -> list[Snapshot]:
    """The snapshots other writers committed since the change's base, up to ``parent``."""
    out = []
    for s in md.ancestors(parent.snapshot_id):
        if s.snapshot_id == action.base_snapshot_id:
            break
        if s.snapshot_id not in action.ignore_snapshot_ids:
            out.append(s)
    return out
