"""The independent half of the differential scan tests: column kinds with their edge
values, random filters, and a row-by-row oracle of what a filter matches.

Nothing here uses neve's evaluators, projections or pyarrow conversions: the oracle is
written from Iceberg's rules (spec "Scan Planning", and the null/NaN rules Iceberg-Java's
metrics evaluators prune by), in plain Python:

- A filter is evaluated in three-valued logic (TRUE, FALSE, UNKNOWN = None) with
  Kleene's AND/OR/NOT, and a row matches when the result is TRUE.
- A null value: ``=``, ``IN`` and ``starts_with`` are FALSE and their negations
  ``!=``, ``NOT IN``, ``not starts_with`` TRUE (Iceberg counts a null as "not equal"
  and "not in"); ``<``, ``<=``, ``>``, ``>=`` are UNKNOWN (a null is neither below nor
  above a value, so NOT of a comparison does not match it either); ``IS NULL`` TRUE,
  ``IS NaN`` FALSE, ``NOT NaN`` TRUE.
- A NaN: ``=`` and ``IN`` are FALSE, ``!=`` and ``NOT IN`` TRUE, the order comparisons
  UNKNOWN (IEEE 754: NaN is unordered); ``IS NaN`` TRUE.
- -0.0 equals 0.0 and neither is below the other (IEEE 754, as SQL engines compare).
- A float literal on a float column is first rounded to 32 bits (as Iceberg-Java
  converts a double literal to a float column's type).
- UUIDs order as their 16 big-endian bytes (unsigned), strings by code point (= UTF-8
  byte order), binary by unsigned bytes.
"""

from __future__ import annotations

import decimal
import math
import struct
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from neve import expressions as E
from neve.expressions import BooleanExpression
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
    PrimitiveType,
)

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
F32_MAX = 3.4028234663852886e38
US_PER_DAY = 86_400_000_000
US_PER_HOUR = 3_600_000_000


