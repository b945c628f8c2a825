"""The Spark settings neve's data plane relies on, and how a session gets them.

A session a platform hands you works as it is: every neve entry point calls
:func:`check_session`, which sets what the user left at Spark's defaults and checks
once that executors can import neve. :func:`configure` applies every setting to a
session builder or to a running session (overriding the user's own values);
:func:`local_session` builds a local session for tools, tests and the demo.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TypeVar

from pyspark.sql import SparkSession

from neve.errors import EngineSetupError, ValidationError

__all__ = ["REQUIRED_CONF", "check_session", "configure", "local_session"]

_Target = TypeVar("_Target", SparkSession, SparkSession.Builder)

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


def configure(target: _Target) -> _Target:
    """Apply :data:`REQUIRED_CONF` to a session builder, or to a running session.

    A builder gets every pair (``configure(SparkSession.builder).getOrCreate()``).
    A running session -- one that ``spark-submit``, a notebook or a platform handed
    you -- gets the SQL settings through ``spark.conf`` (overriding values set before:
    calling this is consent) and the Hadoop ones on its SparkContext's Hadoop
    configuration; settings that cannot change at run time (Spark Connect sessions
    have no SparkContext) raise :class:`EngineSetupError` naming the ``--conf`` flags
    to launch with."""
    if isinstance(target, SparkSession):
        _apply(target, override=True)
        return target
    builder = target
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
    """Make ``spark`` fit for neve, or refuse it: every neve entry point calls this.

    Settings the user left at Spark's default are set to the values neve needs (they
    only change how Parquet files with Iceberg field ids and timestamps are read and
    written, see docs/SPARK.md); a setting the user set explicitly to another value
    is refused, naming it and the fix (``neve.spark.configure(spark)``), since
    changing it would change the user's other jobs. The first call on a SparkContext
    also runs a one-task job that imports neve on an executor, so that a cluster
    whose Python lacks neve fails here in one line, not in a Py4J trace later."""
    _apply(spark, override=False)
    _probe_executors(spark)


def _apply(spark: SparkSession, *, override: bool) -> None:
    conf = spark.conf
    differ = [
        key
        for key, value in REQUIRED_CONF.items()
        if key.startswith("spark.sql.") and (conf.get(key) or "").lower() != value.lower()
    ]
    # which settings the owner set explicitly is asked only when one differs: listing
    # them walks the whole configuration over Py4J (~60 round trips and a Java
    # exception at its end, ~30 ms), which every read and write would otherwise pay
    # (``configure`` overrides every one: nothing to ask)
    explicit = _explicit_settings(spark) if differ and not override else set()
    refused: list[str] = []
    for key in differ:
        value = REQUIRED_CONF[key]
        if key in explicit:
            refused.append(f"{key}={conf.get(key)} (neve needs {value})")
            continue
        try:
            conf.set(key, value)
        except Exception as exc:  # Spark Connect or a locked-down platform
            raise _launch_error([key], exc) from exc
    if refused:
        raise ValidationError(
            "this Spark session sets " + ", ".join(refused) + "; call "
            "neve.spark.configure(spark) to switch them for this session, or launch "
            "without them (docs/SPARK.md, section 2)"
        )
    _apply_hadoop(spark, override=override)


def _explicit_settings(spark: SparkSession) -> set[str]:
    """The SQL settings the session's owner set (not Spark's defaults)."""
    try:
        return set(spark.conf.getAll)
    except Exception:  # older or remote sessions: treat every setting as explicit
        return {k for k in REQUIRED_CONF if spark.conf.get(k, None) is not None}


def _apply_hadoop(spark: SparkSession, *, override: bool) -> None:
    """The ``spark.hadoop.*`` settings are static Spark settings, but Spark's file
    writers read them from the SparkContext's Hadoop configuration, which can change
    at run time on a classic (non-Connect) session."""
    keys = [k for k in REQUIRED_CONF if k.startswith("spark.hadoop.")]
    try:
        hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    except Exception as exc:  # Spark Connect: no SparkContext on the client
        missing = [k for k in keys if spark.conf.get(k, None) != REQUIRED_CONF[k]]
        if missing:
            raise _launch_error(missing, exc) from exc
        return
    for key in keys:
        name = key.removeprefix("spark.hadoop.")
        current = hadoop.get(name)
        if current is None or override:
            hadoop.set(name, REQUIRED_CONF[key])
        elif str(current).lower() != REQUIRED_CONF[key].lower():
            raise ValidationError(
                f"this Spark session's Hadoop configuration sets {name}={current} "
                f"(neve needs {REQUIRED_CONF[key]}); call neve.spark.configure(spark) or "
                f"launch with --conf {key}={REQUIRED_CONF[key]}"
            )


def _launch_error(keys: list[str], exc: BaseException) -> EngineSetupError:
    flags = " ".join(f"--conf {k}={REQUIRED_CONF[k]}" for k in keys)
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return EngineSetupError(
        f"this Spark session does not let neve set {', '.join(keys)} at run time "
        f"({first}); launch it with {flags} (or put them in spark-defaults.conf)"
    )


#: SparkContexts (by application id) whose executors were seen importing neve.
_PROBED: set[str] = set()


def _import_neve(_: object) -> str:
    # runs on an executor: unpickling this function imports neve.spark.session there
    return sys.executable


def _probe_executors(spark: SparkSession) -> None:
    try:
        sc = spark.sparkContext
    except Exception:  # Spark Connect: executors are not reachable from here
        return
    app = sc.applicationId
    if app in _PROBED:
        return
    try:
        sc.parallelize([0], 1).map(_import_neve).collect()
    except Exception as exc:
        text = str(exc)
        if "No module named 'neve'" in text or "No module named neve" in text:
            python = sc.pythonExec or "python3"
            raise EngineSetupError(
                f"Spark's executors cannot import neve (their Python is {python!r}); "
                "install neve there or point spark.pyspark.python / PYSPARK_PYTHON at a "
                "Python that has it: docs/SPARK.md, section 1"
            ) from exc
        raise
    _PROBED.add(app)
