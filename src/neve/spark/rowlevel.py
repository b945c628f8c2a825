"""Copy-on-write row-level changes with Spark: delete, overwrite by filter and dynamic
partition overwrite.

neve plans on the driver (:func:`neve.actions.overwrite.plan_delete`): files a filter
matches entirely are dropped from metadata alone; files it matches partly are read
with Spark (each file once, whole, deletes applied), the rows where the filter is not
true are written back as new files (in v3 with their row lineage), and everything is
committed as one snapshot with Iceberg-Java's conflict validation. If anything fails,
every file written is removed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession

from neve.arrow.write import rewrite_schema, rewrite_tasks
from neve.expressions import BooleanExpression
from neve.expressions.binding import bind
from neve.expressions.parser import to_expression
from neve.spark.session import check_session
from neve.spark.writer import cleanup_on_failure, write_data
from neve.spec.manifest import DataFile
from neve.spec.refs import MAIN_BRANCH
from neve.table.transaction import Rewriter, Transaction

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


def spark_rewriter(
    spark: SparkSession, table: Table | Transaction, written: cleanup_on_failure
) -> Rewriter:
    """A rewriter (see :class:`neve.table.transaction.Transaction.overwrite_files`)
    that reads the files with Spark and writes the rows the filter does not match;
    the directories it writes are registered with ``written`` for cleanup.

    ``table`` may be a transaction: files are then read and written as the changes
    staged in it so far leave the table. Each file is read once, whole; in v3 the
    rows copied keep their ``_row_id`` and ``_last_updated_sequence_number``."""

    def rewrite(
        snapshot_id: int,
        files: Sequence[DataFile],
        expr: BooleanExpression,
        case_sensitive: bool,
    ) -> list[DataFile]:
        from neve.spark.expression import to_spark_column
        from neve.spark.reader import read_tasks

        view = (
            table.table.with_metadata(table.metadata) if isinstance(table, Transaction) else table
        )
        md = view.metadata
        rows_schema = rewrite_schema(md)
        tasks = rewrite_tasks(view, snapshot_id, files)
        scan = view.scan(case_sensitive=case_sensitive)  # read with the current schema
        rows = read_tasks(spark, scan, tasks, apply_residual=False, projected_schema=rows_schema)
        matches = to_spark_column(expr, md.schema(), case_sensitive)
        result = write_data(rows.filter(~matches), view, schema=rows_schema)
        written.add(result)
        return result.files

    return rewrite
