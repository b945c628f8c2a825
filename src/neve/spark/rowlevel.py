"""Copy-on-write row-level changes with Spark: delete, overwrite by filter and dynamic
partition overwrite.

neve plans on the driver (:func:`neve.table.operations.plan_delete`): files a filter
matches entirely are dropped from metadata alone; files it matches partly are read
with Spark (deletes applied), the rows where the filter is not true are written back
as new files, and everything is committed as one snapshot with Iceberg-Java's
conflict validation. If anything fails, every file written is removed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession

from neve.expressions import BooleanExpression
from neve.expressions.binding import bind
from neve.spark.session import check_session
from neve.spark.writer import cleanup_on_failure, write_data
from neve.spec.manifest import DataFile
from neve.spec.refs import MAIN_BRANCH
from neve.table.scan import to_expression
from neve.table.transaction import Rewriter

if TYPE_CHECKING:
    from neve.table.table import Table

__all__ = ["delete", "overwrite", "overwrite_partitions"]


def delete(
    spark: SparkSession,
    table: Table,
    filter: str | BooleanExpression,
    *,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
    snapshot_properties: Mapping[str, str] | None = None,
) -> None:
    """Delete the rows matching ``filter`` (copy-on-write), as one snapshot."""
    check_session(spark)
    expr = to_expression(filter)
    bind(table.metadata.schema(), expr, case_sensitive)
    with cleanup_on_failure(table.io, []) as written:
        txn = table.transaction()
        txn.overwrite_files(
            [],
            expr,
            branch=branch,
            case_sensitive=case_sensitive,
            snapshot_properties=snapshot_properties,
            rewriter=spark_rewriter(spark, table, written),
        )
        txn.commit()


def overwrite(
    df: DataFrame,
    table: Table,
    filter: str | BooleanExpression | None = None,
    *,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
    snapshot_properties: Mapping[str, str] | None = None,
) -> None:
    """Replace the rows matching ``filter`` (all rows when None) with the rows of
    ``df``, as one snapshot."""
    spark = df.sparkSession
    check_session(spark)
    expr = to_expression(filter)
    bind(table.metadata.schema(), expr, case_sensitive)  # before anything is written
    result = write_data(df, table)
    with cleanup_on_failure(table.io, [result]) as written:
        txn = table.transaction()
        txn.overwrite_files(
            result.files,
            expr,
            branch=branch,
            case_sensitive=case_sensitive,
            snapshot_properties=snapshot_properties,
            rewriter=spark_rewriter(spark, table, written),
        )
        txn.commit()


def overwrite_partitions(
    df: DataFrame,
    table: Table,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> None:
    """Replace exactly the partitions the rows of ``df`` fall into (all data when the
    table is unpartitioned), as one snapshot."""
    check_session(df.sparkSession)
    result = write_data(df, table)
    with cleanup_on_failure(table.io, [result]):
        txn = table.transaction()
        txn.replace_partitions(result.files, branch=branch, snapshot_properties=snapshot_properties)
        txn.commit()


def spark_rewriter(spark: SparkSession, table: Table, written: cleanup_on_failure) -> Rewriter:
    """A rewriter (see :class:`neve.table.transaction.Transaction.overwrite_files`)
    that reads the files with Spark and writes the rows the filter does not match;
    the directories it writes are registered with ``written`` for cleanup."""

    def rewrite(
        snapshot_id: int,
        files: Sequence[DataFile],
        expr: BooleanExpression,
        case_sensitive: bool,
    ) -> list[DataFile]:
        from neve.spark.expression import to_spark_column
        from neve.spark.reader import read_tasks

        scan = table.scan(filter=expr, snapshot_id=snapshot_id, case_sensitive=case_sensitive)
        wanted = {f.file_path for f in files}
        tasks = [t for t in scan.plan_files() if t.file.file_path in wanted]
        rows = read_tasks(spark, scan, tasks, apply_residual=False)
        matches = to_spark_column(expr, scan.projected_schema(), case_sensitive)
        result = write_data(rows.filter(~matches), table)
        written.add(result)
        return result.files

    return rewrite
