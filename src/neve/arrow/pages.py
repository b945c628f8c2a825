"""Reading the rows at given positions of a Parquet file, touching only the pages that
hold them.

Parquet's offset index tells where each data page of a column chunk lies and which row
it starts with. To read a few rows, the reader finds each row's page by binary search,
reads the byte ranges of those pages (adjacent ranges coalesced, ranges read
concurrently on object stores), writes them, with the chunk's dictionary page, into a
small Parquet file in memory (one row group per original row group touched, a footer
made for it) and lets pyarrow decode that file; then it takes the wanted rows. A
column chunk of which most pages are wanted is read whole instead, as is one without
an offset index (the measured crossover is in docs/RANDOM-ACCESS.md).

Every leaf column is spliced on its own, since the pages of different columns start at
different rows; a struct of several leaves is put together again afterwards. A column
with a list or map of several leaves (whose pages only the whole column chunk lines
up) is read by whole column chunks of the row groups touched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap64

from neve.arrow.page_align import lined_up, rewrite
from neve.arrow.page_arrays import picked_table
from neve.arrow.page_file import (
    PageFile,
    ReadStats,
    counting_reads,
    decoders,
    describe_pages,
    open_page_file,
)
from neve.arrow.page_plan import file_pages
from neve.arrow.parquet_layout import ColumnChunk, ParquetLayout, UnsupportedLayout
from neve.arrow.splice import (
    DecodeUnit,
    PageGroup,
    decode_spliced,
    joined_across_files,
    splice_key,
)
from neve.arrow.thrift import decode_numbers
from neve.errors import NeveError, NeveIOError
from neve.io.fileio import FileIO

__all__ = [
    "CROSSOVER",
    "PageFile",
    "ReadStats",
    "counting_reads",
    "describe_pages",
    "finish_rows",
    "int64_array",
    "live_rows_at",
    "open_page_file",
    "read_positions",
    "read_positions_of_files",
]

Ints = npt.NDArray[np.int64]

#: A column chunk of which more than this share of pages holds wanted rows is read
#: whole: decoding its pages one by one costs more than one sequential read (measured
#: by benchmarks/bench_take.py; docs/RANDOM-ACCESS.md).
CROSSOVER = 0.5

#: Pages of at least this many bytes (uncompressed, on average in a chunk) are read by
#: pages however many of a chunk's are wanted: decoding them costs in proportion to
#: their bytes, as a whole chunk would, and each left out is saved (parquet-java's 1 MiB
#: pages: 1,000 rows of 10,000,000 took 1.5 s by pages and 3.2 s by whole chunks).
_LARGE_PAGE = 64 * 1024

#: Decode units are decoded in parallel from this many bytes read: below it handing
#: the work to threads costs more than it saves.
_PARALLEL_FROM = 2 * 1024 * 1024

#: A unit is decoded in two halves from this many bytes (measured at parquet-java's
#: 1 MiB pages: 10 rows of 10,000,000, units of 4-6 MiB, cost about 15% more CPU in
#: halves; 100 rows, units of 35 MiB, a little less).
_HALVES_FROM = 16 * 1024 * 1024


# -- planning the pages ----------------------------------------------------------------


def int64_array(values: Ints) -> pa.Array:
    """An Arrow array over int64 numpy values, without a copy (and without the import
    of ``numpy.ma`` that ``pa.array`` makes on first use: 30 ms of a cold take)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def _distinct(ordered: Ints) -> Ints:
    """The distinct values of a sorted array (``np.unique`` without its sort, and
    without the import of ``numpy.ma`` its first call makes: 40 ms of a cold take)."""
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    out: Ints = ordered[keep]
    return out


