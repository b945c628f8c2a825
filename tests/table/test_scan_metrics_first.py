"""Planning judges files by their metrics before decoding them in full.

With the columnar decoder, planning reads for a manifest's pending entries only the
record counts and the metric entries of the fields the filter reads, runs the metrics
evaluator on those (on arrays of all entries at once where the filter allows, else
entry by entry), and decodes in full only the files that may match. The tasks must
be exactly the files the evaluator keeps when it sees whole data files: checked here
against that evaluator applied to the files as they were committed, and against
planning with fastavro alone, for random metrics (nulls, NaNs, missing maps and
bounds) and random filters.
"""

from __future__ import annotations

import math
import struct
import tempfile
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

import neve
from manifest_decoder import manifest_decoder
from neve.expressions import (
    and_,
    equal,
    greater_than,
    greater_than_or_equal,
    is_nan,
    is_null,
    less_than,
    less_than_or_equal,
    not_null,
    or_,
)
from neve.expressions.expressions import And, BooleanExpression, BoundPredicate, Operation, Or
from neve.expressions.metrics_evaluator import InclusiveMetricsEvaluator
from neve.planning.manifest_cache import manifest_cache
from neve.spec.manifest import DataFile, FileFormat

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string())])
FILES = 48  # in one manifest or three: each more than planning decodes without metrics first


@st.composite
def _metrics(draw: st.DrawFn) -> dict[str, Any]:
    def maybe(strategy: st.SearchStrategy[Any]) -> Any:
        return draw(st.none() | strategy)

    lo_id = draw(st.integers(-50, 50))
    lo_x = draw(st.floats(-10, 10) | st.just(math.nan))
    lo_s = draw(st.text("abc", max_size=3))
    out: dict[str, Any] = {
        "record_count": draw(st.integers(0, 5)),
        "value_counts": maybe(st.fixed_dictionaries({1: st.integers(0, 5), 2: st.integers(0, 5)})),
        "null_value_counts": maybe(st.dictionaries(st.sampled_from([1, 2, 3]), st.integers(0, 5))),
        "nan_value_counts": maybe(st.fixed_dictionaries({2: st.integers(0, 5)})),
        "lower_bounds": maybe(
            st.fixed_dictionaries(
                {
                    1: st.just(struct.pack("<q", lo_id)),
                    2: st.just(struct.pack("<d", lo_x)),
                    3: st.just(lo_s.encode()),
                }
            )
        ),
        "upper_bounds": maybe(
            st.fixed_dictionaries(
                {
                    1: st.integers(lo_id, 60).map(lambda v: struct.pack("<q", v)),
                    3: st.just((lo_s + "c").encode()),
                }
            )
        ),
    }
    return out


_LEAVES = [
    st.integers(-60, 60).map(lambda v: less_than("id", v)),
    st.integers(-60, 60).map(lambda v: greater_than_or_equal("id", v)),
    st.integers(-60, 60).map(lambda v: equal("id", v)),
    st.floats(-12, 12).map(lambda v: greater_than("x", v)),
    st.floats(-12, 12).map(lambda v: less_than_or_equal("x", v)),
    st.text("abc", max_size=3).map(lambda v: less_than("s", v)),
    st.sampled_from([is_null("id"), not_null("x"), is_nan("x"), is_null("s")]),
]
_FILTERS: st.SearchStrategy[BooleanExpression] = st.recursive(
    st.one_of(_LEAVES),
    lambda inner: st.one_of(
        st.tuples(inner, inner).map(lambda ab: and_(*ab)),
        st.tuples(inner, inner).map(lambda ab: or_(*ab)),
    ),
    max_leaves=4,
)


def _compares_strings(expr: BooleanExpression) -> bool:
    """Whether ``expr`` (bound) compares the string column with a value: the filters
    the vectorized metrics evaluator leaves to the per-file one."""
    if isinstance(expr, (And, Or)):
        return _compares_strings(expr.left) or _compares_strings(expr.right)
    return (
        isinstance(expr, BoundPredicate)
        and expr.term.field_id == 3
        and expr.op not in (Operation.IS_NULL, Operation.NOT_NULL)
    )


@settings(max_examples=40)
@given(
    metrics=st.lists(_metrics(), min_size=FILES, max_size=FILES),
    filters=st.lists(_FILTERS, min_size=3, max_size=3),
    appends=st.sampled_from([1, 3]),
)
def test_planned_files_are_the_files_the_metrics_evaluator_keeps(
    metrics: list[dict[str, Any]], filters: list[BooleanExpression], appends: int
) -> None:
    """Three manifests are read by the columnar reader in fewer calls than manifests
    (one per core): the pending entries of those read together are judged together."""
    with tempfile.TemporaryDirectory() as tmp:
        cat = neve.connect(f"sqlite:///{tmp}/c.db", warehouse=f"{tmp}/wh")
        cat.create_namespace("db")
        table = cat.create_table("db.t", SCHEMA)
        files = [
            DataFile(
                file_path=f"{tmp}/wh/db/t/data/f{k:03d}.parquet",
                file_format=FileFormat.PARQUET,
                partition=(),
                file_size_in_bytes=100 + k,
                **m,
            )
            for k, m in enumerate(metrics)
        ]
        per = FILES // appends
        for k in range(appends):
            with table.transaction() as tx:
                tx.add_files(files[k * per : (k + 1) * per])
        for row_filter in filters:
            evaluator = InclusiveMetricsEvaluator(table.schema(), row_filter)
            expected = sorted(f.file_path for f in files if evaluator.eval(f))
            planned = {}
            for name in ("columnar", "fastavro"):
                with manifest_decoder(name):
                    tasks = table.scan(filter=row_filter).plan_files()
                    planned[name] = sorted(t.file.file_path for t in tasks)
                    if name == "columnar":  # only the files that may match were decoded
                        lazies = list(manifest_cache()._manifests.values())
                        assert len(lazies) == appends
                        decoded = sum(lz.is_decoded(i) for lz in lazies for i in range(len(lz)))
                        assert decoded == len(expected)
                        # judged on arrays (of the manifests read together), unless
                        # the filter compares strings: then entry by entry
                        assert all(lz.columns is not None for lz in lazies)
                        if evaluator.field_ids:
                            one_by_one = _compares_strings(evaluator.expr)
                            for lz in lazies:
                                assert lz.columns is not None
                                assert bool(lz.columns._metrics) is one_by_one, row_filter
            assert planned["columnar"] == expected, row_filter
            assert planned["fastavro"] == expected, row_filter
