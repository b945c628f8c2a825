from __future__ import annotations

import pickle
from typing import Any

import pytest

from neve.errors import ExpressionError
from neve.expressions import (
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    PartitionEvaluator,
    StrictMetricsEvaluator,
    evaluator,
    parse,
)
from neve.expressions.metrics_evaluator import evaluator as evaluator_from_metrics
from neve.spec.manifest import DataFile, FieldSummary, FileFormat, ManifestContent, ManifestFile
from neve.spec.partition import PartitionField, PartitionSpec
from neve.spec.schema import Schema
from neve.spec.transforms import BucketTransform, IdentityTransform, TruncateTransform
from neve.spec.types import (
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    NestedField,
    StructType,
)
from neve.spec.values import to_bytes

NAN = float("nan")

# -- row / partition evaluation ---------------------------------------------------------

ROW_STRUCT = StructType(
    NestedField(1, "x", LONG),
    NestedField(2, "s", STRING),
    NestedField(3, "d", DOUBLE),
    NestedField(4, "st", StructType(NestedField(5, "y", INT))),
)


@pytest.mark.parametrize(
    ("text", "on_value", "on_null"),
    [
        ("x < 5", True, False),
        ("x <= 5", True, False),
        ("x > 3", True, False),
        ("x >= 4", True, False),
        ("x = 4", True, False),
        ("x != 5", True, True),
        ("x IN (4, 9)", True, False),
        ("x NOT IN (5, 9)", True, True),
        ("x IS NULL", False, True),
        ("x IS NOT NULL", True, False),
        ("s LIKE 'ab%'", True, False),
        ("s NOT LIKE 'zz%'", True, True),
        ("NOT x < 5", False, False),  # NOT is pushed down: x >= 5
        ("NOT x != 4", True, False),  # x = 4
        ("NOT (x = 4 AND s = 'abc')", False, True),
        ("st.y = 7", True, False),
    ],
)
def test_row_evaluation_null_rules(text: str, on_value: bool, on_null: bool) -> None:
    test = evaluator(ROW_STRUCT, parse(text))
    assert test((4, "abc", 1.0, (7,))) is on_value
    assert test((None, None, None, None)) is on_null


@pytest.mark.parametrize(
    ("text", "on_nan"),
    [
        ("d < 5", False),
        ("d > 5", False),
        ("d = 5", False),
        ("d != 5", True),
        ("d IN (1, 2)", False),
        ("d NOT IN (1, 2)", True),
        ("d IS NaN", True),
        ("d IS NOT NaN", False),
        ("d IS NULL", False),
        ("d IS NOT NULL", True),
    ],
)
def test_row_evaluation_nan_rules(text: str, on_nan: bool) -> None:
    assert evaluator(ROW_STRUCT, parse(text))((1, "a", NAN, None)) is on_nan


def test_nan_tests_on_null() -> None:
    assert PartitionEvaluator(ROW_STRUCT, parse("d IS NaN")).eval((1, "a", None, None)) is False
    assert PartitionEvaluator(ROW_STRUCT, parse("d IS NOT NaN")).eval((1, "a", None, None)) is True


def test_partition_evaluator_is_also_offered_by_the_metrics_module() -> None:
    assert evaluator_from_metrics is evaluator
    assert evaluator(ROW_STRUCT, parse("x < 3 OR s = 'q'"))((5, "q", None, None))


# -- manifest evaluation ------------------------------------------------------------------

P_SCHEMA = Schema(
    NestedField(1, "id", INT),
    NestedField(2, "all_nulls", STRING),
    NestedField(3, "some_nulls", STRING),
    NestedField(4, "no_nulls", STRING),
    NestedField(5, "f", FLOAT),
    NestedField(6, "all_nans", DOUBLE),
    NestedField(7, "both", DOUBLE),
    NestedField(8, "other", INT),
)
P_SPEC = PartitionSpec(
    0,
    tuple(
        PartitionField(i, 999 + i, IdentityTransform(), n)
        for i, n in enumerate(
            ["id", "all_nulls", "some_nulls", "no_nulls", "f", "all_nans", "both"], 1
        )
    ),
)


def _summary(t: Any, null: bool, nan: bool | None, lo: Any = None, hi: Any = None) -> FieldSummary:
    return FieldSummary(
        null,
        nan,
        None if lo is None else to_bytes(t, lo),
        None if hi is None else to_bytes(t, hi),
    )


def _manifest(partitions: tuple[FieldSummary, ...] | None) -> ManifestFile:
    return ManifestFile(
        "m.avro", 1, 0, ManifestContent.DATA, 1, 1, 1, 1, 0, 0, 10, 0, 0, partitions
    )


