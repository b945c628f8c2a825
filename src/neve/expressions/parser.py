"""Parsing SQL-like filter text into an unbound expression.

Grammar (keywords are case-insensitive)::

    filter     := or_expr
    or_expr    := and_expr ("OR" and_expr)*
    and_expr   := not_expr ("AND" not_expr)*
    not_expr   := "NOT" not_expr | primary
    primary    := "(" or_expr ")" | "TRUE" | "FALSE" | value cmp column | predicate
    predicate  := column cmp value
                | column ["NOT"] "IN" "(" value ("," value)* ")"
                | column "IS" ["NOT"] ("NULL" | "NaN")
                | column ["NOT"] "LIKE" 'prefix%'
                | column ["NOT"] "BETWEEN" value "AND" value
                | column                          (a boolean column: column = true)
    cmp        := "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
    column     := name ("." name)*      name: plain, "double quoted" or `backticked`
    value      := 'string' | ["-"] number | "TRUE" | "FALSE"

Strings use ``''`` for a quote. Numbers with a point or exponent are kept as exact
``Decimal`` values, so decimal columns compare exactly. Dates and timestamps are
written as quoted ISO strings and converted when the filter is bound. ``LIKE`` takes
only prefix patterns (``'abc%'``; ``\\%``, ``\\_`` and ``\\\\`` escape) and a pattern
without wildcards, which means equality.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from neve.errors import ExpressionError
from neve.expressions.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    BooleanExpression,
    Operation,
    Reference,
    and_,
    equal,
    is_in,
    not_,
    not_in,
    or_,
    predicate,
)
from neve.expressions.text import KEYWORDS

__all__ = ["KEYWORDS", "parse", "to_expression"]

_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_IDENT = re.compile(r"[^\W\d]\w*")
_OPS = {
    "=": Operation.EQ,
    "==": Operation.EQ,
    "!=": Operation.NOT_EQ,
    "<>": Operation.NOT_EQ,
    "<": Operation.LT,
    "<=": Operation.LT_EQ,
    ">": Operation.GT,
    ">=": Operation.GT_EQ,
}


@dataclass(frozen=True)
class _Token:
    kind: str  # ident, qident, string, number, op, punct, eof
    text: str
    pos: int
    value: Any = None

    def is_kw(self, *words: str) -> bool:
        return self.kind == "ident" and self.text.upper() in words


def parse(text: str) -> BooleanExpression:
    """Parse a filter such as ``"a > 5 AND b IN ('x', 'y') OR c IS NULL"``.

    Returns an unbound expression; bind it to a schema to check names and convert
    values. Raises :class:`ExpressionError` pointing at the position of the problem.
    """
    if not isinstance(text, str):
        raise ExpressionError(f"a filter must be a string, got {type(text).__name__}")
    return _Parser(text).parse()


def _error(text: str, pos: int, message: str) -> ExpressionError:
    line = text.replace("\n", " ").replace("\t", " ")
    return ExpressionError(
        f"cannot parse filter: {message} at column {pos + 1}:\n  {line}\n  {' ' * pos}^"
    )


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c == "'":
            j, parts = i + 1, []
            while True:
                k = text.find("'", j)
                if k < 0:
                    raise _error(text, i, "unterminated string (close it with ')")
                parts.append(text[j:k])
                if k + 1 < n and text[k + 1] == "'":
                    parts.append("'")
                    j = k + 2
                    continue
                break
            tokens.append(_Token("string", text[i : k + 1], i, "".join(parts)))
            i = k + 1
            continue
        if c in '"`':
            j, parts = i + 1, []
            while True:
                k = text.find(c, j)
                if k < 0:
                    raise _error(text, i, f"unterminated quoted name (close it with {c})")
                parts.append(text[j:k])
                if k + 1 < n and text[k + 1] == c:
                    parts.append(c)
                    j = k + 2
                    continue
                break
            name = "".join(parts)
            if not name:
                raise _error(text, i, "empty quoted name")
            tokens.append(_Token("qident", text[i : k + 1], i, name))
            i = k + 1
            continue
        after_name = bool(tokens) and tokens[-1].kind in ("ident", "qident")
        if c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit() and not after_name):
            m = _NUMBER.match(text, i)
            assert m is not None
            end = m.end()
            if end < n and (text[end].isalnum() or text[end] == "_"):
                raise _error(text, i, f"malformed number {text[i : end + 1]!r}")
            word = m.group()
            value: Any = Decimal(word) if any(ch in word for ch in ".eE") else int(word)
            tokens.append(_Token("number", word, i, value))
            i = end
            continue
        m = _IDENT.match(text, i)
        if m:
            tokens.append(_Token("ident", m.group(), i))
            i = m.end()
            continue
        two = text[i : i + 2]
        if two in _OPS:
            tokens.append(_Token("op", two, i))
            i += 2
            continue
        if c in _OPS:
            tokens.append(_Token("op", c, i))
            i += 1
            continue
        if c in "(),.-":
            tokens.append(_Token("punct", c, i))
            i += 1
            continue
        raise _error(text, i, f"unexpected character {c!r}")
    tokens.append(_Token("eof", "", n))
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    # -- helpers ------------------------------------------------------------------------

    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def peek(self, k: int = 1) -> _Token:
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def advance(self) -> _Token:
        t = self.tokens[self.i]
        if t.kind != "eof":
            self.i += 1
        return t

    def error(self, message: str, tok: _Token | None = None) -> ExpressionError:
        t = tok or self.tok
        found = "the end of the filter" if t.kind == "eof" else repr(t.text)
        return _error(self.text, t.pos, f"{message}, found {found}")

    def expect_punct(self, p: str, what: str) -> None:
        if self.tok.kind == "punct" and self.tok.text == p:
            self.advance()
            return
        raise self.error(f"expected {what}")

    def is_punct(self, p: str) -> bool:
        return self.tok.kind == "punct" and self.tok.text == p

    # -- grammar ------------------------------------------------------------------------

    def parse(self) -> BooleanExpression:
        if self.tok.kind == "eof":
            raise self.error('expected a filter such as "x = 1"')
        expr = self.parse_or()
        if self.tok.kind != "eof":
            raise self.error("expected AND, OR or the end of the filter")
        return expr

    def parse_or(self) -> BooleanExpression:
        items = [self.parse_and()]
        while self.tok.is_kw("OR"):
            self.advance()
            items.append(self.parse_and())
        return or_(*items)

    def parse_and(self) -> BooleanExpression:
        items = [self.parse_not()]
        while self.tok.is_kw("AND"):
            self.advance()
            items.append(self.parse_not())
        return and_(*items)

    def parse_not(self) -> BooleanExpression:
        if self.tok.is_kw("NOT"):
            self.advance()
            return not_(self.parse_not())
        return self.parse_primary()

    def parse_primary(self) -> BooleanExpression:
        tok = self.tok
        if self.is_punct("("):
            self.advance()
            expr = self.parse_or()
            self.expect_punct(")", "')' to close the '(' at column " + str(tok.pos + 1))
            return expr
        if self.starts_value():
            value = self.parse_value()
            if self.tok.kind == "op":
                op = _OPS[self.advance().text].flip()
                if not self.starts_column():
                    raise self.error("expected a column name after the comparison")
                return self.make(op, self.parse_column(), (value,))
            if isinstance(value, bool):
                return ALWAYS_TRUE if value else ALWAYS_FALSE
            raise self.error("expected a comparison operator after the value")
        if self.starts_column():
            return self.parse_predicate(self.parse_column())
        raise self.error("expected a column name, a value, NOT or '('")

    def starts_column(self) -> bool:
        t = self.tok
        return t.kind == "qident" or (t.kind == "ident" and t.text.upper() not in KEYWORDS)

    def starts_value(self) -> bool:
        t = self.tok
        return (
            t.kind in ("string", "number")
            or (t.kind == "punct" and t.text == "-")
            or t.is_kw("TRUE", "FALSE", "NULL", "NAN")
        )

    def parse_column(self) -> Reference:
        parts = [self.name_part()]
        while self.is_punct("."):
            self.advance()
            if self.tok.kind not in ("ident", "qident"):
                raise self.error("expected a field name after '.'")
            parts.append(self.name_part())
        return Reference(".".join(parts))

    def name_part(self) -> str:
        t = self.advance()
        return str(t.value) if t.kind == "qident" else t.text

    def parse_value(self) -> Any:
        t = self.tok
        if t.kind in ("string", "number"):
            self.advance()
            return t.value
        if t.kind == "punct" and t.text == "-":
            self.advance()
            if self.tok.kind != "number":
                raise self.error("expected a number after '-'")
            value = self.advance().value
            # copy_negate is exact; unary minus would round to the context's 28 digits
            return value.copy_negate() if isinstance(value, Decimal) else -value
        if t.is_kw("TRUE", "FALSE"):
            self.advance()
            return t.text.upper() == "TRUE"
        if t.is_kw("NULL"):
            raise _error(
                self.text,
                t.pos,
                "null is not a value to compare with; write 'column IS NULL' or "
                "'column IS NOT NULL'",
            )
        if t.is_kw("NAN"):
            raise _error(
                self.text,
                t.pos,
                "NaN is not a value to compare with; write 'column IS NaN' or 'column IS NOT NaN'",
            )
        if self.starts_column():
            raise self.error("expected a value (comparing two columns is not supported)")
        raise self.error("expected a value: a 'string', a number, true or false")

    def make(self, op: Operation, ref: Reference, values: tuple[Any, ...]) -> BooleanExpression:
        return predicate(op, ref, values)

    def parse_predicate(self, ref: Reference) -> BooleanExpression:
        t = self.tok
        if t.kind == "op":
            self.advance()
            return self.make(_OPS[t.text], ref, (self.parse_value(),))
        if t.is_kw("IS"):
            self.advance()
            negated = False
            if self.tok.is_kw("NOT"):
                self.advance()
                negated = True
            if self.tok.is_kw("NULL"):
                self.advance()
                return self.make(Operation.NOT_NULL if negated else Operation.IS_NULL, ref, ())
            if self.tok.is_kw("NAN"):
                self.advance()
                return self.make(Operation.NOT_NAN if negated else Operation.IS_NAN, ref, ())
            raise self.error("expected NULL or NaN after IS" + (" NOT" if negated else ""))
        negated = False
        if t.is_kw("NOT"):
            self.advance()
            negated = True
            if not self.tok.is_kw("IN", "LIKE", "BETWEEN"):
                raise self.error("expected IN, LIKE or BETWEEN after NOT")
        if self.tok.is_kw("IN"):
            self.advance()
            values = self.parse_value_list()
            return not_in(ref, values) if negated else is_in(ref, values)
        if self.tok.is_kw("LIKE"):
            self.advance()
            return self.parse_like(ref, negated)
        if self.tok.is_kw("BETWEEN"):
            self.advance()
            low = self.parse_value()
            if not self.tok.is_kw("AND"):
                raise self.error("expected AND between the two values of BETWEEN")
            self.advance()
            high = self.parse_value()
            between = and_(
                self.make(Operation.GT_EQ, ref, (low,)), self.make(Operation.LT_EQ, ref, (high,))
            )
            return not_(between) if negated else between
        if t.kind == "eof" or t.is_kw("AND", "OR") or (t.kind == "punct" and t.text == ")"):
            return equal(ref, True)  # a bare boolean column
        raise self.error(
            f"expected a comparison (=, !=, <, <=, >, >=), IN, IS, LIKE or BETWEEN after "
            f"column {ref.name!r}"
        )

    def parse_value_list(self) -> list[Any]:
        self.expect_punct("(", "'(' to start the list of values")
        values = [self.parse_value()]
        while self.is_punct(","):
            self.advance()
            values.append(self.parse_value())
        self.expect_punct(")", "',' or ')' in the list of values")
        return values

    def parse_like(self, ref: Reference, negated: bool) -> BooleanExpression:
        t = self.tok
        if t.kind != "string":
            raise self.error("expected a quoted pattern such as 'abc%' after LIKE")
        self.advance()
        prefix, wildcard = _like_prefix(t.value)
        if prefix is None:
            raise _error(
                self.text,
                t.pos,
                f"unsupported LIKE pattern {t.text}: only prefix patterns such as 'abc%' "
                "are supported ('%' only at the end; write \\% or \\_ for a literal % or _)",
            )
        if not wildcard:
            op = Operation.NOT_EQ if negated else Operation.EQ
        else:
            op = Operation.NOT_STARTS_WITH if negated else Operation.STARTS_WITH
        return self.make(op, ref, (prefix,))


def _like_prefix(pattern: str) -> tuple[str | None, bool]:
    """``(prefix, has trailing %)`` of a LIKE pattern, or ``(None, _)`` if not a prefix one."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n and pattern[i + 1] in "%_\\":
            out.append(pattern[i + 1])
            i += 2
            continue
        if c == "%":
            return ("".join(out), True) if i == n - 1 else (None, True)
        if c == "_":
            return None, True
        out.append(c)
        i += 1
    return "".join(out), False


def to_expression(filter: str | BooleanExpression | None) -> BooleanExpression:
    """A filter given as a string, an expression, or None (every row)."""
    if filter is None:
        return ALWAYS_TRUE
    if isinstance(filter, str):
        return parse(filter)
    if isinstance(filter, BooleanExpression):
        return filter
    raise ExpressionError(
        f'a filter is a string such as "id < 10" or a neve.expressions expression, '
        f"not {type(filter).__name__} {filter!r}"
    )
