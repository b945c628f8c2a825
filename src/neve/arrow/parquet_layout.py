"""The physical layout of a Parquet file: its footer, leaf columns, row groups, column
chunks and, where the writer kept it, the page index (Parquet's ``OffsetIndex``: where
each data page starts and which row it starts with; ``ColumnIndex``: each page's min,
max and null count).

pyarrow reads the footer too, but exposes neither where a column chunk's page index
lies nor the index itself, so the footer is decoded here (:mod:`neve.arrow.thrift`).
A file's layout is kept in a process-wide cache keyed by path and size (data files
never change once written), its page indexes loaded on first use.
"""

from __future__ import annotations

import functools
import struct
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from neve.arrow.thrift import Struct, TList, decode_struct
from neve.errors import NeveIOError

__all__ = [
    "ColumnChunk",
    "ColumnIndex",
    "Leaf",
    "PageIndex",
    "ParquetLayout",
    "RangeReader",
    "UnsupportedLayout",
    "layout_cache",
    "parse_layout",
]

_MAGIC = b"PAR1"
#: Bytes read from a file's end in one go: most footers fit, so one read finds them.
_TAIL = 64 * 1024
_REQUIRED = 0
_REPEATED = 2

Ints = npt.NDArray[np.int64]


class UnsupportedLayout(Exception):
    """The file cannot be read page by page (encrypted, no page index where needed, a
    column layout the page reader does not splice); the caller reads it whole."""


class RangeReader(Protocol):
    """Positioned reads of one file."""

    def read_range(self, offset: int, length: int) -> bytes | memoryview: ...


@dataclass(frozen=True, slots=True)
class Leaf:
    """A primitive column of the file: its index among the leaves, its path of names,
    the top-level column it belongs to, whether a repeated field (a list or map) lies
    on its path, and its maximum definition level (the fields on its path that are not
    required: 0 where its pages hold no definition levels)."""

    index: int
    path: tuple[str, ...]
    repeated: bool
    physical_type: int
    max_definition_level: int
    #: its values as Arrow holds them without any conversion, where the file says
    #: nothing more of them than their physical type ("int32", "int64", "float",
    #: "double", "binary"), or only that byte arrays are text ("string"); None for the
    #: others (timestamps, decimals, narrow or unsigned integers ...)
    plain: str | None = None

    @property
    def top(self) -> str:
        return self.path[0]


@dataclass(frozen=True, slots=True)
class PageIndex:
    """Where each data page of a column chunk lies (file offset, size with header) and
    the first row (within the row group) it holds; and, where the pages' headers were
    read to find them, each page's encoding."""

    offsets: Ints
    sizes: Ints
    first_rows: Ints
    encodings: Ints | None = None

    def rows(self, group_rows: int) -> Ints:
        """How many rows each page holds."""
        ends = np.empty_like(self.first_rows)
        ends[:-1] = self.first_rows[1:]
        ends[-1:] = group_rows
        out: Ints = ends - self.first_rows
        return out


@dataclass(frozen=True, slots=True)
class ColumnIndex:
    """Per page of a column chunk: whether it holds only nulls, its min and max (Parquet
    plain encoding; may be truncated bounds), its null count when known, and its NaN
    count when the writer recorded one."""

    null_pages: list[bool]
    min_values: list[bytes]
    max_values: list[bytes]
    null_counts: list[int] | None
    nan_counts: list[int] | None


@dataclass(slots=True)
class ColumnChunk:
    """One column chunk: its metadata struct (``ColumnMetaData``), its byte range, and
    where its page index lies (None when absent)."""

    meta: Struct
    start: int
    length: int
    offset_index: tuple[int, int] | None
    column_index: tuple[int, int] | None
    pages: PageIndex | None = None
    stats: ColumnIndex | None = None
    #: whether its pages were looked for by their headers (found or not)
    walked: bool = False
    #: the metadata fields a spliced copy of the chunk keeps, encoded once (the
    #: splicer's, arrow/splice.py)
    template: Any = None

    @property
    def num_values(self) -> int:
        return int(self.meta[5].value)

    @property
    def dictionary(self) -> tuple[int, int] | None:
        """The dictionary page's byte range, when the chunk has one (it comes first)."""
        d = self.meta.get(11)
        data = int(self.meta[9].value)
        if d is None or not 0 < int(d.value) < data:
            return None
        return int(d.value), data - int(d.value)