MANIFEST = _manifest(
    (
        _summary(INT, False, None, 30, 79),
        _summary(STRING, True, None),
        _summary(STRING, True, None, "a", "z"),
        _summary(STRING, False, None, "abc", "abd"),
        _summary(FLOAT, False, False, 0.0, 20.0),
        _summary(DOUBLE, False, True),
        _summary(DOUBLE, True, True, 1.0, 2.0),
    )
)


@pytest.mark.parametrize(
    ("text", "might_match"),
    [
        ("id < 30", False),
        ("id < 31", True),
        ("id <= 29", False),
        ("id <= 30", True),
        ("id > 79", False),
        ("id > 78", True),
        ("id >= 80", False),
        ("id >= 79", True),
        ("id = 29", False),
        ("id = 30", True),
        ("id = 80", False),
        ("id != 30", True),
        ("id IN (1, 2, 80)", False),
        ("id IN (1, 50)", True),
        ("id NOT IN (30, 31)", True),
        ("id IS NULL", False),
        ("id IS NOT NULL", True),
        ("all_nulls IS NOT NULL", False),
        ("all_nulls IS NULL", True),
        ("all_nulls = 'a'", False),
        ("all_nulls < 'a'", False),
        ("all_nulls LIKE 'a%'", False),
        ("all_nulls NOT LIKE 'a%'", True),
        ("some_nulls = 'b'", True),
        ("some_nulls NOT LIKE 'a%'", True),
        ("no_nulls LIKE 'ab%'", True),
        ("no_nulls LIKE 'abe%'", False),
        ("no_nulls LIKE 'abb%'", False),
        ("no_nulls LIKE 'abcdef%'", True),
        ("no_nulls NOT LIKE 'ab%'", False),
        ("no_nulls NOT LIKE 'abc%'", True),
        ("f IS NaN", False),
        ("f IS NOT NaN", True),
        ("all_nans IS NOT NaN", False),
        ("all_nans IS NaN", True),
        ("all_nans IS NOT NULL", True),  # all NaN, not all null
        ("all_nans < 1", False),
        ("both IS NaN", True),
        ("both IS NOT NaN", True),
        ("other = 5", True),  # not a partition column
        ("id < 30 OR other = 5", True),
        ("NOT id >= 30", False),
        ("NOT (id < 30 OR id > 79)", True),
    ],
)
def test_manifest_evaluator(text: str, might_match: bool) -> None:
    assert ManifestEvaluator(P_SPEC, P_SCHEMA, parse(text)).eval(MANIFEST) is might_match


def test_manifest_without_summaries_might_match() -> None:
    ev = ManifestEvaluator(P_SPEC, P_SCHEMA, parse("id < 0"))
    assert ev.eval(_manifest(None)) is True
    assert ev.eval(_manifest(MANIFEST.partitions[:2] if MANIFEST.partitions else None)) is True


def test_manifest_evaluator_projects_through_transforms() -> None:
    schema = Schema(NestedField(1, "s", STRING), NestedField(2, "n", LONG))
    spec = PartitionSpec(
        0,
        (
            PartitionField(1, 1000, TruncateTransform(2), "s_trunc"),
            PartitionField(2, 1001, BucketTransform(4), "n_bucket"),
        ),
    )
    b = BucketTransform(4).apply(LONG, 17)
    manifest = _manifest(
        (_summary(STRING, False, None, "ab", "ad"), _summary(INT, False, None, b, b))
    )
    assert ManifestEvaluator(spec, schema, parse("s = 'acxyz'")).eval(manifest)
    assert not ManifestEvaluator(spec, schema, parse("s > 'aezzz'")).eval(manifest)
    assert ManifestEvaluator(spec, schema, parse("n = 17")).eval(manifest)
    other = next(v for v in range(100) if BucketTransform(4).apply(LONG, v) != b)
    assert not ManifestEvaluator(spec, schema, parse(f"n = {other}")).eval(manifest)


def test_bad_filters_fail_at_construction() -> None:
    with pytest.raises(ExpressionError, match="no column 'nope'"):
        ManifestEvaluator(P_SPEC, P_SCHEMA, parse("nope = 1"))


# -- metrics evaluation -------------------------------------------------------------------

M_SCHEMA = Schema(
    NestedField(1, "id", INT, True),
    NestedField(2, "no_stats", INT),
    NestedField(3, "required", STRING, True),
    NestedField(4, "all_nulls", STRING),
    NestedField(5, "some_nulls", STRING),
    NestedField(6, "no_nulls", STRING),
    NestedField(7, "all_nans", DOUBLE),
    NestedField(8, "some_nans", FLOAT),
    NestedField(9, "no_nans", FLOAT),
    NestedField(10, "str", STRING),
    NestedField(11, "nested", StructType(NestedField(12, "v", INT))),
    NestedField(13, "nan_bounds", DOUBLE),
)


