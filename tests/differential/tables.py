"""Random tables for the differential scan tests: a schema of every type, rows with
edge values, two partition specs (data written under the first, then the second),
random file, row-group and split sizes and metrics modes, format version 1, 2 or 3.

The rows are kept in Python as the oracle's copy of the table; :func:`build` writes
them with neve (pyarrow engine) and :func:`file_ids` reads which ids each data file
holds straight from the Parquet file.
"""

from __future__ import annotations

import itertools
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

from differential.model import INT_MAX, Column, Row, columns, rows
from neve.catalog import Catalog
from neve.spec.schema import Schema
from neve.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UUID,
    DecimalType,
    FixedType,
    NestedField,
    PrimitiveType,
)
from neve.table.table import Table

_names = itertools.count()

#: Decimal types worth trying: the narrowest, common ones and the widest.
DECIMALS = ((1, 0), (9, 2), (18, 6), (19, 0), (38, 10), (38, 0))


@dataclass
class Case:
    """One random table: what to create and write, and the rows it then holds."""

    version: int
    cols: list[Column]
    spec_a: list[str]
    spec_b: list[str]
    rows_a: list[Row]
    rows_b: list[Row]
    properties: dict[str, str]

    @property
    def all_rows(self) -> list[Row]:
        return self.rows_a + self.rows_b

    def describe(self) -> str:
        return (
            f"v{self.version} spec A {self.spec_a} -> spec B {self.spec_b}, "
            f"{len(self.rows_a)}+{len(self.rows_b)} rows, properties {self.properties}"
        )


def _spec(cols: Sequence[Column], one_per_column: bool) -> st.SearchStrategy[list[str]]:
    """0 to 3 partition terms; at most one time transform per column, and with
    ``one_per_column`` one term per column (a new table names its fields by column and
    transform alone, so two buckets of one column would clash)."""
    if one_per_column:
        chosen = st.lists(st.sampled_from(list(cols)), max_size=3, unique_by=lambda c: c.name)
        return chosen.flatmap(
            lambda cs: st.tuples(*(st.sampled_from(c.transforms()) for c in cs)).map(list)
        )
    terms = [(c.name, t) for c in cols for t in c.transforms()]

    def valid(chosen: list[tuple[str, str]]) -> bool:
        timed = [name for name, t in chosen if t.split("(")[0] in ("year", "month", "day", "hour")]
        return len(timed) == len(set(timed))

    return (
        st.lists(st.sampled_from(terms), max_size=3, unique=True)
        .filter(valid)
        .map(lambda chosen: [t for _, t in chosen])
    )


_SIZES = {
    "write.parquet.row-group-size-bytes": ("1", "300", "5000"),
    "write.target-file-size-bytes": ("1", "3000", "40000"),
    "read.split.target-size": ("1", "200", "4000"),
    "write.metadata.metrics.default": ("full", "counts", "none", "truncate(1)", "truncate(2)"),
}


@st.composite
def cases(
    draw: st.DrawFn,
    max_rows: int = 30,
    versions: Sequence[int] = (1, 2, 3),
    restrict: Sequence[str] | None = None,
) -> Case:
    """A random table; ``restrict`` keeps only the named columns, and values Spark can
    hold (Spark runs)."""
    version = draw(st.sampled_from(list(versions)))
    precision, scale = draw(st.sampled_from(DECIMALS))
    cols = columns(version, precision, scale, spark=restrict is not None)
    if restrict is not None:
        cols = [c for c in cols if c.name in restrict]
    # a few columns per table, so that filters and partitions meet on them often
    cols = draw(st.lists(st.sampled_from(cols), min_size=1, max_size=3, unique_by=lambda c: c.name))
    spec_a = draw(_spec(cols, one_per_column=True))
    spec_b = draw(_spec(cols, one_per_column=False))
    rows_a = draw(rows(cols, 0, max_rows))
    rows_b = draw(rows(cols, len(rows_a), max_rows))
    properties = {}
    for key, choices in _SIZES.items():
        chosen = draw(st.sampled_from((None, *choices)))
        if chosen is not None:
            properties[key] = chosen
    return Case(version, cols, spec_a, spec_b, rows_a, rows_b, properties)


# -- writing ---------------------------------------------------------------------------------


def schema_of(cols: Sequence[Column]) -> Schema:
    fields = [NestedField(1, "id", LONG, True)]
    fields += [NestedField(n, c.name, c.type, False) for n, c in enumerate(cols, start=2)]
    return Schema(*fields)


