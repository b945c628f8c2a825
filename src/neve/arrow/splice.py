"""Writing pages chosen from a Parquet file into a small Parquet file in memory, which
pyarrow then decodes (:mod:`neve.arrow.pages`): the pages as they are, per row group
touched (or one column chunk for all, where they can be), and a footer made for them.

The footer is written here byte by byte from what each column chunk keeps of its
metadata (encoded once per chunk): writing it through the generic Thrift encoder was a
tenth of a single-row take.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from neve.arrow.parquet_layout import ColumnChunk, Leaf, ParquetLayout, UnsupportedLayout
from neve.arrow.thrift import (
    BOOL,
    I32,
    LIST,
    STRUCT,
    Encoded,
    Field,
    Struct,
    TList,
    decode_struct,
    encode_value,
    write_varint,
)
from neve.errors import NeveIOError

__all__ = [
    "DecodeUnit",
    "PageGroup",
    "decode_spliced",
    "joined_across_files",
    "splice",
    "splice_key",
]

Ints = npt.NDArray[np.int64]


@dataclass
class PageGroup:
    """The part of original row group ``number`` a decode unit reads: per leaf the
    dictionary page's byte range (when spliced in front) and the data byte ranges
    (pages, or the whole chunk), and their value count; the rows they hold; and where
    each wanted row of the group is among them. ``omitted``: per leaf, a dictionary
    page left out because the chunk's encoding statistics tell the pages chosen were
    written after the writer fell back from the dictionary (their headers confirm it
    once read, :func:`_settle_dictionaries`)."""

    number: int
    dictionaries: list[tuple[int, int] | None]
    ranges: list[list[tuple[int, int]]]
    values: list[int]
    rows: int
    index: Ints
    whole: bool = False
    omitted: list[tuple[int, int] | None] | None = None
    #: the rows of the pages chosen (their first rows and counts), for lining units up
    spans: bytes = b""
    #: how many rows each chosen page holds, in order (where the planner tells: large
    #: pages are cut short at the last row wanted, :mod:`neve.arrow.page_trim`)
    page_rows: Ints | None = None

    def all_ranges(self) -> list[tuple[int, int]]:
        out = [d for d in self.dictionaries if d is not None]
        for r in self.ranges:
            out += r
        return out


@dataclass
class DecodeUnit:
    """Leaves decoded together from one spliced file, and the groups it holds;
    ``heads``: pages spliced with a header of their own (by page offset: the header,
    and the length of the one it replaces; :mod:`neve.arrow.page_trim`);
    ``replaced``: pages spliced in another form, header and body (by page offset:
    dictionary pages, :mod:`neve.arrow.page_dictionaries`; data pages holding only the
    wanted rows, :mod:`neve.arrow.page_pick`)."""

    leaves: list[Leaf]
    groups: list[PageGroup] = field(default_factory=list)
    heads: dict[int, tuple[bytes, int]] = field(default_factory=dict)
    replaced: dict[int, bytes] = field(default_factory=dict)
    #: its pages rewritten already (picked, cut, dictionaries kept; padded,
    #: :mod:`neve.arrow.page_align`): spliced as they are
    rewritten: bool = False
    #: where every page of the unit holds only wanted rows (:mod:`neve.arrow.page_pick`)
    #: and its columns need no conversion: each page's wanted values, by page offset
    #: (definition levels or None, plain values, row count), which
    #: :mod:`neve.arrow.page_arrays` makes Arrow arrays of without splicing a file
    picked: dict[int, tuple[npt.NDArray[np.int64] | None, bytes, int]] = field(default_factory=dict)


def _pruned_schema(elements: Sequence[Struct], keep: set[int]) -> list[Struct]:
    """The schema elements leading to the leaves ``keep`` (by leaf index), with their
    child counts adjusted."""
    pos = 1
    leaf = 0

    def walk() -> tuple[list[Struct], bool]:
        nonlocal pos, leaf
        e = elements[pos]
        pos += 1
        children = int(e[5].value) if 5 in e else 0
        if children == 0 and 1 in e:
            leaf += 1
            return [e], (leaf - 1) in keep
        kept: list[Struct] = []
        count = 0
        for _ in range(children):
            sub, used = walk()
            if used:
                kept += sub
                count += 1
        if not count:
            return [], False
        node = dict(e)
        node[5] = Field(I32, count)
        return [node, *kept], True

    out: list[Struct] = []
    count = 0
    for _ in range(int(elements[0][5].value)):
        sub, used = walk()
        if used:
            out += sub
            count += 1
    root = dict(elements[0])
    root[5] = Field(I32, count)
    return [root, *out]


#: Column metadata fields a spliced chunk sets anew: value count, sizes, data and
#: dictionary page offsets.
_SET = (5, 6, 7, 9, 11)

_I64 = 6


def _field(out: bytearray, last: int, fid: int, kind: int) -> None:
    """A compact-protocol field header (the field id as a delta where it fits)."""
    delta = fid - last
    if 0 < delta <= 15:
        out.append((delta << 4) | kind)
    else:
        out.append(kind)
        write_varint(out, fid << 1)  # field ids are positive: zigzag is a shift


def _long(out: bytearray, last: int, fid: int, value: int) -> None:
    _field(out, last, fid, _I64)
    write_varint(out, (value << 1) ^ (value >> 63))


@dataclass(frozen=True)
class _Template:
    """The metadata fields a spliced copy of a chunk keeps, encoded once: those before
    field 5, field 8 (encoded after field 7), and those after field 11."""

    before: bytes
    last: int
    middle: bytes
    after: tuple[tuple[int, int, bytes], ...]


def _encoded(fields: list[tuple[int, Field]], last: int) -> tuple[bytes, int]:
    out = bytearray()
    for fid, f in fields:
        if f.type == BOOL:  # a boolean's value is in its field header
            _field(out, last, fid, BOOL if f.value else 2)
        else:
            _field(out, last, fid, f.type)
            out += _value(f)
        last = fid
    return bytes(out), last


def _value(f: Field) -> bytes:
    return encode_value(f.type, f.value).data


def _template(chunk: ColumnChunk) -> _Template:
    if not isinstance(chunk.template, _Template):
        kept = sorted((k, f) for k, f in chunk.meta.items() if k not in _DROPPED and k not in _SET)
        before, last = _encoded([(k, f) for k, f in kept if k < 5], 0)
        middle, _ = _encoded([(k, f) for k, f in kept if k == 8], 7)
        after = tuple(
            (k, f.type, (b"\x01" if f.value else b"") if f.type == BOOL else _value(f))
            for k, f in kept
            if k > 11  # 10 and 12 to 17 are dropped, 5 to 7, 9 and 11 set anew
        )
        chunk.template = _Template(before, last, middle, after)
    template: _Template = chunk.template
    return template


def _column_chunk(
    out: bytearray,
    chunk: ColumnChunk,
    values: int,
    size: int,
    data_offset: int,
    dictionary_offset: int | None,
) -> None:
    """A ``ColumnChunk`` (file offset 0, then its ``ColumnMetaData``)."""
    t = _template(chunk)
    out += b"\x26\x00\x1c"  # field 2 (i64) 0, field 3 (struct)
    out += t.before
    _long(out, t.last, 5, values)
    _long(out, 5, 6, size)
    _long(out, 6, 7, size)
    out += t.middle
    _long(out, 8 if t.middle else 7, 9, data_offset)
    last = 9
    if dictionary_offset is not None:
        _long(out, 9, 11, dictionary_offset)
        last = 11
    for fid, kind, data in t.after:
        if kind == BOOL:
            _field(out, last, fid, BOOL if data else 2)
        else:
            _field(out, last, fid, kind)
            out += data
        last = fid
    out += b"\x00\x00"  # the ends of ColumnMetaData and of ColumnChunk


def _list_head(out: bytearray, field_head: int, n: int, kind: int) -> None:
    out.append(field_head)
    if n < 15:
        out.append((n << 4) | kind)
    else:
        out.append(0xF0 | kind)
        write_varint(out, n)


def _page_values(page: memoryview) -> int:
    """The value count in a data page's header (v1 or v2)."""
    header, _ = decode_struct(page)
    for kind in (5, 8):
        if kind in header:
            return int(header[kind].value[1].value)
    raise UnsupportedLayout("an offset index pointing at a page that holds no data")


