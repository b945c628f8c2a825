"""Projecting row filters through partition transforms (Iceberg-Java's ``Projections``).

An *inclusive* projection of a row predicate ``p`` through a partition field's
transform ``t`` is a predicate ``q`` on partition values with ``p(v) => q(t(v))``: a
partition whose value fails ``q`` holds no matching row, so it can be skipped. A
*strict* projection has ``q(t(v)) => p(v)``: every row of a partition whose value
passes ``q`` matches ``p``. ``None`` means no such predicate is known (then inclusive
is "true" and strict is "false").

The rules follow Iceberg-Java's transforms, edge cases included: ``x < 5`` through
``truncate`` projects ``<= truncate(4)``; ``starts_with`` projects through string
truncation; ``not_eq``/``not_in`` project only strictly; ``bucket`` projects ``eq``/``in``
inclusively and ``not_eq``/``not_in`` strictly; and year/month/day/hour projections are
widened for values before 1970, because Iceberg 0.10 and earlier wrote those partition
values one too large ("fixInclusiveTimeProjection" / "fixStrictTimeProjection").
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from neve.expressions.binding import bind
from neve.expressions.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    And,
    BooleanExpression,
    BoundPredicate,
    BoundReference,
    Operation,
    Or,
    and_,
    or_,
)
from neve.expressions.visitors import rewrite_not
from neve.spec.partition import PartitionField, PartitionSpec
from neve.spec.schema import Schema
from neve.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)
from neve.spec.types import (
    UNKNOWN,
    BinaryType,
    DateType,
    DecimalType,
    FixedType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
)

__all__ = [
    "InclusiveProjection",
    "StrictProjection",
    "inclusive_projection",
    "partition_struct",
    "project_inclusive",
    "project_strict",
    "strict_projection",
]

_CTX = decimal.Context(prec=200)
_TEMPORAL = (YearTransform, MonthTransform, DayTransform, HourTransform)
_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)

Apply = Callable[[Any], Any]


def _pred(op: Operation, target: BoundReference, values: Iterable[Any] = ()) -> BooleanExpression:
    """A bound predicate on the partition field; sets are deduplicated and simplified."""
    if op.is_unary:
        return BoundPredicate(op, target)
    if op.is_set:
        kept = sorted(set(values))
        if not kept:
            return ALWAYS_FALSE if op is Operation.IN else ALWAYS_TRUE
        if len(kept) == 1:
            return BoundPredicate(
                Operation.EQ if op is Operation.IN else Operation.NOT_EQ, target, (kept[0],)
            )
        return BoundPredicate(op, target, tuple(kept))
    (value,) = tuple(values)
    return BoundPredicate(op, target, (value,))


# -- single predicates --------------------------------------------------------------------


def project_inclusive(
    transform: Transform,
    source_type: IcebergType,
    pred: BoundPredicate,
    target: BoundReference,
) -> BooleanExpression | None:
    """Inclusive projection of ``pred`` (on the source column) onto ``target``.

    ``target`` is the bound reference of the partition field (see :func:`partition_struct`).
    """
    op = pred.op
    if isinstance(transform, VoidTransform):
        return None
    if op.is_unary:
        return _project_unary(transform, pred, target)
    if isinstance(transform, IdentityTransform):
        return _pred(op, target, pred.literals)
    apply = transform.transformer(source_type)
    if isinstance(transform, BucketTransform):
        if op is Operation.EQ:
            return _pred(op, target, (apply(pred.literal),))
        if op is Operation.IN:
            return _pred(op, target, (apply(v) for v in pred.literals))
        return None
    if isinstance(transform, TruncateTransform):
        if op is Operation.IN:
            return _pred(op, target, (apply(v) for v in pred.literals))
        if op.is_set:
            return None
        if isinstance(source_type, (IntegerType, LongType, DecimalType)):
            return _number_inclusive(op, pred.literal, apply, target, source_type)
        if isinstance(source_type, StringType):
            return _string_inclusive(op, pred.literal, apply, target, transform)
        if isinstance(source_type, (BinaryType, FixedType)):
            return _array_inclusive(op, pred.literal, apply, target)
        return None
    if isinstance(transform, _TEMPORAL):
        if op is Operation.IN:
            return _fix_inclusive_time(_pred(op, target, (apply(v) for v in pred.literals)))
        if op.is_set:
            return None
        return _fix_inclusive_time(_number_inclusive(op, pred.literal, apply, target, source_type))
    return None


def project_strict(
    transform: Transform,
    source_type: IcebergType,
    pred: BoundPredicate,
    target: BoundReference,
) -> BooleanExpression | None:
    """Strict projection of ``pred`` (on the source column) onto ``target``."""
    op = pred.op
    if isinstance(transform, VoidTransform):
        return None
    if op.is_unary:
        return _project_unary(transform, pred, target)
    if isinstance(transform, IdentityTransform):
        return _pred(op, target, pred.literals)
    apply = transform.transformer(source_type)
    if isinstance(transform, BucketTransform):
        if op is Operation.NOT_EQ:
            return _pred(op, target, (apply(pred.literal),))
        if op is Operation.NOT_IN:
            return _pred(op, target, (apply(v) for v in pred.literals))
        return None
    if isinstance(transform, TruncateTransform):
        if op is Operation.NOT_IN:
            return _pred(op, target, (apply(v) for v in pred.literals))
        if op.is_set:
            return None
        if isinstance(source_type, (IntegerType, LongType, DecimalType)):
            return _number_strict(op, pred.literal, apply, target, source_type)
        if isinstance(source_type, StringType):
            return _string_strict(op, pred.literal, apply, target, transform)
        if isinstance(source_type, (BinaryType, FixedType)):
            return _array_strict(op, pred.literal, apply, target)
        return None
    if isinstance(transform, _TEMPORAL):
        if op is Operation.NOT_IN:
            return _fix_strict_time(_pred(op, target, (apply(v) for v in pred.literals)))
        if op.is_set:
            return None
        return _fix_strict_time(_number_strict(op, pred.literal, apply, target, source_type))
    return None


def _project_unary(
    transform: Transform, pred: BoundPredicate, target: BoundReference
) -> BooleanExpression | None:
    # Every transform maps null to null and only null to null, so null tests carry
    # over unchanged; only identity keeps NaN (the other transforms take no floats).
    if pred.op in (Operation.IS_NULL, Operation.NOT_NULL):
        return _pred(pred.op, target)
    if isinstance(transform, IdentityTransform):
        return _pred(pred.op, target)
    return None


def _step(source_type: IcebergType) -> Any:
    """The distance between adjacent values of an integer-like or decimal type."""
    if isinstance(source_type, DecimalType):
        return Decimal(1).scaleb(-source_type.scale)
    return 1


def _in_range(value: Any, source_type: IcebergType) -> bool:
    if isinstance(source_type, (IntegerType, DateType)):
        lo, hi = _INT_RANGE
    elif isinstance(
        source_type,
        (LongType, TimeType, TimestampType, TimestamptzType, TimestampNsType, TimestamptzNsType),
    ):
        lo, hi = _LONG_RANGE
    else:
        return True
    return bool(lo <= value <= hi)


def _shift(value: Any, delta: int, source_type: IcebergType) -> Any:
    step = _step(source_type)
    if isinstance(step, Decimal):
        return _CTX.add(value, _CTX.multiply(step, Decimal(delta)))
    return value + delta * step


def _number_inclusive(
    op: Operation, b: Any, apply: Apply, target: BoundReference, source_type: IcebergType
) -> BooleanExpression | None:
    # Adjust an open bound to the closed one first: x < b is x <= b - 1 (one step).
    if op is Operation.LT:
        closed = _shift(b, -1, source_type)
        if not _in_range(closed, source_type):
            return ALWAYS_FALSE  # nothing is below the smallest value
        return _pred(Operation.LT_EQ, target, (apply(closed),))
    if op is Operation.LT_EQ:
        return _pred(Operation.LT_EQ, target, (apply(b),))
    if op is Operation.GT:
        closed = _shift(b, 1, source_type)
        if not _in_range(closed, source_type):
            return ALWAYS_FALSE
        return _pred(Operation.GT_EQ, target, (apply(closed),))
    if op is Operation.GT_EQ:
        return _pred(Operation.GT_EQ, target, (apply(b),))
    if op is Operation.EQ:
        return _pred(Operation.EQ, target, (apply(b),))
    return None


def _number_strict(
    op: Operation, b: Any, apply: Apply, target: BoundReference, source_type: IcebergType
) -> BooleanExpression | None:
    if op is Operation.LT:
        return _pred(Operation.LT, target, (apply(b),))
    if op is Operation.LT_EQ:
        above = _shift(b, 1, source_type)
        if not _in_range(above, source_type):
            return _pred(Operation.NOT_NULL, target)  # every non-null value is <= b
        return _pred(Operation.LT, target, (apply(above),))
    if op is Operation.GT:
        return _pred(Operation.GT, target, (apply(b),))
    if op is Operation.GT_EQ:
        below = _shift(b, -1, source_type)
        if not _in_range(below, source_type):
            return _pred(Operation.NOT_NULL, target)
        return _pred(Operation.GT, target, (apply(below),))
    if op is Operation.NOT_EQ:
        return _pred(Operation.NOT_EQ, target, (apply(b),))
    # No strict projection of eq: neighbouring values share a partition.
    return None


def _array_inclusive(
    op: Operation, b: Any, apply: Apply, target: BoundReference
) -> BooleanExpression | None:
    if op in (Operation.LT, Operation.LT_EQ):
        return _pred(Operation.LT_EQ, target, (apply(b),))
    if op in (Operation.GT, Operation.GT_EQ):
        return _pred(Operation.GT_EQ, target, (apply(b),))
    if op is Operation.EQ:
        return _pred(Operation.EQ, target, (apply(b),))
    if op is Operation.STARTS_WITH:
        return _pred(Operation.STARTS_WITH, target, (apply(b),))
    return None


def _array_strict(
    op: Operation, b: Any, apply: Apply, target: BoundReference
) -> BooleanExpression | None:
    if op in (Operation.LT, Operation.LT_EQ):
        return _pred(Operation.LT, target, (apply(b),))
    if op in (Operation.GT, Operation.GT_EQ):
        return _pred(Operation.GT, target, (apply(b),))
    if op is Operation.NOT_EQ:
        return _pred(Operation.NOT_EQ, target, (apply(b),))
    return None


def _string_inclusive(
    op: Operation, b: str, apply: Apply, target: BoundReference, transform: TruncateTransform
) -> BooleanExpression | None:
    width = transform.width
    if op is Operation.STARTS_WITH:
        if len(b) < width:
            return _pred(Operation.STARTS_WITH, target, (b,))
        if len(b) == width:
            return _pred(Operation.EQ, target, (b,))
        return _pred(Operation.STARTS_WITH, target, (apply(b),))
    if op is Operation.NOT_STARTS_WITH:
        if len(b) < width:
            return _pred(Operation.NOT_STARTS_WITH, target, (b,))
        if len(b) == width:
            return _pred(Operation.NOT_EQ, target, (b,))
        return None
    return _array_inclusive(op, b, apply, target)


def _string_strict(
    op: Operation, b: str, apply: Apply, target: BoundReference, transform: TruncateTransform
) -> BooleanExpression | None:
    width = transform.width
    if op is Operation.STARTS_WITH:
        if len(b) < width:
            return _pred(Operation.STARTS_WITH, target, (b,))
        if len(b) == width:
            return _pred(Operation.EQ, target, (b,))
        return None
    if op is Operation.NOT_STARTS_WITH:
        if len(b) < width:
            return _pred(Operation.NOT_STARTS_WITH, target, (b,))
        if len(b) == width:
            return _pred(Operation.NOT_EQ, target, (b,))
        return _pred(Operation.NOT_STARTS_WITH, target, (apply(b),))
    return _array_strict(op, b, apply, target)


def _fix_inclusive_time(projected: BooleanExpression | None) -> BooleanExpression | None:
    """Widen an inclusive time projection to also match pre-1970 values that Iceberg
    0.10 and earlier wrote one too large (Iceberg-Java ``fixInclusiveTimeProjection``)."""
    if not isinstance(projected, BoundPredicate):
        return projected
    op, target = projected.op, projected.term
    if op in (Operation.LT, Operation.LT_EQ):
        v = projected.literal
        return _pred(op, target, (v + 1,)) if v < 0 else projected
    if op is Operation.EQ:
        v = projected.literal
        return _pred(Operation.IN, target, (v, v + 1)) if v < 0 else projected
    if op is Operation.IN:
        values = set(projected.literals)
        values.update(v + 1 for v in projected.literals if v < 0)
        return _pred(Operation.IN, target, values)
    if op in (Operation.NOT_EQ, Operation.NOT_IN):
        return None
    return projected


def _fix_strict_time(projected: BooleanExpression | None) -> BooleanExpression | None:
    """Narrow a strict time projection for the same pre-1970 values
    (Iceberg-Java ``fixStrictTimeProjection``)."""
    if not isinstance(projected, BoundPredicate):
        return projected
    op, target = projected.op, projected.term
    if op in (Operation.GT, Operation.GT_EQ):
        v = projected.literal
        return _pred(op, target, (v + 1,)) if v <= 0 else projected
    if op is Operation.NOT_EQ:
        v = projected.literal
        return _pred(Operation.NOT_IN, target, (v, v + 1)) if v < 0 else projected
    if op is Operation.NOT_IN:
        values = set(projected.literals)
        values.update(v + 1 for v in projected.literals if v < 0)
        return _pred(Operation.NOT_IN, target, values)
    if op in (Operation.EQ, Operation.IN):
        return None
    return projected


# -- whole filters -------------------------------------------------------------------------


def partition_struct(spec: PartitionSpec, schema: Schema) -> StructType:
    """The partition tuple's struct type; a field whose source column was dropped from
    the schema gets type ``unknown`` (no filter can name that column any more)."""
    fields = []
    for f in spec.fields:
        src = schema.find_field_or_none(f.source_id)
        t = f.transform.result_type(src.field_type) if src is not None else UNKNOWN
        fields.append(NestedField(f.field_id, f.name, t, False))
    return StructType(*fields)


class _Projection:
    def __init__(self, schema: Schema, spec: PartitionSpec, case_sensitive: bool = True) -> None:
        self.schema = schema
        self.spec = spec
        self.case_sensitive = case_sensitive
        self.partition_type = partition_struct(spec, schema)
        self._by_source: dict[int, list[tuple[PartitionField, IcebergType, BoundReference]]] = {}
        for pos, (pf, nf) in enumerate(zip(spec.fields, self.partition_type.fields, strict=True)):
            src = schema.find_field_or_none(pf.source_id)
            if src is None:
                continue
            target = BoundReference(nf, (pos,), (nf.name,), True)
            self._by_source.setdefault(pf.source_id, []).append((pf, src.field_type, target))

    def parts(self, source_id: int) -> list[tuple[PartitionField, IcebergType, BoundReference]]:
        """The partition fields fed by a source column, with its type and their references."""
        return self._by_source.get(source_id, [])

    def project(self, expr: BooleanExpression) -> BooleanExpression:
        """Project a row filter (bound to the schema or not) onto the partition struct.

        The result is bound to :attr:`partition_type` and has no ``Not`` nodes.
        """
        return self._walk(rewrite_not(bind(self.schema, expr, self.case_sensitive)))

    def __call__(self, expr: BooleanExpression) -> BooleanExpression:
        """Same as :meth:`project`."""
        return self.project(expr)

    def _walk(self, expr: BooleanExpression) -> BooleanExpression:
        if isinstance(expr, And):
            return and_(self._walk(expr.left), self._walk(expr.right))
        if isinstance(expr, Or):
            return or_(self._walk(expr.left), self._walk(expr.right))
        if isinstance(expr, BoundPredicate):
            return self.predicate(expr)
        return expr  # ALWAYS_TRUE / ALWAYS_FALSE

    def predicate(self, pred: BoundPredicate) -> BooleanExpression:
        raise NotImplementedError


class InclusiveProjection(_Projection):
    """Row filter -> partition filter that every partition holding a match satisfies."""

    def predicate(self, pred: BoundPredicate) -> BooleanExpression:
        # With several partition fields on one column (say bucket(7, x) and bucket(5, x),
        # or day(ts) and hour(ts)) every projection must hold: AND them.
        result: BooleanExpression = ALWAYS_TRUE
        for pf, source_type, target in self.parts(pred.term.field_id):
            projected = project_inclusive(pf.transform, source_type, pred, target)
            if projected is not None:
                result = and_(result, projected)
        return result


class StrictProjection(_Projection):
    """Row filter -> partition filter that only partitions of all-matching rows satisfy."""

    def predicate(self, pred: BoundPredicate) -> BooleanExpression:
        result: BooleanExpression = ALWAYS_FALSE
        for pf, source_type, target in self.parts(pred.term.field_id):
            projected = project_strict(pf.transform, source_type, pred, target)
            if projected is not None:
                result = or_(result, projected)
        return result


def inclusive_projection(
    schema: Schema, spec: PartitionSpec, case_sensitive: bool = True
) -> InclusiveProjection:
    """The inclusive projection visitor of ``spec``; call ``.project(row_filter)``."""
    return InclusiveProjection(schema, spec, case_sensitive)


def strict_projection(
    schema: Schema, spec: PartitionSpec, case_sensitive: bool = True
) -> StrictProjection:
    """The strict projection visitor of ``spec``; call ``.project(row_filter)``."""
    return StrictProjection(schema, spec, case_sensitive)
