"""Large data pages of fixed-width values rewritten to hold only the rows a take wants
(the page reader's, :mod:`neve.arrow.pages`).

In parquet-java's layout a page of longs holds 20,000 rows, and a chunk's first pages
are dictionary encoded: pyarrow, given such a page for one row, decompresses it,
decodes every value, and for a dictionary-encoded page decodes the chunk's dictionary
(about 1 MiB) and looks every index up in it. Here the page is decompressed, its
definition levels and values read as far as the last row wanted (levels and dictionary
indexes in Parquet's RLE/bit-packed hybrid, values plain or through the dictionary,
which is decoded once per file and kept), and a new page written in their place: the
wanted rows' levels and their values, plain, in a version 2 page marked as not
compressed (a version 1 page would have to be compressed by the chunk's codec, which
costs more than the few values' decoding; files of parquet-cpp before Arrow, whose
version 2 pages pyarrow decompresses whatever they say, get one). pyarrow then decodes
a page of a few values; where every page of a chunk that needed the dictionary is
rewritten, the dictionary page is left out.

Pages of byte arrays (strings, binary) are rewritten the same way where plain encoded
(parquet-java's 1 MiB pages of some 10,000 strings of 100 characters): the values
before the last row wanted are walked through by their length prefixes (at once
where all have one length, as hashes and codes have; else one by one, up to
:data:`_WALKED` values) and the wanted ones copied into the new page. pyarrow would
otherwise decompress the whole page, get it copied into the spliced file and decode
every string up to the row (:mod:`neve.arrow.page_trim` cuts the page there).
Dictionary-encoded pages of byte arrays (a chunk's first pages in parquet-java's
layout, 21,024 strings of 100 characters) are rewritten too: their indexes are read
as those of fixed-width values are, and the values copied from the dictionary's
plain body, whose value places are walked through once per file and kept with it.
Left to pyarrow, one such page cost a spliced file of every page of its column chunks
and the decoding of a 2 MiB dictionary.

In a layout of large pages (any page of the unit at least :data:`PICK_FROM` or
:data:`STRINGS_FROM` rows) the small pages are picked too: a chunk's last page, left
as it is, would send every other page of the unit through a spliced file.

Pages of either kind are decompressed only as far as the last row wanted where their
codec allows (zstd pages always, gzip and brotli where that pays:
:mod:`neve.arrow.page_body`, which also reads their headers and levels).

Only leaves of fixed-width physical types (ints, longs, floats, doubles) and byte
arrays without a repeated field, version 1 pages with RLE definition levels (or none)
and version 2 pages: a page that cannot be read so is left as it is (with its rows),
as are those of other leaves decoded with it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from neve.arrow.hybrid import encoded_levels, few_at, one_run, runs
from neve.arrow.page_body import (
    CODECS,
    DATA_PAGE,
    DATA_PAGE_V2,
    DICTIONARY_PAGE,
    PLAIN,
    RLE,
    Values,
    codec_of,
    decompressed,
    page_parts,
)
from neve.arrow.page_dictionaries import CAPACITY, Pages
from neve.arrow.parquet_layout import ColumnChunk, ParquetLayout
from neve.arrow.splice import DecodeUnit, PageGroup
from neve.arrow.thrift import decode_struct, write_varint
from neve.errors import NeveIOError

__all__ = [
    "PICK_FROM",
    "page_v2",
    "pick_pages",
    "plain_dictionaries",
    "uncompressed_page",
]

Ints = npt.NDArray[np.int64]

#: Pages of at least this many rows are rewritten (parquet-java writes up to 20,000 a
#: page; pages of 8 KiB hold at most 2,048 values of these types, which pyarrow decodes
#: about as fast as a page is read here).
PICK_FROM = 4096

#: Pages of byte arrays are rewritten from this many rows (the values before the last
#: row wanted are walked through here, which costs about what pyarrow's decoding of
#: them does, but the page is then neither copied into the spliced file nor decoded
#: whole, and it is decompressed only as far as that row where the codec streams).
STRINGS_FROM = 1024

#: The most values of a page of byte arrays walked through one by one (where their
#: lengths are not all the same): past it pyarrow decodes the page faster.
_WALKED = 8192

#: The most values a page's dictionary indexes (and plain values) are read for one by
#: one (:func:`neve.arrow.hybrid.few_at`); more are read through numpy's arrays.
_FEW = 16

_BYTE_ARRAY = 6
_LENGTH = struct.Struct("<I")

#: Fixed-width physical types and their widths: INT32, INT64, FLOAT, DOUBLE.
_WIDTHS = {1: 4, 2: 8, 4: 4, 5: 8}
_DTYPES: dict[int, np.dtype[np.unsignedinteger[Any]]] = {4: np.dtype("<u4"), 8: np.dtype("<u8")}
_DICTIONARY_ENCODINGS = (2, 8)  # PLAIN_DICTIONARY, RLE_DICTIONARY

#: Decoded dictionary pages of fixed-width values (their plain bytes), by (file path,
#: file size, page offset): a dictionary is decoded at a file's first take that needs
#: it and kept for the next.
plain_dictionaries = Pages(CAPACITY)


def pick_pages(
    layout: ParquetLayout, unit: DecodeUnit, blobs: dict[int, memoryview], direct: bool = False
) -> None:
    """Rewrite the unit's large pages of fixed-width values and of plain byte arrays to
    hold only the rows wanted from each, in place: the groups' row counts and row places
    change, and ``unit.replaced`` gets each page rewritten (by page offset). With
    ``direct``, where every page of the unit was rewritten and its columns are top-level
    ones Arrow holds as stored (:attr:`Leaf.plain`), no page is made: ``unit.picked``
    keeps each page's wanted levels and values for :mod:`neve.arrow.page_arrays`."""
    kinds = {leaf.physical_type for leaf in unit.leaves}
    if any(leaf.repeated for leaf in unit.leaves) or not kinds <= {*_WIDTHS, _BYTE_ARRAY}:
        return
    if unit.replaced or unit.picked:
        return  # picked already: its groups count the picked rows, not the pages'
    smallest = PICK_FROM if kinds & _WIDTHS.keys() else STRINGS_FROM
    # each group's largest page (-1: the group reads whole chunks)
    tops = [
        -1 if g.whole or g.page_rows is None or not len(g.page_rows) else int(g.page_rows.max())
        for g in unit.groups
    ]
    if max(tops, default=-1) >= smallest:
        # a layout of large pages: its small ones (a chunk's last) are picked too, so
        # that the unit's arrays can be made from picked values (one page left to
        # pyarrow sends every page of the unit through a spliced file)
        smallest = 1
    levels = [leaf.max_definition_level for leaf in unit.leaves]
    # parquet-cpp before Arrow (its 1.x releases) marked compressed version 2 pages as
    # not compressed, and pyarrow decompresses them all for files it wrote
    compressed = (layout.created_by or "").split(" version ")[0].strip() == "parquet-cpp"
    every = True
    parts: list[_Part] = []
    for g, top in zip(unit.groups, tops, strict=True):
        if top < smallest:
            every = False
            continue
        every = _pick_group(layout, unit, g, levels, blobs, smallest, parts) and every
    plain = all(len(leaf.path) == 1 and leaf.plain is not None for leaf in unit.leaves)
    if direct and every and plain and unit.groups:
        unit.picked.update((p.offset, (p.levels, p.values, p.count)) for p in parts)
        return
    for p in parts:
        if compressed:
            page = _compressed_page(p.levels, p.max_level, p.values, p.count, p.codec)
        else:
            page = uncompressed_page(p.levels, p.max_level, p.values, p.count)
        unit.replaced[p.offset] = page


