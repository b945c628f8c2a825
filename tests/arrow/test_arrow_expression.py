"""Filters converted to pyarrow select exactly the rows the Python evaluator selects."""

from __future__ import annotations

import struct
import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neve.arrow.expression import delete_filter, to_arrow_expression
from neve.errors import ExpressionError
from neve.expressions import (
    BooleanExpression,
    Operation,
    and_,
    bind,
    evaluator,
    not_,
    or_,
    parse,
    predicate,
)
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
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    UUID,
    DecimalType,
    FixedType,
    NestedField,
    StructType,
)

NAN = float("nan")
U1 = uuid.UUID("00000000-0000-0000-0000-000000000001")
U2 = uuid.UUID("ffffffff-0000-0000-0000-000000000002")

SCHEMA = Schema(
    NestedField(1, "id", INT, True),
    NestedField(2, "l", LONG),
    NestedField(3, "f", FLOAT),
    NestedField(4, "d", DOUBLE),
    NestedField(5, "dec", DecimalType(9, 2)),
    NestedField(6, "day", DATE),
    NestedField(7, "t", TIME),
    NestedField(8, "ts", TIMESTAMP),
    NestedField(9, "tstz", TIMESTAMPTZ),
    NestedField(10, "tsns", TIMESTAMP_NS),
    NestedField(11, "s", STRING),
    NestedField(12, "u", UUID),
    NestedField(13, "fx", FixedType(2)),
    NestedField(14, "b", BINARY),
    NestedField(15, "st", StructType(NestedField(16, "a", INT), NestedField(17, "s", STRING))),
    NestedField(18, "flag", BOOLEAN),
)

ARROW = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("l", pa.int64()),
        pa.field("f", pa.float32()),
        pa.field("d", pa.float64()),
        pa.field("dec", pa.decimal128(9, 2)),
        pa.field("day", pa.date32()),
        pa.field("t", pa.time64("us")),
        pa.field("ts", pa.timestamp("us")),
        pa.field("tstz", pa.timestamp("us", tz="UTC")),
        pa.field("tsns", pa.timestamp("ns")),
        pa.field("s", pa.large_string()),  # readers may produce large types
        pa.field("u", pa.binary(16)),
        pa.field("fx", pa.binary(2)),
        pa.field("b", pa.binary()),
        pa.field("st", pa.struct([pa.field("a", pa.int32()), pa.field("s", pa.string())])),
        pa.field("flag", pa.bool_()),
    ]
)

_INT_BACKED = {
    "day": pa.int32(),
    "t": pa.int64(),
    "ts": pa.int64(),
    "tstz": pa.int64(),
    "tsns": pa.int64(),
}


def to_table(rows: list[tuple[Any, ...]]) -> pa.Table:
    """Rows in neve's value representation -> an Arrow table of ARROW's types."""
    columns = []
    for i, field in enumerate(ARROW):
        values = [r[i] for r in rows]
        if field.name in _INT_BACKED:
            arr = pa.array(values, _INT_BACKED[field.name]).cast(field.type)
        elif field.name == "u":
            arr = pa.array([None if v is None else v.bytes for v in values], field.type)
        elif field.name == "st":
            arr = pa.array(
                [None if v is None else {"a": v[0], "s": v[1]} for v in values], field.type
            )
        else:
            arr = pa.array(values, field.type)
        columns.append(arr)
    return pa.Table.from_arrays(columns, schema=ARROW)


def row(i: int, **values: Any) -> tuple[Any, ...]:
    base: dict[str, Any] = {f.name: None for f in SCHEMA.fields}
    base["id"] = i
    base.update(values)
    return tuple(base[f.name] for f in SCHEMA.fields)


ROWS = [
    row(
        0,
        l=5,
        f=1.5,
        d=0.0,
        dec=Decimal("1.50"),
        day=19000,
        t=3_600_000_000,
        ts=1_700_000_000_000_000,
        tstz=1_700_000_000_000_000,
        tsns=1_700_000_000_000_000_001,
        s="apple",
        u=U1,
        fx=b"ab",
        b=b"\x00\x01",
        st=(1, "x"),
        flag=True,
    ),
    row(
        1,
        l=-3,
        f=NAN,
        d=-0.0,
        dec=Decimal("-2.00"),
        day=-1,
        t=0,
        ts=-1,
        tstz=0,
        tsns=-5,
        s="apricot",
        u=U2,
        fx=b"zz",
        b=b"",
        st=(None, "y"),
        flag=False,
    ),
    row(2, d=NAN, s="banana", st=None),
    row(3),
    row(4, l=10, f=-0.5, d=2.5, dec=Decimal("0.01"), s="", fx=b"ab", st=(7, None), flag=True),
]
TABLE = to_table(ROWS)

