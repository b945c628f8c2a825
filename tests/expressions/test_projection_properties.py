"""Projections must never lose a matching row (inclusive) nor keep a failing one (strict).

For random values ``v`` (nulls included) and random predicates ``p`` on a column:
``p(v)`` implies the inclusive projection holds on ``transform(v)``, and the strict
projection holding on ``transform(v)`` implies ``p(v)``. ``transform(v)`` is the value
stored, Iceberg-Java's wrapping included.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from neve.expressions import BoundPredicate, BoundReference, Operation
from neve.expressions.binding import make_bound_predicate
from neve.expressions.evaluator import compile_expression, compile_predicate
from neve.expressions.projection import project_inclusive, project_strict
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
    BINARY,
    DATE,
    DOUBLE,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    UUID,
    DecimalType,
    IcebergType,
    NestedField,
)

DEC = DecimalType(9, 2)

_I32 = (-(2**31), 2**31 - 1)
_I64 = (-(2**63), 2**63 - 1)
_HOUR = 3_600_000_000


def _edges(lo: int, hi: int, *marks: int) -> st.SearchStrategy[int]:
    """Integers of lo..hi, many within 300 of the limits and of ``marks``."""
    near = [st.integers(max(lo, m - 300), min(hi, m + 300)) for m in (lo, hi, 0, *marks)]
    return st.one_of(*near, st.integers(lo, hi))


# The "*_edge" kinds reach the limits of int and long, where Iceberg-Java's truncate
# and hour wrap around (neve writes the same values): projections must still hold
# for the stored values.
_VALUES: dict[str, tuple[IcebergType, st.SearchStrategy[Any]]] = {
    "int_edge": (INT, _edges(*_I32, 2**30, -(2**30))),
    "long_edge": (LONG, _edges(*_I64, 2**31, -(2**31))),
    "date_edge": (DATE, _edges(*_I32)),
    "timestamp_edge": (TIMESTAMP, _edges(*_I64, 2**31 * _HOUR, -(2**31) * _HOUR)),
    "int": (INT, st.integers(-(10**6), 10**6)),
    "long": (LONG, st.integers(-(10**12), 10**12)),
    "decimal": (
        DEC,
        st.integers(-(10**6), 10**6).map(lambda n: Decimal(n).scaleb(-2)),
    ),
    "string": (STRING, st.text(alphabet="abé😀", max_size=7)),
    "binary": (BINARY, st.binary(max_size=6).map(lambda b: bytes(x % 3 for x in b))),
    "date": (DATE, st.integers(-40_000, 40_000)),
    "timestamp": (TIMESTAMP, st.integers(-(2 * 10**15), 2 * 10**15)),
    "timestamptz": (TIMESTAMPTZ, st.integers(-(2 * 10**15), 2 * 10**15)),
    "timestamp_ns": (TIMESTAMP_NS, st.integers(-(2 * 10**18), 2 * 10**18)),
    "uuid": (UUID, st.sampled_from([uuid.UUID(int=i * 7919) for i in range(6)])),
    "double": (DOUBLE, st.floats(allow_nan=True, allow_infinity=True, width=64)),
}

_TEMPORAL: list[Transform] = [YearTransform(), MonthTransform(), DayTransform()]
_TRANSFORMS: dict[str, list[Transform]] = {
    "int_edge": [TruncateTransform(w) for w in (3, 10, 100, 2**30 + 1, 2**31 - 2, 2**31 - 1)],
    "long_edge": [TruncateTransform(w) for w in (7, 100, 2**31 - 1)],
    "date_edge": [*_TEMPORAL, BucketTransform(9)],
    "timestamp_edge": [*_TEMPORAL, HourTransform(), BucketTransform(9)],
    "int": [IdentityTransform(), BucketTransform(7), VoidTransform()]
    + [TruncateTransform(w) for w in (1, 3, 10, 100)],
    "long": [IdentityTransform(), BucketTransform(5)]
    + [TruncateTransform(w) for w in (1, 7, 1000)],
    "decimal": [IdentityTransform(), BucketTransform(4)]
    + [TruncateTransform(w) for w in (1, 10, 300)],
    "string": [IdentityTransform(), BucketTransform(3)]
    + [TruncateTransform(w) for w in (1, 2, 3, 5)],
    "binary": [IdentityTransform(), BucketTransform(3), TruncateTransform(1), TruncateTransform(3)],
    "date": [IdentityTransform(), BucketTransform(9), *_TEMPORAL],
    "timestamp": [IdentityTransform(), BucketTransform(9), *_TEMPORAL, HourTransform()],
    "timestamptz": [*_TEMPORAL, HourTransform()],
    "timestamp_ns": [IdentityTransform(), BucketTransform(9), *_TEMPORAL, HourTransform()],
    "uuid": [IdentityTransform(), BucketTransform(2)],
    "double": [IdentityTransform(), VoidTransform()],
}

_COMPARE = [
    Operation.LT,
    Operation.LT_EQ,
    Operation.GT,
    Operation.GT_EQ,
    Operation.EQ,
    Operation.NOT_EQ,
]


def _near(kind: str, v: Any, delta: int) -> Any:
    """A value close to ``v`` (so that boundaries get exercised)."""
    if v is None or kind in ("uuid",):
        return v
    if kind == "decimal":
        return v + Decimal(delta).scaleb(-2)
    if kind == "string":
        return v[: max(len(v) + delta, 0)] if delta < 0 else v + "ab"[:delta]
    if kind == "binary":
        return v[: max(len(v) + delta, 0)] if delta < 0 else v + b"\x01" * delta
    if kind == "double":
        return v + delta if v == v else 0.0
    return v + delta


@st.composite
def cases(draw: st.DrawFn, kind: str) -> tuple[str, Transform, BoundPredicate, Any]:
    t, values = _VALUES[kind]
    transform = draw(st.sampled_from(_TRANSFORMS[kind]))
    v = draw(st.one_of(st.none(), values))

    def literal() -> Any:
        # at the limits, literals far from v cross the wrapped ranges more often
        choice = draw(st.integers(0, 1 if kind.endswith("_edge") else 3))
        if choice == 0 or v is None:
            return draw(values)
        return _near(kind, v, draw(st.integers(-2, 2)))

    ops = [*_COMPARE, Operation.IN, Operation.NOT_IN, Operation.IS_NULL, Operation.NOT_NULL]
    if kind == "string":  # weighted: prefix tests have the most projection rules
        ops += [Operation.STARTS_WITH, Operation.NOT_STARTS_WITH] * 5
    if kind == "double":
        ops += [Operation.IS_NAN, Operation.NOT_NAN]
    op = draw(st.sampled_from(ops))
    if op.is_unary:
        lits: tuple[Any, ...] = ()
    elif op.is_set:
        lits = tuple(literal() for _ in range(draw(st.integers(1, 4))))
    elif op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
        how = draw(st.integers(0, 2)) if v is not None else 0
        if how == 0:
            lits = (draw(values),)
        else:  # a prefix of v, or one that leaves v after sharing a part of it
            prefix = v[: draw(st.integers(0, len(v)))]
            lits = (prefix if how == 1 else prefix + draw(st.sampled_from("abé😀")),)
    else:
        lits = (literal(),)
    lits = tuple(x for x in lits if not (isinstance(x, float) and x != x))
    assume(op.is_unary or lits)
    ref = BoundReference(NestedField(1, "x", t), (0,), ("x",), True)
    pred = make_bound_predicate(op, ref, lits)
    assume(isinstance(pred, BoundPredicate))
    return kind, transform, pred, v


def _check(
    transform: Transform,
    pred: BoundPredicate,
    v: Any,
    project: Callable[..., Any],
) -> tuple[bool, bool | None]:
    source = pred.term.field_type
    target = BoundReference(
        NestedField(1000, "p", transform.result_type(source), False), (0,), ("p",), True
    )
    projected = project(transform, source, pred, target)
    row_match = compile_predicate(pred)((v,))
    if projected is None:
        return row_match, None
    partition = (transform.apply(source, v),)
    return row_match, compile_expression(projected)(partition)


KINDS = sorted(_VALUES)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=150)
@given(data=st.data())
def test_inclusive_projection_never_drops_a_matching_row(kind: str, data: st.DataObject) -> None:
    _, transform, pred, v = data.draw(cases(kind))
    row_match, part_match = _check(transform, pred, v, project_inclusive)
    if row_match and part_match is not None:
        assert part_match, f"{pred} holds on {v!r} but its projection through {transform} fails"


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=150)
@given(data=st.data())
def test_strict_projection_never_keeps_a_failing_row(kind: str, data: st.DataObject) -> None:
    _, transform, pred, v = data.draw(cases(kind))
    row_match, part_match = _check(transform, pred, v, project_strict)
    if part_match:
        assert row_match, (
            f"{pred} fails on {v!r} but its strict projection through {transform} holds"
        )


@pytest.mark.parametrize("kind", ["int", "decimal", "string", "date", "timestamp"])
def test_the_strategies_reach_both_outcomes(kind: str) -> None:
    """Guard against a vacuous property: projections exist and both outcomes occur."""
    seen: set[tuple[str, bool]] = set()

    # derandomize seeds from a digest of this function's source: editing these lines
    # (even this redundant deadline) draws other examples, which may miss an outcome
    @settings(max_examples=250, deadline=None, database=None, derandomize=True)
    @given(data=st.data())
    def collect(data: st.DataObject) -> None:
        _, transform, pred, v = data.draw(cases(kind))
        _, part = _check(transform, pred, v, project_inclusive)
        if part is not None:
            seen.add((type(transform).__name__, part))
        _, part = _check(transform, pred, v, project_strict)
        if part is not None:
            seen.add((type(transform).__name__ + "-strict", part))

    collect()
    names = {type(t).__name__ for t in _TRANSFORMS[kind] if not isinstance(t, VoidTransform)}
    for name in names:
        assert (name, True) in seen and (name, False) in seen, name
        assert (name + "-strict", True) in seen, name
