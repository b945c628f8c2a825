"""Row delta: add data files and delete files (position deletes, equality deletes,
deletion vectors) to a table in one snapshot, as merge-on-read writers do.

The delete files go to delete manifests (content 1) that inherit the new snapshot's
sequence number, so (Iceberg spec "Scan Planning") a position delete or DV committed with
its data file applies to it, and an equality delete committed with data does not.

Checks follow Iceberg-Java's ``RowDelta``: delete files need format version 2; in v2
position deletes are Parquet files and in v3 they must be deletion vectors; a data file
gets at most one DV; data files that position deletes reference must be live in the
branch head (or added by the same change). A new DV for a data file that already has
one must replace it (``remove_deletes`` of the old DV, whose positions the new one
merges), so a data file never has two.

Concurrent commits (between the snapshot the change was planned on and the head it
commits onto) are validated as Iceberg-Java's ``RowDelta`` with a conflict filter: the
data files it deletes from and removes must still be live; no delete file may have
been added for them; under ``serializable`` isolation no data file may have been added
that the conflict filter may match (``snapshot`` isolation allows those).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from neve.actions.base import TableState
from neve.actions.snapshot import VALIDATES, RebasePolicy, SnapshotAction, file_key, write_parent
from neve.actions.validation import added_since, check_no_new_deletes, file_matcher
from neve.errors import CommitConflictError, ValidationError
from neve.expressions import BooleanExpression
from neve.planning.delete import DeleteFiles
from neve.planning.manifests import read_manifest_list
from neve.planning.scan import live_entries
from neve.spec.manifest import DataFile, DataFileContent
from neve.spec.refs import MAIN_BRANCH
from neve.spec.requirements import TableRequirement
from neve.spec.snapshot import Operation, Snapshot
from neve.spec.table_metadata import TableMetadata
from neve.spec.updates import TableUpdate

__all__ = ["ISOLATION_LEVELS", "RowDelta"]

ISOLATION_LEVELS = ("serializable", "snapshot")


class RowDelta(SnapshotAction):
    """Add data files and delete files as one snapshot (operation ``delete`` when it
    adds only deletes, ``overwrite`` otherwise)."""

    def __init__(
        self,
        table: TableState,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        owned_files: Iterable[str] = (),
        conflict_filter: BooleanExpression | None = None,
        case_sensitive: bool = True,
        isolation: str = "serializable",
        rebase: RebasePolicy = VALIDATES,
    ) -> None:
        super().__init__(
            table,
            branch=branch,
            snapshot_properties=snapshot_properties,
            owned_files=owned_files,
            rebase=rebase,
        )
        if isolation not in ISOLATION_LEVELS:
            raise ValidationError(
                f"isolation level {isolation!r} is unknown; use serializable or snapshot"
            )
        #: The rows this change reads (None: it reads none, e.g. a plain insert).
        self.conflict_filter = conflict_filter
        self.case_sensitive = case_sensitive
        self.isolation = isolation
        #: Data files this change marks rows deleted in (their new deletes merge the old).
        self.deletes_from: dict[str, DataFile] = {}

    @property
    def operation(self) -> Operation:  # type: ignore[override]
        adds_data = any(f.content is DataFileContent.DATA for f in self.added_files)
        adds_deletes = any(f.content is not DataFileContent.DATA for f in self.added_files)
        removes_data = any(f.content is DataFileContent.DATA for f in self.removed_paths.values())
        if adds_data and not adds_deletes and not removes_data:
            return Operation.APPEND
        if not adds_data:
            return Operation.DELETE
        return Operation.OVERWRITE

    # -- building --------------------------------------------------------------------

    def add_rows(self, f: DataFile) -> RowDelta:
        """Add a data file."""
        if f.content is not DataFileContent.DATA:
            raise ValidationError(
                f"{f.file_path} is a delete file; add it with add_deletes(), not add_rows()"
            )
        self.add_file(f)
        return self

    def add_deletes(self, f: DataFile) -> RowDelta:
        """Add a position delete file, an equality delete file or a deletion vector."""
        version = self.table.metadata.format_version
        if f.content is DataFileContent.DATA:
            raise ValidationError(
                f"{f.file_path} is a data file; add it with add_rows(), not add_deletes()"
            )
        if version < 2:
            raise ValidationError(
                "format version 1 has no delete files; upgrade the table to version 2 first"
            )
        if f.content is DataFileContent.POSITION_DELETES:
            if version == 2 and f.is_deletion_vector:
                raise ValidationError(
                    f"deletion vector in {f.file_path}: deletion vectors need format version "
                    "3; upgrade the table, or write a Parquet position delete file"
                )
            if version >= 3 and not f.is_deletion_vector:
                raise ValidationError(
                    f"position delete file {f.file_path}: format version {version} tables "
                    "take position deletes only as deletion vectors (Puffin); write a DV"
                )
            if f.is_deletion_vector and not f.referenced_data_file:
                raise ValidationError(
                    f"deletion vector in {f.file_path} has no referenced_data_file; every DV "
                    "must name the data file it applies to"
                )
        elif not f.equality_ids:
            raise ValidationError(
                f"equality delete file {f.file_path} has no equality_ids; give the ids of "
                "the columns it matches on"
            )
        if f.is_deletion_vector and f.referenced_data_file in self._dv_targets():
            raise ValidationError(
                f"this change already adds a deletion vector for {f.referenced_data_file}; "
                "merge the positions into one DV per data file"
            )
        self.add_file(f)
        return self

    def remove_rows(self, f: DataFile) -> RowDelta:
        """Remove a data file whose rows are all deleted."""
        if f.content is not DataFileContent.DATA:
            raise ValidationError(f"{f.file_path} is a delete file; use remove_deletes()")
        self.remove_file(f)
        return self

    def remove_deletes(self, f: DataFile) -> RowDelta:
        """Remove a delete file that a new one replaces (a DV merged into a new DV) or
        that applies to no live data file any more."""
        if f.content is DataFileContent.DATA:
            raise ValidationError(f"{f.file_path} is a data file; use remove_rows()")
        self.remove_file(f)
        return self

    def delete_from(self, f: DataFile) -> RowDelta:
        """Record that this change deletes rows of the data file ``f`` (validated: ``f``
        must still be live and have no new deletes at commit)."""
        self.deletes_from[f.file_path] = f
        return self

    # -- what a rebase changes (neve.arrow.rebase) --------------------------------------

    def own_deletes(self, path: str) -> list[DataFile]:
        """This change's position delete files (DVs included) for the data file ``path``."""
        return [
            f
            for f in self.added_files
            if f.content is DataFileContent.POSITION_DELETES and f.referenced_data_file == path
        ]

    def keep_scoped_deletes(self, path: str) -> list[DataFile]:
        """Stop removing the delete files scoped to the data file ``path`` (a DV, a
        file-scoped position delete file) that this change was going to replace; returns
        them."""
        scoped = [
            f
            for f in self.removed_paths.values()
            if f.content is not DataFileContent.DATA and f.referenced_data_file == path
        ]
        for f in scoped:
            del self.removed_paths[file_key(f)]
        return scoped

    def forget_data_file(self, path: str) -> None:
        """Stop touching the data file ``path`` (a concurrent delete removed it whole, so
        the rows this change marks there are gone): no deletes for it, no removal of it
        or of its delete files."""
        self.keep_scoped_deletes(path)
        self.deletes_from.pop(path, None)
        for key in [k for k, f in self.removed_paths.items() if f.file_path == path]:
            del self.removed_paths[key]

    def no_rows_of(self, path: str) -> None:
        """The change marks no row of the data file ``path`` after all (a candidate the
        change planned but found nothing in)."""
        self.deletes_from.pop(path, None)

    def replace_own_deletes(
        self,
        superseded: Iterable[DataFile],
        deletes: DeleteFiles,
        marked: Iterable[DataFile],
    ) -> None:
        """Put ``deletes`` (written by a rebase, for the data files ``marked``) in place
        of this change's delete files ``superseded``: those are dropped, and deleted from
        storage unless another entry of the change still uses the file (never committed:
        the attempt that wrote them lost). The new files are the change's own."""
        gone = list(superseded)
        for f in gone:
            self.added_files.remove(f)
        still_used = {f.file_path for f in self.added_files}
        for path in {f.file_path for f in gone} - still_used:
            self.io.delete(path)
            self.owned_files.discard(path)
        self.owned_files.update(d.file_path for d in deletes.added)
        for f in marked:
            self.delete_from(f)
        for d in deletes.added:
            self.add_deletes(d)
        for d in deletes.replaced:
            self.remove_deletes(d)
        self.files_changed()

    def restart(
        self, data_files: Iterable[DataFile], deletes: DeleteFiles, marked: Iterable[DataFile]
    ) -> None:
        """Replace everything this change adds and removes by the outcome of running it
        again at a newer head (``data_files`` and ``deletes`` for the data files
        ``marked``); the files earlier attempts wrote are deleted (never committed)."""
        for path in list(self.owned_files):
            self.io.delete(path)
        self.owned_files.clear()
        self.added_files.clear()
        self.removed_paths.clear()
        self.deletes_from.clear()
        data = list(data_files)
        self.owned_files.update(f.file_path for f in (*data, *deletes.added))
        for f in data:
            self.add_rows(f)
        for f in marked:
            self.delete_from(f)
        for d in deletes.added:
            self.add_deletes(d)
        for d in deletes.replaced:
            self.remove_deletes(d)
        self.files_changed()

    def _dv_targets(self) -> set[str]:
        return {
            f.referenced_data_file
            for f in self.added_files
            if f.is_deletion_vector and f.referenced_data_file
        }

    # -- committing ------------------------------------------------------------------

    def plan(self, md: TableMetadata) -> tuple[list[TableUpdate], list[TableRequirement]]:
        self.carry_over(md)  # before the checks: a rebase replaces concurrent DVs
        self._check_references(md)
        return super().plan(md)

    def validate(self, md: TableMetadata, parent: Snapshot | None) -> None:
        if parent is None:
            return
        touched = [*self.deletes_from.values(), *self.removed_paths.values()]
        check_no_new_deletes(self, md, parent, touched)
        if self.conflict_filter is None or self.isolation != "serializable":
            return
        if self.rebase_policy.reapplies:
            return  # its rebase marked the concurrent rows it applies to
        may_match = file_matcher(md, self.conflict_filter, self.case_sensitive)
        for e in added_since(md, self.io, self.base_snapshot_id, parent, self.ignore_snapshot_ids):
            if may_match(e.data_file):
                raise CommitConflictError(
                    f"a concurrent commit (snapshot {e.snapshot_id}) added data file "
                    f"{e.data_file.file_path} that this change's condition may match "
                    "(serializable isolation); reload the table and run the change again"
                )

    def _check_references(self, md: TableMetadata) -> None:
        """Data files our position deletes name must be live in the branch head (or
        added here), and must not have a DV already."""
        referenced = {
            f.referenced_data_file
            for f in self.added_files
            if f.content is DataFileContent.POSITION_DELETES and f.referenced_data_file
        } | set(self.deletes_from)
        if not referenced:
            return
        head = write_parent(md, self.branch)
        concurrent = head is not None and head.snapshot_id != self.base_snapshot_id
        live: set[str] = {
            f.file_path for f in self.added_files if f.content is DataFileContent.DATA
        }
        existing_dvs: set[str] = set()
        if head is not None:
            manifests = read_manifest_list(self.io, head.manifest_list)
            for e in live_entries(self.io, manifests, md):
                f = e.data_file
                if f.content is DataFileContent.DATA:
                    live.add(f.file_path)
                elif (
                    f.is_deletion_vector
                    and f.referenced_data_file
                    and file_key(f) not in self.removed_paths
                ):
                    existing_dvs.add(f.referenced_data_file)
        missing = sorted(referenced - live)
        if missing:
            if concurrent:
                raise CommitConflictError(
                    f"data file {missing[0]} that this change deletes rows from was removed "
                    "by a concurrent commit; reload the table and write the deletes again"
                )
            raise ValidationError(
                f"position deletes reference {missing[0]}, which is not a live data file of "
                f"branch {self.branch!r}; delete rows only from files the table holds"
            )
        clash = sorted(self._dv_targets() & existing_dvs)
        if clash:
            error = CommitConflictError if concurrent else ValidationError
            raise error(
                f"data file {clash[0]} has a deletion vector already; a new DV must merge "
                "the old one's positions and replace it (remove_deletes(old_dv))"
            )
