"""The row-level model test (tests/model/test_rowlevel_model.py) on Spark: the same
random sequences of delete, update, merge and upsert through ``neve.spark``'s verbs,
on merge-on-read and copy-on-write tables, against the same keyed model; a shorter run
(Spark jobs per step)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings

import neve
import neve.spark as ns
from budget import LONG, examples
from model.test_rowlevel_model import RowLevelMachine

pytestmark = [pytest.mark.spark, pytest.mark.property]


def sql_literal(v: Any) -> str:
    """``v`` as a Spark SQL literal (a bigint through a decimal: -2**63 has no literal)."""
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return f"CAST({v} AS BIGINT)"


class SparkTable:
    """A table reached through neve.spark's row-level verbs."""

    def __init__(self, table: neve.Table) -> None:
        self.t = table
        self.spark = ns.local_session()

    def df(self, rows: pa.Table) -> Any:
        return self.spark.createDataFrame(rows)

    def append(self, rows: pa.Table) -> None:
        self.t.append(rows)

    def delete(self, text: str) -> None:
        ns.delete(self.spark, self.t.refresh(), text)

    def update(self, values: dict[str, Any], text: str) -> int:
        sql = {k: sql_literal(v) for k, v in values.items()}
        return ns.update(self.spark, self.t.refresh(), sql, text)

    def upsert(self, rows: pa.Table) -> Any:
        return ns.upsert(self.spark, self.df(rows), self.t.refresh())

    def merge(self, rows: pa.Table) -> Any:
        return ns.merge(self.spark, self.df(rows), self.t.refresh())

    def refresh(self) -> neve.Table:
        return self.t.refresh()

    def scan(self) -> Any:
        return self.t.refresh().scan()


class SparkRowLevelMachine(RowLevelMachine):
    @staticmethod
    def wrap(t: neve.Table) -> Any:
        return SparkTable(t)


SparkRowLevelMachine.TestCase.settings = settings(
    max_examples=examples(2, 30),
    stateful_step_count=12 if LONG else 6,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_spark_rowlevel_model = SparkRowLevelMachine.TestCase
