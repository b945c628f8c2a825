"""Table maintenance that removes files: snapshot expiration, orphan file removal, and
purge on drop.

Each action is planned first (what would go, printable as a dry run), then carried out:
metadata changes go through the one commit path, and files are deleted only after
the commit that made them unreachable has landed."""

from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from neve.actions.commit import CommitTarget
from neve.actions.expire import ExpireSnapshots
from neve.arrow.writer import delete_written_files
from neve.engine.protocol import Engine
from neve.errors import NeveError, NeveIOError, ValidationError
from neve.expressions import BooleanExpression
from neve.io.fileio import FileIO, local_path
from neve.planning.delete import plan_position_delete_rewrite
from neve.planning.manifests import read_manifest, read_manifest_list
from neve.planning.reachable import FILE_KINDS, FileSets, expired_files
from neve.spec.metadata_builder import apply_updates
from neve.spec.metadata_json import metadata_from_bytes
from neve.spec.refs import MAIN_BRANCH
from neve.spec.sort_order import SortOrder
from neve.spec.table_metadata import TableMetadata
from neve.spec.temporal import timestamp_millis
from neve.table.compaction import Progress, RewriteDataResult
from neve.table.compaction import rewrite_data_files as compact_table
from neve.table.transaction import Transaction


class MaintainedTable(CommitTarget, Protocol):
    """What maintenance needs of a table handle (``neve.table.table.Table``)."""

    def transaction(self) -> Transaction[Any]: ...


__all__ = [
    "ExpireResult",
    "Maintenance",
    "OrphanResult",
    "RewriteDataResult",
    "RewriteDeletesResult",
    "RewriteManifestsResult",
    "purge_reachable",
    "purge_roots",
    "purge_table_files",
    "reachable_files",
]

_METADATA_SUFFIXES = (".metadata.json", ".metadata.json.gz")
_VERSION_HINT = "version-hint.text"  # the filesystem catalog's pointer file


def _metadata_reaches(
    io: FileIO, md: TableMetadata, out: set[str], seen: set[str], lists: set[str]
) -> None:
    """Add the statistics files, manifest lists, manifests, data and delete files
    ``md`` reaches; ``seen`` and ``lists`` hold the manifests and manifest lists
    already followed (files never change, so each is read once)."""
    for stats in (*md.statistics, *md.partition_statistics):
        path = stats.get("statistics-path")
        if isinstance(path, str):
            out.add(path)
    for s in md.snapshots:
        out.add(s.manifest_list)
        if s.manifest_list in lists:
            continue
        lists.add(s.manifest_list)
        try:
            manifests = read_manifest_list(io, s.manifest_list)
        except NeveError:  # missing or damaged: nothing more to find from it
            continue
        for m in manifests:
            if m.manifest_path in seen:
                continue
            seen.add(m.manifest_path)
            out.add(m.manifest_path)
            try:
                entries = read_manifest(io, m, specs_by_id=md.specs_by_id)
            except NeveError:
                continue
            for e in entries:
                out.add(e.data_file.file_path)


def reachable_files(table: MaintainedTable, older_metadata: Iterable[str] = ()) -> set[str]:
    """Every file the table's metadata reaches: data and delete files, manifests,
    manifest lists, and metadata files (current and logged). ``older_metadata`` names
    further metadata files whose snapshots count too when they are the table's (same
    UUID; others, and files that cannot be read, are left out)."""
    md = table.metadata
    io = table.io
    out: set[str] = {table.metadata_location}
    out.update(e.metadata_file for e in md.metadata_log)
    seen: set[str] = set()
    lists: set[str] = set()
    _metadata_reaches(io, md, out, seen, lists)
    logged = [e.metadata_file for e in md.metadata_log]
    followed = {table.metadata_location}
    for loc in logged + list(older_metadata):
        if loc in followed:
            continue
        followed.add(loc)
        raw = _read_json(io, loc)
        if raw is None or str(raw.get("table-uuid")) != md.table_uuid:
            continue
        out.add(loc)
        # a table with a long history has as many metadata files as commits, each
        # naming most snapshots again: parse one fully only for snapshots not seen yet
        named = _manifest_lists_and_stats(raw)
        if named is not None and named[0] <= lists:
            out.update(named[0] | named[1])
            continue
        older = _read_metadata(io, loc)
        if older is not None:
            _metadata_reaches(io, older, out, seen, lists)
    return out


