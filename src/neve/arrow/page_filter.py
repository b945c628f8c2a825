"""Page skipping: which rows of a row group may match a filter, judged page by page
from Parquet's column index (each page's min, max and null count), with Iceberg's
metrics rules, as :mod:`neve.arrow.row_groups` judges whole row groups.

Each predicate is judged on the pages of its own column, which start at different rows
than other columns' pages, so the answer is a mask over the row group's rows: AND and
OR combine masks. A page is ruled out only when no row of it can match: bounds are
used where their meaning is certain (the file records its column order; NaN never in
a bound; types as for row groups), NaN counts are unknown unless the writer recorded
them, and truncated string bounds stay bounds. Rows not ruled out are read and the
filter is applied to them exactly, as to any row.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap64

from neve.arrow.pages import open_page_file, read_positions
from neve.arrow.parquet_layout import ParquetLayout, RangeReader, UnsupportedLayout
from neve.arrow.row_groups import leaf_columns, leaf_types, statistic_value
from neve.expressions.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    And,
    BooleanExpression,
    BoundPredicate,
    Or,
)
from neve.expressions.metric_arrays import MetricArrays
from neve.expressions.metrics_evaluator import inclusive_metrics_test
from neve.expressions.metrics_vectorized import compile_inclusive, eval_inclusive
from neve.io.fileio import FileIO
from neve.spec.types import PrimitiveType
from neve.spec.values import to_bytes

__all__ = [
    "LOCAL_SKIP_MIN_BYTES",
    "SKIP_CROSSOVER",
    "PageSkipper",
    "matching_rows",
    "page_skipper",
    "rows_to_read",
    "skipped_rows",
]

Mask = npt.NDArray[np.bool_]
Ints = npt.NDArray[np.int64]

# Parquet physical types (the footer's Type enum) and their plain encodings
_PLAIN = {1: "<i", 2: "<q", 4: "<f", 5: "<d"}
_NAMES = {
    0: "BOOLEAN",
    1: "INT32",
    2: "INT64",
    3: "INT96",
    4: "FLOAT",
    5: "DOUBLE",
    6: "BYTE_ARRAY",
    7: "FIXED_LEN_BYTE_ARRAY",
}


def _plain(physical: int, raw: bytes) -> Any:
    """A column index bound (plain encoding) as the Python value pyarrow's statistics
    give for the same physical type."""
    fmt = _PLAIN.get(physical)
    if fmt is not None:
        return struct.unpack(fmt, raw)[0] if len(raw) == struct.calcsize(fmt) else None
    if physical == 0:
        return bool(raw[0]) if len(raw) == 1 else None
    if physical in (6, 7):
        return bytes(raw)
    return None


def _bounds(
    t: PrimitiveType, arrow_type: pa.DataType, physical: int, lo: bytes, hi: bytes
) -> tuple[bytes, bytes] | None:
    """A page's min and max (Parquet plain encoding) as Iceberg bounds of type ``t``,
    where their meaning is certain."""
    low = statistic_value(t, arrow_type, _NAMES[physical], _plain(physical, lo))
    high = statistic_value(t, arrow_type, _NAMES[physical], _plain(physical, hi))
    if low is None or high is None:
        return None
    try:  # a bound the column's type cannot hold stays unknown
        return to_bytes(t, low), to_bytes(t, high)
    except (ValueError, TypeError, OverflowError):
        return None


def _page_metrics(
    layout: ParquetLayout,
    group: int,
    leaf: int,
    fid: int,
    t: PrimitiveType,
    arrow_type: pa.DataType,
) -> MetricArrays | None:
    """Each page of a column chunk as the metrics of a file of its rows."""
    chunk = layout.chunks[group][leaf]
    pages, stats = chunk.pages, chunk.stats
    if pages is None or stats is None or len(stats.null_pages) != len(pages.first_rows):
        return None
    rows = pages.rows(layout.group_rows[group])
    n = len(rows)
    only_nulls = np.array(stats.null_pages, dtype=bool)
    nulls = np.where(only_nulls, rows, 0)
    nulls_known = only_nulls.copy()
    if stats.null_counts is not None and len(stats.null_counts) == n:
        nulls = np.where(only_nulls, rows, np.array(stats.null_counts, dtype=np.int64))
        nulls_known[:] = True
    physical = layout.leaves[leaf].physical_type
    ordered = 7 in layout.footer  # without column orders min and max mean nothing
    known = np.zeros(n, dtype=bool)
    lower: list[bytes] = []
    upper: list[bytes] = []
    if ordered:
        for i in np.flatnonzero(~only_nulls).tolist():
            found = _bounds(t, arrow_type, physical, stats.min_values[i], stats.max_values[i])
            if found is not None:
                known[i] = True
                lower.append(found[0])
                upper.append(found[1])
    nans: dict[int, Any] = {}
    if stats.nan_counts is not None and len(stats.nan_counts) == n:
        nans[fid] = (np.ones(n, dtype=bool), np.array(stats.nan_counts, dtype=np.int64))
    return MetricArrays(
        record_counts=rows.astype(np.int64),
        value_counts={fid: (np.ones(n, dtype=bool), rows.astype(np.int64))},
        null_value_counts={fid: (nulls_known, nulls.astype(np.int64))},
        nan_value_counts=nans,
        lower_bounds={fid: (known, lower)},
        upper_bounds={fid: (known, upper)},
    )


def _page_mask(
    layout: ParquetLayout,
    group: int,
    leaf: int,
    pred: BoundPredicate,
    arrow_type: pa.DataType,
) -> Mask | None:
    """Rows of the group whose page of column ``leaf`` may hold a row matching
    ``pred``; None when the column has no usable column index. Pages are judged all at
    once where the vectorized evaluator covers the predicate, else one by one."""
    t = pred.term.field_type
    if not isinstance(t, PrimitiveType):
        return None
    fid = pred.term.field_id
    m = _page_metrics(layout, group, leaf, fid, t, arrow_type)
    if m is None:
        return None
    vector = compile_inclusive(pred)
    might = eval_inclusive(vector, m, False) if vector is not None else None
    if might is None:
        test = inclusive_metrics_test(pred)
        known, lower = m.lower_bounds[fid]
        upper = m.upper_bounds[fid][1]
        slot = np.cumsum(known) - 1
        nulls_known, nulls = m.null_value_counts[fid]
        nan_known = m.nan_value_counts.get(fid)
        might = np.ones(m.length, dtype=bool)
        for i in range(m.length):
            n = int(m.record_counts[i])
            bounds = known[i]
            might[i] = test(
                n,
                {fid: n},
                {fid: int(nulls[i])} if nulls_known[i] else {},
                {fid: int(nan_known[1][i])} if nan_known is not None else None,
                {fid: lower[slot[i]]} if bounds else {},
                {fid: upper[slot[i]]} if bounds else {},
            )
    keep: Mask = np.repeat(might, m.record_counts)  # pages cover the group in order
    return keep


def matching_rows(
    layout: ParquetLayout,
    reader: RangeReader,
    group: int,
    expr: BooleanExpression,
    file_schema: pa.Schema,
) -> Mask | None:
    """Which rows of row group ``group`` may match ``expr`` (bound, free of NOT,
    addressing the file's columns by path as for :func:`neve.arrow.row_groups.
    matching_row_groups`), from the column index; None when no referenced column has
    one (every row may match)."""
    leaves = leaf_columns(file_schema)
    types = leaf_types(file_schema)
    wanted: dict[BoundPredicate, int] = {}

    def collect(e: BooleanExpression) -> None:
        if isinstance(e, (And, Or)):
            collect(e.left)
            collect(e.right)
        elif isinstance(e, BoundPredicate):
            leaf = leaves.get(e.term.path)
            if leaf is not None and not layout.leaves[leaf].repeated:
                chunk = layout.chunks[group][leaf]
                if chunk.column_index is not None and chunk.offset_index is not None:
                    wanted[e] = leaf

    collect(expr)
    if not wanted:
        return None
    try:
        layout.load_page_indexes(
            reader, [(group, leaf) for leaf in set(wanted.values())], stats=True
        )
    except UnsupportedLayout:
        return None
    n = int(layout.group_rows[group])

    def judge(e: BooleanExpression) -> Mask | None:
        if e is ALWAYS_TRUE:
            return None
        if e is ALWAYS_FALSE:
            return np.zeros(n, dtype=bool)
        if isinstance(e, And):
            a, b = judge(e.left), judge(e.right)
            return b if a is None else a if b is None else a & b
        if isinstance(e, Or):
            a, b = judge(e.left), judge(e.right)
            return None if a is None or b is None else a | b
        if isinstance(e, BoundPredicate) and e in wanted:
            leaf = wanted[e]
            return _page_mask(layout, group, leaf, e, types[leaf])
        return None

    return judge(expr)


#: A row group of which more than this share of rows may match is read whole: the
#: pages left out would not pay for reading the rest page by page.
SKIP_CROSSOVER = 0.5

#: On an object store a request costs tens of milliseconds whatever its size, while a
#: page-skipping read makes several (the page index, then the pages): row groups below
#: this size are read whole in one request.
REMOTE_SKIP_MIN_BYTES = 8 * 2**20

#: On a local file the page index costs a decode of the footer in Python (about 2 ms
#: for a 16-column file), then its reads and judging: columns whose compressed bytes in
#: the row group are fewer than this are decoded whole in less time (pyarrow decodes a
#: MiB of lineitem in about 5 ms here), so a scan reads them whole.
LOCAL_SKIP_MIN_BYTES = 2**20


def rows_to_read(
    io: FileIO,
    path: str,
    metadata: pq.FileMetaData,
    group: int,
    expr: BooleanExpression,
    file_schema: pa.Schema,
) -> Ints | None:
    """The positions (within row group ``group``) of the rows that may match ``expr``
    by the column index, when few enough of them may that reading only their pages
    pays; None to read the row group whole (no column index on the filter's columns,
    or most rows may match, or, on an object store, a row group small enough that one
    request for all of it costs less than the page index and page requests)."""
    rg = metadata.row_group(group)
    if not any(rg.column(i).has_column_index for i in range(rg.num_columns)):
        return None  # pyarrow has read the footer: no need to decode it again
    if io.is_object_store(path) and rg.total_byte_size < REMOTE_SKIP_MIN_BYTES:
        return None
    try:
        layout, reader = open_page_file(io, path)
        try:
            mask = matching_rows(layout, reader, group, expr, file_schema)
        finally:
            reader.close()
    except UnsupportedLayout:
        return None
    if mask is None or mask.mean() > SKIP_CROSSOVER:
        return None
    out: Ints = np.flatnonzero(mask).astype(np.int64)
    return out


def _without(wanted: Ints, deleted: BitMap64) -> Ints:
    """The sorted positions ``wanted`` that ``deleted`` does not hold: each looked up in
    the sorted deleted positions (no sort of either, as a set difference would)."""
    gone = np.frombuffer(deleted.to_array(), dtype=np.uint64).astype(np.int64)
    if not len(gone):
        return wanted
    at = np.searchsorted(gone, wanted)
    hit = gone[np.minimum(at, len(gone) - 1)] == wanted
    out: Ints = wanted[~hit]
    return out


def skipped_rows(
    io: FileIO,
    path: str,
    metadata: pq.FileMetaData,
    group: int,
    expr: BooleanExpression,
    file_schema: pa.Schema,
    columns: Sequence[str],
    start: int,
    deleted: BitMap64 | None,
) -> tuple[pa.Table, Ints] | None:
    """The rows of row group ``group`` (first row at file position ``start``) not in
    ``deleted`` whose pages the column index does not rule out for ``expr``: columns
    ``columns`` of ``file_schema`` and their file positions, read page by page; None
    to read the row group whole (:func:`rows_to_read`; and when ``columns`` are too
    small in it for skipping to pay, :data:`LOCAL_SKIP_MIN_BYTES`)."""
    if io.is_local(path) and _chunk_bytes(metadata, group, columns) < LOCAL_SKIP_MIN_BYTES:
        return None
    local = rows_to_read(io, path, metadata, group, expr, file_schema)
    if local is None:
        return None
    wanted = local + start
    if deleted is not None and len(wanted):
        wanted = _without(wanted, deleted)
    target = pa.schema([file_schema.field(c) for c in columns])
    try:
        rows = read_positions(io, path, target, wanted)
    except UnsupportedLayout:
        return None
    return None if rows is None else (rows, wanted)


def _chunk_bytes(metadata: pq.FileMetaData, group: int, columns: Sequence[str]) -> int:
    """The compressed bytes of the column chunks of ``columns`` (top-level names: all
    their leaves) in row group ``group``."""
    rg = metadata.row_group(group)
    wanted = set(columns)
    total = 0
    for i in range(rg.num_columns):
        chunk = rg.column(i)
        if chunk.path_in_schema.split(".", 1)[0] in wanted:
            total += chunk.total_compressed_size
    return total


#: Reads a row group's rows that may match page by page: ``(group, first row's file
#: position, columns, deleted positions) -> (rows, positions)``, or None to read it whole.
PageSkipper = Callable[[int, int, Sequence[str], BitMap64 | None], tuple[pa.Table, Ints] | None]


def page_skipper(
    io: FileIO,
    path: str,
    metadata: pq.FileMetaData,
    expr: BooleanExpression | None,
    file_schema: pa.Schema,
) -> PageSkipper | None:
    """:func:`skipped_rows` for the row groups of one file and filter; None when the
    filter cannot skip pages (none, or always true or false)."""
    if expr is None or expr is ALWAYS_TRUE or expr is ALWAYS_FALSE:
        return None

    def skip(
        group: int, start: int, columns: Sequence[str], deleted: BitMap64 | None
    ) -> tuple[pa.Table, Ints] | None:
        return skipped_rows(io, path, metadata, group, expr, file_schema, columns, start, deleted)

    return skip
