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

from collections.abc import Callable, Mapping
from typing import Any

from neve.errors import ExpressionError
from neve.expressions.binding import bind
from neve.expressions.bounds import IN_PREDICATE_LIMIT, decode, is_nan, prefix_cmp
from neve.expressions.evaluator import PartitionEvaluator, evaluator
from neve.expressions.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    And,
    BooleanExpression,
    BoundPredicate,
    Operation,
    Or,
)
from neve.expressions.visitors import rewrite_not
from neve.spec.manifest import DataFile
from neve.spec.schema import Schema
from neve.spec.types import DoubleType, FloatType, PrimitiveType

# The per-entry partition test lives with the row evaluator; it is re-exported here
# because planning uses it next to the metrics evaluators.
__all__ = ["InclusiveMetricsEvaluator", "PartitionEvaluator", "StrictMetricsEvaluator", "evaluator"]


class _Stats:
    """The metrics of one file, with bounds decoded on first use."""

    __slots__ = ("lower", "nans", "nulls", "upper", "values")

    def __init__(self, f: DataFile) -> None:
        self.values: Mapping[int, int] | None = f.value_counts
        self.nulls: Mapping[int, int] | None = f.null_value_counts
        self.nans: Mapping[int, int] | None = f.nan_value_counts
        self.lower: Mapping[int, bytes] | None = f.lower_bounds
        self.upper: Mapping[int, bytes] | None = f.upper_bounds

    def lower_bound(self, fid: int, t: PrimitiveType) -> Any:
        """The decoded lower bound, or None when unknown."""
        raw = self.lower.get(fid) if self.lower is not None else None
        return None if raw is None else decode(t, raw)

    def upper_bound(self, fid: int, t: PrimitiveType) -> Any:
        raw = self.upper.get(fid) if self.upper is not None else None
        return None if raw is None else decode(t, raw)

    def raw_lower(self, fid: int) -> bytes | None:
        return self.lower.get(fid) if self.lower is not None else None

    def raw_upper(self, fid: int) -> bytes | None:
        return self.upper.get(fid) if self.upper is not None else None

    def null_count(self, fid: int) -> int | None:
        return self.nulls.get(fid) if self.nulls is not None else None

    def nan_count(self, fid: int) -> int | None:
        return self.nans.get(fid) if self.nans is not None else None

    def nulls_only(self, fid: int) -> bool:
        vc = self.values.get(fid) if self.values is not None else None
        nc = self.null_count(fid)
        return vc is not None and nc is not None and vc - nc == 0

    def nans_only(self, fid: int) -> bool:
        vc = self.values.get(fid) if self.values is not None else None
        nan = self.nan_count(fid)
        return vc is not None and nan is not None and nan == vc


Test = Callable[[_Stats], bool]


def _compile(expr: BooleanExpression, leaf: Callable[[BoundPredicate], Test]) -> Test:
    if expr is ALWAYS_TRUE:
        return lambda st: True
    if expr is ALWAYS_FALSE:
        return lambda st: False
    if isinstance(expr, And):
        left, right = _compile(expr.left, leaf), _compile(expr.right, leaf)
        return lambda st: left(st) and right(st)
    if isinstance(expr, Or):
        left, right = _compile(expr.left, leaf), _compile(expr.right, leaf)
        return lambda st: left(st) or right(st)
    if isinstance(expr, BoundPredicate):
        return leaf(expr)
    raise ExpressionError(f"cannot evaluate {expr} on file metrics")


# -- inclusive ---------------------------------------------------------------------------


class InclusiveMetricsEvaluator:
    """``eval(data_file)`` is False only when no row of the file can match the filter."""

    __slots__ = ("_test", "expr", "include_empty_files", "schema")

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
        self._test = _compile(self.expr, _inclusive_leaf)

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            InclusiveMetricsEvaluator,
            (self.schema, self.expr, True, self.include_empty_files),
        )

    def eval(self, data_file: DataFile) -> bool:
        if data_file.record_count == 0:
            return self.include_empty_files
        if data_file.record_count < 0:
            # Imported files may carry -1 for an unknown count.
            return True
        return self._test(_Stats(data_file))


