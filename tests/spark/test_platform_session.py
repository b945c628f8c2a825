"""A SparkSession neve did not build -- the one spark-submit, a notebook or a platform
hands you -- works with neve's entry points, and a cluster whose executors lack neve
fails in one line.

Each case runs in its own Python process: a process has one SparkContext, and these
need sessions built differently from the suite's shared one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

_PLATFORM_SESSION = textwrap.dedent(
    """
    import datetime as dt, json, sys
    import pyarrow as pa
    from pyspark.sql import SparkSession
    import neve, neve.spark
    from neve.errors import ValidationError

    work = sys.argv[1]
    out = {}
    # a session as a platform builds it: nothing of neve's configured
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    out["before"] = spark.conf.get("spark.sql.parquet.fieldId.read.enabled")
    cat = neve.connect(f"sqlite:///{work}/c.db", f"{work}/wh")
    cat.create_namespace("db")
    table = cat.create_table(
        "db.t",
        pa.schema([pa.field("id", pa.int64()), pa.field("ts", pa.timestamp("us", "UTC"))]),
    )
    rows = [(1, dt.datetime(1500, 3, 1, 12, tzinfo=dt.timezone.utc)),
            (2, dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.timezone.utc))]
    df = spark.createDataFrame(rows, "id long, ts timestamp")
    neve.spark.write(df, table)                 # no configure(): applied by the entry point
    out["after"] = spark.conf.get("spark.sql.parquet.fieldId.read.enabled")
    got = neve.spark.read(spark, cat.load_table("db.t")).orderBy("id").collect()
    out["spark_rows"] = [[r.id, r.ts.isoformat()] for r in got]
    out["arrow_rows"] = [
        [r["id"], r["ts"].isoformat()]
        for r in cat.load_table("db.t").scan().to_arrow().sort_by("id").to_pylist()
    ]
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    out["success_files"] = hadoop.get("mapreduce.fileoutputcommitter.marksuccessfuljobs")

    # the owner of the session chose INT96 timestamps on purpose: refused, named
    other = spark.newSession()
    other.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
    snapshots = len(cat.load_table("db.t").snapshots())
    try:
        neve.spark.write(other.createDataFrame(rows, "id long, ts timestamp"), cat.load_table("db.t"))
        out["refused"] = None
    except ValidationError as exc:
        out["refused"] = str(exc)
    out["unchanged"] = len(cat.load_table("db.t").snapshots()) == snapshots
    # configure(session) is the consent: the same write then goes through
    neve.spark.configure(other)
    out["configured"] = other.conf.get("spark.sql.parquet.outputTimestampType")
    neve.spark.write(other.createDataFrame(rows, "id long, ts timestamp"), cat.load_table("db.t"))
    out["rows_after"] = cat.load_table("db.t").scan().to_arrow().num_rows
    print("RESULT " + json.dumps(out))
    """
)

_NO_NEVE_ON_EXECUTORS = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession
    import neve.spark
    from neve.errors import EngineSetupError

    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("OFF")
    try:
        neve.spark.check_session(spark)
        print("RESULT none")
    except EngineSetupError as exc:
        print("RESULT " + str(exc))
    """
)


def _run(script: str, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    results = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and results, done.stdout + done.stderr
    return results[-1].removeprefix("RESULT ")


def test_a_platform_session_works_without_configuring_and_keeps_owner_choices(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    out = json.loads(_run(_PLATFORM_SESSION, env, str(tmp_path)))
    assert out["before"] == "false" and out["after"] == "true"
    expected = [[1, "1500-03-01T12:00:00+00:00"], [2, "2024-05-06T07:08:09.123456+00:00"]]
    assert out["arrow_rows"] == expected
    assert [[i, ts.replace("+00:00", "")] for i, ts in out["arrow_rows"]] == [
        [i, ts.removesuffix("+00:00")] for i, ts in out["spark_rows"]
    ]
    assert out["success_files"] == "false"
    assert not list(tmp_path.rglob("_SUCCESS"))
    refused = out["refused"]
    assert refused is not None
    assert "spark.sql.parquet.outputTimestampType=INT96" in refused
    assert "neve.spark.configure(spark)" in refused
    assert out["unchanged"]
    assert out["configured"] == "TIMESTAMP_MICROS"
    assert out["rows_after"] == 4


def test_executors_without_neve_fail_in_one_line_naming_their_python(tmp_path: Path) -> None:
    # the interpreter the venv was made from: same Python version, no neve installed
    base = getattr(sys, "_base_executable", "") or ""
    probe = subprocess.run([base, "-c", "import neve"], capture_output=True, text=True, check=False)
    assert base and probe.returncode != 0, "the base interpreter must lack neve for this test"
    env = {**os.environ, "PYSPARK_PYTHON": base}
    message = _run(_NO_NEVE_ON_EXECUTORS, env)
    assert "\n" not in message
    assert message.startswith("Spark's executors cannot import neve")
    assert repr(base) in message and "docs/SPARK.md" in message
