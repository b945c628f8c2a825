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

from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
from pyroaring import BitMap64

from neve.actions.row_delta import RowDelta
from neve.actions.snapshot import RebasePolicy, SnapshotAction
from neve.actions.validation import added_since
from neve.arrow.keys import duplicate_key_error, find_keys, key_filter
from neve.arrow.positions import matching_positions, write_deletes
from neve.arrow.reader import DeleteCache, deleted_positions
from neve.engine.protocol import KeySource, MergeRerun
from neve.errors import CommitConflictError
from neve.expressions import ALWAYS_TRUE, BooleanExpression
from neve.io.fileio import FileIO
from neve.planning.delete import DeleteFiles, file_scoped_deletes, whole_file_tasks
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

    def policy(self) -> RebasePolicy:
        """The append's rebase policy: retry until the timeout, checking each new head."""
        return RebasePolicy(hook=self)


@dataclass
class _Marks:
    """What one rebase of a row delta found: positions to mark per data file path, and
    the change's own delete files they supersede."""

    tasks: dict[str, FileScanTask]
    cache: DeleteCache
    marks: dict[str, BitMap64] = field(default_factory=dict)
    superseded: list[DataFile] = field(default_factory=list)

    def add(self, path: str, bits: BitMap64) -> None:
        self.marks[path] = self.marks.get(path, BitMap64()) | bits


