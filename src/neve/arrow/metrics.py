"""Column metrics of written Parquet files, as Iceberg-Java's Parquet writer collects them.

Counts, sizes and the bounds of most types come from the Parquet footer; float and
double bounds and NaN counts come from the Arrow data, because Parquet statistics
neither count NaNs nor order -0.0 before +0.0 (spec Appendix D notes: NaN is never a
bound, -0.0 sorts before +0.0). Bounds are kept only for columns reached through
structs alone; a column inside a list or map gets counts but no bounds, as in Java.

Metrics modes (table properties ``write.metadata.metrics.default`` and
``write.metadata.metrics.column.<dotted name>``): ``none``, ``counts``,
``truncate(N)`` (the default, N=16: string and binary bounds cut to N characters or
bytes) and ``full``. As in Java, without an explicit default only the first
``write.metadata.metrics.max-inferred-column-defaults`` (100) leaf columns get
``truncate(16)`` and the rest ``none``.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from neve.errors import ValidationError
from neve.spec.properties import TableProperties
from neve.spec.schema import Schema, walk_fields
from neve.spec.types import (
    BinaryType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    UnknownType,
    UUIDType,
)
from neve.spec.values import (
    to_bytes,
    truncate_lower_bound,
    truncate_upper_bound,
    unscaled_to_decimal,
)

__all__ = [
    "DEFAULT_METRICS_MODE",
    "FileMetrics",
    "FloatStats",
    "MetricsConfig",
    "MetricsMode",
    "parquet_column_paths",
    "parquet_metrics",
    "row_group_offsets",
]

_DEFAULT_KEY = "write.metadata.metrics.default"
_COLUMN_PREFIX = "write.metadata.metrics.column."
_MAX_INFERRED_KEY = "write.metadata.metrics.max-inferred-column-defaults"


@dataclass(frozen=True)
class MetricsMode:
    """``none``, ``counts``, ``truncate`` (with ``length``) or ``full``."""

    kind: str
    length: int = 0

    @property
    def counts(self) -> bool:
        return self.kind != "none"

    @property
    def bounds(self) -> bool:
        return self.kind in ("truncate", "full")

    @staticmethod
    def parse(text: str) -> MetricsMode:
        s = text.strip().lower()
        if s in ("none", "counts", "full"):
            return MetricsMode(s)
        m = re.fullmatch(r"truncate\(\s*(\d+)\s*\)", s)
        if m and int(m.group(1)) > 0:
            return MetricsMode("truncate", int(m.group(1)))
        raise ValidationError(
            f"unknown metrics mode {text!r}; use none, counts, truncate(N) with N > 0, or full"
        )

    def __str__(self) -> str:
        return f"truncate({self.length})" if self.kind == "truncate" else self.kind


DEFAULT_METRICS_MODE = MetricsMode("truncate", 16)
_NONE = MetricsMode("none")


@dataclass(frozen=True)
class MetricsConfig:
    """The metrics mode of every column, by field id."""

    default: MetricsMode = DEFAULT_METRICS_MODE
    columns: Mapping[int, MetricsMode] = field(default_factory=dict)

    def mode(self, field_id: int) -> MetricsMode:
        return self.columns.get(field_id, self.default)

    @staticmethod
    def from_properties(schema: Schema, properties: Mapping[str, str]) -> MetricsConfig:
        """The modes the table properties ask for (read through
        :class:`~neve.spec.properties.TableProperties`: an unusable stored mode is as if
        absent)."""
        props = TableProperties(properties)
        columns: dict[int, MetricsMode] = {}
        default_text = props.as_text(_DEFAULT_KEY) if _DEFAULT_KEY in properties else None
        if default_text is not None:
            default = MetricsMode.parse(default_text)
        else:
            limit = props.as_int(_MAX_INFERRED_KEY)
            leaves = [
                f.field_id for _, f, _ in walk_fields(schema.fields) if f.field_type.is_primitive
            ]
            if len(leaves) <= limit:
                default = DEFAULT_METRICS_MODE
            else:
                default = _NONE
                columns.update(dict.fromkeys(leaves[:limit], DEFAULT_METRICS_MODE))
        for key in properties:
            text = props.as_text(key) if key.startswith(_COLUMN_PREFIX) else None
            if text is not None:
                f = schema.find_field_or_none(key[len(_COLUMN_PREFIX) :])
                if f is not None:  # Java ignores modes of columns that do not exist
                    columns[f.field_id] = MetricsMode.parse(text)
        return MetricsConfig(default, columns)


# -- float statistics from Arrow ----------------------------------------------------------

_NEG_ZERO_BITS = {4: pa.scalar(-(2**31), pa.int32()), 8: pa.scalar(-(2**63), pa.int64())}


def _sign_lt(a: float, b: float) -> bool:
    """``a < b`` where -0.0 sorts before +0.0."""
    return a < b or (a == b == 0.0 and math.copysign(1.0, a) < math.copysign(1.0, b))


@dataclass
class _FloatColumn:
    nan_count: int = 0
    lower: float | None = None
    upper: float | None = None


class FloatStats:
    """NaN counts and sign-aware bounds of the float/double columns of written data."""

    def __init__(self, schema: Schema) -> None:
        self._schema = schema
        self._float_parents = _ids_above_floats(schema)
        self.columns: dict[int, _FloatColumn] = {}

    def update(self, table: pa.Table) -> None:
        for f in self._schema.fields:
            if f.field_id not in self._float_parents:
                continue
            for chunk in table.column(f.name).chunks:
                for leaf, arr in self._leaves(chunk, f):
                    self._add(leaf.field_id, arr)

    def _leaves(self, arr: pa.Array, f: NestedField) -> Iterator[tuple[NestedField, pa.Array]]:
        t = f.field_type
        if isinstance(t, (FloatType, DoubleType)):
            yield f, arr
        elif isinstance(t, StructType):
            for child, child_arr in zip(t.fields, arr.flatten(), strict=True):
                if child.field_id in self._float_parents:
                    yield from self._leaves(child_arr, child)
        elif isinstance(t, (ListType, MapType)):
            offsets = arr.offsets
            start = offsets[0].as_py()
            length = offsets[len(offsets) - 1].as_py() - start
            if isinstance(t, ListType):
                parts = [(t.element_field, arr.values)]
            else:
                parts = [(t.key_field, arr.keys), (t.value_field, arr.items)]
            for child, child_arr in parts:
                if child.field_id in self._float_parents:
                    yield from self._leaves(child_arr.slice(start, length), child)

    def _add(self, field_id: int, arr: pa.Array) -> None:
        col = self.columns.setdefault(field_id, _FloatColumn())
        if len(arr) == arr.null_count:
            return
        col.nan_count += pc.sum(pc.is_nan(arr)).as_py() or 0
        mm = pc.min_max(arr)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo is None or math.isnan(lo):  # only NaNs: no bound
            return
        if lo == 0.0 or hi == 0.0:
            bits = arr.view(pa.int32() if pa.types.is_float32(arr.type) else pa.int64())
            neg_zero = pc.any(pc.equal(bits, _NEG_ZERO_BITS[bits.type.byte_width])).as_py()
            pos_zero = pc.any(pc.equal(bits, pa.scalar(0, bits.type))).as_py()
            if lo == 0.0:
                lo = -0.0 if neg_zero else 0.0
            if hi == 0.0:
                hi = 0.0 if pos_zero else -0.0
        if col.lower is None or _sign_lt(lo, col.lower):
            col.lower = lo
        if col.upper is None or _sign_lt(col.upper, hi):
            col.upper = hi


def _ids_above_floats(schema: Schema) -> set[int]:
    """Ids of float/double fields and of every field that contains one."""
    out: set[int] = set()
    for _, f, _ in walk_fields(schema.fields):
        if isinstance(f.field_type, (FloatType, DoubleType)):
            fid: int | None = f.field_id
            while fid is not None:
                out.add(fid)
                fid = schema.parent_id(fid)
    return out


# -- footer metrics -----------------------------------------------------------------------


@dataclass(frozen=True)
class FileMetrics:
    """The metrics of one data file, keyed by field id; bounds are Appendix D bytes."""

    record_count: int
    column_sizes: dict[int, int]
    value_counts: dict[int, int]
    null_value_counts: dict[int, int]
    nan_value_counts: dict[int, int]
    lower_bounds: dict[int, bytes]
    upper_bounds: dict[int, bytes]
    split_offsets: tuple[int, ...]


def parquet_column_paths(schema: Schema) -> dict[str, tuple[NestedField, bool]]:
    """Parquet leaf column paths (``a.b``, ``l.list.element``, ``m.key_value.key``) of a
    schema written by pyarrow, with the field and whether bounds are kept for it."""
    out: dict[str, tuple[NestedField, bool]] = {}

    def visit(f: NestedField, path: str, in_struct_only: bool) -> None:
        t = f.field_type
        if isinstance(t, StructType):
            for c in t.fields:
                visit(c, f"{path}.{c.name}", in_struct_only)
        elif isinstance(t, ListType):
            visit(t.element_field, f"{path}.list.element", False)
        elif isinstance(t, MapType):
            visit(t.key_field, f"{path}.key_value.key", False)
            visit(t.value_field, f"{path}.key_value.value", False)
        else:
            out[path] = (f, in_struct_only)

    for f in schema.fields:
        visit(f, f.name, True)
    return out


@dataclass
class _Column:
    size: int = 0
    values: int = 0
    nulls: int | None = 0
    lower: Any = None
    upper: Any = None
    bounds_ok: bool = True


def parquet_metrics(
    metadata: pq.FileMetaData,
    schema: Schema,
    config: MetricsConfig,
    floats: FloatStats | None = None,
) -> FileMetrics:
    """Metrics of a Parquet file written from ``schema`` (pyarrow's naming of nested
    columns), from its footer and, for floats, from ``floats``."""
    paths = parquet_column_paths(schema)
    columns: dict[int, tuple[NestedField, bool, _Column]] = {}
    for rg_index in range(metadata.num_row_groups):
        rg = metadata.row_group(rg_index)
        for ci in range(rg.num_columns):
            chunk = rg.column(ci)
            known = paths.get(chunk.path_in_schema)
            if known is None:
                continue
            f, bounded = known
            entry = columns.get(f.field_id)
            if entry is None:
                entry = columns[f.field_id] = (f, bounded, _Column())
            _add_chunk(entry[2], chunk, f.field_type)

    offsets = tuple(sorted(row_group_offsets(metadata)))
    out = FileMetrics(metadata.num_rows, {}, {}, {}, {}, {}, {}, offsets)
    for fid, (f, bounded, col) in columns.items():
        mode = config.mode(fid)
        if not mode.counts:
            continue
        out.column_sizes[fid] = col.size
        out.value_counts[fid] = col.values
        if col.nulls is not None:
            out.null_value_counts[fid] = col.nulls
        t = f.field_type
        if isinstance(t, (FloatType, DoubleType)):
            fc = floats.columns.get(fid) if floats is not None else None
            if fc is None:
                continue
            out.nan_value_counts[fid] = fc.nan_count
            lower, upper, ok = fc.lower, fc.upper, True
        else:
            lower, upper, ok = col.lower, col.upper, col.bounds_ok
        if mode.bounds and bounded and ok and isinstance(t, PrimitiveType):
            _put_bounds(out, fid, t, mode, lower, upper)
    return out


def row_group_offsets(metadata: pq.FileMetaData) -> list[int]:
    """The file offset where each row group starts (its first column chunk's first
    page), in row group order: the file's split offsets."""
    out = []
    for i in range(metadata.num_row_groups):
        rg = metadata.row_group(i)
        if not rg.num_columns:
            continue
        first = rg.column(0)
        start = first.dictionary_page_offset if first.has_dictionary_page else None
        out.append(int(start if start is not None else first.data_page_offset))
    return out


