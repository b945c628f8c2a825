"""Which delete files apply to which data file (Iceberg spec "Scan Planning", "Delete Formats", "Deletion Vectors").

- position deletes: data seq(data) <= data seq(delete), same spec and partition, or
  ``referenced_data_file`` equal to the data file's path;
- equality deletes: data seq(data) < data seq(delete), same spec and partition, or the
  delete file's spec is unpartitioned (global);
- a deletion vector for a data file replaces every position delete file for it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from neve.spec.manifest import DataFileContent, ManifestEntry
from neve.spec.partition import PartitionSpec

__all__ = ["DeleteFileIndex"]


@dataclass
class _Bucket:
    """Delete entries of one kind in one partition, sorted by data sequence number."""

    seqs: list[int] = field(default_factory=list)
    entries: list[ManifestEntry] = field(default_factory=list)

    def add(self, e: ManifestEntry) -> None:
        self.seqs.append(e.sequence_number or 0)
        self.entries.append(e)

    def sort(self) -> None:
        order = sorted(range(len(self.seqs)), key=self.seqs.__getitem__)
        self.seqs = [self.seqs[i] for i in order]
        self.entries = [self.entries[i] for i in order]

    def at_least(self, seq: int) -> list[ManifestEntry]:
        return self.entries[bisect.bisect_left(self.seqs, seq) :]

    def above(self, seq: int) -> list[ManifestEntry]:
        return self.entries[bisect.bisect_right(self.seqs, seq) :]


class DeleteFileIndex:
    def __init__(self, entries: Iterable[ManifestEntry], specs: Mapping[int, PartitionSpec]):
        self._global_eq = _Bucket()
        self._eq: dict[tuple[int, tuple[object, ...]], _Bucket] = {}
        self._pos: dict[tuple[int, tuple[object, ...]], _Bucket] = {}
        self._pos_by_path: dict[str, _Bucket] = {}
        self._dvs: dict[str, ManifestEntry] = {}
        for e in entries:
            f = e.data_file
            key = (f.spec_id, f.partition)
            if f.content is DataFileContent.EQUALITY_DELETES:
                spec = specs.get(f.spec_id)
                if spec is None or spec.is_unpartitioned:
                    self._global_eq.add(e)
                else:
                    self._eq.setdefault(key, _Bucket()).add(e)
            elif f.is_deletion_vector and f.referenced_data_file:
                prev = self._dvs.get(f.referenced_data_file)
                if prev is None or (prev.sequence_number or 0) < (e.sequence_number or 0):
                    self._dvs[f.referenced_data_file] = e
            elif f.referenced_data_file:
                self._pos_by_path.setdefault(f.referenced_data_file, _Bucket()).add(e)
            else:
                self._pos.setdefault(key, _Bucket()).add(e)
        for b in (
            self._global_eq,
            *self._eq.values(),
            *self._pos.values(),
            *self._pos_by_path.values(),
        ):
            b.sort()

    def is_empty(self) -> bool:
        return not (
            self._global_eq.entries or self._eq or self._pos or self._pos_by_path or self._dvs
        )

    def for_data_file(self, entry: ManifestEntry) -> list[ManifestEntry]:
        """Delete entries that apply to the data file of ``entry``."""
        f = entry.data_file
        seq = entry.sequence_number or 0
        key = (f.spec_id, f.partition)
        out = list(self._global_eq.above(seq))
        eq = self._eq.get(key)
        if eq is not None:
            out += eq.above(seq)
        dv = self._dvs.get(f.file_path)
        if dv is not None and (dv.sequence_number or 0) >= seq:
            out.append(dv)
            return out
        pos = self._pos.get(key)
        if pos is not None:
            out += pos.at_least(seq)
        by_path = self._pos_by_path.get(f.file_path)
        if by_path is not None:
            out += by_path.at_least(seq)
        return out
