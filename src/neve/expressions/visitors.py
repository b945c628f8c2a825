"""Visiting expression trees, and pushing NOT down to the predicates.

:class:`BoundExpressionVisitor` is the base of algorithms over bound expressions: a
subclass implements one method per node kind and per predicate operation, and
:func:`visit` walks the tree bottom-up. :func:`rewrite_not` removes every ``Not`` node
by negating what is below it; all evaluators in this package run on its output.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from neve.errors import ExpressionError
from neve.expressions.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    BoundReference,
    Not,
    Operation,
    Or,
    UnboundPredicate,
    and_,
    or_,
)

__all__ = ["BoundExpressionVisitor", "references", "rewrite_not", "visit"]

T = TypeVar("T")


class BoundExpressionVisitor(Generic[T]):
    """Base class of visitors over bound expressions.

    Subclasses implement the node methods and the per-operation predicate methods
    they need; :meth:`visit_predicate` dispatches on the operation. A visitor that
    meets an unbound predicate raises :class:`ExpressionError`.
    """

    def visit_true(self) -> T:
        raise NotImplementedError

    def visit_false(self) -> T:
        raise NotImplementedError

    def visit_not(self, child_result: T) -> T:
        raise NotImplementedError

    def visit_and(self, left_result: T, right_result: T) -> T:
        raise NotImplementedError

    def visit_or(self, left_result: T, right_result: T) -> T:
        raise NotImplementedError

    def visit_predicate(self, pred: BoundPredicate) -> T:
        """Dispatch to the method of ``pred.op`` (override to handle all at once)."""
        op = pred.op
        ref = pred.term
        if op is Operation.IS_NULL:
            return self.visit_is_null(ref)
        if op is Operation.NOT_NULL:
            return self.visit_not_null(ref)
        if op is Operation.IS_NAN:
            return self.visit_is_nan(ref)
        if op is Operation.NOT_NAN:
            return self.visit_not_nan(ref)
        if op is Operation.IN:
            return self.visit_in(ref, pred.literal_set)
        if op is Operation.NOT_IN:
            return self.visit_not_in(ref, pred.literal_set)
        lit = pred.literal
        if op is Operation.LT:
            return self.visit_lt(ref, lit)
        if op is Operation.LT_EQ:
            return self.visit_lt_eq(ref, lit)
        if op is Operation.GT:
            return self.visit_gt(ref, lit)
        if op is Operation.GT_EQ:
            return self.visit_gt_eq(ref, lit)
        if op is Operation.EQ:
            return self.visit_eq(ref, lit)
        if op is Operation.NOT_EQ:
            return self.visit_not_eq(ref, lit)
        if op is Operation.STARTS_WITH:
            return self.visit_starts_with(ref, lit)
        return self.visit_not_starts_with(ref, lit)

    def visit_unbound_predicate(self, pred: UnboundPredicate) -> T:
        raise ExpressionError(
            f"the filter {pred} is not bound; bind it to a schema first (neve.expressions.bind)"
        )

    def visit_is_null(self, ref: BoundReference) -> T:
        raise NotImplementedError

    def visit_not_null(self, ref: BoundReference) -> T:
        raise NotImplementedError

    def visit_is_nan(self, ref: BoundReference) -> T:
        raise NotImplementedError

    def visit_not_nan(self, ref: BoundReference) -> T:
        raise NotImplementedError

    def visit_lt(self, ref: BoundReference, lit: Any) -> T:
        raise NotImplementedError

    def visit_lt_eq(self, ref: BoundReference, lit: Any) -> T:
        raise NotImplementedError

    def visit_gt(self, ref: BoundReference, lit: Any) -> T:
        raise NotImplementedError

    def visit_gt_eq(self, ref: BoundReference, lit: Any) -> T:
        raise NotImplementedError

    def visit_eq(self, ref: BoundReference, lit: Any) -> T:
        raise NotImplementedError

    def visit_not_eq(self, ref: BoundReference, lit: Any) -> T:
        raise NotImplementedError

    def visit_in(self, ref: BoundReference, lits: frozenset[Any]) -> T:
        raise NotImplementedError

    def visit_not_in(self, ref: BoundReference, lits: frozenset[Any]) -> T:
        raise NotImplementedError

    def visit_starts_with(self, ref: BoundReference, lit: Any) -> T:
        raise NotImplementedError

    def visit_not_starts_with(self, ref: BoundReference, lit: Any) -> T:
        raise NotImplementedError


def visit(expr: BooleanExpression, visitor: BoundExpressionVisitor[T]) -> T:
    """Walk ``expr`` bottom-up with ``visitor`` and return the result for the root."""
    if expr is ALWAYS_TRUE:
        return visitor.visit_true()
    if expr is ALWAYS_FALSE:
        return visitor.visit_false()
    if isinstance(expr, BoundPredicate):
        return visitor.visit_predicate(expr)
    if isinstance(expr, And):
        return visitor.visit_and(visit(expr.left, visitor), visit(expr.right, visitor))
    if isinstance(expr, Or):
        return visitor.visit_or(visit(expr.left, visitor), visit(expr.right, visitor))
    if isinstance(expr, Not):
        return visitor.visit_not(visit(expr.child, visitor))
    if isinstance(expr, UnboundPredicate):
        return visitor.visit_unbound_predicate(expr)
    raise ExpressionError(f"cannot visit {type(expr).__name__} {expr!r}: not a filter expression")


def rewrite_not(expr: BooleanExpression) -> BooleanExpression:
    """An equivalent expression without ``Not`` nodes (bound or unbound).

    ``NOT (a AND b)`` becomes ``NOT a OR NOT b`` and ``NOT x < 5`` becomes ``x >= 5``;
    this is how NOT is defined for filters (see :mod:`neve.expressions.expressions`).
    """
    if isinstance(expr, Not):
        return _negate(expr.child)
    if isinstance(expr, And):
        return and_(rewrite_not(expr.left), rewrite_not(expr.right))
    if isinstance(expr, Or):
        return or_(rewrite_not(expr.left), rewrite_not(expr.right))
    if isinstance(expr, (AlwaysTrue, AlwaysFalse, UnboundPredicate, BoundPredicate)):
        return expr
    raise ExpressionError(f"cannot rewrite {type(expr).__name__} {expr!r}: not a filter expression")


def _negate(expr: BooleanExpression) -> BooleanExpression:
    if expr is ALWAYS_TRUE:
        return ALWAYS_FALSE
    if expr is ALWAYS_FALSE:
        return ALWAYS_TRUE
    if isinstance(expr, Not):
        return rewrite_not(expr.child)
    if isinstance(expr, And):
        return or_(_negate(expr.left), _negate(expr.right))
    if isinstance(expr, Or):
        return and_(_negate(expr.left), _negate(expr.right))
    if isinstance(expr, (UnboundPredicate, BoundPredicate)):
        return expr.negate()
    raise ExpressionError(f"cannot negate {type(expr).__name__} {expr!r}: not a filter expression")


def references(expr: BooleanExpression) -> list[BoundReference]:
    """The distinct bound references in ``expr``, in order of first appearance."""
    out: dict[int, BoundReference] = {}
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, BoundPredicate):
            out.setdefault(e.term.field_id, e.term)
        elif isinstance(e, (And, Or)):
            stack.extend((e.right, e.left))
        elif isinstance(e, Not):
            stack.append(e.child)
    return list(out.values())
