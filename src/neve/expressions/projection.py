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

Unlike Iceberg-Java, projections reason with the exact transform and then account for
the values Java's wrapping int arithmetic stores (``truncate`` near the limits of int
and long, ``hour`` beyond 2**31 hours; :func:`neve.spec.transforms.wrapped_ranges`),
so that a row whose partition value wrapped is never pruned (issue 9: with
``truncate(100, i)``, ``i = -2147483648`` is stored in partition 2147483596, and
``i < -5`` must still find it) nor counted as matching when it does not.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

from neve.expressions.binding import bind
from neve.expressions.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    BooleanExpression,
    BoundPredicate,
    BoundReference,
    Operation,
    and_,
    or_,
)
from neve.expressions.visitors import BoundExpressionVisitor, rewrite_not, visit
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
    WrappedRange,
    YearTransform,
    exact_transformer,
    wrapped_ranges,
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


@dataclass(frozen=True)
class _Rules:
    """What tells inclusive projection from strict: the rest of the algorithm is shared.

    ``numbers`` maps a comparison to the partition comparison and the steps to move the
    literal first (``x < 5`` is ``x <= 4`` inclusively); ``arrays`` does the same for
    binary and strings, which have no next value. ``set_op`` is the one set operation
    that projects value by value (bucket also projects ``single_op``). ``prefix_op`` is
    the prefix test that still projects when the prefix is longer than the truncation
    width. ``time_ops`` and ``time_shift_at_most`` steer the pre-1970 time fix.
    """

    numbers: Mapping[Operation, tuple[Operation, int]]
    arrays: Mapping[Operation, Operation]
    single_op: Operation
    set_op: Operation
    prefix_op: Operation
    time_ops: tuple[Operation, Operation]
    time_shift_at_most: int
    beyond_range: Callable[[BoundReference], BooleanExpression]
    empty: BooleanExpression
    combine: Callable[[BooleanExpression, BooleanExpression], BooleanExpression]


_INCLUSIVE = _Rules(
    numbers={
        Operation.LT: (Operation.LT_EQ, -1),
        Operation.LT_EQ: (Operation.LT_EQ, 0),
        Operation.GT: (Operation.GT_EQ, 1),
        Operation.GT_EQ: (Operation.GT_EQ, 0),
        Operation.EQ: (Operation.EQ, 0),
    },
    arrays={
        Operation.LT: Operation.LT_EQ,
        Operation.LT_EQ: Operation.LT_EQ,
        Operation.GT: Operation.GT_EQ,
        Operation.GT_EQ: Operation.GT_EQ,
        Operation.EQ: Operation.EQ,
        Operation.STARTS_WITH: Operation.STARTS_WITH,
    },
    single_op=Operation.EQ,
    set_op=Operation.IN,
    prefix_op=Operation.STARTS_WITH,
    time_ops=(Operation.LT, Operation.LT_EQ),
    time_shift_at_most=-1,
    beyond_range=lambda target: ALWAYS_FALSE,  # nothing lies beyond the extreme value
    empty=ALWAYS_TRUE,
    combine=and_,
)
_STRICT = _Rules(
    # No strict projection of eq: neighbouring values share a partition.
    numbers={
        Operation.LT: (Operation.LT, 0),
        Operation.LT_EQ: (Operation.LT, 1),
        Operation.GT: (Operation.GT, 0),
        Operation.GT_EQ: (Operation.GT, -1),
        Operation.NOT_EQ: (Operation.NOT_EQ, 0),
    },
    arrays={
        Operation.LT: Operation.LT,
        Operation.LT_EQ: Operation.LT,
        Operation.GT: Operation.GT,
        Operation.GT_EQ: Operation.GT,
        Operation.NOT_EQ: Operation.NOT_EQ,
    },
    single_op=Operation.NOT_EQ,
    set_op=Operation.NOT_IN,
    prefix_op=Operation.NOT_STARTS_WITH,
    time_ops=(Operation.GT, Operation.GT_EQ),
    time_shift_at_most=0,
    beyond_range=lambda target: _pred(Operation.NOT_NULL, target),  # every value matches
    empty=ALWAYS_FALSE,
    combine=or_,
)


def project_inclusive(
    transform: Transform,
    source_type: IcebergType,
    pred: BoundPredicate,
    target: BoundReference,
) -> BooleanExpression | None:
    """Inclusive projection of ``pred`` (on the source column) onto ``target``.

    ``target`` is the bound reference of the partition field (see :func:`partition_struct`).
    """
    return _project(_INCLUSIVE, transform, source_type, pred, target)


def project_strict(
    transform: Transform,
    source_type: IcebergType,
    pred: BoundPredicate,
    target: BoundReference,
) -> BooleanExpression | None:
    """Strict projection of ``pred`` (on the source column) onto ``target``."""
    return _project(_STRICT, transform, source_type, pred, target)


