"""The Spark user verbs: append, overwrite by filter, dynamic partition overwrite,
DELETE, UPDATE, MERGE and upsert of DataFrames, each committed as one snapshot.

Each is a transaction on the Spark engine (:class:`neve.spark.engine.SparkEngine`):
the table layer plans, validates and commits exactly as for the pyarrow engine
(:class:`neve.table.transaction.Transaction`), Spark reads, joins and writes. If
anything fails, every file written is removed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame, SparkSession

from neve.errors import ValidationError
from neve.expressions import BooleanExpression
from neve.spark.engine import SparkEngine
from neve.spark.job import write_data
from neve.spec.manifest import DataFile
from neve.spec.partition import PartitionSpec
from neve.spec.refs import MAIN_BRANCH
from neve.table.merge import MergeBuilder, MergeResult
from neve.table.table import Table
from neve.table.transaction import Transaction

__all__ = [
    "MODES",
    "delete",
    "merge",
    "overwrite",
    "overwrite_partitions",
    "update",
    "upsert",
    "write",
    "write_files",
]

MODES = ("append", "overwrite", "overwrite-partitions")


def _now(spark: SparkSession, table: Table) -> Transaction[DataFrame]:
    """A transaction on the Spark engine that commits each change as it is staged."""
    return Transaction(table, SparkEngine(spark), autocommit=True)


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
    elif mode == "overwrite-partitions":
        overwrite_partitions(df, table, branch=branch, snapshot_properties=snapshot_properties)
    else:
        txn = _now(df.sparkSession, table)
        txn.append(df, branch=branch, snapshot_properties=snapshot_properties)


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
    ``df``, as one snapshot; files the filter matches partly are read with Spark (each
    file once, whole, deletes applied) and their other rows written back (in v3 with
    their row lineage)."""
    _now(df.sparkSession, table).overwrite(
        df,
        filter,
        branch=branch,
        case_sensitive=case_sensitive,
        snapshot_properties=snapshot_properties,
    )


def overwrite_partitions(
    df: DataFrame,
    table: Table,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> None:
    """Replace exactly the partitions the rows of ``df`` fall into (all data when the
    table is unpartitioned), as one snapshot."""
    _now(df.sparkSession, table).dynamic_partition_overwrite(
        df, branch=branch, snapshot_properties=snapshot_properties
    )


def delete(
    spark: SparkSession,
    table: Table,
    filter: str | BooleanExpression,
    *,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
    snapshot_properties: Mapping[str, str] | None = None,
) -> None:
    """Delete the rows matching ``filter`` as one snapshot: deletion vectors (v3) or
    position delete files (v2) written on the executors when ``write.delete.mode`` is
    merge-on-read, else a copy-on-write rewrite with Spark."""
    _now(spark, table).delete(
        filter,
        branch=branch,
        case_sensitive=case_sensitive,
        snapshot_properties=snapshot_properties,
    )


def update(
    spark: SparkSession,
    table: Table,
    set: Mapping[str, str | Column],
    filter: str | BooleanExpression | None = None,
    *,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
    snapshot_properties: Mapping[str, str] | None = None,
) -> int:
    """Set columns to Spark SQL expressions (``set={"qty": "qty + 1"}``, or Columns)
    in the rows matching ``filter``, as one snapshot; returns the rows updated."""
    return _now(spark, table).update(
        set,
        filter,
        branch=branch,
        case_sensitive=case_sensitive,
        snapshot_properties=snapshot_properties,
    )


def merge(
    spark: SparkSession, source: DataFrame, table: Table, on: Sequence[str] | None = None
) -> MergeBuilder:
    """A MERGE of the DataFrame ``source`` into ``table`` on ``on`` (default: the
    primary key), joined on the executors; conditions and ``set`` values are Spark SQL
    over ``source.<column>`` and ``target.<column>``. ``execute()`` commits it."""
    return _now(spark, table).merge(source, on)


def upsert(
    spark: SparkSession,
    source: DataFrame,
    table: Table,
    on: Sequence[str] | None = None,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> MergeResult:
    """Update the rows whose key is in ``source`` with its rows, insert the others (on
    the primary key through the table's merge engine), as one snapshot."""
    return _now(spark, table).upsert(
        source, on, branch=branch, snapshot_properties=snapshot_properties
    )
