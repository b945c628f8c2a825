"""Reading planned tasks inside Spark's Python tasks, through neve's FileIO and the
pyarrow reader (:mod:`neve.arrow.reader`): the ``arrow`` way of
:mod:`neve.spark.io_mode`, for stores Hadoop cannot open.

The driver spreads the planned files over Spark tasks by size; each task reads its
files with their deletes applied (position deletes, deletion vectors, equality
deletes: the delete files the planner assigned to each file, read in that task),
schema evolution, name mapping, initial defaults and row lineage exactly as the pyarrow
engine reads them, and hands Arrow batches to Spark (the internal data source
``neve-file-tasks``: no pandas needed on the workers). With
``row_positions`` each row carries its file (as Spark names it,
:func:`neve.spark.paths.spark_file_uri`) and its position there, as the native reader
gives them, so merge-on-read works the same either way.
"""

from __future__ import annotations

import base64
import math
import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema as spark_arrow_schema

from neve.arrow.scan import task_batches
from neve.errors import ValidationError
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask, group_tasks
from neve.spark.paths import spark_file_uri
from neve.spark.schema import to_spark_schema
from neve.spec.schema import ROW_POSITION, Schema

__all__ = ["FileTasksSource", "read_in_tasks"]

#: About this many bytes of data files per Spark task.
_TASK_BYTES = 128 * 1024 * 1024


@dataclass
class _TaskGroup(InputPartition):
    index: int
    tasks: list[FileScanTask]


@dataclass(frozen=True)
class _Job:
    """What the reading tasks need: the scan (metadata and FileIO), the groups of
    whole-file tasks, and how to read them."""

    scan: ScanPlan
    groups: list[list[FileScanTask]]
    read_schema: Schema
    apply_residual: bool
    row_positions: bool
    file_column: str
    pos_column: str


class _Reader(DataSourceReader):
    def __init__(self, job: _Job, target: pa.Schema) -> None:
        self.job = job
        self.target = target

    def partitions(self) -> Sequence[InputPartition]:
        return [_TaskGroup(i, g) for i, g in enumerate(self.job.groups)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        # runs in a Spark task: its group's files read with pyarrow through neve's FileIO
        if not isinstance(partition, _TaskGroup):  # Spark's empty-scan placeholder
            return
        job = self.job
        for task in partition.tasks:
            where = pa.scalar(spark_file_uri(task.file.file_path))
            for rows in task_batches(job.scan, task, job.read_schema, job.apply_residual):
                if not rows.num_rows:
                    continue
                if job.row_positions:
                    pos = rows.column(ROW_POSITION.name)
                    rows = rows.drop_columns([ROW_POSITION.name])
                    rows = rows.append_column(
                        job.file_column, pa.repeat(where, rows.num_rows)
                    ).append_column(job.pos_column, pos)
                yield rows.cast(self.target)


class FileTasksSource(DataSource):
    """An internal data source reading planned file tasks (handed over pickled in the
    ``payload`` option by :func:`read_in_tasks`)."""

    @classmethod
    def name(cls) -> str:
        return "neve-file-tasks"

    def _job(self) -> _Job:
        raw = self.options.get("payload")
        if raw is None:
            raise ValidationError(
                "the neve-file-tasks data source is internal; read tables with "
                "neve.spark.read or format('neve')"
            )
        job: _Job = pickle.loads(base64.b64decode(raw))
        return job

    def reader(self, schema: T.StructType) -> DataSourceReader:
        return _Reader(self._job(), spark_arrow_schema(schema, timezone="UTC"))


def read_in_tasks(
    spark: SparkSession,
    scan: ScanPlan,
    files: Sequence[FileScanTask],
    *,
    apply_residual: bool,
    projected: Schema,
    row_positions: bool,
    file_column: str,
    pos_column: str,
) -> DataFrame:
    """The live rows of whole-file ``files`` (module docstring); the columns of
    ``projected``, and with ``row_positions`` ``file_column`` and ``pos_column``."""
    out = to_spark_schema(projected)
    if row_positions:
        out = out.add(file_column, T.StringType(), False).add(pos_column, T.LongType(), False)
    size = sum(t.file.file_size_in_bytes for t in files)
    count = max(
        math.ceil(size / _TASK_BYTES), min(len(files), spark.sparkContext.defaultParallelism)
    )
    whole = [replace(t, start=0, length=t.file.file_size_in_bytes) for t in files]
    job = _Job(
        scan,
        group_tasks(whole, count),
        Schema(*projected.fields, ROW_POSITION) if row_positions else projected,
        apply_residual,
        row_positions,
        file_column,
        pos_column,
    )
    payload = base64.b64encode(pickle.dumps(job)).decode("ascii")
    spark.dataSource.register(FileTasksSource)
    return spark.read.format(FileTasksSource.name()).schema(out).option("payload", payload).load()
