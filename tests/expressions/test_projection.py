from __future__ import annotations

import itertools
from decimal import Decimal

import pytest

from neve.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    BoundPredicate,
    BoundReference,
    bind,
    inclusive_projection,
    parse,
    project_inclusive,
    project_strict,
    strict_projection,
)
from neve.expressions.evaluator import compile_expression
from neve.expressions.residual import ResidualEvaluator
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
    BINARY,
    DATE,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    DecimalType,
    IcebergType,
    NestedField,
)


def project(transform: Transform, source: IcebergType, text: str, strict: bool) -> str | None:
    """Project the filter ``text`` on column x through ``transform`` onto field p."""
    schema = Schema(NestedField(1, "x", source))
    pred = bind(schema, parse(text))
    assert isinstance(pred, BoundPredicate)
    target = BoundReference(
        NestedField(1000, "p", transform.result_type(source), False), (0,), ("p",), True
    )
    fn = project_strict if strict else project_inclusive
    result = fn(transform, source, pred, target)
    return None if result is None else str(result)


def check(
    transform: Transform, source: IcebergType, text: str, inclusive: str | None, strict: str | None
) -> None:
    assert project(transform, source, text, strict=False) == inclusive
    assert project(transform, source, text, strict=True) == strict


# {W} is the partition value Iceberg-Java's wrapping arithmetic stores for the lowest
# values of the type (truncate[10] of -2147483648 is 2147483646 in int arithmetic):
# comparisons those values satisfy must admit it, the others must not claim it
# (rows such projections prune would be lost).
@pytest.mark.parametrize(
    ("text", "inclusive", "strict"),
    [
        ("x < 100", "p <= 90 OR p = {W}", "p < 100"),
        ("x <= 100", "p <= 100 OR p = {W}", "p < 100"),
        ("x <= 99", "p <= 90 OR p = {W}", "p < 100"),
        ("x > 100", "p >= 100", "p > 100 AND p != {W}"),
        ("x > 99", "p >= 100", "p > 90 AND p != {W}"),
        ("x >= 100", "p >= 100", "p > 90 AND p != {W}"),
        ("x = 100", "p = 100", None),
        ("x != 100", None, "p != 100"),
        ("x IN (99, 100, 101)", "p IN (90, 100)", None),
        ("x NOT IN (99, 100, 101)", None, "p NOT IN (90, 100)"),
        ("x < -1", "p <= -10 OR p = {W}", "p < -10"),
        ("x >= -1", "p >= -10", "p > -10 AND p != {W}"),
        ("x IS NULL", "p IS NULL", "p IS NULL"),
        ("x IS NOT NULL", "p IS NOT NULL", "p IS NOT NULL"),
    ],
)
def test_truncate_integer(text: str, inclusive: str | None, strict: str | None) -> None:
    for source, wrapped in ((INT, 2**31 - 2), (LONG, 2**63 - 2)):
        check(
            TruncateTransform(10),
            source,
            text,
            None if inclusive is None else inclusive.format(W=wrapped),
            None if strict is None else strict.format(W=wrapped),
        )


_WRAPPING = [
    (INT, TruncateTransform(100), [-(2**31), -(2**31) + 47, -(2**31) + 48, -5, 0, 2**31 - 1]),
    (LONG, TruncateTransform(100), [-(2**63), -(2**63) + 7, -(2**63) + 8, -1, 2**63 - 1]),
    (INT, TruncateTransform(2**31 - 1), [-(2**31), -1, 0, 1, 2, 3, 2**31 - 2, 2**31 - 1]),
    (INT, TruncateTransform(2**30 + 1), [-(2**31), -(2**30) - 2, 2**30 - 1, 2**30, 2**31 - 1]),
    (TIMESTAMP, HourTransform(), [-(2**63), 2**63 - 1, 2**31 * 3_600_000_000, -1, 0]),
]