#: Column metadata fields a spliced chunk drops: the index page offset, statistics,
#: encoding statistics, bloom filter, size and geospatial statistics (none describe
#: the spliced pages).
_DROPPED = (10, 12, 13, 14, 15, 16, 17)


def _merged(
    layout: ParquetLayout, unit: DecodeUnit, blobs: dict[int, memoryview]
) -> list[PageGroup]:
    """The unit's groups, or one group holding all their pages where they can be one
    column chunk: a single leaf, no dictionary page, the same codec. Pages are
    self-contained, so pages of several row groups make one chunk, and pyarrow decodes
    one row group at far less cost than several (0.1 ms each)."""
    if len(unit.groups) < 2 or any(leaf.repeated for leaf in unit.leaves):
        return unit.groups
    for n, leaf in enumerate(unit.leaves):
        chunks = [layout.chunks[g.number][leaf.index] for g in unit.groups]
        codec = chunks[0].meta[4].value
        for g, chunk in zip(unit.groups, chunks, strict=True):
            if g.dictionaries[n] is not None or chunk.meta[4].value != codec:
                return unit.groups
            if g.whole and chunk.dictionary is not None:
                return unit.groups
    leaves = range(len(unit.leaves))
    values = [sum(g.values[n] for g in unit.groups) for n in leaves]
    ranges = [[r for g in unit.groups for r in g.ranges[n]] for n in leaves]
    rows = sum(g.rows for g in unit.groups)
    first = unit.groups[0]
    return [PageGroup(first.number, [None] * len(values), ranges, values, rows, first.index)]


