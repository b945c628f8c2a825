"""Filters as pyarrow compute expressions, with neve's null and NaN rules.

:func:`to_arrow_expression` converts a filter to a ``pyarrow.compute.Expression`` that
selects exactly the rows the filter matches: NOT is pushed down first, and every
predicate is made two-valued (a null never leaks out of a comparison), so
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
    return _convert(rewrite_not(expr))


def delete_filter(
    expr: BooleanExpression, schema: Schema | None = None, case_sensitive: bool = True
) -> pc.Expression:
    """The rows to keep when deleting the rows that match ``expr``: its exact complement.

    A row for which the filter is not true (including every null case) is kept.
    """
    matches = pc.coalesce(to_arrow_expression(expr, schema, case_sensitive), _FALSE)
    return ~matches


def _convert(expr: BooleanExpression) -> pc.Expression:
    if expr is ALWAYS_TRUE:
        return pc.scalar(True)
    if expr is ALWAYS_FALSE:
        return pc.scalar(False)
    if isinstance(expr, And):
        return _convert(expr.left) & _convert(expr.right)
    if isinstance(expr, Or):
        return _convert(expr.left) | _convert(expr.right)
    if isinstance(expr, BoundPredicate):
        return _predicate(expr)
    raise ExpressionError(f"cannot convert {expr} to a pyarrow expression")


def _field(ref: BoundReference) -> pc.Expression:
    return pc.field(*ref.path)


def _no_null(e: pc.Expression, if_null: bool) -> pc.Expression:
    return pc.coalesce(e, _TRUE if if_null else _FALSE)


def _predicate(pred: BoundPredicate) -> pc.Expression:
    f = _field(pred.term)
    t = pred.term.field_type
    op = pred.op
    if op is Operation.IS_NULL:
        return f.is_null()
    if op is Operation.NOT_NULL:
        return f.is_valid()
    if op is Operation.IS_NAN:
        return _no_null(pc.is_nan(f), False)
    if op is Operation.NOT_NAN:
        return _no_null(~pc.is_nan(f), True)
    if op in (Operation.IN, Operation.NOT_IN):
        values = list(pred.literals)
        if isinstance(t, (FloatType, DoubleType)) and any(v == 0.0 for v in values):
            # Hash-based membership tells -0.0 from 0.0, but they are equal values.
            values = [v for v in values if v != 0.0] + [0.0, -0.0]
        arr = pa.array([_scalar_value(v, t) for v in values], type=_arrow_type(t))
        member = f.isin(arr)
        return _no_null(member, False) if op is Operation.IN else _no_null(~member, True)
    lit = pred.literal
    if op is Operation.STARTS_WITH:
        return _no_null(pc.starts_with(f, pattern=lit), False)
    if op is Operation.NOT_STARTS_WITH:
        return _no_null(~pc.starts_with(f, pattern=lit), True)
    s = pa.scalar(_scalar_value(lit, t), type=_arrow_type(t))
    if op is Operation.LT:
        return _no_null(f < s, False)
    if op is Operation.LT_EQ:
        return _no_null(f <= s, False)
    if op is Operation.GT:
        return _no_null(f > s, False)
    if op is Operation.GT_EQ:
        return _no_null(f >= s, False)
    if op is Operation.EQ:
        return _no_null(f == s, False)
    return _no_null(f != s, True)


def _scalar_value(value: Any, t: IcebergType) -> Any:
    if isinstance(t, UUIDType):
        return value.bytes
    return value


def _arrow_type(t: IcebergType) -> pa.DataType:
    """The Arrow type neve uses for literals of a column type (32-bit offsets suffice)."""
    if not t.is_primitive or isinstance(t, (UnknownType, VariantType)):
        raise ExpressionError(f"cannot compare values of type {t} in pyarrow")
    return to_arrow_type(t, large_types=False)