def _add_chunk(col: _Column, chunk: pq.ColumnChunkMetaData, t: IcebergType) -> None:
    col.size += chunk.total_compressed_size
    col.values += chunk.num_values
    stats = chunk.statistics if chunk.is_stats_set else None
    if stats is None or not stats.has_null_count:
        col.nulls = None
        col.bounds_ok = False
        return
    if col.nulls is not None:
        col.nulls += stats.null_count
    if isinstance(t, (FloatType, DoubleType, UnknownType)):
        return
    if not stats.has_min_max:
        if stats.null_count < chunk.num_values:  # values without statistics
            col.bounds_ok = False
        return
    lo = _stat_value(t, stats.min_raw)
    hi = _stat_value(t, stats.max_raw)
    if col.lower is None or lo < col.lower:
        col.lower = lo
    if col.upper is None or hi > col.upper:
        col.upper = hi


def _stat_value(t: IcebergType, raw: Any) -> Any:
    """A Parquet physical statistic as a neve value of type ``t``."""
    if isinstance(t, StringType):
        return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
    if isinstance(t, DecimalType):
        unscaled = int.from_bytes(raw, "big", signed=True) if isinstance(raw, bytes) else raw
        return unscaled_to_decimal(unscaled, t.scale)
    if isinstance(t, UUIDType):
        return uuid.UUID(bytes=bytes(raw))
    if isinstance(t, (BinaryType, FixedType)):
        return bytes(raw)
    return raw


def _put_bounds(
    out: FileMetrics, fid: int, t: PrimitiveType, mode: MetricsMode, lower: Any, upper: Any
) -> None:
    if mode.kind == "truncate" and isinstance(t, (StringType, BinaryType, FixedType)):
        if lower is not None:
            lower = truncate_lower_bound(t, lower, mode.length)
        if upper is not None:
            upper = truncate_upper_bound(t, upper, mode.length)
    if lower is not None:
        out.lower_bounds[fid] = to_bytes(t, lower)
    if upper is not None:
        out.upper_bounds[fid] = to_bytes(t, upper)
