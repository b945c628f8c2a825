"""Residual filters: what is left of a row filter for the rows of one partition.

For each predicate of the filter and each partition field of its column, the strict
projection holding on the partition tuple proves the predicate true for every row of
the partition, and the inclusive projection failing proves it false; otherwise the
predicate stays (Iceberg-Java's ``ResidualEvaluator``). A scan task carries the residual
so that readers filter only what the partition values did not already decide.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from neve.errors import ExpressionError
from neve.expressions.binding import bind
from neve.expressions.evaluator import compile_expression
from neve.expressions.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    Or,
    and_,
    or_,
)
from neve.expressions.projection import StrictProjection, project_inclusive, project_strict
from neve.expressions.visitors import rewrite_not
from neve.spec.partition import PartitionSpec
from neve.spec.schema import Schema

__all__ = ["ResidualEvaluator"]

Partition = tuple[Any, ...]
Residual = Callable[[Partition], BooleanExpression]


class ResidualEvaluator:
    """``residual_for(partition)`` gives the filter rows of that partition must pass.

    The result is bound to ``schema`` and free of NOT; ALWAYS_TRUE means every row of
    the partition matches, ALWAYS_FALSE that none does. Pickling keeps the inputs
    and compiles again on load.
    """

    __slots__ = ("_residual", "expr", "schema", "spec")

    def __init__(
        self,
        spec: PartitionSpec,
        schema: Schema,
        row_filter: BooleanExpression,
        case_sensitive: bool = True,
    ) -> None:
        self.spec = spec
        self.schema = schema
        #: The row filter bound to the schema, without NOT.
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive))
        if not spec.fields:
            expr = self.expr
            self._residual: Residual = lambda partition: expr
        else:
            # The projection object indexes the partition fields by source column.
            self._residual = _compile(self.expr, StrictProjection(schema, spec, case_sensitive))

    def residual_for(self, partition: Partition) -> BooleanExpression:
        return self._residual(partition)

    def __reduce__(self) -> tuple[Any, ...]:
        return (ResidualEvaluator, (self.spec, self.schema, self.expr))


def _compile(expr: BooleanExpression, parts: StrictProjection) -> Residual:
    if isinstance(expr, (AlwaysTrue, AlwaysFalse)):
        return lambda p: expr
    if isinstance(expr, And):
        left, right = _compile(expr.left, parts), _compile(expr.right, parts)

        def and_residual(p: Partition) -> BooleanExpression:
            lr = left(p)
            return ALWAYS_FALSE if lr is ALWAYS_FALSE else and_(lr, right(p))

        return and_residual
    if isinstance(expr, Or):
        left, right = _compile(expr.left, parts), _compile(expr.right, parts)

        def or_residual(p: Partition) -> BooleanExpression:
            lr = left(p)
            return ALWAYS_TRUE if lr is ALWAYS_TRUE else or_(lr, right(p))

        return or_residual
    if isinstance(expr, BoundPredicate):
        return _compile_predicate(expr, parts)
    raise ExpressionError(f"cannot compute a residual of {expr}")


def _compile_predicate(pred: BoundPredicate, parts: StrictProjection) -> Residual:
    checks: list[tuple[Callable[[Partition], bool] | None, Callable[[Partition], bool] | None]] = []
    for pf, source_type, target in parts.parts(pred.term.field_id):
        strict = project_strict(pf.transform, source_type, pred, target)
        inclusive = project_inclusive(pf.transform, source_type, pred, target)
        checks.append(
            (
                compile_expression(strict) if strict is not None else None,
                compile_expression(inclusive) if inclusive is not None else None,
            )
        )
    if not checks:
        return lambda p: pred

    def residual(p: Partition) -> BooleanExpression:
        for strict, inclusive in checks:
            if strict is not None and strict(p):
                return ALWAYS_TRUE
            if inclusive is not None and not inclusive(p):
                return ALWAYS_FALSE
        return pred

    return residual