@dataclass(slots=True)
class _Part:
    """A page's wanted rows: its offset, their definition levels (None for a required
    leaf) and plain values, how many, the leaf's maximum level and the chunk's codec."""

    offset: int
    levels: Ints | None
    values: bytes
    count: int
    max_level: int
    codec: int


def _pick_group(
    layout: ParquetLayout,
    unit: DecodeUnit,
    g: PageGroup,
    levels: list[int],
    blobs: dict[int, memoryview],
    smallest: int,
    parts: list[_Part],
) -> bool:
    """Pick the group's large pages (their parts added to ``parts``); whether every page
    of the group was picked."""
    counts = g.page_rows
    assert counts is not None
    starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    page_of = np.searchsorted(starts, g.index, side="right") - 1
    within = g.index - starts[page_of]
    bounds = np.searchsorted(page_of, np.arange(len(counts) + 1))  # g.index is sorted
    chunks = [layout.chunks[g.number][leaf.index] for leaf in unit.leaves]
    dictionaries = [
        _dictionary(layout, c, d, blobs) for c, d in zip(chunks, g.dictionaries, strict=True)
    ]
    # each leaf's page ranges, physical type and codec, looked up once for its pages
    leaves = [
        (ranges, int(c.meta[1].value), int(c.meta[4].value), level, dictionary)
        for ranges, c, level, dictionary in zip(g.ranges, chunks, levels, dictionaries, strict=True)
    ]
    new_counts = counts.copy()
    done = np.zeros(len(counts), dtype=bool)
    edges = bounds.tolist()
    for p in np.flatnonzero(counts >= smallest).tolist():
        if edges[p] == edges[p + 1]:
            continue
        rows = within[edges[p] : edges[p + 1]]
        pages: list[_Part] = []
        for ranges, kind, codec, level, dictionary in leaves:
            offset = ranges[p][0]
            picked = _picked(blobs[offset], rows, level, kind, codec, dictionary)
            if picked is None:
                break  # this page's rows stay as they are, in every leaf
            pages.append(_Part(offset, picked[0], picked[1], len(rows), level, codec))
        else:
            parts += pages
            new_counts[p] = len(rows)
            done[p] = True
    if not done.any():
        return False
    new_starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(new_counts[:-1], out=new_starts[1:])
    rank = np.arange(len(g.index), dtype=np.int64) - bounds[page_of]
    g.index = new_starts[page_of] + np.where(done[page_of], rank, within)
    g.rows = int(new_counts.sum())
    g.values = [g.rows] * len(g.values)
    g.page_rows = new_counts
    if done.all():  # no page left that may need a dictionary
        g.dictionaries = [None] * len(g.dictionaries)
        g.omitted = None
    return bool(done.all())


