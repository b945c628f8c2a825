"""Pruning data files by their column metrics (Iceberg-Java's metrics evaluators).

:class:`InclusiveMetricsEvaluator` answers "might any row of this file match?" from the
value, null and NaN counts and the lower/upper bounds of a :class:`DataFile`; missing
statistics mean "might". :class:`StrictMetricsEvaluator` answers "must every row of this
file match?" (used to delete whole files and to validate overwrites); missing
statistics mean "might not".

Bounds are serialized (Appendix D) and decoded only when a predicate needs them. String
bounds may be truncated (lower = a prefix, upper = a prefix with its last character
incremented); every rule here stays correct with such bounds. Null and NaN rules follow
:mod:`neve.expressions.expressions`: ``not_eq``, ``not_in`` and ``not_starts_with`` hold
for null, comparisons never hold for null or NaN.

Where Iceberg-Java treats a *missing* per-column null or NaN count as "none" in the
strict evaluator and in ``not_starts_with``, we treat it as unknown: a wrongly "strict"
answer would delete rows that do not match.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from neve.expressions.binding import bind
from neve.expressions.bounds import BELOW, COMPARE, IN_PREDICATE_LIMIT, decode, is_nan, prefix_cmp
from neve.expressions.evaluator import PartitionEvaluator, evaluator
from neve.expressions.expressions import (
    BooleanExpression,
    BoundPredicate,
    BoundReference,
    Operation,
)
from neve.expressions.metric_arrays import MetricArrays
from neve.expressions.metrics_vectorized import compile_inclusive, eval_inclusive
from neve.expressions.visitors import ClosureCompiler, references, rewrite_not
from neve.spec.manifest import DataFile
from neve.spec.schema import Schema
from neve.spec.types import DoubleType, FloatType, PrimitiveType

# The per-entry partition test lives with the row evaluator; it is re-exported here
# because planning uses it next to the metrics evaluators.
__all__ = [
    "InclusiveMetricsEvaluator",
    "MetricsTest",
    "PartitionEvaluator",
    "StrictMetricsEvaluator",
    "evaluator",
    "inclusive_metrics_test",
]

_V = TypeVar("_V")


def _get(metric: Mapping[int, _V] | None, fid: int) -> _V | None:
    return metric.get(fid) if metric is not None else None


class _Stats:
    """The metrics of one file, with bounds decoded on first use."""

    __slots__ = ("lower", "nans", "nulls", "upper", "values")

    def __init__(
        self,
        values: Mapping[int, int] | None,
        nulls: Mapping[int, int] | None,
        nans: Mapping[int, int] | None,
        lower: Mapping[int, bytes] | None,
        upper: Mapping[int, bytes] | None,
    ) -> None:
        self.values = values
        self.nulls = nulls
        self.nans = nans
        self.lower = lower
        self.upper = upper

    @classmethod
    def of(cls, f: DataFile) -> _Stats:
        return cls(
            f.value_counts, f.null_value_counts, f.nan_value_counts, f.lower_bounds, f.upper_bounds
        )

    def raw_lower(self, fid: int) -> bytes | None:
        return _get(self.lower, fid)

    def raw_upper(self, fid: int) -> bytes | None:
        return _get(self.upper, fid)

    def lower_bound(self, fid: int, t: PrimitiveType) -> Any:
        """The decoded lower bound, or None when unknown."""
        raw = self.raw_lower(fid)
        return None if raw is None else decode(t, raw)

    def upper_bound(self, fid: int, t: PrimitiveType) -> Any:
        raw = self.raw_upper(fid)
        return None if raw is None else decode(t, raw)

    def usable_bound(self, fid: int, t: PrimitiveType, lower: bool) -> Any:
        """The lower or upper bound, or None when unknown or NaN (NaN bounds, written by
        old ORC writers, are unreliable)."""
        bound = self.lower_bound(fid, t) if lower else self.upper_bound(fid, t)
        return None if bound is None or is_nan(bound) else bound

    def may_contain_any(self, fid: int, t: PrimitiveType, values: Sequence[Any]) -> bool:
        """False only when the bounds prove that no value in sorted ``values`` occurs."""
        lower = self.lower_bound(fid, t)
        if lower is not None:
            if is_nan(lower):
                return True
            values = [v for v in values if not v < lower]
            if not values:
                return False
        upper = self.upper_bound(fid, t)
        return upper is None or any(not v > upper for v in values)

    def null_count(self, fid: int) -> int | None:
        return _get(self.nulls, fid)

    def nan_count(self, fid: int) -> int | None:
        return _get(self.nans, fid)

    def nulls_only(self, fid: int) -> bool:
        vc, nc = _get(self.values, fid), self.null_count(fid)
        return vc is not None and nc is not None and vc - nc == 0

    def nans_only(self, fid: int) -> bool:
        vc, nan = _get(self.values, fid), self.nan_count(fid)
        return vc is not None and nan is not None and nan == vc

    def prefix_outside(self, fid: int, prefix: bytes) -> bool:
        """The bounds prove that no value starts with ``prefix``."""
        lo, hi = self.raw_lower(fid), self.raw_upper(fid)
        return (lo is not None and prefix_cmp(lo, prefix) > 0) or (
            hi is not None and prefix_cmp(hi, prefix) < 0
        )

    def all_start_with(self, fid: int, prefix: bytes) -> bool:
        """Both bounds start with ``prefix``, so every value in between does too."""
        lo, hi = self.raw_lower(fid), self.raw_upper(fid)
        return lo is not None and hi is not None and lo.startswith(prefix) and hi.startswith(prefix)

    def no_values(self, fid: int) -> bool:
        """Every value is null or every value is NaN: no comparison holds for any row."""
        return self.nulls_only(fid) or self.nans_only(fid)


Test = Callable[[_Stats], bool]


# -- inclusive ---------------------------------------------------------------------------


class InclusiveMetricsEvaluator:
    """``eval(data_file)`` is False only when no row of the file can match the filter.

    ``eval_metrics`` takes the metrics themselves, and needs of each map only the
    entries of :attr:`field_ids`: planning passes those alone for files it has not
    decoded in full yet, and decodes in full only the files that may match.
    ``eval_arrays`` judges many files at once from such metrics as arrays."""

    __slots__ = ("_test", "_vector", "expr", "field_ids", "include_empty_files", "schema")

    def __init__(
        self,
        schema: Schema,
        row_filter: BooleanExpression,
        case_sensitive: bool = True,
        include_empty_files: bool = False,
    ) -> None:
        self.schema = schema
        #: The filter bound to the schema, without NOT.
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive))
        self.include_empty_files = include_empty_files
        self._test = _INCLUSIVE.compile(self.expr)
        self._vector = compile_inclusive(self.expr)
        #: The ids of the fields whose metrics the filter reads.
        self.field_ids = frozenset(ref.field_id for ref in references(self.expr))

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            InclusiveMetricsEvaluator,
            (self.schema, self.expr, True, self.include_empty_files),
        )

    def eval(self, data_file: DataFile) -> bool:
        return self._eval(data_file.record_count, _Stats.of(data_file))

    def eval_metrics(
        self,
        record_count: int,
        value_counts: Mapping[int, int] | None,
        null_value_counts: Mapping[int, int] | None,
        nan_value_counts: Mapping[int, int] | None,
        lower_bounds: Mapping[int, bytes] | None,
        upper_bounds: Mapping[int, bytes] | None,
    ) -> bool:
        stats = _Stats(
            value_counts, null_value_counts, nan_value_counts, lower_bounds, upper_bounds
        )
        return self._eval(record_count, stats)

    def eval_arrays(self, arrays: MetricArrays) -> list[bool] | None:
        """Per file of ``arrays``, ``eval_metrics``' answer; None when the filter or
        these metrics need the file-by-file evaluation (see ``metrics_vectorized``)."""
        if self._vector is None:
            return None
        found = eval_inclusive(self._vector, arrays, self.include_empty_files)
        if found is None:
            return None
        judged: list[bool] = found.tolist()
        return judged

    def _eval(self, record_count: int, stats: _Stats) -> bool:
        return _judge(self._test, record_count, stats, self.include_empty_files)


def _judge(test: Test, record_count: int, stats: _Stats, include_empty: bool) -> bool:
    """``test`` on the metrics of ``record_count`` rows; no rows match only when
    ``include_empty``, and an unknown count (-1, in imported files) may match."""
    if record_count == 0:
        return include_empty
    if record_count < 0:
        return True
    return test(stats)


#: ``(record_count, value_counts, null_value_counts, nan_value_counts, lower_bounds,
#: upper_bounds) -> might any row match``; bounds serialized (Appendix D).
MetricsTest = Callable[
    [
        int,
        Mapping[int, int] | None,
        Mapping[int, int] | None,
        Mapping[int, int] | None,
        Mapping[int, bytes] | None,
        Mapping[int, bytes] | None,
    ],
    bool,
]


def inclusive_metrics_test(expr: BooleanExpression) -> MetricsTest:
    """The inclusive metrics rules for an already bound expression, as a function of
    the metrics themselves: for any set of rows whose counts and bounds are known, such
    as the row groups of a Parquet file (:mod:`neve.arrow.row_groups`). A missing map
    or entry means unknown; a set of no rows never matches."""
    test = _INCLUSIVE.compile(expr)

    def might_match(
        record_count: int,
        value_counts: Mapping[int, int] | None,
        null_value_counts: Mapping[int, int] | None,
        nan_value_counts: Mapping[int, int] | None,
        lower_bounds: Mapping[int, bytes] | None,
        upper_bounds: Mapping[int, bytes] | None,
    ) -> bool:
        stats = _Stats(
            value_counts, null_value_counts, nan_value_counts, lower_bounds, upper_bounds
        )
        return _judge(test, record_count, stats, include_empty=False)

    return might_match


def _maybe(st: _Stats) -> bool:
    return True


def _comparable(ref: BoundReference) -> tuple[int, PrimitiveType]:
    """The field id and type of a predicate that reads bounds (of a primitive type)."""
    t = ref.field_type
    assert isinstance(t, PrimitiveType)
    return ref.field_id, t


class _MetricsCompiler(ClosureCompiler[_Stats]):
    """What both metrics compilers share: the four comparisons go to ``_compare``."""

    @staticmethod
    def _compare(ref: BoundReference, op: Operation, lit: Any) -> Test:
        raise NotImplementedError

    def visit_lt(self, ref: BoundReference, lit: Any) -> Test:
        return self._compare(ref, Operation.LT, lit)

    def visit_lt_eq(self, ref: BoundReference, lit: Any) -> Test:
        return self._compare(ref, Operation.LT_EQ, lit)

    def visit_gt(self, ref: BoundReference, lit: Any) -> Test:
        return self._compare(ref, Operation.GT, lit)

    def visit_gt_eq(self, ref: BoundReference, lit: Any) -> Test:
        return self._compare(ref, Operation.GT_EQ, lit)


class _InclusiveCompiler(_MetricsCompiler):
    """Per operation, "might a row of these metrics match?"; unknown means might."""

    def visit_is_null(self, ref: BoundReference) -> Test:
        fid = ref.field_id
        return lambda st: st.null_count(fid) != 0

    def visit_not_null(self, ref: BoundReference) -> Test:
        fid = ref.field_id
        return lambda st: not st.nulls_only(fid)

    def visit_is_nan(self, ref: BoundReference) -> Test:
        fid = ref.field_id
        # A column of nulls only holds no NaN either.
        return lambda st: st.nan_count(fid) != 0 and not st.nulls_only(fid)

    def visit_not_nan(self, ref: BoundReference) -> Test:
        fid = ref.field_id
        return lambda st: not st.nans_only(fid)

    # Bounds need not be values of the column, so they cannot rule these two out.
    def visit_not_eq(self, ref: BoundReference, lit: Any) -> Test:
        return _maybe

    def visit_not_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> Test:
        return _maybe

    def visit_starts_with(self, ref: BoundReference, lit: Any) -> Test:
        fid, _ = _comparable(ref)
        prefix = str(lit).encode("utf-8")
        return lambda st: not st.nulls_only(fid) and not st.prefix_outside(fid, prefix)

    def visit_not_starts_with(self, ref: BoundReference, lit: Any) -> Test:
        fid, _ = _comparable(ref)
        prefix = str(lit).encode("utf-8")
        # unknown or some null counts: nulls match
        return lambda st: st.null_count(fid) != 0 or not st.all_start_with(fid, prefix)

    def visit_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> Test:
        fid, t = _comparable(ref)
        if len(lits) > IN_PREDICATE_LIMIT:
            return lambda st: not st.no_values(fid)
        return lambda st: not st.no_values(fid) and st.may_contain_any(fid, t, lits)

    def visit_eq(self, ref: BoundReference, lit: Any) -> Test:
        fid, t = _comparable(ref)
        return lambda st: not st.no_values(fid) and st.may_contain_any(fid, t, (lit,))

    @staticmethod
    def _compare(ref: BoundReference, op: Operation, lit: Any) -> Test:
        fid, t = _comparable(ref)
        holds = COMPARE[op]
        below = op in BELOW

        def compare(st: _Stats) -> bool:
            # Some value is below lit when the lower bound is, above it when the upper one is.
            if st.no_values(fid):
                return False
            bound = st.usable_bound(fid, t, lower=below)
            return bound is None or bool(holds(bound, lit))

        return compare


_INCLUSIVE = _InclusiveCompiler()


# -- strict --------------------------------------------------------------------------------


class StrictMetricsEvaluator:
    """``eval(data_file)`` is True only when every row of the file matches the filter."""

    __slots__ = ("_test", "expr", "schema")

    def __init__(
        self, schema: Schema, row_filter: BooleanExpression, case_sensitive: bool = True
    ) -> None:
        self.schema = schema
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive))
        self._test = _STRICT.compile(self.expr)

    def __reduce__(self) -> tuple[Any, ...]:
        return (StrictMetricsEvaluator, (self.schema, self.expr))

    def eval(self, data_file: DataFile) -> bool:
        if data_file.record_count <= 0:
            return True  # no rows, so none that fails
        return self._test(_Stats.of(data_file))


def _never(st: _Stats) -> bool:
    return False


def _may_hold_null(ref: BoundReference) -> Test:
    """False only when the metrics prove the column holds no null."""
    fid, nullable = ref.field_id, ref.produces_null
    return lambda st: nullable and st.null_count(fid) != 0


def _may_hold_null_or_nan(ref: BoundReference) -> Test:
    """False only when the metrics prove the column holds no null and no NaN."""
    fid, may_hold_null = ref.field_id, _may_hold_null(ref)
    floating = isinstance(ref.field_type, (FloatType, DoubleType))
    return lambda st: may_hold_null(st) or (floating and st.nan_count(fid) != 0)


class _StrictCompiler(_MetricsCompiler):
    """Per operation, "must every row of these metrics match?"; unknown means might not."""

    def visit_predicate(self, pred: BoundPredicate) -> Test:
        if len(pred.term.accessor) > 1:
            # A field inside a struct is null whenever its parent is; its own counts need
            # not show that, so nothing is certain (Iceberg-Java does the same).
            return _never
        return super().visit_predicate(pred)

    def visit_is_null(self, ref: BoundReference) -> Test:
        fid = ref.field_id
        return lambda st: st.nulls_only(fid)

    def visit_not_null(self, ref: BoundReference) -> Test:
        may_hold_null = _may_hold_null(ref)
        return lambda st: not may_hold_null(st)

    def visit_is_nan(self, ref: BoundReference) -> Test:
        fid = ref.field_id
        return lambda st: st.nans_only(fid)

    def visit_not_nan(self, ref: BoundReference) -> Test:
        fid = ref.field_id
        return lambda st: st.nan_count(fid) == 0 or st.nulls_only(fid)

    def visit_starts_with(self, ref: BoundReference, lit: Any) -> Test:
        fid, _ = _comparable(ref)
        may_hold_null = _may_hold_null(ref)
        prefix = str(lit).encode("utf-8")
        return lambda st: not may_hold_null(st) and st.all_start_with(fid, prefix)

    def visit_not_starts_with(self, ref: BoundReference, lit: Any) -> Test:
        # Nulls satisfy not_starts_with; values do when all lie below or above the
        # prefix range.
        fid, _ = _comparable(ref)
        prefix = str(lit).encode("utf-8")
        return lambda st: st.nulls_only(fid) or st.prefix_outside(fid, prefix)

    def visit_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> Test:
        fid, t = _comparable(ref)
        may_hold_null_or_nan = _may_hold_null_or_nan(ref)
        literal_set = frozenset(lits)

        def in_(st: _Stats) -> bool:
            if may_hold_null_or_nan(st):
                return False
            lower, upper = st.lower_bound(fid, t), st.upper_bound(fid, t)
            if lower is None or upper is None:
                return False
            return lower in literal_set and upper in literal_set and lower == upper

        return in_

    def visit_not_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> Test:
        fid, t = _comparable(ref)
        return lambda st: st.no_values(fid) or not st.may_contain_any(fid, t, lits)

    def visit_not_eq(self, ref: BoundReference, lit: Any) -> Test:
        fid, t = _comparable(ref)
        return lambda st: st.no_values(fid) or not st.may_contain_any(fid, t, (lit,))

    def visit_eq(self, ref: BoundReference, lit: Any) -> Test:
        fid, t = _comparable(ref)
        may_hold_null_or_nan = _may_hold_null_or_nan(ref)

        def eq(st: _Stats) -> bool:
            if may_hold_null_or_nan(st):
                return False
            lower, upper = st.lower_bound(fid, t), st.upper_bound(fid, t)
            return lower is not None and upper is not None and lower == lit and upper == lit

        return eq

    @staticmethod
    def _compare(ref: BoundReference, op: Operation, lit: Any) -> Test:
        fid, t = _comparable(ref)
        may_hold_null_or_nan = _may_hold_null_or_nan(ref)
        holds = COMPARE[op]
        below = op in BELOW

        def compare(st: _Stats) -> bool:
            # Every value is below lit when the upper bound is, above it when the lower one is.
            if may_hold_null_or_nan(st):
                return False
            bound = st.usable_bound(fid, t, lower=not below)
            return bound is not None and bool(holds(bound, lit))

        return compare


_STRICT = _StrictCompiler()
