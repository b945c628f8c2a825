"""Filter expressions: build or parse, bind to a schema, project, evaluate.

Build filters with the functions here (``and_(equal("a", 1), greater_than("b", 2))``)
or parse SQL-like text (``parse("a = 1 AND b > 2")``); bind them to a schema with
:func:`bind`. Scan planning uses :class:`ManifestEvaluator`,
:class:`InclusiveMetricsEvaluator`, :class:`PartitionEvaluator` and
:class:`ResidualEvaluator`; deletes use :class:`StrictMetricsEvaluator`. The null and
NaN rules every evaluator follows are described in :mod:`neve.expressions.expressions`.
Each evaluator is a :class:`BoundPredicateVisitor` walked by :func:`visit`, the one
place that decides how NOT, AND, OR and the constants compose.
"""

from __future__ import annotations

from neve.errors import ExpressionError
from neve.expressions.binding import bind
from neve.expressions.evaluator import PartitionEvaluator, evaluator
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
    Reference,
    UnboundPredicate,
    and_,
    equal,
    greater_than,
    greater_than_or_equal,
    is_in,
    is_nan,
    is_null,
    less_than,
    less_than_or_equal,
    not_,
    not_equal,
    not_in,
    not_nan,
    not_null,
    not_starts_with,
    or_,
    predicate,
    starts_with,
)
from neve.expressions.manifest_evaluator import ManifestEvaluator
from neve.expressions.metrics_evaluator import InclusiveMetricsEvaluator, StrictMetricsEvaluator
from neve.expressions.parser import parse
from neve.expressions.projection import (
    InclusiveProjection,
    StrictProjection,
    inclusive_projection,
    project_inclusive,
    project_strict,
    strict_projection,
)
from neve.expressions.residual import ResidualEvaluator
from neve.expressions.visitors import (
    BoundExpressionVisitor,
    BoundPredicateVisitor,
    rewrite_not,
    visit,
)

__all__ = [
    "ALWAYS_FALSE",
    "ALWAYS_TRUE",
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BooleanExpression",
    "BoundExpressionVisitor",
    "BoundPredicate",
    "BoundPredicateVisitor",
    "BoundReference",
    "ExpressionError",
    "InclusiveMetricsEvaluator",
    "InclusiveProjection",
    "ManifestEvaluator",
    "Not",
    "Operation",
    "Or",
    "PartitionEvaluator",
    "Reference",
    "ResidualEvaluator",
    "StrictMetricsEvaluator",
    "StrictProjection",
    "UnboundPredicate",
    "and_",
    "bind",
    "equal",
    "evaluator",
    "greater_than",
    "greater_than_or_equal",
    "inclusive_projection",
    "is_in",
    "is_nan",
    "is_null",
    "less_than",
    "less_than_or_equal",
    "not_",
    "not_equal",
    "not_in",
    "not_nan",
    "not_null",
    "not_starts_with",
    "or_",
    "parse",
    "predicate",
    "project_inclusive",
    "project_strict",
    "rewrite_not",
    "starts_with",
    "strict_projection",
    "visit",
]