def splice(layout: ParquetLayout, unit: DecodeUnit, blobs: dict[int, memoryview]) -> pa.Buffer:
    """A Parquet file of the unit's leaves holding, per group, the byte ranges chosen
    for it, with a footer describing them.

    The pages are laid out first and copied once into a buffer of pyarrow's memory pool
    of the file's size: growing a ``bytearray`` page by page cost more than decoding
    (at parquet-java's 1 MiB pages, 100 rows splice 140 MB; the pool reuses its memory,
    where fresh memory is paid for page by page)."""
    pieces: list[memoryview] = []
    at = 4  # after the magic
    groups: list[tuple[bytes, int, int]] = []  # encoded columns, bytes, rows
    total_rows = 0
    for g in _merged(layout, unit, blobs):
        columns = bytearray()
        first = at
        for n, leaf in enumerate(unit.leaves):
            chunk = layout.chunks[g.number][leaf.index]
            start = at
            first_piece = len(pieces)
            dictionary = g.dictionaries[n]
            if dictionary is not None:
                kept = unit.replaced.get(dictionary[0])
                pieces.append(blobs[dictionary[0]] if kept is None else memoryview(kept))
                at += len(pieces[-1])
            for offset, _ in g.ranges[n]:
                head = unit.heads.get(offset)
                page = unit.replaced.get(offset)
                if page is not None:
                    pieces.append(memoryview(page))
                elif head is not None:
                    pieces.append(memoryview(head[0]))
                    at += len(head[0])
                    pieces.append(blobs[offset][head[1] :])
                else:
                    pieces.append(blobs[offset])
                at += len(pieces[-1])
            if g.whole:  # the chunk as written: its offsets move with it
                shift = start - chunk.start
                data_offset = int(chunk.meta[9].value) + shift
                held = chunk.dictionary
                dictionary_offset = None if held is None else held[0] + shift
            elif dictionary is not None:  # the dictionary page, then the data pages
                data_offset, dictionary_offset = start + len(pieces[first_piece]), start
            else:
                data_offset, dictionary_offset = start, None
            values = g.values[n]
            if values < 0:
                values = sum(_page_values(blobs[offset]) for offset, _ in g.ranges[n])
            size = at - start
            _column_chunk(columns, chunk, values, size, data_offset, dictionary_offset)
        groups.append((bytes(columns), at - first, g.rows))
        total_rows += g.rows
    footer = _footer(layout, unit, groups, total_rows)
    footer += struct.pack("<I", len(footer))
    footer += b"PAR1"
    return _joined(b"PAR1", pieces, footer, at + len(footer))


def _joined(head: bytes, pieces: list[memoryview], tail: bytearray, size: int) -> pa.Buffer:
    """``head``, the pieces and ``tail`` copied into one buffer of ``size`` bytes (by
    memoryview slices: a numpy slice assignment costs ~1 µs more a piece, and a take of
    100 rows splices ~500 pages)."""
    out = pa.allocate_buffer(size)
    view = memoryview(out).cast("B")  # pyarrow exports signed bytes
    view[: len(head)] = head
    at = len(head)
    for piece in pieces:
        n = len(piece)
        # (a view of another item format, such as pyarrow's signed bytes, is cast)
        view[at : at + n] = piece if piece.format == "B" else piece.cast("B")
        at += n
    view[at:] = tail
    return out


def _schema_of(layout: ParquetLayout, unit: DecodeUnit) -> Encoded:
    """The encoded schema of a file of the unit's leaves (encoded once per file and set
    of leaves)."""
    keep = frozenset(leaf.index for leaf in unit.leaves)
    schema: Encoded | None = layout.schemas.get(keep)
    if schema is None:
        pruned = TList(STRUCT, _pruned_schema(layout.schema_elements, set(keep)))
        schema = layout.schemas[keep] = encode_value(LIST, pruned)
    return schema


