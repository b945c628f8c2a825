"""Filters as Spark Columns, with neve's null and NaN rules.

:func:`to_spark_column` converts a neve filter to a boolean ``pyspark.sql.Column`` that
selects exactly the rows :func:`neve.arrow.expression.to_arrow_expression` selects (a
:class:`~neve.expressions.visitors.BoundPredicateVisitor`): NOT is pushed down first and every predicate is made two-valued (a null never leaks
out of a comparison), so ``x != 5`` selects rows where ``x`` is null and ``x < 5`` does
not. Spark orders NaN above every number and calls ``NaN = NaN`` true; neve follows
IEEE 754 (every comparison with NaN is false except ``!=``), so comparisons on floating
columns exclude NaN explicitly.

Columns are addressed by their current names, nested struct fields through struct
access; values become Spark literals of exactly the column's type.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from neve.errors import ExpressionError
from neve.expressions.binding import bind
from neve.expressions.expressions import BooleanExpression, BoundReference
from neve.expressions.visitors import BoundPredicateVisitor, visit
from neve.spec import temporal
from neve.spec.schema import Schema
from neve.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)

__all__ = ["column_ref", "to_spark_column", "to_spark_literal", "to_spark_value"]


def to_spark_column(expr: BooleanExpression, schema: Schema, case_sensitive: bool = True) -> Column:
    """The Spark Column selecting the rows that match ``expr`` (bound or unbound).

    ``expr`` is bound to ``schema`` (a bound filter is re-bound by field id, so column
    names are those of ``schema``). The Column never evaluates to null.
    """
    return visit(bind(schema, expr, case_sensitive), _TO_SPARK)


def column_ref(path: Sequence[str]) -> Column:
    """The column at a path of names (top-level name, then struct field names)."""
    top = "`" + path[0].replace("`", "``") + "`"
    col = F.col(top)
    for name in path[1:]:
        col = col.getField(name)
    return col


def _no_null(c: Column, if_null: bool) -> Column:
    return F.coalesce(c, F.lit(if_null))


class _SparkConverter(BoundPredicateVisitor[Column]):
    """Each predicate as a two-valued Spark Column; And and Or as ``&`` and ``|``."""

    def visit_true(self) -> Column:
        return F.lit(True)

    def visit_false(self) -> Column:
        return F.lit(False)

    def visit_and(self, left: Column, right: Column) -> Column:
        return left & right

    def visit_or(self, left: Column, right: Column) -> Column:
        return left | right

    def visit_is_null(self, ref: BoundReference) -> Column:
        return column_ref(ref.path).isNull()

    def visit_not_null(self, ref: BoundReference) -> Column:
        return column_ref(ref.path).isNotNull()

    def visit_is_nan(self, ref: BoundReference) -> Column:
        return _no_null(F.isnan(column_ref(ref.path)), False)

    def visit_not_nan(self, ref: BoundReference) -> Column:
        return _no_null(~F.isnan(column_ref(ref.path)), True)

    # NaN is never a literal, and Spark's NaN IN (...) is false like neve's
    def visit_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> Column:
        return _no_null(_member(ref, lits), False)

    def visit_not_in(self, ref: BoundReference, lits: tuple[Any, ...]) -> Column:
        return _no_null(~_member(ref, lits), True)

    def visit_starts_with(self, ref: BoundReference, lit: Any) -> Column:
        return _no_null(column_ref(ref.path).startswith(F.lit(lit)), False)

    def visit_not_starts_with(self, ref: BoundReference, lit: Any) -> Column:
        return _no_null(~column_ref(ref.path).startswith(F.lit(lit)), True)

    def visit_not_eq(self, ref: BoundReference, lit: Any) -> Column:
        c = column_ref(ref.path)
        return _no_null(c != to_spark_literal(lit, ref.field_type), True)  # NaN != x holds in both

    def visit_lt(self, ref: BoundReference, lit: Any) -> Column:
        return _compare(ref, lit, operator.lt)

    def visit_lt_eq(self, ref: BoundReference, lit: Any) -> Column:
        return _compare(ref, lit, operator.le)

    def visit_gt(self, ref: BoundReference, lit: Any) -> Column:
        return _compare(ref, lit, operator.gt)

    def visit_gt_eq(self, ref: BoundReference, lit: Any) -> Column:
        return _compare(ref, lit, operator.ge)

    def visit_eq(self, ref: BoundReference, lit: Any) -> Column:
        return _compare(ref, lit, operator.eq)


_TO_SPARK = _SparkConverter()


def _member(ref: BoundReference, lits: tuple[Any, ...]) -> Column:
    """Whether the column's value is one of ``lits`` (null for a null value)."""
    t = ref.field_type
    values = list(lits)
    if isinstance(t, (FloatType, DoubleType)) and any(v == 0.0 for v in values):
        values = [v for v in values if v != 0.0] + [0.0, -0.0]
    return column_ref(ref.path).isin([to_spark_literal(v, t) for v in values])


