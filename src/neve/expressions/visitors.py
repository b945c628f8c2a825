"""Visiting bound expression trees, and pushing NOT down to the predicates.

Every algorithm over bound filters in neve (the row, partition-summary and metrics
evaluators, residuals, projections, the pyarrow and Spark converters) is a
:class:`BoundExpressionVisitor`, and :func:`visit` is the one walk they all share. It
decides how the nodes compose: ``NOT`` is pushed down to the predicates first (this
is how NOT is defined for filters, see :mod:`neve.expressions.expressions`, and why a
visitor has no method for it: "might match" cannot be negated), the constants and the
predicates are the leaves, and ``And``/``Or`` are built from the results of both
children, left before right. A visitor says only what its results are for the leaves
and how two of them combine. :class:`BoundPredicateVisitor` adds one method per
predicate operation; :class:`ClosureCompiler` is the visitor whose results are tests
``S -> bool``, its ``and``/``or`` short-circuiting from left to right.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
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

__all__ = [
    "BoundExpressionVisitor",
    "BoundPredicateVisitor",
    "ClosureCompiler",
    "references",
    "rewrite_not",
    "visit",
]

T = TypeVar("T")
S = TypeVar("S")


class BoundExpressionVisitor(ABC, Generic[T]):
    """An algorithm over bound, NOT-free filters, one result per node.

    :func:`visit` calls :meth:`visit_true` and :meth:`visit_false` for the constants,
    :meth:`visit_predicate` for each predicate, and :meth:`visit_and` /
    :meth:`visit_or` with the results of both children.
    """

    @abstractmethod
    def visit_true(self) -> T: ...

    @abstractmethod
    def visit_false(self) -> T: ...

    @abstractmethod
    def visit_and(self, left: T, right: T) -> T: ...

    @abstractmethod
    def visit_or(self, left: T, right: T) -> T: ...

    @abstractmethod
    def visit_predicate(self, pred: BoundPredicate) -> T: ...


class BoundPredicateVisitor(BoundExpressionVisitor[T]):
    """A visitor with one method per predicate operation.

    :meth:`visit_predicate` dispatches on the operation: unary ones get the reference,
    comparisons and ``starts_with`` the literal, ``in``/``not_in`` the literals
    (distinct and sorted). A subclass may still override :meth:`visit_predicate` to
    treat some predicates alike before dispatching.
    """

    def visit_predicate(self, pred: BoundPredicate) -> T:
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
            return self.visit_in(ref, pred.literals)
        if op is Operation.NOT_IN:
            return self.visit_not_in(ref, pred.literals)
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

    @abstractmethod
    def visit_is_null(self, ref: BoundReference) -> T: ...

    @abstractmethod
    def visit_not_null(self, ref: BoundReference) -> T: ...

    @abstractmethod
    def visit_is_nan(self, ref: BoundReference) -> T: ...

    @abstractmethod
    def visit_not_nan(self, ref: BoundReference) -> T: ...

    @abstractmethod
    def visit_lt(self, ref: BoundReference, lit: Any) -> T: ...

    @abstractmethod
    def visit_lt_eq(self, ref: BoundReference, lit: Any) -> T: ...

    @abstractmethod
    def visit_gt(self, ref: BoundReference, lit: Any) -> T: ...

    @abstractmethod
    def visit_gt_eq(self, ref: BoundReference, lit: Any) -> T: ...

    @abstractmethod
    def visit_eq(self, ref: BoundReference, lit: Any) -> T: ...

    @abstractmethod
    def visit_not_eq(self, ref: BoundReference, lit: Any) -> T: ...

    @abstractmethod
    def visit_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> T: ...

    @abstractmethod
    def visit_not_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> T: ...

    @abstractmethod
    def visit_starts_with(self, ref: BoundReference, lit: Any) -> T: ...

    @abstractmethod
    def visit_not_starts_with(self, ref: BoundReference, lit: Any) -> T: ...


def _always(subject: object) -> bool:
    return True


def _never(subject: object) -> bool:
    return False


class ClosureCompiler(BoundPredicateVisitor[Callable[[S], bool]]):
    """Compiles a filter into one test ``S -> bool`` made of nested closures.

    The tree is walked once, at compile time; judging an ``S`` then costs a few calls.
    ``And`` and ``Or`` evaluate the left test first and the right one only when it can
    change the answer; the constants are tests that ignore their argument. A subclass
    supplies the per-operation tests (rows, partition summaries, file metrics).
    """

    def compile(self, expr: BooleanExpression) -> Callable[[S], bool]:
        """The test for a bound ``expr`` (NOT is pushed down by :func:`visit`)."""
        return visit(expr, self)

    def visit_true(self) -> Callable[[S], bool]:
        return _always

    def visit_false(self) -> Callable[[S], bool]:
        return _never

    def visit_and(
        self, left: Callable[[S], bool], right: Callable[[S], bool]
    ) -> Callable[[S], bool]:
        return lambda subject: left(subject) and right(subject)

    def visit_or(
        self, left: Callable[[S], bool], right: Callable[[S], bool]
    ) -> Callable[[S], bool]:
        return lambda subject: left(subject) or right(subject)


def visit(expr: BooleanExpression, visitor: BoundExpressionVisitor[T]) -> T:
    """Walk the bound ``expr`` with ``visitor`` and return its result for the root.

    A ``Not`` is replaced by its child with NOT pushed down (:func:`rewrite_not`);
    an unbound predicate raises :class:`ExpressionError`.
    """
    if isinstance(expr, BoundPredicate):
        return visitor.visit_predicate(expr)
    if isinstance(expr, And):
        return visitor.visit_and(visit(expr.left, visitor), visit(expr.right, visitor))
    if isinstance(expr, Or):
        return visitor.visit_or(visit(expr.left, visitor), visit(expr.right, visitor))
    if expr is ALWAYS_TRUE:
        return visitor.visit_true()
    if expr is ALWAYS_FALSE:
        return visitor.visit_false()
    if isinstance(expr, Not):
        return visit(_negate(expr.child), visitor)
    if isinstance(expr, UnboundPredicate):
        raise ExpressionError(
            f"the filter {expr} is not bound; bind it to a schema first (neve.expressions.bind)"
        )
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