def _chosen(first: Ints, local: Ints, group_rows: int) -> tuple[Ints, Ints, Ints]:
    """The pages (by their first rows ``first``) holding rows ``local``: their numbers,
    their row counts, and where each row is among the rows of those pages."""
    if len(local) == 1:  # a take of few rows: one per row group, in scalars
        row = int(local[0])
        p = int(first.searchsorted(row, side="right")) - 1
        start = int(first[p])
        end = int(first[p + 1]) if p + 1 < len(first) else group_rows
        one = np.array([p, end - start, row - start], dtype=np.int64)
        return one[0:1], one[1:2], one[2:3]
    page_of = np.searchsorted(first, local, side="right") - 1
    chosen = _distinct(page_of)
    after = chosen + 1  # each chosen page ends where the next begins, the last at the end
    ends = first[np.minimum(after, len(first) - 1)]
    ends[after == len(first)] = group_rows
    rows = ends - first[chosen]
    out_start = np.zeros(len(chosen), dtype=np.int64)
    np.cumsum(rows[:-1], out=out_start[1:])
    slot = np.searchsorted(chosen, page_of)
    index: Ints = out_start[slot] + (local - first[page_of])
    return chosen, rows, index


def _plan_pages(
    number: int, chunk: ColumnChunk, repeated: bool, local: Ints, group_rows: int
) -> tuple[PageGroup, float]:
    """The pages of ``chunk`` that hold rows ``local`` (sorted), and the share of the
    chunk's pages they are."""
    pages = chunk.pages
    assert pages is not None
    chosen, rows, index = _chosen(pages.first_rows, local, group_rows)
    ranges = list(zip(pages.offsets[chosen].tolist(), pages.sizes[chosen].tolist(), strict=True))
    n = int(rows.sum())
    # a value per row, except where a list holds several: then the page headers tell
    values = -1 if repeated else n
    dictionary = chunk.dictionary
    omitted: list[tuple[int, int] | None] | None = None
    if dictionary is not None and pages.encodings is not None:  # the headers were read
        chosen_encodings = pages.encodings[chosen]
        if not any((chosen_encodings == e).any() for e in _DICTIONARY_ENCODINGS):
            dictionary = None
    elif dictionary is not None and len(chosen) <= _CONFIRMED:
        encoded = _dictionary_pages(chunk)
        if encoded is not None and int(chosen[0]) >= encoded:
            dictionary, omitted = None, [chunk.dictionary]
    spans = pages.first_rows[chosen].tobytes() + rows.tobytes()
    group = PageGroup(
        number,
        [dictionary],
        [ranges],
        [values],
        n,
        index,
        omitted=omitted,
        spans=spans,
        page_rows=rows,
    )
    return group, len(chosen) / len(pages.first_rows)


#: A dictionary page is left out for at most this many pages of a chunk (their headers
#: are decoded to confirm none needs it); past it, it is read as one more page.
_CONFIRMED = 64

_DICTIONARY_ENCODINGS = (2, 8)  # PLAIN_DICTIONARY, RLE_DICTIONARY


def _dictionary_pages(chunk: ColumnChunk) -> int | None:
    """How many data pages of the chunk are dictionary encoded, from its encoding
    statistics (None where the writer kept none). Writers encode a chunk's first pages
    with the dictionary and, once it grows too large, the rest without: pages past
    that count need no dictionary page (a 1 MiB or larger page to read in parquet-java's
    layout)."""
    stats = chunk.meta.get(13)
    if stats is None:
        return None
    count = 0
    for entry in stats.value.values:
        kind, encoding = entry.get(1), entry.get(2)
        if kind is None or encoding is None or 3 not in entry:
            return None
        if kind.value in (0, 3) and encoding.value in _DICTIONARY_ENCODINGS:
            count += int(entry[3].value)
    return count


def _page_encoding(page: memoryview) -> int:
    """The encoding of a data page's values, from its header (v1 or v2)."""
    try:
        header, _ = decode_numbers(page, 0)
    except (IndexError, ValueError) as exc:
        raise NeveIOError(f"a page header is corrupt: {exc}") from exc
    for kind, field_id in ((5, 2), (8, 4)):
        fields = header.get(kind)
        value = fields.get(field_id) if isinstance(fields, dict) else None
        if isinstance(value, int):
            return value
    raise UnsupportedLayout("an offset index pointing at a page that holds no data")


