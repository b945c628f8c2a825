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

from neve.expressions.binding import bind
from neve.expressions.evaluator import compile_expression
from neve.expressions.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    BooleanExpression,
    BoundPredicate,
    and_,
    or_,
)
from neve.expressions.projection import StrictProjection, project_inclusive, project_strict
from neve.expressions.visitors import BoundExpressionVisitor, rewrite_not, visit
from neve.spec.partition import PartitionSpec
from neve.spec.schema import Schema

__all__ = ["ResidualEvaluator"]

Partition = tuple[Any, ...]
Residual = Callable[[Partition], BooleanExpression]
PartitionTest = Callable[[Partition], bool]


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
            self._residual = _keep(self.expr)
        else:
            compiler = _ResidualCompiler(StrictProjection(schema, spec, case_sensitive))
            self._residual = visit(self.expr, compiler)

    def residual_for(self, partition: Partition) -> BooleanExpression:
        return self._residual(partition)

    def __reduce__(self) -> tuple[Any, ...]:
        return (ResidualEvaluator, (self.spec, self.schema, self.expr))


def _keep(expr: BooleanExpression) -> Residual:
    return lambda p: expr


_TRUE, _FALSE = _keep(ALWAYS_TRUE), _keep(ALWAYS_FALSE)


class _ResidualCompiler(BoundExpressionVisitor[Residual]):
    """Compiles a filter into ``partition -> residual``: each predicate is decided by
    the partition values where its projections can; ``And`` and ``Or`` skip the right
    side once the left one decides."""

    __slots__ = ("parts",)

    def __init__(self, parts: StrictProjection) -> None:
        # The projection object indexes the partition fields by source column.
        self.parts = parts

    def visit_true(self) -> Residual:
        return _TRUE

    def visit_false(self) -> Residual:
        return _FALSE

    def visit_and(self, left: Residual, right: Residual) -> Residual:
        def and_residual(p: Partition) -> BooleanExpression:
            lr = left(p)
            return ALWAYS_FALSE if lr is ALWAYS_FALSE else and_(lr, right(p))

        return and_residual

    def visit_or(self, left: Residual, right: Residual) -> Residual:
        def or_residual(p: Partition) -> BooleanExpression:
            lr = left(p)
            return ALWAYS_TRUE if lr is ALWAYS_TRUE else or_(lr, right(p))

        return or_residual

    def visit_predicate(self, pred: BoundPredicate) -> Residual:
        checks: list[tuple[PartitionTest | None, PartitionTest | None]] = []
        for pf, source_type, target in self.parts.parts(pred.term.field_id):
            strict = project_strict(pf.transform, source_type, pred, target)
            inclusive = project_inclusive(pf.transform, source_type, pred, target)
            checks.append(
                (
                    compile_expression(strict) if strict is not None else None,
                    compile_expression(inclusive) if inclusive is not None else None,
                )
            )
        if not checks:
            return _keep(pred)

        def residual(p: Partition) -> BooleanExpression:
            for strict, inclusive in checks:
                if strict is not None and strict(p):
                    return ALWAYS_TRUE
                if inclusive is not None and not inclusive(p):
                    return ALWAYS_FALSE
            return pred

        return residual
