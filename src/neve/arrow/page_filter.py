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

import contextlib
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
from neve.expressions.metrics_evaluator import inclusive_metrics_test
from neve.io.fileio import FileIO
from neve.spec.types import PrimitiveType
from neve.spec.values import to_bytes

__all__ = [
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


def _page_mask(
    layout: ParquetLayout,
    group: int,
    leaf: int,
    pred: BoundPredicate,
    arrow_type: pa.DataType,
) -> Mask | None:
    """Rows of the group whose page of column ``leaf`` may hold a row matching
    ``pred``; None when the column has no usable column index."""
    chunk = layout.chunks[group][leaf]
    pages, stats = chunk.pages, chunk.stats
    if pages is None or stats is None or len(stats.null_pages) != len(pages.first_rows):
        return None
    t = pred.term.field_type
    if not isinstance(t, PrimitiveType):
        return None
    fid = pred.term.field_id
    physical = layout.leaves[leaf].physical_type
    ordered = 7 in layout.footer  # without column orders min and max mean nothing
    test = inclusive_metrics_test(pred)
    rows = pages.rows(layout.group_rows[group])
    keep = np.ones(int(layout.group_rows[group]), dtype=bool)
    for i in range(len(rows)):
        n = int(rows[i])
        nulls = {fid: n} if stats.null_pages[i] else {}
        if stats.null_counts is not None and not stats.null_pages[i]:
            nulls = {fid: int(stats.null_counts[i])}
        nans = {fid: int(stats.nan_counts[i])} if stats.nan_counts is not None else None
        lower: dict[int, bytes] = {}
        upper: dict[int, bytes] = {}
        if ordered and not stats.null_pages[i]:
            lo = statistic_value(
                t, arrow_type, _NAMES[physical], _plain(physical, stats.min_values[i])
            )
            hi = statistic_value(
                t, arrow_type, _NAMES[physical], _plain(physical, stats.max_values[i])
            )
            if lo is not None and hi is not None:
                # a bound the column's type cannot hold stays unknown
                with contextlib.suppress(ValueError, TypeError, OverflowError):
                    lower, upper = {fid: to_bytes(t, lo)}, {fid: to_bytes(t, hi)}
        if not test(n, {fid: n}, nulls, nans, lower, upper):
            start = int(pages.first_rows[i])
            keep[start : start + n] = False
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
    or most rows may match)."""
    rg = metadata.row_group(group)
    if not any(rg.column(i).has_column_index for i in range(rg.num_columns)):
        return None  # pyarrow has read the footer: no need to decode it again
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
    to read the row group whole (:func:`rows_to_read`)."""
    local = rows_to_read(io, path, metadata, group, expr, file_schema)
    if local is None:
        return None
    wanted = local + start
    if deleted is not None and len(wanted):
        gone = np.frombuffer(deleted.to_array(), dtype=np.uint64).astype(np.int64)
        wanted = np.setdiff1d(wanted, gone)
    target = pa.schema([file_schema.field(c) for c in columns])
    try:
        rows = read_positions(io, path, target, wanted)
    except UnsupportedLayout:
        return None
    return None if rows is None else (rows, wanted)


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
