from __future__ import annotations

from typing import Any

import pytest

from neve.errors import ExpressionError
from neve.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    BoundExpressionVisitor,
    BoundReference,
    Not,
    bind,
    parse,
    rewrite_not,
    visit,
)
from neve.expressions.visitors import references
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

    def visit_not(self, child_result: str) -> str:
        return f"!{child_result}"

    def visit_and(self, left_result: str, right_result: str) -> str:
        return f"({left_result}&{right_result})"

    def visit_or(self, left_result: str, right_result: str) -> str:
        return f"({left_result}|{right_result})"

    def visit_lt(self, ref: BoundReference, lit: Any) -> str:
        return f"{ref.field_id}<{lit}"

    def visit_in(self, ref: BoundReference, lits: frozenset[Any]) -> str:
        return f"{ref.field_id} in {sorted(lits)}"

    def visit_is_nan(self, ref: BoundReference) -> str:
        return f"nan({ref.field_id})"


def test_visitor_walks_bound_expressions() -> None:
    expr = bind(SCHEMA, parse("a < 3 AND NOT (a IN (2, 1) OR d IS NaN)"))
    assert visit(expr, _Printer()) == "(1<3&!(1 in [1, 2]|nan(3)))"
    assert visit(ALWAYS_TRUE, _Printer()) == "T"
    assert visit(ALWAYS_FALSE, _Printer()) == "F"


def test_visitor_refuses_unbound_and_unimplemented() -> None:
    with pytest.raises(ExpressionError, match="not bound"):
        visit(parse("a < 3"), _Printer())
    with pytest.raises(NotImplementedError):
        visit(bind(SCHEMA, parse("a > 3")), _Printer())


def test_references() -> None:
    expr = bind(SCHEMA, parse("a < 3 AND (d > 1 OR NOT a = 2) AND s IS NULL"))
    assert [r.field_id for r in references(expr)] == [1, 3, 2]
