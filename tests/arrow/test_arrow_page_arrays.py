"""Takes whose pages were all rewritten to hold only the wanted rows, made into Arrow
arrays straight from the picked values (neve.arrow.page_arrays) instead of a spliced
file pyarrow decodes: the rows equal pyarrow's whole read at those positions for ints,
longs, floats, doubles, strings and binary, required or with nulls, plain and
dictionary pages, version 1 and 2 pages, every codec pyarrow writes; the arrays are
made that way where every page is picked, and columns Arrow does not hold as stored
(dates, timestamps, decimals, small ints, nested fields) go through pyarrow's decoder
with the same rows."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arrow.whole_read import reads_as_whole, same, with_nulls
from budget import examples
from neve.arrow import pages
from neve.arrow.page_pick import PICK_FROM
from neve.arrow.pages import read_positions
from neve.io.fileio import FileIO

pytestmark = pytest.mark.property


def _table(n: int, seed: int, null_share: float, distinct: int) -> pa.Table:
    """Columns Arrow holds as Parquet stores them, with nulls (``distinct`` values a
    column: few keep the writer's dictionary, many make it fall back); strings of
    differing lengths, empty ones among them."""
    rnd = np.random.default_rng(seed)
    ks = rnd.integers(0, distinct, n).tolist()
    null = rnd.random((7, n)) < null_share
    return pa.table(
        {
            "id": pa.array(np.arange(n), pa.int64()),  # required
            "i": with_nulls([v - distinct // 2 for v in ks], null[0], pa.int32()),
            "l": with_nulls([v * (1 << 40) - 1 for v in ks], null[1], pa.int64()),
            "f": with_nulls(
                [v / 8 - 3.5 if v % 5 else float("nan") for v in ks], null[2], pa.float32()
            ),
            "d": with_nulls([-0.0 if v == 0 else v / 3 for v in ks], null[3], pa.float64()),
            "s": with_nulls(["é" * (v % 7) + str(v) * (v % 3) for v in ks], null[4], pa.string()),
            "b": with_nulls([bytes([v % 256]) * (v % 5) for v in ks], null[5], pa.binary()),
        }
    )


WRITES = st.fixed_dictionaries(
    {
        "write_page_index": st.just(True),
        "use_dictionary": st.booleans(),
        "compression": st.sampled_from(["zstd", "snappy", "gzip", "brotli", "lz4", "none"]),
        # pages of more than PICK_FROM rows: every page is picked
        "data_page_size": st.just(1 << 22),
        "max_rows_per_page": st.sampled_from([PICK_FROM, PICK_FROM + 900]),
        "row_group_size": st.sampled_from([PICK_FROM + 1000, 3 * PICK_FROM]),
        "data_page_version": st.sampled_from(["1.0", "2.0"]),
    }
)


@settings(
    max_examples=examples(15, 300),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    n=st.integers(PICK_FROM, 3 * PICK_FROM),
    seed=st.integers(0, 2**31),
    null_share=st.sampled_from([0.0, 0.1, 0.9, 1.0]),
    distinct=st.sampled_from([1, 3, 1000, 1 << 20]),
    options=WRITES,
    data=st.data(),
)
def test_rows_made_from_picked_values_equal_a_whole_read(
    tmp_path: Path,
    n: int,
    seed: int,
    null_share: float,
    distinct: int,
    options: dict[str, Any],
    data: Any,
) -> None:
    table = _table(n, seed, null_share, distinct)
    reads_as_whole(tmp_path, table, options, data, rows=12, times=2)


def _taken_as_written(
    folder: Path,
    table: pa.Table,
    positions: list[int],
    rows_per_page: int,
    dictionary: bool = False,
    **options: Any,
) -> bool:
    """Whether the rows at ``positions`` of ``table``, written in plain pages (or
    dictionary pages) of ``rows_per_page`` rows (zstd, the page index) and read by
    pages, equal the table's."""
    path = folder / "t.parquet"
    pq.write_table(
        table,
        path,
        write_page_index=True,
        use_dictionary=dictionary,
        compression="zstd",
        data_page_size=1 << 22,
        max_rows_per_page=rows_per_page,
        **options,
    )
    at = np.array(positions, dtype=np.int64)
    got = read_positions(FileIO(), str(path), table.schema, at, crossover=1.0)
    return same(got, table.take(pa.array(at)))


def _made(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """One entry per decode unit whose arrays were made from the picked values."""
    made: list[bool] = []
    real = pages.picked_table

    def picked(unit: Any) -> pa.Table:
        made.append(True)
        return real(unit)

    monkeypatch.setattr(pages, "picked_table", picked)
    return made


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("null_share", [0.0, 0.3])
def test_all_pages_picked_skips_the_spliced_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, null_share: float
) -> None:
    n = 4 * PICK_FROM
    table = _table(n, 7, null_share, 1 << 20)
    made = _made(monkeypatch)
    monkeypatch.setattr(pages, "decode_spliced", lambda *a: pytest.fail("a file was spliced"))
    positions = [3, 5000, 2 * PICK_FROM, n - 1]
    assert _taken_as_written(tmp_path, table, positions, 2 * PICK_FROM, data_page_version=version)
    assert made and all(made)


@pytest.mark.parametrize("dictionary", [False, True])
def test_small_last_pages_and_dictionary_pages_of_strings_are_picked_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dictionary: bool
) -> None:
    """A chunk's small last page (100 rows, after pages of 2 * PICK_FROM) is picked as
    its large pages are, and so are dictionary-encoded pages of strings: no file is
    spliced, every unit's arrays are made from the picked values."""
    n = 4 * PICK_FROM + 100
    table = _table(n, 7, 0.3, 300)
    made = _made(monkeypatch)
    monkeypatch.setattr(pages, "decode_spliced", lambda *a: pytest.fail("a file was spliced"))
    positions = [3, 2 * PICK_FROM, n - 100, n - 1]
    assert _taken_as_written(tmp_path, table, positions, 2 * PICK_FROM, dictionary)
    assert made and all(made)


def test_columns_arrow_does_not_hold_as_stored_go_through_pyarrow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 2 * PICK_FROM
    day = datetime.date(1960, 1, 1)
    table = pa.table(
        {
            "day": pa.array([day + datetime.timedelta(days=k) for k in range(n)], pa.date32()),
            "ts": pa.array([k * 1_000_003 - 2**40 for k in range(n)], pa.timestamp("us", tz="UTC")),
            "small": pa.array([k % 200 - 100 for k in range(n)], pa.int8()),
            "u": pa.array([2**63 + k for k in range(n)], pa.uint64()),
            "st": pa.StructArray.from_arrays([pa.array(range(n), pa.int64())], names=["x"]),
        }
    )
    made = _made(monkeypatch)
    spliced: list[int] = []
    real = pages.decode_spliced
    monkeypatch.setattr(pages, "decode_spliced", lambda *a: spliced.append(1) or real(*a))
    assert _taken_as_written(tmp_path, table, [0, 4100, n - 1], PICK_FROM + 10)
    assert not any(made) and spliced
