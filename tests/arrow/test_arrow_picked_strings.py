"""Takes from large pages of byte arrays (parquet-java's layout: 1 MiB pages of about
10,000 strings of 100 characters), rewritten to hold only the values wanted
(neve.arrow.page_pick): the rows read equal pyarrow's whole read at those positions
for strings and binary values, required or with nulls (in a struct too), empty, long,
all of one length or of many, plain and dictionary pages, version 1 and 2 pages, every codec pyarrow writes; first and last rows of pages, and
several rows of one page."""

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
from neve.arrow import page_body, page_pick, pages
from neve.arrow.page_pick import STRINGS_FROM, pick_pages
from neve.arrow.thrift import Field, decode_numbers

pytestmark = pytest.mark.property


def _strings(n: int, rnd: np.random.Generator, lengths: str) -> list[str]:
    if lengths == "same":
        sizes = np.full(n, 17)
    elif lengths == "mostly-same":  # one of another length now and then
        sizes = np.where(rnd.random(n) < 0.01, rnd.integers(0, 40, n), 17)
    elif lengths == "long":
        sizes = rnd.integers(0, 3000, n)
    else:
        sizes = rnd.integers(0, 30, n)
    letters = "abcdefghijklmnopqrstuvwxyzé€"
    return ["".join(rnd.choice(list(letters), int(s))) for s in sizes]


def _table(n: int, seed: int, null_share: float, lengths: str, distinct: int) -> pa.Table:
    rnd = np.random.default_rng(seed)
    pool = _strings(min(n, distinct), rnd, lengths)
    ks = rnd.integers(0, len(pool), n).tolist()
    null = rnd.random((4, n)) < null_share
    values = [pool[k] for k in ks]
    inner = pa.StructArray.from_arrays(
        [pa.array([None if null[2][i] else v for i, v in enumerate(values)], pa.string())],
        names=["x"],
        mask=pa.array(null[3]),
    )
    return pa.table(
        {
            "id": pa.array(np.arange(n), pa.int64()),
            "req": pa.array(values, pa.string()),  # nullable in Arrow, never null
            "s": pa.array([None if null[0][i] else v for i, v in enumerate(values)], pa.string()),
            "b": pa.array(
                [None if null[1][i] else v.encode() for i, v in enumerate(values)], pa.binary()
            ),
            "st": inner,
        }
    )


WRITES = st.fixed_dictionaries(
    {
        "write_page_index": st.booleans(),
        "use_dictionary": st.booleans(),
        "dictionary_pagesize_limit": st.sampled_from([256, 1 << 20]),
        "compression": st.sampled_from(["zstd", "snappy", "gzip", "brotli", "lz4", "none"]),
        "data_page_size": st.just(1 << 24),
        "max_rows_per_page": st.sampled_from([STRINGS_FROM - 1, STRINGS_FROM, STRINGS_FROM + 300]),
        "row_group_size": st.sampled_from([STRINGS_FROM + 500, 3 * STRINGS_FROM]),
        "data_page_version": st.sampled_from(["1.0", "1.0", "2.0"]),
    }
)


@settings(
    max_examples=examples(15, 400),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    n=st.integers(STRINGS_FROM, 4 * STRINGS_FROM),
    seed=st.integers(0, 2**31),
    null_share=st.sampled_from([0.0, 0.1, 0.9, 1.0]),
    lengths=st.sampled_from(["same", "mostly-same", "short", "long"]),
    distinct=st.sampled_from([3, 1 << 20]),
    options=WRITES,
    data=st.data(),
)
def test_rows_of_picked_string_pages_equal_a_whole_read(
    tmp_path: Path,
    n: int,
    seed: int,
    null_share: float,
    lengths: str,
    distinct: int,
    options: dict[str, Any],
    data: Any,
) -> None:
    table = _table(n, seed, null_share, lengths, distinct)
    reads_as_whole(tmp_path, table, options, data, rows=12)


#: Rows of 12,000 written in pages of 3,000 (:func:`_written`): the first and last of
#: pages among them, and several of one page.
_WANTED = np.array([0, 1, 2999, 3000, 3001, 4500, 5999, 11_999], np.int64)


