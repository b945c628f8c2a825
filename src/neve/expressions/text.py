"""Rendering expressions as filter text that :func:`neve.expressions.parse` reads back.

Names that are not plain identifiers (or are keywords) are double-quoted; values of
temporal columns print as ISO strings, binary values as hex.
"""

from __future__ import annotations

import datetime as _dt
import math
import uuid
from decimal import Decimal
from typing import Any

from neve.expressions.operation import Operation
from neve.spec import values
from neve.spec.types import (
    DateType,
    IcebergType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
)

__all__ = ["KEYWORDS", "format_value", "predicate_text", "quote_name"]

_SYMBOL = {
    Operation.LT: "<",
    Operation.LT_EQ: "<=",
    Operation.GT: ">",
    Operation.GT_EQ: ">=",
    Operation.EQ: "=",
    Operation.NOT_EQ: "!=",
}


_PLAIN_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")


#: Words the parser reads as keywords; a column with such a name is written quoted.
KEYWORDS = frozenset(
    {"AND", "OR", "NOT", "IN", "IS", "NULL", "NAN", "LIKE", "TRUE", "FALSE", "BETWEEN"}
)


def quote_name(name: str) -> str:
    """A (dotted) column name as the parser reads it: plain, or double-quoted."""
    plain = (
        name
        and set(name) <= _PLAIN_NAME
        and all(p and not p[0].isdigit() and p.upper() not in KEYWORDS for p in name.split("."))
    )
    if plain:
        return name
    return '"' + name.replace('"', '""') + '"'


def predicate_text(
    op: Operation, name: str, literals: tuple[Any, ...], field_type: IcebergType | None
) -> str:
    """Filter text of a predicate; ``field_type`` (when bound) formats the values."""
    if op is Operation.IS_NULL:
        return f"{name} IS NULL"
    if op is Operation.NOT_NULL:
        return f"{name} IS NOT NULL"
    if op is Operation.IS_NAN:
        return f"{name} IS NaN"
    if op is Operation.NOT_NAN:
        return f"{name} IS NOT NaN"
    values = [format_value(v, field_type) for v in literals]
    if op is Operation.IN:
        return f"{name} IN ({', '.join(values)})"
    if op is Operation.NOT_IN:
        return f"{name} NOT IN ({', '.join(values)})"
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
        pattern = "'" + _escape_like(str(literals[0])).replace("'", "''") + "%'"
        neg = "NOT " if op is Operation.NOT_STARTS_WITH else ""
        return f"{name} {neg}LIKE {pattern}"
    return f"{name} {_SYMBOL[op]} {values[0]}"


def _escape_like(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def format_value(value: Any, field_type: IcebergType | None) -> str:
    """Render a value as a literal the parser reads back (dates as ISO strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and field_type is not None:
        if isinstance(field_type, DateType):
            return f"'{values.format_date(value)}'"
        if isinstance(field_type, TimeType):
            return f"'{values.format_time(value)}'"
        if isinstance(field_type, (TimestampType, TimestamptzType)):
            tz = isinstance(field_type, TimestamptzType)
            return f"'{values.format_timestamp(value, with_zone=tz)}'"
        if isinstance(field_type, (TimestampNsType, TimestamptzNsType)):
            tz = isinstance(field_type, TimestamptzNsType)
            return f"'{values.format_timestamp(value, nanos=True, with_zone=tz)}'"
    if isinstance(value, (int, Decimal)):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"'{value!r}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, (bytes, bytearray)):
        return "'" + bytes(value).hex() + "'"
    if isinstance(value, uuid.UUID):
        return f"'{value}'"
    if isinstance(value, (_dt.date, _dt.time)):
        return f"'{value.isoformat()}'"
    return repr(value)