def _footer(
    layout: ParquetLayout,
    unit: DecodeUnit,
    groups: list[tuple[bytes, int, int]],
    total_rows: int,
) -> bytearray:
    """The ``FileMetaData`` of a spliced file: the original's version and writer, the
    schema of the unit's leaves, and its row groups."""
    schema = _schema_of(layout, unit)
    out = bytearray(b"\x15")  # field 1 (i32): the version
    version = int(layout.footer[1].value)
    write_varint(out, (version << 1) ^ (version >> 31))
    out.append(0x19)  # field 2 (list): the schema
    out += schema.data
    _long(out, 2, 3, total_rows)
    _list_head(out, 0x19, len(groups), STRUCT)  # field 4: the row groups
    for columns, nbytes, rows in groups:
        _list_head(out, 0x19, len(unit.leaves), STRUCT)  # field 1: the column chunks
        out += columns
        _long(out, 1, 2, nbytes)
        _long(out, 2, 3, rows)
        out.append(0)
    if 6 in layout.footer:  # field 6 (binary): the writer
        created = layout.footer[6].value
        data = created.encode() if isinstance(created, str) else bytes(created)
        out.append(0x28)
        write_varint(out, len(data))
        out += data
    out.append(0)
    return out


def splice_key(layout: ParquetLayout, unit: DecodeUnit) -> tuple[object, ...] | None:
    """What a decode unit's spliced file is made of apart from its pages: units of
    different files with the same key can be spliced into one file (one decode), their
    pages in one column chunk per leaf. None where the unit cannot be: several groups,
    a dictionary page, a chunk read whole, or a repeated leaf (whose value counts the
    page headers tell)."""
    if len(unit.groups) != 1 or unit.rewritten:  # (a join would drop what was rewritten)
        return None
    g = unit.groups[0]
    if g.whole or g.omitted or any(d is not None for d in g.dictionaries):
        return None
    if any(leaf.repeated for leaf in unit.leaves):
        return None
    chunks = [layout.chunks[g.number][leaf.index] for leaf in unit.leaves]
    schema = _schema_of(layout, unit)
    return (
        bytes(schema.data),
        layout.footer[1].value,
        layout.created_by,
        tuple(_template(c) for c in chunks),
    )


#: Files' byte offsets apart in the blobs of a unit joined across files.
_FILE_SHIFT = 1 << 48


def joined_across_files(
    parts: Sequence[tuple[DecodeUnit, dict[int, memoryview]]],
) -> tuple[DecodeUnit, dict[int, memoryview]]:
    """One unit holding the pages of ``parts`` (units of one :func:`splice_key`, one
    per file, in order) and the blobs it reads; its rows are those of each part in
    turn. Each file's offsets are moved apart so that their blobs share one map."""
    blobs: dict[int, memoryview] = {}
    leaves = range(len(parts[0][0].leaves))
    ranges: list[list[tuple[int, int]]] = [[] for _ in leaves]
    index = []
    rows = 0
    for k, (unit, mine) in enumerate(parts):
        (g,) = unit.groups
        shift = k * _FILE_SHIFT
        for n in leaves:
            for offset, size in g.ranges[n]:
                ranges[n].append((offset + shift, size))
                blobs[offset + shift] = mine[offset]
        index.append(g.index + rows)
        rows += g.rows
    first = parts[0][0]
    group = PageGroup(
        first.groups[0].number,
        [None] * len(ranges),
        ranges,
        [rows] * len(ranges),
        rows,
        np.concatenate(index),
    )
    return DecodeUnit(first.leaves, [group]), blobs


def decode_spliced(
    layout: ParquetLayout, unit: DecodeUnit, blobs: dict[int, memoryview]
) -> pa.Table:
    """The unit's columns as pyarrow decodes them from its spliced file (top-level
    columns, named as in the file)."""
    data = splice(layout, unit, blobs)
    try:
        # pyarrow's reader without ParquetFile's set-up (a fifth of a unit at one row of
        # 8 KiB pages), its extension types as ParquetFile has them, nothing read ahead
        reader, source = pq.ParquetReader(), pa.BufferReader(data)
        reader.open(
            source,
            coerce_int96_timestamp_unit="us",
            arrow_extensions_enabled=True,
            pre_buffer=False,
        )
        table: pa.Table = reader.read_all(use_threads=False)
    except (OSError, pa.ArrowException) as exc:
        raise NeveIOError(f"decoding pages of {layout.path} failed: {exc}") from exc
    return table