def _written(folder: Path, table: pa.Table, version: str, codec: str, **options: Any) -> Path:
    """``table`` written in large pages of 3,000 rows (a data page version, a codec, the
    page index) and row groups of 6,000, with ``options`` besides."""
    path = folder / f"v{version}{codec}.parquet"
    pq.write_table(
        table,
        path,
        write_page_index=True,
        data_page_version=version,
        max_rows_per_page=3000,
        data_page_size=1 << 26,
        row_group_size=6000,
        compression=codec,
        **options,
    )
    return path


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("codec", ["zstd", "gzip", "snappy", "none"])
@pytest.mark.parametrize("lengths", ["same", "mostly-same", "long"])
def test_plain_string_pages_are_rewritten_to_the_rows_wanted(
    tmp_path: Path, version: str, codec: str, lengths: str
) -> None:
    """A few rows, the first and last of pages among them and several of one page,
    from large plain pages: every page read is rewritten to hold only the rows wanted
    from it, and the rows are those of a whole read."""
    table = _table(12_000, 5, 0.2, lengths, 1 << 20).select(["s", "b", "req", "st"])
    path = _written(tmp_path, table, version, codec, use_dictionary=False)
    layout, _, units, blobs = planned_pages(path, table.column_names, _WANTED, read_before=True)
    for unit in units:
        read = sum(len(r) for g in unit.groups for r in g.ranges)
        pick_pages(layout, unit, blobs)
        assert len(unit.replaced) == read  # every page read, in every leaf
        assert sum(g.rows for g in unit.groups) == len(_WANTED)
        got = pages.decode(layout, unit, blobs)
        names = [leaf.top for leaf in unit.leaves]
        assert same(got, table.select(names).take(_WANTED))


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("codec", ["zstd", "gzip", "snappy", "none"])
@pytest.mark.parametrize("lengths", ["same", "short", "long"])
def test_dictionary_string_pages_are_picked_through_their_dictionary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, codec: str, lengths: str
) -> None:
    """A few rows, the first and last of pages among them and several of one page,
    from large dictionary-encoded pages of strings and binary values (nulls and empty
    values among them): every page read is rewritten to hold only the rows wanted, its
    values looked up in the chunk's dictionary (which is then left out), and the rows
    are those of a whole read, made into arrays from the picked values as well as
    spliced; a second take finds the dictionary kept."""
    table = _table(12_000, 5, 0.2, lengths, 300).select(["s", "b", "req"])
    path = _written(tmp_path, table, version, codec, dictionary_pagesize_limit=1 << 26)
    page_pick.plain_dictionaries.clear()
    walked = []
    walk = page_pick._kept_strings

    def counted(page: memoryview, chunk: Any) -> bytes | None:
        walked.append(1)
        return walk(page, chunk)

    monkeypatch.setattr(page_pick, "_kept_strings", counted)
    kept = []
    for direct in (False, True):
        layout, _, units, blobs = planned_pages(path, table.column_names, _WANTED)
        for unit in units:
            assert all(d is not None for g in unit.groups for d in g.dictionaries)
            read = sum(len(r) for g in unit.groups for r in g.ranges)
            pick_pages(layout, unit, blobs, direct)
            assert len(unit.picked if direct else unit.replaced) == read
            assert all(d is None for g in unit.groups for d in g.dictionaries)
            got = pages.decode(layout, unit, blobs)
            names = [leaf.top for leaf in unit.leaves]
            assert same(got, table.select(names).take(_WANTED))
        kept.append(len(walked))
    assert kept[0] and kept[1] == kept[0]  # kept by the first take, found by the second


def _values(data: bytes, first: int) -> page_body.Values:
    """A page's values of which the first ``first`` bytes are decompressed, the rest
    streamed on demand."""
    compressed = pa.Codec("zstd").compress(data, asbytes=True)
    out = page_body.body_values(memoryview(compressed), 6, len(data), streamed=True)
    assert out is not None
    out.more(first)
    return out


