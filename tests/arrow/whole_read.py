"""What the tests of the page reader's page rewrites share: a random table written with
random writer options, random rows and columns read by pages, compared with pyarrow's
read of the whole file; and a file's pages planned and read for some rows, as a take
plans and reads them, for tests of the steps between reading and decoding."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

from neve.arrow import pages
from neve.arrow.page_file import PageFile, open_page_file
from neve.arrow.pages import DecodeUnit, read_positions
from neve.arrow.parquet_layout import ParquetLayout
from neve.io.fileio import FileIO


def planned_pages(
    path: Path,
    columns: list[str],
    wanted: np.ndarray,
    crossover: float = 1.0,
    *,
    aligned: bool = True,
    read_before: bool = False,
) -> tuple[ParquetLayout, PageFile, list[DecodeUnit], dict[int, memoryview]]:
    """``columns`` of the Parquet file at ``path`` planned for the rows ``wanted`` as the
    page reader plans them (decode units and their page groups, aligned unless
    ``aligned`` is False; ``read_before``: every row group's pages found, as from a
    second take), and their pages read: the layout, the reader, the units and the page
    bytes by offset."""
    layout, reader = open_page_file(FileIO(), str(path))
    if read_before:
        layout.read_before = True
    units = pages._units(layout, columns)
    pages._plan(layout, reader, units, wanted, crossover)
    if aligned:
        units = pages._aligned(units)
    blobs = reader.read_ranges([r for u in units for g in u.groups for r in g.all_ranges()])
    return layout, reader, units, blobs


def with_nulls(values: list[Any], null: np.ndarray, kind: pa.DataType) -> pa.Array:
    """``values`` as an array of ``kind``, null where ``null`` says."""
    return pa.array([None if null[i] else v for i, v in enumerate(values)], kind)


def same(a: pa.Table, b: pa.Table) -> bool:
    """Equal schemas and rows, NaN and -0.0 compared by their text (to_pylist's NaN is
    not equal to itself)."""
    return a.schema == b.schema and repr(a.to_pylist()) == repr(b.to_pylist())


def reads_as_whole(
    folder: Path, table: pa.Table, options: dict[str, Any], data: Any, rows: int, times: int = 1
) -> None:
    """Write ``table`` with ``options``; draw up to ``rows`` positions, some columns and
    a crossover; read them by pages ``times`` times (later reads find what the first
    kept): each read equals the whole file's rows at those positions."""
    path = folder / f"{uuid.uuid4()}.parquet"  # a new file, as data files are
    pq.write_table(table, path, **options)
    whole = pq.read_table(path)
    n = table.num_rows
    wanted = data.draw(st.lists(st.integers(0, n - 1), max_size=rows, unique=True), label="rows")
    positions = np.array(sorted(wanted), dtype=np.int64)
    columns = data.draw(
        st.lists(st.sampled_from(whole.column_names), min_size=1, unique=True), label="columns"
    )
    schema = pa.schema([whole.schema.field(c) for c in columns])
    # pages read by pages also where most of a chunk's are wanted (as the default does
    # where few are)
    crossover = data.draw(st.sampled_from([pages.CROSSOVER, 1.0]), label="crossover")
    expected = whole.select(columns).take(pa.array(positions, pa.int64()))
    for _ in range(times):
        got = read_positions(FileIO(), str(path), schema, positions, crossover=crossover)
        assert same(got, expected), options
    path.unlink()