def _file(record_count: int = 50, **changes: Any) -> DataFile:
    f = DataFile(
        "f.parquet",
        FileFormat.PARQUET,
        (),
        record_count,
        1000,
        value_counts={
            1: 50,
            3: 50,
            4: 50,
            5: 50,
            6: 50,
            7: 50,
            8: 50,
            9: 50,
            10: 50,
            12: 50,
            13: 50,
        },
        null_value_counts={1: 0, 3: 0, 4: 50, 5: 10, 6: 0, 7: 0, 8: 0, 9: 0, 10: 0, 12: 0, 13: 0},
        nan_value_counts={7: 50, 8: 10, 9: 0, 13: 5},
        lower_bounds={
            1: to_bytes(INT, 30),
            3: to_bytes(STRING, "aaa"),
            6: to_bytes(STRING, "abc"),
            9: to_bytes(FLOAT, -1.5),
            10: to_bytes(STRING, "abc"),
            12: to_bytes(INT, 5),
            13: to_bytes(DOUBLE, NAN),
        },
        upper_bounds={
            1: to_bytes(INT, 79),
            3: to_bytes(STRING, "zzz"),
            6: to_bytes(STRING, "abd"),
            9: to_bytes(FLOAT, 2.5),
            10: to_bytes(STRING, "abe"),  # a truncated, incremented upper bound
            12: to_bytes(INT, 5),
            13: to_bytes(DOUBLE, NAN),
        },
    )
    return f.with_(**changes)


@pytest.mark.parametrize(
    ("text", "might_match"),
    [
        ("id < 30", False),
        ("id < 31", True),
        ("id <= 29", False),
        ("id > 79", False),
        ("id >= 79", True),
        ("id = 29", False),
        ("id = 50", True),
        ("id != 50", True),
        ("id IN (1, 2, 80)", False),
        ("id IN (1, 30)", True),
        ("id NOT IN (30, 31)", True),
        ("no_stats < 0", True),
        ("no_stats IS NULL", True),
        ("all_nulls IS NULL", True),
        ("all_nulls IS NOT NULL", False),
        ("all_nulls < 'a'", False),
        ("all_nulls = 'a'", False),
        ("all_nulls LIKE 'a%'", False),
        ("all_nulls NOT LIKE 'a%'", True),
        ("some_nulls IS NULL", True),
        ("some_nulls IS NOT NULL", True),
        ("some_nulls NOT LIKE 'a%'", True),
        ("no_nulls IS NULL", False),
        ("no_nulls LIKE 'ab%'", True),
        ("no_nulls LIKE 'b%'", False),
        ("no_nulls NOT LIKE 'ab%'", False),
        ("no_nulls NOT LIKE 'abc%'", True),
        ("all_nans IS NaN", True),
        ("all_nans IS NOT NaN", False),
        ("all_nans < 1", False),
        ("all_nans = 1", False),
        ("all_nans != 1", True),
        ("all_nans IN (1, 2)", False),
        ("some_nans IS NaN", True),
        ("some_nans IS NOT NaN", True),
        ("no_nans IS NaN", False),
        ("no_nans < -1.5", False),
        ("no_nans <= -1.5", True),
        ("no_nans > 2.5", False),
        ("no_nans = 3", False),
        ("str LIKE 'abd%'", True),
        ("str LIKE 'abf%'", False),
        ("str LIKE 'abe%'", True),  # the truncated upper bound keeps it possible
        ("str = 'abdzzzz'", True),
        ("str > 'abe'", False),
        ("nested.v = 5", True),
        ("nested.v = 6", False),
        ("nan_bounds < 1", True),  # NaN bounds are unreliable
        ("nan_bounds = 1", True),
        ("nan_bounds IN (1, 2)", True),
        ("required IS NULL", False),
        ("NOT id < 80", False),
    ],
)
def test_inclusive_metrics(text: str, might_match: bool) -> None:
    assert InclusiveMetricsEvaluator(M_SCHEMA, parse(text)).eval(_file()) is might_match


def test_inclusive_metrics_file_level_rules() -> None:
    ev = InclusiveMetricsEvaluator(M_SCHEMA, parse("id > 0"))
    assert ev.eval(_file(record_count=0)) is False
    assert InclusiveMetricsEvaluator(M_SCHEMA, parse("id > 0"), include_empty_files=True).eval(
        _file(record_count=0)
    )
    assert ev.eval(_file(record_count=-1)) is True
    bare = DataFile("f.parquet", FileFormat.PARQUET, (), 10, 100)
    for text in ("id < 0", "all_nulls IS NOT NULL", "str LIKE 'x%'", "some_nans IS NaN"):
        assert InclusiveMetricsEvaluator(M_SCHEMA, parse(text)).eval(bare), text


