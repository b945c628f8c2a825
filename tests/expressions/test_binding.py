from __future__ import annotations

import math
from decimal import Decimal

import pytest

from neve.errors import ExpressionError
from neve.expressions import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    BoundPredicate,
    BoundReference,
    Operation,
    bind,
    equal,
    is_in,
    is_nan,
    is_null,
    less_than,
    not_in,
    not_nan,
    not_null,
    parse,
    starts_with,
)
from neve.spec.schema import Schema
from neve.spec.types import (
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    DecimalType,
    ListType,
    MapType,
    NestedField,
    StructType,
)

SCHEMA = Schema(
    NestedField(1, "id", LONG, True),
    NestedField(2, "small", INT),
    NestedField(3, "Name", STRING),
    NestedField(4, "price", DecimalType(9, 2)),
    NestedField(5, "score", DOUBLE),
    NestedField(
        6,
        "loc",
        StructType(NestedField(7, "lat", DOUBLE, True), NestedField(8, "city", STRING)),
        True,
    ),
    NestedField(9, "tags", ListType(10, STRING)),
    NestedField(11, "props", MapType(12, STRING, 13, STRING)),
    NestedField(
        14,
        "opt",
        StructType(NestedField(15, "req", INT, True)),
    ),
    NestedField(16, "points", ListType(17, StructType(NestedField(18, "x", INT)))),
)


def pred(expr: object) -> BoundPredicate:
    assert isinstance(expr, BoundPredicate)
    return expr


def test_bound_predicate_holds_field_and_converted_value() -> None:
    p = pred(bind(SCHEMA, parse("price < 12.3")))
    assert p.op is Operation.LT
    assert p.term.field_id == 4
    assert p.term.field == SCHEMA.find_field(4)
    assert p.term.field_type == DecimalType(9, 2)
    assert p.literal == Decimal("12.30")
    assert str(p.literal) == "12.30"


def test_nested_struct_fields_bind_with_accessor_and_path() -> None:
    p = pred(bind(SCHEMA, equal("loc.city", "Oslo")))
    assert p.term == BoundReference(SCHEMA.find_field(8), (5, 1), ("loc", "city"), True)
    assert p.term.eval((1, 2, "n", None, None, (1.0, "Oslo"))) == "Oslo"
    assert p.term.eval((1, 2, "n", None, None, None)) is None


def test_case_insensitive_binding() -> None:
    p = pred(bind(SCHEMA, equal("NAME", "x"), case_sensitive=False))
    assert p.term.name == "Name"
    p = pred(bind(SCHEMA, equal("LOC.CITY", "x"), case_sensitive=False))
    assert p.term.path == ("loc", "city")


def test_unknown_column_lists_known_columns_and_suggests() -> None:
    with pytest.raises(ExpressionError) as info:
        bind(SCHEMA, equal("prize", 1))
    msg = str(info.value)
    assert "no column 'prize'" in msg
    assert "id, small, Name, price" in msg
    assert "loc.city" in msg
    assert "Did you mean 'price'?" in msg
    assert "tags.element" not in msg  # not filterable, so not offered


def test_case_mismatch_hints_at_case_insensitive_binding() -> None:
    with pytest.raises(ExpressionError, match="case_sensitive=False"):
        bind(SCHEMA, equal("name", "x"))


@pytest.mark.parametrize("name", ["loc", "tags", "props"])
def test_comparing_with_a_nested_column_is_refused(name: str) -> None:
    with pytest.raises(ExpressionError, match="only primitive columns"):
        bind(SCHEMA, equal(name, 1))
    # Null tests on a nested column are fine.
    assert bind(SCHEMA, is_null(name)) != ALWAYS_TRUE


@pytest.mark.parametrize("name", ["tags.element", "props.key", "props.value", "points.element.x"])
def test_fields_inside_lists_and_maps_are_refused(name: str) -> None:
    with pytest.raises(ExpressionError, match="inside a list or map"):
        bind(SCHEMA, equal(name, "a"))


def test_null_tests_simplify_on_columns_that_cannot_be_null() -> None:
    assert bind(SCHEMA, is_null("id")) is ALWAYS_FALSE
    assert bind(SCHEMA, not_null("id")) is ALWAYS_TRUE
    assert bind(SCHEMA, is_null("loc.lat")) is ALWAYS_FALSE  # required all the way
    # A required field inside an optional struct is null when the struct is.
    assert pred(bind(SCHEMA, is_null("opt.req"))).op is Operation.IS_NULL