class _Dictionary:
    """A chunk's dictionary page, decoded when first asked for."""

    def __init__(self, key: tuple[str, int, int], page: memoryview, chunk: ColumnChunk) -> None:
        self.key, self.page, self.chunk = key, page, chunk
        self.values: npt.NDArray[np.generic] | None = None
        self.kept: tuple[Ints, memoryview] | None = None

    def get(self, width: int) -> npt.NDArray[np.generic] | None:
        if self.values is None:
            body = plain_dictionaries.get(self.key)
            if body is None:
                found = _dictionary_body(self.page, self.chunk, width)
                if found is None:
                    return None
                body = found[1]
                plain_dictionaries.put(self.key, body)
            self.values = np.frombuffer(body, dtype=_DTYPES[width])
        return self.values

    def strings(self) -> tuple[Ints, memoryview] | None:
        """Of a dictionary of byte arrays: where each value begins in its plain body
        (length prefixed, one after another), and where the last ends; and the body."""
        if self.kept is None:
            kept = plain_dictionaries.get(self.key)
            if kept is None:
                kept = _kept_strings(self.page, self.chunk)
                if kept is None:
                    return None
                plain_dictionaries.put(self.key, kept)
            count = int.from_bytes(kept[:8], "little")
            starts = np.frombuffer(kept, dtype="<i8", count=count + 1, offset=8)
            self.kept = starts, memoryview(kept)[8 * (count + 2) :]
        return self.kept


def _dictionary(
    layout: ParquetLayout,
    chunk: ColumnChunk,
    where: tuple[int, int] | None,
    blobs: dict[int, memoryview],
) -> _Dictionary | None:
    if where is None:
        return None
    return _Dictionary((layout.path, layout.size, where[0]), blobs[where[0]], chunk)


