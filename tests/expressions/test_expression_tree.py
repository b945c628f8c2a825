from __future__ import annotations

import pickle
import uuid
from decimal import Decimal

import pytest

import neve.expressions as ex
from neve.errors import ExpressionError
from neve.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    And,
    Not,
    Operation,
    Or,
    Reference,
    UnboundPredicate,
    and_,
    bind,
    equal,
    greater_than,
    is_in,
    is_null,
    less_than,
    not_,
    not_in,
    or_,
    parse,
    starts_with,
)
from neve.spec.schema import Schema
from neve.spec.types import (
    DATE,
    DOUBLE,
    INT,
    STRING,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    UUID,
    DecimalType,
    FixedType,
    NestedField,
)

A = equal("a", 1)
B = greater_than("b", 2)


def test_public_names_are_exactly_the_intended_ones() -> None:
    required = {
        "equal",
        "not_equal",
        "less_than",
        "less_than_or_equal",
        "greater_than",
        "greater_than_or_equal",
        "is_in",
        "not_in",
        "is_null",
        "not_null",
        "is_nan",
        "not_nan",
        "starts_with",
        "not_starts_with",
        "and_",
        "or_",
        "not_",
        "ALWAYS_TRUE",
        "ALWAYS_FALSE",
        "parse",
        "bind",
        "rewrite_not",
    }
    assert required <= set(ex.__all__)
    assert all(hasattr(ex, name) for name in ex.__all__)
    assert len(set(ex.__all__)) == len(ex.__all__)


def test_and_or_not_simplify_constants() -> None:
    assert and_(A, ALWAYS_FALSE) is ALWAYS_FALSE
    assert and_(ALWAYS_FALSE, A) is ALWAYS_FALSE
    assert and_(A, ALWAYS_TRUE) == A
    assert and_(ALWAYS_TRUE, ALWAYS_TRUE) is ALWAYS_TRUE
    assert and_() is ALWAYS_TRUE
    assert or_(A, ALWAYS_TRUE) is ALWAYS_TRUE
    assert or_(A, ALWAYS_FALSE) == A
    assert or_() is ALWAYS_FALSE
    assert not_(ALWAYS_TRUE) is ALWAYS_FALSE
    assert not_(ALWAYS_FALSE) is ALWAYS_TRUE
    assert not_(not_(A)) == A
    assert and_(A, B) == And(A, B)
    assert or_(A, B) == Or(A, B)
    assert not_(A) == Not(A)


def test_operators_build_simplified_trees() -> None:
    assert And(A, B) == (A & B)
    assert (A | ALWAYS_TRUE) is ALWAYS_TRUE
    assert Not(A) == ~A


def test_many_operands_give_a_shallow_tree() -> None:
    expr = or_(*(equal("a", i) for i in range(1024)))

    def depth(e: ex.BooleanExpression) -> int:
        if isinstance(e, (And, Or)):
            return 1 + max(depth(e.left), depth(e.right))
        return 0

    assert depth(expr) == 10
    schema = Schema(NestedField(1, "a", INT))
    bound = bind(schema, expr)  # no recursion limit trouble
    assert ex.evaluator(schema, bound)((1000,))


def test_in_simplifies_by_count() -> None:
    assert is_in("a", []) is ALWAYS_FALSE
    assert not_in("a", []) is ALWAYS_TRUE
    assert is_in("a", [3]) == equal("a", 3)
    assert not_in("a", [3, 3]) == ex.not_equal("a", 3)
    assert is_in("a", [1, 2, 1]) == UnboundPredicate(Operation.IN, Reference("a"), (1, 2))


