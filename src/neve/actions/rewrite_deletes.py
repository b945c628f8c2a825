"""Replacing delete files with equivalent ones (``rewrite_position_delete_files``): a
``replace`` snapshot that adds merged delete files and removes the ones they replace and
the dangling ones. The rows of the table do not change, so readers of changes skip it.
It fails as a conflict when a concurrent commit added deletes for a data file it merges
(those positions would be lost) or removed a delete file it replaces."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from neve.actions.base import TableState
from neve.actions.snapshot import SnapshotAction
from neve.actions.validation import check_no_new_deletes
from neve.errors import ValidationError
from neve.spec.manifest import DataFile, DataFileContent
from neve.spec.refs import MAIN_BRANCH
from neve.spec.snapshot import Operation, Snapshot
from neve.spec.table_metadata import TableMetadata

__all__ = ["RewriteDeleteFiles"]


class RewriteDeleteFiles(SnapshotAction):
    """Add delete files and remove the delete files they replace, as a ``replace``."""

    operation = Operation.REPLACE

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
        #: The data files whose deletes are merged (validated at commit).
        self.data_files: dict[str, DataFile] = {}

    def rewrite(
        self,
        added: Iterable[DataFile],
        removed: Iterable[DataFile],
        data_files: Iterable[DataFile],
    ) -> RewriteDeleteFiles:
        for f in [*added, *removed]:
            if f.content is DataFileContent.DATA:
                raise ValidationError(
                    f"{f.file_path} is a data file; this change replaces delete files only"
                )
        for f in added:
            self.add_file(f)
        for f in removed:
            self.remove_file(f)
        for f in data_files:
            self.data_files[f.file_path] = f
        return self

    def validate(self, md: TableMetadata, parent: Snapshot | None) -> None:
        if parent is None:
            return
        check_no_new_deletes(self, md, parent, self.data_files.values())
