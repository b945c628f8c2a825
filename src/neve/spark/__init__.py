"""neve's Spark data plane: neve plans and commits on the driver, Spark reads and
writes Parquet natively in the JVM."""

from __future__ import annotations

from neve.spark.schema import to_spark_schema, to_spark_type
from neve.spark.session import REQUIRED_CONF, check_session, configure, local_session

__all__ = [
    "REQUIRED_CONF",
    "check_session",
    "configure",
    "local_session",
    "to_spark_schema",
    "to_spark_type",
]