@pytest.mark.parametrize(("source", "transform", "values"), _WRAPPING)
def test_wrapped_partition_values_are_never_pruned_nor_claimed(
    source: IcebergType, transform: Transform, values: list[int]
) -> None:
    """Where Iceberg-Java's arithmetic wraps (truncate[100] of -2147483648 is stored
    as 2147483596), the inclusive projection of every predicate a value satisfies
    holds on its stored partition value, and a strict projection holding on it means
    the value satisfies the predicate."""
    schema = Schema(NestedField(1, "x", source))
    target = BoundReference(
        NestedField(1000, "p", transform.result_type(source), False), (0,), ("p",), True
    )
    literals = [*values, *(v + d for v in values for d in (-1, 1)), -5, 5, 0]
    ops = ("<", "<=", ">", ">=", "=", "!=")
    texts = [f"x {op} {lit}" for lit in literals for op in ops]
    texts += [f"x IN ({a}, {b})" for a, b in itertools.pairwise(literals)]
    texts += [f"x NOT IN ({a}, {b})" for a, b in zip(literals, literals[2:], strict=False)]
    for text in texts:
        pred = bind(schema, parse(text))
        if not isinstance(pred, BoundPredicate):
            continue  # a literal beyond the type: a constant
        row_test = compile_expression(pred)
        inclusive = project_inclusive(transform, source, pred, target)
        strict = project_strict(transform, source, pred, target)
        for v in values:
            stored = (transform.apply(source, v),)
            if row_test((v,)) and inclusive is not None:
                assert compile_expression(inclusive)(stored), f"{text} loses {v} ({inclusive})"
            if strict is not None and compile_expression(strict)(stored):
                assert row_test((v,)), f"{text} claims {v} ({strict})"


def test_residuals_of_a_wrapped_partition_value_keep_the_row_filter() -> None:
    schema = Schema(NestedField(1, "x", INT))
    spec = PartitionSpec(0, (PartitionField(1, 1000, TruncateTransform(100), "p"),))
    stored = (TruncateTransform(100).apply(INT, -(2**31)),)
    assert stored == (2147483596,)
    # the partition's rows may match: they are read and filtered (before: skipped)
    assert str(ResidualEvaluator(spec, schema, parse("x < -5")).residual_for(stored)) == "x < -5"
    # nor are they taken whole: 2147483596 > 0, but its rows are not (before: TRUE)
    assert str(ResidualEvaluator(spec, schema, parse("x > 0")).residual_for(stored)) == "x > 0"
    # a regular partition is decided as before
    assert ResidualEvaluator(spec, schema, parse("x > 0")).residual_for((100,)) is ALWAYS_TRUE


def test_truncate_at_the_limits_of_int() -> None:
    t = TruncateTransform(10)
    # Nothing is below the smallest int; everything non-null is at most the largest.
    assert project(t, INT, f"x < {-(2**31)}", strict=False) == "false"
    assert project(t, INT, f"x > {2**31 - 1}", strict=False) == "false"
    assert project(t, INT, f"x <= {2**31 - 1}", strict=True) == "p IS NOT NULL"
    assert project(t, INT, f"x >= {-(2**31)}", strict=True) == "p IS NOT NULL"


@pytest.mark.parametrize(
    ("text", "inclusive", "strict"),
    [
        ("x < 1.00", "p <= 0.90", "p < 1.00"),
        ("x <= 1.00", "p <= 1.00", "p < 1.00"),
        ("x > 1.00", "p >= 1.00", "p > 1.00"),
        ("x >= 1.05", "p >= 1.00", "p > 1.00"),
        ("x >= 1.00", "p >= 1.00", "p > 0.90"),
        ("x = 1.05", "p = 1.00", None),
        ("x != 1.05", None, "p != 1.00"),
        ("x IN (1.05, 1.15)", "p IN (1.00, 1.10)", None),
        ("x < -0.01", "p <= -0.10", "p < -0.10"),
    ],
)
def test_truncate_decimal(text: str, inclusive: str | None, strict: str | None) -> None:
    check(TruncateTransform(10), DecimalType(9, 2), text, inclusive, strict)