@pytest.mark.parametrize("first", [0, 3, 50, 10_000])
def test_value_starts_are_walked_through_any_lengths(first: int) -> None:
    """The starts of length-prefixed values: lengths all the same, changing part way,
    empty values; found whatever share of the page was decompressed first."""
    rnd = np.random.default_rng(1)
    for sizes in (
        [8] * 300,
        [8] * 100 + [0, 9, 3000] + [8] * 100,
        rnd.integers(0, 50, 400).tolist(),
        [0] * 50,
    ):
        blob = b"".join(len(b"a" * s).to_bytes(4, "little") + b"a" * s for s in sizes)
        expected = np.cumsum([0] + [4 + s for s in sizes[:-1]])
        for need in (1, len(sizes) // 2, len(sizes)):
            starts = page_pick._starts(_values(blob, first), need)
            assert starts is not None
            assert starts.tolist() == expected[:need].tolist()
        # a page that ends before the values its header counts
        assert page_pick._starts(_values(blob[:-1], first), len(sizes)) is None


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("nullable", [False, True])
def test_strings_of_one_length_are_read_exactly_as_far_as_the_rows_wanted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, nullable: bool
) -> None:
    """A zstd page of strings all of one length (no nulls) is decompressed as far as
    the last wanted one ends (and some 64 bytes), and the rows are a whole read's; one whose sizes
    sum as such a page's would (one shorter, one longer) is read by walking (or left
    to pyarrow past the values walked one by one), as are pages with nulls, and its
    rows are a whole read's too."""
    n = 20_000
    alike = ["é" * 20] * n  # 40 bytes each
    balanced = list(alike)
    balanced[9000], balanced[15000] = "é" * 19, "é" * 21
    asked: list[int] = []
    read = page_body._Stream.read

    def counted(stream: page_body._Stream, k: int) -> bytes:
        asked.append(k)
        return read(stream, k)

    monkeypatch.setattr(page_body._Stream, "read", counted)
    for name, values in (("alike", alike), ("balanced", balanced)):
        schema = pa.schema([pa.field("s", pa.string(), nullable=nullable)])
        table = pa.table({"s": pa.array(values, pa.string())}).cast(schema)
        path = tmp_path / f"{name}{version}{nullable}.parquet"
        pq.write_table(
            table,
            path,
            write_page_index=True,
            use_dictionary=False,
            compression="zstd",
            data_page_version=version,
            data_page_size=1 << 26,
        )
        for wanted in ([3], [4999], [0, 8999, 9001], [n - 1]):
            rows = np.array(wanted, np.int64)
            layout, _, units, blobs = planned_pages(path, ["s"], rows)
            (unit,) = units
            asked.clear()
            pick_pages(layout, unit, blobs)
            if name == "alike":
                assert len(unit.replaced) == 1
                # the levels' length and levels, the values, and some 64 bytes more
                levels = 4 + 8 if nullable and version == "1.0" else 0
                assert sum(asked) <= levels + 44 * (wanted[-1] + 1) + 80, (wanted, asked)
            got = pages.decode(layout, unit, blobs)
            assert same(got, table.take(rows))


@pytest.mark.parametrize("codec", ["zstd", "gzip", "brotli", "snappy"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_large_pages_are_read_as_far_as_the_rows_wanted(
    tmp_path: Path, codec: str, version: str
) -> None:
    """Pages of over 256 KiB of longs and of strings, rows wanted near their start,
    middle and end (decompressed as a stream only as far as needed by the codecs that
    stream, at once otherwise), read as a whole read has them."""
    n = 80_000
    rnd = np.random.default_rng(3)
    table = pa.table(
        {
            "l": pa.array(rnd.integers(0, 1 << 40, n)),
            # strings of one length, but for the last few of each page
            "s": pa.array(
                [
                    None if i % 7 == 0 else "é" * 4 if i % 40_000 < 39_990 else "x" * (i % 13)
                    for i in range(n)
                ]
            ),
        }
    )
    path = tmp_path / f"{codec}{version}.parquet"
    pq.write_table(
        table,
        path,
        write_page_index=True,
        compression=codec,
        use_dictionary=False,
        data_page_size=1 << 26,
        max_rows_per_page=40_000,
        data_page_version=version,
    )
    for wanted in ([0], [3, 40_001], [27_999, 28_000, 79_999], [39_999, 40_000]):
        rows = np.array(wanted, np.int64)
        layout, _, units, blobs = planned_pages(path, ["l", "s"], rows, aligned=False)
        for unit in units:
            pick_pages(layout, unit, blobs)
            assert unit.replaced
            got = pages.decode(layout, unit, blobs)
            assert same(got, table.select([unit.leaves[0].top]).take(rows))


def test_old_parquet_cpp_files_get_compressed_pages(tmp_path: Path) -> None:
    """Files of parquet-cpp before Arrow (whose version 2 pages pyarrow decompresses
    whatever their header says) get picked pages of version 1, compressed; others
    uncompressed pages of version 2."""
    n = 12_000
    table = pa.table({"l": pa.array(np.arange(n) * 3), "s": pa.array([f"v{i}" for i in range(n)])})
    path = tmp_path / "old.parquet"
    pq.write_table(
        table,
        path,
        write_page_index=True,
        compression="zstd",
        use_dictionary=False,
        max_rows_per_page=5000,
        data_page_size=1 << 24,
    )
    wanted = np.array([3, 5001, n - 1], np.int64)
    # (the layout is kept by path: the file of pyarrow first)
    for created, kind in ((None, 3), ("parquet-cpp version 1.5.1", 0)):
        layout, _, units, blobs = planned_pages(path, ["l", "s"], wanted, aligned=False)
        if created is not None:
            layout.footer[6] = Field(layout.footer[6].type, created)
            layout.created_by = created
        for unit in units:
            pick_pages(layout, unit, blobs)
            assert unit.replaced
            for page in unit.replaced.values():
                header, _ = decode_numbers(page, 0)
                assert header[1] == kind
            got = pages.decode(layout, unit, blobs)
            assert same(got, table.select([unit.leaves[0].top]).take(wanted))
