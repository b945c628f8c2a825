"""Row filters in the REST catalog's JSON form (the spec's ``Predicate``): what a
client sends to plan a scan on the server, and the residual filter of each task.

neve writes the form every client reads (``{"type": "lt", "term": "x", "value": 5}``,
``{"type": "and", "left": ..., "right": ...}``, ``true`` / ``false``) and reads that
form and the newer one (``child``/``left``/``right`` value expressions, typed literal
objects). Literals are JSON values; a schema, when given, turns text into the column's
type (dates, timestamps, decimals, UUIDs, binary as hex), as the JSON single-value form
says.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from neve.errors import ExpressionError, ValidationError
from neve.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    Not,
    Operation,
    Or,
    UnboundPredicate,
    and_,
    not_,
    or_,
    predicate,
)
from neve.spec.schema import Schema
from neve.spec.types import BinaryType, FixedType, PrimitiveType, StringType
from neve.spec.values import from_json, to_json

__all__ = ["expression_from_json", "expression_to_json"]

_OPS = {op: op.value.replace("_", "-") for op in Operation}
_OPS_BY_NAME = {v: k for k, v in _OPS.items()}


def _literal_to_json(value: Any, bound: BoundPredicate | None) -> Any:
    if bound is not None and isinstance(bound.term.field_type, PrimitiveType):
        return to_json(bound.term.field_type, value)
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return to_json_float(value)
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex().upper()
    raise ExpressionError(f"no JSON form for the filter value {value!r}")


def to_json_float(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def expression_to_json(expr: BooleanExpression) -> Any:
    """A filter (bound or unbound) in the REST JSON form."""
    if isinstance(expr, AlwaysTrue):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, (And, Or)):
        kind = "and" if isinstance(expr, And) else "or"
        return {
            "type": kind,
            "left": expression_to_json(expr.left),
            "right": expression_to_json(expr.right),
        }
    if isinstance(expr, Not):
        return {"type": "not", "child": expression_to_json(expr.child)}
    if isinstance(expr, (UnboundPredicate, BoundPredicate)):
        bound = expr if isinstance(expr, BoundPredicate) else None
        out: dict[str, Any] = {"type": _OPS[expr.op], "term": expr.term.name}
        if expr.op.is_set:
            out["values"] = [_literal_to_json(v, bound) for v in expr.literals]
        elif not expr.op.is_unary:
            out["value"] = _literal_to_json(expr.literal, bound)
        return out
    raise ExpressionError(f"no JSON form for the filter {expr!r}")


def _term(data: Mapping[str, Any]) -> str:
    raw = data.get("term", data.get("child", data.get("left")))
    if isinstance(raw, Mapping):
        raw = raw.get("term", raw.get("name", raw.get("reference")))
    if not isinstance(raw, str) or not raw:
        raise ExpressionError(
            f"a predicate needs a column reference (a term), got {data.get('term')!r}; "
            "transforms in filters are not supported"
        )
    return raw


def _raw_literal(raw: Any) -> Any:
    if isinstance(raw, Mapping) and "value" in raw:
        return raw["value"]  # a typed literal object {"type": ..., "value": ...}
    return raw


def _convert(value: Any, name: str, schema: Schema | None, case_sensitive: bool) -> Any:
    value = _raw_literal(value)
    if schema is None or value is None:
        return value
    field = schema.find_field_or_none(name, case_sensitive)
    if field is None or not isinstance(field.field_type, PrimitiveType):
        return value
    t = field.field_type
    if isinstance(value, str) and not isinstance(t, StringType):
        if isinstance(t, (BinaryType, FixedType)):
            return bytes.fromhex(value)
        try:
            return from_json(t, value)
        except ValidationError as exc:
            raise ExpressionError(f"value {value!r} does not fit column {name!r} ({t})") from exc
    return value


def expression_from_json(
    data: Any, schema: Schema | None = None, case_sensitive: bool = True
) -> BooleanExpression:
    """Read a REST JSON filter into an unbound neve expression (ExpressionError when
    it is malformed)."""
    if isinstance(data, bool):
        return ALWAYS_TRUE if data else ALWAYS_FALSE
    if not isinstance(data, Mapping):
        raise ExpressionError(f"a filter is an object or a boolean, not {data!r}")
    kind = data.get("type")
    if kind == "true":
        return ALWAYS_TRUE
    if kind == "false":
        return ALWAYS_FALSE
    if kind in ("and", "or"):
        left = expression_from_json(data.get("left"), schema, case_sensitive)
        right = expression_from_json(data.get("right"), schema, case_sensitive)
        return and_(left, right) if kind == "and" else or_(left, right)
    if kind == "not":
        return not_(expression_from_json(data.get("child"), schema, case_sensitive))
    op = _OPS_BY_NAME.get(str(kind))
    if op is None:
        raise ExpressionError(f"unknown filter type {kind!r}")
    name = _term(data)
    if op.is_unary:
        return predicate(op, name)
    if op.is_set:
        values = data.get("values")
        if not isinstance(values, list):
            raise ExpressionError(f"{kind} on {name!r} needs a list of values")
        return predicate(op, name, [_convert(v, name, schema, case_sensitive) for v in values])
    if "value" in data:
        raw = data["value"]
    elif "right" in data:
        raw = data["right"]
    else:
        raise ExpressionError(f"{kind} on {name!r} needs a value")
    return predicate(op, name, [_convert(raw, name, schema, case_sensitive)])
