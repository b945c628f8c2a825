"""The Spark user verbs for writing rows: append, overwrite by filter, dynamic
partition overwrite, each committed as one snapshot (row-level changes by filter or
key, merge-on-read or copy-on-write: :mod:`neve.spark.rowlevel`).

An overwrite by filter is copy-on-write: neve plans on the driver
(:func:`neve.planning.delete.plan_delete`); files a filter matches entirely are
dropped from metadata alone; files it matches partly are read with Spark (each file
once, whole, deletes applied), the rows where the filter is not true are written back
as new files (in v3 with their row lineage), and everything is committed as one
snapshot with Iceberg-Java's conflict validation. If anything fails, every file
written is removed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession

from neve.arrow.write import rewrite_schema
from neve.errors import (
    ValidationError,
)
from neve.expressions import BooleanExpression
from neve.expressions.binding import bind
from neve.expressions.parser import to_expression
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spark.expression import to_spark_column
from neve.spark.job import cleanup_on_failure, write_data
from neve.spark.keys import check_new_keys
from neve.spark.reader import read_tasks
from neve.spark.session import check_session
from neve.spec.manifest import DataFile
from neve.spec.partition import PartitionSpec
from neve.spec.properties import read_property
from neve.spec.refs import MAIN_BRANCH
from neve.table.table import Table
from neve.table.transaction import Rewriter, Transaction

__all__ = [
    "MODES",
    "overwrite",
    "overwrite_partitions",
    "spark_rewriter",
    "write",
    "write_files",
]

MODES = ("append", "overwrite", "overwrite-partitions")


def write_files(
    df: DataFrame, table: Table, *, spec: PartitionSpec | None = None
) -> list[DataFile]:
    """Write ``df`` as data files of ``table`` (its default spec, or ``spec``) and
    return them, uncommitted. Add them with a transaction (``add_files``,
    ``overwrite_files``, ``replace_partitions``); delete them if you do not."""
    return write_data(df, table, spec=spec).files


def write(
    df: DataFrame,
    table: Table,
    mode: str = "append",
    filter: str | BooleanExpression | None = None,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> None:
    """Write ``df`` to ``table`` and commit, as one snapshot.

    ``mode``: ``append``; ``overwrite`` replaces the rows matching ``filter`` (all
    rows when None; files matched partly are rewritten with Spark);
    ``overwrite-partitions`` replaces exactly the partitions the new rows fall into.
    An append to a primary-key table refuses keys the rows hold twice or the table
    holds (:class:`neve.errors.DuplicateKeyError`) unless ``write.primary-key.check``
    is false; the check computes ``df`` once more (cache it if that is costly).
    """
    if mode not in MODES:
        raise ValidationError(f"unknown write mode {mode!r}; use one of {', '.join(MODES)}")
    if filter is not None and mode != "overwrite":
        raise ValidationError(f"a filter only applies to mode='overwrite', not {mode!r}")
    if mode == "overwrite":
        overwrite(df, table, filter, branch=branch, snapshot_properties=snapshot_properties)
        return
    if mode == "overwrite-partitions":
        overwrite_partitions(df, table, branch=branch, snapshot_properties=snapshot_properties)
        return
    md = table.metadata
    on = md.schema().identifier_field_names
    rebase = None
    if on and read_property(md.properties, "write.primary-key.check"):
        rebase = check_new_keys(df, table, on, branch=branch)  # before writing anything
    result = write_data(df, table)
    with cleanup_on_failure(table.io, [result]):
        txn = table.transaction()
        txn.add_files(
            result.files, branch=branch, snapshot_properties=snapshot_properties, rebase=rebase
        )
        txn.commit()


# -- one Spark write ------------------------------------------------------------------


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
        tasks: Sequence[FileScanTask],
        expr: BooleanExpression,
        case_sensitive: bool,
    ) -> list[DataFile]:
        view = (
            table.table.with_metadata(table.metadata) if isinstance(table, Transaction) else table
        )
        md = view.metadata
        rows_schema = rewrite_schema(md)
        scan = ScanPlan(md, view.io, case_sensitive=case_sensitive)  # the current schema
        rows = read_tasks(spark, scan, tasks, apply_residual=False, projected_schema=rows_schema)
        matches = to_spark_column(expr, md.schema(), case_sensitive)
        result = write_data(rows.filter(~matches), view, schema=rows_schema)
        written.add(result)
        return result.files

    return rewrite