def _project(
    rules: _Rules,
    transform: Transform,
    source_type: IcebergType,
    pred: BoundPredicate,
    target: BoundReference,
) -> BooleanExpression | None:
    op = pred.op
    if isinstance(transform, VoidTransform):
        return None
    if op.is_unary:
        return _project_unary(transform, pred, target)
    if isinstance(transform, IdentityTransform):
        return _pred(op, target, pred.literals)
    # The exact transform: where Iceberg-Java's int arithmetic wraps, the stored value
    # differs, and _wrapped accounts for those ranges apart.
    apply = exact_transformer(transform, source_type)
    if isinstance(transform, BucketTransform):
        # Buckets keep equality only: eq/in inclusively, not_eq/not_in strictly.
        return _each(op, apply, pred, target) if op in (rules.single_op, rules.set_op) else None
    if not isinstance(transform, (TruncateTransform, *_TEMPORAL)):
        return None
    temporal = isinstance(transform, _TEMPORAL)
    if op.is_set:
        # in (inclusive) / not_in (strict) map value by value; the other one cannot.
        projected = _each(op, apply, pred, target) if op is rules.set_op else None
    elif isinstance(transform, TruncateTransform):
        projected = _truncate(rules, op, pred.literal, apply, target, source_type, transform.width)
    else:
        projected = _number(rules, op, pred.literal, apply, target, source_type)
    if temporal:
        projected = _fix_time(rules, projected)
    wraps = wrapped_ranges(transform, source_type)
    if wraps and projected is not None:
        projected = _wrapped(rules, projected, pred, wraps, apply, target, temporal)
    return projected


def _truncate(
    rules: _Rules,
    op: Operation,
    b: Any,
    apply: Apply,
    target: BoundReference,
    source_type: IcebergType,
    width: int,
) -> BooleanExpression | None:
    if isinstance(source_type, (IntegerType, LongType, DecimalType)):
        return _number(rules, op, b, apply, target, source_type)
    if isinstance(source_type, StringType):
        return _string(rules, op, b, apply, target, width)
    if isinstance(source_type, (BinaryType, FixedType)):
        return _array(rules, op, b, apply, target)
    return None


def _each(
    op: Operation, apply: Apply, pred: BoundPredicate, target: BoundReference
) -> BooleanExpression:
    """``op`` on the transformed literals (one for ``eq``, all of them for ``in``)."""
    return _pred(op, target, map(apply, pred.literals))


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


def _number(
    rules: _Rules,
    op: Operation,
    b: Any,
    apply: Apply,
    target: BoundReference,
    source_type: IcebergType,
) -> BooleanExpression | None:
    rule = rules.numbers.get(op)
    if rule is None:
        return None
    to, steps = rule
    if steps:  # an open bound becomes the closed one first: x < b is x <= b - 1
        b = _shift(b, steps, source_type)
        if not _in_range(b, source_type):
            return rules.beyond_range(target)
    return _pred(to, target, (apply(b),))


def _array(
    rules: _Rules, op: Operation, b: Any, apply: Apply, target: BoundReference
) -> BooleanExpression | None:
    to = rules.arrays.get(op)
    return None if to is None else _pred(to, target, (apply(b),))


def _string(
    rules: _Rules, op: Operation, b: str, apply: Apply, target: BoundReference, width: int
) -> BooleanExpression | None:
    if op not in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
        return _array(rules, op, b, apply, target)
    if len(b) < width:
        return _pred(op, target, (b,))
    if len(b) == width:
        return _pred(
            Operation.EQ if op is Operation.STARTS_WITH else Operation.NOT_EQ, target, (b,)
        )
    # A longer prefix, truncated, is still necessary for starts_with (inclusive) and
    # still sufficient for not_starts_with (strict).
    return _pred(op, target, (apply(b),)) if op is rules.prefix_op else None


def _fix_time(rules: _Rules, projected: BooleanExpression | None) -> BooleanExpression | None:
    """Iceberg 0.10 and earlier wrote pre-1970 year/month/day/hour values one too large:
    widen an inclusive projection to match them too, narrow a strict one to exclude them
    (Iceberg-Java ``fixInclusiveTimeProjection`` / ``fixStrictTimeProjection``)."""
    if not isinstance(projected, BoundPredicate):
        return projected
    op, target = projected.op, projected.term
    if op in rules.time_ops:
        v = projected.literal
        return _pred(op, target, (v + 1,)) if v <= rules.time_shift_at_most else projected
    if op in (rules.single_op, rules.set_op):
        values = set(projected.literals)
        values.update(v + 1 for v in projected.literals if v < 0)
        return _pred(rules.set_op, target, values)
    if op in (rules.single_op.negate(), rules.set_op.negate()):
        return None
    return projected


def _holds_in(op: Operation, literals: tuple[Any, ...], lo: int, hi: int) -> list[tuple[int, int]]:
    """The sub-ranges of the integers ``lo..hi`` where ``op`` holds (comparisons,
    equality and sets only: what truncate and hour project)."""
    if op.is_set or op in (Operation.EQ, Operation.NOT_EQ):
        points = sorted(v for v in set(literals) if lo <= v <= hi)
        if op in (Operation.IN, Operation.EQ):
            return [(v, v) for v in points]
        out, start = [], lo  # not_in / not_eq: the gaps between the values
        for v in points:
            if start <= v - 1:
                out.append((start, v - 1))
            start = v + 1
        return [*out, (start, hi)] if start <= hi else out
    b = literals[0]
    a, c = {
        Operation.LT: (lo, min(hi, b - 1)),
        Operation.LT_EQ: (lo, min(hi, b)),
        Operation.GT: (max(lo, b + 1), hi),
        Operation.GT_EQ: (max(lo, b), hi),
    }[op]
    return [(a, c)] if a <= c else []


