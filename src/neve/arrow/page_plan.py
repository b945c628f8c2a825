"""A take's pages planned for a whole file at once (the page reader's,
:mod:`neve.arrow.pages`): a leaf's pages of every row group in one table of file
positions, so that finding the pages holding a take's rows is a few array operations
for the file, not a dozen per row group touched.

Pages are self-contained, so the pages chosen from several row groups make one column
chunk of the spliced file where the leaf has no dictionary page and one codec in every
row group (the random-access layout: 8 KiB pages, no dictionaries).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from neve.arrow.parquet_layout import ParquetLayout
from neve.arrow.splice import DecodeUnit, PageGroup

__all__ = ["FilePages", "file_pages"]

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class FilePages:
    """A leaf's data pages across a file's row groups, in file order: the file position
    of each page's first row (and the file's row count after the last), their byte
    ranges, their row groups, and how many pages each row group has."""

    first: Ints
    offsets: Ints
    sizes: Ints
    group: Ints
    counts: Ints

    def plan(
        self, positions: Ints, crossover: float, memo: dict[int, _Chosen | None]
    ) -> PageGroup | None:
        """The pages holding ``positions`` (sorted, distinct) as one group, where in no
        row group more than ``crossover`` of the pages are chosen (else None: such a
        chunk is read whole, row group by row group). ``memo`` keeps the choice for
        leaves whose pages hold the same rows (they share ``first``)."""
        key = id(self.first)
        if key in memo:
            chosen = memo[key]
        else:
            chosen = memo[key] = self._choose(positions, crossover)
        if chosen is None:
            return None
        pages = chosen.pages
        if len(pages) == 1:
            p = int(pages[0])
            ranges = [(int(self.offsets[p]), int(self.sizes[p]))]
        else:
            ranges = list(
                zip(self.offsets[pages].tolist(), self.sizes[pages].tolist(), strict=True)
            )
        n = chosen.rows
        return PageGroup(
            chosen.group,
            [None],
            [ranges],
            [n],
            n,
            chosen.index,
            spans=chosen.spans,
            page_rows=chosen.page_rows,
        )

    def _choose(self, positions: Ints, crossover: float) -> _Chosen | None:
        if len(positions) == 1:  # a take of few rows: one per file, in scalars
            row = int(positions[0])
            p = int(self.first.searchsorted(row, side="right")) - 1
            start = int(self.first[p])
            n = int(self.first[p + 1]) - start
            spans = start.to_bytes(8, "little") + n.to_bytes(8, "little")
            at = np.array([row - start], dtype=np.int64)
            return _Chosen(np.array([p]), int(self.group[p]), n, at, spans, np.array([n]))
        page_of = np.searchsorted(self.first, positions, side="right") - 1
        keep = np.empty(len(page_of), dtype=bool)
        keep[0] = True
        np.not_equal(page_of[1:], page_of[:-1], out=keep[1:])
        chosen = page_of[keep]
        per_group = np.bincount(self.group[chosen], minlength=len(self.counts))
        if (per_group > crossover * self.counts).any():
            return None
        starts = self.first[chosen]
        rows = self.first[chosen + 1] - starts
        out_start = np.zeros(len(chosen), dtype=np.int64)
        np.cumsum(rows[:-1], out=out_start[1:])
        slot = np.searchsorted(chosen, page_of)
        index: Ints = out_start[slot] + (positions - starts[slot])
        spans = starts.tobytes() + rows.tobytes()
        return _Chosen(chosen, int(self.group[chosen[0]]), int(rows.sum()), index, spans, rows)


@dataclass(frozen=True)
class _Chosen:
    """The pages chosen for a take's rows (numbers into a :class:`FilePages`), the row
    group of the first, their rows, where each wanted row is among them, and their
    spans (first rows and counts, for lining units up), and each page's rows."""

    pages: Ints
    group: int
    rows: int
    index: Ints
    spans: bytes
    page_rows: Ints


def file_pages(layout: ParquetLayout, unit: DecodeUnit, complete: bool) -> FilePages | None:
    """The pages of the unit's leaf across the file, where one group can hold any choice
    of them: a single leaf without a repeated field, whose chunks have their pages
    found, no dictionary page and one codec. Made and kept with the layout when
    ``complete`` (every row group's pages were looked for), else only looked up; None
    where there are none."""
    if len(unit.leaves) != 1 or unit.leaves[0].repeated:
        return None
    leaf = unit.leaves[0].index
    if leaf in layout.file_pages:
        found: FilePages | None = layout.file_pages[leaf]
        return found
    if not complete:
        return None
    chunks = [g[leaf] for g in layout.chunks]
    out: FilePages | None = None
    if all(c.pages is not None and c.dictionary is None for c in chunks) and (
        len({c.meta[4].value for c in chunks}) == 1
    ):
        pages = [c.pages for c in chunks if c.pages is not None]
        starts = layout.group_starts
        first = [p.first_rows + starts[g] for g, p in enumerate(pages)]
        first.append(np.array([layout.num_rows], dtype=np.int64))
        counts = np.array([len(p.first_rows) for p in pages], dtype=np.int64)
        starts_all = np.concatenate(first)
        for other in layout.file_pages.values():  # leaves whose pages hold the same rows
            if other is not None and np.array_equal(other.first, starts_all):
                starts_all = other.first
                break
        out = FilePages(
            starts_all,
            np.concatenate([p.offsets for p in pages]),
            np.concatenate([p.sizes for p in pages]),
            np.repeat(np.arange(len(pages), dtype=np.int64), counts),
            counts,
        )
    layout.file_pages[leaf] = out
    return out
