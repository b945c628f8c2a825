"""The inclusive metrics evaluator over many files at once, on arrays.

Planning judges every entry of a manifest that survives partition pruning; one file
at a time that is a few microseconds of Python each. Here the same rules as the
inclusive metrics evaluator (:mod:`neve.expressions.metrics_evaluator`) run as array
operations over all the files of a manifest
(:class:`~neve.expressions.metric_arrays.MetricArrays`): a
:class:`~neve.expressions.visitors.BoundPredicateVisitor` whose results are array tests.

It covers what plans filter on most: null, NaN and comparison predicates (``=``,
``<``, ``<=``, ``>``, ``>=``, ``in``, and ``!=`` / ``not in``, which metrics never rule
out) on integer, date, time, timestamp and floating-point columns. Anything else (a
string or decimal bound, ``starts_with``, a bound narrower than its type after a
promotion) makes :func:`compile_inclusive` or the evaluation answer None, and the
caller evaluates file by file. The answers are the per-file evaluator's exactly; a
Hypothesis test holds the two together.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from neve.expressions.bounds import BELOW, COMPARE, IN_PREDICATE_LIMIT
from neve.expressions.expressions import BooleanExpression, BoundReference, Operation
from neve.expressions.metric_arrays import Bounds, Counts, MetricArrays
from neve.expressions.visitors import BoundPredicateVisitor, visit
from neve.spec.types import (
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
)

__all__ = ["VectorTest", "compile_inclusive", "eval_inclusive"]

Mask = npt.NDArray[np.bool_]

_INT64_RANGE = (-(2**63), 2**63)

#: Serialized width (Appendix D, little-endian) of the bounds of each supported type.
_INTS: dict[type[IcebergType], str] = {
    IntegerType: "<i4",
    DateType: "<i4",
    LongType: "<i8",
    TimeType: "<i8",
    TimestampType: "<i8",
    TimestamptzType: "<i8",
    TimestampNsType: "<i8",
    TimestamptzNsType: "<i8",
}
_FLOATS: dict[type[IcebergType], str] = {FloatType: "<f4", DoubleType: "<f8"}


class _Unsupported(Exception):
    """The expression or the metrics need the per-file evaluator."""


class _Files:
    """The metrics of the files under evaluation, bounds decoded on first use."""

    __slots__ = ("_decoded", "arrays", "n")

    def __init__(self, arrays: MetricArrays) -> None:
        self.arrays = arrays
        self.n = arrays.length
        self._decoded: dict[tuple[int, bool], tuple[Mask, npt.NDArray[Any]]] = {}

    def constant(self, value: bool) -> Mask:
        return np.full(self.n, value, dtype=np.bool_)

    def _counts(self, metric: Mapping[int, Counts], fid: int) -> Counts:
        found = metric.get(fid)
        if found is None:
            return self.constant(False), np.zeros(self.n, dtype=np.int64)
        return found

    def null_count_not_zero(self, fid: int) -> Mask:
        """Nulls present or not known to be absent."""
        known, count = self._counts(self.arrays.null_value_counts, fid)
        out: Mask = ~(known & (count == 0))
        return out

    def nan_count_not_zero(self, fid: int) -> Mask:
        known, count = self._counts(self.arrays.nan_value_counts, fid)
        out: Mask = ~(known & (count == 0))
        return out

    def nulls_only(self, fid: int) -> Mask:
        vk, values = self._counts(self.arrays.value_counts, fid)
        nk, nulls = self._counts(self.arrays.null_value_counts, fid)
        out: Mask = vk & nk & (values == nulls)
        return out

    def nans_only(self, fid: int) -> Mask:
        vk, values = self._counts(self.arrays.value_counts, fid)
        nk, nans = self._counts(self.arrays.nan_value_counts, fid)
        out: Mask = vk & nk & (nans == values)
        return out

    def no_values(self, fid: int) -> Mask:
        return self.nulls_only(fid) | self.nans_only(fid)

    def bound(self, fid: int, t: IcebergType, lower: bool) -> tuple[Mask, npt.NDArray[Any]]:
        """Whether each file's bound is known, and the bounds as int64 or float64 (0
        where unknown)."""
        key = (fid, lower)
        found = self._decoded.get(key)
        if found is None:
            metric = self.arrays.lower_bounds if lower else self.arrays.upper_bounds
            found = self._decoded[key] = _decode(metric.get(fid), t, self.n)
        return found


def _decode(bounds: Bounds | None, t: IcebergType, n: int) -> tuple[Mask, npt.NDArray[Any]]:
    floating = type(t) in _FLOATS
    dtype = np.dtype(_FLOATS[type(t)] if floating else _INTS[type(t)])
    wide = np.float64 if floating else np.int64
    values = np.zeros(n, dtype=wide)
    if bounds is None:
        return np.zeros(n, dtype=np.bool_), values
    known, raw = bounds
    # a narrower bound left by a type promotion (int -> long, float -> double) or a
    # malformed one: the per-file evaluator decides (and reports) those
    if any(len(b) != dtype.itemsize for b in raw):
        raise _Unsupported
    values[known] = np.frombuffer(b"".join(raw), dtype=dtype).astype(wide)
    return known, values


#: A compiled filter: which of the files might hold a matching row.
VectorTest = Callable[[_Files], Mask]


def compile_inclusive(expr: BooleanExpression) -> VectorTest | None:
    """The bound, NOT-free ``expr`` as an array test, or None when it uses a predicate
    or type this module does not cover."""
    try:
        return visit(expr, _VECTOR)
    except _Unsupported:
        return None


def eval_inclusive(
    test: VectorTest, arrays: MetricArrays, include_empty_files: bool
) -> Mask | None:
    """Per file, False only when no row can match (as ``InclusiveMetricsEvaluator.
    eval``); None when these metrics need the per-file evaluator."""
    try:
        might = test(_Files(arrays))
    except _Unsupported:
        return None
    counts = arrays.record_counts
    out = np.where(counts < 0, True, might)  # imported files may carry -1: unknown
    out[counts == 0] = include_empty_files
    return out


def _all(fs: _Files) -> Mask:
    return fs.constant(True)


def _none(fs: _Files) -> Mask:
    return fs.constant(False)


def _supported(ref: BoundReference) -> tuple[int, IcebergType]:
    """The field id and type of a predicate that reads bounds, if this module decodes
    bounds of that type."""
    t = ref.field_type
    if type(t) not in _INTS and type(t) not in _FLOATS:
        raise _Unsupported
    return ref.field_id, t


class _VectorCompiler(BoundPredicateVisitor[VectorTest]):
    """The array tests of each operation; And and Or combine masks element-wise."""

    def visit_true(self) -> VectorTest:
        return _all

    def visit_false(self) -> VectorTest:
        return _none

    def visit_and(self, left: VectorTest, right: VectorTest) -> VectorTest:
        return lambda fs: left(fs) & right(fs)

    def visit_or(self, left: VectorTest, right: VectorTest) -> VectorTest:
        return lambda fs: left(fs) | right(fs)

    def visit_is_null(self, ref: BoundReference) -> VectorTest:
        fid = ref.field_id
        return lambda fs: fs.null_count_not_zero(fid)

    def visit_not_null(self, ref: BoundReference) -> VectorTest:
        fid = ref.field_id
        return lambda fs: ~fs.nulls_only(fid)

    def visit_is_nan(self, ref: BoundReference) -> VectorTest:
        fid = ref.field_id
        return lambda fs: fs.nan_count_not_zero(fid) & ~fs.nulls_only(fid)

    def visit_not_nan(self, ref: BoundReference) -> VectorTest:
        fid = ref.field_id
        return lambda fs: ~fs.nans_only(fid)

    def visit_not_eq(self, ref: BoundReference, lit: Any) -> VectorTest:
        return _all

    def visit_not_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> VectorTest:
        return _all

    def visit_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> VectorTest:
        fid, t = _supported(ref)
        if len(lits) > IN_PREDICATE_LIMIT:
            return lambda fs: ~fs.no_values(fid)
        return self._contains_any(fid, t, lits)

    def visit_eq(self, ref: BoundReference, lit: Any) -> VectorTest:
        fid, t = _supported(ref)
        return self._contains_any(fid, t, (lit,))

    def visit_starts_with(self, ref: BoundReference, lit: Any) -> VectorTest:
        raise _Unsupported  # string bounds only

    def visit_not_starts_with(self, ref: BoundReference, lit: Any) -> VectorTest:
        raise _Unsupported

    def visit_lt(self, ref: BoundReference, lit: Any) -> VectorTest:
        return self._compare(ref, Operation.LT, lit)

    def visit_lt_eq(self, ref: BoundReference, lit: Any) -> VectorTest:
        return self._compare(ref, Operation.LT_EQ, lit)

    def visit_gt(self, ref: BoundReference, lit: Any) -> VectorTest:
        return self._compare(ref, Operation.GT, lit)

    def visit_gt_eq(self, ref: BoundReference, lit: Any) -> VectorTest:
        return self._compare(ref, Operation.GT_EQ, lit)

    @staticmethod
    def _contains_any(fid: int, t: IcebergType, lits: Sequence[Any]) -> VectorTest:
        values = _literals(lits, t)
        return lambda fs: ~fs.no_values(fid) & _may_contain_any(fs, fid, t, values)

    @staticmethod
    def _compare(ref: BoundReference, op: Operation, lit: Any) -> VectorTest:
        fid, t = _supported(ref)
        holds = COMPARE[op]
        value = _literals((lit,), t)[0]
        below = op in BELOW

        def compare(fs: _Files) -> Mask:
            # Some value is below lit when the lower bound is, above it when the upper
            # one is; unknown and NaN bounds prove nothing.
            known, bound = fs.bound(fid, t, lower=below)
            usable = known & ~np.isnan(bound) if bound.dtype.kind == "f" else known
            out: Mask = ~fs.no_values(fid) & (~usable | holds(bound, value))
            return out

        return compare


_VECTOR = _VectorCompiler()


def _literals(values: Sequence[Any], t: IcebergType) -> npt.NDArray[Any]:
    """The literals as one array of the bounds' dtype; refused unless that compares
    exactly as Python does (ints within int64, floats as floats)."""
    if not values:
        raise _Unsupported
    if type(t) in _FLOATS:
        if not all(type(v) is float for v in values):
            raise _Unsupported
        return np.array(values, dtype=np.float64)
    lo, hi = _INT64_RANGE
    if not all(type(v) is int and lo <= v < hi for v in values):
        raise _Unsupported
    return np.array(values, dtype=np.int64)


def _may_contain_any(fs: _Files, fid: int, t: IcebergType, values: npt.NDArray[Any]) -> Mask:
    """False only where the bounds prove that none of ``values`` occurs (as
    ``_Stats.may_contain_any``: a NaN lower bound proves nothing)."""
    lk, lower = fs.bound(fid, t, lower=True)
    uk, upper = fs.bound(fid, t, lower=False)
    v = values[:, None]
    inside = (~lk | ~(v < lower)) & (~uk | ~(v > upper))
    found: Mask = np.any(inside, axis=0)
    if lower.dtype.kind == "f":
        found = found | (lk & np.isnan(lower))
    return found
