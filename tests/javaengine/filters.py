"""One filter, three renderings: a neve expression, Spark SQL that selects the same rows
on Iceberg-Java, and a row-by-row oracle in plain Python.

All three follow neve's row semantics (:mod:`neve.expressions.expressions`): ``NOT`` is
pushed down to the predicates first (``NOT (x < 5)`` is ``x >= 5``); a null satisfies
only ``is_null``, ``not_nan``, ``!=``, ``NOT IN`` and ``NOT LIKE``; a NaN satisfies only
``not_null``, ``is_nan``, ``!=`` and ``NOT IN`` (comparisons with NaN are false, as in
IEEE 754); -0.0 equals 0.0. Spark SQL has other rules (SQL's three-valued logic drops
nulls from ``!=``; Spark orders NaN above every number and calls ``NaN = NaN`` true), so
:func:`spark_sql` spells neve's meaning out: ``(x != v OR x IS NULL)``,
``(x > v AND NOT isnan(x))``. What Iceberg-Java receives is still the pushed-down form
of each predicate, so its pruning is exercised.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from javaengine import IcebergJava
from javaengine.sql import literal
from neve.expressions import expressions as E

__all__ = [
    "And",
    "Filter",
    "Not",
    "Or",
    "P",
    "java_ids",
    "matches",
    "negate",
    "neve_expr",
    "spark_sql",
]

FLOAT_TYPES = ("float", "double")


@dataclass(frozen=True)
class P:
    """A predicate: ``op`` one of lt, le, gt, ge, eq, ne, in, not_in, is_null, not_null,
    is_nan, not_nan, starts_with, not_starts_with."""

    op: str
    col: str
    values: tuple[Any, ...] = ()


@dataclass(frozen=True)
class And:
    left: Filter
    right: Filter


@dataclass(frozen=True)
class Or:
    left: Filter
    right: Filter


@dataclass(frozen=True)
class Not:
    child: Filter


Filter = P | And | Or | Not

_NEGATED = {
    "lt": "ge",
    "ge": "lt",
    "le": "gt",
    "gt": "le",
    "eq": "ne",
    "ne": "eq",
    "in": "not_in",
    "not_in": "in",
    "is_null": "not_null",
    "not_null": "is_null",
    "is_nan": "not_nan",
    "not_nan": "is_nan",
    "starts_with": "not_starts_with",
    "not_starts_with": "starts_with",
}


def negate(f: Filter) -> Filter:
    """``NOT f`` pushed down to the predicates (De Morgan; each predicate negated)."""
    if isinstance(f, P):
        return P(_NEGATED[f.op], f.col, f.values)
    if isinstance(f, And):
        return Or(negate(f.left), negate(f.right))
    if isinstance(f, Or):
        return And(negate(f.left), negate(f.right))
    return push_not(f.child)


def push_not(f: Filter) -> Filter:
    """``f`` without ``Not`` nodes."""
    if isinstance(f, P):
        return f
    if isinstance(f, And):
        return And(push_not(f.left), push_not(f.right))
    if isinstance(f, Or):
        return Or(push_not(f.left), push_not(f.right))
    return negate(f.child)


# -- neve -------------------------------------------------------------------------------

_BUILDERS: dict[str, Callable[..., E.BooleanExpression]] = {
    "lt": E.less_than,
    "le": E.less_than_or_equal,
    "gt": E.greater_than,
    "ge": E.greater_than_or_equal,
    "eq": E.equal,
    "ne": E.not_equal,
    "starts_with": E.starts_with,
    "not_starts_with": E.not_starts_with,
}


def neve_expr(f: Filter) -> E.BooleanExpression:
    """The filter as neve's expression (``Not`` kept: neve pushes it down itself)."""
    if isinstance(f, And):
        return E.and_(neve_expr(f.left), neve_expr(f.right))
    if isinstance(f, Or):
        return E.or_(neve_expr(f.left), neve_expr(f.right))
    if isinstance(f, Not):
        return E.not_(neve_expr(f.child))
    if f.op in ("is_null", "not_null", "is_nan", "not_nan"):
        unary: Callable[[str], E.BooleanExpression] = getattr(E, f.op)
        return unary(f.col)
    if f.op == "in":
        return E.is_in(f.col, f.values)
    if f.op == "not_in":
        return E.not_in(f.col, f.values)
    return _BUILDERS[f.op](f.col, f.values[0])


# -- Spark SQL --------------------------------------------------------------------------


def spark_sql(f: Filter, types: Mapping[str, str]) -> str:
    """A Spark SQL condition selecting exactly the rows neve's semantics select."""
    return _sql(push_not(f), types)