@pytest.mark.parametrize(
    ("text", "inclusive", "strict"),
    [
        ("x < 'abcdefg'", "p <= 'abcde'", "p < 'abcde'"),
        ("x <= 'abcdefg'", "p <= 'abcde'", "p < 'abcde'"),
        ("x > 'abcdefg'", "p >= 'abcde'", "p > 'abcde'"),
        ("x >= 'abcdefg'", "p >= 'abcde'", "p > 'abcde'"),
        ("x = 'abcdefg'", "p = 'abcde'", None),
        ("x != 'abcdefg'", None, "p != 'abcde'"),
        ("x = 'ab'", "p = 'ab'", None),
        ("x IN ('abcdefg', 'abcdexyz', 'b')", "p IN ('abcde', 'b')", None),
        ("x NOT IN ('abcdefg', 'b')", None, "p NOT IN ('abcde', 'b')"),
        ("x LIKE 'ab%'", "p LIKE 'ab%'", "p LIKE 'ab%'"),
        ("x LIKE 'abcde%'", "p = 'abcde'", "p = 'abcde'"),
        ("x LIKE 'abcdefg%'", "p LIKE 'abcde%'", None),
        ("x NOT LIKE 'ab%'", "p NOT LIKE 'ab%'", "p NOT LIKE 'ab%'"),
        ("x NOT LIKE 'abcde%'", "p != 'abcde'", "p != 'abcde'"),
        ("x NOT LIKE 'abcdefg%'", None, "p NOT LIKE 'abcde%'"),
        # Widths count code points, not bytes or UTF-16 units.
        ("x LIKE 'é😀é😀é%'", "p = 'é😀é😀é'", "p = 'é😀é😀é'"),
        ("x LIKE 'é😀é😀%'", "p LIKE 'é😀é😀%'", "p LIKE 'é😀é😀%'"),
    ],
)
def test_truncate_string(text: str, inclusive: str | None, strict: str | None) -> None:
    check(TruncateTransform(5), STRING, text, inclusive, strict)


@pytest.mark.parametrize(
    ("text", "inclusive", "strict"),
    [
        ("x < 'abcdef'", "p <= 'abc'", "p < 'abc'"),
        ("x >= 'abcdef'", "p >= 'abc'", "p > 'abc'"),
        ("x = 'abcdef'", "p = 'abc'", None),
        ("x != 'abcdef'", None, "p != 'abc'"),
    ],
)
def test_truncate_binary(text: str, inclusive: str | None, strict: str | None) -> None:
    as_hex = text.replace("'abcdef'", "'" + b"abcdef".hex() + "'")
    expected = [
        None if e is None else e.replace("'abc'", "'" + b"abc".hex() + "'")
        for e in (inclusive, strict)
    ]
    check(TruncateTransform(3), BINARY, as_hex, expected[0], expected[1])


def test_bucket() -> None:
    t = BucketTransform(16)
    b = {v: t.apply(INT, v) for v in (5, 6, 7)}
    check(t, INT, "x = 5", f"p = {b[5]}", None)
    check(t, INT, "x != 5", None, f"p != {b[5]}")
    in_values = ", ".join(str(v) for v in sorted({b[5], b[6], b[7]}))
    check(t, INT, "x IN (5, 6, 7)", f"p IN ({in_values})", None)
    check(t, INT, "x NOT IN (5, 6, 7)", None, f"p NOT IN ({in_values})")
    for op in ("<", "<=", ">", ">="):
        check(t, INT, f"x {op} 5", None, None)
    check(t, INT, "x IS NULL", "p IS NULL", "p IS NULL")
    s = t.apply(STRING, "abc")
    check(t, STRING, "x = 'abc'", f"p = {s}", None)
    check(t, STRING, "x LIKE 'ab%'", None, None)