def _read_json(io: FileIO, location: str) -> dict[str, Any] | None:
    """A metadata file's JSON object; None when it cannot be read."""
    try:
        data = io.read_bytes(location)
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        raw = json.loads(data)
    except (NeveError, OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) else None


def _manifest_lists_and_stats(raw: Mapping[str, Any]) -> tuple[set[str], set[str]] | None:
    """The manifest lists and statistics files a metadata JSON object names; None when
    a snapshot has no manifest list (v1 snapshots may list manifests inline)."""
    lists: set[str] = set()
    for snap in raw.get("snapshots") or ():
        path = snap.get("manifest-list") if isinstance(snap, dict) else None
        if not isinstance(path, str):
            return None
        lists.add(path)
    stats: set[str] = set()
    for key in ("statistics", "partition-statistics"):
        for entry in raw.get(key) or ():
            path = entry.get("statistics-path") if isinstance(entry, dict) else None
            if isinstance(path, str):
                stats.add(path)
    return lists, stats


def _read_metadata(io: FileIO, location: str) -> TableMetadata | None:
    try:
        return metadata_from_bytes(io.read_bytes(location))
    except (NeveError, OSError, ValueError):
        return None


def _uuid_of(io: FileIO, location: str) -> str | None:
    """The ``table-uuid`` of a metadata file; None when it cannot be read."""
    try:
        data = io.read_bytes(location)
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        raw = json.loads(data)
    except (NeveError, OSError, ValueError):
        return None
    found = raw.get("table-uuid") if isinstance(raw, dict) else None
    return str(found) if found is not None else None


def _is_metadata_json(path: str) -> bool:
    return path.endswith(_METADATA_SUFFIXES)


def purge_roots(md: TableMetadata) -> list[str]:
    """The folders a purge may delete in: the table's location, and the configured
    ``write.data.path`` and ``write.metadata.path`` when they lie outside it."""
    root = md.location.rstrip("/")
    roots = [root]
    for key in ("write.data.path", "write.metadata.path"):
        value = md.props.as_text(key)
        if value is not None:
            roots.append(value.rstrip("/"))
    return roots


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + "/")


def _norm(path: str) -> str:
    return local_path(path) if path.startswith("file:") else path


def _foreign_tables(
    io: FileIO, root: str, listed: list[str], table_uuid: str, reachable: set[str]
) -> list[str]:
    """Folders below ``root`` (not ``root`` itself) that hold another table: a
    ``metadata`` folder with metadata files of another (or an unreadable) table UUID, or
    with manifests this table does not reach (a table of the filesystem catalog keeps
    its version files in its own folder, so only its manifests show below a custom
    location)."""
    ours = {_norm(p) for p in reachable}
    candidates: dict[str, list[str]] = {}
    for path in listed:
        folder, _, _name = path.rpartition("/")
        if not folder.endswith("/metadata"):
            continue
        table_root = folder[: -len("/metadata")]
        if table_root != root and _under(table_root, root):
            candidates.setdefault(table_root, []).append(path)
    foreign = []
    for table_root, files in candidates.items():
        for f in files:
            if _is_metadata_json(f):
                other = _uuid_of(io, f) != table_uuid
            else:
                other = f.endswith(".avro") and _norm(f) not in ours
            if other:
                foreign.append(table_root)
                break
    return foreign


def purge_reachable(table: MaintainedTable) -> set[str]:
    """The files a purge deletes outside the table's location: everything the current
    and logged metadata reach, and every metadata file of the table found in its
    location (older than the log). Computed before the catalog entry goes, since the
    filesystem catalog removes the version files with it."""
    listed = table.io.list_files(table.metadata.location.rstrip("/"))
    return reachable_files(table, [p for p in listed if _is_metadata_json(p)])


