"""The primary-key check of Spark appends: keys the batch holds twice or the table
holds already are refused before anything is written, and keys a concurrent commit
added are refused when the append rebases -- the pyarrow engine's rules
(:mod:`neve.arrow.keys`), run distributed: the keys stay on the executors, the
table's keys are read only from the files the batch's key range may match, and only
a few offending keys reach the driver, for the error."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from neve.actions.base import TableState
from neve.actions.snapshot import SnapshotAction
from neve.arrow.keys import duplicate_key_error
from neve.arrow.rebase import added_data_paths
from neve.expressions import BooleanExpression, and_
from neve.expressions.expressions import greater_than_or_equal, less_than_or_equal
from neve.planning.scan import ScanPlan
from neve.spark.reader import read_tasks
from neve.spec.refs import MAIN_BRANCH
from neve.spec.schema import Schema
from neve.spec.snapshot import Snapshot
from neve.spec.table_metadata import TableMetadata

__all__ = ["SparkNewKeysCheck", "check_new_keys"]

#: How many offending keys the error names (one more tells "and more").
_SHOWN = 6


def _range_filter(keys: DataFrame, on: Sequence[str]) -> BooleanExpression | None:
    """The keys' range per column (one pass), for pruning the table's files."""
    aggs = [F.min(c).alias(f"lo{i}") for i, c in enumerate(on)]
    aggs += [F.max(c).alias(f"hi{i}") for i, c in enumerate(on)]
    row = keys.agg(*aggs).collect()[0]
    if row["lo0"] is None:
        return None  # no rows
    parts: list[BooleanExpression] = []
    for i, c in enumerate(on):
        parts.append(greater_than_or_equal(c, row[f"lo{i}"]))
        parts.append(less_than_or_equal(c, row[f"hi{i}"]))
    return and_(*parts)


def _offending(rows: Sequence[Row], on: Sequence[str]) -> pa.Table:
    return pa.table({c: [r[c] for r in rows] for c in on})


def _table_keys(
    spark: SparkSession, md: TableMetadata, scan: ScanPlan, paths: set[str] | None
) -> DataFrame:
    """The key columns of the live rows of the files ``scan`` plans (only ``paths``)."""
    schema = md.schema()
    on = schema.identifier_field_names
    tasks = [t for t in scan.plan_files() if paths is None or t.file.file_path in paths]
    projected = Schema(*[schema.find_field(c) for c in on])
    return read_tasks(spark, scan, tasks, projected_schema=projected)


def check_new_keys(
    df: DataFrame, table: TableState, on: Sequence[str], *, branch: str = MAIN_BRANCH
) -> SparkNewKeysCheck:
    """Refuse ``df`` when it holds a key twice or the table holds one of its keys
    (:class:`neve.errors.DuplicateKeyError`); returns the check to run again when the
    append rebases over concurrent commits."""
    keys = df.select(*on)
    twice = keys.groupBy(*on).count().filter(F.col("count") > 1).select(*on).limit(_SHOWN).collect()
    if twice:
        raise duplicate_key_error(
            _offending(twice, on), on, "occur more than once in the rows to append"
        )
    md = table.metadata
    ref = branch if branch in md.refs else MAIN_BRANCH
    if md.snapshot_for_ref(ref) is not None:
        expr = _range_filter(keys, on)
        if expr is not None:
            scan = ScanPlan(md, table.io, filter=expr, ref=ref)
            existing = _table_keys(df.sparkSession, md, scan, None)
            found = keys.join(existing, list(on), "left_semi").limit(_SHOWN).collect()
            if found:
                raise duplicate_key_error(_offending(found, on), on, "exist in the table already")
    return SparkNewKeysCheck(keys, on)


class SparkNewKeysCheck:
    """Refuses a Spark append whose keys a concurrent commit added (the rebase hook of
    its commit, see :class:`neve.actions.snapshot.Rebase`)."""

    def __init__(self, keys: DataFrame, on: Sequence[str]) -> None:
        self.keys = keys
        self.on = list(on)

    def __call__(self, action: SnapshotAction, md: TableMetadata, parent: Snapshot) -> None:
        added = added_data_paths(action, md, parent)
        if not added:
            return
        scan = ScanPlan(md, action.io, snapshot_id=parent.snapshot_id)
        theirs = _table_keys(self.keys.sparkSession, md, scan, added)
        found = self.keys.join(theirs, self.on, "left_semi").limit(_SHOWN).collect()
        if found:
            raise duplicate_key_error(
                _offending(found, self.on), self.on, "were added by a concurrent commit"
            )
