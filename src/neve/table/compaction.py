"""``rewrite_data_files``: plan a compaction (``planning/compaction.py``), write each
file group with an engine (``Engine.compact``: pyarrow on the driver, or Spark jobs),
commit it as ``replace`` snapshots through the one commit path, then optionally remove
the delete files that apply to nothing any more.

With ``partial-progress.enabled`` the groups are committed in up to
``partial-progress.max-commits`` commits as they are written; a commit that fails
removes only its own files, the earlier ones stay, and the rewrite goes on until more
than ``partial-progress.max-failed-commits`` have failed. Every commit validates
against the snapshot the rewrite started from, keeps that snapshot's data sequence
number for the new files (``use-starting-sequence-number``, so equality deletes
committed meanwhile still apply to them) and carries position deletes and deletion
vectors committed meanwhile over to the new files (the engine's compaction rebase):
both engines record where every row they wrote came from.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from neve.actions.commit import CommitTarget, commit_actions
from neve.actions.rewrite_files import RewriteFiles
from neve.actions.snapshot import check_branch_target, write_parent
from neve.actions.update_sort_order import sort_order_from_terms
from neve.actions.validation import added_since
from neve.engine.protocol import Engine
from neve.errors import (
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    NeveError,
    SchemaError,
    ValidationError,
)
from neve.expressions import ALWAYS_TRUE, BooleanExpression
from neve.expressions.binding import bind
from neve.expressions.parser import to_expression
from neve.planning.compaction import CompactionPlan, ZOrder, dangling_deletes, plan_compaction
from neve.planning.delete import file_scoped_deletes
from neve.spec.refs import MAIN_BRANCH
from neve.spec.sort_order import SortOrder
from neve.spec.table_metadata import TableMetadata
from neve.spec.transforms import IdentityTransform

__all__ = [
    "AUTO_COMPACT_ENABLED",
    "AUTO_COMPACT_MIN_INPUT_FILES",
    "CompactedTable",
    "Progress",
    "RewriteDataResult",
    "auto_compact",
    "execute_compaction",
    "resolve_sort",
    "rewrite_data_files",
]

_log = logging.getLogger("neve.compaction")


class CompactedTable(CommitTarget, Protocol):
    """What a compaction needs of a table handle (``neve.table.table.Table``): it
    commits through the one commit path."""


#: Told ``(groups written, groups planned)`` as a rewrite goes on.
Progress = Callable[[int, int], None]


def _rows(pairs: Sequence[tuple[str, object]]) -> str:
    width = max(len(k) for k, _ in pairs)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in pairs)


@dataclass(frozen=True)
class RewriteDataResult:
    """Counts as Iceberg-Java's ``rewrite_data_files`` procedure reports them
    (``removed_delete_files_count`` counts the rewritten files' own deletes and, with
    ``remove-dangling-deletes``, the dangling ones; ``failed_data_files_count`` the
    files of groups whose commit failed under partial progress)."""

    rewritten_data_files_count: int
    added_data_files_count: int
    rewritten_bytes_count: int
    removed_delete_files_count: int
    file_groups: int
    dry_run: bool = False
    failed_data_files_count: int = 0
    commits: int = 0

    def __str__(self) -> str:
        verb = "would rewrite" if self.dry_run else "rewrote"
        pairs: list[tuple[str, object]] = [
            (f"{verb} data files", self.rewritten_data_files_count),
            ("in file groups", self.file_groups),
            ("bytes rewritten", f"{self.rewritten_bytes_count:,}"),
            ("data files added", self.added_data_files_count),
            ("delete files removed", self.removed_delete_files_count),
        ]
        if self.failed_data_files_count:
            pairs.append(("data files in failed groups", self.failed_data_files_count))
        return _rows(pairs)


_ZORDER = re.compile(r"^\s*zorder\s*\((?P<cols>.*)\)\s*$", re.IGNORECASE)


def _split_terms(text: str) -> list[str]:
    """Split ``a desc, bucket(4, b)`` at the commas outside parentheses."""
    terms: list[str] = []
    depth = 0
    current = ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += ch
    terms.append(current)
    return [t.strip() for t in terms if t.strip()]


def resolve_sort(
    md: TableMetadata, strategy: str, sort_order: str | SortOrder | None
) -> SortOrder | ZOrder | None:
    """The order of a sort rewrite: ``sort_order`` as Iceberg-Java's procedure takes it
    (``"id desc nulls last, bucket(4, s)"`` or ``"zorder(a, b)"``) or a
    :class:`SortOrder`; by default the table's. None for bin-packing."""
    if strategy != "sort":
        if sort_order is not None:
            raise ValidationError(
                "sort_order= is for strategy='sort'; pass strategy='sort' too, or drop it"
            )
        return None
    if sort_order is None:
        return md.sort_order()
    if isinstance(sort_order, SortOrder):
        return sort_order
    schema = md.schema()
    z = _ZORDER.match(sort_order)
    if z is None:
        try:
            return sort_order_from_terms(schema, _split_terms(sort_order))
        except SchemaError as exc:
            raise ValidationError(f"sort_order={sort_order!r}: {exc}") from exc
    names = _split_terms(z.group("cols"))
    if not names:
        raise ValidationError("zorder() needs at least one column, e.g. zorder(a, b)")
    identity = {f.source_id for f in md.spec().fields if isinstance(f.transform, IdentityTransform)}
    ids = []
    for name in names:
        field = schema.find_field_or_none(name)
        if field is None:
            raise ValidationError(
                f"zorder column {name!r} is not in the table; columns: "
                f"{', '.join(schema.column_names)}"
            )
        if field.field_id in identity:
            raise ValidationError(
                f"cannot z-order by {name!r}: it is an identity partition column, constant "
                "within each file group; leave it out"
            )
        ids.append(field.field_id)
    return ZOrder(tuple(ids))


