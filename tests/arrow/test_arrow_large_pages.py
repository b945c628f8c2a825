"""Takes from large pages (parquet-java's layout: 1 MiB pages of up to 20,000 rows).

Pages cut short at the last row a take wants (neve.arrow.page_trim): the rows read
equal pyarrow's whole read at those positions for strings, binary, fixed-length binary
and decimals, with nulls, dictionary and plain pages (and writers falling back from the
dictionary within a chunk), version 1 pages (cut) and version 2 pages (left whole),
compressed or not; pages are cut where they can be. Large pages are read page by page
however many of a chunk's are wanted."""

from __future__ import annotations

from decimal import Decimal
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
from neve.arrow import pages
from neve.arrow.page_trim import TRIM_FROM, trim_pages
from neve.arrow.pages import ReadStats, read_positions
from neve.io.fileio import FileIO

pytestmark = pytest.mark.property


def _table(n: int, seed: int, null_share: float) -> pa.Table:
    """Costly-to-decode columns (and a long), edge values and nulls included."""
    rnd = np.random.default_rng(seed)
    k = rnd.integers(0, 1 << 30, n)
    null = rnd.random((4, n)) < null_share
    strings = [
        None if null[0, i] else ["", "é" * (v % 7), "x" * (v % 300), "\U0010ffff"][v % 4] + str(i)
        for i, v in enumerate(k.tolist())
    ]
    binary = [None if null[1, i] else bytes([v % 256]) * (v % 40) for i, v in enumerate(k.tolist())]
    fixed = [None if null[2, i] else int(v).to_bytes(4, "big") for i, v in enumerate(k.tolist())]
    decimals = [
        None if null[3, i] else Decimal(int(v) % 50 - (1 << 29)) / 1000
        for i, v in enumerate(k.tolist())
    ]
    return pa.table(
        {
            "id": pa.array(np.arange(n), pa.int64()),
            "s": pa.array(strings, pa.string()),
            "bi": pa.array(binary, pa.binary()),
            "fx": pa.array(fixed, pa.binary(4)),
            "dec": pa.array(decimals, pa.decimal128(20, 3)),
        }
    )


WRITES = st.fixed_dictionaries(
    {
        "write_page_index": st.booleans(),
        "use_dictionary": st.booleans(),
        "dictionary_pagesize_limit": st.sampled_from([256, 8192, 1 << 20]),
        "compression": st.sampled_from(["zstd", "snappy", "none"]),
        # pages of about TRIM_FROM rows, a few per chunk (small pages never are cut)
        "data_page_size": st.just(1 << 20),
        "max_rows_per_page": st.sampled_from([TRIM_FROM - 1, TRIM_FROM, 1100]),
        "row_group_size": st.sampled_from([2500, 10_000]),
        "data_page_version": st.sampled_from(["1.0", "1.0", "2.0"]),
    }
)


@settings(
    max_examples=examples(12, 300),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    n=st.integers(TRIM_FROM, 6000),
    seed=st.integers(0, 2**31),
    null_share=st.sampled_from([0.0, 0.1, 0.9]),
    options=WRITES,
    data=st.data(),
)
def test_rows_of_cut_pages_equal_a_whole_read(
    tmp_path: Path, n: int, seed: int, null_share: float, options: dict[str, Any], data: Any
) -> None:
    reads_as_whole(tmp_path, _table(n, seed, null_share), options, data, rows=8)