def _settle_dictionaries(
    units: list[DecodeUnit], blobs: dict[int, memoryview], reader: PageFile
) -> None:
    """Put back a dictionary page left out where a page's header says it is dictionary
    encoded after all (a writer that did not fall back for good)."""
    for u in units:
        for g in u.groups:
            for n, dictionary in enumerate(g.omitted or ()):
                if dictionary is None:
                    continue
                pages = g.ranges[n]
                if any(_page_encoding(blobs[o]) in _DICTIONARY_ENCODINGS for o, _ in pages):
                    blobs[dictionary[0]] = reader.read_range(*dictionary)
                    g.dictionaries[n] = dictionary


def _whole(number: int, chunks: Sequence[ColumnChunk], local: Ints, group_rows: int) -> PageGroup:
    return PageGroup(
        number,
        [None] * len(chunks),
        [[(c.start, c.length)] for c in chunks],
        [c.num_values for c in chunks],
        group_rows,
        local,
        whole=True,
    )


def _units(layout: ParquetLayout, columns: Sequence[str]) -> list[DecodeUnit]:
    """The decode units of ``columns``: one per leaf, except a column with a repeated
    field and several leaves, which is one unit."""
    units: list[DecodeUnit] = []
    for name in columns:
        leaves = layout.leaves_of([name])
        if not leaves:
            raise UnsupportedLayout(f"no column {name} in the file")
        if len(leaves) > 1 and any(leaf.repeated for leaf in leaves):
            units.append(DecodeUnit(leaves))
        else:
            units.extend(DecodeUnit([leaf]) for leaf in leaves)
    return units


def _load_pages(
    layout: ParquetLayout, reader: PageFile, units: list[DecodeUnit], touched: Ints, complete: bool
) -> None:
    """Find the pages of the units' single-leaf chunks: in the row groups ``touched`` on
    a file's first read, in every row group from its second (``complete``) on: offset
    indexes lie together (one read), and a sampler touches every row group soon, so one
    take pays rather than each (a one-off take, or a cold process, loads only what it
    needs). Chunks without an offset index of a local file have their headers read."""
    paged = [u.leaves[0].index for u in units if len(u.leaves) == 1]
    groups = range(len(layout.chunks)) if complete else touched.tolist()
    wanted: list[tuple[int, int]] = []
    walk: list[tuple[int, int]] = []
    for g in groups:
        chunks = layout.chunks[g]
        for leaf in paged:
            if chunks[leaf].pages is None and not chunks[leaf].walked:
                (wanted if chunks[leaf].offset_index is not None else walk).append((g, leaf))
    layout.load_page_indexes(reader, wanted)
    if walk and reader.local:
        layout.walk_pages(reader, walk)


def _large_pages(chunk: ColumnChunk) -> bool:
    pages = chunk.pages
    assert pages is not None
    return int(chunk.meta[6].value) >= _LARGE_PAGE * len(pages.first_rows)


def _plan(
    layout: ParquetLayout,
    reader: PageFile,
    units: list[DecodeUnit],
    positions: Ints,
    crossover: float,
) -> list[int]:
    """Plan the units' page groups for ``positions``; returns the row groups touched."""
    starts = layout.group_starts
    group_of = np.searchsorted(starts, positions, side="right") - 1
    touched = _distinct(group_of)
    complete = layout.read_before
    layout.read_before = True
    at_once = [file_pages(layout, u, False) for u in units]
    if any(p is None for p in at_once):
        _load_pages(layout, reader, units, touched, complete)
        at_once = [
            p or file_pages(layout, u, complete) for p, u in zip(at_once, units, strict=True)
        ]
    by_group = []
    memo: dict[int, Any] = {}
    for u, pages in zip(units, at_once, strict=True):
        group = None if pages is None else pages.plan(positions, crossover, memo)
        if group is not None:
            u.groups.append(group)
        else:
            by_group.append(u)
    bounds = [*np.searchsorted(group_of, touched, side="left").tolist(), len(positions)]
    for k, g in enumerate(touched.tolist() if by_group else ()):
        local = positions[bounds[k] : bounds[k + 1]] - starts[g]
        rows = layout.group_rows[g]
        for u in by_group:
            chunks = [layout.chunks[g][leaf.index] for leaf in u.leaves]
            if len(chunks) == 1 and chunks[0].pages is not None:
                group, share = _plan_pages(g, chunks[0], u.leaves[0].repeated, local, rows)
                by_pages = share <= crossover or _large_pages(chunks[0])
                u.groups.append(group if by_pages else _whole(g, chunks, local, rows))
            else:
                u.groups.append(_whole(g, chunks, local, rows))
    out: list[int] = touched.tolist()
    return out


