"""The schema language of ``neve create --schema``: columns separated by commas, each
``name type [not null] [comment 'text']``. Types are the spec's primitive names
(``long``, ``string``, ``decimal(9,2)``, ``timestamptz``, ``fixed[16]`` ...) and
``list<type>``, ``map<type, type>`` and ``struct<name: type [not null], ...>``.
Field ids are assigned in order, depth first (the table keeps them as given)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from neve.errors import SchemaError
from neve.spec.schema import Schema
from neve.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    parse_type,
)

__all__ = ["parse_schema"]

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<punct>[<>,:()\[\]])|(?P<word>[A-Za-z0-9_$.-]+|`[^`]+`))"
)


@dataclass
class _Tokens:
    items: list[str]
    pos: int = 0
    text: str = ""

    def peek(self) -> str | None:
        return self.items[self.pos] if self.pos < len(self.items) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise self.error("the schema ends too early")
        self.pos += 1
        return tok

    def expect(self, tok: str) -> None:
        got = self.take()
        if got.lower() != tok:
            raise self.error(f"expected {tok!r} but found {got!r}")

    def error(self, what: str) -> SchemaError:
        return SchemaError(
            f"cannot read the schema {self.text!r}: {what}; write columns as "
            "'id long not null, name string, tags list<string>'"
        )


def _tokenize(text: str) -> _Tokens:
    items: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise _Tokens([], text=text).error(f"unexpected character {text[pos:].strip()[0]!r}")
        items.append(m.group(m.lastgroup or "word"))
        pos = m.end()
    return _Tokens(items, text=text)


class _Ids:
    def __init__(self) -> None:
        self.last = 0

    def next(self) -> int:
        self.last += 1
        return self.last


def _name(tokens: _Tokens) -> str:
    tok = tokens.take()
    if tok in "<>,:()[]" or tok.startswith("'"):
        raise tokens.error(f"expected a column name, found {tok!r}")
    return tok[1:-1] if tok.startswith("`") else tok


def _type(tokens: _Tokens, ids: _Ids) -> IcebergType:
    word = tokens.take()
    low = word.lower()
    if low == "list":
        tokens.expect("<")
        element_id = ids.next()
        element = _type(tokens, ids)
        required = _not_null(tokens)
        tokens.expect(">")
        return ListType(element_id, element, required)
    if low == "map":
        tokens.expect("<")
        key_id, value_id = ids.next(), ids.next()
        key = _type(tokens, ids)
        tokens.expect(",")
        value = _type(tokens, ids)
        required = _not_null(tokens)
        tokens.expect(">")
        return MapType(key_id, key, value_id, value, required)
    if low == "struct":
        tokens.expect("<")
        fields = [_field(tokens, ids, colon=True)]
        while tokens.peek() == ",":
            tokens.take()
            fields.append(_field(tokens, ids, colon=True))
        tokens.expect(">")
        return StructType(*fields)
    # decimal(p, s) and fixed[n] arrive as several tokens
    if tokens.peek() in ("(", "["):
        close = ")" if tokens.take() == "(" else "]"
        parts = []
        while (tok := tokens.take()) != close:
            parts.append(tok)
        word = f"{word}{'(' if close == ')' else '['}{''.join(parts)}{close}"
    return parse_type(word)


def _not_null(tokens: _Tokens) -> bool:
    """``not null`` after a type (also for list elements and map values)."""
    tok = tokens.peek()
    if tok is not None and tok.lower() == "not":
        tokens.take()
        tokens.expect("null")
        return True
    return False


def _field(tokens: _Tokens, ids: _Ids, colon: bool = False) -> NestedField:
    name = _name(tokens)
    if colon and tokens.peek() == ":":
        tokens.take()
    field_id = ids.next()
    ftype = _type(tokens, ids)
    required = _not_null(tokens)
    doc = None
    tok = tokens.peek()
    if tok is not None and tok.lower() == "comment":
        tokens.take()
        raw = tokens.take()
        if not raw.startswith("'"):
            raise tokens.error(f"comment takes a quoted text, not {raw!r}")
        doc = raw[1:-1].replace("''", "'")
    return NestedField(field_id, name, ftype, required, doc)


def parse_schema(text: str) -> Schema:
    """The schema ``text`` describes (:class:`SchemaError` saying where it is wrong)."""
    tokens = _tokenize(text)
    if tokens.peek() is None:
        raise tokens.error("it names no column")
    ids = _Ids()
    fields = [_field(tokens, ids)]
    while tokens.peek() is not None:
        tokens.expect(",")
        fields.append(_field(tokens, ids))
    return Schema(*fields)
