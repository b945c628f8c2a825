"""Page skipping loses no row (issue 26): the random tables and filters of the
differential scan tests (every type, NaN, -0.0, nulls, extremes, long strings), written
with a page index and pages of a few rows, rows sorted by a column or not; a filtered
scan, which reads only the pages the column index admits, returns exactly the rows the
row-by-row oracle matches. And on a sorted column a selective filter does skip pages."""

from __future__ import annotations

import math
import uuid
from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from budget import examples
from differential.model import Column, filters, matches, to_neve
from differential.tables import Case, cases, local_path
from differential.test_scan_arrow import decimal_truncate_overflow, write
from neve.arrow import page_filter
from neve.arrow.page_filter import rows_to_read
from neve.arrow.parquet_layout import layout_cache
from neve.catalog import Catalog
from neve.errors import ValidationError
from neve.expressions import parse
from neve.expressions.binding import bind
from neve.expressions.visitors import rewrite_not
from neve.io.fileio import FileIO

pytestmark = pytest.mark.property

FILTERS_PER_TABLE = 6


def _sort_key(c: Column) -> Any:
    def key(row: dict[str, Any]) -> Any:
        v = row[c.name]
        if v is None:
            return (2, 0)
        if isinstance(v, float) and math.isnan(v):
            return (1, 0)
        if isinstance(v, uuid.UUID):
            return (0, v.bytes)
        return (0, v)

    return key


@settings(
    max_examples=examples(12, 1000),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=cases(max_rows=40), data=st.data())
def test_skipping_scans_match_the_oracle(
    diff_catalog: Catalog, case: Case, data: st.DataObject
) -> None:
    props = dict(case.properties)
    props["write.parquet.page-index.enabled"] = "true"
    props["write.parquet.page-row-limit"] = str(data.draw(st.sampled_from([1, 2, 3, 7])))
    rows_a, rows_b = case.rows_a, case.rows_b
    if case.cols and data.draw(st.booleans(), label="sorted"):
        c = data.draw(st.sampled_from(case.cols), label="sorted by")
        rows_a = sorted(rows_a, key=_sort_key(c))
        rows_b = sorted(rows_b, key=_sort_key(c))
    case = Case(case.version, case.cols, case.spec_a, case.spec_b, rows_a, rows_b, props)
    note(case.describe())
    try:
        table = write(diff_catalog, case)
    except ValidationError as exc:
        assume(not decimal_truncate_overflow(exc))
        raise
    chosen = data.draw(
        st.lists(
            filters(case.cols, case.all_rows),
            min_size=FILTERS_PER_TABLE,
            max_size=FILTERS_PER_TABLE,
        ),
        label="filters",
    )
    for f in chosen:
        expected = matches(f, case.all_rows)
        # these row groups are far smaller than a scan skips pages in: lower the bound so
        # that every filtered scan here goes page by page
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(page_filter, "LOCAL_SKIP_MIN_BYTES", 0)
            scan = table.scan(filter=to_neve(f), columns=["id"])
            got = scan.to_arrow().column("id").to_pylist()
        twice = [i for i, n in Counter(got).items() if n > 1]
        assert not twice, f"rows read more than once: {twice}"
        assert set(got) == expected, (
            f"{f}: missing {sorted(expected - set(got))}, extra {sorted(set(got) - expected)}"
        )


def test_a_selective_filter_on_a_sorted_column_skips_pages(diff_catalog: Catalog) -> None:
    n = 50_000
    table = diff_catalog.create_table(
        f"db.skip{uuid.uuid4().hex[:8]}",
        pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string())]),
        properties={"write.parquet.layout": "random-access"},
        format_version=3,
    )
    ids = np.arange(n)
    table.append(pa.table({"id": ids, "x": ids / 3, "s": [f"v{i:05d}" * 20 for i in ids]}))
    table = table.refresh()
    (task,) = table.scan().plan_files()
    path = task.file.file_path
    metadata = pq.ParquetFile(local_path(path)).metadata
    # bound to top-level columns, whose paths in the file are their names
    expr = rewrite_not(bind(table.schema(), parse("id >= 2000 and id < 2005"), True))
    file_schema = pq.read_schema(local_path(path))
    local = rows_to_read(FileIO(), path, metadata, 0, expr, file_schema)
    assert local is not None
    assert set(range(2000, 2005)) <= set(local.tolist())
    assert len(local) <= 2048  # a page or two of 1,024 longs, not the row group
    got = table.scan(filter="id >= 2000 and id < 2005").to_arrow()
    assert got.column("id").to_pylist() == list(range(2000, 2005))


def test_a_scan_reads_small_columns_whole_without_the_page_index(
    diff_catalog: Catalog,
) -> None:
    """Where the columns a scan reads are small in a row group, decoding the footer and
    page index in Python costs more than reading them whole: the scan does not open the
    page index (its layout is never cached), yet returns exactly the matching rows; with
    more bytes than the bound it does."""
    n = 50_000
    table = diff_catalog.create_table(
        f"db.small{uuid.uuid4().hex[:8]}",
        pa.schema([("id", pa.int64()), ("s", pa.string())]),
        properties={"write.parquet.layout": "random-access"},
        format_version=3,
    )
    ids = np.arange(n)
    table.append(pa.table({"id": ids, "s": [f"v{i:05d}" * 20 for i in ids]}))
    table = table.refresh()
    (task,) = table.scan().plan_files()
    path, size = task.file.file_path, task.file.file_size_in_bytes
    metadata = pq.ParquetFile(local_path(path)).metadata
    id_bytes = metadata.row_group(0).column(0).total_compressed_size
    assert id_bytes < page_filter.LOCAL_SKIP_MIN_BYTES < metadata.row_group(0).total_byte_size
    layout_cache.clear()
    got = table.scan(filter="id >= 2000 and id < 2005", columns=["id"]).to_arrow()
    assert got.column("id").to_pylist() == list(range(2000, 2005))
    assert layout_cache.get(path, size) is None
    got = table.scan(filter="id >= 2000 and id < 2005").to_arrow()  # the strings too
    assert got.column("id").to_pylist() == list(range(2000, 2005))
    assert layout_cache.get(path, size) is not None
