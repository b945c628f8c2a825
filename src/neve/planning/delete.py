"""Planning a copy-on-write change by filter (delete, overwrite by filter): one pass of
the scan planner over the branch head gives every data file the filter may match, with
the tasks to read it; of those, the files the filter matches entirely (by strict
partition projection or strict metrics) are dropped from metadata alone, and the others
are rewritten from their planned tasks. Engines rewrite exactly these tasks; nothing
plans the table a second time. Also planned here: merging each data file's position
deletes into one (``rewrite_position_delete_files``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from neve.errors import ValidationError
from neve.expressions import BooleanExpression
from neve.expressions.evaluator import evaluator
from neve.expressions.metrics_evaluator import StrictMetricsEvaluator
from neve.expressions.projection import strict_projection
from neve.io.fileio import FileIO
from neve.planning.manifest_cache import cached_manifest_list
from neve.planning.scan import ScanPlan, live_entries
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile, DataFileContent, ManifestContent
from neve.spec.refs import MAIN_BRANCH
from neve.spec.schema import Schema, with_row_lineage
from neve.spec.table_metadata import TableMetadata

__all__ = [
    "DeleteFiles",
    "DeletePlan",
    "PositionDeleteRewrite",
    "file_scoped_deletes",
    "plan_delete",
    "plan_position_delete_rewrite",
    "rewrite_schema",
    "whole_file_tasks",
]


@dataclass(frozen=True)
class DeleteFiles:
    """The delete files a merge-on-read change adds, and the ones they replace (merged
    into them); what an engine's delete writer returns."""

    added: tuple[DataFile, ...] = ()
    replaced: tuple[DataFile, ...] = ()


@dataclass(frozen=True)
class DeletePlan:
    """Files a row filter matches entirely (dropped from metadata alone) and, for the
    files it matches partly, one whole-file task each to rewrite them from (with the
    delete files that apply to them)."""

    remove: tuple[DataFile, ...]
    rewrite: tuple[FileScanTask, ...]
    has_deletes: bool

    #: Delete files scoped to one data file of ``remove`` (a DV, a file-scoped position
    #: delete file): they apply to nothing once that file is gone.
    dangling: tuple[DataFile, ...] = ()
    #: The whole-file tasks of ``remove`` (to read their rows, e.g. for an update).
    remove_tasks: tuple[FileScanTask, ...] = ()

    @property
    def rewrite_files(self) -> tuple[DataFile, ...]:
        return tuple(t.file for t in self.rewrite)


def file_scoped_deletes(task: FileScanTask) -> list[DataFile]:
    """The delete files of ``task`` that name its data file (DVs and file-scoped
    position deletes), which go when the file goes or their positions are merged."""
    return [
        d
        for d in task.delete_files
        if d.content is DataFileContent.POSITION_DELETES
        and d.referenced_data_file == task.file.file_path
    ]


def rewrite_schema(md: TableMetadata) -> Schema:
    """The schema rows are read and written with when a rewrite copies them to new
    files: the current schema, and in v3 the row lineage columns, so that copied rows
    keep their ``_row_id`` and ``_last_updated_sequence_number`` (spec "Row Lineage":
    a row moved to another file unchanged keeps both)."""
    schema = md.schema()
    return with_row_lineage(schema) if md.format_version >= 3 else schema


def whole_file_tasks(tasks: Iterable[FileScanTask]) -> list[FileScanTask]:
    """One task per data file covering the whole file, in first-seen order: planning
    splits large files into several tasks, and a rewrite copies each row once."""
    found: dict[str, FileScanTask] = {}
    for t in tasks:
        path = t.file.file_path
        if path not in found:
            found[path] = replace(t, start=0, length=t.file.file_size_in_bytes)
    return list(found.values())


def _strict_matcher(
    md: TableMetadata, expr: BooleanExpression, case_sensitive: bool
) -> Callable[[DataFile], bool]:
    """Whether every row of a file matches ``expr``, from its partition or metrics."""
    schema = md.schema()
    parts: dict[int, Callable[[Any], Any]] = {}
    for spec_id, spec in md.specs_by_id.items():
        try:
            ptype = spec.partition_type(schema)
        except ValidationError:  # a spec on dropped columns proves nothing
            parts[spec_id] = lambda _p: False
            continue
        parts[spec_id] = evaluator(
            ptype, strict_projection(schema, spec, case_sensitive).project(expr)
        )
    metrics = StrictMetricsEvaluator(schema, expr, case_sensitive)
    return lambda f: bool(parts[f.spec_id](f.partition)) or metrics.eval(f)