def _sql(f: Filter, types: Mapping[str, str]) -> str:
    if isinstance(f, And):
        return f"({_sql(f.left, types)} AND {_sql(f.right, types)})"
    if isinstance(f, Or):
        return f"({_sql(f.left, types)} OR {_sql(f.right, types)})"
    assert isinstance(f, P)
    t = types[f.col]
    c = f"`{f.col}`"
    lits = [literal(v, t) for v in f.values]
    floating = t in FLOAT_TYPES
    if f.op == "is_null":
        return f"{c} IS NULL"
    if f.op == "not_null":
        return f"{c} IS NOT NULL"
    if f.op == "is_nan":
        return f"isnan({c})"  # false for null
    if f.op == "not_nan":
        return f"NOT isnan({c})"  # true for null
    if f.op in ("lt", "le", "eq"):
        op = {"lt": "<", "le": "<=", "eq": "="}[f.op]
        return f"{c} {op} {lits[0]}"  # Spark: NaN is above every number, so never below
    if f.op in ("gt", "ge"):
        op = ">" if f.op == "gt" else ">="
        cond = f"{c} {op} {lits[0]}"
        return f"({cond} AND NOT isnan({c}))" if floating else cond
    if f.op == "ne":
        return f"({c} != {lits[0]} OR {c} IS NULL)"
    if f.op == "in":
        return f"{c} IN ({', '.join(lits)})"
    if f.op == "not_in":
        return f"({c} NOT IN ({', '.join(lits)}) OR {c} IS NULL)"
    prefix = str(f.values[0])
    if any(ch in prefix for ch in "%_\\'"):
        raise ValueError(f"keep LIKE prefixes plain, got {prefix!r}")
    if f.op == "starts_with":
        return f"{c} LIKE '{prefix}%'"
    if f.op == "not_starts_with":
        return f"({c} NOT LIKE '{prefix}%' OR {c} IS NULL)"
    raise ValueError(f"unknown op {f.op!r}")


def java_ids(
    java: IcebergJava, table: str, filters: Mapping[str, Filter], types: Mapping[str, str]
) -> dict[str, Counter[Any]]:
    """The ``id`` of each row every filter selects through Iceberg-Java, in one statement:
    each branch of the ``UNION ALL`` is a scan of its own with its filter pushed down."""
    names = list(filters)
    branches = [
        f"SELECT {k} AS k, id FROM {table} WHERE {spark_sql(filters[name], types)}"
        for k, name in enumerate(names)
    ]
    out: dict[str, Counter[Any]] = {name: Counter() for name in names}
    for k, row_id in java.sql(" UNION ALL ".join(branches)).rows:
        out[names[k]][row_id] += 1
    return out


# -- the oracle -------------------------------------------------------------------------


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _comparable(value: Any, lit: Any) -> tuple[Any, Any]:
    both = isinstance(value, dt.datetime) and isinstance(lit, dt.datetime)
    if both and (value.tzinfo is None) != (lit.tzinfo is None):
        raise ValueError(f"compare aware with aware, naive with naive: {value!r} {lit!r}")
    return value, lit


def matches(f: Filter, row: Mapping[str, Any]) -> bool:
    """Does ``row`` match ``f`` under neve's row semantics?"""
    return _match(push_not(f), row)


def _match(f: Filter, row: Mapping[str, Any]) -> bool:
    if isinstance(f, And):
        return _match(f.left, row) and _match(f.right, row)
    if isinstance(f, Or):
        return _match(f.left, row) or _match(f.right, row)
    assert isinstance(f, P)
    v = row[f.col]
    op = f.op
    if op == "is_null":
        return v is None
    if op == "not_null":
        return v is not None
    if op == "is_nan":
        return _is_nan(v)
    if op == "not_nan":
        return not _is_nan(v)
    if op in ("ne", "not_in", "not_starts_with"):
        return v is None or not _match(P(_NEGATED[op], f.col, f.values), row)
    if v is None:
        return False
    if op == "starts_with":
        return isinstance(v, str) and v.startswith(f.values[0])
    if op == "in":
        return any(_match(P("eq", f.col, (x,)), row) for x in f.values)
    a, b = _comparable(v, f.values[0])
    # Python compares floats as IEEE 754 does: NaN compares false, -0.0 == 0.0.
    if op == "lt":
        return bool(a < b)
    if op == "le":
        return bool(a <= b)
    if op == "gt":
        return bool(a > b)
    if op == "ge":
        return bool(a >= b)
    if op == "eq":
        return bool(a == b)
    raise ValueError(f"unknown op {op!r}")
