"""Pruning manifests by the partition summaries of the manifest list.

A manifest-list entry summarizes each partition field over all files of the manifest:
``contains_null``, ``contains_nan`` and lower/upper bounds (a missing lower bound means
every value is null or NaN). :class:`ManifestEvaluator` projects the row filter
inclusively onto the partition struct and answers "might this manifest hold a file
with matching rows?" (Iceberg-Java's ``ManifestEvaluator.forRowFilter``). The filter
is compiled once into closures (a :class:`~neve.expressions.visitors.ClosureCompiler`);
evaluating a manifest is a handful of calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from neve.expressions.bounds import IN_PREDICATE_LIMIT, decode, prefix_cmp
from neve.expressions.expressions import BooleanExpression, BoundReference
from neve.expressions.projection import inclusive_projection
from neve.expressions.visitors import ClosureCompiler
from neve.spec.manifest import FieldSummary, ManifestFile
from neve.spec.partition import PartitionSpec
from neve.spec.schema import Schema
from neve.spec.types import DoubleType, FloatType, PrimitiveType

__all__ = ["ManifestEvaluator"]

Summaries = Sequence[FieldSummary]
Test = Callable[[Summaries], bool]


class ManifestEvaluator:
    """``eval(manifest)`` is False only when no file in the manifest can match."""

    __slots__ = ("_n", "_test", "partition_filter")

    def __init__(
        self,
        spec: PartitionSpec,
        schema: Schema,
        row_filter: BooleanExpression,
        case_sensitive: bool = True,
    ) -> None:
        projection = inclusive_projection(schema, spec, case_sensitive)
        #: The row filter projected onto the partition struct (bound, without NOT).
        self.partition_filter = projection.project(row_filter)
        self._n = len(spec.fields)
        self._test = _SUMMARIES.compile(self.partition_filter)

    def eval(self, manifest: ManifestFile) -> bool:
        summaries = manifest.partitions
        if summaries is None or len(summaries) != self._n:
            return True  # no usable summaries: the manifest might match
        return self._test(summaries)


def _all_null(s: FieldSummary, floating: bool) -> bool:
    # A null lower bound with contains_null means all values are null, or NaN for
    # floating types: only a known contains_nan=False rules NaN out.
    all_null = s.contains_null and s.lower_bound is None
    if all_null and floating:
        return s.contains_nan is False
    return all_null


def _field(ref: BoundReference) -> tuple[int, PrimitiveType]:
    """The position of the referenced partition field and its (primitive) type."""
    t = ref.field_type
    assert isinstance(t, PrimitiveType)
    return ref.accessor[0], t


def _maybe(s: Summaries) -> bool:
    return True


class _SummaryCompiler(ClosureCompiler[Summaries]):
    """The tests of each operation on the summaries of a manifest's partitions."""

    def visit_is_null(self, ref: BoundReference) -> Test:
        pos = ref.accessor[0]
        return lambda s: bool(s[pos].contains_null)

    def visit_not_null(self, ref: BoundReference) -> Test:
        pos, t = _field(ref)
        floating = isinstance(t, (FloatType, DoubleType))
        return lambda s: not _all_null(s[pos], floating)

    def visit_is_nan(self, ref: BoundReference) -> Test:
        pos, t = _field(ref)
        floating = isinstance(t, (FloatType, DoubleType))
        return lambda s: s[pos].contains_nan is not False and not _all_null(s[pos], floating)

    def visit_not_nan(self, ref: BoundReference) -> Test:
        pos = ref.accessor[0]

        def not_nan(s: Summaries) -> bool:
            f = s[pos]
            return not (f.contains_nan is True and not f.contains_null and f.lower_bound is None)

        return not_nan

    # Bounds need not be values of the column, so they cannot rule these two out.
    def visit_not_eq(self, ref: BoundReference, lit: Any) -> Test:
        return _maybe

    def visit_not_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> Test:
        return _maybe

    def visit_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> Test:
        pos, t = _field(ref)
        if len(lits) > IN_PREDICATE_LIMIT:
            return _maybe

        def in_(s: Summaries) -> bool:
            f = s[pos]
            if f.lower_bound is None:
                return False  # all null (or NaN), and the values are neither
            lower = decode(t, f.lower_bound)
            candidates = [v for v in lits if not v < lower]
            if not candidates:
                return False
            if f.upper_bound is not None:
                upper = decode(t, f.upper_bound)
                return any(not v > upper for v in candidates)
            return True

        return in_

    def visit_starts_with(self, ref: BoundReference, lit: Any) -> Test:
        pos, _ = _field(ref)
        prefix = str(lit).encode("utf-8")

        def starts_with(s: Summaries) -> bool:
            f = s[pos]
            if f.lower_bound is None:
                return False
            if prefix_cmp(f.lower_bound, prefix) > 0:
                return False
            return f.upper_bound is None or prefix_cmp(f.upper_bound, prefix) >= 0

        return starts_with

    def visit_not_starts_with(self, ref: BoundReference, lit: Any) -> Test:
        pos, _ = _field(ref)
        prefix = str(lit).encode("utf-8")

        def not_starts_with(s: Summaries) -> bool:
            f = s[pos]
            if f.contains_null:
                return True
            lo, hi = f.lower_bound, f.upper_bound
            if lo is None or hi is None or len(lo) < len(prefix) or len(hi) < len(prefix):
                return True
            # Both bounds start with the prefix: so does every value in between.
            return not (lo.startswith(prefix) and hi.startswith(prefix))

        return not_starts_with

    def visit_lt(self, ref: BoundReference, lit: Any) -> Test:
        pos, t = _field(ref)

        def lt(s: Summaries) -> bool:
            b = s[pos].lower_bound
            return b is not None and decode(t, b) < lit

        return lt

    def visit_lt_eq(self, ref: BoundReference, lit: Any) -> Test:
        pos, t = _field(ref)

        def lt_eq(s: Summaries) -> bool:
            b = s[pos].lower_bound
            return b is not None and decode(t, b) <= lit

        return lt_eq

    def visit_gt(self, ref: BoundReference, lit: Any) -> Test:
        pos, t = _field(ref)

        def gt(s: Summaries) -> bool:
            b = s[pos].upper_bound
            return b is not None and decode(t, b) > lit

        return gt

    def visit_gt_eq(self, ref: BoundReference, lit: Any) -> Test:
        pos, t = _field(ref)

        def gt_eq(s: Summaries) -> bool:
            b = s[pos].upper_bound
            return b is not None and decode(t, b) >= lit

        return gt_eq

    def visit_eq(self, ref: BoundReference, lit: Any) -> Test:
        pos, t = _field(ref)

        def eq(s: Summaries) -> bool:
            f = s[pos]
            if f.lower_bound is None:
                return False
            if decode(t, f.lower_bound) > lit:
                return False
            return f.upper_bound is None or not decode(t, f.upper_bound) < lit

        return eq


_SUMMARIES = _SummaryCompiler()