def _aligned(units: list[DecodeUnit]) -> list[DecodeUnit]:
    """The units, those of one leaf whose pages hold the same rows (in every group)
    made one: pyarrow decodes their columns from one spliced file, at the cost of one
    (the columns of a type width share page boundaries: three of the benchmark's five
    in the random-access layout, four in parquet-java's)."""
    out: list[list[DecodeUnit]] = []
    by_key: dict[tuple[tuple[int, bool, bytes], ...], list[DecodeUnit]] = {}
    for u in units:
        if len(u.leaves) > 1 or u.leaves[0].repeated:
            out.append([u])
            continue
        key = tuple((g.number, g.whole, g.spans) for g in u.groups)
        found = by_key.get(key)
        if found is None:
            by_key[key] = found = []
            out.append(found)
        found.append(u)
    return [members[0] if len(members) == 1 else _joined(members) for members in out]


def _joined(members: list[DecodeUnit]) -> DecodeUnit:
    members = sorted(members, key=lambda m: m.leaves[0].index)  # the file's column order
    groups = []
    for parts in zip(*(m.groups for m in members), strict=True):
        first = parts[0]
        omitted = [o for g in parts for o in (g.omitted or [None])]
        groups.append(
            PageGroup(
                first.number,
                [d for g in parts for d in g.dictionaries],
                [r for g in parts for r in g.ranges],
                [v for g in parts for v in g.values],
                first.rows,
                first.index,
                whole=first.whole,
                omitted=omitted if any(o is not None for o in omitted) else None,
                spans=first.spans,
                page_rows=first.page_rows,
            )
        )
    return DecodeUnit([m.leaves[0] for m in members], groups)


def decode(layout: ParquetLayout, unit: DecodeUnit, blobs: dict[int, memoryview]) -> pa.Table:
    """The unit's columns decoded by pyarrow from its spliced file (top-level columns,
    named as in the file), and the wanted rows taken from them."""
    rewrite(layout, unit, blobs, direct=True)
    # every page picked: arrays from the values; else pyarrow reads the spliced file
    table = picked_table(unit) if unit.picked else decode_spliced(layout, unit, blobs)
    base = 0
    parts = []
    for g in unit.groups:
        parts.append(g.index + base)
        base += g.rows
    index = np.concatenate(parts) if len(parts) > 1 else parts[0]
    if len(index) == 1:  # one row: a slice, without a copy
        return table.slice(int(index[0]), 1)
    if len(index) == table.num_rows and (index == np.arange(len(index))).all():
        return table  # every row, in order (arrays made from the picked values)
    return table.take(int64_array(index))


#: For a changelog's reads, pages are read only where they are at most this share of
#: the bytes of the column chunks touched: past it reading those chunks whole (polars
#: for a whole file) is as fast (measured: a changelog of 1% of a file's rows
#: scattered over 8 KiB pages, and of 0.01% over 1 MiB pages, read faster whole).
SPARSE_SHARE = 0.25

#: The same for takes, which read fewer columns and rows: measured with
#: benchmarks/bench_take.py at 1,000,000 rows, 100 and 1,000 rows of the 8 KiB
#: layout read 2-3x faster by pages than whole with a quarter, and 100 or 1,000 rows
#: of 1 MiB pages (most pages touched) about 1.4x faster whole (polars) than by pages.
TAKE_SPARSE_SHARE = 0.75


def _dense(
    layout: ParquetLayout,
    units: list[DecodeUnit],
    touched: list[int],
    nbytes: int,
    share: float,
) -> bool:
    whole = sum(
        layout.chunks[g][leaf.index].length for u in units for g in touched for leaf in u.leaves
    )
    return nbytes > share * whole


