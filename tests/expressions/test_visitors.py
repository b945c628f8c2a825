from __future__ import annotations

from typing import Any

import pytest

from neve.errors import ExpressionError
from neve.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    And,
    BoundExpressionVisitor,
    BoundPredicate,
    BoundReference,
    Not,
    Or,
    bind,
    parse,
    rewrite_not,
    visit,
)
from neve.expressions.visitors import BoundPredicateVisitor, references
from neve.spec.schema import Schema
from neve.spec.types import DOUBLE, LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "a", LONG), NestedField(2, "s", STRING), NestedField(3, "d", DOUBLE))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("NOT a < 1", "a >= 1"),
        ("NOT a <= 1", "a > 1"),
        ("NOT a > 1", "a <= 1"),
        ("NOT a >= 1", "a < 1"),
        ("NOT a = 1", "a != 1"),
        ("NOT a != 1", "a = 1"),
        ("NOT a IN (1, 2)", "a NOT IN (1, 2)"),
        ("NOT a NOT IN (1, 2)", "a IN (1, 2)"),
        ("NOT a IS NULL", "a IS NOT NULL"),
        ("NOT a IS NOT NULL", "a IS NULL"),
        ("NOT d IS NaN", "d IS NOT NaN"),
        ("NOT d IS NOT NaN", "d IS NaN"),
        ("NOT s LIKE 'x%'", "s NOT LIKE 'x%'"),
        ("NOT s NOT LIKE 'x%'", "s LIKE 'x%'"),
        ("NOT (a = 1 AND s = 'x')", "a != 1 OR s != 'x'"),
        ("NOT (a = 1 OR s = 'x')", "a != 1 AND s != 'x'"),
        ("NOT (a = 1 AND NOT (s = 'x' OR NOT d > 1))", "a != 1 OR (s = 'x' OR d <= 1)"),
        ("NOT NOT NOT a = 1", "a != 1"),
        ("a = 1 AND NOT (NOT a = 2)", "a = 1 AND a = 2"),
        ("NOT true", "false"),
        ("NOT (false OR a = 1)", "a != 1"),
    ],
)
def test_rewrite_not(text: str, expected: str) -> None:
    assert rewrite_not(parse(text)) == parse(expected)
    bound = rewrite_not(bind(SCHEMA, parse(text)))
    assert bound == bind(SCHEMA, parse(expected))
    assert "NOT" not in str(bound).replace("NOT IN", "").replace("NOT NULL", "").replace(
        "NOT NaN", ""
    ).replace("NOT LIKE", "")


def test_rewrite_not_leaves_no_not_nodes() -> None:
    expr = rewrite_not(parse("NOT (NOT (a = 1 OR NOT s = 'x') AND NOT d < 2)"))

    def has_not(e: Any) -> bool:
        if isinstance(e, Not):
            return True
        return any(has_not(getattr(e, k)) for k in ("left", "right") if hasattr(e, k))

    assert not has_not(expr)


class _Printer(BoundExpressionVisitor[str]):
    def visit_true(self) -> str:
        return "T"

    def visit_false(self) -> str:
        return "F"

    def visit_and(self, left: str, right: str) -> str:
        return f"({left}&{right})"

    def visit_or(self, left: str, right: str) -> str:
        return f"({left}|{right})"

    def visit_predicate(self, pred: BoundPredicate) -> str:
        return str(pred)


def test_visit_walks_bound_expressions_and_pushes_not_down() -> None:
    expr = bind(SCHEMA, parse("a < 3 AND NOT (a IN (2, 1) OR d IS NaN)"))
    assert visit(expr, _Printer()) == "(a < 3&(a NOT IN (1, 2)&d IS NOT NaN))"
    assert visit(ALWAYS_TRUE, _Printer()) == "T"
    assert visit(ALWAYS_FALSE, _Printer()) == "F"
    # constants under NOT flip, double negations cancel, left stays left
    assert visit(And(Not(ALWAYS_TRUE), Not(Not(ALWAYS_FALSE))), _Printer()) == "(F&F)"
    assert visit(Or(Not(ALWAYS_FALSE), ALWAYS_FALSE), _Printer()) == "(T|F)"


def test_visit_agrees_with_rewrite_not() -> None:
    for text in (
        "NOT (a = 1 AND NOT (s = 'x' OR NOT d > 1))",
        "NOT NOT NOT a = 1",
        "NOT (s LIKE 'x%' OR a IS NULL) AND NOT d IS NaN",
    ):
        bound = bind(SCHEMA, parse(text))
        assert visit(bound, _Printer()) == visit(rewrite_not(bound), _Printer())


