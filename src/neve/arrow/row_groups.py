"""Pruning the row groups of a Parquet file by their statistics, with Iceberg's rules.

Each row group's column statistics (value and null counts, min and max) are read as
Iceberg metrics and judged by the same inclusive metrics logic that prunes data files
(:func:`neve.expressions.metrics_evaluator.inclusive_metrics_test`), so a row group is
skipped only when no row of it can match. Parquet statistics do not count NaN and
leave it out of min and max, so the NaN count of a float or double column is unknown
here: ``x IS NaN``, ``x != v`` and ``x NOT IN (...)`` keep every row group that has
values (Iceberg-Java's ``ParquetMetricsRowGroupFilter`` does the same). pyarrow's own
statistics pruning would drop a group of ``[1.0, NaN]`` for ``x != 1.0`` (issue 9).

Statistics are used only where their meaning is certain: a min or max whose Parquet
type or unit does not map exactly onto the column's Iceberg type (unsigned integers,
INT96 timestamps, a decimal of another scale, nanoseconds for a microsecond column)
is treated as unknown.
"""

from __future__ import annotations

import contextlib
import math
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from neve.expressions.expressions import ALWAYS_FALSE, ALWAYS_TRUE, BooleanExpression
from neve.expressions.metrics_evaluator import inclusive_metrics_test
from neve.expressions.visitors import references
from neve.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from neve.spec.values import to_bytes, unscaled_to_decimal

__all__ = ["leaf_columns", "leaf_types", "matching_row_groups", "statistic_value"]

_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def leaf_columns(schema: pa.Schema) -> dict[tuple[str, ...], int]:
    """The Parquet leaf column index of every primitive reached through structs only,
    by its path of names (Parquet numbers leaves depth-first, as Arrow lists fields)."""
    out: dict[tuple[str, ...], int] = {}
    count = 0

    def walk(t: pa.DataType, path: tuple[str, ...] | None) -> None:
        nonlocal count
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                f = t.field(i)
                walk(f.type, None if path is None else (*path, f.name))
        elif pa.types.is_map(t):
            walk(t.key_type, None)
            walk(t.item_type, None)
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            walk(t.value_type, None)
        else:
            if path is not None:
                out[path] = count
            count += 1

    for f in schema:
        walk(f.type, (f.name,))
    return out


def matching_row_groups(
    metadata: pq.FileMetaData, file_schema: pa.Schema, expr: BooleanExpression
) -> list[int]:
    """The row groups of a file in which a row may match ``expr``.

    ``expr`` is bound, free of NOT, and addresses the file's columns: each
    reference's ``path`` is the column's path of names in ``file_schema`` (the Arrow
    schema of the file), its type the table's type for that field.
    """
    groups = list(range(metadata.num_row_groups))
    if expr is ALWAYS_TRUE:
        return groups
    if expr is ALWAYS_FALSE:
        return []
    test = inclusive_metrics_test(expr)
    leaves = leaf_columns(file_schema)
    arrow_types = leaf_types(file_schema)
    columns = [
        (ref.field_id, ref.field_type, leaves.get(ref.path))
        for ref in references(expr)
        if isinstance(ref.field_type, PrimitiveType)
    ]
    kept = []
    for i in groups:
        rg = metadata.row_group(i)
        values: dict[int, int] = {}
        nulls: dict[int, int] = {}
        lower: dict[int, bytes] = {}
        upper: dict[int, bytes] = {}
        for fid, t, leaf in columns:
            if leaf is None or leaf >= rg.num_columns:
                continue  # not a leaf of this file: nothing is known
            _add_column(rg.column(leaf), arrow_types[leaf], fid, t, values, nulls, lower, upper)
        if test(rg.num_rows, values, nulls, None, lower, upper):
            kept.append(i)
    return kept


def leaf_types(schema: pa.Schema) -> list[pa.DataType]:
    """The Arrow type of every leaf column, in Parquet's leaf order."""
    out: list[pa.DataType] = []

    def walk(t: pa.DataType) -> None:
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i).type)
        elif pa.types.is_map(t):
            walk(t.key_type)
            walk(t.item_type)
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            walk(t.value_type)
        else:
            out.append(t)

    for f in schema:
        walk(f.type)
    return out


def _add_column(
    chunk: pq.ColumnChunkMetaData,
    arrow_type: pa.DataType,
    fid: int,
    t: PrimitiveType,
    values: dict[int, int],
    nulls: dict[int, int],
    lower: dict[int, bytes],
    upper: dict[int, bytes],
) -> None:
    values[fid] = chunk.num_values
    stats = chunk.statistics if chunk.is_stats_set else None
    if stats is None:
        return
    if stats.has_null_count:
        nulls[fid] = stats.null_count
    if not stats.has_min_max:
        return
    lo = statistic_value(t, arrow_type, chunk.physical_type, stats.min_raw)
    hi = statistic_value(t, arrow_type, chunk.physical_type, stats.max_raw)
    if lo is not None and hi is not None:
        # a statistic the column's type cannot hold stays unknown
        with contextlib.suppress(ValueError, TypeError, OverflowError):
            lower[fid], upper[fid] = to_bytes(t, lo), to_bytes(t, hi)


def statistic_value(t: IcebergType, arrow_type: pa.DataType, physical: str, raw: Any) -> Any:
    """A Parquet statistic as a value of Iceberg type ``t``, or None when its meaning
    is not certain."""
    if raw is None or physical == "INT96":
        return None
    try:
        if isinstance(t, BooleanType):
            return raw if isinstance(raw, bool) else None
        if isinstance(t, (IntegerType, LongType)):
            signed = pa.types.is_signed_integer(arrow_type)
            return raw if signed and isinstance(raw, int) else None
        if isinstance(t, (FloatType, DoubleType)):
            ok = pa.types.is_floating(arrow_type) and isinstance(raw, float)
            return raw if ok and not math.isnan(raw) else None
        if isinstance(t, DateType):
            return raw if pa.types.is_date32(arrow_type) and isinstance(raw, int) else None
        if isinstance(t, TimeType):
            return _scaled(arrow_type, raw, 1_000_000, pa.types.is_time)
        if isinstance(t, (TimestampType, TimestamptzType)):
            return _scaled(arrow_type, raw, 1_000_000, pa.types.is_timestamp)
        if isinstance(t, (TimestampNsType, TimestamptzNsType)):
            return _scaled(arrow_type, raw, 1_000_000_000, pa.types.is_timestamp)
        if isinstance(t, DecimalType):
            if not pa.types.is_decimal(arrow_type) or arrow_type.scale != t.scale:
                return None
            unscaled = int.from_bytes(raw, "big", signed=True) if isinstance(raw, bytes) else raw
            return unscaled_to_decimal(int(unscaled), t.scale)
        if isinstance(t, StringType):
            return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
        if isinstance(t, UUIDType):
            return uuid.UUID(bytes=bytes(raw)) if len(raw) == 16 else None
        if isinstance(t, (BinaryType, FixedType)):
            return bytes(raw) if isinstance(raw, (bytes, bytearray)) else None
    except (ValueError, TypeError, UnicodeDecodeError, OverflowError):
        return None
    return None


def _scaled(arrow_type: pa.DataType, raw: Any, per_second: int, kind: Any) -> int | None:
    """A time or timestamp statistic in the unit of the Iceberg type (``per_second``
    units a second), when the file's unit is not finer (no rounding)."""
    if not kind(arrow_type) or not isinstance(raw, int):
        return None
    file_per_second = _PER_SECOND.get(str(arrow_type.unit))
    if file_per_second is None or file_per_second > per_second:
        return None
    return raw * (per_second // file_per_second)