def _merge(target: pa.DataType, parts: Sequence[pa.Array]) -> pa.Array:
    """One array of type ``target`` from arrays holding parts of it: a struct from
    structs each holding some of its fields (one leaf each, decoded apart; their
    nulls agree, every leaf carries the struct's)."""
    if not pa.types.is_struct(target):
        (only,) = parts
        return only if only.type == target else only.cast(target)
    children = []
    for i in range(target.num_fields):
        f = target.field(i)
        mine = [p.field(f.name) for p in parts if p.type.get_field_index(f.name) >= 0]
        children.append(_merge(f.type, mine))
    first = parts[0]
    mask = pc.invert(first.is_valid()) if first.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)


@dataclass
class _Prepared:
    """A file's reads planned and its pages read, ready to decode."""

    layout: ParquetLayout
    units: list[DecodeUnit]
    blobs: dict[int, memoryview]
    nbytes: int


def _prepare(
    io: FileIO,
    path: str,
    target: pa.Schema,
    positions: Ints,
    stats: ReadStats | None,
    crossover: float,
    sparse_share: float | None,
    opened: tuple[ParquetLayout, PageFile] | None,
) -> _Prepared | pa.Table | None:
    """Plan and read the pages (see :func:`read_positions`): an empty table for no
    positions, None where the pages are over ``sparse_share`` of the chunks' bytes."""
    layout, reader = opened or open_page_file(io, path, stats)
    try:
        if len(positions) and (positions[0] < 0 or positions[-1] >= layout.num_rows):
            raise NeveIOError(
                f"row positions {int(positions[0])}..{int(positions[-1])} lie outside "
                f"{path}, which holds {layout.num_rows} rows"
            )
        if not len(positions):
            return target.empty_table()
        units = _units(layout, target.names)
        touched = _plan(layout, reader, units, positions, crossover)
        units = _aligned(units)
        ranges = [r for u in units for g in u.groups for r in g.all_ranges()]
        nbytes = sum(r[1] for r in ranges)
        if sparse_share is not None and _dense(layout, units, touched, nbytes, sparse_share):
            return None
        blobs = reader.read_ranges(ranges)
        _settle_dictionaries(units, blobs, reader)
    finally:
        reader.close()
    return _Prepared(layout, units, blobs, nbytes)


def _assemble(target: pa.Schema, decoded: Sequence[pa.Table]) -> pa.Table:
    """The columns of ``target`` from the decoded units' columns."""
    by_top: dict[str, list[pa.Array]] = {}
    for table in decoded:
        for name, column in zip(table.column_names, table.columns, strict=True):
            one = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
            by_top.setdefault(name, []).append(one)
    arrays = [_merge(f.type, by_top[f.name]) for f in target]
    return pa.Table.from_arrays(arrays, schema=target)


def _halves(unit: DecodeUnit, blobs: dict[int, memoryview]) -> list[DecodeUnit]:
    """The unit as two of about half its bytes each, where it holds several groups and
    :data:`_HALVES_FROM` bytes: a take of parquet-java's 1 MiB pages has
    one unit (the strings) of most of its bytes, which a second core would otherwise
    not share."""
    if len(unit.groups) < 2:
        return [unit]
    sizes = np.array([_bytes_of([g], blobs) for g in unit.groups])
    if sizes.sum() <= _HALVES_FROM:
        return [unit]
    cut = int(np.searchsorted(np.cumsum(sizes), sizes.sum() / 2)) + 1
    cut = min(max(cut, 1), len(unit.groups) - 1)
    return [DecodeUnit(unit.leaves, unit.groups[:cut]), DecodeUnit(unit.leaves, unit.groups[cut:])]


