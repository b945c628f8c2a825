"""Large data pages cut short at the last row a take wants from them (the page reader's,
:mod:`neve.arrow.pages`).

A version 1 data page's header says how many values it holds; its levels and values
follow, compressed as one. A reader decodes the levels and values in order and stops
at the count the header gives, so a page whose header says fewer values is decoded up
to there: the same bytes, a new header. In parquet-java's layout (1 MiB pages, about
10,000 values of a 100-character string) a take of one row of a page would otherwise
have pyarrow build every string of it; cut at the row, it builds half of them on
average. Decompression cannot be cut short this way, so pages of fixed-width values,
whose decoding is a copy next to it, are left as they are (unless decoded with such
pages, lined up with them: their pages are cut at the same rows).

Only leaves without a repeated field (a value per row) are cut, only version 1 pages,
and only the encodings whose decoders read value by value from the front (plain and
dictionary indexes): delta encodings begin with a header of their own counts. The
definition levels must be in RLE, which says its length, or absent (a leaf required
all the way, whose pages parquet-java marks BIT_PACKED though they hold no levels):
levels in the old BIT_PACKED encoding are as long as the values they count.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from neve.arrow.parquet_layout import ParquetLayout
from neve.arrow.splice import DecodeUnit, PageGroup
from neve.arrow.thrift import I32, STRUCT, Field, decode_struct, encode_struct
from neve.errors import NeveIOError

__all__ = ["TRIM_FROM", "trim_pages"]

Ints = npt.NDArray[np.int64]

#: Pages of at least this many rows are cut (a header decoded and written again costs
#: about as much as building a thousand short strings).
TRIM_FROM = 1024

#: Physical types whose decoding costs more than a copy: byte arrays (strings, binary)
#: and fixed-length byte arrays (decimals, UUIDs).
_COSTLY = (6, 7)
_DATA_PAGE = 0
#: Value encodings read front to back: PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY (not
#: BYTE_STREAM_SPLIT, whose streams are as long as the count, nor the delta encodings)
_FRONT_TO_BACK = (0, 2, 8)
_RLE, _BIT_PACKED = 3, 4


def trim_pages(layout: ParquetLayout, unit: DecodeUnit, blobs: dict[int, memoryview]) -> None:
    """Cut the unit's large pages of costly values at the last row wanted from each,
    in place: the groups' row counts and row places change, and ``unit.heads`` gets
    the new header of each page cut (by page offset), with its old header's length."""
    if any(leaf.repeated for leaf in unit.leaves):
        return
    if not any(leaf.physical_type in _COSTLY for leaf in unit.leaves):
        return
    # a leaf required all the way has no definition levels
    required = [leaf.max_definition_level == 0 for leaf in unit.leaves]
    for g in unit.groups:
        if not g.whole and g.page_rows is not None and (g.page_rows >= TRIM_FROM).any():
            _trim_group(g, g.page_rows, required, blobs, unit.heads)


def _trim_group(
    g: PageGroup,
    counts: Ints,
    required: list[bool],
    blobs: dict[int, memoryview],
    heads: dict[int, tuple[bytes, int]],
) -> None:
    starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    page_of = np.searchsorted(starts, g.index, side="right") - 1
    within = g.index - starts[page_of]
    last = np.full(len(counts), -1, dtype=np.int64)
    np.maximum.at(last, page_of, within)
    new_counts = counts.copy()
    new_heads: dict[int, tuple[bytes, int]] = {}
    for p in np.flatnonzero((counts >= TRIM_FROM) & (last + 1 < counts)).tolist():
        keep = int(last[p]) + 1
        cut = [
            _cut_header(blobs[ranges[p][0]], keep, no_levels)
            for ranges, no_levels in zip(g.ranges, required, strict=True)
        ]
        if any(c is None for c in cut):
            continue  # a page of one leaf cannot be cut: none of this page's rows are
        for ranges, c in zip(g.ranges, cut, strict=True):
            assert c is not None
            new_heads[ranges[p][0]] = c
        new_counts[p] = keep
    if not new_heads:
        return
    heads.update(new_heads)
    new_starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(new_counts[:-1], out=new_starts[1:])
    g.index = new_starts[page_of] + within
    g.rows = int(new_counts.sum())
    g.values = [g.rows] * len(g.values)
    g.page_rows = new_counts


def _cut_header(page: memoryview, keep: int, no_levels: bool) -> tuple[bytes, int] | None:
    """The header of a version 1 data page saying it holds its first ``keep`` values,
    and the length of its own header; None where the page cannot be cut. ``no_levels``:
    the leaf is required all the way (its pages hold no definition levels)."""
    try:
        header, used = decode_struct(page)
    except NeveIOError:
        return None
    kind, body = header.get(1), header.get(5)
    if kind is None or kind.value != _DATA_PAGE or body is None:
        return None
    data = dict(body.value)
    values, encoding, levels = data.get(1), data.get(2), data.get(3)
    if values is None or encoding is None or encoding.value not in _FRONT_TO_BACK:
        return None
    if levels is None or keep >= int(values.value):
        return None
    if levels.value != _RLE and not (no_levels and levels.value == _BIT_PACKED):
        return None
    data[1] = Field(I32, keep)
    data.pop(5, None)  # statistics of the whole page
    out = dict(header)
    out[5] = Field(STRUCT, data)
    return encode_struct(out), used
