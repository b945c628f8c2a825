"""The decode units of a take of one row per row group made one, their pages lined up
by padding (the page reader's, :mod:`neve.arrow.pages`).

Columns of different widths have pages of different row counts (in the random-access
layout 1,024 longs, 2,048 ints, some 96 strings of 100 characters), so each is spliced
into a file of its own and decoded by a pyarrow call of its own, whose fixed cost is
most of a one-row take. Where a unit wants a single row of each row group it reads,
its pages need only hold that row at the same place as the others': each group gets
pages of padding before and after (rows of nulls, or of zeros and empty values for a
required leaf, never read back) so that in every leaf the wanted row comes at the same
place and the group has the same number of rows. Then the units are one, spliced into
one file and decoded by one call.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from neve.arrow.page_dictionaries import fast_dictionaries
from neve.arrow.page_pick import page_v2, pick_pages
from neve.arrow.page_trim import trim_pages
from neve.arrow.parquet_layout import Leaf, ParquetLayout
from neve.arrow.splice import DecodeUnit, PageGroup
from neve.arrow.thrift import write_varint

__all__ = ["alignable", "lined_up", "padded_together", "rewrite"]

Ints = npt.NDArray[np.int64]

#: Bytes of one value of a required leaf's padding, by physical type (BOOLEAN is
#: bit-packed; a byte array is its length, 0): INT32, INT64, INT96, FLOAT, DOUBLE,
#: BYTE_ARRAY. FIXED_LEN_BYTE_ARRAY is left out (its length is the schema's).
_WIDTHS = {1: 4, 2: 8, 3: 12, 4: 4, 5: 8, 6: 4}
_BOOLEAN = 0


def rewrite(
    layout: ParquetLayout, unit: DecodeUnit, blobs: dict[int, memoryview], direct: bool = False
) -> None:
    """The unit's pages rewritten for a cheaper decode (once): large pages picked or
    cut at the last row wanted, zstd dictionary pages in their kept form. ``direct``: a
    unit all of whose pages are picked keeps their values in ``unit.picked`` instead
    (:func:`neve.arrow.page_pick.pick_pages`)."""
    if not unit.rewritten:
        pick_pages(layout, unit, blobs, direct)
        trim_pages(layout, unit, blobs)
        fast_dictionaries(layout, unit, blobs)
        unit.rewritten = True


def lined_up(
    layout: ParquetLayout, units: list[DecodeUnit], blobs: dict[int, memoryview]
) -> list[DecodeUnit]:
    """``units`` as one (their pages rewritten and padded) where they are
    :func:`alignable`, else as they are."""
    if not alignable(units):
        return units
    for u in units:
        rewrite(layout, u, blobs)
    joined = padded_together(layout, units)
    return units if joined is None else [joined]


def alignable(units: list[DecodeUnit]) -> bool:
    """Whether ``units`` (planned, not yet rewritten) can be lined up: several units of
    leaves without a repeated field, reading pages (not whole chunks) of the same row
    groups, one row wanted from each."""
    if len(units) < 2:
        return False
    numbers = [g.number for g in units[0].groups]
    for u in units:
        if any(leaf.repeated for leaf in u.leaves):
            return False
        if [g.number for g in u.groups] != numbers:
            return False
        if any(g.whole or len(g.index) != 1 for g in u.groups):
            return False
    return True


def padded_together(layout: ParquetLayout, units: list[DecodeUnit]) -> DecodeUnit | None:
    """One unit of ``units`` (:func:`alignable`, their pages rewritten already), each
    group's pages padded so that its wanted row comes at the same place in every leaf;
    None where a leaf cannot be padded."""
    if (layout.created_by or "").split(" version ")[0].strip() == "parquet-cpp":
        return None  # its version 2 pages are read as compressed whatever they say
    # (unit, leaf's place in it) of each leaf, in the file's column order
    order = sorted(
        ((i, n) for i, u in enumerate(units) for n in range(len(u.leaves))),
        key=lambda p: units[p[0]].leaves[p[1]].index,
    )
    leaves = [units[i].leaves[n] for i, n in order]
    joined = DecodeUnit(leaves)
    synthetic = -1  # padding pages are spliced in under offsets no page has
    for k, first in enumerate(units[0].groups):
        parts = [u.groups[k] for u in units]
        at = [int(g.index[0]) for g in parts]
        before = max(at)
        after = max(g.rows - a for g, a in zip(parts, at, strict=True))
        ranges: list[list[tuple[int, int]]] = []
        for i, n in order:
            g, a = parts[i], at[i]
            pages = list(g.ranges[n])
            for count, front in ((before - a, True), (after - (g.rows - a), False)):
                if not count:
                    continue
                page = _padding(units[i].leaves[n], count)
                if page is None:
                    return None
                joined.replaced[synthetic] = page
                if front:
                    pages.insert(0, (synthetic, len(page)))
                else:
                    pages.append((synthetic, len(page)))
                synthetic -= 1
            ranges.append(pages)
        rows = before + after
        joined.groups.append(
            PageGroup(
                first.number,
                [parts[i].dictionaries[n] for i, n in order],
                ranges,
                [rows] * len(leaves),
                rows,
                np.array([before], dtype=np.int64),
            )
        )
    for u in units:
        joined.replaced.update(u.replaced)
        joined.heads.update(u.heads)
    joined.rewritten = True
    return joined


def _padding(leaf: Leaf, n: int) -> bytes | None:
    """A data page of ``n`` rows of ``leaf`` never read back: nulls (one RLE run of
    level 0), or where the leaf is required, zeros and empty values."""
    if leaf.max_definition_level:
        run = bytearray()
        write_varint(run, n << 1)
        run += bytes((leaf.max_definition_level.bit_length() + 7) // 8)
        return page_v2(bytes(run), b"", n, n)
    if leaf.physical_type == _BOOLEAN:
        return page_v2(b"", bytes((n + 7) // 8), n, 0)
    width = _WIDTHS.get(leaf.physical_type)
    if width is None:
        return None
    return page_v2(b"", bytes(width * n), n, 0)
