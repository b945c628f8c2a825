"""How the table layer turns a row-level change into one action, the same for every
engine: it plans (``planning/delete.py``, ``planning/merge.py``), hands the planned
tasks to the engine (:class:`neve.engine.Engine`), and builds the action from what
the engine wrote: an :class:`OverwriteFiles` (copy-on-write: files matched whole are
dropped, files matched in part rewritten) or a :class:`RowDelta` (merge-on-read:
delete files) with the engine's rebase policy, validated against the rows it read.
A failure after the engine wrote removes what it wrote."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from neve.actions.base import TableState
from neve.actions.overwrite import OverwriteFiles
from neve.actions.row_delta import RowDelta
from neve.actions.snapshot import RebasePolicy, SnapshotAction
from neve.engine.changes import MergeOutcome, RowChanges
from neve.engine.protocol import Engine
from neve.expressions import BooleanExpression
from neve.expressions.binding import bind
from neve.planning.delete import DeleteFiles, DeletePlan, file_scoped_deletes, plan_delete
from neve.planning.merge import Clause, MergePlan, plan_merge
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile
from neve.spec.table_metadata import TableMetadata
from neve.table.merge import MergeResult

__all__ = [
    "RowChange",
    "delete_action",
    "isolation_level",
    "merge_on_read",
    "overwrite_action",
    "row_changes_action",
    "run_merge",
]


def merge_on_read(md: TableMetadata, operation: str) -> bool:
    """Whether ``operation`` (delete, update, merge) writes delete files: the table
    property ``write.<operation>.mode`` says ``merge-on-read`` and the format version
    has delete files (2 or later)."""
    mode = md.props.as_text(f"write.{operation}.mode")
    return mode == "merge-on-read" and md.format_version >= 2


def isolation_level(md: TableMetadata, operation: str) -> str:
    """``write.<operation>.isolation-level``: serializable (default) or snapshot."""
    return md.props.as_text(f"write.{operation}.isolation-level") or "serializable"


@dataclass(frozen=True)
class RowChange:
    """Where a row-level change commits and what it is: the handle its actions are
    made on (``table``), the staged version it is planned and written against
    (``view``), the engine, and the change's branch, case sensitivity and snapshot
    properties."""

    table: TableState
    view: TableState
    engine: Engine[Any]
    branch: str
    case_sensitive: bool
    snapshot_properties: Mapping[str, str] | None

    @property
    def metadata(self) -> TableMetadata:
        return self.view.metadata

    def plan(self, expr: BooleanExpression) -> DeletePlan:
        """The files ``expr`` matches whole or in part at the branch head (after
        checking that it binds, before anything is written)."""
        md = self.metadata
        bind(md.schema(), expr, self.case_sensitive)
        return plan_delete(
            md, self.view.io, expr, branch=self.branch, case_sensitive=self.case_sensitive
        )


def overwrite_action(
    change: RowChange, expr: BooleanExpression, files: Sequence[DataFile], owned: Sequence[str]
) -> OverwriteFiles:
    """Replace the rows ``expr`` matches by ``files`` (``owned``: the paths written for
    this change): files matched whole are dropped, files matched in part rewritten by
    the engine without those rows."""
    action = OverwriteFiles(
        change.table,
        conflict_filter=expr,
        case_sensitive=change.case_sensitive,
        branch=change.branch,
        snapshot_properties=change.snapshot_properties,
        owned_files=owned,
    )
    try:
        plan = change.plan(expr)
        for f in plan.remove:
            action.remove_file(f)
        # deletes naming a removed or rewritten file apply to nothing afterwards
        for d in [*plan.dangling, *(d for t in plan.rewrite for d in file_scoped_deletes(t))]:
            action.remove_file(d)
        if plan.rewrite:
            kept = change.engine.rewrite_without(
                change.view, plan.rewrite, expr, change.case_sensitive
            )
            action.owned_files.update(f.file_path for f in kept)
            for f in plan.rewrite_files:
                action.remove_file(f)
            for f in kept:
                action.add_file(f)
    except BaseException:
        action.on_failure(change.table.io)
        raise
    for f in files:
        action.add_file(f)
    return action


def _row_delta(
    change: RowChange,
    expr: BooleanExpression,
    operation: str,
    rebase: RebasePolicy,
    owned: Sequence[str] = (),
) -> RowDelta:
    return RowDelta(
        change.table,
        branch=change.branch,
        snapshot_properties=change.snapshot_properties,
        owned_files=owned,
        conflict_filter=expr,
        case_sensitive=change.case_sensitive,
        isolation=isolation_level(change.metadata, operation),
        rebase=rebase,
    )


def _add_deletes(action: RowDelta, tasks: Sequence[FileScanTask], deletes: DeleteFiles) -> None:
    """Add ``deletes`` (written for ``tasks``) to ``action``: they are removed if the
    change fails, and replace the delete files they merged."""
    action.owned_files.update(d.file_path for d in deletes.added)
    for t in tasks:
        action.delete_from(t.file)
    for d in deletes.added:
        action.add_deletes(d)
    for d in deletes.replaced:
        action.remove_deletes(d)


def delete_action(change: RowChange, expr: BooleanExpression) -> RowDelta:
    """A merge-on-read delete: files ``expr`` matches whole are removed, the matching
    rows of the others marked by the engine; it rebases by applying ``expr`` to the
    rows concurrent commits add."""
    plan = change.plan(expr)
    rebase = change.engine.delta_rebase(
        writes_rows=False, condition=expr, case_sensitive=change.case_sensitive
    )
    action = _row_delta(change, expr, "delete", rebase)
    for f in plan.remove:
        action.remove_rows(f)
    for d in plan.dangling:
        action.remove_deletes(d)
    try:
        if plan.rewrite:
            deletes = change.engine.mark_matching(
                change.view, plan.rewrite, expr, change.case_sensitive
            )
            _add_deletes(action, plan.rewrite, deletes)
    except BaseException:
        action.on_failure(change.table.io)
        raise
    return action


def row_changes_action(
    change: RowChange,
    changes: RowChanges,
    conflict_filter: BooleanExpression,
    operation: str,
    merge_on_read: bool,
    rebase: RebasePolicy | None = None,
) -> SnapshotAction:
    """The one snapshot of an UPDATE or MERGE: new data files with delete files
    (merge-on-read, rebasing by ``rebase`` or else by the engine's union of deletion
    vectors), or with the data files they rewrite (copy-on-write, validated only)."""
    written = changes.written_paths()
    if merge_on_read:
        if rebase is None:
            rebase = change.engine.delta_rebase(writes_rows=bool(changes.data_files))
        delta = _row_delta(change, conflict_filter, operation, rebase, written)
        for f in changes.data_files:
            delta.add_rows(f)
        _add_deletes(delta, changes.deleted_from, changes.deletes)
        return delta
    overwrite = OverwriteFiles(
        change.table,
        conflict_filter=conflict_filter,
        case_sensitive=change.case_sensitive,
        branch=change.branch,
        snapshot_properties=change.snapshot_properties,
        owned_files=written,
    )
    for t in changes.rewritten:
        overwrite.remove_file(t.file)
        for d in file_scoped_deletes(t):
            overwrite.remove_file(d)
    for f in changes.data_files:
        overwrite.add_file(f)
    return overwrite


def _plan(
    change: RowChange,
    state: TableState,
    rows: object,
    on: Sequence[str],
    clauses: Sequence[Clause],
    upsert: bool,
) -> MergePlan:
    engine = change.engine
    md = state.metadata
    return plan_merge(
        md,
        state.io,
        on,
        clauses,
        source_columns=engine.columns(rows),
        key_filter=lambda keys: engine.key_filter(state, rows, keys),
        merge_on_read=merge_on_read(md, "merge"),
        upsert=upsert,
        branch=change.branch,
        case_sensitive=change.case_sensitive,
    )


def _upsert_rebase(
    change: RowChange,
    rows: object,
    plan: MergePlan,
    clauses: Sequence[Clause],
    writes_rows: bool,
) -> RebasePolicy | None:
    """How an upsert rebases: the deduplicate engine re-locates its keys in the files
    concurrent commits added; other engines (and sequence fields, row kinds) merge again
    at the new head when those commits touched their keys. None: not an upsert."""
    if not plan.upsert or plan.engine is None:
        return None
    engine = change.engine
    keys = engine.source_keys(change.view, rows, plan.on)
    if plan.engine.plain:
        return engine.delta_rebase(writes_rows=writes_rows, keys=keys, on=plan.on)

    def rerun(state: TableState) -> RowChanges:
        again = _plan(change, state, rows, plan.on, clauses, upsert=True)
        if again.is_empty:
            return RowChanges()
        return engine.execute_merge(state, rows, replace(again, merge_on_read=True)).changes

    return engine.delta_rebase(writes_rows=writes_rows, keys=keys, on=plan.on, rerun=rerun)


def run_merge(
    change: RowChange,
    rows: object,
    on: Sequence[str],
    clauses: Sequence[Clause],
    *,
    upsert: bool,
) -> tuple[MergeResult, SnapshotAction | None]:
    """Plan and execute a MERGE (an upsert with ``upsert``) of ``rows``; returns its
    result (seconds up to the end of the data work) and the action to stage (None when
    nothing changed)."""
    started = time.perf_counter()
    plan = _plan(change, change.view, rows, on, clauses, upsert)
    planned = time.perf_counter()
    if plan.is_empty:
        return _result(plan, MergeOutcome(RowChanges()), started, planned, planned), None
    outcome = change.engine.execute_merge(change.view, rows, plan)
    written = time.perf_counter()
    changes = outcome.changes
    action = None
    if not changes.is_empty:
        rebase = None
        if plan.merge_on_read:
            rebase = _upsert_rebase(change, rows, plan, clauses, bool(changes.data_files))
        action = row_changes_action(
            change, changes, plan.conflict_filter, "merge", plan.merge_on_read, rebase
        )
    return _result(plan, outcome, started, planned, written), action


def _result(
    plan: MergePlan, outcome: MergeOutcome, started: float, planned: float, written: float
) -> MergeResult:
    changes = outcome.changes
    return MergeResult(
        rows_inserted=outcome.rows_inserted,
        rows_updated=outcome.rows_updated,
        rows_deleted=outcome.rows_deleted,
        files_scanned=plan.files_scanned,
        files_skipped=plan.files_skipped,
        data_files_added=len(changes.data_files),
        delete_files_added=len(changes.deletes.added),
        seconds={"plan": planned - started, **outcome.seconds},
        executed_by=outcome.executed_by,
    )
