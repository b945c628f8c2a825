"""What a compaction hands back besides its files: where every row it wrote came from.

Both engines record it (the pyarrow engine as it copies rows, the Spark engine in the
tasks that write the files), so a commit can carry a delete that a concurrent commit
added to a source file over to the written files (``arrow/compaction_rebase.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from pyroaring import BitMap64

from neve.spec.manifest import DataFile

__all__ = ["CompactedFiles", "RowOrigins"]

_Ints32 = npt.NDArray[np.int32]
_Ints64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class RowOrigins:
    """Where the rows of one written file came from, run-length encoded: run ``i`` is
    ``count[i]`` rows copied in order from source ``source[i]`` (an index into a list
    of source files), starting at position ``first[i]`` there. A bin-packed file has
    about one run per source file, a sorted one more; rows a reader dropped (deleted
    already) are in no run."""

    source: _Ints32
    first: _Ints64
    count: _Ints64

    @staticmethod
    def of(source: npt.ArrayLike, position: npt.ArrayLike) -> RowOrigins:
        """The runs of rows given one by one: ``source[k]``, ``position[k]`` for row k."""
        src = np.asarray(source, dtype=np.int32)
        pos = np.asarray(position, dtype=np.int64)
        n = len(src)
        if n == 0:
            return _NO_ORIGINS
        starts = np.ones(n, dtype=bool)
        starts[1:] = (src[1:] != src[:-1]) | (pos[1:] != pos[:-1] + 1)
        at = np.flatnonzero(starts)
        return RowOrigins(src[at], pos[at], np.diff(np.append(at, n)).astype(np.int64))

    @staticmethod
    def concat(parts: Sequence[RowOrigins]) -> RowOrigins:
        """The runs of ``parts``' rows one after the other (a run that goes on across
        two parts becomes one)."""
        if not parts:
            return _NO_ORIGINS
        src = np.concatenate([p.source for p in parts])
        first = np.concatenate([p.first for p in parts])
        count = np.concatenate([p.count for p in parts])
        if len(src) < 2:
            return RowOrigins(src, first, count)
        starts = np.ones(len(src), dtype=bool)
        starts[1:] = (src[1:] != src[:-1]) | (first[1:] != first[:-1] + count[:-1])
        at = np.flatnonzero(starts)
        return RowOrigins(src[at], first[at], np.add.reduceat(count, at).astype(np.int64))

    @property
    def rows(self) -> int:
        """How many rows the runs cover."""
        return int(self.count.sum())

    def expand(self) -> tuple[_Ints32, _Ints64]:
        """Each row's source and position, row by row (the inverse of :meth:`of`)."""
        src = np.repeat(self.source, self.count)
        offsets = np.repeat(np.cumsum(self.count) - self.count, self.count)
        pos = np.repeat(self.first, self.count) + (np.arange(self.rows) - offsets)
        return src, pos.astype(np.int64)

    def rows_at(self, marked: Mapping[int, _Ints64]) -> _Ints64:
        """The rows (positions in the written file, ascending) copied from the source
        positions ``marked`` (source index -> sorted positions there)."""
        offsets = np.cumsum(self.count) - self.count
        found: list[_Ints64] = []
        for source, positions in marked.items():
            runs = np.flatnonzero(self.source == source)
            if not len(runs) or not len(positions):
                continue
            lo = np.searchsorted(positions, self.first[runs], side="left")
            hi = np.searchsorted(positions, self.first[runs] + self.count[runs], side="left")
            hits = hi - lo
            keep = hits > 0
            runs, lo, hits = runs[keep], lo[keep], hits[keep]
            if not len(runs):
                continue
            run_of = np.repeat(np.arange(len(runs)), hits)
            within = np.arange(int(hits.sum())) - np.repeat(np.cumsum(hits) - hits, hits)
            at = positions[lo[run_of] + within]
            found.append(offsets[runs][run_of] + (at - self.first[runs][run_of]))
        if not found:
            return np.zeros(0, dtype=np.int64)
        return np.sort(np.concatenate(found)).astype(np.int64)


_NO_ORIGINS = RowOrigins(
    np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
)


@dataclass
class CompactedFiles:
    """The files a compaction wrote, and where each of their rows came from:
    ``origins[path]`` tells, per row of the written file in order, the index of its
    source data file in ``sources`` and its position there (:class:`RowOrigins`). With
    it a delete that a concurrent commit added to a source file is carried to the
    written files (:meth:`map_positions`). Either engine builds one: the pyarrow one
    as it copies rows, the Spark one from its tasks' runs."""

    files: list[DataFile] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    origins: dict[str, RowOrigins] = field(default_factory=dict)

    def map_positions(self, deleted: Mapping[str, BitMap64]) -> dict[str, BitMap64]:
        """The positions in the written files of the rows at ``deleted`` (source data
        file path -> positions); rows the compaction did not copy map to nothing."""
        index = {p: i for i, p in enumerate(self.sources)}
        wanted = {
            index[p]: np.array(bits.to_array(), dtype=np.int64)
            for p, bits in deleted.items()
            if p in index and bits
        }
        out: dict[str, BitMap64] = {}
        if not wanted:
            return out
        for path, origins in self.origins.items():
            hit = origins.rows_at(wanted)
            if len(hit):
                out[path] = BitMap64(hit.tolist())
        return out