def _inclusive_leaf(pred: BoundPredicate) -> Test:
    fid = pred.term.field_id
    t = pred.term.field_type
    op = pred.op
    if op is Operation.IS_NULL:
        return lambda st: st.null_count(fid) != 0
    if op is Operation.NOT_NULL:
        return lambda st: not st.nulls_only(fid)
    if op is Operation.IS_NAN:
        # A column of nulls only holds no NaN either.
        return lambda st: st.nan_count(fid) != 0 and not st.nulls_only(fid)
    if op is Operation.NOT_NAN:
        return lambda st: not st.nans_only(fid)
    if op in (Operation.NOT_EQ, Operation.NOT_IN):
        # Bounds need not be values of the column, so they cannot rule these out.
        return lambda st: True
    assert isinstance(t, PrimitiveType)
    if op is Operation.STARTS_WITH:
        prefix = str(pred.literal).encode("utf-8")

        def starts_with(st: _Stats) -> bool:
            if st.nulls_only(fid):
                return False
            lo = st.raw_lower(fid)
            if lo is not None and prefix_cmp(lo, prefix) > 0:
                return False
            hi = st.raw_upper(fid)
            return not (hi is not None and prefix_cmp(hi, prefix) < 0)

        return starts_with
    if op is Operation.NOT_STARTS_WITH:
        prefix = str(pred.literal).encode("utf-8")

        def not_starts_with(st: _Stats) -> bool:
            if st.null_count(fid) != 0:  # unknown or some nulls: nulls match
                return True
            lo, hi = st.raw_lower(fid), st.raw_upper(fid)
            if lo is None or hi is None:
                return True
            # Both bounds start with the prefix: so does every value in between.
            return not (lo.startswith(prefix) and hi.startswith(prefix))

        return not_starts_with
    if op is Operation.IN:
        values = pred.literals
        if len(values) > IN_PREDICATE_LIMIT:
            return lambda st: not (st.nulls_only(fid) or st.nans_only(fid))

        def in_(st: _Stats) -> bool:
            if st.nulls_only(fid) or st.nans_only(fid):
                return False
            candidates: Any = values
            lower = st.lower_bound(fid, t)
            if lower is not None:
                if is_nan(lower):
                    return True  # NaN bounds (old ORC files) are unreliable
                candidates = [v for v in candidates if not v < lower]
                if not candidates:
                    return False
            upper = st.upper_bound(fid, t)
            if upper is not None:
                candidates = [v for v in candidates if not v > upper]
                if not candidates:
                    return False
            return True

        return in_
    lit = pred.literal

    def no_values(st: _Stats) -> bool:
        return st.nulls_only(fid) or st.nans_only(fid)

    if op in (Operation.LT, Operation.LT_EQ):
        strict_less = op is Operation.LT

        def lt(st: _Stats) -> bool:
            if no_values(st):
                return False
            lower = st.lower_bound(fid, t)
            if lower is None or is_nan(lower):
                return True
            return bool(lower < lit) if strict_less else bool(lower <= lit)

        return lt
    if op in (Operation.GT, Operation.GT_EQ):
        strict_greater = op is Operation.GT

        def gt(st: _Stats) -> bool:
            if no_values(st):
                return False
            upper = st.upper_bound(fid, t)
            if upper is None or is_nan(upper):
                return True
            return bool(upper > lit) if strict_greater else bool(upper >= lit)

        return gt

    def eq(st: _Stats) -> bool:
        if no_values(st):
            return False
        lower = st.lower_bound(fid, t)
        if lower is not None:
            if is_nan(lower):
                return True
            if lower > lit:
                return False
        upper = st.upper_bound(fid, t)
        return not (upper is not None and not is_nan(upper) and upper < lit)

    return eq


# -- strict --------------------------------------------------------------------------------


class StrictMetricsEvaluator:
    """``eval(data_file)`` is True only when every row of the file matches the filter."""

    __slots__ = ("_test", "expr", "schema")

    def __init__(
        self, schema: Schema, row_filter: BooleanExpression, case_sensitive: bool = True
    ) -> None:
        self.schema = schema
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive))
        self._test = _compile(self.expr, _strict_leaf)

    def __reduce__(self) -> tuple[Any, ...]:
        return (StrictMetricsEvaluator, (self.schema, self.expr))

    def eval(self, data_file: DataFile) -> bool:
        if data_file.record_count <= 0:
            return True  # no rows, so none that fails
        return self._test(_Stats(data_file))


