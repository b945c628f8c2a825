"""Reading a data file's rows at given positions (how a changelog reads the rows a new
deletion vector marks) returns exactly the rows a whole read has at those positions:
same Arrow types, same values (NaN, -0.0, extremes, long strings, nulls), deletes
applied. Random tables of every column type, random row-group sizes and versions; the
position reader decodes with polars for the types it reads exactly and falls back to
pyarrow for the others, so both paths are covered."""

from __future__ import annotations

from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from pyroaring import BitMap64

from budget import examples
from differential.tables import Case, arrow_table, cases, create, rows_by_id
from differential.test_scan_arrow import decimal_truncate_overflow
from neve.arrow.reader import DeleteCache, read_data_file
from neve.catalog import Catalog
from neve.errors import ValidationError
from neve.io.fileio import FileIO
from neve.spec.schema import ROW_POSITION, Schema

pytestmark = pytest.mark.property


@settings(
    max_examples=examples(40, 600),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=cases(max_rows=60), data=st.data())
def test_rows_at_positions_equal_a_whole_read(
    diff_catalog: Catalog, case: Case, data: st.DataObject
) -> None:
    note(case.describe())
    props = dict(case.properties)
    if case.version >= 2:
        props["write.delete.mode"] = "merge-on-read"
    case = Case(case.version, case.cols, case.spec_a, [], case.all_rows, [], props)
    table = create(diff_catalog, case)
    try:
        if case.rows_a:
            table.append(arrow_table(case.cols, case.rows_a))
    except ValidationError as exc:
        # only a value the partition transform cannot store may refuse the append
        assume(not decimal_truncate_overflow(exc))
        raise
    if case.version >= 2 and case.rows_a and data.draw(st.booleans(), label="delete"):
        cut = data.draw(st.integers(0, len(case.rows_a)), label="delete ids below")
        table.refresh().delete(f"id < {cut}")
    table = table.refresh()
    schema = table.schema()
    with_pos = Schema(*schema.fields, ROW_POSITION)
    for task in table.scan().plan_files():
        f = task.file
        common = dict(
            table_schema=schema,
            spec=table.metadata.spec_by_id(task.spec_id),
            delete_files=task.delete_files,
            cache=DeleteCache(),
        )
        whole = read_data_file(table.io, f, with_pos, **common)  # type: ignore[arg-type]
        picked = data.draw(
            st.lists(st.integers(0, f.record_count - 1), max_size=f.record_count),
            label=f"positions in a file of {f.record_count} rows",
        )
        positions = BitMap64(picked)
        got = read_data_file(table.io, f, schema, only_positions=positions, **common)  # type: ignore[arg-type]
        wanted = pa.array(sorted(positions), pa.int64())
        mask = pc.is_in(whole.column(ROW_POSITION.name), value_set=wanted)
        expected = whole.filter(mask).drop_columns([ROW_POSITION.name])
        assert got.schema == expected.schema
        assert got.num_rows == expected.num_rows
        assert rows_by_id(case.cols, got) == rows_by_id(case.cols, expected)
        assert got.column("id").to_pylist() == expected.column("id").to_pylist()  # file order


def test_edge_values_at_positions(diff_catalog: Catalog) -> None:
    """Every column type polars decodes, with edge values, in many row groups, some
    rows deleted: the rows at positions equal the whole read's, value for value."""
    import datetime as dt
    from decimal import Decimal

    n = 3000
    floats = [float("nan"), -0.0, 0.0, float("inf"), float("-inf"), 1.5e308, None]
    rows = {
        "id": pa.array(range(n), pa.int64()),
        "i": pa.array([[-(2**31), 2**31 - 1, 0, None][k % 4] for k in range(n)], pa.int32()),
        "l": pa.array([[-(2**63), 2**63 - 1, -1, None][k % 4] for k in range(n)], pa.int64()),
        "f": pa.array([floats[k % 7] for k in range(n)], pa.float32()),
        "d": pa.array([floats[(k + 3) % 7] for k in range(n)], pa.float64()),
        "b": pa.array([[True, False, None][k % 3] for k in range(n)], pa.bool_()),
        "s": pa.array([["", "x" * 5000, "ünï\u0000code", None][k % 4] for k in range(n)]),
        "bin": pa.array([[b"", b"\x00\xff" * 300, None][k % 3] for k in range(n)], pa.binary()),
        "dec": pa.array(
            [
                [Decimal("-" + "9" * 28 + ".9999999999"), Decimal("0E-10"), None][k % 3]
                for k in range(n)
            ],
            pa.decimal128(38, 10),
        ),
        "day": pa.array(
            [
                [dt.date(1, 1, 1), dt.date(1969, 12, 31), dt.date(9999, 12, 31), None][k % 4]
                for k in range(n)
            ],
            pa.date32(),
        ),
    }
    rows_table = pa.table(rows)
    table = diff_catalog.create_table(
        "db.positions_edge",
        rows_table.schema,
        properties={
            "write.parquet.row-group-size-bytes": "20000",
            "write.delete.mode": "merge-on-read",
            # the polars and pyarrow paths below read files without a page index (with
            # one, the page reader reads positions: tests/arrow/test_arrow_pages.py)
            "write.parquet.page-index.enabled": "false",
        },
        format_version=3,
    )
    table.append(rows_table)
    table.refresh().delete("id >= 1000 and id < 1100")
    table = table.refresh()
    schema = table.schema()
    (task,) = table.scan().plan_files()
    common = dict(
        table_schema=schema,
        spec=table.metadata.spec_by_id(task.spec_id),
        delete_files=task.delete_files,
        cache=DeleteCache(),
    )
    assert task.delete_files and task.file.split_offsets and len(task.file.split_offsets) > 3
    whole = read_data_file(table.io, task.file, Schema(*schema.fields, ROW_POSITION), **common)  # type: ignore[arg-type]
    # positions in every row group (polars gathers them from the whole file), and
    # positions in some row groups only (pyarrow reads just those)
    starts = [0]
    meta = pq.ParquetFile(urlsplit(task.file.file_path).path).metadata
    for rg in range(meta.num_row_groups - 1):
        starts.append(starts[-1] + meta.row_group(rg).num_rows)
    some = [0, 1, 2, 7, 999, 1000, 1050, 1100, 1777, 2998, 2999]
    assert not set(starts) <= set(some)
    for picked in (some, sorted({*some, *starts})):
        positions = BitMap64(picked)
        got = read_data_file(table.io, task.file, schema, only_positions=positions, **common)  # type: ignore[arg-type]
        wanted = pa.array(picked, pa.int64())
        expected = whole.filter(pc.is_in(whole.column(ROW_POSITION.name), value_set=wanted))
        expected = expected.drop_columns([ROW_POSITION.name])
        assert got.column("id").to_pylist() == [i for i in picked if not 1000 <= i < 1100]
        _same(got, expected)
        # a file system other than the local one (an object store's): polars reads bytes
        remote = read_data_file(_Remote(), task.file, schema, only_positions=positions, **common)  # type: ignore[arg-type]
        _same(remote, expected)


def _same(got: pa.Table, expected: pa.Table) -> None:
    assert got.schema == expected.schema
    for name in got.column_names:  # NaN never equals itself: compare the text
        assert repr(got.column(name).to_pylist()) == repr(expected.column(name).to_pylist()), name


class _Remote(FileIO):
    """Local files behind a file system that is not pyarrow's LocalFileSystem."""

    def filesystem(self, path: str) -> tuple[pafs.FileSystem, str]:
        fs, inner = super().filesystem(path)
        return pafs.SubTreeFileSystem("/", fs), inner.lstrip("/")