class _Recorder(BoundPredicateVisitor[tuple[Any, ...]]):
    """Each predicate as (method, field id, its arguments)."""

    def visit_true(self) -> tuple[Any, ...]:
        return ("true",)

    def visit_false(self) -> tuple[Any, ...]:
        return ("false",)

    def visit_and(self, left: tuple[Any, ...], right: tuple[Any, ...]) -> tuple[Any, ...]:
        return ("and", left, right)

    def visit_or(self, left: tuple[Any, ...], right: tuple[Any, ...]) -> tuple[Any, ...]:
        return ("or", left, right)

    def visit_is_null(self, ref: BoundReference) -> tuple[Any, ...]:
        return ("is_null", ref.field_id)

    def visit_not_null(self, ref: BoundReference) -> tuple[Any, ...]:
        return ("not_null", ref.field_id)

    def visit_is_nan(self, ref: BoundReference) -> tuple[Any, ...]:
        return ("is_nan", ref.field_id)

    def visit_not_nan(self, ref: BoundReference) -> tuple[Any, ...]:
        return ("not_nan", ref.field_id)

    def visit_lt(self, ref: BoundReference, lit: Any) -> tuple[Any, ...]:
        return ("lt", ref.field_id, lit)

    def visit_lt_eq(self, ref: BoundReference, lit: Any) -> tuple[Any, ...]:
        return ("lt_eq", ref.field_id, lit)

    def visit_gt(self, ref: BoundReference, lit: Any) -> tuple[Any, ...]:
        return ("gt", ref.field_id, lit)

    def visit_gt_eq(self, ref: BoundReference, lit: Any) -> tuple[Any, ...]:
        return ("gt_eq", ref.field_id, lit)

    def visit_eq(self, ref: BoundReference, lit: Any) -> tuple[Any, ...]:
        return ("eq", ref.field_id, lit)

    def visit_not_eq(self, ref: BoundReference, lit: Any) -> tuple[Any, ...]:
        return ("not_eq", ref.field_id, lit)

    def visit_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> tuple[Any, ...]:
        return ("in", ref.field_id, lits)

    def visit_not_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> tuple[Any, ...]:
        return ("not_in", ref.field_id, lits)

    def visit_starts_with(self, ref: BoundReference, lit: Any) -> tuple[Any, ...]:
        return ("starts_with", ref.field_id, lit)

    def visit_not_starts_with(self, ref: BoundReference, lit: Any) -> tuple[Any, ...]:
        return ("not_starts_with", ref.field_id, lit)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a IS NULL", ("is_null", 1)),
        ("a IS NOT NULL", ("not_null", 1)),
        ("d IS NaN", ("is_nan", 3)),
        ("d IS NOT NaN", ("not_nan", 3)),
        ("a < 1", ("lt", 1, 1)),
        ("a <= 1", ("lt_eq", 1, 1)),
        ("a > 1", ("gt", 1, 1)),
        ("a >= 1", ("gt_eq", 1, 1)),
        ("a = 1", ("eq", 1, 1)),
        ("a != 1", ("not_eq", 1, 1)),
        ("a IN (3, 1, 2)", ("in", 1, (1, 2, 3))),
        ("a NOT IN (3, 1)", ("not_in", 1, (1, 3))),
        ("s LIKE 'x%'", ("starts_with", 2, "x")),
        ("s NOT LIKE 'x%'", ("not_starts_with", 2, "x")),
        ("NOT a IN (2, 1)", ("not_in", 1, (1, 2))),
        ("a < 1 OR NOT s LIKE 'x%'", ("or", ("lt", 1, 1), ("not_starts_with", 2, "x"))),
    ],
)
def test_predicate_visitor_dispatches_each_operation(text: str, expected: tuple[Any, ...]) -> None:
    assert visit(bind(SCHEMA, parse(text)), _Recorder()) == expected


def test_visitor_refuses_unbound_and_incomplete() -> None:
    with pytest.raises(ExpressionError, match="not bound"):
        visit(parse("a < 3"), _Printer())

    class _Incomplete(BoundExpressionVisitor[str]):
        def visit_true(self) -> str:
            return "T"

    with pytest.raises(TypeError, match="abstract"):
        _Incomplete()  # type: ignore[abstract]


def test_references() -> None:
    expr = bind(SCHEMA, parse("a < 3 AND (d > 1 OR NOT a = 2) AND s IS NULL"))
    assert [r.field_id for r in references(expr)] == [1, 3, 2]
