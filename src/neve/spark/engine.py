"""The Spark engine: the data work of table changes done by Spark (Parquet read and
written natively by the JVM, joins and delete files on the executors), planned and
committed on the driver by the table layer exactly as for the pyarrow engine.

    with table.transaction(SparkEngine(spark)) as txn:
        txn.upsert(changes_df)
        txn.delete("day < '2024-01-01'")

Rebasing over concurrent commits reads the few rows the winners added on the driver
(:class:`neve.arrow.engine.DriverRebases`), except for the primary-key check of
appends, which joins on the executors (:mod:`neve.spark.keys`).

A small change costs a Spark job's fixed overhead many times over, so small ones run on
the driver with the pyarrow engine, on the same plan: an upsert or a MERGE without SQL
in its clauses (Spark SQL and polars SQL differ) whose source has at most
``spark.neve.local.rows-max`` rows, and a DELETE or the rewrite of an overwrite, when
the columns they read of the candidate files are at most ``spark.neve.local.bytes-max``
bytes (from the files' column sizes in the manifests; a rewrite and a copy-on-write
merge count whole files). ``0`` for either
always uses Spark jobs. A MERGE's result says which path ran (``executed_by``:
``spark`` or ``spark-driver``). UPDATE's values are Spark SQL, so updates always run on
Spark. A source of at most :data:`_EAGER_ROWS` rows is computed once, before planning,
and its key filter and rebase keys come from those rows on the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from neve.actions.base import TableState
from neve.actions.snapshot import RebasePolicy
from neve.arrow.engine import ArrowEngine, DriverRebases
from neve.arrow.schema import to_arrow_type
from neve.engine.changes import MergeOutcome, UpdateOutcome
from neve.engine.origins import CompactedFiles
from neve.engine.protocol import KeySource
from neve.errors import DataSchemaMismatchError, ValidationError
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
from neve.spec.schema import Schema, walk_fields

__all__ = ["LOCAL_BYTES_CONF", "LOCAL_ROWS_CONF", "SparkEngine"]

#: Session settings of the driver path (module docstring) and their defaults, measured
#: by benchmarks/bench_merge.py (the small Spark upsert) on this project's machine.
LOCAL_ROWS_CONF = "spark.neve.local.rows-max"
LOCAL_BYTES_CONF = "spark.neve.local.bytes-max"
_LOCAL_ROWS_DEFAULT = 100_000
_LOCAL_BYTES_DEFAULT = 256 * 1024 * 1024
#: A source of at most this many rows is collected before planning (one Spark job): its
#: key filter, rebase keys and, when the target is small too, the merge itself are then
#: worked out on the driver; a larger one costs this probe and goes the Spark way.
_EAGER_ROWS = 10_000


#: The driver path's engine.
_DRIVER = ArrowEngine()


def _conf_int(spark: SparkSession, key: str, default: int) -> int:
    raw = spark.conf.get(key, None)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValidationError(f"Spark setting {key}={raw!r} is not an integer") from None


def _field_ids(schema: Schema) -> list[tuple[int, str]]:
    return [(f.field_id, f.name) for _, f, _ in walk_fields(schema.fields)]


def _frame(rows: object) -> DataFrame:
    if not isinstance(rows, DataFrame):
        raise DataSchemaMismatchError(
            f"the Spark engine takes rows as a Spark DataFrame, not {type(rows).__name__}; "
            "use spark.createDataFrame(...) or the pyarrow engine (the table's own verbs)"
        )
    return rows


class SparkEngine(DriverRebases):
    """The Spark engine (module docstring) on the session ``spark``."""

    def __init__(
        self,
        spark: SparkSession,
        *,
        local_rows_max: int | None = None,
        local_bytes_max: int | None = None,
    ) -> None:
        """``local_rows_max`` / ``local_bytes_max``: the driver path's bounds (module
        docstring); by default the session's settings, else the measured defaults."""
        check_session(spark)
        self.spark = spark
        self.local_rows_max = (
            local_rows_max
            if local_rows_max is not None
            else _conf_int(spark, LOCAL_ROWS_CONF, _LOCAL_ROWS_DEFAULT)
        )
        self.local_bytes_max = (
            local_bytes_max
            if local_bytes_max is not None
            else _conf_int(spark, LOCAL_BYTES_CONF, _LOCAL_BYTES_DEFAULT)
        )
        # the last source looked at, and its rows when they were few enough to collect:
        # a small upsert's key filter, rebase keys and driver merge then share one job
        self._source: tuple[DataFrame, pa.Table | None, int] | None = None

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
        if self._small(tasks, None):  # a rewrite copies whole files
            return _DRIVER.rewrite_without(table, tasks, expr, case_sensitive)
        return rowlevel.rewrite_without(self.spark, table, tasks, expr, case_sensitive)

    def mark_matching(
        self,
        table: TableState,
        tasks: Sequence[FileScanTask],
        expr: BooleanExpression,
        case_sensitive: bool,
    ) -> DeleteFiles:
        if self._small(tasks, rowlevel.filter_schema(table.metadata, expr, case_sensitive)):
            return _DRIVER.mark_matching(table, tasks, expr, case_sensitive)
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

    def _few_rows(self, frame: DataFrame, limit: int) -> pa.Table | None:
        """``frame``'s rows when there are at most ``limit`` of them (one Spark job,
        remembered for the same DataFrame), else None."""
        if limit <= 0:
            return None
        if self._source is not None and self._source[0] is frame:
            _, rows, probed = self._source
            if rows is not None:
                return rows if rows.num_rows <= limit else None
            if probed >= limit:
                return None  # more than ``probed`` rows
        rows = frame.limit(limit + 1).toArrow()
        few = rows if rows.num_rows <= limit else None
        self._source = (frame, few, limit)
        return few

    def key_filter(
        self, table: TableState, rows: DataFrame, on: Sequence[str]
    ) -> BooleanExpression:
        few = self._few_rows(_frame(rows), min(self.local_rows_max, _EAGER_ROWS))
        if few is not None:  # the exact keys, from the rows now on the driver
            return _DRIVER.key_filter(table, few, on)
        return rowlevel.key_filter(_frame(rows), on)

    def source_keys(self, table: TableState, rows: DataFrame, on: Sequence[str]) -> KeySource:
        frame = _frame(rows)
        few = self._few_rows(frame, min(self.local_rows_max, _EAGER_ROWS))
        if few is not None:
            return _DRIVER.source_keys(table, few, on)
        schema = table.metadata.schema()
        types = {n: to_arrow_type(schema.find_field(n).field_type) for n in on}

        def collect() -> pa.Table:
            # the distinct keys, collected on the driver only when a rebase asks
            keys = frame.select(*[f"`{n}`" for n in on]).distinct().toArrow()
            return pa.table({n: keys.column(n).cast(types[n]) for n in on})

        return collect

    def execute_merge(self, table: TableState, rows: DataFrame, plan: MergePlan) -> MergeOutcome:
        source = _frame(rows)
        local = self._local_source(source, plan)
        if local is not None:
            done = _DRIVER.execute_merge(table, local, plan)
            return replace(done, executed_by="spark-driver")
        return rowlevel.execute_merge(self.spark, table, source, plan)

    def _small(self, tasks: Sequence[FileScanTask], schema: Schema | None) -> bool:
        """Whether the columns of ``schema`` (None: whole files) of ``tasks`` are few
        enough bytes for the driver."""
        limit = self.local_bytes_max
        if limit <= 0:
            return False
        ids = None if schema is None else {i for i, _ in _field_ids(schema)}
        total = 0
        for t in tasks:
            sizes = t.file.column_sizes
            if ids is None or not sizes:
                total += t.file.file_size_in_bytes
            else:
                total += sum(n for fid, n in sizes.items() if fid in ids)
            if total > limit:
                return False
        return True

    def _local_source(self, source: DataFrame, plan: MergePlan) -> pa.Table | None:
        """The merge's source as an Arrow table when the merge runs on the driver."""
        if self.local_rows_max <= 0 or any(c.condition or c.set for c in plan.clauses):
            return None
        if not self._small(plan.tasks, plan.target_schema if plan.merge_on_read else None):
            return None
        return self._few_rows(source, self.local_rows_max)

    def compact(
        self, table: TableState, plan: CompactionPlan, on_group: Callable[[int], None]
    ) -> CompactedFiles:
        return compaction.compact(self.spark, table, plan, on_group)

    def merge_deletes(self, table: TableState, tasks: Sequence[FileScanTask]) -> DeleteFiles:
        return compaction.merge_deletes(self.spark, table, tasks)

    def delete_files(self, io: FileIO, paths: Sequence[str], workers: int) -> tuple[str, ...]:
        return compaction.delete_files(self.spark, io, paths, workers)