@dataclass
class ParquetLayout:
    """A Parquet file's footer as neve needs it for reading pages."""

    path: str
    size: int
    footer: Struct
    leaves: list[Leaf]
    schema_elements: list[Struct]
    #: per row group: its row count and its column chunks (one per leaf)
    group_rows: list[int]
    chunks: list[list[ColumnChunk]]
    created_by: str | None
    #: encoded schemas of spliced files, by the leaves they hold, and whether rows
    #: were read from the file before (the page reader's)
    schemas: dict[frozenset[int], Any] = field(default_factory=dict, repr=False)
    read_before: bool = False
    #: per leaf, its pages across every row group where a take can plan them at once
    #: (the page reader's, arrow/pages.py), or None where it cannot
    file_pages: dict[int, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @functools.cached_property
    def group_starts(self) -> Ints:
        """The file position of each row group's first row (read-only)."""
        out = np.zeros(len(self.group_rows), dtype=np.int64)
        if self.group_rows:
            np.cumsum(self.group_rows[:-1], out=out[1:])
        out.flags.writeable = False
        return out

    @property
    def num_rows(self) -> int:
        return int(sum(self.group_rows))

    def leaves_of(self, columns: Iterable[str]) -> list[Leaf]:
        wanted = set(columns)
        return [leaf for leaf in self.leaves if leaf.top in wanted]

    def has_page_index(self) -> bool:
        """Whether every column chunk has an offset index."""
        return all(c.offset_index is not None for g in self.chunks for c in g)

    def load_page_indexes(
        self, reader: RangeReader, wanted: Sequence[tuple[int, int]], *, stats: bool = False
    ) -> None:
        """Load the offset indexes (and with ``stats`` the column indexes) of the
        ``(row group, leaf)`` chunks not loaded yet, in as few reads as their places
        allow (writers put all page indexes together before the footer)."""
        with self._lock:
            todo: list[tuple[ColumnChunk, tuple[int, int], bool]] = []
            for g, leaf in wanted:
                chunk = self.chunks[g][leaf]
                if chunk.pages is None:
                    if chunk.offset_index is None:
                        raise UnsupportedLayout(f"{self.path} has no offset index")
                    todo.append((chunk, chunk.offset_index, False))
                if stats and chunk.stats is None and chunk.column_index is not None:
                    todo.append((chunk, chunk.column_index, True))
            if not todo:
                return
            spans = _coalesce(sorted({r for _, r, _ in todo}), gap=64 * 1024)
            blobs = {s: reader.read_range(s[0], s[1] - s[0]) for s in spans}
            for chunk, (offset, length), is_stats in todo:
                span = next(s for s in spans if s[0] <= offset and offset + length <= s[1])
                buf = blobs[span]
                at = offset - span[0]
                data = memoryview(buf)[at : at + length]
                if is_stats:
                    chunk.stats = _column_index(decode_struct(data)[0])
                    continue
                try:
                    chunk.pages = _offset_index(data)
                except UnsupportedLayout:  # pages not starting at rows: read it whole
                    chunk.offset_index = chunk.column_index = None

    def walk_pages(self, reader: RangeReader, wanted: Sequence[tuple[int, int]]) -> None:
        """Find the data pages of the ``(row group, leaf)`` chunks that have no offset
        index by reading their page headers one after another (a local file: each is a
        small read), as the offset index would tell them; a chunk of a repeated leaf
        (whose version 1 pages do not tell their rows) or whose headers do not add up
        is left without pages (read whole)."""
        with self._lock:
            for g, leaf in wanted:
                chunk = self.chunks[g][leaf]
                if chunk.pages is not None or chunk.walked or chunk.offset_index is not None:
                    continue
                chunk.walked = True
                if not self.leaves[leaf].repeated:
                    chunk.pages = _walk(reader, chunk, self.group_rows[g])


#: Bytes read for a page header at first: most fit (statistics of long strings too).
_HEADER = 512
_DATA_PAGE, _DATA_PAGE_V2 = 0, 3


def _walk(reader: RangeReader, chunk: ColumnChunk, rows: int) -> PageIndex | None:
    """The data pages of a chunk of a leaf that is not repeated (a value per row), from
    their headers; None where they do not add up to the row group's rows."""
    pos, end = chunk.start, chunk.start + chunk.length
    found: list[tuple[int, int, int, int]] = []
    row = 0
    while pos < end:
        n = min(_HEADER, end - pos)
        while True:
            try:
                header, used = decode_struct(memoryview(reader.read_range(pos, n)))
                break
            except NeveIOError:  # a longer header, or not a header at all
                if n == end - pos:
                    return None
                n = min(n * 16, end - pos)
        size = header.get(3)
        kind = header.get(1)
        if size is None or kind is None or int(size.value) < 0:
            return None
        if kind.value in (_DATA_PAGE, _DATA_PAGE_V2):
            body = header.get(5 if kind.value == _DATA_PAGE else 8)
            if body is None:
                return None
            count, encoding = (1, 2) if kind.value == _DATA_PAGE else (3, 4)
            values = int(body.value[count].value)
            found.append((pos, used + int(size.value), row, int(body.value[encoding].value)))
            row += values
        pos += used + int(size.value)
    if row != rows or not found:
        return None
    table = np.array(found, dtype=np.int64)
    return PageIndex(table[:, 0], table[:, 1], table[:, 2], table[:, 3])


def _coalesce(ranges: Sequence[tuple[int, int]], gap: int) -> list[tuple[int, int]]:
    """``(offset, length)`` ranges merged into ``(start, end)`` spans where the hole
    between two is at most ``gap`` bytes."""
    out: list[tuple[int, int]] = []
    for offset, length in ranges:
        end = offset + length
        if out and offset - out[-1][1] <= gap:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((offset, end))
    return out


def _offset_index(data: memoryview) -> PageIndex:
    """The pages an encoded ``OffsetIndex`` lists: decoded with numpy where its page
    locations have the shape every writer gives them, else field by field."""
    fast = _page_locations(np.frombuffer(data, dtype=np.uint8))
    if fast is not None:
        return _page_index(*fast)
    locations = decode_struct(data)[0][1].value.values
    n = len(locations)
    offsets = np.empty(n, dtype=np.int64)
    sizes = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    for i, loc in enumerate(locations):
        offsets[i] = loc[1].value
        sizes[i] = loc[2].value
        first[i] = loc[3].value
    return _page_index(offsets, sizes, first)


def _page_index(offsets: Ints, sizes: Ints, first: Ints) -> PageIndex:
    n = len(first)
    if n == 0 or first[0] != 0 or np.any(np.diff(first) <= 0):
        raise UnsupportedLayout("an offset index whose pages do not start at row 0 in order")
    return PageIndex(offsets, sizes, first)


#: A ``PageLocation`` in the compact protocol is seven tokens, each ending at the first
#: byte below 0x80: field 1 (i64) header, its value, field 2 (i32) header, its value,
#: field 3 (i64) header, its value, the struct's end.
_LOCATION_HEADERS = np.array([0x16, 0x15, 0x16, 0x00], dtype=np.uint8)


def _page_locations(b: npt.NDArray[np.uint8]) -> tuple[Ints, Ints, Ints] | None:
    """The offsets, sizes and first rows of an ``OffsetIndex`` whose list of page
    locations is encoded as writers do (field ids in order, no optional field), decoded
    at once; None when it is encoded otherwise (the caller decodes it field by field).
    Decoding a long index value by value in Python took about 20 ms per 1,000 pages."""
    if len(b) < 3 or b[0] != 0x19 or b[1] & 0x0F != 12:  # field 1: a list of structs
        return None
    n = int(b[1]) >> 4
    pos = 2
    if n == 15:  # the size follows as a varint
        n = shift = 0
        while pos < len(b) and shift < 35:
            n |= (int(b[pos]) & 0x7F) << shift
            pos += 1
            shift += 7
            if b[pos - 1] < 0x80:
                break
        else:
            return None
    body = b[pos:]
    ends = np.flatnonzero(body < 0x80)
    if n == 0 or len(ends) < 7 * n:
        return None
    ends = ends[: 7 * n]
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts + 1
    heads = starts.reshape(n, 7)[:, [0, 2, 4, 6]]
    if np.any(lengths.reshape(n, 7)[:, [0, 2, 4, 6]] != 1) or np.any(
        body[heads] != _LOCATION_HEADERS
    ):
        return None
    at = starts.reshape(n, 7)[:, [1, 3, 5]].reshape(-1)
    size = lengths.reshape(n, 7)[:, [1, 3, 5]].reshape(-1)
    if size.max() > 10:  # past 64 bits: not a number
        return None
    raw = np.zeros(len(at), dtype=np.uint64)
    for j in range(int(size.max())):
        live = size > j
        part = (body[at[live] + j] & 0x7F).astype(np.uint64)
        raw[live] |= part << np.uint64(7 * j)
    values = (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)
    table = values.reshape(n, 3)
    return table[:, 0].copy(), table[:, 1].copy(), table[:, 2].copy()


def _list(s: Struct, fid: int) -> list[Any] | None:
    f = s.get(fid)
    return list(f.value.values) if f is not None and isinstance(f.value, TList) else None


def _column_index(s: Struct) -> ColumnIndex:
    null_pages = _list(s, 1) or []
    return ColumnIndex(
        null_pages=[bool(x) for x in null_pages],
        min_values=_list(s, 2) or [],
        max_values=_list(s, 3) or [],
        null_counts=_list(s, 5),
        nan_counts=_list(s, 8),
    )


def _leaves(elements: Sequence[Struct]) -> list[Leaf]:
    """The leaf columns, depth first (Parquet's column order)."""
    out: list[Leaf] = []
    pos = 1

    def walk(path: tuple[str, ...], repeated: bool, level: int) -> None:
        nonlocal pos
        e = elements[pos]
        pos += 1
        name = e[4].value.decode("utf-8")
        here = (*path, name)
        rep = repeated or (3 in e and e[3].value == _REPEATED)
        # a field whose repetition is not said to be required is counted as optional
        level += 0 if 3 in e and e[3].value == _REQUIRED else 1
        children = int(e[5].value) if 5 in e else 0
        if children == 0 and 1 in e:
            kind = int(e[1].value)
            out.append(Leaf(len(out), here, rep, kind, level, _plain(e, kind)))
            return
        for _ in range(children):
            walk(here, rep, level)

    root_children = int(elements[0][5].value) if 5 in elements[0] else 0
    for _ in range(root_children):
        walk((), False, 0)
    return out


#: Physical types (SchemaElement.type) whose values Arrow holds as they are stored.
_PLAIN_TYPES = {1: "int32", 2: "int64", 4: "float", 5: "double", 6: "binary"}
_UTF8, _STRING = 0, 1  # ConvertedType.UTF8, the LogicalType union's STRING field


def _plain(e: Struct, kind: int) -> str | None:
    """:attr:`Leaf.plain` of the schema element ``e`` of physical type ``kind``."""
    converted = e[6].value if 6 in e else None
    logical = e[10].value if 10 in e else None
    if converted is None and not logical:
        return _PLAIN_TYPES.get(kind)
    text = converted == _UTF8 and (not logical or set(logical) == {_STRING})
    if kind == 6 and (text or (converted is None and set(logical or {}) == {_STRING})):
        return "string"
    return None


def _chunk(cc: Struct, file_size: int) -> ColumnChunk:
    if 8 in cc or 9 in cc or 3 not in cc:
        raise UnsupportedLayout("an encrypted column chunk")
    if 1 in cc:
        raise UnsupportedLayout("a column chunk stored in another file")
    meta: Struct = cc[3].value
    data = int(meta[9].value)
    d = meta.get(11)
    start = int(d.value) if d is not None and 0 < int(d.value) < data else data
    length = int(meta[7].value)
    if start < 4 or start + length > file_size:
        raise UnsupportedLayout("a column chunk outside the file")
    oi = (int(cc[4].value), int(cc[5].value)) if 4 in cc and 5 in cc else None
    ci = (int(cc[6].value), int(cc[7].value)) if 6 in cc and 7 in cc else None
    return ColumnChunk(meta, start, length, oi, ci)


def parse_layout(
    path: str, size: int, tail: bytes | memoryview, reader: RangeReader
) -> ParquetLayout:
    """The layout of the Parquet file at ``path`` of ``size`` bytes, from the last
    bytes of the file (``tail``; more is read through ``reader`` when the footer is
    longer)."""
    if len(tail) < 12 or tail[-4:] != _MAGIC:
        if tail[-4:] == b"PARE":
            raise UnsupportedLayout("an encrypted footer")
        raise NeveIOError(f"{path} is not a Parquet file (no PAR1 magic at its end)")
    (n,) = struct.unpack_from("<I", tail, len(tail) - 8)
    if n + 8 > len(tail):
        if n + 12 > size:
            raise NeveIOError(f"{path}: the footer length {n} exceeds the file")
        tail = reader.read_range(size - 8 - n, n + 8)
    footer, _ = decode_struct(memoryview(tail)[len(tail) - 8 - n : len(tail) - 8])
    elements: list[Struct] = list(footer[2].value.values)
    leaves = _leaves(elements)
    rows: list[int] = []
    chunks: list[list[ColumnChunk]] = []
    for rg in footer[4].value.values if 4 in footer else []:
        group = [_chunk(cc, size) for cc in rg[1].value.values]
        if len(group) != len(leaves):
            raise UnsupportedLayout("a row group whose columns do not match the schema")
        rows.append(int(rg[3].value))
        chunks.append(group)
    created = footer[6].value.decode("utf-8", "replace") if 6 in footer else None
    return ParquetLayout(path, size, footer, leaves, elements, rows, chunks, created)


class _LayoutCache:
    """The layouts of recently read files, least recently used dropped first."""

    def __init__(self, capacity: int = 128) -> None:
        self.capacity = capacity
        self._items: OrderedDict[tuple[str, int], ParquetLayout] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str, size: int) -> ParquetLayout | None:
        with self._lock:
            found = self._items.get((path, size))
            if found is not None:
                self._items.move_to_end((path, size))
            return found

    def put(self, layout: ParquetLayout) -> None:
        with self._lock:
            self._items[(layout.path, layout.size)] = layout
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


#: The process-wide cache of file layouts (footers and loaded page indexes).
layout_cache = _LayoutCache()


def tail_size(size: int) -> int:
    """How many bytes to read from a file's end to find its footer in one read."""
    return min(size, _TAIL)
