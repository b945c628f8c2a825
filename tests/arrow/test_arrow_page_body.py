"""Pages decompressed only as far as the rows wanted (neve.arrow.page_body, read by
neve.arrow.page_pick): zstd pages of every fixed-width physical type and of strings,
with nulls, written by pyarrow with pages of several of zstd's 128 KiB blocks, version
1 pages (levels inside the compressed data) and version 2 (levels outside), plain and
dictionary encoded; rows near a page's start, middle and end read as a whole read has
them, with less than the page decompressed where they end early; truncated and
corrupt pages raise NeveIOError."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arrow.whole_read import planned_pages, reads_as_whole, same
from budget import examples
from neve.arrow import page_body, pages
from neve.arrow.page_file import open_page_file
from neve.arrow.page_pick import PICK_FROM, pick_pages
from neve.arrow.pages import read_positions
from neve.arrow.thrift import decode_numbers
from neve.errors import NeveIOError
from neve.io.fileio import FileIO

#: Rows a page: 400 KiB of longs, over a MiB of the strings below, the indexes of a
#: dictionary of 2^17 values in 212 KiB: each page several zstd blocks.
PAGE = 100_000


def _table(n: int, seed: int, null_share: float, distinct: int) -> pa.Table:
    """A column of each fixed-width physical type and one of strings (of one length, as
    the page reader walks through at once, as far as any row), all with nulls (values
    of a skewed distribution, so that zstd compresses them, and their dictionary
    indexes, rather than storing them)."""
    rnd = np.random.default_rng(seed)
    k = (rnd.zipf(1.2, n) - 1) % distinct
    null = rnd.random((5, n)) < null_share
    words = np.array([f"{w:07d}-{'xyz' * 8}" for w in range(min(distinct, 1 << 17))])
    return pa.table(
        {
            "i": pa.array(k.astype(np.int32) - distinct // 2, mask=null[0]),
            "l": pa.array(k.astype(np.int64) * (1 << 33) + 5, mask=null[1]),
            "f": pa.array((k / 4).astype(np.float32), mask=null[2]),
            "d": pa.array(k / 3 - 1.0, mask=null[3]),
            "s": pa.array(words[k % len(words)], pa.string(), mask=null[4]),
        }
    )


def _write(path: Path, table: pa.Table, version: str, dictionary: bool, **more: Any) -> None:
    pq.write_table(
        table,
        path,
        write_page_index=True,
        compression="zstd",
        data_page_version=version,
        use_dictionary=dictionary,
        dictionary_pagesize_limit=1 << 26,
        data_page_size=1 << 26,
        max_rows_per_page=PAGE,
        row_group_size=2 * PAGE,
        **more,
    )


class _Spy:
    """The bytes asked of zstd streams (a page's levels and values as far as read)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.asked = 0
        read = page_body._Stream.read

        def counted(stream: page_body._Stream, n: int) -> bytes:
            self.asked += n
            return read(stream, n)

        monkeypatch.setattr(page_body._Stream, "read", counted)


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [False, True])
@pytest.mark.parametrize("null_share", [0.0, 0.3])
def test_zstd_pages_are_read_as_far_as_the_rows_wanted(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    version: str,
    dictionary: bool,
    null_share: float,
) -> None:
    """Rows near the start, the middle and the end of large zstd pages: every page read
    is rewritten to hold only them (strings through their dictionary too), the rows
    are those of a whole read, and a page whose rows end early is decompressed less
    than whole."""
    table = _table(2 * PAGE, 7, null_share, 1 << 17)
    path = tmp_path / f"v{version}.parquet"
    _write(path, table, version, dictionary)
    spy = _Spy(monkeypatch)
    for wanted in ([3], [PAGE // 2], [PAGE - 1], [0, PAGE + PAGE // 2, 2 * PAGE - 1]):
        rows = np.array(wanted, np.int64)
        layout, _, units, blobs = planned_pages(path, table.column_names, rows, aligned=False)
        for unit in units:
            leaf = unit.leaves[0]
            read = sum(len(r) for g in unit.groups for r in g.ranges)
            whole = 0
            for g in unit.groups:
                for offset, _ in g.ranges[0]:
                    header, _ = decode_numbers(blobs[offset], 0)
                    whole += header[2]
            spy.asked = 0
            pick_pages(layout, unit, blobs)
            assert len(unit.replaced) == read, leaf.top
            if wanted == [3]:
                assert 0 < spy.asked < whole / 2, (leaf.top, spy.asked, whole)
            if wanted == [PAGE - 1] and null_share == 0:
                assert spy.asked > whole * 0.9, (leaf.top, spy.asked, whole)
            got = pages.decode(layout, unit, blobs)
            assert same(got, table.select([leaf.top]).take(rows)), (leaf.top, wanted)


@settings(
    max_examples=examples(6, 150),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    # pages of a few thousand rows, and of 40,000 (several zstd blocks)
    n=st.one_of(st.integers(PICK_FROM, 20_000), st.integers(80_000, 120_000)),
    seed=st.integers(0, 2**31),
    null_share=st.sampled_from([0.0, 0.1, 1.0]),
    distinct=st.sampled_from([3, 1 << 17]),
    options=st.fixed_dictionaries(
        {
            "compression": st.just("zstd"),
            "write_page_index": st.just(True),
            "use_dictionary": st.booleans(),
            "data_page_size": st.sampled_from([1 << 20, 1 << 26]),
            "max_rows_per_page": st.sampled_from([PICK_FROM, 40_000]),
            "data_page_version": st.sampled_from(["1.0", "2.0"]),
        }
    ),
    data=st.data(),
)
def test_rows_of_streamed_zstd_pages_equal_a_whole_read(
    tmp_path: Path,
    n: int,
    seed: int,
    null_share: float,
    distinct: int,
    options: dict[str, Any],
    data: Any,
) -> None:
    reads_as_whole(tmp_path, _table(n, seed, null_share, distinct), options, data, rows=10)


def _first_data_page(path: Path, column: str) -> tuple[int, int]:
    """Where the first data page of a column's first chunk begins, and where its
    compressed body does."""
    layout, reader = open_page_file(FileIO(), str(path))
    leaf = next(leaf for leaf in layout.leaves if leaf.top == column)
    layout.load_page_indexes(reader, [(0, leaf.index)])
    reader.close()
    index = layout.chunks[0][leaf.index].pages
    assert index is not None
    offset = int(index.offsets[0])
    _, used = decode_numbers(path.read_bytes()[offset : offset + 200], 0)
    return offset, offset + used


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_a_truncated_zstd_page_raises(tmp_path: Path, version: str) -> None:
    """A page's compressed body cut short: its values run out before the page's header
    says they end, which its reader reports as NeveIOError."""
    table = _table(PAGE, 2, 0.2, 1 << 17).select(["l"])
    path = tmp_path / "t.parquet"
    _write(path, table, version, False)
    start, body = _first_data_page(path, "l")
    data = path.read_bytes()
    header, _ = decode_numbers(data[start : start + 200], 0)
    page = memoryview(data[start : body + header[3] // 2])
    parts = page_body.page_parts(page, 6, 1, 10)
    assert parts is not None
    *_, values = parts
    values.reach(100)  # the start is there
    with pytest.raises(NeveIOError):
        values.more(-1)


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("column", ["l", "s"])
def test_a_corrupt_zstd_page_raises_on_take(tmp_path: Path, version: str, column: str) -> None:
    """A zstd page whose frame is overwritten: reading it as a stream fails, the page is
    left to pyarrow, whose failure is reported as NeveIOError."""
    table = _table(PAGE, 2, 0.2, 1 << 17).select([column])
    path = tmp_path / "c.parquet"
    _write(path, table, version, False)
    start, body = _first_data_page(path, column)
    data = bytearray(path.read_bytes())
    header, _ = decode_numbers(bytes(data[start : start + 200]), 0)
    # version 2 pages: the levels stay; the compressed values begin after them
    at = body + (header[8][5] if version == "2.0" else 0)
    data[at : at + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    with pytest.raises(NeveIOError):
        page = memoryview(bytes(data[start:]))
        parts = page_body.page_parts(page, 6, 1, 10)
        assert parts is not None
        parts[3].more(-1)
    with pytest.raises(NeveIOError):
        read_positions(FileIO(), str(path), table.schema, np.array([5, 77], np.int64))


def test_a_zstd_body_of_several_frames_is_read_on() -> None:
    """A body of two zstd frames (a writer that flushed part way) reads as one stream,
    in steps of any size."""
    rnd = np.random.default_rng(4)
    data = rnd.integers(0, 20, 300_000, dtype=np.uint8).tobytes()
    codec = pa.Codec("zstd")
    body = codec.compress(data[:100_000], asbytes=True) + codec.compress(
        data[100_000:], asbytes=True
    )
    values = page_body.body_values(memoryview(body), 6, len(data), streamed=True)
    assert values is not None
    values.reach(99_990)
    values.reach(150_000)
    assert bytes(values.data) == data[: len(values.data)] and len(values.data) >= 150_000
    values.more(-1)
    assert bytes(values.data) == data
