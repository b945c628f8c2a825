"""Takes from large pages of fixed-width values (parquet-java's layout: pages of up to
20,000 rows, dictionaries), rewritten to hold only the rows wanted
(neve.arrow.page_pick): the rows read equal pyarrow's whole read at those positions
for ints, longs, floats, doubles, dates, timestamps and decimals stored as integers,
required or with nulls (in a struct too: two definition levels), dictionary and plain
pages (and writers falling back from the dictionary within a chunk), version 1 and 2
pages, every codec pyarrow writes."""

from __future__ import annotations

import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arrow.whole_read import planned_pages, reads_as_whole, same, with_nulls
from budget import examples
from neve.arrow import hybrid, pages
from neve.arrow.page_pick import PICK_FROM, pick_pages
from neve.arrow.pages import read_positions
from neve.arrow.parquet_layout import parse_layout
from neve.arrow.thrift import decode_numbers, decode_struct, write_varint
from neve.io.fileio import FileIO

pytestmark = pytest.mark.property


def _table(n: int, seed: int, null_share: float, distinct: int) -> pa.Table:
    """Fixed-width columns of every physical type, with nulls (``distinct`` values a
    column: few keep the writer's dictionary, many make it fall back)."""
    rnd = np.random.default_rng(seed)
    k = rnd.integers(0, distinct, n)
    ks = k.tolist()
    null = rnd.random((8, n)) < null_share
    day = datetime.date(2020, 1, 1)
    stamp = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    inner = pa.StructArray.from_arrays(
        [with_nulls([v * 3 - 7 for v in ks], null[6], pa.int64())],
        names=["x"],
        mask=pa.array(null[7]),
    )
    return pa.table(
        {
            "id": pa.array(np.arange(n), pa.int64()),  # required
            "i": with_nulls([v - distinct // 2 for v in ks], null[0], pa.int32()),
            "l": with_nulls([v * (1 << 40) - 1 for v in ks], null[1], pa.int64()),
            "f": with_nulls(
                [v / 8 - 3.5 if v % 5 else float("nan") for v in ks], null[2], pa.float32()
            ),
            "d": with_nulls([-0.0 if v == 0 else v / 3 for v in ks], null[3], pa.float64()),
            "day": with_nulls([day + datetime.timedelta(days=v) for v in ks], null[4], pa.date32()),
            "ts": with_nulls(
                [stamp + datetime.timedelta(microseconds=v * 997) for v in ks],
                null[5],
                pa.timestamp("us", tz="UTC"),
            ),
            "dec": with_nulls([Decimal(v - 500) / 100 for v in ks], null[0], pa.decimal128(9, 2)),
            "st": inner,
        }
    )


WRITES = st.fixed_dictionaries(
    {
        "write_page_index": st.booleans(),
        "use_dictionary": st.booleans(),
        "dictionary_pagesize_limit": st.sampled_from([256, 8192, 1 << 20]),
        "compression": st.sampled_from(["zstd", "snappy", "gzip", "brotli", "lz4", "none"]),
        # pages of about PICK_FROM rows, a few per chunk (small pages never are picked)
        "data_page_size": st.just(1 << 20),
        "max_rows_per_page": st.sampled_from([PICK_FROM - 1, PICK_FROM, PICK_FROM + 900]),
        "row_group_size": st.sampled_from([PICK_FROM + 1000, 3 * PICK_FROM]),
        "data_page_version": st.sampled_from(["1.0", "1.0", "2.0"]),
        "store_decimal_as_integer": st.booleans(),
    }
)


@settings(
    max_examples=examples(15, 400),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    n=st.integers(PICK_FROM, 4 * PICK_FROM),
    seed=st.integers(0, 2**31),
    null_share=st.sampled_from([0.0, 0.1, 0.9, 1.0]),
    distinct=st.sampled_from([1, 3, 1000, 1 << 20]),
    options=WRITES,
    data=st.data(),
)
def test_rows_of_picked_pages_equal_a_whole_read(
    tmp_path: Path,
    n: int,
    seed: int,
    null_share: float,
    distinct: int,
    options: dict[str, Any],
    data: Any,
) -> None:
    # the second read with the dictionaries kept
    table = _table(n, seed, null_share, distinct)
    reads_as_whole(tmp_path, table, options, data, rows=12, times=2)


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("codec", ["zstd", "snappy", "none"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_large_pages_are_rewritten_to_the_rows_wanted(
    tmp_path: Path, version: str, codec: str, dictionary: bool
) -> None:
    """A few rows from large dictionary and plain pages: every page read is rewritten
    to hold only the rows wanted from it, the dictionary pages are left out, and the
    rows are those of a whole read (without dictionaries, the pages of several row
    groups are planned as one group)."""
    n = 40_000
    table = _table(n, 3, 0.2, 1000).select(["id", "l", "d", "st"])
    wanted = np.array([5, 3000, 9_999, 12_345, 12_346, 39_999], np.int64)
    path = tmp_path / f"v{version}{codec}.parquet"
    pq.write_table(
        table,
        path,
        write_page_index=True,
        data_page_version=version,
        max_rows_per_page=5000,
        data_page_size=1 << 22,
        row_group_size=20_000,
        compression=codec,
        use_dictionary=dictionary,
    )
    layout, reader, units, blobs = planned_pages(path, table.column_names, wanted, read_before=True)
    pages._settle_dictionaries(units, blobs, reader)
    held = any(d is not None for u in units for g in u.groups for d in g.dictionaries)
    assert held is dictionary
    for unit in units:
        read = sum(len(r) for g in unit.groups for r in g.ranges)
        pick_pages(layout, unit, blobs)
        assert len(unit.replaced) == read  # every page read, in every leaf
        assert sum(g.rows for g in unit.groups) == len(wanted)
        assert all(d is None for g in unit.groups for d in g.dictionaries)
        got = pages.decode(layout, unit, blobs)
        names = [leaf.top for leaf in unit.leaves]
        assert same(got, table.select(names).take(wanted))


def test_pages_it_cannot_read_are_left_as_they_are(tmp_path: Path) -> None:
    """A page of byte arrays in an encoding not read here (DELTA_BYTE_ARRAY) decoded
    with longs (the same page bounds) is not rewritten, nor are the longs' pages; small
    pages are not rewritten either."""
    n = 3 * PICK_FROM
    table = pa.table({"l": pa.array(np.arange(n)), "b": pa.array([b"x"] * n)})
    for rows, picked in ((PICK_FROM, True), (PICK_FROM - 1, False)):
        path = tmp_path / f"p{rows}.parquet"
        pq.write_table(
            table,
            path,
            write_page_index=True,
            max_rows_per_page=rows,
            use_dictionary=["l"],
            column_encoding={"b": "DELTA_BYTE_ARRAY"},
        )
        wanted = np.array([17, PICK_FROM + 5], np.int64)
        layout, _, units, blobs = planned_pages(path, ["l", "b"], wanted, aligned=False)
        longs, strings = units
        pick_pages(layout, longs, blobs)
        pick_pages(layout, strings, blobs)
        assert bool(longs.replaced) is picked and not strings.replaced
        joined = pages._joined([longs, strings]) if picked else None
        if joined is not None:
            before = dict(joined.replaced)
            pick_pages(layout, joined, blobs)
            assert joined.replaced == before
        got = read_positions(FileIO(), str(path), table.schema, wanted)
        assert got.to_pylist() == table.take(wanted).to_pylist()


def _uvarint(n: int) -> bytes:
    out = bytearray()
    write_varint(out, n)
    return bytes(out)


def test_the_hybrid_runs_read_as_written() -> None:
    """Parquet's RLE/bit-packed hybrid: values of every width read back at any
    positions, and in full, from runs of both kinds."""
    rnd = np.random.default_rng(5)
    for width in (0, 1, 3, 8, 13, 20, 32):
        runs = []
        values: list[int] = []
        for k in range(12):
            if k % 2:
                v = int(rnd.integers(0, 1 << width)) if width else 0
                n = int(rnd.integers(1, 300))
                runs.append(_uvarint(n << 1) + v.to_bytes((width + 7) // 8, "little"))
                values += [v] * n
            else:
                groups = int(rnd.integers(1, 40))
                vs = rnd.integers(0, 1 << width, groups * 8) if width else np.zeros(groups * 8)
                bits = (vs.astype(np.int64)[:, None] >> np.arange(width)) & 1
                packed = np.packbits(bits.astype(np.uint8).ravel(), bitorder="little")
                runs.append(_uvarint((groups << 1) | 1) + packed.tobytes())
                values += vs.astype(np.int64).tolist()
        data = b"".join(runs)
        count = len(values) - 5
        found = hybrid.runs(data, width, count)
        assert found is not None
        assert found.all(count).tolist() == values[:count]
        at = np.sort(rnd.choice(count, 50, replace=False)).astype(np.int64)
        assert found.at(at).tolist() == [values[i] for i in at.tolist()]
        assert hybrid.few_at(data, width, at.tolist()) == [values[i] for i in at.tolist()]
        assert hybrid.runs(data[: len(data) // 2], width, len(values)) is None
        assert hybrid.few_at(data[: len(data) // 2], width, [len(values) - 1]) is None


def _packed(values: np.ndarray, width: int) -> bytes:
    """A bit-packed run of ``values`` (a multiple of 8 of them)."""
    bits = (values.astype(np.int64)[:, None] >> np.arange(width)) & 1
    run = np.packbits(bits.astype(np.uint8).ravel(), bitorder="little").tobytes()
    return _uvarint((len(values) // 8) << 1 | 1) + run


@pytest.mark.parametrize("width", [0, 1, 7, 8, 13, 18, 31, 32])
def test_bit_packed_runs_of_one_length_are_found_by_their_stride(width: int) -> None:
    """Dictionary indexes as writers cut them (bit-packed runs of 63 groups, 504 values,
    a header of a byte) read at any positions, by the runs' arrays and one by one, as
    written: runs of one length throughout, one of another length last, one of another
    length or an RLE run part way (where the runs are walked), and data that ends
    inside a run."""
    rnd = np.random.default_rng(width)
    top = 1 << width if width else 1
    full = [rnd.integers(0, top, 504) for _ in range(9)]
    tail = rnd.integers(0, top, 80)
    rle = _uvarint(40 << 1) + (top - 1).to_bytes((width + 7) // 8, "little")
    packed = [_packed(p, width) for p in full]
    cases = [
        (b"".join(packed), full),
        (b"".join(packed) + _packed(tail, width), [*full, tail]),
        (
            b"".join(packed[:4]) + _packed(tail, width) + b"".join(packed[4:]),
            [*full[:4], tail, *full[4:]],
        ),
        (
            b"".join(packed[:4]) + rle + b"".join(packed[4:]),
            [*full[:4], np.full(40, top - 1), *full[4:]],
        ),
    ]
    for blob, parts in cases:
        expected = np.concatenate(parts).tolist()
        for count in (1, 505, 2100, len(expected)):
            at = np.sort(rnd.choice(count, min(count, 30), replace=False)).astype(np.int64)
            want = [expected[i] for i in at.tolist()]
            found = hybrid.runs(blob, width, count)
            assert found is not None
            assert found.at(at).tolist() == want
            assert found.all(count).tolist() == expected[:count]
            assert hybrid.few_at(blob, width, at.tolist()) == want
            # as pages hand them: a view past the bit width's byte
            view = memoryview(bytes([width]) + blob)[1:]
            assert hybrid.few_at(view, width, at.tolist()) == want
            assert hybrid.runs(view, width, count) is not None
        cut = blob[: len(blob) - 3]
        assert hybrid.runs(cut, width, len(expected)) is None
        assert hybrid.few_at(cut, width, [len(expected) - 1]) is None


def test_definition_levels_count_the_optional_fields() -> None:
    schema = pa.schema(
        [
            pa.field("r", pa.int64(), nullable=False),
            pa.field("o", pa.int64()),
            pa.field("s", pa.struct([pa.field("x", pa.int32()), pa.field("y", pa.int32(), False)])),
        ]
    )
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist([{"r": 1, "o": None, "s": {"x": 1, "y": 2}}], schema), sink)
    data = sink.getvalue().to_pybytes()
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    levels = [meta.schema.column(i).max_definition_level for i in range(meta.num_columns)]
    parsed = parse_layout("x", len(data), data, _Reader(data))
    assert [leaf.max_definition_level for leaf in parsed.leaves] == levels == [0, 1, 2, 1]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read_range(self, offset: int, length: int) -> bytes:
        return self.data[offset : offset + length]


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_page_headers_read_as_thrifts_decoder_reads_them(tmp_path: Path, version: str) -> None:
    """The page reader's own reading of page headers (numbers only) agrees with the
    generic Thrift decoder on every page of a file, statistics in the headers and all."""
    table = _table(3 * PICK_FROM, 4, 0.3, 50)
    path = tmp_path / "headers.parquet"
    pq.write_table(table, path, data_page_version=version, max_rows_per_page=1000)
    data = path.read_bytes()
    meta = pq.ParquetFile(path).metadata
    seen = 0
    for c in range(meta.num_columns):
        chunk = meta.row_group(0).column(c)
        pos = chunk.dictionary_page_offset or chunk.data_page_offset
        end = pos + chunk.total_compressed_size
        while pos < end:
            header, used = decode_struct(data, pos)
            mine, mine_used = decode_numbers(data, pos)
            assert mine_used == used
            assert mine == _numbers_of(header)
            pos = used + header[3].value
            seen += 1
    assert seen > 2 * meta.num_columns


def _numbers_of(s: dict[int, Any]) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for k, f in s.items():
        if isinstance(f.value, dict):
            out[k] = _numbers_of(f.value)
        elif isinstance(f.value, bool | int):
            out[k] = f.value
    return out