def test_null_and_nan_values_are_refused_with_a_hint() -> None:
    with pytest.raises(ExpressionError, match="is_null"):
        equal("a", None)
    with pytest.raises(ExpressionError, match="is_nan"):
        equal("a", float("nan"))
    with pytest.raises(ExpressionError, match="not_nan"):
        less_than("a", float("nan"))
    with pytest.raises(ExpressionError, match="is_null"):
        is_in("a", [1, None])


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ExpressionError, match="collection"):
        is_in("a", "abc")
    with pytest.raises(ExpressionError, match="string prefix"):
        starts_with("a", 5)  # type: ignore[arg-type]
    with pytest.raises(ExpressionError, match="column name"):
        equal("", 1)
    with pytest.raises(ExpressionError, match="filter expression"):
        and_(A, "b = 1")  # type: ignore[arg-type]
    with pytest.raises(ExpressionError, match="one value"):
        UnboundPredicate(Operation.EQ, Reference("a"), ())
    with pytest.raises(ExpressionError, match="no value"):
        UnboundPredicate(Operation.IS_NULL, Reference("a"), (1,))


SCHEMA = Schema(
    NestedField(1, "id", INT, True),
    NestedField(2, "name", STRING),
    NestedField(3, "price", DecimalType(9, 2)),
    NestedField(4, "day", DATE),
    NestedField(5, "ts", TIMESTAMPTZ),
    NestedField(6, "tsn", TIMESTAMP_NS),
    NestedField(7, "u", UUID),
    NestedField(8, "f", FixedType(2)),
    NestedField(9, "x", DOUBLE),
    NestedField(10, "select", STRING),
    NestedField(11, "odd name", STRING),
)

ROUND_TRIP = [
    "id = 1 AND (name LIKE 'a\\_b%' OR name IS NULL)",
    "NOT (price >= 12.34 OR day < '2024-02-29')",
    "ts > '2024-01-01T10:00:00.123456+00:00' AND tsn <= '2024-01-01T00:00:00.123456789'",
    "u = '12345678-1234-5678-1234-567812345678' AND f IN ('0001', 'ffff')",
    "x IS NOT NaN AND x != -1.5 AND \"select\" NOT IN ('a', 'it''s')",
    "\"odd name\" NOT LIKE 'q%' AND x IS NaN AND name IS NOT NULL",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_str_parses_back_to_the_same_expression(text: str) -> None:
    unbound = parse(text)
    assert parse(str(unbound)) == unbound
    bound = bind(SCHEMA, unbound)
    # Bound filters print values in readable form (dates as ISO) and bind back equal.
    assert bind(SCHEMA, parse(str(bound))) == bound


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_expressions_pickle(text: str) -> None:
    unbound = parse(text)
    bound = bind(SCHEMA, unbound)
    assert pickle.loads(pickle.dumps(unbound)) == unbound
    assert pickle.loads(pickle.dumps(bound)) == bound
    assert pickle.loads(pickle.dumps(ALWAYS_TRUE)) is ALWAYS_TRUE
    assert pickle.loads(pickle.dumps(ALWAYS_FALSE)) is ALWAYS_FALSE


def test_expressions_are_hashable_and_compare_by_value() -> None:
    assert {parse("a = 1 AND b > 2"), and_(equal("a", 1), greater_than("b", 2))} == {
        parse("a = 1 AND b > 2")
    }
    bound = bind(SCHEMA, parse("price IN (1.5, 2, 1.50)"))
    assert isinstance(bound, ex.BoundPredicate)
    assert bound.literals == (Decimal("1.50"), Decimal("2.00"))
    assert hash(bound) == hash(bind(SCHEMA, parse("price IN (2, 1.5)")))


def test_uuid_values_print_as_strings() -> None:
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert str(bind(SCHEMA, equal("u", u))) == f"u = '{u}'"
    assert str(is_null("a")) == "a IS NULL"


def test_values_beyond_year_9999_print_and_parse_back() -> None:
    schema = Schema(NestedField(1, "d", DATE), NestedField(2, "t", TIMESTAMP_NS))
    bound = bind(schema, parse("d < 3000000 AND t > -1"))
    assert str(bound) == "d < '+10183-09-21' AND t > '1969-12-31T23:59:59.999999999'"
    assert bind(schema, parse(str(bound))) == bound