def _dictionary_body(page: memoryview, chunk: ColumnChunk, width: int) -> tuple[int, bytes] | None:
    """How many values a dictionary page holds and their plain bytes (None where it is
    not such a page)."""
    try:
        header, used = decode_struct(page)
    except NeveIOError:
        return None
    kind, size, body = header.get(1), header.get(2), header.get(7)
    if kind is None or kind.value != DICTIONARY_PAGE or size is None or body is None:
        return None
    fields = body.value
    if 2 in fields and fields[2].value not in (PLAIN, 2):  # PLAIN, or PLAIN_DICTIONARY
        return None
    raw = decompressed(page[used:], int(chunk.meta[4].value), int(size.value))
    count = int(fields[1].value)
    if raw is None or len(raw) < count * width:
        return None
    return count, raw[: count * width] if width else raw


def _kept_strings(page: memoryview, chunk: ColumnChunk) -> bytes | None:
    """A dictionary page of byte arrays in the form kept across takes: its value
    count, where each value begins and the last ends (little-endian longs), and its
    plain body. Walking the values once costs a few milliseconds for parquet-java's
    2 MiB dictionaries of strings: a take that touches one reads its values after
    that by their places."""
    found = _dictionary_body(page, chunk, 0)
    if found is None:
        return None
    count, body = found
    if count:
        starts = _starts(Values(body, None, len(body)), count, count)
        if starts is None or len(starts) != count:
            return None
        last = int(starts[-1])
        end = last + 4 + _LENGTH.unpack_from(body, last)[0]
    else:
        starts, end = np.zeros(0, dtype=np.int64), 0
    if end > len(body):
        return None
    places = np.append(starts, end).astype("<i8")
    return count.to_bytes(8, "little") + places.tobytes() + body[:end]


def _picked(
    page: memoryview,
    rows: Ints,
    max_level: int,
    kind: int,
    codec: int,
    dictionary: _Dictionary | None,
) -> tuple[Ints | None, bytes] | None:
    """The definition levels (None for a required leaf) and the plain values of the
    rows at ``rows`` (sorted, within the page) of a data page of a leaf without a
    repeated field, of physical type ``kind`` in a chunk of ``codec``; None where it
    cannot be read here."""
    width = _WIDTHS.get(kind)
    if (codec and codec not in CODECS) or (width is None and kind != _BYTE_ARRAY):
        return None
    need = int(rows[-1]) + 1
    try:
        read = page_parts(page, codec, max_level, need, width or 0)
        if read is None:
            return None
        count, encoding, level_bytes, values = read
        if need > count:
            return None
        wanted = _wanted(level_bytes, rows, max_level)
        if wanted is None:
            return None
        kept_levels, at = wanted
        if width is None and encoding in _DICTIONARY_ENCODINGS:
            chosen = _chosen_entries(values, at, dictionary)
        elif width is None:
            chosen = _chosen_strings(values, encoding, count, at)
        else:
            chosen = _chosen_fixed(values, encoding, width, at, dictionary)
    except (NeveIOError, IndexError, KeyError, ValueError, OSError, pa.ArrowException):
        return None
    if chosen is None:
        return None
    return kept_levels, chosen