def purge_table_files(
    table: MaintainedTable, reachable: set[str] | None = None, keep: Iterable[str] = ()
) -> list[str]:
    """Delete every file that belongs to the table (``drop_table(purge=True)``); returns
    the paths deleted.

    The rule: everything below the table's location is the table's (its data, its
    metadata files including those older than the metadata log, the manifests and data
    files of writers that crashed or failed, version hints, temporary files), except a
    folder below it that holds another table (a ``metadata`` folder with another
    table's metadata files or manifests). Outside the location only files the table's metadata
    reaches (``reachable``, by default :func:`purge_reachable` now) are deleted, and only
    inside the configured ``write.data.path`` / ``write.metadata.path``: files added
    from elsewhere (``add_files``, a registered table's files) are never touched, and
    neither are the files in ``keep`` (a catalog's tombstone). Object stores delete in
    bulk requests.
    """
    md = table.metadata
    io = table.io
    root, *extra = purge_roots(md)
    listed = io.list_files(root)
    if reachable is None:
        reachable = purge_reachable(table)
    foreign = _foreign_tables(io, root, listed, md.table_uuid, reachable)
    ours = {_norm(p) for p in reachable}
    doomed = {p for p in listed if _norm(p) in ours or not any(_under(p, f) for f in foreign)}
    for path in reachable:
        if any(_under(path, r) for r in extra) and not any(_under(path, f) for f in foreign):
            doomed.add(path)
    doomed -= set(keep)
    failed = set(io.delete_many(sorted(doomed)))
    deleted = [p for p in sorted(doomed) if p not in failed]
    with contextlib.suppress(NeveIOError):
        _remove_empty_folders(io, root)
    return deleted


def _remove_empty_folders(io: FileIO, root: str) -> None:
    """Remove the folders left empty below ``root`` (and ``root``) on local storage;
    object stores have no folders to remove."""
    if not io.is_local(root):
        return
    top = os.path.abspath(local_path(root))
    if not os.path.isdir(top):
        return
    for folder, _dirs, _files in os.walk(top, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


# -- expire snapshots and remove orphan files ---------------------------------------------

#: ``remove_orphan_files``' default cut-off, as Iceberg-Java's: files younger than this
#: may belong to a write in progress.
ORPHAN_MIN_AGE_MS = 3 * 24 * 3600 * 1000
#: Iceberg-Java's default scheme equivalences for orphan removal.
DEFAULT_EQUAL_SCHEMES = {"s3n": "s3", "s3a": "s3"}
PREFIX_MISMATCH_MODES = ("error", "ignore", "delete")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _rows(pairs: Sequence[tuple[str, object]]) -> str:
    width = max(len(k) for k, _ in pairs)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in pairs)


@dataclass(frozen=True)
class ExpireResult:
    """What ``expire_snapshots`` removed (or, with ``dry_run``, would remove). Counts
    are by kind, named as Iceberg-Java's procedure names them."""

    expired_snapshot_ids: tuple[int, ...]
    removed_refs: tuple[str, ...]
    deleted: Mapping[str, int]
    files: tuple[str, ...]
    failed: tuple[str, ...] = ()
    dry_run: bool = False
    removed_spec_ids: tuple[int, ...] = ()
    removed_schema_ids: tuple[int, ...] = ()

    def __str__(self) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        pairs: list[tuple[str, object]] = [
            ("expired snapshots", len(self.expired_snapshot_ids)),
            ("removed refs", ", ".join(self.removed_refs) or "-"),
        ]
        if self.removed_spec_ids or self.removed_schema_ids:
            pairs.append(("removed specs", list(self.removed_spec_ids)))
            pairs.append(("removed schemas", list(self.removed_schema_ids)))
        pairs += [(f"{verb} {k.replace('_', ' ')}", self.deleted[k]) for k in FILE_KINDS]
        if self.failed:
            pairs.append(("could not delete", len(self.failed)))
        return _rows(pairs)


