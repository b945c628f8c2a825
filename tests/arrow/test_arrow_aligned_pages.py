"""Takes of one row a row group whose decode units are lined up by padding pages and
decoded as one (neve.arrow.page_align): the rows read equal pyarrow's whole read at
those positions for every physical type, required and optional leaves, structs,
dictionary and plain pages of version 1 and 2, every codec, pages of different row
counts per column; where a leaf cannot be padded (a required fixed-length byte
array) the units are decoded apart."""

from __future__ import annotations

import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arrow.whole_read import planned_pages, same
from budget import examples
from neve.arrow import page_align, pages
from neve.io.fileio import FileIO

pytestmark = pytest.mark.property


def _table(n: int, seed: int, null_share: float) -> pa.Table:
    rnd = np.random.default_rng(seed)
    null = rnd.random((6, n)) < null_share
    k = rnd.integers(0, 50, n)

    def opt(values: list[Any], i: int, kind: pa.DataType) -> pa.Array:
        return pa.array([None if null[i][j] else v for j, v in enumerate(values)], kind)

    words = [("w" * int(v % 7)) + str(v) for v in k.tolist()]
    inner = pa.StructArray.from_arrays(
        [opt(k.tolist(), 4, pa.int16()), pa.array(words, pa.string())],
        fields=[pa.field("x", pa.int16()), pa.field("y", pa.string(), nullable=False)],
        mask=pa.array(null[5]),
    )
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("i", pa.int32()),
            pa.field("d", pa.float64()),
            pa.field("s", pa.string()),
            pa.field("rs", pa.string(), nullable=False),
            pa.field("b", pa.bool_()),
            pa.field("rb", pa.bool_(), nullable=False),
            pa.field("st", inner.type),
        ]
    )
    return pa.Table.from_arrays(
        [
            pa.array(np.arange(n), pa.int64()),
            opt((k - 25).tolist(), 0, pa.int32()),
            opt((k / 3).tolist(), 1, pa.float64()),
            opt(words, 2, pa.string()),
            pa.array(words, pa.string()),
            opt((k % 2 == 0).tolist(), 3, pa.bool_()),
            pa.array((k % 3 == 0).tolist(), pa.bool_()),
            inner,
        ],
        schema=schema,
    )


WRITES = st.fixed_dictionaries(
    {
        "use_dictionary": st.booleans(),
        "compression": st.sampled_from(["zstd", "snappy", "gzip", "none"]),
        "data_page_size": st.sampled_from([512, 4096, 1 << 20]),
        "max_rows_per_page": st.sampled_from([50, 300, 5000]),
        "row_group_size": st.sampled_from([1000, 3000]),
        # pages are cut at batches: small ones give pages of other row counts per column
        "write_batch_size": st.just(16),
        "data_page_version": st.sampled_from(["1.0", "2.0"]),
    }
)


def _one_file_take(path: Path, table: pa.Table, positions: np.ndarray) -> None:
    schema = pq.read_schema(path)
    (got,) = pages.read_positions_of_files(
        FileIO(), [(str(path), schema, positions)], sparse_share=1.0
    )
    assert got is not None
    expected = pq.read_table(path).take(pa.array(positions, pa.int64()))
    assert same(got, expected)


@settings(
    max_examples=examples(20, 400),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    n=st.integers(1, 6000),
    seed=st.integers(0, 2**31),
    null_share=st.sampled_from([0.0, 0.3, 1.0]),
    options=WRITES,
    data=st.data(),
)
def test_rows_of_lined_up_units_equal_a_whole_read(
    tmp_path: Path, n: int, seed: int, null_share: float, options: dict[str, Any], data: Any
) -> None:
    table = _table(n, seed, null_share)
    path = tmp_path / f"{uuid.uuid4()}.parquet"
    pq.write_table(table, path, write_page_index=True, **options)
    groups = pq.ParquetFile(path).metadata.num_row_groups
    starts = np.arange(0, n, options["row_group_size"])[:groups]
    # one row of some row groups (lined up), sometimes two of one (decoded apart)
    chosen = data.draw(st.lists(st.integers(0, groups - 1), min_size=1, unique=True))
    wanted = set()
    for g in chosen:
        end = min(n, int(starts[g]) + options["row_group_size"])
        wanted.add(data.draw(st.integers(int(starts[g]), end - 1)))
    if data.draw(st.booleans()):
        wanted.add(data.draw(st.integers(0, n - 1)))
    _one_file_take(path, table, np.array(sorted(wanted), np.int64))


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("row", [0, 95, 1023, 4999])
def test_units_of_one_row_are_decoded_as_one(tmp_path: Path, version: str, row: int) -> None:
    """Columns of pages of 1,024, 2,048 and 96 rows, first and last rows of pages:
    one unit, whose rows are those of a whole read."""
    table = _table(5000, 1, 0.2)
    path = tmp_path / "pages.parquet"
    pq.write_table(
        table,
        path,
        write_page_index=True,
        data_page_version=version,
        data_page_size=8192,
        use_dictionary=False,
        compression="none",
    )
    wanted = np.array([row], np.int64)
    layout, _, units, blobs = planned_pages(path, table.column_names, wanted)
    assert len(units) > 1
    (one,) = page_align.lined_up(layout, units, blobs)
    assert len(one.leaves) == len(layout.leaves)
    assert same(pages.decode(layout, one, blobs), table.take(wanted))
    _one_file_take(path, table, wanted)


def test_a_required_fixed_length_leaf_is_not_padded(tmp_path: Path) -> None:
    table = pa.table(
        {
            "id": pa.array([str(i % 10) for i in range(3000)]),  # pages of more rows
            "dec": pa.array([Decimal(i) for i in range(3000)], pa.decimal128(30, 0)),
        }
    ).cast(
        pa.schema(
            [pa.field("id", pa.string()), pa.field("dec", pa.decimal128(30, 0), nullable=False)]
        )
    )
    path = tmp_path / "fixed.parquet"
    pq.write_table(
        table,
        path,
        write_page_index=True,
        data_page_size=4096,
        use_dictionary=False,
        write_batch_size=64,
    )
    wanted = np.array([1234], np.int64)
    layout, _, units, blobs = planned_pages(path, table.column_names, wanted)
    assert len(units) == 2
    assert page_align.lined_up(layout, units, blobs) == units
    assert all(u.rewritten for u in units)
    _one_file_take(path, table, wanted)
