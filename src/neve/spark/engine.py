"""The Spark engine: the data work of table changes done by Spark (Parquet read and
written natively by the JVM, joins and delete files on the executors), planned and
committed on the driver by the table layer exactly as for the pyarrow engine.

    with table.transaction(SparkEngine(spark)) as txn:
        txn.upsert(changes_df)
        txn.delete("day < '2024-01-01'")

Rebasing over concurrent commits reads the few rows the winners added on the driver
(:class:`neve.arrow.engine.DriverRebases`), except for the primary-key check of
appends, which joins on the executors (:mod:`neve.spark.keys`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from neve.actions.base import TableState
from neve.actions.snapshot import RebasePolicy
from neve.arrow.engine import DriverRebases
from neve.arrow.schema import to_arrow_type
from neve.engine.changes import MergeOutcome, UpdateOutcome
from neve.engine.origins import CompactedFiles
from neve.engine.protocol import KeySource
from neve.errors import DataSchemaMismatchError
from neve.expressions import BooleanExpression
from neve.io.fileio import FileIO
from neve.planning.compaction import CompactionPlan
from neve.planning.delete import DeleteFiles
from neve.planning.merge import MergePlan
from neve.planning.tasks import FileScanTask
from neve.spark import compaction, rowlevel
from neve.spark.job import write_data
from neve.spark.keys import check_new_keys
from neve.spark.session import check_session
from neve.spec.manifest import DataFile
from neve.spec.schema import Schema

__all__ = ["SparkEngine"]


def _frame(rows: object) -> DataFrame:
    if not isinstance(rows, DataFrame):
        raise DataSchemaMismatchError(
            f"the Spark engine takes rows as a Spark DataFrame, not {type(rows).__name__}; "
            "use spark.createDataFrame(...) or the pyarrow engine (the table's own verbs)"
        )
    return rows


class SparkEngine(DriverRebases):
    """The Spark engine (module docstring) on the session ``spark``."""

    def __init__(self, spark: SparkSession) -> None:
        check_session(spark)
        self.spark = spark

    @property
    def name(self) -> str:
        return "spark"

    def __repr__(self) -> str:
        return f"SparkEngine({self.spark.sparkContext.master!r})"

    def columns(self, rows: DataFrame) -> Sequence[str]:
        return list(_frame(rows).columns)

    def write(self, table: TableState, rows: DataFrame) -> list[DataFile]:
        return write_data(_frame(rows), table).files

    def check_new_keys(
        self, table: TableState, rows: DataFrame, on: Sequence[str], branch: str
    ) -> RebasePolicy:
        return RebasePolicy(hook=check_new_keys(_frame(rows), table, on, branch=branch))

    def read(self, table: TableState, tasks: Sequence[FileScanTask], schema: Schema) -> DataFrame:
        return rowlevel.read_rows(self.spark, table, tasks, schema)

    def rewrite_without(
        self,
        table: TableState,
        tasks: Sequence[FileScanTask],
        expr: BooleanExpression,
        case_sensitive: bool,
    ) -> list[DataFile]:
        return rowlevel.rewrite_without(self.spark, table, tasks, expr, case_sensitive)

    def mark_matching(
        self,
        table: TableState,
        tasks: Sequence[FileScanTask],
        expr: BooleanExpression,
        case_sensitive: bool,
    ) -> DeleteFiles:
        return rowlevel.mark_matching(self.spark, table, tasks, expr, case_sensitive)

    def update_rows(
        self,
        table: TableState,
        tasks: Sequence[FileScanTask],
        expr: BooleanExpression,
        values: Mapping[str, Any],
        case_sensitive: bool,
        merge_on_read: bool,
    ) -> UpdateOutcome:
        return rowlevel.update_rows(
            self.spark, table, tasks, expr, values, case_sensitive, merge_on_read
        )

    def key_filter(
        self, table: TableState, rows: DataFrame, on: Sequence[str]
    ) -> BooleanExpression:
        return rowlevel.key_filter(_frame(rows), on)

    def source_keys(self, table: TableState, rows: DataFrame, on: Sequence[str]) -> KeySource:
        frame = _frame(rows)
        schema = table.metadata.schema()
        types = {n: to_arrow_type(schema.find_field(n).field_type) for n in on}

        def collect() -> pa.Table:
            # the distinct keys, collected on the driver only when a rebase asks
            keys = frame.select(*[f"`{n}`" for n in on]).distinct().toArrow()
            return pa.table({n: keys.column(n).cast(types[n]) for n in on})

        return collect

    def execute_merge(self, table: TableState, rows: DataFrame, plan: MergePlan) -> MergeOutcome:
        return rowlevel.execute_merge(self.spark, table, _frame(rows), plan)

    def compact(
        self, table: TableState, plan: CompactionPlan, on_group: Callable[[int], None]
    ) -> CompactedFiles:
        return compaction.compact(self.spark, table, plan, on_group)

    def merge_deletes(self, table: TableState, tasks: Sequence[FileScanTask]) -> DeleteFiles:
        return compaction.merge_deletes(self.spark, table, tasks)

    def delete_files(self, io: FileIO, paths: Sequence[str], workers: int) -> tuple[str, ...]:
        return compaction.delete_files(self.spark, io, paths, workers)
