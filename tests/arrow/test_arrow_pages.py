"""The page reader (neve.arrow.pages): the rows it reads at given positions are exactly
the rows pyarrow reads from the whole file at those positions, for every column kind
(nested structs, lists, maps; nulls, NaN, -0.0, long strings, extremes), with and
without a page index, dictionary pages, compression, v2 data pages, several row
groups and tiny pages; and the footer decoder reads back exactly what it writes."""

from __future__ import annotations

import os
import struct
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arrow.whole_read import planned_pages
from budget import examples
from edge_rows import TYPES, canon, edge_table
from forked import run_forked
from neve.arrow.page_file import decoders, executor
from neve.arrow.pages import ReadStats, read_positions
from neve.arrow.parquet_layout import layout_cache
from neve.arrow.thrift import decode_struct, encode_struct
from neve.io.fileio import FileIO

pytestmark = pytest.mark.property


def _write(path: Path, table: pa.Table, options: dict[str, Any]) -> None:
    pq.write_table(table, path, **options)


def same(a: pa.Table, b: pa.Table) -> bool:
    return a.schema == b.schema and canon(a.to_pylist()) == canon(b.to_pylist())


WRITES = st.fixed_dictionaries(
    {
        "write_page_index": st.booleans(),
        "use_dictionary": st.booleans(),
        # small limits make the writer fall back from the dictionary within a chunk
        "dictionary_pagesize_limit": st.sampled_from([16, 256, 1 << 20]),
        "compression": st.sampled_from(["zstd", "snappy", "none"]),
        "data_page_size": st.sampled_from([64, 512, 8192, 1 << 20]),
        "max_rows_per_page": st.sampled_from([1, 3, 50, 20_000]),
        "row_group_size": st.sampled_from([7, 100, 10_000]),
        "data_page_version": st.sampled_from(["1.0", "2.0"]),
        "write_batch_size": st.sampled_from([1, 16, 1024]),
    }
)


@settings(
    max_examples=examples(15, 400),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    names=st.lists(st.sampled_from(sorted(TYPES)), min_size=1, max_size=5, unique=True),
    n=st.integers(1, 150),
    seed=st.integers(0, 2**31),
    options=WRITES,
    data=st.data(),
)
def test_rows_at_positions_equal_a_whole_read(
    tmp_path: Path, names: list[str], n: int, seed: int, options: dict[str, Any], data: Any
) -> None:
    table = edge_table(names, n, seed)
    path = tmp_path / f"{uuid.uuid4()}.parquet"  # a new file, as data files are
    _write(path, table, options)
    whole = pq.read_table(path)
    # the first read of a file plans its pages row group by row group, later ones (the
    # pages of every row group then known) for the whole file at once where they can
    for read in range(3):
        wanted = data.draw(
            st.lists(st.integers(0, n - 1), max_size=40, unique=True), label=f"rows {read}"
        )
        positions = np.array(sorted(wanted), dtype=np.int64)
        got = read_positions(FileIO(), str(path), whole.schema, positions)
        assert same(got, whole.take(pa.array(positions, pa.int64()))), (options, positions)
    path.unlink()


def _touched_bytes(path: Path, positions: list[int]) -> int:
    stats = ReadStats()
    whole = pq.read_table(path)
    got = read_positions(
        FileIO(), str(path), whole.schema, np.array(positions, np.int64), stats=stats
    )
    assert same(got, whole.take(pa.array(positions, pa.int64())))
    return stats.bytes


def test_a_page_index_reads_about_a_page_per_column_per_row(tmp_path: Path) -> None:
    n = 200_000
    rnd = np.random.default_rng(3)
    table = pa.table({"a": rnd.integers(0, 1 << 60, n), "b": rnd.random(n)})
    paged = tmp_path / "paged.parquet"
    plain = tmp_path / "plain.parquet"
    common = {"use_dictionary": False, "compression": "none", "row_group_size": n}
    pq.write_table(table, paged, write_page_index=True, data_page_size=8192, **common)
    pq.write_table(table, plain, **common)
    layout_cache.clear()
    # the footer and page index are read once and cached; then one page per column
    _touched_bytes(paged, [5])
    one = _touched_bytes(paged, [150_001])
    assert 2 * 8192 <= one <= 2 * 8192 + 200
    # without a page index the page headers of a local file are read once (a small
    # read each), then only the page holding the row (pyarrow's 1 MiB pages)
    _touched_bytes(plain, [5])
    again = _touched_bytes(plain, [150_001])
    assert again <= 2 * ((1 << 20) + 200) < 2 * 8 * n


