"""The Iceberg-Java test engine itself: the pinned versions, values that survive the trip
through Spark SQL literals and JSON exactly, and refusals that come back as errors."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pytest

from javaengine import ICEBERG_VERSION, IcebergJava, JavaSqlError, canon
from javaengine.sql import literal

pytestmark = pytest.mark.java

UTC = dt.timezone.utc
VALUES: list[tuple[Any, str]] = [
    (math.nan, "double"),
    (-0.0, "double"),
    (0.0, "double"),
    (math.inf, "double"),
    (-math.inf, "float"),
    (5e-324, "double"),
    (-0.0, "float"),
    (3.4028234663852886e38, "float"),
    (-(2**31), "int"),
    (-(2**63), "bigint"),
    (Decimal("-9999999999999999999999999999.9999999999"), "decimal(38,10)"),
    (Decimal("0.01"), "decimal(9,2)"),
    (dt.date(1, 1, 1), "date"),
    (dt.date(1969, 12, 31), "date"),
    (dt.datetime(1, 1, 1, tzinfo=UTC), "timestamp"),
    (dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "timestamp"),
    (dt.datetime(9999, 12, 31, 23, 59, 59, 999999), "timestamp_ntz"),
    (b"\x00\xff", "binary"),
    (b"", "binary"),
    ("", "string"),
    ("\u00e9\U0001f600'\\", "string"),
    (None, "double"),
    (None, "timestamp"),
    (True, "boolean"),
]


def test_versions(iceberg_java: IcebergJava) -> None:
    assert iceberg_java.info["iceberg"] == ICEBERG_VERSION
    assert iceberg_java.info["spark"].startswith("3.5.")


def test_values_survive_exactly(iceberg_java: IcebergJava) -> None:
    select = ", ".join(f"{literal(v, t)} AS c{k}" for k, (v, t) in enumerate(VALUES))
    result = iceberg_java.sql(f"SELECT {select}")
    assert [canon(v) for v in result.rows[0]] == [canon(v) for v, _ in VALUES]
    assert math.copysign(1.0, result.rows[0][1]) == -1.0  # -0.0 kept its sign
    assert result.types[0] == "double" and result.types[10] == "decimal(38,10)"


def test_a_refused_statement_raises(iceberg_java: IcebergJava) -> None:
    with pytest.raises(JavaSqlError, match="TABLE_OR_VIEW_NOT_FOUND") as caught:
        iceberg_java.sql("SELECT * FROM neve.no_such_namespace.no_such_table")
    assert caught.value.java_class is not None
    assert iceberg_java.sql("SELECT 1 AS one").scalar() == 1  # still serving