@pytest.mark.parametrize(
    "text",
    [
        "x < 5",
        "x <= 5",
        "x > 5",
        "x >= 5",
        "x = 5",
        "x != 5",
        "x IN (1, 2)",
        "x NOT IN (1, 2)",
        "x IS NULL",
        "x IS NOT NULL",
    ],
)
def test_identity_projects_unchanged_and_void_not_at_all(text: str) -> None:
    expected = text.replace("x ", "p ")
    check(IdentityTransform(), LONG, text, expected, expected)
    check(VoidTransform(), LONG, text, None, None)


def test_identity_projects_nan_tests() -> None:
    from neve.spec.types import DOUBLE

    check(IdentityTransform(), DOUBLE, "x IS NaN", "p IS NaN", "p IS NaN")
    check(IdentityTransform(), DOUBLE, "x IS NOT NaN", "p IS NOT NaN", "p IS NOT NaN")


@pytest.mark.parametrize(
    ("text", "inclusive", "strict"),
    [
        ("x < '2017-12-01T10:00:00'", "p <= '2017-12-01'", "p < '2017-12-01'"),
        ("x <= '2017-12-01T10:00:00'", "p <= '2017-12-01'", "p < '2017-12-01'"),
        ("x > '2017-12-01T10:00:00'", "p >= '2017-12-01'", "p > '2017-12-01'"),
        ("x >= '2017-12-01T00:00:00'", "p >= '2017-12-01'", "p > '2017-11-30'"),
        ("x = '2017-12-01T10:00:00'", "p = '2017-12-01'", None),
        ("x != '2017-12-01T10:00:00'", None, "p != '2017-12-01'"),
        # Before 1970 the projections are widened for values old writers made one too
        # large (Iceberg-Java's fixInclusiveTimeProjection / fixStrictTimeProjection).
        ("x < '1970-01-01T00:00:00'", "p <= '1970-01-01'", "p < '1970-01-01'"),
        ("x <= '1969-12-30T10:00:00'", "p <= '1969-12-31'", "p < '1969-12-30'"),
        ("x = '1969-12-31T10:00:00'", "p IN ('1969-12-31', '1970-01-01')", None),
        ("x != '1969-12-31T10:00:00'", None, "p NOT IN ('1969-12-31', '1970-01-01')"),
        ("x > '1969-12-30T10:00:00'", "p >= '1969-12-30'", "p > '1969-12-31'"),
        ("x >= '1969-12-30T00:00:00'", "p >= '1969-12-30'", "p > '1969-12-30'"),
        ("x > '1970-01-01T10:00:00'", "p >= '1970-01-01'", "p > '1970-01-02'"),
        (
            "x IN ('1969-12-31T10:00:00', '2017-12-01T10:00:00')",
            "p IN ('1969-12-31', '1970-01-01', '2017-12-01')",
            None,
        ),
        (
            "x NOT IN ('1969-12-31T10:00:00', '2017-12-01T10:00:00')",
            None,
            "p NOT IN ('1969-12-31', '1970-01-01', '2017-12-01')",
        ),
    ],
)
def test_day_of_timestamp(text: str, inclusive: str | None, strict: str | None) -> None:
    check(DayTransform(), TIMESTAMP, text, inclusive, strict)


@pytest.mark.parametrize(
    ("text", "inclusive", "strict"),
    [
        ("x < '2017-01-01'", "p <= 563", "p < 564"),
        ("x <= '2017-01-01'", "p <= 564", "p < 564"),
        ("x >= '2017-01-01'", "p >= 564", "p > 563"),
        ("x > '2017-01-31'", "p >= 565", "p > 564"),
        ("x = '2017-01-15'", "p = 564", None),
        ("x >= '1969-12-01'", "p >= -1", "p > -1"),
        ("x < '1969-12-01'", "p <= -1", "p < -1"),
        ("x = '1969-11-15'", "p IN (-2, -1)", None),
    ],
)
def test_month_of_date(text: str, inclusive: str | None, strict: str | None) -> None:
    check(MonthTransform(), DATE, text, inclusive, strict)


