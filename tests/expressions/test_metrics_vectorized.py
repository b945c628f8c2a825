"""The vectorized inclusive metrics evaluator answers as the per-file one does.

Planning judges a manifest's files all at once on arrays of their metrics where the
filter allows (``InclusiveMetricsEvaluator.eval_arrays``). For random metrics (missing
maps and keys, nulls-only and NaN-only columns, NaN and infinite bounds, empty files,
unknown record counts) and random filters over every supported type, its answer must
equal ``eval_metrics`` file by file; filters it does not cover, and bounds narrower
than their type, must make it decline (None) rather than answer differently.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neve.expressions import (
    and_,
    equal,
    greater_than,
    greater_than_or_equal,
    is_in,
    is_nan,
    is_null,
    less_than,
    less_than_or_equal,
    not_equal,
    not_in,
    not_nan,
    not_null,
    or_,
    starts_with,
)
from neve.expressions.expressions import ALWAYS_FALSE, ALWAYS_TRUE, BooleanExpression
from neve.expressions.metric_arrays import MetricArrays
from neve.expressions.metrics_evaluator import InclusiveMetricsEvaluator
from neve.expressions.visitors import references
from neve.spec.schema import Schema
from neve.spec.types import (
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    NestedField,
)

# name, field id, type, bound packing
COLUMNS = {
    "i": (1, INT, "<i"),
    "l": (2, LONG, "<q"),
    "d": (3, DATE, "<i"),
    "ts": (4, TIMESTAMP, "<q"),
    "f": (5, FLOAT, "<f"),
    "x": (6, DOUBLE, "<d"),
    "s": (7, STRING, None),
    "old": (8, LONG, "<q"),  # an int column promoted to long: some bounds 4 bytes
}
SCHEMA = Schema(*(NestedField(fid, name, t) for name, (fid, t, _) in COLUMNS.items()))
VECTORIZED = {"i", "l", "d", "ts", "f", "x"}
FLOATING = {"f", "x"}

_INTS = st.integers(-20, 20)
_FLOATS = st.sampled_from([-math.inf, -2.5, -0.0, 0.0, 1.0, 2.5, math.inf]) | st.floats(
    -20, 20, width=32
)


def _value(name: str) -> st.SearchStrategy[Any]:
    """A literal for the column (never NaN: filters refuse it)."""
    if name == "s":
        return st.text("abc", max_size=3)
    return _FLOATS if name in FLOATING else _INTS


def _bound(name: str) -> st.SearchStrategy[bytes]:
    fmt = COLUMNS[name][2]
    if fmt is None:
        return st.text("abc", max_size=3).map(str.encode)
    if name == "old":
        return st.one_of(
            _INTS.map(lambda v: struct.pack("<i", v)), _INTS.map(lambda v: struct.pack("<q", v))
        )
    values = _value(name) | st.just(math.nan) if name in FLOATING else _value(name)
    return values.map(lambda v: struct.pack(fmt, v))


@st.composite
def _file(draw: st.DrawFn) -> dict[str, Any]:
    def metric(values: Any) -> dict[int, Any] | None:
        if draw(st.integers(0, 4)) == 0:
            return None
        keys = draw(st.lists(st.sampled_from(list(COLUMNS)), unique=True))
        return {COLUMNS[k][0]: draw(values(k)) for k in keys}

    counts = st.integers(0, 4)
    return {
        "record_count": draw(st.sampled_from([-1, 0, 1, 4])),
        "value_counts": metric(lambda k: counts),
        "null_value_counts": metric(lambda k: counts),
        "nan_value_counts": metric(lambda k: counts),
        "lower_bounds": metric(_bound),
        "upper_bounds": metric(_bound),
    }


def _leaf(draw: st.DrawFn) -> BooleanExpression:
    name = draw(st.sampled_from(list(COLUMNS)))
    value = _value(name) if name != "old" else _INTS
    kind = draw(st.sampled_from(["cmp", "in", "null", "nan" if name in FLOATING else "null"]))
    if kind == "null":
        return draw(st.sampled_from([is_null, not_null]))(name)
    if kind == "nan":
        return draw(st.sampled_from([is_nan, not_nan]))(name)
    if kind == "in":
        # more values than IN_PREDICATE_LIMIT are not checked against bounds
        many = [str(v) for v in range(300)] if name == "s" else list(range(-300, 1))
        values = draw(st.lists(value, min_size=1, max_size=4) | st.just(many))
        if name in FLOATING:
            values = [float(v) for v in values]
        return draw(st.sampled_from([is_in, not_in]))(name, values)
    v = draw(value)
    if name == "s" and draw(st.booleans()):
        return starts_with(name, v)
    ops = [less_than, less_than_or_equal, greater_than, greater_than_or_equal, equal, not_equal]
    return draw(st.sampled_from(ops))(name, v)


@st.composite
def _filter(draw: st.DrawFn, depth: int = 0) -> BooleanExpression:
    pick = draw(st.integers(0, 9 if depth < 2 else 6))
    if pick == 0:
        return draw(st.sampled_from([ALWAYS_TRUE, ALWAYS_FALSE]))
    if pick <= 6:
        return _leaf(draw)
    combine = and_ if pick <= 8 else or_
    return combine(draw(_filter(depth + 1)), draw(_filter(depth + 1)))


def _arrays(files: list[dict[str, Any]], fids: frozenset[int]) -> MetricArrays:
    """The metrics of ``files`` as arrays, as ``ManifestColumns.metric_arrays`` builds
    them from a manifest (that builder is checked against decoded entries in
    tests/spec/test_manifest_columnar.py)."""

    def known(name: str, fid: int) -> np.ndarray:
        return np.array([fid in (f[name] or {}) for f in files], dtype=np.bool_)

    def counts(name: str) -> dict[int, Any]:
        return {
            fid: (known(name, fid), np.array([(f[name] or {}).get(fid, 0) for f in files]))
            for fid in fids
        }

    def bounds(name: str) -> dict[int, Any]:
        return {
            fid: (known(name, fid), [f[name][fid] for f in files if fid in (f[name] or {})])
            for fid in fids
        }

    return MetricArrays(
        np.array([f["record_count"] for f in files], dtype=np.int64),
        counts("value_counts"),
        counts("null_value_counts"),
        counts("nan_value_counts"),
        bounds("lower_bounds"),
        bounds("upper_bounds"),
    )


def _names(expr: BooleanExpression) -> set[str]:
    by_id = {fid: name for name, (fid, _, _) in COLUMNS.items()}
    evaluator = InclusiveMetricsEvaluator(SCHEMA, expr)
    return {by_id[r.field_id] for r in references(evaluator.expr)}


@settings(max_examples=400)
@given(
    files=st.lists(_file(), min_size=0, max_size=12),
    row_filter=_filter(),
    include_empty=st.booleans(),
)
def test_vectorized_equals_file_by_file(
    files: list[dict[str, Any]], row_filter: BooleanExpression, include_empty: bool
) -> None:
    evaluator = InclusiveMetricsEvaluator(SCHEMA, row_filter, include_empty_files=include_empty)
    got = evaluator.eval_arrays(_arrays(files, evaluator.field_ids))
    if got is not None:
        expected = [evaluator.eval_metrics(**f) for f in files]
        assert got == expected, row_filter
    # covered: no string column, no column with narrow bounds among those read
    if _names(row_filter) <= VECTORIZED:
        assert got is not None, row_filter


@given(files=st.lists(_file(), min_size=1, max_size=6))
def test_declines_filters_it_does_not_cover(files: list[dict[str, Any]]) -> None:
    for row_filter in (
        less_than("s", "b"),
        starts_with("s", "a"),
        or_(is_null("i"), equal("s", "a")),
    ):
        evaluator = InclusiveMetricsEvaluator(SCHEMA, row_filter)
        assert evaluator.eval_arrays(_arrays(files, evaluator.field_ids)) is None


def test_declines_bounds_narrower_than_their_type() -> None:
    files = [
        {
            "record_count": 3,
            "value_counts": {8: 3},
            "null_value_counts": {8: 0},
            "nan_value_counts": None,
            "lower_bounds": {8: struct.pack("<i", 5)},  # written while "old" was an int
            "upper_bounds": {8: struct.pack("<q", 9)},
        }
    ]
    evaluator = InclusiveMetricsEvaluator(SCHEMA, less_than("old", 4))
    assert evaluator.eval_arrays(_arrays(files, evaluator.field_ids)) is None
    assert evaluator.eval_metrics(**files[0]) is False  # the per-file evaluator decides
    # a filter that does not read the bounds needs no decoding
    evaluator = InclusiveMetricsEvaluator(SCHEMA, not_null("old"))
    assert evaluator.eval_arrays(_arrays(files, evaluator.field_ids)) == [True]


def test_examples_from_the_rules() -> None:
    def file(lower: float, upper: float, nans: int = 0, nulls: int = 0) -> dict[str, Any]:
        return {
            "record_count": 10,
            "value_counts": {6: 10},
            "null_value_counts": {6: nulls},
            "nan_value_counts": {6: nans},
            "lower_bounds": {6: struct.pack("<d", lower)},
            "upper_bounds": {6: struct.pack("<d", upper)},
        }

    files = [
        file(0.0, 1.0),
        file(5.0, 9.0),
        file(math.nan, 9.0),  # a NaN lower bound proves nothing
        file(0.0, 1.0, nans=10),  # NaN only: no comparison holds
        file(0.0, 1.0, nulls=10),  # null only
    ]
    cases = {
        less_than("x", 2.0): [True, False, True, False, False],
        greater_than("x", 2.0): [False, True, True, False, False],
        equal("x", 7.0): [False, True, True, False, False],
        equal("x", 20.0): [False, False, True, False, False],  # above every upper bound
        is_in("x", [0.5, 20.0]): [True, False, True, False, False],
        is_nan("x"): [False, False, False, True, False],
        not_nan("x"): [True, True, True, False, True],
        is_null("x"): [False, False, False, False, True],
        not_in("x", [0.5]): [True] * 5,
    }
    for row_filter, expected in cases.items():
        evaluator = InclusiveMetricsEvaluator(SCHEMA, row_filter)
        assert evaluator.eval_arrays(_arrays(files, evaluator.field_ids)) == expected, row_filter
        assert [evaluator.eval_metrics(**f) for f in files] == expected, row_filter
