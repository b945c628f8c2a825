"""Evaluating a filter on one row: a partition tuple or a row of (nested) tuples.

The expression is compiled once into nested Python closures, so evaluating it per
manifest entry costs a few function calls and no tree walk. Rows are tuples in struct
order, holding values in neve's representation (dates as days, and so on).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from neve.errors import ExpressionError
from neve.expressions.binding import bind
from neve.expressions.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    And,
    BooleanExpression,
    BoundPredicate,
    BoundReference,
    Operation,
    Or,
)
from neve.expressions.visitors import rewrite_not
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
    return _compile(rewrite_not(expr))


def _compile(expr: BooleanExpression) -> RowTest:
    if expr is ALWAYS_TRUE:
        return _true
    if expr is ALWAYS_FALSE:
        return _false
    if isinstance(expr, And):
        left, right = _compile(expr.left), _compile(expr.right)
        return lambda row: left(row) and right(row)
    if isinstance(expr, Or):
        left, right = _compile(expr.left), _compile(expr.right)
        return lambda row: left(row) or right(row)
    if isinstance(expr, BoundPredicate):
        return compile_predicate(expr)
    raise ExpressionError(f"cannot evaluate {expr}: bind the filter to the row's struct type first")


def _true(row: tuple[Any, ...]) -> bool:
    return True


def _false(row: tuple[Any, ...]) -> bool:
    return False


def getter(ref: BoundReference) -> Callable[[tuple[Any, ...]], Any]:
    """A fast function returning the referenced value of a row."""
    if len(ref.accessor) == 1:
        pos = ref.accessor[0]
        return lambda row: row[pos]
    return ref.eval


def compile_predicate(pred: BoundPredicate) -> RowTest:
    """A row test for one bound predicate, with the null and NaN rules of the package."""
    get = getter(pred.term)
    op = pred.op
    if op is Operation.IS_NULL:
        return lambda row: get(row) is None
    if op is Operation.NOT_NULL:
        return lambda row: get(row) is not None
    if op is Operation.IS_NAN:
        return lambda row: _is_nan(get(row))
    if op is Operation.NOT_NAN:
        return lambda row: not _is_nan(get(row))
    if op is Operation.IN:
        values = pred.literal_set
        return lambda row: (v := get(row)) is not None and v in values
    if op is Operation.NOT_IN:
        values = pred.literal_set
        return lambda row: (v := get(row)) is None or v not in values
    lit = pred.literal
    if op is Operation.LT:
        return lambda row: (v := get(row)) is not None and v < lit
    if op is Operation.LT_EQ:
        return lambda row: (v := get(row)) is not None and v <= lit
    if op is Operation.GT:
        return lambda row: (v := get(row)) is not None and v > lit
    if op is Operation.GT_EQ:
        return lambda row: (v := get(row)) is not None and v >= lit
    if op is Operation.EQ:
        return lambda row: (v := get(row)) is not None and v == lit
    if op is Operation.NOT_EQ:
        return lambda row: (v := get(row)) is None or v != lit
    if op is Operation.STARTS_WITH:
        return lambda row: (v := get(row)) is not None and v.startswith(lit)
    return lambda row: (v := get(row)) is None or not v.startswith(lit)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)
