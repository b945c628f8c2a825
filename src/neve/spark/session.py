"""The Spark settings neve's data plane relies on, and a session builder with them.

Use :func:`configure` on your own ``SparkSession.builder`` (or pass the pairs of
:data:`REQUIRED_CONF` to ``spark-submit --conf``); :func:`local_session` builds a
local session for tools, tests and the demo.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

from neve.errors import ValidationError

__all__ = ["REQUIRED_CONF", "check_session", "configure", "local_session"]

#: Settings without which Spark would read or write the wrong thing.
REQUIRED_CONF: Mapping[str, str] = {
    # match Parquet columns by Iceberg field id, never by name
    "spark.sql.parquet.fieldId.read.enabled": "true",
    "spark.sql.parquet.fieldId.write.enabled": "true",
    # Iceberg stores timestamps as INT64 micros (Spark's default is INT96)
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # dates and timestamps before 1582 are proleptic Gregorian in Iceberg
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInRead": "CORRECTED",
    # no _SUCCESS marker files inside table folders
    "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
    "spark.hadoop.parquet.summary.metadata.level": "NONE",
}


def configure(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Apply :data:`REQUIRED_CONF` to a session builder."""
    for key, value in REQUIRED_CONF.items():
        builder = builder.config(key, value)
    return builder


def local_session(
    master: str = "local[2]",
    app_name: str = "neve",
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A Spark session configured for neve. Executors run this very Python, so that
    ``neve`` is importable on them."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = configure(SparkSession.builder.master(master).appName(app_name))
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def check_session(spark: SparkSession) -> None:
    """Refuse to run on a session missing a setting neve needs for correct results."""
    conf = spark.conf
    wrong = [
        f"{key}={value}"
        for key, value in REQUIRED_CONF.items()
        if key.startswith("spark.sql.") and (conf.get(key, None) or "").lower() != value.lower()
    ]
    if wrong:
        raise ValidationError(
            "this Spark session lacks settings neve needs: "
            + ", ".join(wrong)
            + "; build it with neve.spark.configure(SparkSession.builder) or set them with "
            "spark.conf.set(...)"
        )
