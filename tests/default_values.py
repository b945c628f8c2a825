"""Column defaults shared by the pyarrow, Spark and cross-engine tests.

A format v3 table ``id`` (long, required) gains one column per type in :data:`CASES`,
each with an ``initial-default`` and a different ``write-default``. :func:`build` then
writes the same history through whichever engine a test passes in, and
:func:`expected` says what every row must read as:

- ids 0-1 were written before the columns existed: the initial defaults;
- ids 10-11 were written without the columns: the write defaults;
- id 20 was written with explicit nulls: nulls;
- id 30 was written with values: those values;
- then every write default is changed (``update_column_default``), and
- ids 40-41 were written without the columns: the new write defaults.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa

from javaengine import canon_rows
from neve.table.table import Table

UTC = dt.timezone.utc


@dataclass(frozen=True)
class Case:
    name: str
    type: str
    arrow: pa.DataType
    initial: Any  # what rows written before the column read as
    write: Any  # what writes omitting the column store, at first
    later: Any  # ... and after update_column_default
    given: Any  # a value a write supplies itself


CASES: tuple[Case, ...] = (
    Case("i", "int", pa.int32(), -(2**31), 7, -1, 123),
    Case("l", "long", pa.int64(), -(2**63), 2**40, -5, 9),
    Case("s", "string", pa.string(), "", "héllo wörld 😀", "later", "given"),
    Case(
        "dec",
        "decimal(9, 2)",
        pa.decimal128(9, 2),
        Decimal("-9999999.99"),
        Decimal("0.01"),
        Decimal("-0.50"),
        Decimal("12.34"),
    ),
    Case(
        "d",
        "date",
        pa.date32(),
        dt.date(1969, 12, 31),
        dt.date(1901, 12, 13),
        dt.date(2038, 1, 19),
        dt.date(2024, 2, 29),
    ),
    Case(
        "ts",
        "timestamp",
        pa.timestamp("us"),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
        dt.datetime(2024, 2, 29, 12, 0, 0, 1),
        dt.datetime(1950, 6, 1),
        dt.datetime(2000, 1, 1),
    ),
    Case(
        "tz",
        "timestamptz",
        pa.timestamp("us", tz="UTC"),
        dt.datetime(1960, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
        dt.datetime(1970, 1, 1, tzinfo=UTC),
        dt.datetime(2100, 12, 31, 23, 59, 59, tzinfo=UTC),
        dt.datetime(2024, 1, 1, tzinfo=UTC),
    ),
    Case("b", "boolean", pa.bool_(), False, True, False, True),
    Case("f", "double", pa.float64(), -0.0, -1.5e300, -1e-310, 2.5),
)

BEFORE, OMITTED, NULLS, GIVEN, LATER = (0, 1), (10, 11), (20,), (30,), (40, 41)


def ids_table(ids: Sequence[int]) -> pa.Table:
    """Rows that give only ``id`` (every defaulted column omitted)."""
    return pa.table({"id": pa.array(ids, pa.int64())})


def full_table(ids: Sequence[int], nulls: bool) -> pa.Table:
    """Rows with every column: nulls, or each case's ``given`` value."""
    cols: dict[str, pa.Array] = {"id": pa.array(ids, pa.int64())}
    for c in CASES:
        cols[c.name] = pa.array([None if nulls else c.given] * len(ids), c.arrow)
    return pa.table(cols)


def add_columns(table: Table) -> None:
    with table.update_schema() as u:
        for c in CASES:
            u.add_column(c.name, c.type, initial_default=c.initial, write_default=c.write)


def change_write_defaults(table: Table) -> None:
    with table.update_schema() as u:
        for c in CASES:
            u.update_column_default(c.name, c.later)


def build(load: Callable[[], Table], append: Callable[[pa.Table], None]) -> None:
    """The history of the module docs: schema changes on ``load()`` (the table as it is
    now), every write through ``append``."""
    append(ids_table(BEFORE))
    add_columns(load())
    append(ids_table(OMITTED))
    append(full_table(NULLS, nulls=True))
    append(full_table(GIVEN, nulls=False))
    change_write_defaults(load())
    append(ids_table(LATER))


def expected_value(c: Case, row_id: int) -> Any:
    if row_id in BEFORE:
        return c.initial
    if row_id in OMITTED:
        return c.write
    if row_id in NULLS:
        return None
    if row_id in GIVEN:
        return c.given
    return c.later


def expected(ids: Sequence[int] = (*BEFORE, *OMITTED, *NULLS, *GIVEN, *LATER)) -> Counter[Any]:
    """The rows (id first, then one value per case) as :func:`canon_rows` counts them."""
    return canon_rows([(i, *(expected_value(c, i) for c in CASES)) for i in ids])


def column_names() -> list[str]:
    return ["id", *(c.name for c in CASES)]