def test_in_with_many_values_skips_bounds() -> None:
    far = ", ".join(str(v) for v in range(1000, 1201))
    assert InclusiveMetricsEvaluator(M_SCHEMA, parse(f"id IN ({far})")).eval(_file())
    near = ", ".join(str(v) for v in range(1000, 1200))
    assert not InclusiveMetricsEvaluator(M_SCHEMA, parse(f"id IN ({near})")).eval(_file())


@pytest.mark.parametrize(
    ("text", "must_match"),
    [
        ("id < 80", True),
        ("id < 79", False),
        ("id <= 79", True),
        ("id > 29", True),
        ("id > 30", False),
        ("id >= 30", True),
        ("id = 30", False),
        ("id != 29", True),
        ("id != 80", True),
        ("id != 50", False),
        ("id IN (30, 79)", False),
        ("id NOT IN (1, 2, 80)", True),
        ("id NOT IN (1, 50)", False),
        ("id IS NOT NULL", True),
        ("no_stats < 100", False),
        ("no_stats IS NOT NULL", False),
        ("all_nulls IS NULL", True),
        ("all_nulls IS NOT NULL", False),
        ("all_nulls != 'a'", True),
        ("all_nulls NOT IN ('a', 'b')", True),
        ("all_nulls NOT LIKE 'a%'", True),
        ("some_nulls IS NULL", False),
        ("some_nulls < 'zzzz'", False),
        ("no_nulls IS NOT NULL", True),
        ("no_nulls LIKE 'ab%'", True),
        ("no_nulls LIKE 'abc%'", False),
        ("no_nulls NOT LIKE 'b%'", True),
        ("no_nulls NOT LIKE 'aa%'", True),
        ("no_nulls NOT LIKE 'ab%'", False),
        ("all_nans IS NaN", True),
        ("all_nans IS NOT NaN", False),
        ("all_nans != 1", True),
        ("all_nans < 1", False),
        ("some_nans < 100", False),
        ("some_nans IS NOT NaN", False),
        ("no_nans IS NOT NaN", True),
        ("no_nans < 100", True),
        ("no_nans > -2", True),
        ("str < 'abf'", True),
        ("str < 'abe'", False),  # the upper bound may be larger than every value
        ("nested.v = 5", False),  # fields inside structs are never certain
        ("nan_bounds != 1", False),
        ("required IS NOT NULL", True),
        ("required >= 'aaa'", True),
        ("NOT id >= 80", True),
    ],
)
def test_strict_metrics(text: str, must_match: bool) -> None:
    assert StrictMetricsEvaluator(M_SCHEMA, parse(text)).eval(_file()) is must_match


def test_strict_metrics_with_equal_bounds() -> None:
    f = _file(lower_bounds={1: to_bytes(INT, 42)}, upper_bounds={1: to_bytes(INT, 42)})
    assert StrictMetricsEvaluator(M_SCHEMA, parse("id = 42")).eval(f)
    assert StrictMetricsEvaluator(M_SCHEMA, parse("id IN (41, 42)")).eval(f)
    assert not StrictMetricsEvaluator(M_SCHEMA, parse("id = 43")).eval(f)
    assert StrictMetricsEvaluator(M_SCHEMA, parse("id > 0")).eval(_file(record_count=0))


def test_strict_metrics_treats_missing_null_counts_as_unknown() -> None:
    # Iceberg-Java reads a missing per-column null count as "no nulls"; that would let a
    # delete drop a whole file whose null rows do not match.
    f = _file(null_value_counts={1: 0})
    assert not StrictMetricsEvaluator(M_SCHEMA, parse("no_nulls LIKE 'ab%'")).eval(f)
    assert not StrictMetricsEvaluator(M_SCHEMA, parse("no_nulls >= 'abc'")).eval(f)
    f = _file(nan_value_counts=None)
    assert not StrictMetricsEvaluator(M_SCHEMA, parse("no_nans < 100")).eval(f)


def test_metrics_evaluators_pickle() -> None:
    incl = InclusiveMetricsEvaluator(M_SCHEMA, parse("id < 31"), include_empty_files=True)
    strict = StrictMetricsEvaluator(M_SCHEMA, parse("id < 80"))
    incl2, strict2 = pickle.loads(pickle.dumps((incl, strict)))
    assert incl2.eval(_file()) and strict2.eval(_file())
    assert incl2.include_empty_files
    assert not pickle.loads(
        pickle.dumps(InclusiveMetricsEvaluator(M_SCHEMA, parse("id < 30")))
    ).eval(_file())