_SIMPLE: dict[PrimitiveType, pa.DataType] = {
    BOOLEAN: pa.bool_(),
    INT: pa.int32(),
    LONG: pa.int64(),
    FLOAT: pa.float32(),
    DOUBLE: pa.float64(),
    STRING: pa.string(),
    BINARY: pa.binary(),
}
_TEMPORAL: dict[PrimitiveType, tuple[pa.DataType, pa.DataType]] = {
    DATE: (pa.int32(), pa.date32()),
    TIME: (pa.int64(), pa.time64("us")),
    TIMESTAMP: (pa.int64(), pa.timestamp("us")),
    TIMESTAMPTZ: (pa.int64(), pa.timestamp("us", tz="UTC")),
    TIMESTAMP_NS: (pa.int64(), pa.timestamp("ns")),
    TIMESTAMPTZ_NS: (pa.int64(), pa.timestamp("ns", tz="UTC")),
}


def arrow_column(t: PrimitiveType, values: list[Any]) -> pa.Array:
    """Values in neve's representation as an Arrow array of the column's type."""
    if t in _SIMPLE:
        return pa.array(values, _SIMPLE[t])
    if t in _TEMPORAL:
        raw, logical = _TEMPORAL[t]
        return pa.array(values, raw).cast(logical)
    if isinstance(t, DecimalType):
        return pa.array(values, pa.decimal128(t.precision, t.scale))
    if isinstance(t, FixedType):
        return pa.array(values, pa.binary(t.length))
    if t == UUID:
        return pa.array([None if v is None else v.bytes for v in values], pa.binary(16))
    raise AssertionError(f"no Arrow column for {t}")


def arrow_table(cols: Sequence[Column], table_rows: Sequence[Row]) -> pa.Table:
    arrays = {"id": pa.array([r["id"] for r in table_rows], pa.int64())}
    for c in cols:
        arrays[c.name] = arrow_column(c.type, [r[c.name] for r in table_rows])
    return pa.table(arrays)


def new_name() -> str:
    return f"db.t{next(_names)}"


def create(catalog: Catalog, case: Case) -> Table:
    return catalog.create_table(
        new_name(),
        schema_of(case.cols),
        partition_by=case.spec_a,
        properties=case.properties,
        format_version=case.version,
    )


def evolve(table: Table, case: Case) -> Table:
    """Replace spec A's fields by spec B's (fields in both stay)."""
    current = {str(f.transform) + f"#{f.source_id}": f for f in table.spec().fields}
    schema = table.schema()

    def key(term: str) -> str:
        from neve.spec.transforms import parse_partition_term

        transform, column = parse_partition_term(term)
        return f"{transform}#{schema.find_field(column).field_id}"

    wanted = {key(t): t for t in case.spec_b}
    with table.update_spec() as u:
        for k, f in current.items():
            if k not in wanted and str(f.transform) != "void":
                u.remove_field(f.name)
        for k, term in wanted.items():
            if k not in current:
                u.add_field(term)
    return table.refresh()


# -- reading back ------------------------------------------------------------------------------


def local_path(path: str) -> str:
    parts = urlsplit(path)
    return parts.path if parts.scheme == "file" else path


def file_ids(path: str) -> list[int]:
    """The ids in a data file, read with pyarrow alone."""
    ids: list[int] = pq.read_table(local_path(path), columns=["id"]).column("id").to_pylist()
    return ids


def canonical(t: PrimitiveType, v: Any) -> Any:
    """A value in a form that compares exactly: NaN equal to NaN, -0.0 apart from 0.0."""
    if v is None:
        return None
    if isinstance(v, float):
        return ("nan",) if math.isnan(v) else (v, math.copysign(1.0, v))
    if isinstance(v, uuid.UUID):
        return v.bytes
    return v


_VIEW = {
    pa.date32(): pa.int32(),
    pa.time64("us"): pa.int64(),
}


def python_values(arr: pa.ChunkedArray) -> list[Any]:
    """An Arrow column as neve values (temporal types as their integers)."""
    t = arr.type
    if t in _VIEW:
        arr = arr.cast(_VIEW[t])
    elif pa.types.is_timestamp(t):
        arr = arr.cast(pa.int64())
    values: list[Any] = arr.to_pylist()
    return values


def rows_by_id(cols: Sequence[Column], table: pa.Table) -> dict[int, tuple[Any, ...]]:
    ids = table.column("id").to_pylist()
    columns_ = [[canonical(c.type, v) for v in python_values(table.column(c.name))] for c in cols]
    return {i: tuple(col[n] for col in columns_) for n, i in enumerate(ids)}


def expected_by_id(cols: Sequence[Column], table_rows: Sequence[Row]) -> dict[int, tuple[Any, ...]]:
    return {r["id"]: tuple(canonical(c.type, r[c.name]) for c in cols) for r in table_rows}


__all__ = [
    "DECIMALS",
    "INT_MAX",
    "Case",
    "arrow_table",
    "canonical",
    "cases",
    "create",
    "evolve",
    "expected_by_id",
    "file_ids",
    "new_name",
    "rows_by_id",
    "schema_of",
]
