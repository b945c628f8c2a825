"""Table maintenance that removes files: purge on drop."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from neve.errors import NeveError, NeveIOError
from neve.io.fileio import FileIO, local_path
from neve.planning.manifests import read_manifest, read_manifest_list
from neve.spec.metadata_json import metadata_from_bytes
from neve.spec.table_metadata import TableMetadata

if TYPE_CHECKING:
    from neve.table.table import Table

__all__ = ["purge_reachable", "purge_roots", "purge_table_files", "reachable_files"]

_METADATA_SUFFIXES = (".metadata.json", ".metadata.json.gz")


def _metadata_reaches(io: FileIO, md: TableMetadata, out: set[str], seen: set[str]) -> None:
    """Add the manifest lists, manifests, data and delete files ``md`` reaches."""
    for s in md.snapshots:
        out.add(s.manifest_list)
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


def reachable_files(table: Table, older_metadata: Iterable[str] = ()) -> set[str]:
    """Every file the table's metadata reaches: data and delete files, manifests,
    manifest lists, and metadata files (current and logged). ``older_metadata`` names
    further metadata files whose snapshots count too when they are the table's (same
    UUID; others, and files that cannot be read, are left out)."""
    md = table.metadata
    io = table.io
    out: set[str] = {table.metadata_location}
    out.update(e.metadata_file for e in md.metadata_log)
    seen: set[str] = set()
    _metadata_reaches(io, md, out, seen)
    logged = [e.metadata_file for e in md.metadata_log]
    followed = {table.metadata_location}
    for loc in logged + list(older_metadata):
        if loc in followed:
            continue
        followed.add(loc)
        older = _read_metadata(io, loc)
        if older is not None and older.table_uuid == md.table_uuid:
            out.add(loc)
            _metadata_reaches(io, older, out, seen)
    return out


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
        value = md.properties.get(key)
        if isinstance(value, str) and value.strip():
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


def purge_reachable(table: Table) -> set[str]:
    """The files a purge deletes outside the table's location: everything the current
    and logged metadata reach, and every metadata file of the table found in its
    location (older than the log). Computed before the catalog entry goes, since the
    filesystem catalog removes the version files with it."""
    listed = table.io.list_files(table.metadata.location.rstrip("/"))
    return reachable_files(table, [p for p in listed if _is_metadata_json(p)])


def purge_table_files(table: Table, reachable: set[str] | None = None) -> list[str]:
    """Delete every file that belongs to the table (``drop_table(purge=True)``); returns
    the paths deleted.

    The rule: everything below the table's location is the table's (its data, its
    metadata files including those older than the metadata log, the manifests and data
    files of writers that crashed or failed, version hints, temporary files), except a
    folder below it that holds another table (a ``metadata`` folder with another
    table's metadata files or manifests). Outside the location only files the table's metadata
    reaches (``reachable``, by default :func:`purge_reachable` now) are deleted, and only
    inside the configured ``write.data.path`` / ``write.metadata.path``: files added
    from elsewhere (``add_files``, a registered table's files) are never touched.
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
    deleted = []
    for path in sorted(doomed):
        with contextlib.suppress(NeveIOError):
            io.delete(path)
            deleted.append(path)
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