CASES = [
    "l = 5",
    "l != 5",
    "l < 5",
    "l <= 5",
    "l > -3",
    "l >= 10",
    "l IN (5, 10)",
    "l NOT IN (5, 10)",
    "l IS NULL",
    "l IS NOT NULL",
    "NOT l < 5",
    "NOT (l = 5 OR s = 'banana')",
    "NOT l IS NULL AND NOT l != 5",
    "f < 1",
    "f IS NaN",
    "f IS NOT NaN",
    "f != 1.5",
    "f = 1.5",
    "d = 0",
    "d IN (0, 7)",
    "d NOT IN (0, 7)",
    "d > -1",
    "d IS NaN OR d IS NULL",
    "dec > 0",
    "dec = 1.5",
    "dec IN (-2, 0.01)",
    "day < '1970-01-01'",
    "day >= '2000-01-01'",
    "t = '01:00:00'",
    "t < '00:30:00'",
    "ts >= '2023-11-14T22:13:20'",
    "ts < '1970-01-01T00:00:00'",
    "tstz = '2023-11-14T23:13:20+01:00'",
    "tstz <= '1970-01-01T00:00:00Z'",
    "tsns > '2023-11-14T22:13:20.000000000'",
    "tsns < '1970-01-01T00:00:00'",
    "s LIKE 'ap%'",
    "s NOT LIKE 'ap%'",
    "s LIKE '%'",
    "s = ''",
    "s > 'apple'",
    "s IN ('banana', 'kiwi')",
    f"u = '{U2}'",
    f"u < '{U2}'",
    "fx = '6162'",
    "fx != '6162'",
    "b = '0001'",
    "b < '01'",
    "st.a = 1",
    "st.a != 1",
    "st.s IS NULL",
    "st IS NULL",
    "st IS NOT NULL",
    "flag",
    "NOT flag",
    "flag = false",
    "id < 3",
    "id IS NULL",
    "true",
    "false",
    "l < 7 AND (s LIKE 'a%' OR d IS NaN)",
]


def selected(table: pa.Table, expr: Any) -> list[int]:
    return sorted(table.filter(expr).column("id").to_pylist())


@pytest.mark.parametrize("text", CASES)
def test_arrow_filter_matches_the_evaluator(text: str) -> None:
    bound = bind(SCHEMA, parse(text))
    expected = [r[0] for r in ROWS if evaluator(SCHEMA, bound)(r)]
    assert selected(TABLE, to_arrow_expression(bound)) == expected
    kept = selected(TABLE, delete_filter(bound))
    assert kept == [r[0] for r in ROWS if r[0] not in expected]


def test_null_rules() -> None:
    assert selected(TABLE, to_arrow_expression(parse("l != 5"), SCHEMA)) == [1, 2, 3, 4]
    assert selected(TABLE, to_arrow_expression(parse("l < 5"), SCHEMA)) == [1]
    assert selected(TABLE, to_arrow_expression(parse("NOT l < 5"), SCHEMA)) == [0, 4]
    # Deleting "l < 5" keeps the rows where l is null.
    assert selected(TABLE, delete_filter(parse("l < 5"), SCHEMA)) == [0, 2, 3, 4]
    # -0.0 equals 0.0, also for IN (hash-based in Arrow).
    assert selected(TABLE, to_arrow_expression(parse("d IN (0, 9)"), SCHEMA)) == [0, 1]


def test_unbound_filters_need_the_schema() -> None:
    with pytest.raises(ExpressionError, match="pass the table schema"):
        to_arrow_expression(parse("l = 1"))
    with pytest.raises(ExpressionError, match="no column 'nope'"):
        to_arrow_expression(parse("nope = 1"), SCHEMA)
    assert selected(TABLE, to_arrow_expression(parse("L = 5"), SCHEMA, case_sensitive=False)) == [0]


# -- random rows and filters ----------------------------------------------------------------

_F32 = st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-4, max_value=4)
_COLUMNS: dict[str, st.SearchStrategy[Any]] = {
    "l": st.integers(-3, 3),
    "f": st.one_of(_F32, st.just(NAN)),
    "d": st.one_of(st.sampled_from([0.0, -0.0, NAN, 1.5]), st.integers(-3, 3).map(float)),
    "dec": st.integers(-300, 300).map(lambda n: Decimal(n).scaleb(-2)),
    "day": st.integers(-3, 3),
    "ts": st.integers(-3, 3),
    "s": st.text(alphabet="ab", max_size=3),
    "u": st.sampled_from([U1, U2]),
    "b": st.binary(max_size=2),
    "flag": st.booleans(),
}


def _float32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


@st.composite
def leaves(draw: st.DrawFn) -> BooleanExpression:
    column = draw(st.sampled_from(sorted(_COLUMNS)))
    values = _COLUMNS[column].filter(lambda v: not (isinstance(v, float) and v != v))
    ops = [
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
    if column == "s":
        ops += [Operation.STARTS_WITH, Operation.NOT_STARTS_WITH]
    if column in ("f", "d"):
        ops += [Operation.IS_NAN, Operation.NOT_NAN]
    op = draw(st.sampled_from(ops))
    if op.is_unary:
        return predicate(op, column)
    if op.is_set:
        return predicate(op, column, draw(st.lists(values, min_size=1, max_size=3)))
    return predicate(op, column, (draw(values),))


_FILTERS = st.recursive(
    leaves(),
    lambda children: st.one_of(
        st.tuples(children, children).map(lambda p: and_(*p)),
        st.tuples(children, children).map(lambda p: or_(*p)),
        children.map(not_),
    ),
    max_leaves=4,
)


@st.composite
def tables(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    rows = []
    for i in range(draw(st.integers(1, 6))):
        values = {name: draw(st.one_of(st.none(), strategy)) for name, strategy in _COLUMNS.items()}
        if values["f"] is not None:
            values["f"] = _float32(values["f"])
        rows.append(row(i, **values))
    return rows


@settings(max_examples=200)
@given(tables(), _FILTERS)
def test_random_filters_select_what_the_evaluator_selects(
    rows: list[tuple[Any, ...]], expr: BooleanExpression
) -> None:
    table = to_table(rows)
    bound = bind(SCHEMA, expr)
    expected = [r[0] for r in rows if evaluator(SCHEMA, bound)(r)]
    assert selected(table, to_arrow_expression(bound)) == expected, str(bound)
    assert selected(table, delete_filter(bound)) == [r[0] for r in rows if r[0] not in expected]
