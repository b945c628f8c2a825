"""The changelog model test (tests/model/test_changelog_model.py) read through
``neve.spark.changes``: change tasks read by Spark tasks, carry-over removal, update
pairing and net changes in Spark; fewer examples (Spark jobs per step)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings

import neve.spark as ns
from budget import LONG, examples
from model.changelog_model import Row
from model.test_changelog_model import ChangelogMachine

pytestmark = [pytest.mark.spark, pytest.mark.property]


class SparkChangelogMachine(ChangelogMachine):
    final_starts = 1

    def read_changes(self, t: Any, **kwargs: Any) -> list[Row]:
        spark = ns.local_session()
        # local_rows_max=0: every changelog read and finished by Spark tasks
        df = ns.changes(spark, t.refresh(), local_rows_max=0, **kwargs)
        return [r.asDict() for r in df.collect()]


SparkChangelogMachine.TestCase.settings = settings(
    max_examples=examples(2, 30),
    stateful_step_count=12 if LONG else 6,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_spark_changelog_model = SparkChangelogMachine.TestCase
