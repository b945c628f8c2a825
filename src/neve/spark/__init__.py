"""neve's Spark data plane: neve plans and commits on the driver, Spark reads and
writes Parquet natively in the JVM.

    from neve.spark import local_session, read, write, delete
    spark = local_session()                      # or configure(SparkSession.builder)
    write(df, table)                             # append; mode="overwrite" | "overwrite-partitions"
    read(spark, table, filter="ts >= '2024-01-01'").groupBy(...).count()
    delete(spark, table, "id < 100")             # merge-on-read (v2+) on Spark
    maintenance.expire_snapshots(spark, table, older_than=...)  # deletes on the executors
"""

from __future__ import annotations

from neve.spark import maintenance
from neve.spark.changelog import changes
from neve.spark.commands import (
    delete,
    merge,
    overwrite,
    overwrite_partitions,
    update,
    upsert,
    write,
    write_files,
)
from neve.spark.datasource import NeveDataSource, register_datasource
from neve.spark.engine import SparkEngine
from neve.spark.reader import read, read_tasks, register_view
from neve.spark.schema import from_spark_schema, to_spark_schema, to_spark_type
from neve.spark.session import REQUIRED_CONF, check_session, configure, local_session
from neve.spark.stream_upsert import upsert_batches

__all__ = [
    "REQUIRED_CONF",
    "NeveDataSource",
    "SparkEngine",
    "changes",
    "check_session",
    "configure",
    "delete",
    "from_spark_schema",
    "local_session",
    "maintenance",
    "merge",
    "overwrite",
    "overwrite_partitions",
    "read",
    "read_tasks",
    "register_datasource",
    "register_view",
    "to_spark_schema",
    "to_spark_type",
    "update",
    "upsert",
    "upsert_batches",
    "write",
    "write_files",
]
