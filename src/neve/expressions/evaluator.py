"""Evaluating a filter on one row: a partition tuple or a row of (nested) tuples.

The expression is compiled once into nested Python closures (a
:class:`~neve.expressions.visitors.ClosureCompiler`), so evaluating it per manifest
entry costs a few function calls and no tree walk. Rows are tuples in struct
order, holding values in neve's representation (dates as days, and so on).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from neve.expressions.binding import bind
from neve.expressions.expressions import BooleanExpression, BoundPredicate, BoundReference
from neve.expressions.visitors import ClosureCompiler, rewrite_not
from neve.spec.schema import Schema
from neve.spec.types import StructType

__all__ = ["PartitionEvaluator", "compile_expression", "compile_predicate", "evaluator"]

RowTest = Callable[[tuple[Any, ...]], bool]


def evaluator(
    struct: StructType | Schema, expr: BooleanExpression, case_sensitive: bool = True
) -> RowTest:
    """A function ``row -> bool`` telling whether ``expr`` holds on a row of ``struct``.

    ``expr`` may be unbound (it is bound to ``struct``) or already bound to it.
    """
    return compile_expression(bind(struct, expr, case_sensitive))


class PartitionEvaluator:
    """Evaluates a filter on partition tuples of a partition type (see :func:`evaluator`)."""

    __slots__ = ("_test", "expr")

    def __init__(
        self, struct: StructType | Schema, expr: BooleanExpression, case_sensitive: bool = True
    ) -> None:
        self.expr = rewrite_not(bind(struct, expr, case_sensitive))
        self._test = compile_expression(self.expr)

    def eval(self, row: tuple[Any, ...]) -> bool:
        return self._test(row)

    def __call__(self, row: tuple[Any, ...]) -> bool:
        return self._test(row)


def compile_expression(expr: BooleanExpression) -> RowTest:
    """Compile a bound expression into a row test (NOT is pushed down first)."""
    return _ROWS.compile(expr)


def getter(ref: BoundReference) -> Callable[[tuple[Any, ...]], Any]:
    """A fast function returning the referenced value of a row."""
    if len(ref.accessor) == 1:
        pos = ref.accessor[0]
        return lambda row: row[pos]
    return ref.eval


def compile_predicate(pred: BoundPredicate) -> RowTest:
    """A row test for one bound predicate, with the null and NaN rules of the package."""
    return _ROWS.visit_predicate(pred)


class _RowCompiler(ClosureCompiler[tuple[Any, ...]]):
    """The row tests of each operation: only ``not_*`` predicates hold for null."""

    def visit_is_null(self, ref: BoundReference) -> RowTest:
        get = getter(ref)
        return lambda row: get(row) is None

    def visit_not_null(self, ref: BoundReference) -> RowTest:
        get = getter(ref)
        return lambda row: get(row) is not None

    def visit_is_nan(self, ref: BoundReference) -> RowTest:
        get = getter(ref)
        return lambda row: _is_nan(get(row))

    def visit_not_nan(self, ref: BoundReference) -> RowTest:
        get = getter(ref)
        return lambda row: not _is_nan(get(row))

    def visit_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> RowTest:
        get, values = getter(ref), frozenset(lits)
        return lambda row: (v := get(row)) is not None and v in values

    def visit_not_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> RowTest:
        get, values = getter(ref), frozenset(lits)
        return lambda row: (v := get(row)) is None or v not in values

    def visit_lt(self, ref: BoundReference, lit: Any) -> RowTest:
        get = getter(ref)
        return lambda row: (v := get(row)) is not None and v < lit

    def visit_lt_eq(self, ref: BoundReference, lit: Any) -> RowTest:
        get = getter(ref)
        return lambda row: (v := get(row)) is not None and v <= lit

    def visit_gt(self, ref: BoundReference, lit: Any) -> RowTest:
        get = getter(ref)
        return lambda row: (v := get(row)) is not None and v > lit

    def visit_gt_eq(self, ref: BoundReference, lit: Any) -> RowTest:
        get = getter(ref)
        return lambda row: (v := get(row)) is not None and v >= lit

    def visit_eq(self, ref: BoundReference, lit: Any) -> RowTest:
        get = getter(ref)
        return lambda row: (v := get(row)) is not None and v == lit

    def visit_not_eq(self, ref: BoundReference, lit: Any) -> RowTest:
        get = getter(ref)
        return lambda row: (v := get(row)) is None or v != lit

    def visit_starts_with(self, ref: BoundReference, lit: Any) -> RowTest:
        get = getter(ref)
        return lambda row: (v := get(row)) is not None and v.startswith(lit)

    def visit_not_starts_with(self, ref: BoundReference, lit: Any) -> RowTest:
        get = getter(ref)
        return lambda row: (v := get(row)) is None or not v.startswith(lit)


_ROWS = _RowCompiler()


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)