@dataclass(frozen=True)
class _Committed:
    added: int
    removed_deletes: int


def _commit(table: CompactedTable, action: RewriteFiles) -> None:
    """Commit one ``replace`` action through the one commit path."""
    commit_actions(table, [action])


def _commit_groups(
    table: CompactedTable,
    engine: Engine[Any],
    plan: CompactionPlan,
    branch: str,
    on_group: Callable[[int], None],
) -> _Committed:
    """Write the groups of ``plan`` and commit them as one ``replace`` snapshot; on
    failure nothing they wrote is left."""
    tasks = plan.tasks
    scoped = {(d.file_path, d.content_offset): d for t in tasks for d in file_scoped_deletes(t)}
    o = plan.options
    compacted = engine.compact(table, plan, on_group)
    files = compacted.files
    action = RewriteFiles(
        table,
        branch=branch,
        owned_files=[f.file_path for f in files],
        rebase=engine.compaction_rebase(compacted),
        validate_from=plan.snapshot_id,
        data_sequence_number=plan.sequence_number if o.use_starting_sequence_number else None,
    )
    try:
        check_branch_target(table.metadata, branch)
        action.rewrite(files, [t.file for t in tasks] + list(scoped.values()))
        _commit(table, action)
    except BaseException:
        action.on_failure(table.io)
        raise
    return _Committed(len(files), len(scoped))


def _remove_dangling(table: CompactedTable, branch: str) -> int:
    """Commit the removal of the delete files that apply to nothing (a ``replace``
    snapshot of its own); returns how many. The rewrite has landed: when a concurrent
    commit removed one of them first, this is logged and counts none."""
    dangling = dangling_deletes(table.metadata, table.io, branch)
    if not dangling:
        return 0
    try:
        _commit(table, RewriteFiles(table, branch=branch).rewrite([], dangling))
    except CommitConflictError as exc:
        _log.warning("removing dangling deletes of %s failed: %s", table.metadata.location, exc)
        return 0
    return len(dangling)


def rewrite_data_files(
    table: CompactedTable,
    where: str | BooleanExpression | None = None,
    options: Mapping[str, str] | None = None,
    *,
    strategy: str = "binpack",
    sort_order: str | SortOrder | None = None,
    branch: str = MAIN_BRANCH,
    dry_run: bool = False,
    engine: Engine[Any],
    progress: Progress | None = None,
) -> RewriteDataResult:
    """Compact ``table`` with ``engine`` (module docstring;
    ``Maintenance.rewrite_data_files`` documents the arguments)."""
    md = table.metadata
    expr = ALWAYS_TRUE if where is None else to_expression(where)
    bind(md.schema(), expr)  # fail early on a bad filter
    sort = resolve_sort(md, strategy, sort_order)
    plan = plan_compaction(md, table.io, expr, options, branch=branch, strategy=strategy, sort=sort)
    if dry_run or not plan.groups:
        tasks = plan.tasks
        size = sum(t.file.file_size_in_bytes for t in tasks)
        scoped = {(d.file_path, d.content_offset) for t in tasks for d in file_scoped_deletes(t)}
        return RewriteDataResult(
            len(tasks), 0, size, len(scoped), len(plan.groups), dry_run=dry_run
        )
    return execute_compaction(table, engine, plan, branch, progress)