def f32(x: float) -> float:
    """``x`` rounded to the nearest 32-bit float (infinity beyond the range)."""
    if math.isnan(x) or math.isinf(x):
        return x
    try:
        return float(struct.unpack("<f", struct.pack("<f", x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


def is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


# -- columns ------------------------------------------------------------------------------

# transforms by the source types the spec allows them for
_BUCKETABLE = {"i", "l", "dec", "dt", "tm", "ts", "tz", "tn", "tzn", "s", "bi", "fx", "u"}
_TRUNCATABLE = {"i", "l", "dec", "s", "bi"}
_DATED = {"dt", "ts", "tz", "tn", "tzn"}
_HOURED = {"ts", "tz", "tn", "tzn"}


@dataclass(frozen=True, repr=False)
class Column:
    """A column of the random tables: its type, the values rows take (edges
    included) and which partition transforms and filters apply to it."""

    name: str
    type: PrimitiveType
    values: st.SearchStrategy[Any]
    edges: tuple[Any, ...]
    min_version: int = 1
    widths: tuple[int, ...] = ()  # truncate widths worth trying
    extra_literals: tuple[Any, ...] = ()  # literals beyond the values (out of range...)

    @property
    def floating(self) -> bool:
        return self.type in (FLOAT, DOUBLE)

    def __repr__(self) -> str:
        return f"Column({self.name!r}, {self.type})"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        # Hypothesis prints falsifying examples with this: the name and type suffice
        p.text(repr(self))

    def transforms(self) -> list[str]:
        """Partition terms for this column."""
        out = [self.name, f"void({self.name})"]
        if self.name in _BUCKETABLE:
            out += [f"bucket({n}, {self.name})" for n in (1, 2, 3, 16, 1000, INT_MAX)]
        if self.name in _TRUNCATABLE:
            out += [f"truncate({w}, {self.name})" for w in self.widths]
        if self.name in _DATED:
            out += [f"year({self.name})", f"month({self.name})", f"day({self.name})"]
        if self.name in _HOURED:
            out.append(f"hour({self.name})")
        return out


def _mix(edges: Sequence[Any], *others: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from(list(edges)), *others)


_INT_EDGES = (
    INT_MIN,
    INT_MIN + 1,
    INT_MIN + 47,
    INT_MIN + 48,
    INT_MIN + 99,
    -101,
    -100,
    -7,
    -1,
    0,
    1,
    99,
    100,
    INT_MAX - 100,
    INT_MAX - 1,
    INT_MAX,
)
_LONG_EDGES = (
    LONG_MIN,
    LONG_MIN + 1,
    LONG_MIN + 7,
    LONG_MIN + 8,
    LONG_MIN + 99,
    INT_MIN - 1,
    INT_MIN,
    -100,
    -1,
    0,
    1,
    100,
    INT_MAX,
    INT_MAX + 1,
    LONG_MAX - 100,
    LONG_MAX - 1,
    LONG_MAX,
)
_FLOAT_EDGES = (
    math.nan,
    -0.0,
    0.0,
    math.inf,
    -math.inf,
    F32_MAX,
    -F32_MAX,
    1.401298464324817e-45,
    -7.0,
    1.0,
    0.5,
)
_DOUBLE_EDGES = (
    math.nan,
    -0.0,
    0.0,
    math.inf,
    -math.inf,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    5e-324,
    -7.0,
    1.0,
    0.1,
)
_DATE_EDGES = (INT_MIN, INT_MIN + 1, -719163, -719162, -366, -1, 0, 1, 2932896, 2932897, INT_MAX)
_TIME_EDGES = (0, 1, 43_200_000_000, US_PER_DAY - 1)
_TS_EDGES = (
    LONG_MIN,
    LONG_MIN + 1,
    -62_135_596_800_000_001,  # just before 0001-01-01
    -US_PER_DAY - 1,
    -US_PER_HOUR,
    -1,
    0,
    1,
    US_PER_HOUR,
    253_402_300_800_000_000,  # 10000-01-01
    2**31 * US_PER_HOUR,  # the first hour beyond an int
    LONG_MAX - 1,
    LONG_MAX,
)
_TS_NS_EDGES = (LONG_MIN, LONG_MIN + 1, -1001, -1000, -1, 0, 1, 999, 1000, LONG_MAX)
_STRING_EDGES = (
    "",
    "a",
    "ab",
    "abc",
    "b",
    "a" * 17,
    "a" * 40,
    "\U0010ffff" * 17,
    "\U0010ffff",
    "é",
    "\x00",
    "z%_'",
)
_BINARY_EDGES = (b"", b"\x00", b"a", b"ab", b"\xff" * 17, b"\xff", b"\x00" * 20)
_FIXED_EDGES = (b"\x00" * 4, b"\xff" * 4, b"abcd", b"abce")
_UUID_EDGES = (uuid.UUID(int=0), uuid.UUID(int=2**128 - 1), uuid.UUID(int=2**127))


def _ints(lo: int, hi: int, edges: Sequence[int]) -> st.SearchStrategy[int]:
    return _mix(edges, st.integers(-300, 300), st.integers(lo, hi))


_WIDE = decimal.Context(prec=100)


def decimal_column(precision: int, scale: int) -> Column:
    limit = 10**precision - 1
    unit = Decimal(1).scaleb(-scale)

    def d(unscaled: int) -> Decimal:
        return Decimal(unscaled).scaleb(-scale, _WIDE)

    edges = [d(limit), d(-limit), d(0), d(1), d(-1), d(min(limit, 10**scale))]
    return Column(
        "dec",
        DecimalType(precision, scale),
        _mix(
            edges,
            st.integers(-limit, limit).map(d),
            st.integers(-min(limit, 300), min(limit, 300)).map(d),
        ),
        tuple(edges),
        widths=(1, 3, 10, 1000),
        extra_literals=(d(limit + 1), d(-limit - 1), unit),
    )


#: Days and microseconds of 0001-01-01 and 9999-12-31 (23:59:59.999999): what Spark
#: reads and writes.
SPARK_DAYS = (-719_162, 2_932_896)
SPARK_MICROS = (-62_135_596_800_000_000, 253_402_300_799_999_999)


def _within(edges: Sequence[int], lo: int, hi: int) -> tuple[int, ...]:
    return tuple(sorted({min(max(e, lo), hi) for e in edges}))


def columns(format_version: int, precision: int, scale: int, spark: bool = False) -> list[Column]:
    """The columns of a random table (besides ``id``); with ``spark`` dates and
    timestamps stay within the years 1 to 9999, which Spark can hold."""
    days = SPARK_DAYS if spark else (INT_MIN, INT_MAX)
    micros = SPARK_MICROS if spark else (LONG_MIN, LONG_MAX)
    date_edges = _within(_DATE_EDGES, *days)
    ts_edges = _within(_TS_EDGES, *micros)
    out = [
        Column("bo", BOOLEAN, st.booleans(), (True, False)),
        Column(
            "i",
            INT,
            _ints(INT_MIN, INT_MAX, _INT_EDGES),
            _INT_EDGES,
            widths=(1, 3, 10, 100, 2**30 + 1, INT_MAX - 1, INT_MAX),
            extra_literals=(INT_MIN - 1, INT_MAX + 1, 2**40, -(2**40)),
        ),
        Column(
            "l",
            LONG,
            _ints(LONG_MIN, LONG_MAX, _LONG_EDGES),
            _LONG_EDGES,
            widths=(1, 7, 100, INT_MAX),
            extra_literals=(LONG_MIN - 1, LONG_MAX + 1),
        ),
        Column(
            "f",
            FLOAT,
            _mix(_FLOAT_EDGES, st.floats(width=32), st.integers(-5, 5).map(float)),
            _FLOAT_EDGES,
            extra_literals=(0.1, -0.0, 1e-46),
        ),
        Column(
            "d",
            DOUBLE,
            _mix(_DOUBLE_EDGES, st.floats(), st.integers(-5, 5).map(float)),
            _DOUBLE_EDGES,
        ),
        decimal_column(precision, scale),
        Column("dt", DATE, _ints(*days, date_edges), date_edges),
        Column(
            "tm",
            TIME,
            _mix(_TIME_EDGES, st.integers(0, US_PER_DAY - 1)),
            _TIME_EDGES,
        ),
        Column("ts", TIMESTAMP, _ints(*micros, ts_edges), ts_edges),
        Column("tz", TIMESTAMPTZ, _ints(*micros, ts_edges), ts_edges),
        Column(
            "s",
            STRING,
            _mix(_STRING_EDGES, st.text(max_size=20), st.text("ab\U0010ffff", max_size=5)),
            _STRING_EDGES,
            widths=(1, 2, 3, 17),
        ),
        Column(
            "bi",
            BINARY,
            _mix(_BINARY_EDGES, st.binary(max_size=20), st.binary(max_size=2)),
            _BINARY_EDGES,
            widths=(1, 2, 17),
        ),
        Column(
            "fx",
            FixedType(4),
            _mix(_FIXED_EDGES, st.binary(min_size=4, max_size=4)),
            _FIXED_EDGES,
        ),
        Column("u", UUID, _mix(_UUID_EDGES, st.uuids()), _UUID_EDGES),
    ]
    if format_version >= 3:
        out += [
            Column("tn", TIMESTAMP_NS, _ints(LONG_MIN, LONG_MAX, _TS_NS_EDGES), _TS_NS_EDGES, 3),
            Column(
                "tzn",
                TIMESTAMPTZ_NS,
                _ints(LONG_MIN, LONG_MAX, _TS_NS_EDGES),
                _TS_NS_EDGES,
                3,
            ),
        ]
    return out


Row = dict[str, Any]


@st.composite
def rows(draw: st.DrawFn, cols: Sequence[Column], start_id: int, max_rows: int) -> list[Row]:
    """Rows with ids from ``start_id``; every column but ``id`` is nullable. Many
    values come from a few drawn per column (in half the columns all of them), so
    that files and row groups often hold one value (min = max) next to nulls or NaN."""
    values = {}
    for c in cols:
        pool = draw(st.lists(c.values, min_size=1, max_size=3))
        if c.floating and draw(st.booleans()):
            pool.append(math.nan)  # NaN next to a single value: Parquet min = max
        if draw(st.booleans()):  # only the few values (and nulls)
            values[c.name] = st.one_of(st.none(), st.sampled_from(pool))
        else:
            values[c.name] = st.one_of(st.none(), st.sampled_from(pool), c.values)
    row = st.fixed_dictionaries(values)
    n = draw(st.integers(0, max_rows))
    drawn = draw(st.lists(row, min_size=n, max_size=n))
    return [{"id": start_id + i, **r} for i, r in enumerate(drawn)]


# -- filters ------------------------------------------------------------------------------

# operation names as in neve.expressions.Operation
COMPARISONS = ("lt", "lt_eq", "gt", "gt_eq")


@dataclass(frozen=True)
class Pred:
    op: str
    column: Column
    values: tuple[Any, ...] = ()
    as_like: bool = False  # starts_with written as LIKE text and parsed

    def __str__(self) -> str:
        return f"{self.column.name} {self.op} {self.values!r}"


@dataclass(frozen=True)
class Node:
    kind: str  # "and", "or", "not"
    children: tuple[Filter, ...] = field(default=())

    def __str__(self) -> str:
        if self.kind == "not":
            return f"NOT ({self.children[0]})"
        return "(" + f" {self.kind.upper()} ".join(map(str, self.children)) + ")"


Filter = Pred | Node


def _literal(c: Column, v: Any) -> Any:
    """The literal value the oracle compares with: float literals of a float column
    are rounded to 32 bits."""
    return f32(v) if c.type == FLOAT else v


def _key(c: Column, v: Any) -> Any:
    return v.bytes if isinstance(v, uuid.UUID) else v


def eval_pred(p: Pred, row: Row) -> bool | None:
    """Three-valued result of one predicate on one row (module docstring)."""
    v = row.get(p.column.name)
    op = p.op
    if op == "is_null":
        return v is None
    if op == "not_null":
        return v is not None
    if op == "is_nan":
        return is_nan(v)
    if op == "not_nan":
        return not is_nan(v)
    negated = op in ("not_eq", "not_in", "not_starts_with")
    if v is None or is_nan(v):
        if op in COMPARISONS:
            return None
        if op in ("starts_with", "not_starts_with") and v is not None:
            raise AssertionError("starts_with on a float column")
        return negated
    key = _key(p.column, v)
    lits = [_key(p.column, _literal(p.column, x)) for x in p.values]
    if op in ("eq", "not_eq", "in", "not_in"):
        found = any(key == lit for lit in lits)
        return not found if negated else found
    if op in ("starts_with", "not_starts_with"):
        found = key.startswith(lits[0])
        return not found if negated else found
    lit = lits[0]
    if op == "lt":
        return bool(key < lit)
    if op == "lt_eq":
        return bool(key <= lit)
    if op == "gt":
        return bool(key > lit)
    if op == "gt_eq":
        return bool(key >= lit)
    raise AssertionError(op)


def evaluate(f: Filter, row: Row) -> bool | None:
    """Kleene three-valued result of a filter on a row."""
    if isinstance(f, Pred):
        return eval_pred(f, row)
    results = [evaluate(c, row) for c in f.children]
    if f.kind == "not":
        r = results[0]
        return None if r is None else not r
    if f.kind == "and":
        if any(r is False for r in results):
            return False
        return None if any(r is None for r in results) else True
    if any(r is True for r in results):
        return True
    return None if any(r is None for r in results) else False


def matches(f: Filter, all_rows: Sequence[Row]) -> set[int]:
    """Ids of the rows the filter matches (result TRUE)."""
    return {r["id"] for r in all_rows if evaluate(f, r) is True}


_BUILDERS: dict[str, Callable[..., BooleanExpression]] = {
    "is_null": E.is_null,
    "not_null": E.not_null,
    "is_nan": E.is_nan,
    "not_nan": E.not_nan,
    "lt": E.less_than,
    "lt_eq": E.less_than_or_equal,
    "gt": E.greater_than,
    "gt_eq": E.greater_than_or_equal,
    "eq": E.equal,
    "not_eq": E.not_equal,
    "starts_with": E.starts_with,
    "not_starts_with": E.not_starts_with,
}


def _like(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return "'" + escaped.replace("'", "''") + "%'"


def to_neve(f: Filter) -> BooleanExpression:
    """The filter as a neve expression, built with the public builders (and the
    parser for LIKE)."""
    if isinstance(f, Node):
        parts = [to_neve(c) for c in f.children]
        if f.kind == "not":
            return E.not_(parts[0])
        return E.and_(*parts) if f.kind == "and" else E.or_(*parts)
    name = f.column.name
    if f.op in ("in", "not_in"):
        return (E.is_in if f.op == "in" else E.not_in)(name, f.values)
    if f.op in ("is_null", "not_null", "is_nan", "not_nan"):
        return _BUILDERS[f.op](name)
    if f.as_like:
        negation = "NOT " if f.op == "not_starts_with" else ""
        return E.parse(f"{name} {negation}LIKE {_like(f.values[0])}")
    return _BUILDERS[f.op](name, f.values[0])


def _ops(c: Column) -> list[str]:
    ops = ["is_null", "not_null", "eq", "not_eq", *COMPARISONS, "in", "not_in"]
    if c.floating:
        ops += ["is_nan", "not_nan", "is_nan", "not_nan"]
    else:
        ops.append("is_nan")  # binds to false on other types
    if c.type == STRING:
        ops += ["starts_with", "not_starts_with", "starts_with", "not_starts_with"]
    return ops


@st.composite
def predicates(draw: st.DrawFn, cols: Sequence[Column], table_rows: Sequence[Row]) -> Pred:
    c = draw(st.sampled_from(list(cols)))
    op = draw(st.sampled_from(_ops(c)))
    if op in ("is_null", "not_null", "is_nan", "not_nan"):
        return Pred(op, c)
    seen = [r[c.name] for r in table_rows if r.get(c.name) is not None]
    pool = [v for v in [*seen, *c.edges, *c.extra_literals] if not is_nan(v)]
    if op in ("starts_with", "not_starts_with"):
        prefix = draw(
            st.one_of(
                st.sampled_from(pool).flatmap(
                    lambda s: st.integers(0, len(s)).map(lambda n: s[:n])
                ),
                st.text(max_size=3),
            )
        )
        return Pred(op, c, (prefix,), as_like=draw(st.booleans()))
    if op in ("in", "not_in"):
        values = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4))
        return Pred(op, c, tuple(values))
    return Pred(op, c, (draw(st.sampled_from(pool)),))


def filters(cols: Sequence[Column], table_rows: Sequence[Row]) -> st.SearchStrategy[Filter]:
    """Random filters of up to three levels of AND / OR / NOT over the columns."""
    leaf = predicates(cols, table_rows)
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.tuples(inner).map(lambda t: Node("not", t)),
            st.tuples(inner, inner).map(lambda t: Node("and", t)),
            st.tuples(inner, inner).map(lambda t: Node("or", t)),
        ),
        max_leaves=4,
    )
