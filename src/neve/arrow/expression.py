"""Filters as pyarrow compute expressions, with neve's null and NaN rules.

:func:`to_arrow_expression` converts a filter to a ``pyarrow.compute.Expression`` that
selects exactly the rows the filter matches (a
:class:`~neve.expressions.visitors.BoundPredicateVisitor`): NOT is pushed down first,
and every predicate is made two-valued (a null never leaks out of a comparison), so
``x != 5`` selects rows where ``x`` is null and ``x < 5`` does not, as the metrics
evaluators assume (see :mod:`neve.expressions.expressions`). :func:`delete_filter` is
the exact complement: the rows to keep when deleting by a filter.

Columns are addressed by name, nested struct fields by their path of names.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from neve.arrow.schema import to_arrow_type
from neve.errors import ExpressionError
from neve.expressions.binding import bind
from neve.expressions.expressions import BooleanExpression, BoundReference
from neve.expressions.visitors import BoundPredicateVisitor, visit
from neve.spec.schema import Schema
from neve.spec.types import (
    DoubleType,
    FloatType,
    IcebergType,
    UnknownType,
    UUIDType,
    VariantType,
)

__all__ = ["delete_filter", "to_arrow_expression"]

_TRUE = pa.scalar(True)
_FALSE = pa.scalar(False)


def to_arrow_expression(
    expr: BooleanExpression, schema: Schema | None = None, case_sensitive: bool = True
) -> pc.Expression:
    """The pyarrow expression selecting the rows that match ``expr``.

    ``expr`` may be unbound when ``schema`` is given (it is bound first); the result
    never evaluates to null, so it can be negated safely.
    """
    if schema is not None:
        expr = bind(schema, expr, case_sensitive)
    elif not expr.is_bound:
        raise ExpressionError(
            f"the filter {expr} is not bound; pass the table schema to convert it to pyarrow"
        )
    return visit(expr, _TO_ARROW)


def delete_filter(
    expr: BooleanExpression, schema: Schema | None = None, case_sensitive: bool = True
) -> pc.Expression:
    """The rows to keep when deleting the rows that match ``expr``: its exact complement.

    A row for which the filter is not true (including every null case) is kept.
    """
    matches = pc.coalesce(to_arrow_expression(expr, schema, case_sensitive), _FALSE)
    return ~matches


def _field(ref: BoundReference) -> pc.Expression:
    return pc.field(*ref.path)


def _no_null(e: pc.Expression, if_null: bool) -> pc.Expression:
    return pc.coalesce(e, _TRUE if if_null else _FALSE)


class _ArrowConverter(BoundPredicateVisitor[pc.Expression]):
    """Each predicate as a two-valued pyarrow expression; And and Or as ``&`` and ``|``."""

    def visit_true(self) -> pc.Expression:
        return pc.scalar(True)

    def visit_false(self) -> pc.Expression:
        return pc.scalar(False)

    def visit_and(self, left: pc.Expression, right: pc.Expression) -> pc.Expression:
        return left & right

    def visit_or(self, left: pc.Expression, right: pc.Expression) -> pc.Expression:
        return left | right

    def visit_is_null(self, ref: BoundReference) -> pc.Expression:
        return _field(ref).is_null()

    def visit_not_null(self, ref: BoundReference) -> pc.Expression:
        return _field(ref).is_valid()

    def visit_is_nan(self, ref: BoundReference) -> pc.Expression:
        return _no_null(pc.is_nan(_field(ref)), False)

    def visit_not_nan(self, ref: BoundReference) -> pc.Expression:
        return _no_null(~pc.is_nan(_field(ref)), True)

    def visit_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> pc.Expression:
        return _no_null(_member(ref, lits), False)

    def visit_not_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> pc.Expression:
        return _no_null(~_member(ref, lits), True)

    def visit_starts_with(self, ref: BoundReference, lit: Any) -> pc.Expression:
        return _no_null(pc.starts_with(_field(ref), pattern=lit), False)

    def visit_not_starts_with(self, ref: BoundReference, lit: Any) -> pc.Expression:
        return _no_null(~pc.starts_with(_field(ref), pattern=lit), True)

    def visit_lt(self, ref: BoundReference, lit: Any) -> pc.Expression:
        return _no_null(_field(ref) < _scalar(ref, lit), False)

    def visit_lt_eq(self, ref: BoundReference, lit: Any) -> pc.Expression:
        return _no_null(_field(ref) <= _scalar(ref, lit), False)

    def visit_gt(self, ref: BoundReference, lit: Any) -> pc.Expression:
        return _no_null(_field(ref) > _scalar(ref, lit), False)

    def visit_gt_eq(self, ref: BoundReference, lit: Any) -> pc.Expression:
        return _no_null(_field(ref) >= _scalar(ref, lit), False)

    def visit_eq(self, ref: BoundReference, lit: Any) -> pc.Expression:
        return _no_null(_field(ref) == _scalar(ref, lit), False)

    def visit_not_eq(self, ref: BoundReference, lit: Any) -> pc.Expression:
        return _no_null(_field(ref) != _scalar(ref, lit), True)


_TO_ARROW = _ArrowConverter()


def _member(ref: BoundReference, lits: tuple[Any, ...]) -> pc.Expression:
    """Whether the column's value is one of ``lits`` (null for a null value)."""
    t = ref.field_type
    values = list(lits)
    if isinstance(t, (FloatType, DoubleType)) and any(v == 0.0 for v in values):
        # Hash-based membership tells -0.0 from 0.0, but they are equal values.
        values = [v for v in values if v != 0.0] + [0.0, -0.0]
    arr = pa.array([_scalar_value(v, t) for v in values], type=_arrow_type(t))
    return _field(ref).isin(arr)


def _scalar(ref: BoundReference, lit: Any) -> pa.Scalar:
    t = ref.field_type
    return pa.scalar(_scalar_value(lit, t), type=_arrow_type(t))


def _scalar_value(value: Any, t: IcebergType) -> Any:
    if isinstance(t, UUIDType):
        return value.bytes
    return value


def _arrow_type(t: IcebergType) -> pa.DataType:
    """The Arrow type neve uses for literals of a column type (32-bit offsets suffice)."""
    if not t.is_primitive or isinstance(t, (UnknownType, VariantType)):
        raise ExpressionError(f"cannot compare values of type {t} in pyarrow")
    return to_arrow_type(t, large_types=False)
