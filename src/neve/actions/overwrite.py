"""Snapshot actions that remove files: overwrite by filter (copy-on-write delete
included), and dynamic partition overwrite, with Iceberg-Java's conflict validation.

Planning (which files to drop whole, which to rewrite) is pure and happens before any
data is written; the table layer then writes, and commits one of these actions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from neve.actions.base import TableState
from neve.actions.snapshot import SnapshotAction, write_parent
from neve.actions.validation import added_since, check_no_new_deletes, file_matcher
from neve.errors import CommitConflictError
from neve.expressions import ALWAYS_TRUE, BooleanExpression
from neve.planning.manifests import read_manifest_list
from neve.planning.scan import live_entries
from neve.spec.manifest import ManifestContent
from neve.spec.refs import MAIN_BRANCH
from neve.spec.snapshot import Operation, Snapshot
from neve.spec.table_metadata import TableMetadata

__all__ = [
    "OverwriteFiles",
    "ReplacePartitions",
]


class OverwriteFiles(SnapshotAction):
    """Remove files (matched by a row filter, planned by :func:`neve.planning.delete.plan_delete`) and add
    files, as one snapshot. Conflicts: a removed file is gone (found while rewriting
    manifests), or data was added since the base inside the filter's range."""

    def __init__(
        self,
        table: TableState,
        *,
        conflict_filter: BooleanExpression = ALWAYS_TRUE,
        case_sensitive: bool = True,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        owned_files: Iterable[str] = (),
    ) -> None:
        super().__init__(
            table, branch=branch, snapshot_properties=snapshot_properties, owned_files=owned_files
        )
        self.conflict_filter = conflict_filter
        self.case_sensitive = case_sensitive

    @property
    def operation(self) -> Operation:  # type: ignore[override]
        if not self.added_files:
            return Operation.DELETE
        if not self.removed_paths:
            return Operation.APPEND
        return Operation.OVERWRITE

    def validate(self, md: TableMetadata, parent: Snapshot | None) -> None:
        if parent is None:
            return
        # rows a concurrent merge-on-read change deleted from a file this change
        # rewrites would come back: Iceberg-Java's validateNoNewDeletesForDataFiles
        check_no_new_deletes(self, md, parent, self.removed_paths.values())
        may_match = file_matcher(md, self.conflict_filter, self.case_sensitive)
        for e in added_since(md, self.io, self.base_snapshot_id, parent, self.ignore_snapshot_ids):
            f = e.data_file
            if may_match(f):
                raise CommitConflictError(
                    f"a concurrent commit (snapshot {e.snapshot_id}) added data file "
                    f"{f.file_path} in the range this change replaces; reload the table and "
                    "run the change again"
                )


class ReplacePartitions(SnapshotAction):
    """Dynamic partition overwrite: replace every live file in the partitions the new
    files touch. Conflicts: data added since the base in one of those partitions."""

    operation = Operation.OVERWRITE

    def __init__(
        self,
        table: TableState,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        owned_files: Iterable[str] = (),
    ) -> None:
        super().__init__(
            table, branch=branch, snapshot_properties=snapshot_properties, owned_files=owned_files
        )

    def partitions(self) -> set[tuple[int, tuple[object, ...]]]:
        return {(f.spec_id, f.partition) for f in self.added_files}

    def plan(self, md: TableMetadata) -> tuple[list, list]:  # type: ignore[type-arg]
        # Files to replace depend on the current head: recompute on every attempt.
        self.removed_paths.clear()
        head = write_parent(md, self.branch)
        if head is not None:
            parts = self.partitions()
            unpartitioned = all(md.spec_by_id(s).is_unpartitioned for s, _ in parts)
            data = [
                m
                for m in read_manifest_list(self.io, head.manifest_list)
                if m.content is ManifestContent.DATA
            ]
            for e in live_entries(self.io, data, md):
                f = e.data_file
                if unpartitioned or (f.spec_id, f.partition) in parts:
                    self.remove_file(f)
        return super().plan(md)

    def validate(self, md: TableMetadata, parent: Snapshot | None) -> None:
        if parent is None:
            return
        check_no_new_deletes(self, md, parent, self.removed_paths.values())
        parts = self.partitions()
        for e in added_since(md, self.io, self.base_snapshot_id, parent, self.ignore_snapshot_ids):
            f = e.data_file
            if (f.spec_id, f.partition) in parts or md.spec_by_id(f.spec_id).is_unpartitioned:
                raise CommitConflictError(
                    f"a concurrent commit (snapshot {e.snapshot_id}) added {f.file_path} to a "
                    "partition this overwrite replaces; reload the table and retry"
                )
