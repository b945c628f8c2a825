"""v3 column defaults across engines (spec "Default values").

- A table whose ``initial-default`` and ``write-default`` differ, written by neve
  (``tests/default_values.py``), reads as the same rows in Iceberg-Java 1.10.2 (Spark
  3.5, Parquet) and in pyiceberg 0.12: both fill the initial defaults of old files.
- Defaults set by Iceberg-Java: Spark 3.5's SQL cannot set them (``ALTER TABLE ... ADD
  COLUMN ... DEFAULT`` fails with "setting default values in Spark is currently
  unsupported", and an ``INSERT`` that omits a column is refused), so the test sets
  them through Java's ``UpdateSchema`` API (``addColumn`` with a default, then
  ``updateColumnDefault``). neve reads Java's rows with Java's initial defaults,
  its own writes omitting the columns store Java's write defaults, and Java reads
  those back alike.

Iceberg-Java 1.10.2's vectorized Parquet reader fails on a decimal column with a
default in a file that stores it as INT32 or INT64 (as Java writes decimals of
precision up to 18; neve's writer stores fixed-length binary): it rebuilds the field
with the physical type and cannot cast the default to it ("Cannot cast default value
to int: -12.50", ``VectorizedArrowReader.getPhysicalType``). Java's row reader reads
those files correctly, so Java's reads of its own files here turn vectorization off
(:func:`row_reader`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from default_values import build, column_names, expected, ids_table
from javaengine import IcebergJava, canon_rows
from neve.catalog import SqlCatalog

pytestmark = pytest.mark.java

ID_ONLY = pa.schema([pa.field("id", pa.int64(), nullable=False)])
VECTORIZATION = "spark.sql.iceberg.vectorization.enabled"


@contextlib.contextmanager
def row_reader(java: IcebergJava) -> Iterator[None]:
    """Java reads with its row reader (see the module docs for why)."""
    java.sql(f"SET {VECTORIZATION}=false")
    try:
        yield
    finally:
        java.sql(f"RESET {VECTORIZATION}")


def test_neve_defaults_read_by_java_and_pyiceberg(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str, java_setup: Any
) -> None:
    t = java_catalog.create_table((java_ns, "t"), ID_ONLY, format_version=3)
    build(lambda: t, t.append)
    want = expected()
    assert canon_rows(t.scan().to_arrow().select(column_names()).to_pylist()) == want

    java = iceberg_java.sql(f"SELECT {', '.join(column_names())} FROM neve.{java_ns}.t")
    assert canon_rows(java.rows) == want

    pyiceberg = PyIcebergSqlCatalog("neve", uri=java_setup.uri, warehouse=java_setup.warehouse)
    theirs = pyiceberg.load_table(f"{java_ns}.t").scan().to_arrow()
    assert canon_rows(theirs.select(column_names()).to_pylist()) == want


def test_java_defaults_read_and_used_by_neve(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    name = f"neve.{java_ns}.j"
    iceberg_java.sql(
        f"CREATE TABLE {name} (id bigint NOT NULL) USING iceberg "
        "TBLPROPERTIES ('format-version'='3')"
    )
    iceberg_java.sql(f"INSERT INTO {name} VALUES (1)")
    changes: list[dict[str, Any]] = [
        {"add": "n", "type": "int", "default": -7},
        {"add": "d", "type": "date", "default": "1960-02-29"},
        {"add": "m", "type": "decimal(9, 2)", "default": "-12.50", "required": True},
        {"add": "s", "type": "string", "default": "java"},
        {"add": "ts", "type": "timestamp", "default": "1969-12-31T23:59:59.999999"},
    ]
    answer = iceberg_java.request(
        {"op": "update_schema", "catalog": "neve", "table": f"{java_ns}.j", "changes": changes}
    )
    assert answer["ok"], answer
    answer = iceberg_java.request(
        {
            "op": "update_schema",
            "catalog": "neve",
            "table": f"{java_ns}.j",
            "changes": [
                {"set-default": "n", "value": 8},
                {"set-default": "d", "value": "2000-01-01"},
                {"set-default": "m", "value": "3.25"},
                {"set-default": "s", "value": None},
                {"set-default": "ts", "value": "1900-01-01T00:00:00"},
            ],
        }
    )
    assert answer["ok"], answer

    t = java_catalog.load_table((java_ns, "j"))
    f = t.schema().find_field("m")
    assert f.required and (f.initial_default, f.write_default) == (
        Decimal("-12.50"),
        Decimal("3.25"),
    )
    assert t.schema().find_field("s").write_default is None
    t.append(ids_table([2]))  # omits every added column: Java's write defaults
    iceberg_java.sql(
        f"INSERT INTO {name} VALUES (3, 1, DATE'2024-01-02', 4.50, 'x', "
        "TIMESTAMP_NTZ'2024-01-02 03:04:05')"
    )
    want = canon_rows(
        [
            (
                1,
                -7,
                dt.date(1960, 2, 29),
                Decimal("-12.50"),
                "java",
                dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
            ),
            (2, 8, dt.date(2000, 1, 1), Decimal("3.25"), None, dt.datetime(1900, 1, 1)),
            (3, 1, dt.date(2024, 1, 2), Decimal("4.50"), "x", dt.datetime(2024, 1, 2, 3, 4, 5)),
        ]
    )
    columns = ["id", "n", "d", "m", "s", "ts"]
    ours = java_catalog.load_table((java_ns, "j")).scan().to_arrow().select(columns)
    assert canon_rows(ours.to_pylist()) == want
    with row_reader(iceberg_java):
        theirs = iceberg_java.sql(f"SELECT {', '.join(columns)} FROM {name}").rows
    assert canon_rows(theirs) == want
