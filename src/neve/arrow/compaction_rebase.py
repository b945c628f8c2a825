"""A compaction that rebases instead of failing: when a concurrent commit marked rows
deleted (a deletion vector, or v2 position deletes) in a data file the compaction
rewrites, the compaction knows where each of that file's rows went
(:class:`~neve.engine.origins.CompactedFiles`), so it marks the same rows in the files it
wrote and commits, where Iceberg-Java aborts the file group.

The commit loop calls :class:`CompactionRebase` as the ``RewriteFiles`` action's
rebase hook (its :meth:`~CompactionRebase.policy`, ``actions/snapshot.py``) each time it plans on a new head, before the
action validates. Each call works from the head's state: every position delete the
rewritten files have there is mapped to the new files (rows deleted before the
compaction read them were not copied and map to nothing), the delete files written by
an earlier call are replaced, and the action removes the file-scoped deletes the
rewritten files have at that head (so a concurrent rewrite of those delete files, a
``replace`` snapshot, does not make it fail either). A rewritten file that a concurrent commit removed
(a copy-on-write delete or another compaction) is left for the commit to refuse as a
conflict. Equality deletes are not rebased: they apply by value, to the new files too
when those keep the starting sequence number; otherwise validation refuses them.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyroaring import BitMap64

from neve.actions.rewrite_files import RewriteFiles
from neve.actions.snapshot import RebasePolicy, SnapshotAction
from neve.arrow.positions import write_deletes
from neve.arrow.reader import DeleteCache, deleted_positions
from neve.engine.origins import CompactedFiles
from neve.expressions import ALWAYS_TRUE
from neve.io.fileio import FileIO
from neve.planning.delete import file_scoped_deletes, whole_file_tasks
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile
from neve.spec.snapshot import Snapshot
from neve.spec.table_metadata import TableMetadata

__all__ = ["CompactionRebase"]


@dataclass(frozen=True)
class _Version:
    """A table state at one metadata version (what the delete writer takes)."""

    io: FileIO
    metadata: TableMetadata


class CompactionRebase:
    """Carries a compaction (a :class:`RewriteFiles` action adding ``compacted.files``
    in place of ``compacted.sources``) over concurrent position deletes (module
    docstring)."""

    def __init__(self, compacted: CompactedFiles) -> None:
        self.compacted = compacted
        self.sources = set(compacted.sources)
        #: Delete files for the new data files written by the last call.
        self.written: list[DataFile] = []

    def __call__(self, action: SnapshotAction, md: TableMetadata, parent: Snapshot) -> None:
        if not isinstance(action, RewriteFiles):
            raise TypeError("CompactionRebase rebases compactions only")
        io = action.io
        scan = ScanPlan(md, io, filter=ALWAYS_TRUE, snapshot_id=parent.snapshot_id)
        live = {
            t.file.file_path: t
            for t in whole_file_tasks(scan.plan_files())
            if t.file.file_path in self.sources
        }
        cache = DeleteCache()
        deleted: dict[str, BitMap64] = {}
        for path, task in live.items():
            bits = deleted_positions(io, task.file, task.delete_files, cache)
            if bits:
                deleted[path] = bits
        marks = self.compacted.map_positions(deleted)
        # the rewritten files' file-scoped deletes at this head go with them
        action.remove_scoped_deletes(
            self.sources, [d for task in live.values() for d in file_scoped_deletes(task)]
        )
        written: list[DataFile] = []
        if marks:
            by_path = {f.file_path: f for f in self.compacted.files}
            tasks = [(_new_file_task(by_path[path]), bits) for path, bits in sorted(marks.items())]
            written = list(write_deletes(_Version(io, md), tasks, cache).added)
        action.replace_added_deletes(self.written, written)
        self.written = written

    def policy(self) -> RebasePolicy:
        """The rebase policy of the compaction this carries over."""
        return RebasePolicy(hook=self, carries_positions=True)


def _new_file_task(f: DataFile) -> FileScanTask:
    """A whole-file task of a data file this compaction wrote (no deletes yet)."""
    return FileScanTask(f, ALWAYS_TRUE, (), 0, f.file_size_in_bytes, f.spec_id)
