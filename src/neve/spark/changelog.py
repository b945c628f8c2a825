"""Changelog reads on Spark: the driver plans the change tasks
(:mod:`neve.planning.changelog`), Spark tasks read them with the pyarrow reader
(:func:`neve.arrow.changelog.read_change_task`: the rows of inserted and deleted files,
and the rows a new deletion vector marks, read back by position), and Spark removes
the carry-over rows, pairs updates by key and collapses net changes with window
functions, by the same rules as :mod:`neve.arrow.changelog`.

Rows are compared whole through their JSON text (``to_json`` with microsecond
timestamps), which tells ``-0.0`` from ``0.0`` and compares NaN equal to NaN, as the
pyarrow engine does; Spark's own equality would not.

:class:`ChangelogReader` is the ``changelog=true`` read of the ``neve`` data source
(one Spark task per snapshot, finished there with the pyarrow rules), and what a
streaming source in changelog mode reads per micro-batch.
"""

from __future__ import annotations

import base64
import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema as spark_arrow_schema

from neve.errors import ValidationError
from neve.io.fileio import FileIO
from neve.planning.changelog import (
    CHANGE_ORDINAL,
    CHANGE_TYPE,
    COMMIT_SNAPSHOT_ID,
    ChangelogPlan,
    ChangeTask,
    ChangeType,
)
from neve.spark.schema import to_spark_schema
from neve.spark.session import check_session
from neve.spec.refs import MAIN_BRANCH
from neve.spec.schema import Schema

if TYPE_CHECKING:
    from neve.table.table import Table

__all__ = [
    "LOCAL_ROWS_MAX",
    "ChangeTasksSource",
    "ChangelogReader",
    "changelog_spark_schema",
    "changes",
    "finish_changes_df",
    "read_change_tasks",
]

_CMP = "__neve_cmp"
_D = "__neve_d"
_I = "__neve_i"
_N = "__neve_n"
_INS = ChangeType.INSERT.value
_DEL = ChangeType.DELETE.value
#: Default bound of :func:`changes`' driver-side path, in planned rows.
LOCAL_ROWS_MAX = 500_000


#: Change tasks per Spark task when reading (small tasks share one).
_TASKS_PER_PARTITION = 4


def changelog_spark_schema(schema: Schema) -> T.StructType:
    """The Spark schema of a changelog of a table with ``schema``: its columns and
    ``_change_type``, ``_change_ordinal``, ``_commit_snapshot_id``."""
    out = to_spark_schema(schema)
    return (
        out.add(CHANGE_TYPE, T.StringType(), False)
        .add(CHANGE_ORDINAL, T.IntegerType(), False)
        .add(COMMIT_SNAPSHOT_ID, T.LongType(), False)
    )


def changes(
    spark: SparkSession,
    table: Table,
    start_snapshot_id: int | None = None,
    end_snapshot_id: int | None = None,
    start_time: Any = None,
    end_time: Any = None,
    columns: Sequence[str] | None = None,
    filter: str | None = None,
    compute_updates: bool = True,
    net_changes: bool = False,
    identifier_columns: Sequence[str] | None = None,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
    local_rows_max: int = LOCAL_ROWS_MAX,
) -> DataFrame:
    """The changelog of a range of snapshots as a Spark DataFrame: the same rows as
    ``table.changes(...)`` (same arguments), read and finished by Spark tasks.

    A changelog the plan says touches at most ``local_rows_max`` rows (rows of the
    inserted and removed files, and the rows new deletes mark) is read and finished by
    the pyarrow engine on the driver, which is many times faster than Spark jobs for a
    small change to a large table; ``0`` always uses Spark tasks."""
    check_session(spark)
    plan = table.plan_changes(
        start_snapshot_id,
        end_snapshot_id,
        start_time,
        end_time,
        filter=filter,
        identifier_columns=identifier_columns,
        branch=branch,
        case_sensitive=case_sensitive,
    )
    if plan.row_bound() <= local_rows_max:
        return _local_changes(
            spark, table.io, plan, columns, compute_updates, net_changes, case_sensitive
        )
    raw = read_change_tasks(spark, table.io, plan, plan.tasks)
    data = [f.name for f in plan.schema.fields]
    out = finish_changes_df(
        raw,
        data,
        list(plan.identifier_columns),
        compute_updates=compute_updates,
        net_changes=net_changes,
    )
    if columns is not None:
        names = [f.name for f in plan.schema.select(list(columns), case_sensitive).fields]
        out = out.select(*names, CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID)
    return out