def plan_delete(
    md: TableMetadata,
    io: FileIO,
    expr: BooleanExpression,
    *,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
) -> DeletePlan:
    """Classify the live data files of ``branch`` (of ``main`` when the branch does not
    exist yet) against a row filter, planning them once."""
    scan = ScanPlan(
        md,
        io,
        filter=expr,
        ref=branch if branch in md.refs else MAIN_BRANCH,
        case_sensitive=case_sensitive,
    )
    head = scan.snapshot()
    if head is None:
        return DeletePlan((), (), False)
    has_deletes = any(
        m.content is ManifestContent.DELETES for m in cached_manifest_list(io, head.manifest_list)
    )
    matches_all = _strict_matcher(md, expr, case_sensitive)
    remove: list[FileScanTask] = []
    rewrite: list[FileScanTask] = []
    dangling: list[DataFile] = []
    for task in whole_file_tasks(scan.plan_files()):
        if matches_all(task.file):
            remove.append(task)
            dangling += file_scoped_deletes(task)
        else:
            rewrite.append(task)
    return DeletePlan(
        tuple(t.file for t in remove), tuple(rewrite), has_deletes, tuple(dangling), tuple(remove)
    )


@dataclass(frozen=True)
class PositionDeleteRewrite:
    """What ``rewrite_position_delete_files`` changes: the data files whose position
    deletes are merged into one delete file each (a DV in v3, a file-scoped position
    delete file in v2), the position delete files that merging replaces, and those that
    apply to no live data file (dangling)."""

    tasks: tuple[FileScanTask, ...]
    replaced: tuple[DataFile, ...]
    dangling: tuple[DataFile, ...]

    @property
    def empty(self) -> bool:
        return not self.tasks and not self.dangling


def _position_deletes(task: FileScanTask) -> list[DataFile]:
    return [d for d in task.delete_files if d.content is DataFileContent.POSITION_DELETES]


def _needs_merging(task: FileScanTask, v3: bool) -> bool:
    deletes = _position_deletes(task)
    if len(deletes) > 1:
        return True
    if v3:  # a Parquet position delete file on a table upgraded to v3: becomes a DV
        return any(not d.is_deletion_vector for d in deletes)
    return any(d.referenced_data_file != task.file.file_path for d in deletes)


def plan_position_delete_rewrite(
    md: TableMetadata, io: FileIO, *, branch: str = MAIN_BRANCH
) -> PositionDeleteRewrite:
    """Plan the merge of every data file's position deletes into one file-scoped delete
    file, on the head of ``branch``: a data file qualifies when several position delete
    files apply to it, when one of them covers other files too (v2), or when it is a
    Parquet file on a v3 table. A replaced file is removed only when every data file it
    applies to is merged; position delete files that apply to no live data file are
    removed as dangling. Equality deletes are left as they are."""
    scan = ScanPlan(md, io, ref=branch if branch in md.refs else MAIN_BRANCH)
    head = scan.snapshot()
    if head is None:
        return PositionDeleteRewrite((), (), ())
    v3 = md.format_version >= 3
    tasks = whole_file_tasks(scan.plan_files())
    chosen = [t for t in tasks if _needs_merging(t, v3)]
    chosen_paths = {t.file.file_path for t in chosen}
    users: dict[tuple[str, int | None], set[str]] = {}
    by_key: dict[tuple[str, int | None], DataFile] = {}
    for t in tasks:
        for d in _position_deletes(t):
            key = (d.file_path, d.content_offset)
            users.setdefault(key, set()).add(t.file.file_path)
            by_key[key] = d
    replaced = [by_key[k] for k in sorted(users, key=str) if users[k] and users[k] <= chosen_paths]
    manifests = [
        m
        for m in cached_manifest_list(io, head.manifest_list)
        if m.content is ManifestContent.DELETES
    ]
    dangling = [
        e.data_file
        for e in live_entries(io, manifests, md)
        if e.data_file.content is DataFileContent.POSITION_DELETES
        and (e.data_file.file_path, e.data_file.content_offset) not in users
    ]
    return PositionDeleteRewrite(tuple(chosen), tuple(replaced), tuple(dangling))
