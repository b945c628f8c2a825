"""Which way Spark moves a table's data: Spark's own Parquet reader and writer through
Hadoop's filesystems (``native``), or neve's FileIO and pyarrow inside Spark's Python
tasks (``arrow``: Arrow batches in and out).

``spark.neve.io`` chooses: ``native``, ``arrow``, or ``auto`` (the default): local
files and every scheme Hadoop has a filesystem for (``hdfs://``, ``s3a://`` with the
user's own jars) go native; a scheme Hadoop cannot open (``s3://``, ``gs://`` on a pip
install of PySpark, which has no cloud jars) goes through neve's FileIO, which reaches
object stores without jars. The choice is logged once per scheme (logger
``neve.spark``) and shows in a read's plan (a scan of the ``neve-file-tasks`` data source
instead of a Parquet scan).
"""

from __future__ import annotations

import logging
import threading
from typing import Literal
from urllib.parse import urlparse

from pyspark.sql import SparkSession

from neve.errors import ValidationError

__all__ = ["IO_CONF", "IoMode", "io_mode"]

IO_CONF = "spark.neve.io"
IoMode = Literal["native", "arrow"]

_log = logging.getLogger("neve.spark")
_LOCAL = {"", "file"}
_lock = threading.Lock()
#: Hadoop's answer per (Spark application, scheme): whether it has a filesystem for it.
_HADOOP: dict[tuple[str, str], bool] = {}


def _hadoop_serves(spark: SparkSession, scheme: str) -> bool:
    key = (spark.sparkContext.applicationId, scheme)
    with _lock:
        found = _HADOOP.get(key)
    if found is not None:
        return found
    try:
        jvm = spark.sparkContext._jvm  # a classic session: ask Hadoop
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, conf)  # type: ignore[union-attr]
        found = True
    except Exception:  # UnsupportedFileSystemException, or no JVM to ask (Spark Connect)
        found = False
    with _lock:
        _HADOOP[key] = found
    mode = "Spark's Parquet reader and writer" if found else "neve's FileIO in Python tasks"
    _log.info("neve: %s:// tables are read and written through %s (%s=auto)", scheme, mode, IO_CONF)
    return found


def io_mode(spark: SparkSession, location: str) -> IoMode:
    """How Spark reads and writes the files under ``location`` (module docstring)."""
    setting = (spark.conf.get(IO_CONF, "auto") or "auto").strip().lower()
    if setting in ("native", "arrow"):
        return "native" if setting == "native" else "arrow"
    if setting != "auto":
        raise ValidationError(f"Spark setting {IO_CONF}={setting!r}: use auto, native or arrow")
    scheme = urlparse(location).scheme.lower()
    if len(scheme) == 1 or scheme in _LOCAL:  # a drive letter, or local
        return "native"
    return "native" if _hadoop_serves(spark, scheme) else "arrow"