def _decoded(files: Sequence[_Prepared]) -> list[list[pa.Table]]:
    """Per file, its units decoded: in threads from :data:`_PARALLEL_FROM` bytes read
    (the units of every file at once, largest first), large units in two halves (each
    unit's rows in order)."""
    parallel = sum(p.nbytes for p in files) > _PARALLEL_FROM
    parts = [
        (i, k, half)
        for i, p in enumerate(files if parallel else ())
        for k, u in enumerate(p.units)
        for half in _halves(u, p.blobs)
    ]
    if len(parts) < 2:
        return [[decode(p.layout, u, p.blobs) for u in p.units] for p in files]
    order = sorted(
        range(len(parts)), key=lambda n: -_bytes_of(parts[n][2].groups, files[parts[n][0]].blobs)
    )
    done = decoders().map(
        lambda n: decode(files[parts[n][0]].layout, parts[n][2], files[parts[n][0]].blobs), order
    )
    tables = dict(zip(order, done, strict=True))
    out: list[list[list[pa.Table]]] = [[[] for _ in p.units] for p in files]
    for n, (i, k, _) in enumerate(parts):
        out[i][k].append(tables[n])
    return [[t[0] if len(t) == 1 else pa.concat_tables(t) for t in f] for f in out]


def _bytes_of(groups: Sequence[PageGroup], blobs: dict[int, memoryview]) -> int:
    """The bytes read for these page groups."""
    return sum(len(blobs[o]) for g in groups for o, _ in g.all_ranges())


def read_positions(
    io: FileIO,
    path: str,
    target: pa.Schema,
    positions: Ints,
    *,
    stats: ReadStats | None = None,
    crossover: float = CROSSOVER,
    sparse_share: float | None = None,
    opened: tuple[ParquetLayout, PageFile] | None = None,
) -> pa.Table | None:
    """The rows of the Parquet file at ``path`` at file positions ``positions``
    (sorted, distinct, within the file), with the top-level columns of ``target``
    (its fields name the file's columns, typed as pyarrow reads them), in position
    order. Reads only the pages holding them where the file has an offset index.

    ``opened``: the file's layout and reader, already open (closed here). With
    ``sparse_share``, None when the pages are over that share of the chunks' bytes (the
    caller has a faster way to read whole files). Raises :class:`UnsupportedLayout` when the
    file cannot be read this way (the caller reads it otherwise)."""
    p = _prepare(io, path, target, positions, stats, crossover, sparse_share, opened)
    if not isinstance(p, _Prepared):
        return p
    return _assemble(target, _decoded([p])[0])


def read_positions_of_files(
    io: FileIO, reads: Sequence[tuple[str, pa.Schema, Ints]], *, sparse_share: float
) -> list[pa.Table | None]:
    """:func:`read_positions` for several files at once (``(path, target, positions)``
    each), the units of different files that splice alike decoded together: one pyarrow
    decode for the pages of all files instead of one per file (a take of a few rows
    from a table of several files). None for a file whose pages are over
    ``sparse_share`` of its chunks' bytes or that cannot be read by pages. For takes of
    a few rows: files and decodes one after another, except where the pages read come
    to over :data:`_HALVES_FROM` bytes (then each file's decodes use both cores)."""
    prepared: list[_Prepared | pa.Table | None] = []
    for path, target, positions in reads:
        try:
            prepared.append(
                _prepare(io, path, target, positions, None, CROSSOVER, sparse_share, None)
            )
        except UnsupportedLayout:
            prepared.append(None)
    ready = [p for p in prepared if isinstance(p, _Prepared)]
    if len(ready) == 1 and ready[0].nbytes <= _HALVES_FROM:
        # one row a row group of one file: its units lined up and decoded as one (of
        # several files, the units of each column join across files instead)
        ready[0].units = lined_up(ready[0].layout, ready[0].units, ready[0].blobs)
    if sum(p.nbytes for p in ready) > _HALVES_FROM:
        # large pages (parquet-java's 1 MiB): no two files splice alike (their chunks
        # have dictionary pages), and the decodes need both cores
        units = iter(_decoded(ready))
        return [
            _assemble(target, next(units)) if isinstance(p, _Prepared) else p
            for p, (_, target, _) in zip(prepared, reads, strict=True)
        ]
    # the units of every file, grouped by what their spliced files are made of
    together: dict[object, list[tuple[int, DecodeUnit]]] = {}
    for i, p in enumerate(prepared):
        if isinstance(p, _Prepared):
            for n, u in enumerate(p.units):
                key = splice_key(p.layout, u)
                together.setdefault((i, n) if key is None else key, []).append((i, u))
    jobs: list[Callable[[], pa.Table]] = []
    for members in together.values():
        i, u = members[0]
        first = prepared[i]
        assert isinstance(first, _Prepared)
        if len(members) == 1:
            jobs.append(partial(decode, first.layout, u, first.blobs))
        else:
            parts = [(m, _blobs(prepared[k])) for k, m in members]
            unit, blobs = joined_across_files(parts)
            jobs.append(partial(decode, first.layout, unit, blobs))
    # one after another: a take of a few hundred rows decoded in threads was slower
    # (measured at 100 and 250 rows of bench_take's 10,000,000, on two cores)
    decoded: list[list[pa.Table]] = [[] for _ in reads]
    for members, table in zip(together.values(), [job() for job in jobs], strict=True):
        at = 0
        for k, m in members:  # each file's rows in turn
            n = len(m.groups[0].index) if len(members) > 1 else table.num_rows
            decoded[k].append(table.slice(at, n))
            at += n
    return [
        _assemble(target, decoded[i]) if isinstance(p, _Prepared) else p
        for i, (p, (_, target, _)) in enumerate(zip(prepared, reads, strict=True))
    ]