@dataclass(frozen=True)
class OrphanResult:
    """The files ``remove_orphan_files`` deleted (or would delete)."""

    orphan_file_locations: tuple[str, ...]
    failed: tuple[str, ...] = ()
    dry_run: bool = False

    def __str__(self) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        pairs: list[tuple[str, object]] = [
            (f"{verb} orphan files", len(self.orphan_file_locations))
        ]
        pairs += [("", p) for p in self.orphan_file_locations[:10]]
        if len(self.orphan_file_locations) > 10:
            pairs.append(("", f"... {len(self.orphan_file_locations) - 10} more"))
        if self.failed:
            pairs.append(("could not delete", len(self.failed)))
        return _rows(pairs)


@dataclass(frozen=True)
class RewriteDeletesResult:
    """What ``rewrite_position_delete_files`` did (or, with ``dry_run``, would do)."""

    data_files: int
    added_delete_files: int
    removed_delete_files: int
    dangling_delete_files: int
    dry_run: bool = False

    def __str__(self) -> str:
        return _rows(
            [
                ("data files with merged deletes", self.data_files),
                ("delete files added", self.added_delete_files),
                ("delete files removed", self.removed_delete_files),
                ("of them dangling", self.dangling_delete_files),
            ]
        )


@dataclass(frozen=True)
class RewriteManifestsResult:
    """Counts as Iceberg-Java's ``rewrite_manifests`` procedure reports them."""

    rewritten_manifests_count: int
    added_manifests_count: int

    def __str__(self) -> str:
        return _rows(
            [
                ("manifests rewritten", self.rewritten_manifests_count),
                ("manifests added", self.added_manifests_count),
            ]
        )


def _split_uri(path: str) -> tuple[str, str, str]:
    """(scheme, authority, path) of a file location; local paths have scheme ``file``."""
    if "://" in path:
        scheme, rest = path.split("://", 1)
        authority, _, inner = rest.partition("/")
        return scheme.lower(), authority, "/" + inner
    if path.startswith("file:"):
        return "file", "", "/" + path[len("file:") :].lstrip("/")
    return "file", "", path


