"""Which files snapshots reach, and which files an expiration leaves unreachable.

A file an expiration may delete is one the removed snapshots reached and no kept
snapshot reaches (reachable-before minus reachable-after). Manifest lists are per
snapshot; a manifest goes when no kept snapshot lists it; a data or delete file goes
when a manifest that goes names it and no kept manifest holds it live (an entry of a
kept manifest that records the file as deleted does not keep it); statistics files go
with their snapshot unless a kept snapshot names the same file. Kept manifests are
read only when there is a candidate file to check against them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from neve.io.fileio import FileIO
from neve.planning.manifests import read_manifest, read_manifest_list
from neve.planning.scan import live_entries
from neve.spec.manifest import DataFileContent, ManifestFile
from neve.spec.snapshot import Snapshot
from neve.spec.table_metadata import TableMetadata

__all__ = ["FILE_KINDS", "FileSets", "expired_files"]

#: The kinds of files an expiration deletes, in the order results list them (the
#: names of Iceberg-Java's ``expire_snapshots`` result columns, without the suffix).
FILE_KINDS = (
    "data_files",
    "position_delete_files",
    "equality_delete_files",
    "manifest_files",
    "manifest_lists",
    "statistics_files",
)

_CONTENT_KIND = {
    DataFileContent.DATA: "data_files",
    DataFileContent.POSITION_DELETES: "position_delete_files",
    DataFileContent.EQUALITY_DELETES: "equality_delete_files",
}


@dataclass(frozen=True)
class FileSets:
    """Paths by kind (one of :data:`FILE_KINDS`)."""

    by_kind: Mapping[str, frozenset[str]]

    def counts(self) -> dict[str, int]:
        return {k: len(self.by_kind.get(k, frozenset())) for k in FILE_KINDS}

    def paths(self) -> list[str]:
        return sorted({p for paths in self.by_kind.values() for p in paths})


def _manifests(io: FileIO, snapshots: Iterable[Snapshot], workers: int) -> dict[str, ManifestFile]:
    lists = sorted({s.manifest_list for s in snapshots})
    with ThreadPoolExecutor(max_workers=workers) as pool:
        found = list(pool.map(lambda p: read_manifest_list(io, p), lists))
    return {m.manifest_path: m for ms in found for m in ms}


def _entries(
    io: FileIO, md: TableMetadata, manifests: Iterable[ManifestFile], workers: int
) -> dict[str, str]:
    """File path -> kind, for every entry of ``manifests`` (deleted ones included)."""

    def read(m: ManifestFile) -> list[tuple[str, str]]:
        return [
            (e.data_file.file_path, _CONTENT_KIND[e.data_file.content])
            for e in read_manifest(io, m, specs_by_id=md.specs_by_id)
        ]

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return {p: k for pairs in pool.map(read, list(manifests)) for p, k in pairs}


def _statistics_paths(md: TableMetadata, snapshot_ids: set[int]) -> set[str]:
    out = set()
    for s in (*md.statistics, *md.partition_statistics):
        if s.get("snapshot-id") in snapshot_ids and isinstance(s.get("statistics-path"), str):
            out.add(str(s["statistics-path"]))
    return out


def expired_files(
    io: FileIO, before: TableMetadata, after: TableMetadata, workers: int = 8
) -> FileSets:
    """The files ``before``'s snapshots reach that ``after``'s snapshots do not, where
    ``after`` is ``before`` with some snapshots removed."""
    kept_ids = {s.snapshot_id for s in after.snapshots}
    gone = [s for s in before.snapshots if s.snapshot_id not in kept_ids]
    by_kind: dict[str, set[str]] = {k: set() for k in FILE_KINDS}
    if not gone:
        return FileSets({k: frozenset(v) for k, v in by_kind.items()})
    kept_lists = {s.manifest_list for s in after.snapshots}
    by_kind["manifest_lists"] = {s.manifest_list for s in gone} - kept_lists
    kept_manifests = _manifests(io, after.snapshots, workers)
    gone_manifests = {
        p: m for p, m in _manifests(io, gone, workers).items() if p not in kept_manifests
    }
    by_kind["manifest_files"] = set(gone_manifests)
    candidates = _entries(io, before, gone_manifests.values(), workers)
    if candidates:
        kept = list(kept_manifests.values())
        still_live = {e.data_file.file_path for e in live_entries(io, kept, after, workers)}
        for path, kind in candidates.items():
            if path not in still_live:
                by_kind[kind].add(path)
    gone_ids = {s.snapshot_id for s in gone}
    by_kind["statistics_files"] = _statistics_paths(before, gone_ids) - _statistics_paths(
        after, kept_ids
    )
    return FileSets({k: frozenset(v) for k, v in by_kind.items()})