def _blobs(p: _Prepared | pa.Table | None) -> dict[int, memoryview]:
    assert isinstance(p, _Prepared)
    return p.blobs


def live_rows_at(
    io: FileIO,
    path: str,
    file_schema: pa.Schema,
    columns: Sequence[str],
    row_groups: Sequence[int],
    deleted: BitMap64 | None,
    only: BitMap64 | None,
    *,
    random_access: bool = False,
) -> tuple[pa.Table, Ints] | None:
    """With ``only`` (positions asked for), the rows of ``row_groups`` not in
    ``deleted`` (columns ``columns`` of ``file_schema``, and their file positions),
    read from only the pages holding them; None without ``only``, or when the file has
    no offset index to find their pages by and is not local (a local file's page
    headers are read instead, once per file), or the pages are over
    :data:`SPARSE_SHARE` of the bytes of the chunks touched (:data:`TAKE_SPARSE_SHARE`
    for ``random_access``: a take), or the file cannot be read page by page: the caller
    then reads whole row groups (or the whole file with polars), as fast as this would
    or faster."""
    if only is None:
        return None
    try:
        layout, reader = open_page_file(io, path)
        if not reader.local and not any(
            c.offset_index is not None for g in layout.chunks for c in g
        ):
            reader.close()  # no page index, and finding pages by their headers is slow
            return None
        starts = layout.group_starts
        wanted = BitMap64()
        for rg in row_groups:
            wanted.add_range(int(starts[rg]), int(starts[rg]) + layout.group_rows[rg])
        if deleted is not None:
            wanted -= deleted
        target = pa.schema([file_schema.field(c) for c in columns])
        where = np.frombuffer(wanted.to_array(), dtype=np.uint64).astype(np.int64)
        share = TAKE_SPARSE_SHARE if random_access else SPARSE_SHARE
        # where every chunk would be read whole, the caller's own reads are as fast
        rows = read_positions(
            io, path, target, where, sparse_share=share, opened=(layout, reader)
        )  # closes the reader
        return None if rows is None else (rows, where)
    except UnsupportedLayout:
        return None


def finish_rows(
    read: tuple[pa.Table, Ints],
    position_column: str,
    finish: Callable[[pa.RecordBatch], pa.RecordBatch | None],
    path: str,
    batch_size: int,
) -> Iterator[pa.RecordBatch]:
    """The batches ``finish`` makes of rows read page by page, their file positions
    added as ``position_column``."""
    rows, positions = read
    rows = rows.append_column(pa.field(position_column, pa.int64()), int64_array(positions))
    try:
        for live in rows.to_batches(max_chunksize=batch_size):
            out = finish(live)
            if out is not None:
                yield out
    except NeveError:
        raise
    except (OSError, pa.ArrowException) as exc:
        raise NeveIOError(f"reading {path} failed: {exc}") from exc