def _local_changes(
    spark: SparkSession,
    io: FileIO,
    plan: ChangelogPlan,
    columns: Sequence[str] | None,
    compute_updates: bool,
    net_changes: bool,
    case_sensitive: bool,
) -> DataFrame:
    # the pyarrow data path runs on the driver here, for small changelogs only
    from neve.arrow.changelog import changelog_table

    names = None
    fields = plan.schema
    if columns is not None:
        fields = plan.schema.select(list(columns), case_sensitive)
        names = [f.name for f in fields.fields]
    rows = changelog_table(
        io, plan, columns=names, compute_updates=compute_updates, net_changes=net_changes
    )
    schema = changelog_spark_schema(Schema(*fields.fields))
    return _frame(spark, rows.cast(spark_arrow_schema(schema, timezone="UTC")), schema)


#: Session settings of :func:`_frame`'s hand-over; each is read by the call alone.
_THRESHOLD = "spark.sql.execution.arrow.localRelationThreshold"
_BATCH = "spark.sql.execution.arrow.maxRecordsPerBatch"


def _frame(spark: SparkSession, rows: pa.Table, schema: T.StructType) -> DataFrame:
    """``rows`` as a DataFrame: its Arrow batches, one per task, turned into rows by
    the tasks that use them. Spark's default for a table this small (a local relation)
    converts every row on the driver, in one thread, when the DataFrame is made, and
    then ships the rows inside the tasks: four times slower here. The two settings that
    choose the way are set for this call only and then restored (another thread making
    a DataFrame from Arrow meanwhile gets the same rows, made either way)."""
    conf = spark.conf
    tasks = max(1, spark.sparkContext.defaultParallelism)
    wanted = {_THRESHOLD: "0", _BATCH: str(max(1, -(-rows.num_rows // tasks)))}
    saved = {k: conf.get(k, None) for k in wanted}
    for k, value in wanted.items():
        conf.set(k, value)
    try:
        return spark.createDataFrame(rows, schema)
    finally:
        for k, old in saved.items():
            if old is None:
                conf.unset(k)
            else:
                conf.set(k, old)


def read_change_tasks(
    spark: SparkSession, io: FileIO, plan: ChangelogPlan, tasks: Sequence[ChangeTask]
) -> DataFrame:
    """The rows of ``tasks`` as read (``_change_type`` INSERT or DELETE, no carry-over
    removed, no pairing), read by Spark tasks through the ``neve-change-tasks`` data
    source (Arrow batches, no pandas needed on the workers)."""
    schema = changelog_spark_schema(plan.schema)
    if not tasks:
        return spark.createDataFrame([], schema)
    slim = replace(plan, snapshots=(), tasks=())
    groups = [
        list(tasks[i : i + _TASKS_PER_PARTITION])
        for i in range(0, len(tasks), _TASKS_PER_PARTITION)
    ]
    payload = base64.b64encode(pickle.dumps((io, slim, groups))).decode("ascii")
    spark.dataSource.register(ChangeTasksSource)
    return (
        spark.read.format(ChangeTasksSource.name()).schema(schema).option("payload", payload).load()
    )


@dataclass
class _TaskGroup(InputPartition):
    index: int
    tasks: list[ChangeTask]


class _TaskGroupReader(DataSourceReader):
    def __init__(
        self, io: FileIO, plan: ChangelogPlan, groups: list[list[ChangeTask]], schema: pa.Schema
    ) -> None:
        self.io = io
        self.plan = plan
        self.groups = groups
        self.arrow_schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        return [_TaskGroup(i, g) for i, g in enumerate(self.groups)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        # runs on Spark executors: the pyarrow data path is imported there
        from neve.arrow.changelog import tag_changes

        if not isinstance(partition, _TaskGroup):  # Spark's empty-scan placeholder
            return
        for t in partition.tasks:
            rows = tag_changes(self.io, self.plan, t)
            if rows.num_rows:
                yield from rows.cast(self.arrow_schema).to_batches()


class ChangeTasksSource(DataSource):
    """An internal data source reading planned change tasks (handed over pickled in the
    ``payload`` option by :func:`read_change_tasks`)."""

    @classmethod
    def name(cls) -> str:
        return "neve-change-tasks"

    def _payload(self) -> tuple[FileIO, ChangelogPlan, list[list[ChangeTask]]]:
        raw = self.options.get("payload")
        if raw is None:
            raise ValidationError(
                "the neve-change-tasks data source is internal; read changelogs with "
                "neve.spark.changes or format('neve') with option changelog=true"
            )
        io, plan, groups = pickle.loads(base64.b64decode(raw))
        return io, plan, groups

    def schema(self) -> T.StructType:
        return changelog_spark_schema(self._payload()[1].schema)

    def reader(self, schema: T.StructType) -> DataSourceReader:
        io, plan, groups = self._payload()
        return _TaskGroupReader(io, plan, groups, spark_arrow_schema(schema, timezone="UTC"))


def _key_col(name: str) -> Column:
    head, *rest = name.split(".")
    c = F.col(f"`{head}`")
    for part in rest:
        c = c.getField(part)
    return c


def finish_changes_df(
    df: DataFrame,
    data_columns: Sequence[str],
    key: Sequence[str],
    *,
    compute_updates: bool = True,
    net_changes: bool = False,
) -> DataFrame:
    """Carry-over rows removed, updates paired and net changes collapsed, in Spark
    (the rules of :mod:`neve.arrow.changelog`)."""
    opts = {
        "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
        "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
        "ignoreNullFields": "false",
    }
    data = [F.col(f"`{c}`") for c in data_columns]
    df = df.withColumn(_CMP, F.to_json(F.struct(*data), opts))
    is_del = (F.col(CHANGE_TYPE) == _DEL).cast("int")
    is_ins = (F.col(CHANGE_TYPE) == _INS).cast("int")
    keys = [_key_col(k) for k in key]
    if keys:
        # every window below partitions by the key (identical rows share it), so one
        # shuffle by the key serves them all
        df = df.repartition(*keys)
    # carry-over: identical rows of one snapshot, deleted and inserted, cancel one for
    # one (net changes without a key cancel them across the range, as in the pyarrow rules)
    if key or not net_changes:
        same_row = [*keys, F.col(CHANGE_ORDINAL), F.col(_CMP)]
        same = Window.partitionBy(*same_row)
        nth = Window.partitionBy(*same_row, F.col(CHANGE_TYPE)).orderBy(COMMIT_SNAPSHOT_ID)
        df = (
            df.withColumn(_D, F.sum(is_del).over(same))
            .withColumn(_I, F.sum(is_ins).over(same))
            .withColumn(_N, F.row_number().over(nth))
            .filter(F.col(_N) > F.least(F.col(_D), F.col(_I)))
            .drop(_D, _I, _N)
        )
    if net_changes:
        df = _net(df, keys)
    if keys and compute_updates:
        groups = keys if net_changes else [*keys, F.col(CHANGE_ORDINAL)]
        w = Window.partitionBy(*groups)
        df = df.withColumn(_D, F.sum(is_del).over(w)).withColumn(_I, F.sum(is_ins).over(w))
        message = (
            "cannot pair updates: a snapshot deleted or inserted more than one row with the "
            f"same key ({', '.join(key)}); pass identifier_columns= naming a unique key, or "
            "compute_updates=False"
        )
        paired = (F.col(_D) == 1) & (F.col(_I) == 1)
        df = df.withColumn(
            CHANGE_TYPE,
            F.when((F.col(_D) > 1) | (F.col(_I) > 1), F.raise_error(F.lit(message)))
            .when(paired & (F.col(CHANGE_TYPE) == _DEL), F.lit(ChangeType.UPDATE_BEFORE.value))
            .when(paired & (F.col(CHANGE_TYPE) == _INS), F.lit(ChangeType.UPDATE_AFTER.value))
            .otherwise(F.col(CHANGE_TYPE)),
        ).drop(_D, _I)
    return df.drop(_CMP)


def _net(df: DataFrame, keys: list[Column]) -> DataFrame:
    is_del = (F.col(CHANGE_TYPE) == _DEL).cast("int")
    is_ins = (F.col(CHANGE_TYPE) == _INS).cast("int")
    if not keys:
        # identical rows across the range: the first ones of each kind cancel
        same = Window.partitionBy(_CMP)
        nth = Window.partitionBy(_CMP, CHANGE_TYPE).orderBy(CHANGE_ORDINAL)
        return (
            df.withColumn(_D, F.sum(is_del).over(same))
            .withColumn(_I, F.sum(is_ins).over(same))
            .withColumn(_N, F.row_number().over(nth))
            .filter(F.col(_N) > F.least(F.col(_D), F.col(_I)))
            .drop(_D, _I, _N)
        )
    # per key: the row before the range (its first change, a delete) and the row at
    # the end (its last change, an insert); nothing when both exist and are equal
    order = [F.col(CHANGE_ORDINAL), is_ins]
    first = Window.partitionBy(*keys).orderBy(*order)
    last = Window.partitionBy(*keys).orderBy(*[c.desc() for c in order])
    kept = (
        df.withColumn(_D, F.row_number().over(first))
        .withColumn(_I, F.row_number().over(last))
        .filter(
            ((F.col(_D) == 1) & (F.col(CHANGE_TYPE) == _DEL))
            | ((F.col(_I) == 1) & (F.col(CHANGE_TYPE) == _INS))
        )
        .drop(_D, _I)
    )
    w = Window.partitionBy(*keys)
    return (
        kept.withColumn(_N, F.count(F.lit(1)).over(w))
        .withColumn(_D, F.min(_CMP).over(w))
        .withColumn(_I, F.max(_CMP).over(w))
        .filter(~((F.col(_N) == 2) & (F.col(_D) == F.col(_I))))
        .drop(_N, _D, _I)
    )


@dataclass
class _SnapshotChanges(InputPartition):
    """The change tasks of one snapshot (all snapshots' for net changes)."""

    index: int
    tasks: list[ChangeTask]


class ChangelogReader(DataSourceReader):
    """Reads a planned changelog in a data source: one Spark task per snapshot (one for
    the whole range with ``net_changes``), finished with the pyarrow rules. Picklable."""

    def __init__(
        self,
        io: FileIO,
        plan: ChangelogPlan,
        spark_schema: T.StructType,
        *,
        compute_updates: bool = True,
        net_changes: bool = False,
        columns: Sequence[str] | None = None,
    ) -> None:
        self.io = io
        self.plan = plan
        self.arrow_schema = spark_arrow_schema(spark_schema, timezone="UTC")
        self.compute_updates = compute_updates
        self.net_changes = net_changes
        self.columns = list(columns) if columns is not None else None

    def partitions(self) -> Sequence[InputPartition]:
        if self.net_changes:
            return [_SnapshotChanges(0, list(self.plan.tasks))] if self.plan.tasks else []
        by_ordinal: dict[int, list[ChangeTask]] = {}
        for t in self.plan.tasks:
            by_ordinal.setdefault(t.ordinal, []).append(t)
        return [_SnapshotChanges(i, by_ordinal[o]) for i, o in enumerate(sorted(by_ordinal))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        # runs on Spark executors: the pyarrow data path is imported there
        from neve.arrow.changelog import changelog_table

        if not isinstance(partition, _SnapshotChanges):  # Spark's empty-scan placeholder
            return
        plan = replace(self.plan, tasks=tuple(partition.tasks))
        out = changelog_table(
            self.io,
            plan,
            columns=self.columns,
            compute_updates=self.compute_updates,
            net_changes=self.net_changes,
        )
        if out.num_rows:
            yield from out.cast(self.arrow_schema).to_batches()
