"""to_spark_column selects exactly the rows neve's row evaluator selects."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import types as T

from neve.errors import ExpressionError
from neve.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    BooleanExpression,
    and_,
    bind,
    equal,
    greater_than,
    greater_than_or_equal,
    is_in,
    is_nan,
    is_null,
    less_than,
    less_than_or_equal,
    not_,
    not_equal,
    not_in,
    not_nan,
    not_null,
    not_starts_with,
    or_,
    parse,
    starts_with,
)
from neve.expressions.evaluator import compile_expression
from neve.spark.expression import to_spark_column, to_spark_literal
from neve.spark.schema import to_spark_schema
from neve.spec import temporal
from neve.spec.schema import Schema
from neve.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMPTZ,
    DecimalType,
    NestedField,
    StructType,
)

pytestmark = pytest.mark.spark

SCHEMA = Schema(
    NestedField(1, "i", INT, False),
    NestedField(2, "l", LONG, False),
    NestedField(3, "f", FLOAT, False),
    NestedField(4, "d", DOUBLE, False),
    NestedField(5, "dec", DecimalType(9, 2), False),
    NestedField(6, "s", STRING, False),
    NestedField(7, "b", BINARY, False),
    NestedField(8, "dt", DATE, False),
    NestedField(9, "ts", TIMESTAMP, False),
    NestedField(10, "tz", TIMESTAMPTZ, False),
    NestedField(11, "flag", BOOLEAN, False),
    NestedField(
        12,
        "st",
        StructType(NestedField(13, "x", INT, False), NestedField(14, "y", STRING, False)),
        False,
    ),
    NestedField(15, "Mixed Case", INT, False),
)

NAN = float("nan")
D0 = temporal.date_to_days(dt.date(2024, 1, 1))
T0 = temporal.datetime_to_micros(dt.datetime(2024, 1, 1, 12, 0, 0))

# rows in neve's value representation (dates as days, timestamps as micros)
ROWS: list[tuple[Any, ...]] = [
    (1, 10, 1.5, 1.5, Decimal("1.25"), "abc", b"\x01", D0, T0, T0, True, (1, "p"), 1),
    (
        5,
        50,
        -0.0,
        -0.0,
        Decimal("-3.10"),
        "abd",
        b"\x02",
        D0 + 1,
        T0 + 1,
        T0 + 1,
        False,
        (5, None),
        5,
    ),
    (None, None, None, None, None, None, None, None, None, None, None, None, None),
    (7, 2**40, NAN, NAN, Decimal("0.00"), "", b"", D0 - 1, T0 - 1, T0 - 1, None, (None, "q"), 7),
    (3, -1, 0.0, 0.0, Decimal("5.00"), "xyz", b"\x01\x02", D0, T0, T0 + 10**6, True, None, None),
    (
        -2,
        0,
        float("inf"),
        float("-inf"),
        Decimal("1.24"),
        "ab",
        b"\xff",
        D0 + 40,
        T0 + 5,
        T0,
        False,
        (2, "ab"),
        0,
    ),
]

FILTERS: list[BooleanExpression] = [
    less_than("i", 5),
    less_than_or_equal("i", 5),
    greater_than("i", 3),
    greater_than_or_equal("i", 3),
    equal("i", 5),
    not_equal("i", 5),
    is_in("i", [1, 5, 9]),
    not_in("i", [1, 5, 9]),
    is_null("i"),
    not_null("i"),
    greater_than("l", 2**39),
    is_in("l", [10, 2**40]),
    is_nan("f"),
    not_nan("f"),
    greater_than("f", 1.0),
    less_than("f", 1.0),
    equal("f", 0.0),
    not_equal("f", 0.0),
    is_in("f", [0.0, 1.5]),
    not_in("f", [0.0, 1.5]),
    is_nan("d"),
    not_nan("d"),
    greater_than_or_equal("d", -0.0),
    less_than_or_equal("d", 1.5),
    equal("d", -0.0),
    not_equal("d", 1.5),
    is_in("d", [-0.0, 99.0]),
    greater_than("dec", Decimal("1.24")),
    equal("dec", "1.25"),
    not_in("dec", [Decimal("1.25"), Decimal("5")]),
    starts_with("s", "ab"),
    not_starts_with("s", "ab"),
    starts_with("s", ""),
    greater_than("s", "abc"),
    less_than("s", "b"),
    equal("b", b"\x01"),
    greater_than("b", b"\x01"),
    is_in("b", [b"\x01", b"\xff"]),
    equal("dt", "2024-01-01"),
    greater_than("dt", dt.date(2024, 1, 1)),
    less_than("ts", "2024-01-01T12:00:00.000001"),
    greater_than_or_equal("ts", T0),
    equal("tz", "2024-01-01T12:00:00+00:00"),
    greater_than("tz", "2024-01-01T13:00:00+01:00"),
    not_equal("tz", T0),
    equal("flag", True),
    not_equal("flag", True),
    greater_than("st.x", 1),
    is_null("st.x"),
    not_null("st.y"),
    not_starts_with("st.y", "a"),
    is_null("st"),
    not_null("st"),
    equal("Mixed Case", 5),
    not_(less_than("i", 5)),
    not_(or_(is_null("i"), greater_than("d", 0.0))),
    and_(not_equal("i", 5), not_nan("d")),
    or_(equal("s", "abc"), is_null("dt")),
    not_(and_(starts_with("s", "ab"), not_equal("l", 10))),
    parse("NOT (i IN (1, 3) OR s = 'xyz')"),
    ALWAYS_TRUE,
    ALWAYS_FALSE,
]


def _spark_rows() -> list[tuple[Any, ...]]:
    out = []
    for r in ROWS:
        converted = list(r)
        if r[7] is not None:
            converted[7] = temporal.days_to_date(r[7])
        if r[8] is not None:
            converted[8] = temporal.micros_to_datetime(r[8])
        if r[9] is not None:
            converted[9] = temporal.micros_to_datetime(r[9], with_tz=True)
        if r[6] is not None:
            converted[6] = bytearray(r[6])
        out.append(tuple(converted))
    return out


def test_every_predicate_selects_the_rows_neve_selects(spark: Any) -> None:
    cols = [to_spark_column(e, SCHEMA).alias(f"p{i}") for i, e in enumerate(FILTERS)]
    # one Spark job for every filter: row number -> the filters' results
    schema = T.StructType([T.StructField("__n", T.IntegerType()), *to_spark_schema(SCHEMA).fields])
    indexed = spark.createDataFrame([(i, *r) for i, r in enumerate(_spark_rows())], schema)
    got = {row["__n"]: row for row in indexed.select("__n", *cols).collect()}
    for i, expr in enumerate(FILTERS):
        test = compile_expression(bind(SCHEMA, expr))
        expected = [n for n, r in enumerate(ROWS) if test(r)]
        actual = [n for n in range(len(ROWS)) if got[n][f"p{i}"]]
        assert actual == expected, f"{expr}: spark {actual} != neve {expected}"
        assert all(got[n][f"p{i}"] is not None for n in range(len(ROWS))), f"{expr} gave null"


def test_bound_filters_and_case_insensitive_names(spark: Any) -> None:
    df = spark.createDataFrame(_spark_rows(), to_spark_schema(SCHEMA))
    bound = bind(SCHEMA, greater_than("i", 2))
    assert df.filter(to_spark_column(bound, SCHEMA)).count() == 3
    assert df.filter(to_spark_column(equal("mixed case", 5), SCHEMA, False)).count() == 1
    with pytest.raises(ExpressionError):
        to_spark_column(equal("mixed case", 5), SCHEMA)


def test_timestamp_literals_ignore_the_session_time_zone(spark: Any) -> None:
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        row = (
            spark.range(1)
            .select(
                to_spark_literal(T0, TIMESTAMP).cast("string").alias("ntz"),
                to_spark_literal(D0, DATE).cast("string").alias("d"),
                (to_spark_literal(T0, TIMESTAMPTZ).cast("long")).alias("tz_seconds"),
            )
            .collect()[0]
        )
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    assert row["ntz"] == "2024-01-01 12:00:00"
    assert row["d"] == "2024-01-01"
    assert row["tz_seconds"] == T0 // 1_000_000


def test_unrepresentable_types_are_refused() -> None:
    from neve.spec.types import UUID

    schema = Schema(NestedField(1, "u", UUID, False))
    with pytest.raises(ExpressionError):
        to_spark_column(equal("u", "f79c3e09-677c-4bbd-a479-3f349cb785e7"), schema)


def test_spark_reads_the_nan_rows_of_single_value_row_groups(spark: Any, tmp_path: Any) -> None:
    """Spark must not lose the NaN rows of a row group whose Parquet min = max, in
    files written by pyarrow and by Spark (parquet-mr). neve's Spark filter never
    reaches parquet-mr's statistics filter: its predicates are made null-free with
    coalesce, which Spark does not push down."""
    import math

    import pyarrow as pa

    from neve.catalog import connect
    from neve.spark import read, write

    catalog = connect(f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LONG, True), NestedField(2, "d", DOUBLE), NestedField(3, "f", FLOAT)
    )
    table = catalog.create_table("db.t", schema)
    nan = math.nan
    table.append(
        pa.table(
            {
                "id": pa.array([1, 2, 3], pa.int64()),
                "d": [1.0, nan, 1.0],
                "f": pa.array([-0.0, nan, -0.0], pa.float32()),
            }
        )
    )
    rows = [(4, 1.0, -0.0), (5, nan, nan), (6, 1.0, -0.0)]
    write(spark.createDataFrame(rows, to_spark_schema(schema)), table.refresh())
    table = table.refresh()
    for text in ("d IS NaN", "d != 1.0", "d NOT IN (1.0, 2.0)", "NOT (d = 1.0)", "f != -0.0"):
        df = read(spark, table, filter=text, columns=["id"])
        assert sorted(r.id for r in df.collect()) == [2, 5], text
    df = read(spark, table, filter="f NOT IN (-7.0, -0.0)", columns=["id"])
    assert sorted(r.id for r in df.collect()) == [2, 5]