def _compare(ref: BoundReference, lit: Any, holds: Callable[[Column, Column], Column]) -> Column:
    """A comparison that never holds for null, nor (unlike Spark's) for NaN."""
    c = column_ref(ref.path)
    cmp = holds(c, to_spark_literal(lit, ref.field_type))
    if isinstance(ref.field_type, (FloatType, DoubleType)):
        cmp = cmp & ~F.isnan(c)  # Spark orders NaN above every number
    return _no_null(cmp, False)


# -- values -----------------------------------------------------------------------------


def to_spark_value(value: Any, t: IcebergType) -> Any:
    """A value in neve's representation as the Python value PySpark uses for the
    Spark type of ``t`` (``datetime.date`` for dates, ``datetime`` for timestamps:
    naive for ``timestamp``, UTC for ``timestamptz``)."""
    if value is None:
        return None
    if isinstance(t, DateType):
        return temporal.days_to_date(value)
    if isinstance(t, TimestampType):
        return temporal.micros_to_datetime(value)
    if isinstance(t, TimestamptzType):
        return temporal.micros_to_datetime(value, with_tz=True)
    if isinstance(t, (FixedType, BinaryType)):
        return bytearray(value)
    if isinstance(t, DecimalType):
        return Decimal(value)
    if isinstance(t, (BooleanType, IntegerType, LongType, FloatType, DoubleType, StringType)):
        return value
    raise ExpressionError(
        f"values of type {t} have no Spark representation; filter such columns with "
        "table.scan(...).to_arrow() instead"
    )


def to_spark_literal(value: Any, t: IcebergType) -> Column:
    """A Spark literal of exactly the Spark type of ``t`` holding ``value``.

    Dates and timestamps are built from their integer form, so no time zone (neither
    the session's nor the Python process's) takes part.
    """
    if isinstance(t, DateType):
        return F.date_from_unix_date(F.lit(int(value)))
    if isinstance(t, TimestamptzType):
        return F.timestamp_micros(F.lit(int(value)))
    if isinstance(t, TimestampType):
        text = _ntz_text(int(value))
        return F.lit(text).cast(T.TimestampNTZType())
    if isinstance(t, DecimalType):
        return F.lit(Decimal(value)).cast(T.DecimalType(t.precision, t.scale))
    if isinstance(t, (FixedType, BinaryType)):
        return F.lit(bytearray(value))
    spark_type = _SIMPLE.get(type(t))
    if spark_type is None:
        raise ExpressionError(
            f"values of type {t} have no Spark representation; filter such columns with "
            "table.scan(...).to_arrow() instead"
        )
    return F.lit(value).cast(spark_type)


_SIMPLE: dict[type, T.DataType] = {
    BooleanType: T.BooleanType(),
    IntegerType: T.IntegerType(),
    LongType: T.LongType(),
    FloatType: T.FloatType(),
    DoubleType: T.DoubleType(),
    StringType: T.StringType(),
}


def _ntz_text(micros: int) -> str:
    """ISO text of a local date-time Spark parses exactly (years 0001-9999)."""
    try:
        ts = temporal.micros_to_datetime(micros)
    except (OverflowError, ValueError) as exc:
        raise ExpressionError(f"timestamp {micros} is beyond the years Spark holds") from exc
    return ts.isoformat(sep=" ", timespec="microseconds")
