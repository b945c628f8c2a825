"""Table maintenance on Spark: the same actions as ``table.maintenance`` (planned and
committed on the driver, see :mod:`neve.table.maintenance`), with the files deleted by
Spark tasks, so that a large expiration or orphan clean-up spreads its deletes over the
cluster.

    from neve.spark import maintenance
    maintenance.expire_snapshots(spark, table, older_than="2024-01-01T00:00:00+00:00")
    maintenance.remove_orphan_files(spark, table, dry_run=True)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence

from pyspark.sql import SparkSession

from neve.io.fileio import FileIO
from neve.spark.session import check_session
from neve.table.maintenance import ExpireResult, Maintenance, OrphanResult, delete_files
from neve.table.table import Table

__all__ = ["expire_snapshots", "remove_orphan_files"]

#: Paths per Spark task.
_PATHS_PER_TASK = 1000


def _spark_deleter(spark: SparkSession) -> Callable[[FileIO, Sequence[str], int], tuple[str, ...]]:
    def run(io: FileIO, paths: Sequence[str], workers: int) -> tuple[str, ...]:
        if not paths:
            return ()
        slices = max(1, min(len(paths) // _PATHS_PER_TASK + 1, 4 * max(1, workers)))

        def part(items: Iterable[str]) -> Iterable[str]:
            return delete_files(io, list(items), 4)

        failed = spark.sparkContext.parallelize(list(paths), slices).mapPartitions(part)
        return tuple(sorted(failed.collect()))

    return run


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
    return Maintenance(table, _spark_deleter(spark)).expire_snapshots(
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
    return Maintenance(table, _spark_deleter(spark)).remove_orphan_files(
        older_than,
        location,
        dry_run,
        equal_schemes,
        equal_authorities,
        prefix_mismatch_mode,
        max_concurrent_deletes,
    )
