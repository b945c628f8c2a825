"""Table maintenance on Spark: the same actions as ``table.maintenance`` (planned and
committed on the driver by the same planners, see :mod:`neve.table.maintenance`), with
the data work done by Spark:

- ``expire_snapshots`` and ``remove_orphan_files`` delete files in Spark tasks;
- ``rewrite_data_files`` reads each planned group's files with their deletes applied
  and each row's position (:func:`neve.spark.reader.read_tasks`) and writes the live
  rows with the distributed writer (:func:`neve.spark.job.write_data`) into files of
  the plan's target size, keeping where every row came from, so deletes committed
  meanwhile are carried over to the new files as on the pyarrow engine; v3 rows keep
  their ``_row_id`` and ``_last_updated_sequence_number``; the sort strategy ranges
  and sorts by a sort order or by z-order (the z-values computed in Spark tasks by
  :func:`neve.arrow.sorting.zorder_key`);
- ``rewrite_position_delete_files`` merges each data file's position deletes in Spark
  tasks (the pyarrow engine's merge, run on the executors);
- ``rewrite_manifests`` runs on the driver: manifests are metadata, small next to the
  data, and the pyarrow rewrite reads them with the process-wide manifest cache.

Each commits one ``replace`` snapshot through the one commit path.

    from neve.spark import maintenance
    maintenance.rewrite_data_files(spark, table, options={"min-input-files": "2"})
    maintenance.expire_snapshots(spark, table, older_than="2024-01-01T00:00:00+00:00")
    maintenance.remove_orphan_files(spark, table, dry_run=True)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from pyspark.sql import SparkSession

from neve.expressions import BooleanExpression
from neve.spark.engine import SparkEngine
from neve.spark.session import check_session
from neve.spec.refs import MAIN_BRANCH
from neve.spec.sort_order import SortOrder
from neve.table.compaction import Progress
from neve.table.maintenance import (
    ExpireResult,
    Maintenance,
    OrphanResult,
    RewriteDataResult,
    RewriteDeletesResult,
    RewriteManifestsResult,
)
from neve.table.table import Table

__all__ = [
    "expire_snapshots",
    "remove_orphan_files",
    "rewrite_data_files",
    "rewrite_manifests",
    "rewrite_position_delete_files",
]


def expire_snapshots(
    spark: SparkSession,
    table: Table,
    older_than: int | str | dt.datetime | None = None,
    retain_last: int | None = None,
    snapshot_ids: Sequence[int] = (),
    clean_expired_metadata: bool = False,
    dry_run: bool = False,
    max_concurrent_deletes: int = 8,
) -> ExpireResult:
    """:meth:`neve.table.maintenance.Maintenance.expire_snapshots`, files deleted by
    Spark tasks."""
    check_session(spark)
    return Maintenance(table, SparkEngine(spark)).expire_snapshots(
        older_than,
        retain_last,
        snapshot_ids,
        clean_expired_metadata,
        dry_run,
        max_concurrent_deletes,
    )


def remove_orphan_files(
    spark: SparkSession,
    table: Table,
    older_than: int | str | dt.datetime | None = None,
    location: str | None = None,
    dry_run: bool = False,
    equal_schemes: Mapping[str, str] | None = None,
    equal_authorities: Mapping[str, str] | None = None,
    prefix_mismatch_mode: str = "error",
    max_concurrent_deletes: int = 8,
) -> OrphanResult:
    """:meth:`neve.table.maintenance.Maintenance.remove_orphan_files`, files deleted by
    Spark tasks."""
    check_session(spark)
    return Maintenance(table, SparkEngine(spark)).remove_orphan_files(
        older_than,
        location,
        dry_run,
        equal_schemes,
        equal_authorities,
        prefix_mismatch_mode,
        max_concurrent_deletes,
    )


def rewrite_data_files(
    spark: SparkSession,
    table: Table,
    where: str | BooleanExpression | None = None,
    options: Mapping[str, str] | None = None,
    strategy: str = "binpack",
    sort_order: str | SortOrder | None = None,
    branch: str = MAIN_BRANCH,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> RewriteDataResult:
    """:meth:`neve.table.maintenance.Maintenance.rewrite_data_files` with the groups'
    rows read and written by Spark (:func:`neve.spark.compaction.compact`); planned and committed on
    the driver; Spark's progress bar shows the jobs, ``progress(done, total)`` the
    file groups. ``strategy="sort"`` ranges and sorts the rows by ``sort_order``
    (default: the table's; ``"zorder(a, b)"`` for z-order). Deletes a concurrent
    commit added to a rewritten file are carried over to the new files, as on the
    pyarrow engine; a concurrent rewrite of such a file (a copy-on-write delete,
    another compaction) makes it fail with :class:`~neve.errors.CommitConflictError`,
    leaving no file behind."""
    check_session(spark)
    return Maintenance(table, SparkEngine(spark)).rewrite_data_files(
        where,
        options,
        branch=branch,
        dry_run=dry_run,
        strategy=strategy,
        sort_order=sort_order,
        progress=progress,
    )


def rewrite_position_delete_files(
    spark: SparkSession, table: Table, branch: str = MAIN_BRANCH, dry_run: bool = False
) -> RewriteDeletesResult:
    """:meth:`neve.table.maintenance.Maintenance.rewrite_position_delete_files` with
    the deletes merged in Spark tasks (:func:`neve.spark.compaction.merge_deletes`)."""
    check_session(spark)
    m = Maintenance(table, SparkEngine(spark))
    return m.rewrite_position_delete_files(branch, dry_run)


def rewrite_manifests(
    spark: SparkSession, table: Table, spec_id: int | None = None, branch: str = MAIN_BRANCH
) -> RewriteManifestsResult:
    """:meth:`neve.table.maintenance.Maintenance.rewrite_manifests`, run on the driver:
    manifests are small next to the data they list, and the driver reads them with
    the process-wide manifest cache, so a Spark job would only add its start-up."""
    check_session(spark)
    return table.maintenance.rewrite_manifests(spec_id, branch)