def _chosen_fixed(
    values: Values, encoding: int, width: int, at: Ints, dictionary: _Dictionary | None
) -> bytes | None:
    """The plain values at ``at`` (among the page's values) of a page of fixed-width
    values."""
    if not len(at):
        return b""
    last = int(at[-1])
    if encoding == PLAIN:
        values.reach((last + 1) * width)  # only as far as the last one wanted
        data = values.data
        if len(at) <= _FEW and len(data) >= (last + 1) * width:  # sliced, not by numpy
            return b"".join([data[k * width : k * width + width] for k in at.tolist()])
        plain = np.frombuffer(data, dtype=_DTYPES[width], count=len(data) // width)
        if last >= len(plain):
            return None
        picked = plain[at]
    elif encoding in _DICTIONARY_ENCODINGS and dictionary is not None:
        entries = dictionary.get(width)
        chosen = None if entries is None else _indexes(values, at, len(entries))
        if entries is None or chosen is None:
            return None
        picked = entries[chosen]
    else:
        return None
    out: bytes = picked.tobytes()
    return out


def _indexes(values: Values, at: Ints, entries: int) -> Ints | None:
    """The dictionary indexes at ``at`` of a dictionary-encoded page (a dictionary of
    ``entries`` values), read as far as the last one wanted; None where they cannot
    be read or point past the dictionary."""
    last = int(at[-1])
    values.reach(1)
    if not len(values.data) or values.data[0] > 32:
        return None  # (a dictionary's indexes are 32-bit at most)
    bits = values.data[0]
    # the indexes as far as the last one wanted were they all bit-packed, and the
    # rest of a bit-packed run of the most values writers put in one (504): runs
    # of one value take less; where they took more, the page is read to its end
    values.reach(1 + (last + 1 + 504) * bits // 8 + 64)
    if len(at) <= _FEW:
        few = few_at(memoryview(values.data)[1:], bits, at.tolist())
        if few is None and values.more(-1):
            few = few_at(memoryview(values.data)[1:], bits, at.tolist())
        if few is None or max(few) >= entries:
            return None
        return np.array(few, dtype=np.int64)
    found = runs(memoryview(values.data)[1:], bits, last + 1)
    if found is None and values.more(-1):
        found = runs(memoryview(values.data)[1:], bits, last + 1)
    if found is None:
        return None
    chosen = found.at(at)
    if int(chosen.max()) >= entries:
        return None
    return chosen


def _wanted(
    level_bytes: bytes | memoryview, rows: Ints, max_level: int
) -> tuple[Ints | None, Ints] | None:
    """The definition levels of ``rows`` (None for a leaf required all the way) and
    where the values of those of them that are not null are among the page's values,
    from the page's levels; None where the levels run out first."""
    if not max_level:
        return None, rows
    need = int(rows[-1]) + 1
    one = one_run(level_bytes, max_level, need)
    if one is not None:  # no nulls, or all
        kept = np.full(len(rows), one, dtype=np.int64)
        return kept, rows if one == max_level else rows[:0]
    found = runs(level_bytes, max_level.bit_length(), need)
    if found is None:
        return None
    got = found.all(need)
    defined = got == max_level
    at: Ints = (np.cumsum(defined) - 1)[rows][defined[rows]]
    return got[rows], at


def uncompressed_page(levels: Ints | None, max_level: int, values: bytes, count: int) -> bytes:
    """A version 2 data page of ``count`` rows: their definition levels and the plain
    values of those not null, uncompressed (a version 2 page says whether it is
    compressed, where a version 1 page is compressed by the chunk's codec: compressing
    a few values would cost more than decoding them)."""
    encoded = b"" if levels is None else encoded_levels(levels, max_level.bit_length())
    nulls = 0 if levels is None else int((levels < max_level).sum())
    return page_v2(encoded, values, count, nulls)


def page_v2(levels: bytes, values: bytes, count: int, nulls: int) -> bytes:
    """An uncompressed version 2 data page of ``count`` rows (``nulls`` of them null):
    their definition levels (hybrid encoded) and plain values."""
    encoded = levels
    size = len(encoded) + len(values)
    # PageHeader (compact protocol): type, sizes, then DataPageHeaderV2 as field 8:
    # values, nulls, rows, encoding PLAIN, the levels' byte lengths, not compressed
    out = bytearray()
    for n in (DATA_PAGE_V2, size, size):
        out.append(0x15)  # the next field, an i32
        write_varint(out, n << 1)  # zigzag of a non-negative number
    out.append(0x5C)  # field 8 (3 + 5), a struct
    for n in (count, nulls, count, PLAIN, len(encoded), 0):
        out.append(0x15)
        write_varint(out, n << 1)
    out += b"\x12\x00\x00"  # field 7 false; the ends of DataPageHeaderV2 and PageHeader
    return bytes(out) + encoded + values


def _compressed_page(
    levels: Ints | None, max_level: int, values: bytes, count: int, codec: int
) -> bytes:
    """A version 1 data page of ``count`` rows (levels and plain values), compressed
    by the chunk's codec."""
    body = values
    if levels is not None:
        encoded = encoded_levels(levels, max_level.bit_length())
        body = len(encoded).to_bytes(4, "little") + encoded + values
    c = codec_of(codec)
    stored = body if c is None else c.compress(body, asbytes=True)
    # PageHeader (compact protocol): type, sizes, then DataPageHeader as field 5:
    # value count, encoding PLAIN, RLE definition and repetition levels
    out = bytearray()
    for n in (DATA_PAGE, len(body), len(stored)):
        out.append(0x15)  # the next field, an i32
        write_varint(out, n << 1)  # zigzag of a non-negative number
    out.append(0x2C)  # field 5 (3 + 2), a struct
    for n in (count, PLAIN, RLE, RLE):
        out.append(0x15)
        write_varint(out, n << 1)
    out += b"\x00\x00"  # the ends of DataPageHeader and PageHeader
    return bytes(out) + stored


def _chosen_strings(values: Values, encoding: int, count: int, at: Ints) -> bytes | None:
    """The length-prefixed values at ``at`` (among the page's values) of a plain page
    of byte arrays, walked through as far as the last one wanted (decompressed only as
    far as that, where the codec streams)."""
    if encoding != PLAIN:
        return None
    if not len(at):
        return b""
    need = int(at[-1]) + 1
    values.reach(4)
    stride = _LENGTH.unpack_from(values.data, 0)[0] + 4 if len(values.data) >= 4 else 0
    if stride and values.size == stride * count:
        # a page of values all of one length, by its size: exactly as far as the
        # wanted ones end (at the mean size and a little more, about 5% of a page's
        # decompression would be spent past them); page_parts read that far
        values.reach(stride * need)
        data = values.data
        if len(data) >= stride * need:
            lengths = np.ndarray((need,), dtype="<u4", buffer=data, strides=(stride,))
            if (lengths == stride - 4).all():  # each wanted one at its number's stride
                return b"".join(data[s : s + stride] for s in (at * stride).tolist())
    # the bytes of ``need`` values of the page's mean size, and a little more
    values.reach(int(need * values.size / max(count, 1) * 1.05) + 64)
    starts = _starts(values, need)
    if starts is None:
        return None
    data = values.data
    unpack = _LENGTH.unpack_from
    return b"".join(data[s : s + 4 + unpack(data, s)[0]] for s in starts[at].tolist())


def _chosen_entries(values: Values, at: Ints, dictionary: _Dictionary | None) -> bytes | None:
    """The length-prefixed values at ``at`` (among the page's values) of a
    dictionary-encoded page of byte arrays, from the dictionary's kept form."""
    if not len(at):
        return b""
    kept = None if dictionary is None else dictionary.strings()
    if kept is None:
        return None
    starts, body = kept
    chosen = _indexes(values, at, len(starts) - 1)
    if chosen is None:
        return None
    ends = starts[chosen + 1].tolist()
    return b"".join(body[a:b] for a, b in zip(starts[chosen].tolist(), ends, strict=True))


def _starts(values: Values, need: int, walked: int = _WALKED) -> Ints | None:
    """Where each of the first ``need`` length-prefixed values begins (decompressing
    more as the walk needs it); None where the page ends first or where more than
    ``walked`` values of differing lengths would be walked one by one."""
    data = values.data
    if len(data) < 4:
        if not values.more(-1) or len(values.data) < 4:
            return None
        data = values.data
    first = _LENGTH.unpack_from(data, 0)[0]
    stride = first + 4
    # lengths all the same (hashes, codes, identifiers) are checked at once
    if stride * need > len(data) and values.more(stride * need - len(data) + 4):
        data = values.data
    same = min(need, len(data) // stride)
    lengths = np.ndarray((same,), dtype="<u4", buffer=data, strides=(stride,))
    differ = np.flatnonzero(lengths != first)
    k = int(differ[0]) if len(differ) else same
    out: Ints = np.arange(need, dtype=np.int64) * stride
    if k == need:
        return out
    if need - k > walked:
        return None
    pos = k * stride
    unpack = _LENGTH.unpack_from
    while True:
        try:
            while k < need:
                out[k] = pos
                pos += 4 + unpack(data, pos)[0]
                k += 1
            if pos <= len(data):
                return out
            k -= 1  # the last value runs past the bytes decompressed so far
        except struct.error:  # a length past them
            pass
        pos = int(out[k])
        if not values.more(-1):
            return None
        data = values.data