def _strict_leaf(pred: BoundPredicate) -> Test:
    ref = pred.term
    fid = ref.field_id
    t = ref.field_type
    op = pred.op
    if len(ref.accessor) > 1:
        # A field inside a struct is null whenever its parent is; its own counts need
        # not show that, so nothing is certain (Iceberg-Java does the same).
        return lambda st: False
    floating = isinstance(t, (FloatType, DoubleType))
    nullable = ref.produces_null

    def may_hold_null(st: _Stats) -> bool:
        return nullable and st.null_count(fid) != 0

    def may_hold_nan(st: _Stats) -> bool:
        return floating and st.nan_count(fid) != 0

    if op is Operation.IS_NULL:
        return lambda st: st.nulls_only(fid)
    if op is Operation.NOT_NULL:
        return lambda st: not may_hold_null(st)
    if op is Operation.IS_NAN:
        return lambda st: st.nans_only(fid)
    if op is Operation.NOT_NAN:
        return lambda st: st.nan_count(fid) == 0 or st.nulls_only(fid)
    assert isinstance(t, PrimitiveType)
    if op is Operation.STARTS_WITH:
        prefix = str(pred.literal).encode("utf-8")

        def starts_with(st: _Stats) -> bool:
            if may_hold_null(st):
                return False
            lo, hi = st.raw_lower(fid), st.raw_upper(fid)
            return (
                lo is not None
                and hi is not None
                and lo.startswith(prefix)
                and hi.startswith(prefix)
            )

        return starts_with
    if op is Operation.NOT_STARTS_WITH:
        prefix = str(pred.literal).encode("utf-8")

        def not_starts_with(st: _Stats) -> bool:
            # Nulls satisfy not_starts_with; values do when all lie below or above the
            # prefix range.
            if st.nulls_only(fid):
                return True
            lo, hi = st.raw_lower(fid), st.raw_upper(fid)
            if lo is not None and prefix_cmp(lo, prefix) > 0:
                return True
            return hi is not None and prefix_cmp(hi, prefix) < 0

        return not_starts_with
    if op is Operation.IN:
        values = pred.literal_set

        def in_(st: _Stats) -> bool:
            if may_hold_null(st) or may_hold_nan(st):
                return False
            lower, upper = st.lower_bound(fid, t), st.upper_bound(fid, t)
            if lower is None or upper is None:
                return False
            return lower in values and upper in values and lower == upper

        return in_
    if op is Operation.NOT_IN:
        sorted_values = pred.literals

        def not_in(st: _Stats) -> bool:
            if st.nulls_only(fid) or st.nans_only(fid):
                return True
            candidates: Any = sorted_values
            lower = st.lower_bound(fid, t)
            if lower is not None:
                if is_nan(lower):
                    return False
                candidates = [v for v in candidates if not v < lower]
                if not candidates:
                    return True
            upper = st.upper_bound(fid, t)
            if upper is not None:
                candidates = [v for v in candidates if not v > upper]
                if not candidates:
                    return True
            return False

        return not_in
    lit = pred.literal
    if op is Operation.NOT_EQ:

        def not_eq(st: _Stats) -> bool:
            if st.nulls_only(fid) or st.nans_only(fid):
                return True
            lower = st.lower_bound(fid, t)
            if lower is not None:
                if is_nan(lower):
                    return False
                if lower > lit:
                    return True
            upper = st.upper_bound(fid, t)
            return upper is not None and upper < lit

        return not_eq
    if op is Operation.EQ:

        def eq(st: _Stats) -> bool:
            if may_hold_null(st) or may_hold_nan(st):
                return False
            lower, upper = st.lower_bound(fid, t), st.upper_bound(fid, t)
            return lower is not None and upper is not None and lower == lit and upper == lit

        return eq
    if op in (Operation.LT, Operation.LT_EQ):
        strict_less = op is Operation.LT

        def lt(st: _Stats) -> bool:
            if may_hold_null(st) or may_hold_nan(st):
                return False
            upper = st.upper_bound(fid, t)
            if upper is None:
                return False
            return bool(upper < lit) if strict_less else bool(upper <= lit)

        return lt
    strict_greater = op is Operation.GT

    def gt(st: _Stats) -> bool:
        if may_hold_null(st) or may_hold_nan(st):
            return False
        lower = st.lower_bound(fid, t)
        if lower is None or is_nan(lower):
            return False
        return bool(lower > lit) if strict_greater else bool(lower >= lit)

    return gt