def _fallen_back(path: Path) -> pa.Table:
    """A file whose column falls back from its dictionary after a few pages."""
    n = 20_000
    table = pa.table({"a": np.arange(n, dtype=np.int64) * 7919 % 100_003})
    pq.write_table(
        table,
        path,
        write_page_index=True,
        data_page_size=1024,
        dictionary_pagesize_limit=2048,
        compression="none",
    )
    return table


def test_pages_written_after_the_dictionary_fell_back_are_read_without_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "fallback.parquet"
    _fallen_back(path)
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    assert chunk.has_dictionary_page
    dictionary = chunk.data_page_offset - chunk.dictionary_page_offset
    # the last row's page is plain encoded: its page alone is read, not the dictionary
    layout_cache.clear()
    _touched_bytes(path, [0])
    last = _touched_bytes(path, [19_999])
    assert 0 < last < dictionary
    # the first row's page is dictionary encoded: the dictionary page is read too
    assert _touched_bytes(path, [0]) > dictionary


def test_a_dictionary_page_left_out_by_mistake_is_read_after_all(tmp_path: Path) -> None:
    """Where a chunk's encoding statistics say fewer pages are dictionary encoded than
    are, the page headers tell, and the dictionary page is read after all."""
    from neve.arrow.thrift import I32, Field

    path = tmp_path / "fallback.parquet"
    table = _fallen_back(path)
    data = path.read_bytes()
    (n,) = struct.unpack("<I", data[-8:-4])
    footer, _ = decode_struct(data[-8 - n : -8])
    for group in footer[4].value.values:
        for chunk in group[1].value.values:
            for entry in chunk[3].value[13].value.values:
                entry[3] = Field(I32, 0)  # no page dictionary encoded, says the writer
    doctored = encode_struct(footer)
    wrong = tmp_path / "wrong.parquet"
    wrong.write_bytes(data[: -8 - n] + doctored + struct.pack("<I", len(doctored)) + b"PAR1")
    positions = np.array([0, 3, 10_000, 19_999], np.int64)
    got = read_positions(FileIO(), str(wrong), table.schema, positions)
    assert got.column("a").to_pylist() == table.column("a").take(positions).to_pylist()


def test_the_footer_codec_writes_back_what_it_read(tmp_path: Path) -> None:
    for i, options in enumerate(
        [{}, {"write_page_index": True}, {"use_dictionary": False, "compression": "gzip"}]
    ):
        path = tmp_path / f"t{i}.parquet"
        pq.write_table(edge_table(sorted(TYPES), 50, i), path, row_group_size=9, **options)
        data = path.read_bytes()
        (n,) = struct.unpack("<I", data[-8:-4])
        footer = data[-8 - n : -8]
        decoded, end = decode_struct(footer)
        assert end == n
        assert encode_struct(decoded) == footer


_LOCATION = st.tuples(
    st.integers(0, 2**63 - 1), st.integers(-(2**31), 2**31 - 1), st.integers(0, 2**63 - 1)
)