def test_year_and_hour() -> None:
    check(YearTransform(), TIMESTAMPTZ, "x < '2017-01-01T00:00:00+00:00'", "p <= 46", "p < 47")
    check(YearTransform(), DATE, "x >= '1969-06-01'", "p >= -1", "p > 0")
    check(HourTransform(), TIMESTAMP_NS, "x = '1970-01-01T01:30:00.000000001'", "p = 1", None)
    check(
        HourTransform(),
        TIMESTAMP_NS,
        "x <= '1969-12-31T22:59:59.999999999'",
        "p <= -1",
        "p < -1",
    )


# -- whole filters ------------------------------------------------------------------------

SCHEMA = Schema(
    NestedField(1, "id", LONG),
    NestedField(2, "ts", TIMESTAMP),
    NestedField(3, "name", STRING),
    NestedField(4, "other", LONG),
)
SPEC = PartitionSpec(
    1,
    (
        PartitionField(1, 1000, IdentityTransform(), "id"),
        PartitionField(2, 1001, DayTransform(), "ts_day"),
        PartitionField(2, 1002, HourTransform(), "ts_hour"),
        PartitionField(3, 1003, BucketTransform(8), "name_bucket"),
        PartitionField(3, 1004, TruncateTransform(2), "name_trunc"),
    ),
)


def test_whole_filter_projections() -> None:
    incl = inclusive_projection(SCHEMA, SPEC)
    strict = strict_projection(SCHEMA, SPEC)
    bucket = BucketTransform(8).apply(STRING, "abc")
    # Several fields on one column: inclusive ANDs them, strict ORs them.
    assert (
        str(incl.project(parse("name = 'abc'"))) == f"name_bucket = {bucket} AND name_trunc = 'ab'"
    )
    assert str(strict.project(parse("name != 'abc'"))) == (
        f"name_bucket != {bucket} OR name_trunc != 'ab'"
    )
    # (hours beyond 2**31 from 1970 wrap to negative values, as Iceberg-Java stores them)
    assert str(incl.project(parse("ts >= '2024-01-02T03:00:00'"))) == (
        "ts_day >= '2024-01-02' AND (ts_hour >= 473379 OR ts_hour <= -1732919508)"
    )
    # A column without a partition field: inclusive true, strict false.
    assert incl.project(parse("other = 1")) is ALWAYS_TRUE
    assert strict.project(parse("other = 1")) is ALWAYS_FALSE
    assert str(incl.project(parse("id = 1 AND other = 2 OR id = 3"))) == "id = 1 OR id = 3"
    assert strict.project(parse("id = 1 AND other = 2")) is ALWAYS_FALSE
    # NOT is pushed down before projecting.
    assert str(strict.project(parse("NOT (id = 1 OR id < 0)"))) == "id != 1 AND id >= 0"
    assert str(incl(parse("NOT id != 1"))) == "id = 1"


def test_projection_is_bound_to_the_partition_type() -> None:
    projected = inclusive_projection(SCHEMA, SPEC).project(parse("id = 1 AND name LIKE 'abc%'"))
    ptype = SPEC.partition_type(SCHEMA)
    assert bind(ptype, projected) == projected


def test_projection_skips_partition_fields_of_dropped_columns() -> None:
    spec = PartitionSpec(
        2,
        (
            PartitionField(9, 1000, IdentityTransform(), "gone"),
            PartitionField(1, 1001, IdentityTransform(), "id"),
        ),
    )
    projected = inclusive_projection(SCHEMA, spec).project(parse("id = 4"))
    assert isinstance(projected, BoundPredicate)
    assert projected.term.accessor == (1,)
    assert projected.literals == (4,)


def test_decimal_projection_keeps_exact_values() -> None:
    schema = Schema(NestedField(1, "d", DecimalType(38, 10)))
    spec = PartitionSpec(0, (PartitionField(1, 1000, TruncateTransform(100), "p"),))
    value = "1234567890123456789012345678.0000000150"
    projected = inclusive_projection(schema, spec).project(parse(f"d < {value}"))
    assert isinstance(projected, BoundPredicate)
    assert projected.literal == Decimal("1234567890123456789012345678.0000000100")