def _wrapped(
    rules: _Rules,
    projected: BooleanExpression,
    pred: BoundPredicate,
    wraps: tuple[WrappedRange, ...],
    apply: Apply,
    target: BoundReference,
    temporal: bool,
) -> BooleanExpression:
    """Correct a projection made with the exact transform for the source ranges whose
    stored values wrapped (:func:`neve.spec.transforms.wrapped_ranges`).

    Stored values of a wrapped range are the exact ones plus the range's offset, so the
    rows of a sub-range ``a..c`` are stored between ``exact(a) + offset`` and
    ``exact(c) + offset`` (and one more for pre-1970 temporal values, which old writers
    stored one too large, as :func:`_fix_time` allows). Inclusively, the stored values
    of the rows that may match are admitted too; strictly, the stored values of rows
    that do not match are excluded.
    """
    inclusive = rules is _INCLUSIVE
    op = pred.op if inclusive else pred.op.negate()
    parts: list[BooleanExpression] = []
    for w in wraps:
        for a, c in _holds_in(op, pred.literals, w.lo, w.hi):
            x, y = apply(a) + w.offset, apply(c) + w.offset
            if temporal and c < 0:
                y += 1
            if isinstance(projected, BoundPredicate) and not projected.op.is_unary:
                # nothing to add when the projection already admits (excludes) them
                inside = _holds_in(projected.op, projected.literals, x, y)
                if inside == ([(x, y)] if inclusive else []):
                    continue
            parts.append(_between(target, x, y) if inclusive else _outside(target, x, y))
    return or_(projected, *parts) if inclusive else and_(projected, *parts)


def _between(target: BoundReference, x: int, y: int) -> BooleanExpression:
    """Partition values ``x..y`` (bounds at the limits of the type left out)."""
    if x == y:
        return _pred(Operation.EQ, target, (x,))
    lo, hi = _INT_RANGE if isinstance(target.field_type, IntegerType) else _LONG_RANGE
    above = _pred(Operation.GT_EQ, target, (x,)) if x > lo else ALWAYS_TRUE
    below = _pred(Operation.LT_EQ, target, (y,)) if y < hi else ALWAYS_TRUE
    return and_(above, below)


def _outside(target: BoundReference, x: int, y: int) -> BooleanExpression:
    """Partition values other than ``x..y`` (nulls included: they hold no value)."""
    if x == y:
        return _pred(Operation.NOT_EQ, target, (x,))
    lo, hi = _INT_RANGE if isinstance(target.field_type, IntegerType) else _LONG_RANGE
    below = _pred(Operation.LT, target, (x,)) if x > lo else ALWAYS_FALSE
    above = _pred(Operation.GT, target, (y,)) if y < hi else ALWAYS_FALSE
    return or_(below, above, _pred(Operation.IS_NULL, target))


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


class _Projection(BoundExpressionVisitor[BooleanExpression]):
    """Projects each predicate (:meth:`predicate`); ``And`` and ``Or`` of projections
    are simplified as they are built."""

    _rules: ClassVar[_Rules]

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
        return visit(rewrite_not(bind(self.schema, expr, self.case_sensitive)), self)

    def __call__(self, expr: BooleanExpression) -> BooleanExpression:
        """Same as :meth:`project`."""
        return self.project(expr)

    def visit_true(self) -> BooleanExpression:
        return ALWAYS_TRUE

    def visit_false(self) -> BooleanExpression:
        return ALWAYS_FALSE

    def visit_and(self, left: BooleanExpression, right: BooleanExpression) -> BooleanExpression:
        return and_(left, right)

    def visit_or(self, left: BooleanExpression, right: BooleanExpression) -> BooleanExpression:
        return or_(left, right)

    def visit_predicate(self, pred: BoundPredicate) -> BooleanExpression:
        return self.predicate(pred)

    def predicate(self, pred: BoundPredicate) -> BooleanExpression:
        """The projection of one predicate through every partition field of its column.

        With several fields on one column (say bucket(7, x) and bucket(5, x), or day(ts)
        and hour(ts)) every inclusive projection must hold, so they are ANDed; any one
        strict projection suffices, so those are ORed.
        """
        rules = self._rules
        result = rules.empty
        for pf, source_type, target in self.parts(pred.term.field_id):
            projected = _project(rules, pf.transform, source_type, pred, target)
            if projected is not None:
                result = rules.combine(result, projected)
        return result


class InclusiveProjection(_Projection):
    """Row filter -> partition filter that every partition holding a match satisfies."""

    _rules = _INCLUSIVE


class StrictProjection(_Projection):
    """Row filter -> partition filter that only partitions of all-matching rows satisfy."""

    _rules = _STRICT


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