@settings(max_examples=examples(60, 1000))
@given(
    locations=st.lists(_LOCATION, min_size=1, max_size=40),
    unencoded=st.booleans(),
    pad=st.integers(0, 3),
)
def test_the_offset_index_decoder_reads_every_page_location(
    locations: list[tuple[int, int, int]], unencoded: bool, pad: int
) -> None:
    """The vectorized decoder of an ``OffsetIndex`` reads back what the generic
    compact-protocol decoder reads, for any offsets, sizes and row numbers (one to ten
    byte varints), with or without the optional list that follows the locations."""
    from neve.arrow.parquet_layout import _page_locations  # the decoder under test
    from neve.arrow.thrift import I32, I64, LIST, STRUCT, Field, TList

    locations = [(o, z, min(f + i * pad, 2**63 - 1)) for i, (o, z, f) in enumerate(locations)]
    encoded: dict[int, Field] = {
        1: Field(
            LIST,
            TList(
                STRUCT,
                [{1: Field(I64, o), 2: Field(I32, z), 3: Field(I64, f)} for o, z, f in locations],
            ),
        )
    }
    if unencoded:
        encoded[2] = Field(LIST, TList(I64, [o // 3 for o, _, _ in locations]))
    data = np.frombuffer(encode_struct(encoded), dtype=np.uint8)
    got = _page_locations(data)
    assert got is not None
    offsets, sizes, first = got
    assert offsets.tolist() == [o for o, _, _ in locations]
    assert sizes.tolist() == [z for _, z, _ in locations]
    assert first.tolist() == [f for _, _, f in locations]
    # a location with its fields in another order is left to the generic decoder
    swapped = {1: Field(LIST, TList(STRUCT, [{1: Field(I64, 1), 3: Field(I64, 0)}]))}
    assert _page_locations(np.frombuffer(encode_struct(swapped), dtype=np.uint8)) is None


def test_spliced_footers_keep_each_chunks_metadata(tmp_path: Path) -> None:
    """The splicer writes its footers byte by byte: they decode to the chunks' own
    metadata (less what no longer describes the pages, with sizes and offsets set
    anew), in the canonical encoding the generic Thrift encoder writes, and pyarrow
    reads them."""
    from neve.arrow.splice import splice

    path = tmp_path / "t.parquet"
    names = sorted(TYPES)
    options = {"write_page_index": True, "data_page_size": 64, "row_group_size": 40}
    _write(path, edge_table(names, 100, 5), options)
    layout, _, units, blobs = planned_pages(path, names, np.array([3, 41, 42, 99], np.int64), 0.5)
    for unit in units:
        data = splice(layout, unit, blobs).to_pybytes()
        (n,) = struct.unpack("<I", data[-8:-4])
        footer, end = decode_struct(data[-8 - n : -8])
        assert end == n and encode_struct(footer) == data[-8 - n : -8]
        for group in footer[4].value.values:
            for leaf, column in zip(unit.leaves, group[1].value.values, strict=True):
                meta = column[3].value
                original = layout.chunks[0][leaf.index].meta
                for k in (1, 2, 3, 4):
                    assert meta[k] == original[k]
                assert not {10, 12, 13, 14, 15, 16, 17} & set(meta)
        metadata = pq.ParquetFile(pa.BufferReader(data)).metadata
        assert metadata.num_rows == sum(g.rows for g in unit.groups)


def test_later_reads_plan_the_pages_of_the_whole_file_at_once(tmp_path: Path) -> None:
    """From a file's second read on, a leaf without dictionary pages has its pages
    planned across row groups at once (arrow/page_plan.py), and reads the same rows;
    a leaf with dictionary pages is planned row group by row group still."""
    rnd = np.random.default_rng(3)
    table = edge_table(["s", "d", "i"], 3000, 5)
    path = tmp_path / "pages.parquet"
    pq.write_table(
        table,
        path,
        write_page_index=True,
        use_dictionary=["i"],
        max_rows_per_page=7,
        row_group_size=400,
        compression="none",
    )
    whole = pq.read_table(path)
    for k in (1, 2, 40, 1, 300):
        for _ in range(3):
            positions = np.sort(rnd.choice(3000, size=k, replace=False)).astype(np.int64)
            got = read_positions(FileIO(), str(path), whole.schema, positions)
            assert same(got, whole.take(pa.array(positions, pa.int64()))), positions
    layout = layout_cache.get(str(path), path.stat().st_size)
    assert layout is not None
    by_name = {leaf.path[0]: leaf.index for leaf in layout.leaves}
    assert all(layout.file_pages[by_name[c]] is not None for c in ("id", "s", "d"))
    assert layout.file_pages[by_name["i"]] is None


def _read_in_child(path: str, positions: list[int]) -> None:
    whole = pq.read_table(path)
    # the pools the parent used have no threads here: a take would wait for ever
    done = executor().submit(len, "four").result(timeout=30) == 4
    done = done and decoders().submit(len, "to").result(timeout=30) == 2
    _touched_bytes(Path(path), positions)
    os._exit(0 if done and whole.num_rows else 3)


def test_a_process_forked_after_page_reads_reads_pages(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    n = 50_000
    table = pa.table({"a": np.arange(n), "b": np.arange(n) * 0.5, "s": [str(i) for i in range(n)]})
    pq.write_table(table, path, write_page_index=True, data_page_size=4096)
    _touched_bytes(path, [3, 40_000])
    assert decoders().submit(len, "x").result() == 1  # both pools have threads now
    assert executor().submit(len, "x").result() == 1
    positions = [7, 20_000, 49_999]
    assert run_forked(_read_in_child, (str(path), positions), "on the page reader's pools") == 0