def test_large_version_1_pages_are_cut_at_the_last_row_wanted(tmp_path: Path) -> None:
    """One row each from large string pages: their pages are cut (fewer rows decoded,
    the same rows read); version 2 pages are left whole."""
    n = 20_000
    table = _table(n, 3, 0.2)
    wanted = np.array([5, 3000, 9_999, 12_345], np.int64)
    for version, cut in (("1.0", True), ("2.0", False)):
        path = tmp_path / f"v{version}.parquet"
        pq.write_table(
            table,
            path,
            write_page_index=True,
            data_page_version=version,
            max_rows_per_page=5000,
            data_page_size=1 << 22,
            compression="zstd",
        )
        layout, _, units, blobs = planned_pages(path, ["s", "dec"], wanted)
        for unit in units:
            before = sum(g.rows for g in unit.groups)
            trim_pages(layout, unit, blobs)
            after = sum(g.rows for g in unit.groups)
            assert (after < before) is cut and bool(unit.heads) is cut
            # each page touched keeps its rows up to the last wanted from it
            last = {int(w) // 5000: int(w) % 5000 for w in wanted}
            assert after == (sum(k + 1 for k in last.values()) if cut else 5000 * len(last))
            got = pages.decode(layout, unit, blobs)
            names = [leaf.top for leaf in unit.leaves]
            assert got.to_pylist() == table.select(names).take(wanted).to_pylist()


def test_large_pages_are_read_by_pages_however_many_are_wanted(tmp_path: Path) -> None:
    """Three of four pages of every chunk wanted: small pages are read as whole chunks
    (past the crossover), large pages one by one (the fourth left unread)."""
    for n, by_pages in ((80_000, True), (8_000, False)):  # pages of 160,000 and 16,000 bytes
        rows_per_page = n // 4
        rnd = np.random.default_rng(4)
        table = pa.table({"a": rnd.integers(0, 1 << 60, n), "d": rnd.random(n)})
        wanted = np.array([10, 20_500, 30_000, 79_999], np.int64) * n // 80_000  # pages 0, 1, 3
        path = tmp_path / f"p{rows_per_page}.parquet"
        pq.write_table(
            table,
            path,
            write_page_index=True,
            use_dictionary=False,
            max_rows_per_page=rows_per_page,
            data_page_size=1 << 20,
            compression="none",
        )
        chunks = pq.ParquetFile(path).metadata.row_group(0)
        whole = sum(chunks.column(c).total_compressed_size for c in range(2))
        read_positions(FileIO(), str(path), table.schema, wanted[:1])  # footer and index
        stats = ReadStats()
        got = read_positions(FileIO(), str(path), table.schema, wanted, stats=stats)
        assert got.to_pylist() == table.take(wanted).to_pylist()
        assert (stats.bytes < 0.8 * whole) is by_pages, (rows_per_page, stats.bytes, whole)


def test_large_takes_decode_units_in_halves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A take reading a large unit from several row groups decodes it in two halves on
    threads: the rows are the same, in position order (the threshold lowered to this
    file's few MiB)."""
    monkeypatch.setattr(pages, "_HALVES_FROM", 1 << 20)
    n = 60_000
    table = _table(n, 8, 0.1)
    path = tmp_path / "halves.parquet"
    pq.write_table(
        table,
        path,
        write_page_index=True,
        row_group_size=20_000,
        max_rows_per_page=5_000,
        data_page_size=1 << 22,
        compression="none",
    )
    wanted = np.array([7, 4_999, 25_000, 39_999, 40_001, 59_999], np.int64)
    _, _, units, blobs = planned_pages(path, ["s", "bi"], wanted, aligned=False)
    halves = pages._halves(units[0], blobs)
    assert len(halves) == 2 and [len(h.groups) for h in halves] in ([1, 2], [2, 1])
    whole = pq.read_table(path)
    got = read_positions(FileIO(), str(path), whole.schema, wanted)
    assert same(got, whole.take(pa.array(wanted, pa.int64())))


def test_zstd_dictionary_pages_are_kept_and_read_again(tmp_path: Path) -> None:
    """A zstd chunk's dictionary page is kept from its second take on (compressed
    again at the fastest level) and spliced in place of the original: the rows are the
    same each time; a snappy chunk's is not kept."""
    from neve.arrow.page_dictionaries import dictionary_cache

    n = 30_000
    table = _table(n, 9, 0.2)
    wanted = np.array([3, 777, 12_000, 29_999], np.int64)
    expected = table.take(wanted).to_pylist()
    for codec, kept in (("zstd", True), ("snappy", False)):
        path = tmp_path / f"{codec}.parquet"
        pq.write_table(
            table,
            path,
            write_page_index=True,
            compression=codec,
            max_rows_per_page=2_000,
            dictionary_pagesize_limit=1 << 20,
            row_group_size=10_000,
        )
        dictionary_cache.clear()
        for k in range(3):  # the second take keeps the pages, the third reads them
            got = read_positions(FileIO(), str(path), table.schema, wanted)
            assert got.to_pylist() == expected
            assert (dictionary_cache.size > 0) is (kept and k > 0)
        chunks = pq.ParquetFile(path).metadata.row_group(0)
        offsets = [chunks.column(c).dictionary_page_offset for c in range(chunks.num_columns)]
        found = [dictionary_cache.get((str(path), path.stat().st_size, o)) for o in offsets if o]
        assert any(f is not None for f in found) is kept
