"""Binding: resolve column names against a schema and convert values to column types.

Binding also simplifies as Iceberg-Java's binder does: ``is_null`` on a column that can
never be null is ALWAYS_FALSE, ``is_nan`` on a non-floating column is ALWAYS_FALSE,
``in`` drops values beyond an ``int``/``long``/decimal column's range and becomes ``eq``
when one value is left. A comparison with such a value holds for every value or for
none; unlike Iceberg-Java it does not become ALWAYS_TRUE but ``not_null``, because a
null satisfies no comparison (``small < 2**40`` must not select rows where ``small``
is null, as ``small < 5`` does not), and NOT of it is false.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from typing import Any

from neve.errors import ExpressionError
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
    UnboundPredicate,
    and_,
    not_,
    or_,
)
from neve.expressions.literals import ABOVE_MAX, OutOfRange, to_type
from neve.spec.schema import Schema, walk_fields
from neve.spec.types import (
    DoubleType,
    FloatType,
    ListType,
    MapType,
    NestedField,
    NestedType,
    StringType,
    StructType,
)

__all__ = ["bind", "bind_reference", "make_bound_predicate"]

_MAX_LISTED = 40


def bind(
    schema: Schema | StructType, expr: BooleanExpression, case_sensitive: bool = True
) -> BooleanExpression:
    """Bind ``expr`` to ``schema`` (a table schema or a struct such as a partition type).

    Column names are dotted paths for fields nested in structs. An already bound
    predicate is re-bound by field id, so a filter bound to one schema version can be
    bound to another. Raises :class:`ExpressionError` for unknown columns, values that
    cannot be compared with a column, and comparisons with struct/list/map columns.
    """
    key = (id(schema), id(expr), case_sensitive)
    found = _RECENT.get(key)
    if found is not None and found[0] is schema and found[1] is expr:
        return found[2]
    bound = _bind(_as_schema(schema), expr, case_sensitive)
    if len(_RECENT) >= _RECENT_SIZE:
        _RECENT.clear()
    _RECENT[key] = (schema, expr, bound)
    return bound


#: The latest binds, by the identity of the schema and the expression (both immutable):
#: a scan binds its filter to the table schema several times (to check it, and in its
#: metrics, manifest and residual evaluators). Each entry holds the two objects, so
#: that their ids are not reused while it stands. Equality would not do as the key:
#: ``0.0 == -0.0`` (and they hash alike), yet they bind to different literals.
_RECENT: dict[tuple[int, int, bool], tuple[object, BooleanExpression, BooleanExpression]] = {}
_RECENT_SIZE = 64


def _as_schema(schema: Schema | StructType) -> Schema:
    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, StructType):
        return _struct_schema(schema)
    raise ExpressionError(f"can only bind to a Schema or StructType, got {type(schema).__name__}")


@lru_cache(maxsize=64)
def _struct_schema(struct: StructType) -> Schema:
    return Schema(*struct.fields)


def _bind(
    schema: Schema, expr: BooleanExpression, case_sensitive: bool, negated: bool = False
) -> BooleanExpression:
    """``negated`` is True below an odd number of NOTs."""
    if isinstance(expr, (AlwaysTrue, AlwaysFalse)):
        return expr
    if isinstance(expr, And):
        return and_(
            _bind(schema, expr.left, case_sensitive, negated),
            _bind(schema, expr.right, case_sensitive, negated),
        )
    if isinstance(expr, Or):
        return or_(
            _bind(schema, expr.left, case_sensitive, negated),
            _bind(schema, expr.right, case_sensitive, negated),
        )
    if isinstance(expr, Not):
        return not_(_bind(schema, expr.child, case_sensitive, not negated))
    if isinstance(expr, UnboundPredicate):
        ref = bind_reference(schema, expr.term.name, case_sensitive)
        return _simplified(expr.op, ref, expr.literals, negated)
    if isinstance(expr, BoundPredicate):
        return _rebind(schema, expr, negated)
    raise ExpressionError(f"cannot bind {type(expr).__name__} {expr!r}: not a filter expression")


def _simplified(
    op: Operation, ref: BoundReference, values: tuple[Any, ...], negated: bool
) -> BooleanExpression:
    """The bound predicate; under a NOT, a predicate that simplifies is simplified in
    its negated form and negated back. NOT is defined by pushing it down to the
    predicates (see :mod:`neve.expressions.expressions`), and a comparison with an
    out-of-range value simplifies differently from its negation: ``small < 2**40``
    is ``not_null(small)``, so NOT of it is ``small >= 2**40``, false, not ``is_null``."""
    direct = make_bound_predicate(op, ref, values)
    if not negated or (isinstance(direct, BoundPredicate) and direct.op in _SAME[op]):
        return direct
    return not_(make_bound_predicate(op.negate(), ref, values))


#: The operations a bound predicate keeps when it is not simplified to another kind
#: (``in`` with one value is ``eq``).
_SAME = {op: {op} for op in Operation} | {
    Operation.IN: {Operation.IN, Operation.EQ},
    Operation.NOT_IN: {Operation.NOT_IN, Operation.NOT_EQ},
}


def _rebind(schema: Schema, pred: BoundPredicate, negated: bool) -> BooleanExpression:
    fid = pred.term.field_id
    if schema.find_field_or_none(fid) is None:
        raise ExpressionError(
            f"column {pred.term.name!r} (id {fid}) of the filter {pred} is not in "
            f"schema {schema.schema_id}; bind the unbound filter to this schema instead"
        )
    ref = _reference_for_id(schema, fid)
    if ref == pred.term:
        return pred
    return _simplified(pred.op, ref, pred.literals, negated)


def bind_reference(
    schema: Schema | StructType, name: str, case_sensitive: bool = True
) -> BoundReference:
    """Resolve a (dotted) column name to a bound reference."""
    s = _as_schema(schema)
    f = s.find_field_or_none(name, case_sensitive)
    if f is None:
        raise ExpressionError(_unknown_column_message(s, name, case_sensitive))
    return _reference_for_id(s, f.field_id)


def _reference_for_id(schema: Schema, field_id: int) -> BoundReference:
    chain = [field_id]
    parent = schema.parent_id(field_id)
    while parent is not None:
        chain.append(parent)
        parent = schema.parent_id(parent)
    chain.reverse()
    fields: tuple[NestedField, ...] = schema.fields
    accessor: list[int] = []
    path: list[str] = []
    produces_null = False
    field: NestedField | None = None
    for i, fid in enumerate(chain):
        pos = next((p for p, f in enumerate(fields) if f.field_id == fid), None)
        if pos is None:  # the parent is a list or map: no single value per row
            raise ExpressionError(
                f"cannot filter on {schema.column_name(field_id)!r}: it is inside a list or "
                "map, and filters only address columns and fields of structs"
            )
        field = fields[pos]
        accessor.append(pos)
        path.append(field.name)
        produces_null = produces_null or not field.required
        if i < len(chain) - 1:
            t = field.field_type
            fields = t.fields if isinstance(t, StructType) else ()
    assert field is not None
    return BoundReference(field, tuple(accessor), tuple(path), produces_null)


def _unknown_column_message(schema: Schema, name: str, case_sensitive: bool) -> str:
    names = [
        n for n, f, _ in walk_fields(schema.fields) if not _inside_repeated(schema, f.field_id)
    ]
    listed = ", ".join(names[:_MAX_LISTED]) + (", ..." if len(names) > _MAX_LISTED else "")
    msg = f"no column {name!r} in the schema; known columns: {listed}"
    same_but_case = [n for n in names if n.lower() == name.lower()]
    if case_sensitive and same_but_case:
        return (
            msg + f". Did you mean {same_but_case[0]!r}? Names are case sensitive here; "
            "bind with case_sensitive=False to ignore case"
        )
    close = difflib.get_close_matches(name, names, n=1)
    if not close and not case_sensitive:
        lowered = {n.lower(): n for n in names}
        close = [lowered[c] for c in difflib.get_close_matches(name.lower(), list(lowered), n=1)]
    if close:
        msg += f". Did you mean {close[0]!r}?"
    return msg


def _inside_repeated(schema: Schema, field_id: int) -> bool:
    parent = schema.parent_id(field_id)
    while parent is not None:
        p = schema.find_field_or_none(parent)
        if p is not None and isinstance(p.field_type, (ListType, MapType)):
            return True
        parent = schema.parent_id(parent)
    return False


def make_bound_predicate(
    op: Operation, ref: BoundReference, values: tuple[Any, ...]
) -> BooleanExpression:
    """Build a bound predicate, converting ``values`` to the field's type and simplifying."""
    t = ref.field_type
    name = ref.name
    if op.is_unary:
        if op in (Operation.IS_NULL, Operation.NOT_NULL):
            if not ref.produces_null:
                return ALWAYS_FALSE if op is Operation.IS_NULL else ALWAYS_TRUE
            return BoundPredicate(op, ref)
        if not isinstance(t, (FloatType, DoubleType)):
            # Only floating-point columns hold NaN (Iceberg-Java binds the same way).
            return ALWAYS_FALSE if op is Operation.IS_NAN else ALWAYS_TRUE
        return BoundPredicate(op, ref)
    if isinstance(t, NestedType):
        raise ExpressionError(
            f"cannot use {op.value} on column {name!r} of type {t}: only primitive columns "
            "compare with values; address a field inside it by its dotted name, or use "
            "IS NULL / IS NOT NULL"
        )
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH) and not isinstance(t, StringType):
        raise ExpressionError(
            f"{op.value} needs a string column, but {name!r} is {t}; compare with =, <, > instead"
        )
    if op.is_set:
        converted = [to_type(v, t, name) for v in values]
        kept = sorted({v for v in converted if not isinstance(v, OutOfRange)})
        if not kept:
            return ALWAYS_FALSE if op is Operation.IN else ALWAYS_TRUE
        if len(kept) == 1:
            return BoundPredicate(
                Operation.EQ if op is Operation.IN else Operation.NOT_EQ, ref, (kept[0],)
            )
        return BoundPredicate(op, ref, tuple(kept))
    if len(values) != 1:
        raise ExpressionError(f"{op.value} on {name!r} takes one value, got {len(values)}")
    value = to_type(values[0], t, name)
    if isinstance(value, OutOfRange):
        # Every value of the column lies below ABOVE_MAX (above BELOW_MIN): the
        # comparison holds for every row but those where the column is null, which
        # satisfy no comparison; != holds for nulls too.
        if op is Operation.NOT_EQ:
            return ALWAYS_TRUE
        below = (
            (Operation.LT, Operation.LT_EQ)
            if value is ABOVE_MAX
            else (Operation.GT, Operation.GT_EQ)
        )
        if op in below:
            return make_bound_predicate(Operation.NOT_NULL, ref, ())
        return ALWAYS_FALSE
    return BoundPredicate(op, ref, (value,))
