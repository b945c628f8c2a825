"""Properties tying the evaluators to row-level truth on random data.

- A file (manifest) with a matching row is never pruned by the inclusive metrics
  (manifest) evaluator, whatever statistics are present or missing.
- The strict metrics evaluator answers "all rows match" only when they all do.
- A residual evaluated on each row of a partition agrees with the full filter.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from neve.expressions import (
    BooleanExpression,
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    Operation,
    ResidualEvaluator,
    StrictMetricsEvaluator,
    and_,
    bind,
    or_,
    predicate,
)
from neve.expressions.evaluator import compile_expression
from neve.spec.manifest import DataFile, FieldSummary, FileFormat, ManifestContent, ManifestFile
from neve.spec.partition import PartitionField, PartitionSpec
from neve.spec.schema import Schema
from neve.spec.transforms import (
    BucketTransform,
    DayTransform,
    IdentityTransform,
    Transform,
    TruncateTransform,
)
from neve.spec.types import DATE, DOUBLE, LONG, STRING, DecimalType, IcebergType, NestedField
from neve.spec.values import to_bytes, truncate_lower_bound, truncate_upper_bound

NAN = float("nan")
_KINDS: dict[str, tuple[IcebergType, st.SearchStrategy[Any]]] = {
    "long": (LONG, st.integers(-50, 50)),
    "double": (
        DOUBLE,
        st.one_of(st.sampled_from([NAN, -0.0, 0.0, float("inf")]), st.integers(-20, 20).map(float)),
    ),
    "string": (STRING, st.text(alphabet="ab\U0010ffffé", max_size=5)),
    "decimal": (DecimalType(5, 1), st.integers(-99, 99).map(lambda n: Decimal(n).scaleb(-1))),
    "date": (DATE, st.integers(-800, 800)),
}
_TRANSFORMS: dict[str, list[Transform]] = {
    "long": [IdentityTransform(), TruncateTransform(10), BucketTransform(3)],
    "double": [IdentityTransform()],
    "string": [IdentityTransform(), TruncateTransform(1), TruncateTransform(2)],
    "decimal": [IdentityTransform(), TruncateTransform(50)],
    "date": [IdentityTransform(), DayTransform(), BucketTransform(2)],
}
_OPS = [
    Operation.LT,
    Operation.LT_EQ,
    Operation.GT,
    Operation.GT_EQ,
    Operation.EQ,
    Operation.NOT_EQ,
    Operation.IN,
    Operation.NOT_IN,
    Operation.IS_NULL,
    Operation.NOT_NULL,
]


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


@st.composite
def filters(
    draw: st.DrawFn, kind: str, column: str, values: st.SearchStrategy[Any]
) -> BooleanExpression:
    ops = list(_OPS)
    if kind == "string":
        ops += [Operation.STARTS_WITH, Operation.NOT_STARTS_WITH] * 2
    if kind == "double":
        ops += [Operation.IS_NAN, Operation.NOT_NAN]
    op = draw(st.sampled_from(ops))
    if op.is_unary:
        return predicate(op, column)
    non_nan = values.filter(lambda v: not _is_nan(v))
    if op.is_set:
        return predicate(op, column, draw(st.lists(non_nan, min_size=1, max_size=3)))
    return predicate(op, column, (draw(non_nan),))


@st.composite
def files(
    draw: st.DrawFn, kind: str
) -> tuple[Schema, list[tuple[Any, ...]], DataFile, BooleanExpression]:
    t, values = _KINDS[kind]
    required = draw(st.booleans())
    schema = Schema(NestedField(1, "x", t, required))
    cell = values if required else st.one_of(st.none(), values)
    rows = draw(st.lists(cell, min_size=1, max_size=8))
    present = [v for v in rows if v is not None and not _is_nan(v)]
    limit = draw(st.sampled_from([1, 2, 16]))
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    if present:
        lo = truncate_lower_bound(t, min(present), limit)
        hi = truncate_upper_bound(t, max(present), limit)
        lower[1] = to_bytes(t, lo)
        if hi is not None:
            upper[1] = to_bytes(t, hi)

    def maybe(stats: dict[int, Any]) -> dict[int, Any] | None:
        how = draw(st.integers(0, 5))
        return None if how == 0 else ({} if how == 1 else stats)

    f = DataFile(
        "f.parquet",
        FileFormat.PARQUET,
        (),
        len(rows),
        100,
        value_counts=maybe({1: len(rows)}),
        null_value_counts=maybe({1: sum(v is None for v in rows)}),
        nan_value_counts=maybe({1: sum(_is_nan(v) for v in rows)}) if kind == "double" else None,
        lower_bounds=maybe(lower),
        upper_bounds=maybe(upper),
    )
    expr = draw(filters(kind, "x", values))
    return schema, [(v,) for v in rows], f, expr


def _truth(schema: Schema, expr: BooleanExpression, rows: list[tuple[Any, ...]]) -> list[bool]:
    test = compile_expression(bind(schema, expr))
    return [test(r) for r in rows]


@settings(max_examples=250)
@given(st.sampled_from(sorted(_KINDS)).flatmap(files))
def test_metrics_evaluators_agree_with_rows(
    case: tuple[Schema, list[tuple[Any, ...]], DataFile, BooleanExpression],
) -> None:
    schema, rows, f, expr = case
    truth = _truth(schema, expr, rows)
    if any(truth):
        assert InclusiveMetricsEvaluator(schema, expr).eval(f), f"pruned a file matching {expr}"
    if StrictMetricsEvaluator(schema, expr).eval(f):
        assert all(truth), f"claimed every row matches {expr}: {rows}"


@st.composite
def partitioned(
    draw: st.DrawFn, kind: str
) -> tuple[Schema, PartitionSpec, list[tuple[Any, ...]], BooleanExpression]:
    t, values = _KINDS[kind]
    schema = Schema(NestedField(1, "x", t), NestedField(2, "y", LONG))
    transform = draw(st.sampled_from(_TRANSFORMS[kind]))
    spec = PartitionSpec(0, (PartitionField(1, 1000, transform, "p"),))
    rows = draw(
        st.lists(
            st.tuples(st.one_of(st.none(), values), st.integers(0, 3)), min_size=1, max_size=10
        )
    )
    x_filter = draw(filters(kind, "x", values))
    y_filter = draw(filters("long", "y", st.integers(0, 3)))
    combine = draw(st.sampled_from([and_, or_]))
    expr = combine(x_filter, y_filter) if draw(st.booleans()) else x_filter
    return schema, spec, rows, expr


@settings(max_examples=250)
@given(st.sampled_from(sorted(_KINDS)).flatmap(partitioned))
def test_manifest_evaluator_never_prunes_a_matching_row(
    case: tuple[Schema, PartitionSpec, list[tuple[Any, ...]], BooleanExpression],
) -> None:
    schema, spec, rows, expr = case
    assume(any(_truth(schema, expr, rows)))
    pf = spec.fields[0]
    source = schema.find_type(1)
    result_type = pf.transform.result_type(source)
    parts = [pf.transform.apply(source, r[0]) for r in rows]
    present = [p for p in parts if p is not None and not _is_nan(p)]
    summary = FieldSummary(
        contains_null=any(p is None for p in parts),
        contains_nan=any(_is_nan(p) for p in parts) if result_type == DOUBLE else None,
        lower_bound=to_bytes(result_type, min(present)) if present else None,
        upper_bound=to_bytes(result_type, max(present)) if present else None,
    )
    manifest = ManifestFile("m", 1, 0, ManifestContent.DATA, 1, 1, 1, 1, 0, 0, 1, 0, 0, (summary,))
    assert ManifestEvaluator(spec, schema, expr).eval(manifest), f"pruned {expr} on {rows}"


@settings(max_examples=250)
@given(st.sampled_from(sorted(_KINDS)).flatmap(partitioned))
def test_residuals_agree_with_the_filter_on_every_row(
    case: tuple[Schema, PartitionSpec, list[tuple[Any, ...]], BooleanExpression],
) -> None:
    schema, spec, rows, expr = case
    pf = spec.fields[0]
    source = schema.find_type(1)
    residuals = ResidualEvaluator(spec, schema, expr)
    full = compile_expression(bind(schema, expr))
    for row in rows:
        residual = residuals.residual_for((pf.transform.apply(source, row[0]),))
        assert compile_expression(residual)(row) == full(row), (
            f"residual {residual} of {expr} disagrees on {row}"
        )