def test_nan_tests_simplify_on_non_floating_columns() -> None:
    assert bind(SCHEMA, is_nan("small")) is ALWAYS_FALSE
    assert bind(SCHEMA, not_nan("small")) is ALWAYS_TRUE
    assert pred(bind(SCHEMA, is_nan("score"))).op is Operation.IS_NAN
    schema = Schema(NestedField(1, "f", FLOAT))
    assert pred(bind(schema, not_nan("f"))).op is Operation.NOT_NAN


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Every value compares true, but a null satisfies no comparison:
        # Iceberg-Java's ALWAYS_TRUE would select the null rows too.
        ("small < 3000000000", "small not null"),
        ("small <= 3000000000", "small not null"),
        ("small != 3000000000", ALWAYS_TRUE),
        ("small > 3000000000", ALWAYS_FALSE),
        ("small >= 3000000000", ALWAYS_FALSE),
        ("small = 3000000000", ALWAYS_FALSE),
        ("small > -3000000000", "small not null"),
        ("small >= -3000000000", "small not null"),
        ("small != -3000000000", ALWAYS_TRUE),
        ("small < -3000000000", ALWAYS_FALSE),
        ("small <= -3000000000", ALWAYS_FALSE),
        ("small = -3000000000", ALWAYS_FALSE),
        ("price < 10000000", "price not null"),
        ("price = -10000000", ALWAYS_FALSE),
        ("id < 10000000000000000000", ALWAYS_TRUE),  # id is required: never null
        ("small IN (3000000000, -3000000000)", ALWAYS_FALSE),
        ("small NOT IN (3000000000, -3000000000)", ALWAYS_TRUE),
        # NOT of such a comparison is its negation: NOT (small < 2**40) is small >= 2**40
        ("NOT small < 3000000000", ALWAYS_FALSE),
        ("NOT small > 3000000000", "small not null"),
        ("NOT small = 3000000000", ALWAYS_TRUE),
    ],
)
def test_out_of_range_values_simplify_like_iceberg_java(text: str, expected: object) -> None:
    if isinstance(expected, str):
        expected = bind(SCHEMA, not_null(expected.split()[0]))
        assert pred(expected).op is Operation.NOT_NULL
        assert bind(SCHEMA, parse(text)) == expected
    else:
        assert bind(SCHEMA, parse(text)) is expected


def test_in_drops_out_of_range_values_and_sorts() -> None:
    p = pred(bind(SCHEMA, is_in("small", [3000000000, 5])))
    assert (p.op, p.literals) == (Operation.EQ, (5,))
    p = pred(bind(SCHEMA, not_in("small", [7, 3000000000, 5])))
    assert (p.op, p.literals) == (Operation.NOT_IN, (5, 7))
    # Values equal after conversion are one value.
    p = pred(bind(SCHEMA, is_in("price", [Decimal("1.5"), "1.50", 1.5])))
    assert (p.op, p.literals) == (Operation.EQ, (Decimal("1.50"),))


def test_bad_values_name_the_column() -> None:
    with pytest.raises(ExpressionError, match="column 'small' of type int"):
        bind(SCHEMA, equal("small", "abc"))
    with pytest.raises(ExpressionError, match="needs a string column"):
        bind(SCHEMA, starts_with("small", "1"))


def test_rebinding_a_bound_filter_by_field_id() -> None:
    bound = bind(SCHEMA, parse("small < 5 AND Name = 'x'"))
    assert bind(SCHEMA, bound) == bound
    # The column is renamed and promoted in a later schema: ids still match.
    evolved = Schema(NestedField(2, "tiny", LONG), NestedField(3, "label", STRING))
    rebound = bind(evolved, bound)
    assert str(rebound) == "tiny < 5 AND label = 'x'"
    with pytest.raises(ExpressionError, match="id 3"):
        bind(Schema(NestedField(2, "small", INT)), bound)


def test_binding_to_a_struct_type() -> None:
    struct = StructType(NestedField(1000, "day", INT), NestedField(1001, "b", INT))
    p = pred(bind(struct, less_than("b", 3)))
    assert p.term.accessor == (1,)
    with pytest.raises(ExpressionError, match="Schema or StructType"):
        bind(object(), less_than("b", 3))  # type: ignore[arg-type]


def test_dates_times_and_timestamps_beyond_their_integer_range_are_out_of_range() -> None:
    # as for int and long columns (before, such values bound and then failed to hash
    # or serialize in planning)
    from neve.spec.types import DATE, TIME, TIMESTAMP, TIMESTAMP_NS

    schema = Schema(
        NestedField(1, "dt", DATE),
        NestedField(2, "tm", TIME),
        NestedField(3, "ts", TIMESTAMP),
        NestedField(4, "tn", TIMESTAMP_NS),
    )
    assert bind(schema, equal("dt", 2**31)) is ALWAYS_FALSE
    assert bind(schema, equal("ts", 2**63)) is ALWAYS_FALSE
    assert bind(schema, equal("tm", -(2**63) - 1)) is ALWAYS_FALSE
    assert pred(bind(schema, less_than("ts", 2**63))).op is Operation.NOT_NULL
    assert pred(bind(schema, equal("tn", 2**63 - 1))).literal == 2**63 - 1
    # 9999-12-31 in nanoseconds is beyond a long: out of range, not an error
    assert bind(schema, parse("tn > '9999-12-31T00:00:00'")) is ALWAYS_FALSE


def test_a_filter_bound_again_to_the_same_schema_is_the_same_bind() -> None:
    expr = less_than("score", 1.5)
    first = bind(SCHEMA, expr)
    assert bind(SCHEMA, expr) is first
    assert bind(SCHEMA, expr, case_sensitive=False) is not first  # another key


def test_equal_but_distinct_filters_bind_each_to_its_own_values() -> None:
    # binds are remembered by identity, not equality: -0.0 == 0.0 (and hash the same)
    zero = pred(bind(SCHEMA, equal("score", 0.0)))
    negative = pred(bind(SCHEMA, equal("score", -0.0)))
    assert math.copysign(1.0, zero.literal) == 1.0
    assert math.copysign(1.0, negative.literal) == -1.0


def test_a_failed_bind_is_not_remembered() -> None:
    expr = equal("missing", 1)
    for _ in range(2):
        with pytest.raises(ExpressionError):
            bind(SCHEMA, expr)