class DeltaRebase:
    """Carries a merge-on-read row delta over concurrent commits (see the module
    docstring). ``writes_rows``: the change writes new versions of the rows it marks
    (an update or merge), so marking the same rows as a concurrent commit is a
    conflict. ``keys``/``on``: a primary-key upsert's keys (asked for only when a
    concurrent commit added files), re-located in concurrently added files; with
    ``rerun`` (merge engines other than plain deduplicate) the change is instead made
    again at the new head when the concurrent commits touched its keys. ``condition``:
    a delete's filter, applied to the rows concurrent commits added."""

    def __init__(
        self,
        *,
        writes_rows: bool,
        keys: KeySource | None = None,
        on: Sequence[str] = (),
        rerun: MergeRerun | None = None,
        condition: BooleanExpression | None = None,
        case_sensitive: bool = True,
    ) -> None:
        if condition is not None and (writes_rows or keys is not None):
            raise ValueError("a condition is re-applied by pure deletes only")
        self.writes_rows = writes_rows
        self.keys = keys
        self.on = list(on)
        self.rerun = rerun
        self.condition = condition
        self.case_sensitive = case_sensitive
        self._keys: pa.Table | None = None

    def policy(self) -> RebasePolicy:
        """The row delta's rebase policy: it retries a lost swap until the total
        timeout, as appends do (its checks still refuse what cannot rebase), and a delete
        or an upsert applies itself to the files concurrent commits add."""
        return RebasePolicy(
            hook=self, reapplies=self.keys is not None or self.condition is not None
        )

    def _key_table(self) -> pa.Table:
        if self._keys is None:
            assert self.keys is not None
            self._keys = self.keys().select(self.on)
        return self._keys

    def __call__(self, action: SnapshotAction, md: TableMetadata, parent: Snapshot) -> None:
        if not isinstance(action, RowDelta):
            raise TypeError("DeltaRebase rebases row deltas only")
        io = action.io
        concurrent = _concurrent_snapshots(action, md, parent)
        removing = [s for s in concurrent if s.summary.get("deleted-data-files", "0") != "0"]
        removed_data = {
            f.file_path for f in action.removed_paths.values() if f.content is DataFileContent.DATA
        }
        shared = self._shared_files(action, md, parent, removed_data)
        relocates = self.keys is not None or self.condition is not None
        added = added_data_paths(action, md, parent) if relocates else set()
        if not shared and not added and not removing:
            return
        found = _Marks(_tasks_at(md, io, parent), DeleteCache())
        # a file a concurrent delete removed whole had its rows deleted, not moved (a
        # copy-on-write rewrite or a compaction moves rows: validation refuses those)
        only_deletes_removed = all(s.operation is Operation.DELETE for s in removing)
        can_drop = only_deletes_removed and not (self.writes_rows and self.keys is None)
        gone = self._drop_removed(action, found, removed_data, can_drop)
        self._union_shared(action, found, shared - removed_data)
        hits = []
        if self.keys is not None and added:
            candidates = [t for p, t in found.tasks.items() if p in added]
            version = _Version(io, md)
            hits = find_keys(version, self._key_table(), self.on, candidates, cache=found.cache)
        if self.rerun is not None and (hits or shared or gone):
            # the concurrent commits touched this change's keys: merge again at the head
            changes = self.rerun(_Version(io, md))
            action.restart(
                changes.data_files, changes.deletes, [t.file for t in changes.deleted_from]
            )
            return
        for h in hits:
            found.add(h.task.file.file_path, h.positions)
        if self.condition is not None and added:
            self._apply_condition(md, io, parent, added, found)
        self._merge_earlier_attempts(action, found, shared - removed_data)
        self._write(action, md, found)

    @staticmethod
    def _shared_files(
        action: RowDelta, md: TableMetadata, parent: Snapshot, removed_data: set[str]
    ) -> set[str]:
        """Data files this change marks or removes that concurrent commits added deletes
        for."""
        concurrent_deletes = added_since(
            md,
            action.io,
            action.base_snapshot_id,
            parent,
            action.ignore_snapshot_ids,
            ManifestContent.DELETES,
        )
        return {
            d.referenced_data_file
            for d in (e.data_file for e in concurrent_deletes)
            if d.referenced_data_file is not None
            and (
                d.referenced_data_file in action.deletes_from
                or d.referenced_data_file in removed_data
            )
        }

    @staticmethod
    def _drop_removed(
        action: RowDelta, found: _Marks, removed_data: set[str], can_drop: bool
    ) -> bool:
        """Forget the data files a concurrent delete removed whole (their rows are gone),
        and take along the delete files of the files this change removes whole; returns
        whether a file was forgotten."""
        gone = False
        for path in sorted(set(action.deletes_from) | removed_data):
            if path in found.tasks or not can_drop:
                continue  # live; or gone in a way validation refuses
            gone = True
            found.superseded += action.own_deletes(path)
            action.forget_data_file(path)
        for path in sorted(removed_data & set(found.tasks)):
            # removed whole by this change: so go the delete files it has now
            action.keep_scoped_deletes(path)
            for d in file_scoped_deletes(found.tasks[path]):
                action.remove_deletes(d)
        return gone

    def _union_shared(self, action: RowDelta, found: _Marks, shared: set[str]) -> None:
        """Union this change's marks of the files concurrent commits also marked with
        theirs (a conflict when an update or merge would rewrite the same rows)."""
        io = action.io
        for path in sorted(shared):
            task = found.tasks.get(path)
            if task is None:
                continue  # removed concurrently: handled above, or validation names it
            mine = action.own_deletes(path)
            if not mine:
                # planned as a candidate, but no row of it matched: not this change's
                action.no_rows_of(path)
                continue
            ours = deleted_positions(io, task.file, mine, found.cache) or BitMap64()
            replaced = action.keep_scoped_deletes(path)
            if self.writes_rows and self.keys is None:
                before = deleted_positions(io, task.file, replaced, found.cache) or BitMap64()
                theirs = (
                    deleted_positions(io, task.file, task.delete_files, found.cache) or BitMap64()
                )
                both = (ours - before) & (theirs - before)
                if both:
                    raise CommitConflictError(
                        f"a concurrent commit changed {len(both)} of the rows this change "
                        f"rewrites in {path}; both would keep a new version of them. Reload "
                        "the table and run the change again"
                    )
            found.marks[path] = ours
            found.superseded += mine

    def _apply_condition(
        self, md: TableMetadata, io: FileIO, parent: Snapshot, added: set[str], found: _Marks
    ) -> None:
        """A delete applies its condition to the rows concurrent commits added, as if it
        had run after them."""
        assert self.condition is not None
        version = _Version(io, md)
        for path, task in _tasks_at(md, io, parent, self.condition).items():
            if path in added:
                bits = matching_positions(
                    version, task, self.condition, self.case_sensitive, found.cache
                )
                if bits:
                    found.add(path, bits)

    @staticmethod
    def _merge_earlier_attempts(action: RowDelta, found: _Marks, shared: set[str]) -> None:
        """Rows found in files added concurrently: an earlier attempt of this change may
        have marked some already; its delete file for them is merged in."""
        for path in set(found.marks) - shared:
            mine = action.own_deletes(path)
            if mine:
                task = found.tasks[path]
                found.marks[path] |= (
                    deleted_positions(action.io, task.file, mine, found.cache) or BitMap64()
                )
                found.superseded += mine
            action.keep_scoped_deletes(path)

    @staticmethod
    def _write(action: RowDelta, md: TableMetadata, found: _Marks) -> None:
        """Write the delete files of the marks and put them in place of the change's
        superseded ones."""
        marks = {p: bits for p, bits in found.marks.items() if bits}
        deletes = DeleteFiles()
        if marks:
            deletes = write_deletes(
                _Version(action.io, md),
                [(found.tasks[p], b) for p, b in marks.items()],
                found.cache,
            )
        if not marks and not found.superseded:
            return
        action.replace_own_deletes(
            found.superseded, deletes, [found.tasks[p].file for p in found.marks]
        )


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
