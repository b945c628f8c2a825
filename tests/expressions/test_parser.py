from __future__ import annotations

from decimal import Decimal

import pytest

from neve.errors import ExpressionError
from neve.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    And,
    Not,
    Or,
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
    parse,
    starts_with,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = 1", equal("a", 1)),
        ("a == 1", equal("a", 1)),
        ("a != 'x'", not_equal("a", "x")),
        ("a <> 'x'", not_equal("a", "x")),
        ("a < -2", less_than("a", -2)),
        ("a <= 2.50", less_than_or_equal("a", Decimal("2.50"))),
        ("a > 1e3", greater_than("a", Decimal("1e3"))),
        ("a >= .5", greater_than_or_equal("a", Decimal(".5"))),
        ("a IN (1, 2, 3)", is_in("a", [1, 2, 3])),
        ("a not in ('x','y')", not_in("a", ["x", "y"])),
        ("a IS NULL", is_null("a")),
        ("a is not null", not_null("a")),
        ("a IS NaN", is_nan("a")),
        ("a IS NOT nan", not_nan("a")),
        ("a LIKE 'ab%'", starts_with("a", "ab")),
        ("a NOT LIKE 'ab%'", not_starts_with("a", "ab")),
        ("a LIKE '%'", starts_with("a", "")),
        ("a LIKE 'x\\_y\\%z\\\\%'", starts_with("a", "x_y%z\\")),
        ("a LIKE 'exact'", equal("a", "exact")),
        ("a NOT LIKE 'exact'", not_equal("a", "exact")),
        ("a = true", equal("a", True)),
        ("a = FALSE", equal("a", False)),
        ("flag", equal("flag", True)),
        ("NOT flag", not_(equal("flag", True))),
        ("a = 'it''s'", equal("a", "it's")),
        ("a = ''", equal("a", "")),
        ("s.inner.x = 1", equal("s.inner.x", 1)),
        ('"my col" = 1', equal("my col", 1)),
        ('"quote""d" = 1', equal('quote"d', 1)),
        ("`in` = 1", equal("in", 1)),
        ('s."a b".`c` = 1', equal("s.a b.c", 1)),
        ("naïve = 1", equal("naïve", 1)),
        ("a BETWEEN 1 AND 5", and_(greater_than_or_equal("a", 1), less_than_or_equal("a", 5))),
        (
            "a NOT BETWEEN 1 AND 5",
            not_(and_(greater_than_or_equal("a", 1), less_than_or_equal("a", 5))),
        ),
        ("true", ALWAYS_TRUE),
        ("false OR a = 1", equal("a", 1)),
        ("TRUE AND a = 1", equal("a", 1)),
        ("a = 1 AND false", ALWAYS_FALSE),
        ("(((a = 1)))", equal("a", 1)),
        ("a IN (5)", equal("a", 5)),
        ("  a\n=\t1  ", equal("a", 1)),
    ],
)
def test_parse(text: str, expected: object) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5 < a", greater_than("a", 5)),
        ("5 <= a", greater_than_or_equal("a", 5)),
        ("5 > a", less_than("a", 5)),
        ("'x' >= a", less_than_or_equal("a", "x")),
        ("5 = a", equal("a", 5)),
        ("5 != a", not_equal("a", 5)),
    ],
)
def test_a_value_on_the_left_flips_the_comparison(text: str, expected: object) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    "digits", ["9999999999999999999999999999.9999999995", "1234567890123456789012345678901234.5678"]
)
def test_long_decimal_literals_keep_every_digit(digits: str) -> None:
    """38 digits, beyond Python's default decimal context: negating the literal must not
    round it (it did, and ``d = -<38 digits>`` matched no row)."""
    for sign in ("", "-"):
        (literal,) = parse(f"d = {sign}{digits}").literals  # type: ignore[attr-defined]
        assert str(literal) == sign + digits
        both = parse(f"d IN ({sign}{digits}, 0, -{digits})").literals  # type: ignore[attr-defined]
        assert {str(v) for v in both} == {sign + digits, "0", "-" + digits}


A, B, C, D = (equal(n, 1) for n in "abcd")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = 1 OR b = 1 AND c = 1", Or(A, And(B, C))),
        ("a = 1 AND b = 1 OR c = 1", Or(And(A, B), C)),
        ("(a = 1 OR b = 1) AND c = 1", And(Or(A, B), C)),
        ("NOT a = 1 AND b = 1", And(Not(A), B)),
        ("NOT (a = 1 AND b = 1)", Not(And(A, B))),
        ("NOT NOT a = 1", A),
        ("a = 1 and b = 1 or c = 1 and d = 1", Or(And(A, B), And(C, D))),
        ("a = 1 OR b = 1 OR c = 1", or_(A, B, C)),
        ("a = 1 AnD NOT b = 1 Or c = 1", Or(And(A, Not(B)), C)),
    ],
)
def test_precedence(text: str, expected: object) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("", "expected a filter", 1),
        ("a =", "expected a value", 4),
        ("a = 1 AND", "expected a column name, a value, NOT or '('", 10),
        ("a = 1 b = 2", "expected AND, OR or the end", 7),
        ("(a = 1", "')' to close the '(' at column 1", 7),
        ("a = 1)", "expected AND, OR or the end", 6),
        ("a IN 1, 2", "'(' to start the list", 6),
        ("a IN (1 2)", "',' or ')'", 9),
        ("a IN ()", "expected a value", 7),
        ("a IS 5", "expected NULL or NaN after IS", 6),
        ("a IS NOT 5", "expected NULL or NaN after IS NOT", 10),
        ("a = NULL", "write 'column IS NULL'", 5),
        ("a IN (1, NULL)", "write 'column IS NULL'", 10),
        ("a = NaN", "IS NaN", 5),
        ("a = b", "comparing two columns is not supported", 5),
        ("a = 'abc", "unterminated string", 5),
        ('"abc = 1', "unterminated quoted name", 1),
        ('"" = 1', "empty quoted name", 1),
        ("a = 1 ; drop", "unexpected character ';'", 7),
        ("a = 12abc", "malformed number", 5),
        ("a LIKE '%abc'", "only prefix patterns", 8),
        ("a LIKE 'a%c'", "only prefix patterns", 8),
        ("a LIKE 'a_c%'", "only prefix patterns", 8),
        ("a LIKE 5", "quoted pattern", 8),
        ("a NOT = 1", "expected IN, LIKE or BETWEEN after NOT", 7),
        ("a BETWEEN 1 5", "expected AND between", 13),
        ("a.", "field name after '.'", 3),
        ("5", "comparison operator after the value", 2),
        ("5 < 6", "column name after the comparison", 5),
        ("a = - b", "number after '-'", 7),
        ("in = 1", "expected a column name", 1),
        ("a ! 1", "unexpected character '!'", 3),
    ],
)
def test_errors_point_at_the_problem(text: str, message: str, column: int) -> None:
    with pytest.raises(ExpressionError) as info:
        parse(text)
    msg = str(info.value)
    assert message in msg
    assert f"at column {column}:" in msg
    caret_line = msg.splitlines()[-1]
    assert caret_line.index("^") == column + 1  # two spaces of indentation


def test_parse_rejects_non_strings() -> None:
    with pytest.raises(ExpressionError, match="must be a string"):
        parse(5)  # type: ignore[arg-type]


def test_long_disjunctions_parse_without_deep_recursion() -> None:
    text = " OR ".join(f"a = {i}" for i in range(3000))
    expr = parse(text)
    assert expr == or_(*(equal("a", i) for i in range(3000)))