class Maintenance:
    """Maintenance actions of one table (``table.maintenance``), their data work done
    by ``engine`` (files deleted, rows compacted, deletes merged: pyarrow and threads on
    the driver, or Spark tasks). Names and options follow Iceberg-Java's Spark
    procedures."""

    def __init__(self, table: MaintainedTable, engine: Engine[Any]) -> None:
        self.table = table
        self.engine = engine

    def expire_snapshots(
        self,
        older_than: int | str | dt.datetime | None = None,
        retain_last: int | None = None,
        snapshot_ids: Sequence[int] = (),
        clean_expired_metadata: bool = False,
        dry_run: bool = False,
        max_concurrent_deletes: int = 8,
    ) -> ExpireResult:
        """Remove snapshots by the retention rules of :mod:`neve.actions.expire` and
        delete the files only they reached: data and delete files, manifests, manifest
        lists and statistics files. ``older_than`` (a time; default: the table's
        ``history.expire.max-snapshot-age-ms``, 5 days ago), ``retain_last`` (keep at
        least this many ancestors of each branch) and ``snapshot_ids`` (expire these
        too) combine as in Iceberg-Java; ``clean_expired_metadata`` also removes the
        partition specs and schemas only expired snapshots used. With ``dry_run``
        nothing changes and the result says what would go."""
        table = self.table
        now = _now_ms()
        older_ms = timestamp_millis(older_than) if older_than is not None else None
        if dry_run:
            clean = table.io if clean_expired_metadata else None
            action = ExpireSnapshots(now, older_ms, retain_last, snapshot_ids, clean)
            before = table.metadata
            updates, _ = action.plan(before)
            after = apply_updates(before, updates)
            files = expired_files(table.io, before, after, max_concurrent_deletes)
            return self._expire_result(action, files, (), dry_run=True)
        txn = table.transaction()
        action = txn.expire_snapshots(
            now, older_ms, retain_last, snapshot_ids, clean_expired_metadata
        )
        txn.commit()
        assert action.planned_on is not None  # planned by the commit that landed
        files = expired_files(table.io, action.planned_on, table.metadata, max_concurrent_deletes)
        failed = self.engine.delete_files(table.io, files.paths(), max_concurrent_deletes)
        return self._expire_result(action, files, failed, dry_run=False)

    @staticmethod
    def _expire_result(
        action: ExpireSnapshots, files: FileSets, failed: tuple[str, ...], dry_run: bool
    ) -> ExpireResult:
        assert action.planned is not None
        return ExpireResult(
            expired_snapshot_ids=action.planned.snapshot_ids,
            removed_refs=action.planned.refs,
            deleted=files.counts(),
            files=tuple(files.paths()),
            failed=failed,
            dry_run=dry_run,
            removed_spec_ids=action.removed_specs,
            removed_schema_ids=action.removed_schemas,
        )

    def remove_orphan_files(
        self,
        older_than: int | str | dt.datetime | None = None,
        location: str | None = None,
        dry_run: bool = False,
        equal_schemes: Mapping[str, str] | None = None,
        equal_authorities: Mapping[str, str] | None = None,
        prefix_mismatch_mode: str = "error",
        max_concurrent_deletes: int = 8,
    ) -> OrphanResult:
        """Delete the files below ``location`` (default: the table's) that no snapshot
        or metadata file of the table reaches and that are older than ``older_than``
        (default: 3 days ago; younger files may belong to a write in progress, so a
        cut-off later than the start of any running write is unsafe). Files of another
        table nested below the location are left alone.

        A listed file whose path is reachable under another scheme or authority is a
        prefix mismatch: ``prefix_mismatch_mode`` ``error`` (default) refuses and lists
        them, ``ignore`` keeps them, ``delete`` treats them as orphans.
        ``equal_schemes`` / ``equal_authorities`` (``{"s3a": "s3"}``) name equivalent
        ones; the scheme map extends Iceberg-Java's default (``s3n``, ``s3a`` = ``s3``).
        """
        if prefix_mismatch_mode not in PREFIX_MISMATCH_MODES:
            raise ValidationError(
                f"prefix_mismatch_mode must be one of {', '.join(PREFIX_MISMATCH_MODES)}, "
                f"not {prefix_mismatch_mode!r}"
            )
        table = self.table
        io = table.io
        md = table.metadata
        cutoff = (
            timestamp_millis(older_than)
            if older_than is not None
            else _now_ms() - ORPHAN_MIN_AGE_MS
        )
        root = (location or md.location).rstrip("/")
        listed = io.list_file_infos(root)
        paths = [p for p, _ in listed]
        reachable = reachable_files(table, [p for p in paths if _is_metadata_json(p)])
        foreign = _foreign_tables(io, root, paths, md.table_uuid, reachable)
        schemes = {**DEFAULT_EQUAL_SCHEMES, **(equal_schemes or {})}
        authorities = dict(equal_authorities or {})

        def key(path: str) -> tuple[str, str, str]:
            scheme, authority, inner = _split_uri(path)
            return schemes.get(scheme, scheme), authorities.get(authority, authority), inner

        valid: dict[str, set[tuple[str, str]]] = {}
        for p in reachable:
            scheme, authority, inner = key(p)
            valid.setdefault(inner, set()).add((scheme, authority))
        orphans: list[str] = []
        mismatched: list[str] = []
        for path, mtime_ms in listed:
            if mtime_ms >= cutoff or any(_under(path, f) for f in foreign):
                continue
            if path.rsplit("/", 1)[-1] == _VERSION_HINT:
                continue
            scheme, authority, inner = key(path)
            prefixes = valid.get(inner)
            if prefixes is None:
                orphans.append(path)
            elif (scheme, authority) not in prefixes:
                mismatched.append(path)
        if mismatched and prefix_mismatch_mode == "error":
            raise ValidationError(
                f"{len(mismatched)} files are reachable under another scheme or authority "
                f"(e.g. {mismatched[0]}); name equivalent ones with equal_schemes= / "
                "equal_authorities=, or pass prefix_mismatch_mode='ignore' (keep them) or "
                "'delete' (remove them)"
            )
        if prefix_mismatch_mode == "delete":
            orphans += mismatched
        orphans.sort()
        failed: tuple[str, ...] = ()
        if not dry_run:
            failed = self.engine.delete_files(io, orphans, max_concurrent_deletes)
        return OrphanResult(tuple(orphans), failed, dry_run)

    def rewrite_position_delete_files(
        self, branch: str = MAIN_BRANCH, dry_run: bool = False
    ) -> RewriteDeletesResult:
        """Merge each data file's position deletes into one delete file (a deletion
        vector in v3, also converting Parquet position deletes of a table upgraded to v3;
        a file-scoped position delete file in v2) and drop position delete files that
        apply to no live data file, in one ``replace`` snapshot; rows do not change
        (:func:`neve.planning.delete.plan_position_delete_rewrite` says what qualifies).
        A concurrent commit that adds deletes for a merged data file makes it fail with
        :class:`~neve.errors.CommitConflictError`, leaving no file behind."""
        table = self.table
        md = table.metadata
        plan = plan_position_delete_rewrite(md, table.io, branch=branch)
        if dry_run or plan.empty:
            return RewriteDeletesResult(
                len(plan.tasks),
                len(plan.tasks),
                len(plan.replaced) + len(plan.dangling),
                len(plan.dangling),
                dry_run=dry_run,
            )
        merged = self.engine.merge_deletes(table, plan.tasks)
        written = sorted({f.file_path for f in merged.added})
        removed = {(f.file_path, f.content_offset): f for f in (*plan.replaced, *plan.dangling)}
        try:
            txn = table.transaction()
            txn.rewrite_files(
                merged.added, list(removed.values()), [t.file for t in plan.tasks], branch
            )
            txn.commit()
        except BaseException:
            delete_written_files(table.io, written)
            raise
        return RewriteDeletesResult(
            len(plan.tasks), len(merged.added), len(removed), len(plan.dangling)
        )

    def rewrite_manifests(
        self, spec_id: int | None = None, branch: str = MAIN_BRANCH
    ) -> RewriteManifestsResult:
        """Rewrite the data manifests of ``branch``'s head (of ``spec_id``, or all)
        clustered by partition into manifests of ``commit.manifest.target-size-bytes``
        (a ``replace`` snapshot; rows, sequence numbers and row ids do not change)."""
        txn = self.table.transaction()
        action = txn.rewrite_manifests(spec_id, branch)
        txn.commit()
        return RewriteManifestsResult(len(action.replaced), len(action.written))

    def rewrite_data_files(
        self,
        where: str | BooleanExpression | None = None,
        options: Mapping[str, str] | None = None,
        branch: str = MAIN_BRANCH,
        dry_run: bool = False,
        strategy: str = "binpack",
        sort_order: str | SortOrder | None = None,
        progress: Progress | None = None,
    ) -> RewriteDataResult:
        """Compaction: rewrite small, large and much-deleted data files (of the rows
        ``where`` selects, by partition) into files of the target size, with their
        deletes applied, as ``replace`` snapshots; rows and (v3) row ids do not change.
        ``strategy="sort"`` writes each group's rows in ``sort_order`` (Iceberg-Java's
        form, ``"id desc nulls last, s"`` or ``"zorder(a, b)"``; default: the table's
        sort order). ``options`` are Iceberg-Java's (:mod:`neve.planning.compaction`,
        :mod:`neve.table.compaction`). A position delete a concurrent commit added to a
        rewritten file is carried over to the new files; a concurrent commit that
        removed one makes it fail with :class:`~neve.errors.CommitConflictError`,
        leaving no file behind. ``progress(done, total)`` is told of each file group
        written."""
        return compact_table(
            self.table,
            where,
            options,
            strategy=strategy,
            sort_order=sort_order,
            branch=branch,
            dry_run=dry_run,
            engine=self.engine,
            progress=progress,
        )
