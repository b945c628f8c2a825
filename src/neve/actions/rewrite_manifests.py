"""Rewriting data manifests (``rewrite_manifests``): the live entries of the branch
head's data manifests (of one partition spec, or all), sorted by partition and packed
into manifests of ``commit.manifest.target-size-bytes``, as a ``replace`` snapshot.
Entries keep their status as existing files, their snapshot ids, sequence numbers and
row ids, so scans, time travel and changes read exactly as before; only planning gets
cheaper (a filter on the partition prunes whole manifests). Each attempt rewrites the
head it commits on, so concurrent commits need no validation: their manifests are
rewritten too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from neve.actions.base import TableState
from neve.actions.snapshot import SnapshotAction
from neve.planning.manifests import read_manifest, read_manifest_list
from neve.spec.manifest import ManifestContent, ManifestEntry, ManifestEntryStatus, ManifestFile
from neve.spec.refs import MAIN_BRANCH
from neve.spec.snapshot import Operation, Snapshot
from neve.spec.table_metadata import TableMetadata

__all__ = ["RewriteManifests"]


def _partition_key(entry: ManifestEntry) -> tuple[Any, ...]:
    return tuple((v is None, v) for v in entry.data_file.partition)


class RewriteManifests(SnapshotAction):
    """Replace the head's data manifests (of ``spec_id``, or all) by manifests
    clustered by partition."""

    operation = Operation.REPLACE

    def __init__(
        self,
        table: TableState,
        *,
        spec_id: int | None = None,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(table, branch=branch, snapshot_properties=snapshot_properties)
        self.spec_id = spec_id
        #: Manifests replaced and written by the last attempt.
        self.replaced: list[ManifestFile] = []
        self.written: list[ManifestFile] = []

    def _manifests(self, md: TableMetadata, parent: Snapshot | None) -> list[ManifestFile]:
        self.replaced, self.written = [], []
        if parent is None:
            return []
        kept: list[ManifestFile] = []
        groups: dict[int, list[ManifestEntry]] = {}
        sizes: dict[int, list[int]] = {}
        for m in read_manifest_list(self.io, parent.manifest_list):
            chosen = m.content is ManifestContent.DATA and (
                self.spec_id is None or m.partition_spec_id == self.spec_id
            )
            if not chosen:
                kept.append(m)
                continue
            self.replaced.append(m)
            entries = [
                e.with_(status=ManifestEntryStatus.EXISTING)
                for e in read_manifest(self.io, m, specs_by_id=md.specs_by_id)
                if e.is_live
            ]
            groups.setdefault(m.partition_spec_id, []).extend(entries)
            sizes.setdefault(m.partition_spec_id, []).extend([m.manifest_length, len(entries)])
        target = md.props.as_int("commit.manifest.target-size-bytes")
        for spec_id, entries in sorted(groups.items()):
            if not entries:
                continue
            total_bytes, total_entries = sum(sizes[spec_id][::2]), sum(sizes[spec_id][1::2])
            per_entry = max(1, total_bytes // max(1, total_entries))
            per_manifest = max(1, target // per_entry)
            entries.sort(key=lambda e: (_partition_key(e), e.data_file.file_path))
            for i in range(0, len(entries), per_manifest):
                chunk = entries[i : i + per_manifest]
                self.written.append(self._write(md, spec_id, ManifestContent.DATA, chunk))
        return kept + self.written

    def _merge(self, md: TableMetadata, manifests: list[ManifestFile]) -> list[ManifestFile]:
        return manifests  # the rewrite is the merge
