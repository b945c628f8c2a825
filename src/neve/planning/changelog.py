"""Changelog planning: which snapshots of a branch a changelog covers, and per snapshot
the data files and row positions whose rows it inserted or deleted. Engines read the
tasks (``neve.arrow.changelog``, ``neve.spark.changelog``) and then remove carry-over
rows and pair updates by key.

The range follows Iceberg's changelog scan options: ``start_snapshot_id`` exclusive,
``end_snapshot_id`` inclusive (default: the branch head), both on one line of ancestry;
``start_time`` takes the snapshots committed at or after it, ``end_time`` ends at the
snapshot that was the head at that time. ``replace`` snapshots (compaction, manifest
rewrites) change no rows and are left out; ordinals number the other snapshots from 0,
oldest first, as Iceberg-Java's ``_change_ordinal`` does.

Per snapshot S with parent P, only the manifests S wrote are read (entries S added or
removed). A change task is one of:

- ``INSERTED_FILE``: a data file S added; its rows live at S are inserts;
- ``DELETED_FILE``: a data file S removed (copy-on-write rewrites, overwrites, deletes
  of whole files); its rows live at P are deletes (rows the same snapshot writes again
  are carry-over and cancel against the inserts, which the engines do);
- ``DELETED_ROWS``: a data file live at P and at S whose delete files S changed (a new
  deletion vector replacing the old one, position deletes, equality deletes of other
  engines): rows live at P and not at S are deletes. ``deletes`` are the file's delete
  files at P, ``deletes_after`` those at S, so positions deleted anew are
  ``after - before``; the rows are read back from the data file by position.

For ``DELETED_ROWS`` the planner also reads the delete manifests of P and S (usually
few) and the data manifests of S that may hold the files those deletes point to. When
P was expired (the first snapshot of a range without a start), P's delete files are
derived from S's manifests; when P's expiration deleted files S removed, the range
starts after S.

Tasks are frozen and picklable: Spark executors read them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from neve.errors import NoSuchSnapshotError, ValidationError
from neve.expressions import ALWAYS_TRUE, BooleanExpression
from neve.expressions.binding import bind
from neve.expressions.evaluator import evaluator
from neve.expressions.manifest_evaluator import ManifestEvaluator
from neve.expressions.metrics_evaluator import InclusiveMetricsEvaluator
from neve.expressions.parser import to_expression
from neve.expressions.projection import inclusive_projection
from neve.expressions.residual import ResidualEvaluator
from neve.io.fileio import FileIO
from neve.planning.delete_index import DeleteFileIndex
from neve.planning.manifest_cache import cached_manifest_list, load_manifests
from neve.planning.scan import live_entries
from neve.spec.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from neve.spec.refs import MAIN_BRANCH
from neve.spec.schema import Schema
from neve.spec.snapshot import Operation, Snapshot
from neve.spec.table_metadata import TableMetadata
from neve.spec.temporal import timestamp_millis

__all__ = [
    "CHANGE_ORDINAL",
    "CHANGE_TYPE",
    "COMMIT_SNAPSHOT_ID",
    "ChangeKind",
    "ChangeSnapshot",
    "ChangeTask",
    "ChangeType",
    "ChangelogPlan",
    "changelog_snapshots",
    "has_equality_deletes",
    "plan_changelog",
]

#: The metadata columns a changelog adds, named as Iceberg-Java's changelog view names them.
CHANGE_TYPE = "_change_type"
CHANGE_ORDINAL = "_change_ordinal"
COMMIT_SNAPSHOT_ID = "_commit_snapshot_id"


class ChangeType(enum.Enum):
    """The values of ``_change_type``."""

    INSERT = "INSERT"
    DELETE = "DELETE"
    UPDATE_BEFORE = "UPDATE_BEFORE"
    UPDATE_AFTER = "UPDATE_AFTER"


class ChangeKind(enum.Enum):
    """What a change task reads (see the module docstring)."""

    INSERTED_FILE = "inserted-file"
    DELETED_FILE = "deleted-file"
    DELETED_ROWS = "deleted-rows"


@dataclass(frozen=True)
class ChangeSnapshot:
    """A snapshot of the range: its id, ordinal (0 = oldest), parent and operation."""

    snapshot_id: int
    ordinal: int
    parent_id: int | None
    operation: str
    timestamp_ms: int
    sequence_number: int


@dataclass(frozen=True)
class ChangeTask:
    """One data file's share of one snapshot's changes (picklable).

    ``deletes`` are the delete files applied to the rows read: at the snapshot for
    ``INSERTED_FILE``, at its parent for ``DELETED_FILE`` and ``DELETED_ROWS``.
    ``deletes_after`` (``DELETED_ROWS`` only) are the file's delete files at the
    snapshot: a row live under ``deletes`` and deleted under ``deletes_after`` is a
    delete. ``residual`` is the filter left for the rows of this file."""

    kind: ChangeKind
    file: DataFile
    spec_id: int
    data_sequence_number: int | None
    snapshot_id: int
    ordinal: int
    residual: BooleanExpression
    deletes: tuple[DataFile, ...] = ()
    deletes_after: tuple[DataFile, ...] = ()

    @property
    def change_type(self) -> ChangeType:
        """INSERT for inserted files, DELETE for the others (before update pairing)."""
        return ChangeType.INSERT if self.kind is ChangeKind.INSERTED_FILE else ChangeType.DELETE


@dataclass(frozen=True)
class ChangelogPlan:
    """A planned changelog: the snapshots of the range, oldest first, and the tasks of
    each (in snapshot order). ``schema`` is the table's current schema (what rows are
    read as), ``row_filter`` the unbound filter, ``identifier_columns`` the key update
    pairing and net changes use (empty: no key known)."""

    metadata: TableMetadata
    schema: Schema
    snapshots: tuple[ChangeSnapshot, ...]
    tasks: tuple[ChangeTask, ...]
    row_filter: BooleanExpression
    case_sensitive: bool
    identifier_columns: tuple[str, ...]

    def row_bound(self) -> int:
        """An upper bound of the rows the tasks read: whole files for inserted and
        removed files, and for rows newly deleted the rows the file's new delete files
        mark (a DV's count is exact; a position delete file may count other files'
        rows too; an equality delete counts the whole data file)."""
        total = 0
        for t in self.tasks:
            if t.kind is not ChangeKind.DELETED_ROWS:
                total += t.file.record_count
                continue
            before = {d.file_path for d in t.deletes}
            new = [d for d in t.deletes_after if d.file_path not in before]
            if has_equality_deletes(new):
                total += t.file.record_count
            else:
                total += min(t.file.record_count, sum(d.record_count for d in new))
        return total


def has_equality_deletes(files: Sequence[DataFile]) -> bool:
    """Whether any of ``files`` is an equality delete file."""
    return any(d.content is DataFileContent.EQUALITY_DELETES for d in files)


def changelog_snapshots(
    metadata: TableMetadata,
    *,
    start_snapshot_id: int | None = None,
    end_snapshot_id: int | None = None,
    start_time: Any = None,
    end_time: Any = None,
    branch: str = MAIN_BRANCH,
) -> list[ChangeSnapshot]:
    """The snapshots a changelog of the range covers, oldest first, ``replace``
    snapshots left out (see the module docstring for the range's rules)."""
    md = metadata
    if end_snapshot_id is not None and end_time is not None:
        raise ValidationError("give end_snapshot_id or end_time, not both")
    if start_snapshot_id is not None and start_time is not None:
        raise ValidationError("give start_snapshot_id or start_time, not both")
    head = md.snapshot_for_ref(branch)
    if head is None:
        if start_snapshot_id is not None or end_snapshot_id is not None:
            raise NoSuchSnapshotError(f"branch {branch!r} has no snapshots yet")
        return []
    line = md.ancestors(head.snapshot_id)  # newest first
    if end_snapshot_id is not None:
        md.snapshot_by_id(end_snapshot_id)
        ids = [s.snapshot_id for s in line]
        if end_snapshot_id not in ids:
            raise ValidationError(
                f"end snapshot {end_snapshot_id} is not an ancestor of branch {branch!r}; "
                "pass branch= the branch it was committed to"
            )
        line = line[ids.index(end_snapshot_id) :]
    elif end_time is not None:
        end_ms = timestamp_millis(end_time)
        line = [s for s in line if s.timestamp_ms <= end_ms] if line else line
        # the head at end_time and its ancestors
        while line and line[0].timestamp_ms > end_ms:
            line = line[1:]
    if start_snapshot_id is not None:
        md.snapshot_by_id(start_snapshot_id)
        ids = [s.snapshot_id for s in line]
        if start_snapshot_id not in ids:
            raise ValidationError(
                f"start snapshot {start_snapshot_id} is not an ancestor of the end snapshot "
                "on this branch; the start must come before the end on one line of history"
            )
        line = line[: ids.index(start_snapshot_id)]
    elif start_time is not None:
        start_ms = timestamp_millis(start_time)
        cut = len(line)
        for i, s in enumerate(line):
            if s.timestamp_ms < start_ms:
                cut = i
                break
        line = line[:cut]
    kept = [s for s in reversed(line) if s.operation is not Operation.REPLACE]
    return [
        ChangeSnapshot(
            s.snapshot_id,
            i,
            s.parent_snapshot_id,
            s.operation.value,
            s.timestamp_ms,
            s.sequence_number,
        )
        for i, s in enumerate(kept)
    ]


def plan_changelog(
    metadata: TableMetadata,
    io: FileIO,
    *,
    start_snapshot_id: int | None = None,
    end_snapshot_id: int | None = None,
    start_time: Any = None,
    end_time: Any = None,
    filter: str | BooleanExpression | None = None,
    identifier_columns: Sequence[str] | None = None,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
) -> ChangelogPlan:
    """Plan the changelog of a range of snapshots (module docstring): the snapshots and
    their change tasks. Writes nothing, reads only manifests."""
    md = metadata
    schema = md.schema()
    row_filter = to_expression(filter)
    bind(schema, row_filter, case_sensitive)  # fail early on a bad filter
    keys = _identifier_columns(schema, identifier_columns, case_sensitive)
    snaps = changelog_snapshots(
        md,
        start_snapshot_id=start_snapshot_id,
        end_snapshot_id=end_snapshot_id,
        start_time=start_time,
        end_time=end_time,
        branch=branch,
    )
    if snaps and _parent_state_gone(md, io, snaps[0]):
        # the first snapshot's parent was expired and with it files the snapshot's
        # changes are measured against: the range starts after it (its state is the
        # oldest one known in full)
        snaps = [replace(s, ordinal=s.ordinal - 1) for s in snaps[1:]]
    pruner = _Pruner(md, schema, row_filter, case_sensitive)
    tasks: list[ChangeTask] = []
    for cs in snaps:
        tasks.extend(_plan_snapshot(md, io, cs, pruner))
    return ChangelogPlan(
        md, schema, tuple(snaps), tuple(tasks), row_filter, case_sensitive, tuple(keys)
    )


def _identifier_columns(
    schema: Schema, given: Sequence[str] | None, case_sensitive: bool
) -> list[str]:
    if given is None:
        return list(schema.identifier_field_names)
    if isinstance(given, str) or not all(isinstance(c, str) for c in given):
        raise ValidationError(
            f"identifier_columns is a list of column names, e.g. ['id'], not {given!r}"
        )
    out = []
    for name in given:
        f = schema.struct.field_by_name(name, case_sensitive)
        if f is None:
            raise ValidationError(
                f"identifier column {name!r} is not a column of the table; "
                f"columns: {', '.join(x.name for x in schema.fields)}"
            )
        out.append(f.name)
    return out


class _Pruner:
    """The scan planner's pruning for one filter: manifests by partition summaries,
    entries by partition and metrics, and each kept file's residual."""

    def __init__(
        self, md: TableMetadata, schema: Schema, row_filter: BooleanExpression, cs: bool
    ) -> None:
        self.unfiltered = row_filter is ALWAYS_TRUE
        self.manifest = {
            sid: ManifestEvaluator(spec, schema, row_filter, cs)
            for sid, spec in md.specs_by_id.items()
        }
        self.metrics = InclusiveMetricsEvaluator(schema, row_filter, cs)
        self.partition: dict[int, Callable[[Any], bool]] = {}
        self.residual: dict[int, ResidualEvaluator] = {}
        for sid, spec in md.specs_by_id.items():
            self.residual[sid] = ResidualEvaluator(spec, schema, row_filter, cs)
            try:
                ptype = spec.partition_type(schema)
            except ValidationError:
                self.partition[sid] = lambda _p: True
                continue
            projected = inclusive_projection(schema, spec, cs).project(row_filter)
            self.partition[sid] = evaluator(ptype, projected)

    def keeps_manifest(self, m: ManifestFile) -> bool:
        if m.content is ManifestContent.DELETES or self.unfiltered:
            return True
        ev = self.manifest.get(m.partition_spec_id)
        return ev is None or ev.eval(m)

    def keeps_file(self, f: DataFile) -> bool:
        if self.unfiltered:
            return True
        part = self.partition.get(f.spec_id)
        if part is not None and not part(f.partition):
            return False
        return bool(self.metrics.eval(f))

    def residual_for(self, f: DataFile) -> BooleanExpression:
        if self.unfiltered:
            return ALWAYS_TRUE
        ev = self.residual.get(f.spec_id)
        return ALWAYS_TRUE if ev is None else ev.residual_for(f.partition)


def _own_entries(
    md: TableMetadata, io: FileIO, manifests: Sequence[ManifestFile], snapshot_id: int
) -> list[ManifestEntry]:
    """Entries the snapshot added or removed, from the manifests it wrote."""
    loaded = load_manifests(io, manifests, md.specs_by_id, eager=True)
    return [
        e
        for lazy in loaded
        for e in lazy.entries()
        if e.snapshot_id == snapshot_id and e.status is not ManifestEntryStatus.EXISTING
    ]


def _live_deletes(md: TableMetadata, io: FileIO, snapshot: Snapshot) -> list[ManifestEntry]:
    """The delete files live at ``snapshot``."""
    manifests = [
        m
        for m in cached_manifest_list(io, snapshot.manifest_list)
        if m.content is ManifestContent.DELETES
    ]
    return live_entries(io, manifests, md)


def _delete_index(md: TableMetadata, io: FileIO, snapshot: Snapshot | None) -> DeleteFileIndex:
    if snapshot is None:
        return DeleteFileIndex([], md.specs_by_id)
    return DeleteFileIndex(_live_deletes(md, io, snapshot), md.specs_by_id)


def _parent_state_gone(md: TableMetadata, io: FileIO, cs: ChangeSnapshot) -> bool:
    """Whether ``cs``'s parent was expired together with files that ``cs`` removed (data
    files, or delete files it replaced): the rows they held or marked at the parent
    cannot be read, so neither can ``cs``'s changes. Files ``cs`` removed are reachable
    only from its parent, so expiring the parent deletes them."""
    if cs.parent_id is None or md.has_snapshot(cs.parent_id):
        return False
    snap = md.snapshot_by_id(cs.snapshot_id)
    own = [
        m
        for m in cached_manifest_list(io, snap.manifest_list)
        if m.added_snapshot_id == cs.snapshot_id
    ]
    removed = {
        e.data_file.file_path
        for e in _own_entries(md, io, own, cs.snapshot_id)
        if e.status is ManifestEntryStatus.DELETED
    }
    return not all(io.exists(path) for path in removed)


def _delete_index_of_expired_parent(
    md: TableMetadata, io: FileIO, snapshot: Snapshot, delete_changes: Sequence[ManifestEntry]
) -> DeleteFileIndex:
    """The delete files live at a snapshot's parent that expiration removed, from the
    snapshot alone: those live at the snapshot less the ones it added, plus the ones it
    removed (the manifests it wrote keep them as DELETED entries, as the spec asks)."""

    def key(e: ManifestEntry) -> tuple[str, int | None]:
        return e.data_file.file_path, e.data_file.content_offset

    added = {key(e) for e in delete_changes if e.status is ManifestEntryStatus.ADDED}
    removed = [e for e in delete_changes if e.status is ManifestEntryStatus.DELETED]
    live = [e for e in _live_deletes(md, io, snapshot) if key(e) not in added]
    return DeleteFileIndex([*live, *removed], md.specs_by_id)


def _plan_snapshot(
    md: TableMetadata, io: FileIO, cs: ChangeSnapshot, pruner: _Pruner
) -> list[ChangeTask]:
    snap = md.snapshot_by_id(cs.snapshot_id)
    parent = (
        md.snapshot_by_id(cs.parent_id)
        if cs.parent_id is not None and md.has_snapshot(cs.parent_id)
        else None
    )
    manifests = cached_manifest_list(io, snap.manifest_list)
    own = [m for m in manifests if m.added_snapshot_id == cs.snapshot_id]
    entries = _own_entries(md, io, [m for m in own if pruner.keeps_manifest(m)], cs.snapshot_id)
    added = ManifestEntryStatus.ADDED
    data_added = [
        e for e in entries if e.data_file.content is DataFileContent.DATA and e.status is added
    ]
    data_removed = [
        e for e in entries if e.data_file.content is DataFileContent.DATA and e.status is not added
    ]
    delete_changes = [e for e in entries if e.data_file.content is not DataFileContent.DATA]
    out: list[ChangeTask] = []
    index_after = _delete_index(md, io, snap) if delete_changes else None
    parent_has_deletes = parent is not None and any(
        m.content is ManifestContent.DELETES for m in cached_manifest_list(io, parent.manifest_list)
    )
    index_before = (
        _delete_index(md, io, parent)
        if parent_has_deletes and (data_removed or delete_changes)
        else None
    )
    if parent is None and cs.parent_id is not None and (data_removed or delete_changes):
        index_before = _delete_index_of_expired_parent(md, io, snap, delete_changes)

    def task(
        kind: ChangeKind,
        e: ManifestEntry,
        deletes: Sequence[ManifestEntry],
        after: Sequence[ManifestEntry] = (),
    ) -> ChangeTask:
        f = e.data_file
        return ChangeTask(
            kind,
            f,
            f.spec_id,
            e.sequence_number,
            cs.snapshot_id,
            cs.ordinal,
            pruner.residual_for(f),
            tuple(d.data_file for d in deletes),
            tuple(d.data_file for d in after),
        )

    for e in data_added:
        if pruner.keeps_file(e.data_file):
            deletes = index_after.for_data_file(e) if index_after is not None else []
            out.append(task(ChangeKind.INSERTED_FILE, e, deletes))
    for e in data_removed:
        if pruner.keeps_file(e.data_file):
            deletes = index_before.for_data_file(e) if index_before is not None else []
            out.append(task(ChangeKind.DELETED_FILE, e, deletes))
    if delete_changes and index_after is not None:
        changed = DeleteFileIndex(delete_changes, md.specs_by_id)
        gone = {e.data_file.file_path for e in data_removed}
        born = {e.data_file.file_path for e in data_added}
        for e in _data_entries_touched(md, io, manifests, delete_changes, pruner):
            path = e.data_file.file_path
            if path in gone or path in born or not changed.for_data_file(e):
                continue
            if not pruner.keeps_file(e.data_file):
                continue
            before = index_before.for_data_file(e) if index_before is not None else []
            after = index_after.for_data_file(e)
            if {d.data_file.file_path for d in before} == {d.data_file.file_path for d in after}:
                continue
            out.append(task(ChangeKind.DELETED_ROWS, e, before, after))
    return out


def _data_entries_touched(
    md: TableMetadata,
    io: FileIO,
    manifests: Sequence[ManifestFile],
    delete_changes: Sequence[ManifestEntry],
    pruner: _Pruner,
) -> list[ManifestEntry]:
    """Live data entries of the snapshot that the changed delete files may apply to:
    when every changed delete file names its data file, only manifests whose partition
    summaries may hold those files' partitions are read."""
    data_manifests = [
        m for m in manifests if m.content is ManifestContent.DATA and pruner.keeps_manifest(m)
    ]
    named = {e.data_file.referenced_data_file for e in delete_changes}
    entries = live_entries(io, data_manifests, md)
    if None in named:
        return entries
    return [e for e in entries if e.data_file.file_path in named]
