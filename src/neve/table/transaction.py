"""Transactions: stage several changes, commit them once as one metadata version.

Each staged change is planned against the table as the changes staged before it leave
it (Iceberg-Java's transaction table): a delete after an append sees the appended rows,
an append after a schema change writes the new schema, a tag created after an append
points at the new snapshot. Data-writing changes write their files when staged, with
the transaction's engine (:class:`neve.engine.Engine`: pyarrow by default, Spark with
``table.transaction(SparkEngine(spark))``); planning, validation, the actions and the
commit are the same whatever the engine (:mod:`neve.table.row_changes`). At commit the
staged metadata is swapped in as one new version; if another writer committed first,
every change is planned again on the refreshed table (appends rebase, the others
validate what happened concurrently since the transaction started). If the commit
fails, every file the transaction wrote is removed. After a commit that appended or
upserted rows, ``write.auto-compact.enabled`` compacts the partitions it touched.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any, Generic, Protocol

from neve.actions.append import AppendFiles
from neve.actions.base import Action
from neve.actions.commit import CommitTarget, PlannedChanges, commit_actions
from neve.actions.overwrite import ReplacePartitions
from neve.actions.rewrite_files import RewriteFiles
from neve.actions.row_delta import RowDelta
from neve.actions.snapshot import (
    REBASES,
    VALIDATES,
    RebasePolicy,
    SnapshotAction,
    check_branch_target,
    check_snapshot_properties,
    require_branch,
    write_parent,
)
from neve.engine.protocol import Engine, R
from neve.errors import ValidationError
from neve.expressions import BooleanExpression
from neve.expressions.parser import to_expression
from neve.planning.merge import Clause
from neve.spec.manifest import DataFile
from neve.spec.metadata_builder import apply_updates
from neve.spec.refs import MAIN_BRANCH
from neve.spec.requirements import TableRequirement
from neve.spec.table_metadata import TableMetadata
from neve.spec.updates import TableUpdate
from neve.table.compaction import auto_compact
from neve.table.merge import MergeBuilder, MergeResult
from neve.table.metadata_changes import MetadataChanges
from neve.table.row_changes import (
    RowChange,
    delete_action,
    merge_on_read,
    overwrite_action,
    row_changes_action,
    run_merge,
)

__all__ = ["Transaction", "TransactionTable"]

#: The clauses of an upsert.
_UPSERT = (Clause("update_all"), Clause("insert_all"))


class TransactionTable(CommitTarget, Protocol):
    """The table handle a transaction changes (a :class:`neve.table.table.Table`)."""

    def with_metadata(self, metadata: TableMetadata) -> TransactionTable: ...


class Transaction(MetadataChanges, Generic[R]):
    """Changes staged on one table and committed together (``commit()`` or the end of
    a ``with`` block); rows are written by ``engine``."""

    def __init__(
        self, table: TransactionTable, engine: Engine[R], autocommit: bool = False
    ) -> None:
        self.table = table
        self.engine = engine
        self._actions: list[Action] = []
        self._committed = False
        self._autocommit = autocommit
        self._base: TableMetadata = table.metadata
        self._staged: TableMetadata = table.metadata
        self._changes: list[tuple[tuple[TableUpdate, ...], tuple[TableRequirement, ...]]] = []
        #: Branches rows were appended or upserted to: compacted after the commit.
        self._grown: set[str] = set()

    @property
    def metadata(self) -> TableMetadata:
        """The table's metadata as the changes staged so far leave it."""
        return self._staged

    def _target(self) -> TransactionTable:
        return self.table

    def _view(self) -> TransactionTable:
        """A handle on the staged metadata, for writing and reading data files the way
        the staged table would."""
        return self.table.with_metadata(self._staged)

    # -- context manager --------------------------------------------------------------

    def __enter__(self) -> Transaction[R]:
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
        """Commit every staged change as one new table version, then compact what it
        appended when the table asks for it (``write.auto-compact.enabled``)."""
        if self._committed:
            return
        planned = PlannedChanges(self._base, tuple(self._changes))
        commit_actions(self.table, self._actions, planned=planned)
        self._committed = True
        for branch in sorted(self._grown):
            before = write_parent(self._base, branch)
            auto_compact(self.table, self.engine, branch, before.snapshot_id if before else None)

    def abort(self) -> None:
        """Drop the staged changes and the files they wrote."""
        for a in self._actions:
            a.on_failure(self.table.io)
        self._actions.clear()
        self._committed = True

    # -- data ----------------------------------------------------------------------

    def _writable(self, branch: str, snapshot_properties: Mapping[str, str] | None) -> None:
        """Checks before a change to ``branch`` writes anything."""
        self._check_open()
        check_snapshot_properties(snapshot_properties)
        if not isinstance(branch, str) or not branch:
            raise ValidationError(f"branch is a branch name, not {branch!r}")
        check_branch_target(self._staged, branch)

    def _change(
        self,
        branch: str,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> RowChange:
        return RowChange(
            self.table, self._view(), self.engine, branch, case_sensitive, snapshot_properties
        )

    def append(
        self,
        rows: R,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Add ``rows`` as new rows. On a primary-key table the keys must be new (unless
        ``write.primary-key.check`` is false): keys the rows hold twice, or the table
        holds already (also when a concurrent commit added them first), are refused
        with :class:`DuplicateKeyError` before anything is written."""
        self._writable(branch, snapshot_properties)
        view = self._view()
        self.engine.columns(rows)  # rows the engine cannot take are refused first
        on = self._staged.schema().identifier_field_names
        rebase = REBASES
        if on and self._staged.props.as_bool("write.primary-key.check"):
            rebase = self.engine.check_new_keys(view, rows, on, branch)
        files = self.engine.write(view, rows)
        self._grown.add(branch)  # before staging: an autocommit commits there
        self._stage_files(AppendFiles, files, branch, snapshot_properties, True, rebase)

    def _stage_files(
        self,
        kind: type[AppendFiles] | type[ReplacePartitions],
        files: Sequence[DataFile],
        branch: str,
        snapshot_properties: Mapping[str, str] | None,
        owned: bool,
        rebase: RebasePolicy = REBASES,
    ) -> None:
        """Stage an append or partition replacement of ``files``; owned files (written
        by this transaction) are deleted if the change fails."""
        paths = [f.file_path for f in files] if owned else []
        action: SnapshotAction
        if kind is AppendFiles:
            action = AppendFiles(
                self.table,
                branch=branch,
                snapshot_properties=snapshot_properties,
                owned_files=paths,
                rebase=rebase,
            )
        else:
            action = ReplacePartitions(
                self.table,
                branch=branch,
                snapshot_properties=snapshot_properties,
                owned_files=paths,
            )
        for f in files:
            action.add_file(f)
        self._stage(action)

    def add_files(
        self,
        files: Sequence[DataFile],
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Commit data files written elsewhere (not checked, not owned: they stay when
        the change fails)."""
        self._writable(branch, snapshot_properties)
        self._stage_files(AppendFiles, files, branch, snapshot_properties, False)

    def overwrite(
        self,
        rows: R,
        filter: str | BooleanExpression | None = None,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Replace the rows matching ``filter`` (all rows when None) with ``rows``."""
        self._writable(branch, snapshot_properties)
        change = self._change(branch, case_sensitive, snapshot_properties)
        expr = to_expression(filter)
        change.plan(expr)  # the filter binds: fail before anything is written
        files = self.engine.write(change.view, rows)
        owned = [f.file_path for f in files]
        self._stage(overwrite_action(change, expr, files, owned))

    def overwrite_files(
        self,
        files: Sequence[DataFile],
        filter: str | BooleanExpression | None = None,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Replace the rows matching ``filter`` (all rows when None) with data files
        written elsewhere; files the filter matches in part are rewritten by the
        engine (what it writes is deleted if the change fails)."""
        self._writable(branch, snapshot_properties)
        change = self._change(branch, case_sensitive, snapshot_properties)
        self._stage(overwrite_action(change, to_expression(filter), files, []))

    def dynamic_partition_overwrite(
        self,
        rows: R,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Replace exactly the partitions ``rows`` touch (all data when unpartitioned)."""
        self._writable(branch, snapshot_properties)
        files = self.engine.write(self._view(), rows)
        self._stage_files(ReplacePartitions, files, branch, snapshot_properties, True)

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
        self._stage_files(ReplacePartitions, files, branch, snapshot_properties, False)

    def row_delta(
        self,
        data_files: Sequence[DataFile] = (),
        delete_files: Sequence[DataFile] = (),
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
    ) -> None:
        """Delete the rows matching ``filter``: files matched entirely are dropped from
        metadata alone. Files matched partly get deletion vectors (v3) or position
        delete files (v2) when ``write.delete.mode`` is ``merge-on-read``, else are
        rewritten without those rows. The branch must exist. To delete every row, say
        so: ``delete("true")``."""
        if filter is None:
            raise ValidationError(
                'delete needs a filter; to delete every row, pass "true" explicitly'
            )
        self._writable(branch, snapshot_properties)
        require_branch(self._staged, branch)
        change = self._change(branch, case_sensitive, snapshot_properties)
        expr = to_expression(filter)
        if merge_on_read(self._staged, "delete"):
            self._stage(delete_action(change, expr))
        else:
            self._stage(overwrite_action(change, expr, [], []))

    def update(
        self,
        set: Mapping[str, Any],
        filter: str | BooleanExpression | None = None,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> int:
        """Set columns (``set={"status": "shipped"}``: literal values on pyarrow, SQL
        expressions on Spark) in the rows matching ``filter`` (every row when None);
        returns the number of rows updated. Merge-on-read (``write.update.mode``) writes
        the updated rows as new data files and marks the old ones deleted;
        copy-on-write rewrites their files."""
        if not isinstance(set, Mapping) or not set:
            raise ValidationError(
                'update needs set={column: value, ...}, e.g. set={"status": "shipped"}'
            )
        self._writable(branch, snapshot_properties)
        require_branch(self._staged, branch)
        top = [f.name for f in self._staged.schema().fields]
        unknown = [c for c in set if c not in top]
        if unknown:
            raise ValidationError(
                f"update sets column {unknown[0]!r}, which the table does not have "
                f"(top-level columns: {', '.join(top)})"
            )
        change = self._change(branch, case_sensitive, snapshot_properties)
        expr = to_expression(filter)
        plan = change.plan(expr)
        mor = merge_on_read(self._staged, "update")
        tasks = [*plan.remove_tasks, *plan.rewrite]
        done = self.engine.update_rows(change.view, tasks, expr, set, case_sensitive, mor)
        if done.rows_updated:
            self._stage(row_changes_action(change, done.changes, expr, "update", mor))
        return done.rows_updated

    def merge(self, source: R, on: Sequence[str] | None = None) -> MergeBuilder:
        """A MERGE of ``source`` into the table on the columns ``on`` (default: the
        primary key), with SQL MERGE's rules on every table; add clauses, then
        ``execute()`` stages it."""
        keys = self._keys(on)

        def run(
            clauses: Sequence[Clause],
            branch: str,
            case_sensitive: bool,
            snapshot_properties: Mapping[str, str] | None,
        ) -> MergeResult:
            return self._merge(
                source, keys, clauses, branch, case_sensitive, snapshot_properties, False
            )

        return MergeBuilder(run)

    def upsert(
        self,
        source: R,
        on: Sequence[str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> MergeResult:
        """Update the rows whose key (default: the primary key) is in ``source`` with
        the source's rows, and insert the others; on the primary key the table's merge
        engine decides (docs/MERGE-ENGINES.md)."""
        return self._merge(source, self._keys(on), _UPSERT, branch, True, snapshot_properties, True)

    def _keys(self, on: Sequence[str] | None) -> list[str]:
        schema = self._staged.schema()
        if on:
            return list(on)
        return [schema.column_name(i) or "" for i in schema.identifier_field_ids]

    def _merge(
        self,
        source: R,
        on: Sequence[str],
        clauses: Sequence[Clause],
        branch: str,
        case_sensitive: bool,
        snapshot_properties: Mapping[str, str] | None,
        upsert: bool,
    ) -> MergeResult:
        started = time.perf_counter()
        self._writable(branch, snapshot_properties)
        change = self._change(branch, case_sensitive, snapshot_properties)
        result, action = run_merge(change, source, on, clauses, upsert=upsert)
        committing = time.perf_counter()
        if action is not None:
            if upsert:
                self._grown.add(branch)
            self._stage(action)
        done = time.perf_counter()
        seconds = {**result.seconds, "commit": done - committing, "total": done - started}
        return replace(result, seconds=seconds)

    def rewrite_files(
        self,
        added: Sequence[DataFile],
        removed: Sequence[DataFile],
        data_files: Sequence[DataFile] = (),
        branch: str = MAIN_BRANCH,
        *,
        data_sequence_number: int | None = None,
        starting_snapshot_id: int | None = None,
        rebase: RebasePolicy = VALIDATES,
    ) -> RewriteFiles:
        """Replace files by equivalent ones (a ``replace`` snapshot): ``added`` hold
        the live rows of the removed data files, or the positions of the removed delete
        files for ``data_files``. A compaction passes the data sequence number its new
        files keep, the snapshot it read (concurrent commits are those after it), and
        the rebase that carries concurrent position deletes over to its files."""
        self._writable(branch, None)
        action = RewriteFiles(
            self.table,
            branch=branch,
            owned_files=[f.file_path for f in added],
            rebase=rebase,
            validate_from="head" if starting_snapshot_id is None else starting_snapshot_id,
            data_sequence_number=data_sequence_number,
        )
        self._stage(action.rewrite(added, removed, data_files))
        return action
