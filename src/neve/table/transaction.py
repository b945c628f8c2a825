"""Transactions: stage several changes, commit them once as one metadata version.

Each staged change is planned against the table as the changes staged before it leave
it (Iceberg-Java's transaction table): a delete after an append sees the appended rows,
an append after a schema change writes the new schema, a tag created after an append
points at the new snapshot. Data-writing changes write their files when staged. At
commit the staged metadata is swapped in as one new version; if another writer
committed first, every change is planned again on the refreshed table (appends rebase,
the others validate what happened concurrently since the transaction started). If the
commit fails, every file the transaction wrote is removed.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from neve.actions.append import AppendFiles
from neve.actions.base import Action, TableState
from neve.actions.commit import CommitTarget, PlannedChanges, commit_actions
from neve.actions.expire import ExpireSnapshots
from neve.actions.metadata import (
    SchemaAction,
    SortOrderAction,
    SpecAction,
    properties_action,
    ref_action,
    upgrade_action,
)
from neve.actions.overwrite import (
    OverwriteFiles,
    ReplacePartitions,
)
from neve.actions.rewrite_files import RewriteFiles
from neve.actions.rewrite_manifests import RewriteManifests
from neve.actions.row_delta import RowDelta
from neve.actions.snapshot import (
    Rebase,
    SnapshotAction,
    branch_head,
    check_branch_target,
    check_snapshot_properties,
    require_branch,
)
from neve.actions.update_schema import UpdateSchema
from neve.actions.update_sort_order import UpdateSortOrder
from neve.actions.update_spec import UpdateSpec
from neve.errors import DataSchemaMismatchError, NoSuchSnapshotError, ValidationError
from neve.expressions import BooleanExpression
from neve.expressions.binding import bind
from neve.expressions.parser import to_expression
from neve.planning.delete import DeleteFiles, DeletePlan, file_scoped_deletes, plan_delete
from neve.planning.merge import Clause, engine_for_merge
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile
from neve.spec.metadata_builder import apply_updates
from neve.spec.properties import read_property
from neve.spec.refs import MAIN_BRANCH, SnapshotRefType
from neve.spec.requirements import TableRequirement
from neve.spec.table_metadata import TableMetadata
from neve.spec.temporal import timestamp_millis
from neve.spec.updates import TableUpdate
from neve.table.merge import MergeBuilder, MergeResult

if TYPE_CHECKING:  # the pyarrow engine's result type; the module loads with the data path
    from neve.arrow.rowlevel import RowChanges

__all__ = ["DeleteWriter", "Rewriter", "Transaction", "TransactionTable"]

#: Writes the rows of planned whole-file tasks that a filter does not match as new data
#: files: ``rewriter(tasks, filter, case_sensitive) -> new files``.
Rewriter = Callable[[Sequence[FileScanTask], BooleanExpression, bool], list[DataFile]]

#: Writes delete files marking the rows of planned whole-file tasks that a filter
#: matches (merge-on-read): ``delete_writer(tasks, filter, case_sensitive)``.
DeleteWriter = Callable[[Sequence[FileScanTask], BooleanExpression, bool], DeleteFiles]


class TransactionTable(CommitTarget, Protocol):
    """The table handle a transaction changes (a :class:`neve.table.table.Table`)."""

    def with_metadata(self, metadata: TableMetadata) -> TransactionTable: ...


class Transaction:
    """Changes staged on one table and committed together (``commit()`` or the end of
    a ``with`` block)."""

    def __init__(self, table: TransactionTable, autocommit: bool = False) -> None:
        self.table = table
        self._actions: list[Action] = []
        self._committed = False
        self._autocommit = autocommit
        self._base: TableMetadata = table.metadata
        self._staged: TableMetadata = table.metadata
        self._changes: list[tuple[tuple[TableUpdate, ...], tuple[TableRequirement, ...]]] = []

    @property
    def metadata(self) -> TableMetadata:
        """The table's metadata as the changes staged so far leave it."""
        return self._staged

    def _view(self) -> TransactionTable:
        """A handle on the staged metadata, for writing and reading data files the way
        the staged table would."""
        return self.table.with_metadata(self._staged)

    # -- context manager --------------------------------------------------------------

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    def _check_open(self) -> None:
        if self._committed:
            raise ValidationError("this transaction was committed already; start a new one")

    def _stage(self, action: Action) -> None:
        """Plan ``action`` against the staged metadata and apply it there. If planning
        fails, the action's files are removed and nothing is staged."""
        self._check_open()
        if isinstance(action, SnapshotAction):
            # snapshots staged earlier in this transaction are not concurrent changes
            action.ignore_snapshot_ids = {
                a.snapshot_id for a in self._actions if isinstance(a, SnapshotAction)
            }
        try:
            updates, reqs = action.plan(self._staged)
            action.requirements_hold_or_conflict(reqs, self._staged)
            staged = apply_updates(self._staged, updates)
        except BaseException:
            action.on_failure(self.table.io)
            raise
        self._actions.append(action)
        self._changes.append((tuple(updates), tuple(reqs)))
        self._staged = staged
        if self._autocommit:
            self.commit()

    def commit(self) -> None:
        """Commit every staged change as one new table version."""
        if self._committed:
            return
        planned = PlannedChanges(self._base, tuple(self._changes))
        commit_actions(self.table, self._actions, planned=planned)
        self._committed = True

    def abort(self) -> None:
        """Drop the staged changes and the files they wrote."""
        for a in self._actions:
            a.on_failure(self.table.io)
        self._actions.clear()
        self._committed = True

    # -- data ----------------------------------------------------------------------

    def _write(self, data: pa.Table) -> list[Any]:
        if not isinstance(data, (pa.Table, pa.RecordBatch)):
            raise DataSchemaMismatchError(
                f"rows to write come as a pyarrow Table or RecordBatch, not "
                f"{type(data).__name__}; convert them first, e.g. pyarrow.table(...) or "
                "pyarrow.Table.from_pandas(df)"
            )
        # heavy: the pyarrow data path loads pyarrow.dataset and pyarrow.parquet (~80 ms);
        # only reading and writing rows need it, not planning or metadata work
        from neve.arrow.write import write_table_files

        return write_table_files(self._view(), data)

    def _writable(self, branch: str, snapshot_properties: Mapping[str, str] | None = None) -> None:
        """Checks before a change to ``branch`` writes anything."""
        self._check_open()
        check_snapshot_properties(snapshot_properties)
        if not isinstance(branch, str) or not branch:
            raise ValidationError(f"branch is a branch name, not {branch!r}")
        check_branch_target(self._staged, branch)

    def append(
        self,
        data: pa.Table,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Add ``data`` as new rows. On a primary-key table the keys must be new (unless
        ``write.primary-key.check`` is false): keys the batch holds twice, or the table
        holds already (also when a concurrent commit added them first), are refused
        with :class:`DuplicateKeyError` before anything is written."""
        self._writable(branch, snapshot_properties)
        md = self._staged
        on = md.schema().identifier_field_names
        check = bool(on) and bool(read_property(md.properties, "write.primary-key.check"))
        rebase = None
        if check:
            # heavy: the pyarrow data path reads the candidate files' key columns
            from neve.arrow.keys import check_new_keys
            from neve.arrow.rebase import NewKeysCheck  # heavy, as the line above

            rows = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
            if isinstance(rows, pa.Table):  # anything else is refused by _write
                check_new_keys(self._view(), rows, on, branch=branch)
                rebase = NewKeysCheck(rows, on)
        files = self._write(data)
        action = AppendFiles(
            self.table,
            branch=branch,
            snapshot_properties=snapshot_properties,
            owned_files=[f.file_path for f in files],
        )
        action.rebase = rebase
        for f in files:
            action.add_file(f)
        self._stage(action)

    def _stage_files(
        self,
        kind: type[AppendFiles] | type[ReplacePartitions],
        files: Sequence[DataFile],
        branch: str,
        snapshot_properties: Mapping[str, str] | None,
        *,
        owned: bool,
        rebase: Rebase | None = None,
    ) -> None:
        """Stage an append or partition replacement of ``files``; owned files (written
        by this transaction) are deleted if the change fails."""
        action = kind(
            self.table,
            branch=branch,
            snapshot_properties=snapshot_properties,
            owned_files=[f.file_path for f in files] if owned else (),
        )
        action.rebase = rebase
        for f in files:
            action.add_file(f)
        self._stage(action)

    def add_files(
        self,
        files: Sequence[Any],
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        rebase: Rebase | None = None,
    ) -> None:
        """Commit data files written elsewhere (for example by Spark executors).
        ``rebase`` checks the commits that land concurrently (e.g. the primary-key check
        of a Spark append, :mod:`neve.spark.keys`)."""
        self._writable(branch, snapshot_properties)
        self._stage_files(
            AppendFiles, files, branch, snapshot_properties, owned=False, rebase=rebase
        )

    def overwrite_files(
        self,
        files: Sequence[DataFile],
        filter: str | BooleanExpression | None = None,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
        rewriter: Rewriter | None = None,
    ) -> None:
        """Replace the rows matching ``filter`` (all rows when None) with data files
        written elsewhere. Files the filter matches partly are rewritten without the
        matching rows by ``rewriter(snapshot_id, files, filter, case_sensitive)`` (the
        pyarrow path by default); what it writes is deleted if the change fails."""
        self._writable(branch, snapshot_properties)
        self._stage(
            self._overwrite_action(
                None,
                to_expression(filter),
                branch,
                case_sensitive,
                snapshot_properties,
                files=files,
                rewriter=rewriter,
            )
        )

    def replace_partitions(
        self,
        files: Sequence[DataFile],
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Dynamic partition overwrite with data files written elsewhere: replace
        exactly the partitions ``files`` fall into (all data when unpartitioned)."""
        self._writable(branch, snapshot_properties)
        self._stage_files(ReplacePartitions, files, branch, snapshot_properties, owned=False)

    def row_delta(
        self,
        data_files: Sequence[Any] = (),
        delete_files: Sequence[Any] = (),
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Commit data files and delete files (position deletes, equality deletes,
        deletion vectors) written elsewhere, as one snapshot (merge-on-read)."""
        self._writable(branch, snapshot_properties)
        action = RowDelta(self.table, branch=branch, snapshot_properties=snapshot_properties)
        for f in data_files:
            action.add_rows(f)
        for f in delete_files:
            action.add_deletes(f)
        self._stage(action)

    def delete(
        self,
        filter: str | BooleanExpression,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
        rewriter: Rewriter | None = None,
        delete_writer: DeleteWriter | None = None,
    ) -> None:
        """Delete the rows matching ``filter``: files matched entirely are dropped from
        metadata alone. Files matched partly get deletion vectors (v3) or position
        delete files (v2) when ``write.delete.mode`` is ``merge-on-read``, else are
        rewritten without those rows. The branch must exist. To delete every row, say
        so: ``delete("true")``. ``rewriter`` / ``delete_writer`` choose the engine
        (pyarrow by default)."""
        if filter is None:
            raise ValidationError(
                'delete needs a filter; to delete every row, pass "true" explicitly'
            )
        self._writable(branch, snapshot_properties)
        require_branch(self._staged, branch)
        expr = to_expression(filter)
        if self.merge_on_read("delete"):
            self._stage(
                self._delete_action(
                    expr, branch, case_sensitive, snapshot_properties, delete_writer
                )
            )
            return
        self._stage(
            self._overwrite_action(
                None, expr, branch, case_sensitive, snapshot_properties, rewriter=rewriter
            )
        )

    def update(
        self,
        set: Mapping[str, Any],
        filter: str | BooleanExpression | None = None,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> int:
        """Set columns to literal values (``set={"status": "shipped"}``) in the rows
        matching ``filter`` (every row when None); returns the number of rows updated.
        Merge-on-read (``write.update.mode``) writes the updated rows as new data
        files and marks the old ones deleted; copy-on-write rewrites their files."""
        if not isinstance(set, Mapping) or not set:
            raise ValidationError(
                'update needs set={column: value, ...}, e.g. set={"status": "shipped"}'
            )
        self._writable(branch, snapshot_properties)
        require_branch(self._staged, branch)
        expr = to_expression(filter)
        md = self._staged
        bind(md.schema(), expr, case_sensitive)  # fail early, before writing anything
        plan = plan_delete(md, self.table.io, expr, branch=branch, case_sensitive=case_sensitive)
        mor = self.merge_on_read("update")
        from neve.arrow.rowlevel import update_rows  # heavy, as in _write

        tasks = [*plan.remove_tasks, *plan.rewrite]
        changes, count = update_rows(self._view(), tasks, expr, set, case_sensitive, mor)
        if count:
            self._stage(
                self.row_changes_action(
                    changes, expr, branch, case_sensitive, snapshot_properties, "update", mor
                )
            )
        return count

    def merge(self, source: pa.Table, on: Sequence[str] | None = None) -> MergeBuilder:
        """A MERGE of ``source`` into the table on the columns ``on`` (default: the
        primary key); add clauses, then ``execute()`` stages it."""
        md = self._staged
        schema = md.schema()
        keys = (
            list(on) if on else [schema.column_name(i) or "" for i in schema.identifier_field_ids]
        )

        def run(
            clauses: Sequence[Clause],
            branch: str,
            case_sensitive: bool,
            snapshot_properties: Mapping[str, str] | None,
        ) -> MergeResult:
            return self._merge(source, keys, clauses, branch, case_sensitive, snapshot_properties)

        return MergeBuilder(run)

    def upsert(
        self,
        source: pa.Table,
        on: Sequence[str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> MergeResult:
        """Update the rows whose key (default: the primary key) is in ``source`` with
        the source's rows, and insert the others."""
        return (
            self.merge(source, on)
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(branch=branch, snapshot_properties=snapshot_properties)
        )

    def _merge(
        self,
        source: pa.Table,
        on: Sequence[str],
        clauses: Sequence[Clause],
        branch: str,
        case_sensitive: bool,
        snapshot_properties: Mapping[str, str] | None,
    ) -> MergeResult:
        started = time.perf_counter()
        self._writable(branch, snapshot_properties)
        if not clauses:
            raise ValidationError(
                "this merge has no clause; add when_matched_update_all(), "
                "when_not_matched_insert_all() or another when_... clause"
            )
        mor = self.merge_on_read("merge")
        from neve.arrow.rowlevel import merge_rows  # heavy, as in _write

        engine = engine_for_merge(self._staged, on, clauses)
        outcome = merge_rows(
            self._view(),
            source,
            on,
            clauses,
            merge_on_read=mor,
            branch=branch,
            case_sensitive=case_sensitive,
            engine=engine,
        )
        changes = outcome.changes
        committing = time.perf_counter()
        # an upsert on the primary key rebases: the deduplicate engine re-locates its
        # keys in concurrently added files; other engines (and sequence fields, row
        # kinds, insert-only merges) merge again against the rows at the new head
        upserts = {c.kind for c in clauses} <= {"update_all", "insert_all"} and sorted(
            on
        ) == sorted(self._staged.schema().identifier_field_names)
        rerun: Callable[[TableState], RowChanges] | None = None
        if upserts and (engine is None or not engine.plain):

            def rerun(state: TableState) -> RowChanges:
                again = merge_rows(
                    state,
                    source,
                    on,
                    clauses,
                    merge_on_read=True,
                    branch=branch,
                    case_sensitive=case_sensitive,
                    engine=engine_for_merge(state.metadata, on, clauses),
                )
                return again.changes

        if changes.data_files or changes.deletes.added or changes.rewritten:
            self._stage(
                self.row_changes_action(
                    changes,
                    outcome.conflict_filter,
                    branch,
                    case_sensitive,
                    snapshot_properties,
                    "merge",
                    mor,
                    keys=source.select(list(on)) if upserts else None,
                    rerun=rerun,
                )
            )
        done = time.perf_counter()
        return MergeResult(
            rows_inserted=outcome.rows_inserted,
            rows_updated=outcome.rows_updated,
            rows_deleted=outcome.rows_deleted,
            files_scanned=outcome.files_scanned,
            files_skipped=outcome.files_skipped,
            data_files_added=len(changes.data_files),
            delete_files_added=len(changes.deletes.added),
            seconds={**outcome.seconds, "commit": done - committing, "total": done - started},
        )

    def stage_row_changes(
        self,
        changes: RowChanges,
        conflict_filter: BooleanExpression,
        operation: str,
        merge_on_read: bool,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Stage what an engine wrote for a row-level ``operation`` (update, merge):
        new data files with delete files, or with the files they rewrite; validated
        against ``conflict_filter`` (the rows the change read)."""
        self._writable(branch, snapshot_properties)
        self._stage(
            self.row_changes_action(
                changes,
                conflict_filter,
                branch,
                case_sensitive,
                snapshot_properties,
                operation,
                merge_on_read,
            )
        )

    def row_changes_action(
        self,
        changes: RowChanges,
        conflict_filter: BooleanExpression,
        branch: str,
        case_sensitive: bool,
        snapshot_properties: Mapping[str, str] | None,
        operation: str,
        merge_on_read: bool,
        keys: pa.Table | None = None,
        rerun: Callable[[TableState], RowChanges] | None = None,
    ) -> SnapshotAction:
        """The one snapshot of a row-level change: new data files with delete files
        (merge-on-read), or with the data files they rewrite (copy-on-write). A
        merge-on-read change rebases over concurrent commits (:mod:`neve.arrow.rebase`);
        ``keys`` (an upsert's primary keys) are then re-located in the files those
        commits added, or, with ``rerun``, the change is made again at the new head
        when those commits touched its keys."""
        written = changes.written_paths()
        if merge_on_read:
            delta = RowDelta(
                self.table,
                branch=branch,
                snapshot_properties=snapshot_properties,
                owned_files=written,
                conflict_filter=conflict_filter,
                case_sensitive=case_sensitive,
                isolation=self.isolation_level(operation),
            )
            # heavy: the pyarrow data path (a rebase reads and writes delete files)
            from neve.arrow.rebase import DeltaRebase

            DeltaRebase(
                writes_rows=bool(changes.data_files),
                keys=keys,
                on=self._staged.schema().identifier_field_names if keys is not None else (),
                rerun=rerun,
            ).attach(delta)
            for f in changes.data_files:
                delta.add_rows(f)
            self.add_delete_files(delta, changes.deleted_from, changes.deletes)
            return delta
        overwrite = OverwriteFiles(
            self.table,
            conflict_filter=conflict_filter,
            case_sensitive=case_sensitive,
            branch=branch,
            snapshot_properties=snapshot_properties,
            owned_files=written,
        )
        for t in changes.rewritten:
            overwrite.remove_file(t.file)
            for d in file_scoped_deletes(t):
                overwrite.remove_file(d)
        for f in changes.data_files:
            overwrite.add_file(f)
        return overwrite

    def merge_on_read(self, operation: str) -> bool:
        """Whether ``operation`` (delete, update, merge) writes delete files: the table
        property ``write.<operation>.mode`` says ``merge-on-read`` and the format
        version has delete files (2 or later)."""
        md = self._staged
        mode = read_property(md.properties, f"write.{operation}.mode")
        return bool(mode == "merge-on-read" and md.format_version >= 2)

    def isolation_level(self, operation: str) -> str:
        """``write.<operation>.isolation-level``: serializable (default) or snapshot."""
        return str(read_property(self._staged.properties, f"write.{operation}.isolation-level"))

    def _delete_action(
        self,
        expr: BooleanExpression,
        branch: str,
        case_sensitive: bool,
        snapshot_properties: Mapping[str, str] | None,
        delete_writer: DeleteWriter | None,
    ) -> RowDelta:
        md = self._staged
        bind(md.schema(), expr, case_sensitive)  # fail early, before writing anything
        plan = plan_delete(md, self.table.io, expr, branch=branch, case_sensitive=case_sensitive)
        action = self.row_delta_action(
            plan, expr, branch, case_sensitive, snapshot_properties, self.isolation_level("delete")
        )
        # heavy: the pyarrow data path (a rebase reads and writes delete files)
        from neve.arrow.rebase import DeltaRebase

        DeltaRebase(writes_rows=False, condition=expr, case_sensitive=case_sensitive).attach(action)
        try:
            if plan.rewrite:
                if delete_writer is not None:
                    deletes = delete_writer(plan.rewrite, expr, case_sensitive)
                else:
                    # heavy: the pyarrow data path, as in _write
                    from neve.arrow.positions import mark_matching

                    deletes = mark_matching(self._view(), plan.rewrite, expr, case_sensitive)
                self.add_delete_files(action, plan.rewrite, deletes)
        except BaseException:
            action.on_failure(self.table.io)
            raise
        return action

    def row_delta_action(
        self,
        plan: DeletePlan,
        expr: BooleanExpression,
        branch: str,
        case_sensitive: bool,
        snapshot_properties: Mapping[str, str] | None,
        isolation: str,
    ) -> RowDelta:
        """A row delta validated against ``expr`` that removes the data files ``plan``
        matches entirely (and the delete files only they had)."""
        action = RowDelta(
            self.table,
            branch=branch,
            snapshot_properties=snapshot_properties,
            conflict_filter=expr,
            case_sensitive=case_sensitive,
            isolation=isolation,
        )
        for f in plan.remove:
            action.remove_rows(f)
        for d in plan.dangling:
            action.remove_deletes(d)
        return action

    @staticmethod
    def add_delete_files(
        action: RowDelta, tasks: Sequence[FileScanTask], deletes: DeleteFiles
    ) -> None:
        """Add ``deletes`` (written for ``tasks``) to ``action``: they are removed if the
        change fails, and replace the delete files they merged."""
        action.owned_files.update(d.file_path for d in deletes.added)
        for t in tasks:
            action.delete_from(t.file)
        for d in deletes.added:
            action.add_deletes(d)
        for d in deletes.replaced:
            action.remove_deletes(d)

    def overwrite(
        self,
        data: pa.Table,
        filter: str | BooleanExpression | None = None,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Replace the rows matching ``filter`` (all rows when None) with ``data``."""
        self._writable(branch, snapshot_properties)
        self._stage(
            self._overwrite_action(
                data, to_expression(filter), branch, case_sensitive, snapshot_properties
            )
        )

    def _overwrite_action(
        self,
        data: pa.Table | None,
        expr: BooleanExpression,
        branch: str,
        case_sensitive: bool,
        snapshot_properties: Mapping[str, str] | None,
        *,
        files: Sequence[DataFile] = (),
        rewriter: Rewriter | None = None,
    ) -> OverwriteFiles:
        table = self.table
        md = self._staged
        bind(md.schema(), expr, case_sensitive)  # fail early, before writing anything
        new_files = self._write(data) if data is not None else []
        written_here = [f.file_path for f in new_files]
        new_files = [*new_files, *files]
        action = OverwriteFiles(
            table,
            conflict_filter=expr,
            case_sensitive=case_sensitive,
            branch=branch,
            snapshot_properties=snapshot_properties,
            owned_files=written_here,
        )
        try:
            plan = plan_delete(md, table.io, expr, branch=branch, case_sensitive=case_sensitive)
            for f in plan.remove:
                action.remove_file(f)
            # deletes naming a removed or rewritten file apply to nothing afterwards
            for d in [*plan.dangling, *(d for t in plan.rewrite for d in file_scoped_deletes(t))]:
                action.remove_file(d)
            if plan.rewrite:
                if rewriter is not None:
                    kept = rewriter(plan.rewrite, expr, case_sensitive)
                else:
                    from neve.arrow.write import rewrite_without  # heavy, as in _write

                    kept = rewrite_without(self._view(), plan.rewrite, expr, case_sensitive)
                action.owned_files.update(f.file_path for f in kept)
                for f in plan.rewrite_files:
                    action.remove_file(f)
                for f in kept:
                    action.add_file(f)
        except BaseException:
            action.on_failure(table.io)
            raise
        for f in new_files:
            action.add_file(f)
        return action

    def dynamic_partition_overwrite(
        self,
        data: pa.Table,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Replace exactly the partitions ``data`` touches (all data when unpartitioned)."""
        self._writable(branch, snapshot_properties)
        files = self._write(data)
        self._stage_files(ReplacePartitions, files, branch, snapshot_properties, owned=True)

    # -- metadata ------------------------------------------------------------------

    def update_schema(
        self, allow_incompatible_changes: bool = False, case_sensitive: bool = True
    ) -> UpdateSchema:
        md = self._staged

        def on_commit(u: UpdateSchema) -> None:
            schema, last_id = u.apply()
            self._stage(SchemaAction(md, schema, last_id))

        u = UpdateSchema(
            md.schema(), md.last_column_id, md.format_version, case_sensitive, on_commit=on_commit
        )
        if allow_incompatible_changes:
            u.allow_incompatible_changes()
        return u

    def update_spec(self, case_sensitive: bool = True) -> UpdateSpec:
        md = self._staged

        def on_commit(u: UpdateSpec) -> None:
            self._stage(SpecAction(md, u.apply()))

        return UpdateSpec(md, case_sensitive, on_commit=on_commit)

    def update_sort_order(self, case_sensitive: bool = True) -> UpdateSortOrder:
        md = self._staged

        def on_commit(u: UpdateSortOrder) -> None:
            self._stage(SortOrderAction(u.apply()))

        return UpdateSortOrder(md, case_sensitive, on_commit=on_commit)

    def set_properties(self, properties: Mapping[str, str] | None = None, **kwargs: str) -> None:
        if properties is not None and not isinstance(properties, Mapping):
            raise ValidationError(
                f"set_properties takes a mapping of names to strings, not {properties!r}"
            )
        self._stage(properties_action(updates={**(properties or {}), **kwargs}))

    def remove_properties(self, *keys: str) -> None:
        self._stage(properties_action(removals=keys))

    def upgrade_format_version(self, version: int) -> None:
        self._stage(upgrade_action(version))

    # -- snapshots and refs --------------------------------------------------------

    def create_branch(
        self,
        name: str,
        snapshot_id: int | None = None,
        *,
        min_snapshots_to_keep: int | None = None,
        max_snapshot_age_ms: int | None = None,
        max_ref_age_ms: int | None = None,
    ) -> None:
        md = self._staged
        sid = snapshot_id if snapshot_id is not None else md.current_snapshot_id
        self._stage(
            ref_action(
                md,
                name,
                sid,
                create=True,
                min_snapshots_to_keep=min_snapshots_to_keep,
                max_snapshot_age_ms=max_snapshot_age_ms,
                max_ref_age_ms=max_ref_age_ms,
            )
        )

    def create_tag(
        self, name: str, snapshot_id: int | None = None, *, max_ref_age_ms: int | None = None
    ) -> None:
        md = self._staged
        sid = snapshot_id if snapshot_id is not None else md.current_snapshot_id
        self._stage(
            ref_action(
                md,
                name,
                sid,
                ref_type=SnapshotRefType.TAG,
                create=True,
                max_ref_age_ms=max_ref_age_ms,
            )
        )

    def set_tag(self, name: str, snapshot_id: int, *, max_ref_age_ms: int | None = None) -> None:
        """Create the tag ``name`` or move it to ``snapshot_id`` (Iceberg's
        create-or-replace); ``max_ref_age_ms`` replaces the tag's age limit when given."""
        md = self._staged
        current = md.refs.get(name)
        self._stage(
            ref_action(
                md,
                name,
                snapshot_id,
                ref_type=SnapshotRefType.TAG,
                create=current is None,
                max_ref_age_ms=max_ref_age_ms,
            )
        )

    def remove_branch(self, name: str) -> None:
        self._stage(ref_action(self._staged, name, None, remove=True))

    def remove_tag(self, name: str) -> None:
        self._stage(ref_action(self._staged, name, None, ref_type=SnapshotRefType.TAG, remove=True))

    def set_current_snapshot(self, snapshot_id: int, branch: str = MAIN_BRANCH) -> None:
        """Point a branch at any known snapshot."""
        self._stage(ref_action(self._staged, branch, snapshot_id))

    def rewrite_files(
        self,
        added: Sequence[DataFile],
        removed: Sequence[DataFile],
        data_files: Sequence[DataFile] = (),
        branch: str = MAIN_BRANCH,
        *,
        data_sequence_number: int | None = None,
        starting_snapshot_id: int | None = None,
        rebase: Rebase | None = None,
    ) -> RewriteFiles:
        """Replace files by equivalent ones (a ``replace`` snapshot): ``added`` hold
        the live rows of the removed data files, or the positions of the removed delete
        files for ``data_files``. A compaction passes the data sequence number its new
        files keep, the snapshot it read (concurrent commits are those after it), and
        the ``rebase`` that carries concurrent position deletes over to its files."""
        self._writable(branch, None)
        action = RewriteFiles(self.table, branch=branch, owned_files=[f.file_path for f in added])
        action.data_sequence_number = data_sequence_number
        if starting_snapshot_id is not None:
            action.base_snapshot_id = starting_snapshot_id
        if rebase is not None:
            action.rebase = rebase
            action.rebases_positions = True
            # losing the swap then only says others were faster: retry until the
            # total timeout, as rebasing row deltas do
            action.always_rebases = True
        self._stage(action.rewrite(added, removed, data_files))
        return action

    def rewrite_manifests(
        self, spec_id: int | None = None, branch: str = MAIN_BRANCH
    ) -> RewriteManifests:
        """Stage the rewrite of the head's data manifests, clustered by partition;
        returns the action (its ``replaced`` and ``written`` manifests after the commit)."""
        self._writable(branch, None)
        action = RewriteManifests(self.table, spec_id=spec_id, branch=branch)
        self._stage(action)
        return action

    def expire_snapshots(
        self,
        now_ms: int,
        older_than_ms: int | None = None,
        retain_last: int | None = None,
        snapshot_ids: Sequence[int] = (),
        clean_expired_metadata: bool = False,
    ) -> ExpireSnapshots:
        """Stage the removal of expired snapshots and refs, and with
        ``clean_expired_metadata`` of the specs and schemas only they used (metadata
        only; the files they alone reached are deleted by
        ``table.maintenance.expire_snapshots``). Returns the action, whose
        ``planned_on`` is the version it was last planned on."""
        clean = self.table.io if clean_expired_metadata else None
        action = ExpireSnapshots(now_ms, older_than_ms, retain_last, snapshot_ids, clean)
        self._stage(action)
        return action

    def rollback_to_snapshot(self, snapshot_id: int, branch: str = MAIN_BRANCH) -> None:
        """Point a branch back at one of its ancestors."""
        md = self._staged
        require_branch(md, branch)
        head = branch_head(md, branch)
        ancestors = {s.snapshot_id for s in md.ancestors(head.snapshot_id if head else None)}
        if snapshot_id not in ancestors:
            raise NoSuchSnapshotError(
                f"snapshot {snapshot_id} is not an ancestor of {branch!r}; use "
                "set_current_snapshot() to move to a snapshot outside its history"
            )
        self._stage(ref_action(md, branch, snapshot_id))

    def rollback_to_time(self, when: int | str | dt.datetime, branch: str = MAIN_BRANCH) -> None:
        """Point a branch at its newest ancestor committed before ``when``."""
        md = self._staged
        ts = timestamp_millis(when)
        require_branch(md, branch)
        head = branch_head(md, branch)
        for s in md.ancestors(head.snapshot_id if head else None):
            if s.timestamp_ms < ts:
                self._stage(ref_action(md, branch, s.snapshot_id))
                return
        raise NoSuchSnapshotError(
            f"{branch!r} has no snapshot older than {when!r}; pick a later time"
        )