def execute_compaction(
    table: CompactedTable,
    engine: Engine[Any],
    plan: CompactionPlan,
    branch: str = MAIN_BRANCH,
    progress: Progress | None = None,
) -> RewriteDataResult:
    """Write and commit the groups of ``plan`` (module docstring)."""
    o = plan.options
    total = len(plan.groups)
    written_groups = 0

    def one_group(_rows: int = 0) -> None:
        nonlocal written_groups
        written_groups += 1
        if progress is not None:
            progress(written_groups, total)

    if o.partial_progress:
        per_commit = math.ceil(total / o.max_commits)
        batches = [plan.groups[i : i + per_commit] for i in range(0, total, per_commit)]
    else:
        batches = [plan.groups]
    added = removed = failed_files = failed_commits = commits = rewritten = 0
    rewritten_bytes = 0
    for batch in batches:
        files = [t.file for g in batch for t in g]
        try:
            done = _commit_groups(table, engine, replace(plan, groups=batch), branch, one_group)
        except NeveError as exc:
            if not o.partial_progress or isinstance(exc, CommitStateUnknownError):
                raise
            failed_commits += 1
            failed_files += len(files)
            _log.warning(
                "compaction of %d data files of %s failed: %s",
                len(files),
                table.metadata.location,
                exc,
            )
            if failed_commits > o.max_failed_commits:
                raise CommitError(
                    f"{failed_commits} commits of this compaction failed, more than "
                    f"partial-progress.max-failed-commits={o.max_failed_commits} (last: "
                    f"{exc}); the {commits} that landed stay. Run it again"
                ) from exc
            continue
        commits += 1
        added += done.added
        removed += done.removed_deletes
        rewritten += len(files)
        rewritten_bytes += sum(f.file_size_in_bytes for f in files)
    if o.remove_dangling_deletes and commits:
        removed += _remove_dangling(table, branch)
    return RewriteDataResult(
        rewritten,
        added,
        rewritten_bytes,
        removed,
        total,
        failed_data_files_count=failed_files,
        commits=commits,
    )


#: Table properties of automatic compaction after writes (off by default).
AUTO_COMPACT_ENABLED = "write.auto-compact.enabled"
AUTO_COMPACT_MIN_INPUT_FILES = "write.auto-compact.min-input-files"


def auto_compact(
    table: CompactedTable, engine: Engine[Any], branch: str, before: int | None
) -> RewriteDataResult | None:
    """With ``write.auto-compact.enabled``, compact (with ``engine``) the small files of
    the partitions the write that moved ``branch`` from snapshot ``before`` added files
    to: bin-packed to the table's ``write.target-file-size-bytes`` once a partition
    holds ``write.auto-compact.min-input-files`` (5) candidates, as a ``replace`` commit
    of its own. A failure is logged, never raised: the write has landed."""
    md = table.metadata
    try:
        if not md.props.as_bool(AUTO_COMPACT_ENABLED):
            return None
        head = write_parent(md, branch)
        if head is None or head.snapshot_id == before:
            return None
        touched = {
            (e.data_file.spec_id, e.data_file.partition)
            for e in added_since(md, table.io, before, head, set())
        }
        if not touched:
            return None
        options = {"min-input-files": str(md.props.as_int(AUTO_COMPACT_MIN_INPUT_FILES))}
        plan = plan_compaction(md, table.io, options=options, branch=branch)
        groups = tuple(g for g in plan.groups if (g[0].spec_id, g[0].file.partition) in touched)
        if not groups:
            return None
        return execute_compaction(table, engine, replace(plan, groups=groups), branch)
    except Exception as exc:  # the write landed; a compaction that fails only logs
        _log.warning("automatic compaction of %s after a write failed: %s", md.location, exc)
        return None
