"""Replacing files with equivalent ones: compaction (``rewrite_data_files``: data files
and the deletes applied to them replaced by new data files holding the same live rows)
and ``rewrite_position_delete_files`` (delete files replaced by merged ones), as a
``replace`` snapshot. The rows of the table do not change, so readers of changes and
validation of concurrent writers skip it. It fails as a conflict when a concurrent
commit added deletes for a data file it rewrites or merges deletes of (those rows would
come back, or those positions be lost), or removed a file it replaces.

Two settings of a compaction relax the first rule, as Iceberg-Java's ``RewriteFiles``
does for the second: with a rebase policy that ``carries_positions`` a rebase hook has
carried concurrent position deletes over to the new files
(``arrow/compaction_rebase.py``), and with a ``data_sequence_number`` (the starting
snapshot's) concurrent equality deletes still apply to the new files."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from neve.actions.base import TableState
from neve.actions.snapshot import VALIDATES, RebasePolicy, SnapshotAction
from neve.actions.validation import check_no_new_deletes
from neve.spec.manifest import DataFile, DataFileContent
from neve.spec.refs import MAIN_BRANCH
from neve.spec.snapshot import Operation, Snapshot
from neve.spec.table_metadata import TableMetadata

__all__ = ["RewriteFiles"]


class RewriteFiles(SnapshotAction):
    """Add files and remove the files they replace, as a ``replace`` snapshot."""

    operation = Operation.REPLACE

    def __init__(
        self,
        table: TableState,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        owned_files: Iterable[str] = (),
        rebase: RebasePolicy = VALIDATES,
        validate_from: int | Literal["head"] | None = "head",
        data_sequence_number: int | None = None,
    ) -> None:
        """``data_sequence_number``: the one the added data files keep when they hold
        older rows (a compaction keeping its starting snapshot's); None: the commit's."""
        super().__init__(
            table,
            branch=branch,
            snapshot_properties=snapshot_properties,
            owned_files=owned_files,
            rebase=rebase,
            validate_from=validate_from,
        )
        self.data_sequence_number = data_sequence_number
        #: Data files whose rows or deletes this change rewrites (validated at commit).
        self.data_files: dict[str, DataFile] = {}

    def rewrite(
        self,
        added: Iterable[DataFile],
        removed: Iterable[DataFile],
        data_files: Iterable[DataFile] = (),
    ) -> RewriteFiles:
        """Add ``added``, remove ``removed``; ``data_files`` (and every removed data
        file) must have no deletes added concurrently."""
        for f in added:
            self.add_file(f)
        for f in removed:
            self.remove_file(f)
            if f.content is DataFileContent.DATA:
                self.data_files[f.file_path] = f
        for f in data_files:
            self.data_files[f.file_path] = f
        return self

    # -- what a rebase changes (neve.arrow.compaction_rebase) -----------------------

    def remove_scoped_deletes(self, data_paths: Iterable[str], deletes: Iterable[DataFile]) -> None:
        """Of the delete files scoped to the data files ``data_paths``, remove exactly
        ``deletes`` (the ones they have at the head the change now commits onto)."""
        paths = set(data_paths)
        for key in [
            k
            for k, f in self.removed_paths.items()
            if f.content is not DataFileContent.DATA and f.referenced_data_file in paths
        ]:
            del self.removed_paths[key]
        for d in deletes:
            self.remove_file(d)

    def replace_added_deletes(self, old: Iterable[DataFile], new: Iterable[DataFile]) -> None:
        """Add the delete files ``new`` (for the data files this change adds) in place of
        ``old``, which an earlier attempt's rebase wrote (never committed: deleted)."""
        gone = list(old)
        for f in gone:
            self.added_files.remove(f)
        for path in {f.file_path for f in gone}:
            self.io.delete(path)
            self.owned_files.discard(path)
        for d in new:
            self.add_file(d)
            self.owned_files.add(d.file_path)
        self.files_changed()

    def validate(self, md: TableMetadata, parent: Snapshot | None) -> None:
        if parent is None:
            return
        contents = []
        if not self.rebase_policy.carries_positions:
            contents.append(DataFileContent.POSITION_DELETES)
        if self.data_sequence_number is None:
            contents.append(DataFileContent.EQUALITY_DELETES)
        check_no_new_deletes(self, md, parent, self.data_files.values(), contents)
