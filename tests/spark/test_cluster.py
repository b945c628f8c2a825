"""neve on a real Spark standalone cluster: a master and two workers in their own JVMs,
and a driver in its own process. The driver creates a partitioned table, writes it
through Spark, reads it back, and reports which processes did the work; the rows must
be right and the work must have run in at least two executors, none of them the driver.

Run as a script (``python test_cluster.py --driver <master> <dir>``) this file is the
driver program.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROWS = 2000
CATS = 4
RESULT_MARK = "NEVE-CLUSTER-RESULT "


# -- the driver program ---------------------------------------------------------------------


def _executor_jvm(pid: int) -> int | None:
    """The nearest ``java`` ancestor of a process (the executor of a Python worker)."""
    while pid > 1:
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "java":
                    return pid
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return None
    return None


def _probe(rows: Any) -> list[dict[str, Any]]:
    n = id_sum = 0
    for row in rows:
        n += 1
        id_sum += row["id"]
    pid = os.getpid()
    return [
        {
            "pid": pid,
            "executor_pid": _executor_jvm(pid),
            "cwd": os.getcwd(),
            "host": socket.gethostname(),
            "rows": n,
            "id_sum": id_sum,
        }
    ]


def _wait_for_executors(spark: Any, count: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        # the driver is listed too
        n = int(spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()) - 1
        if n >= count or time.monotonic() > deadline:
            return n
        time.sleep(0.25)


def _round_trip(spark: Any, db: str, warehouse: str, properties: dict[str, str]) -> dict[str, Any]:
    """Create a partitioned table in ``warehouse``, write it through Spark, read it back;
    what the driver and the executors saw."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    import neve

    catalog_uri = f"sqlite:///{db}"
    catalog = neve.connect(catalog_uri, warehouse, **properties)
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.events",
        pa.schema(
            [
                pa.field("id", pa.int64(), nullable=False),
                pa.field("cat", pa.string()),
                pa.field("v", pa.float64()),
            ]
        ),
        partition_by=["cat"],
    )
    df = spark.range(0, ROWS, numPartitions=4).select(
        F.col("id"),
        F.concat(F.lit("c"), (F.col("id") % CATS).cast("string")).alias("cat"),
        (F.col("id") * 0.5).alias("v"),
    )

    path = os.environ.get("NEVE_CLUSTER_PATH", "auto")
    if path == "auto":
        try:
            import neve.spark.commands
            import neve.spark.reader

            path = "native"
        except ImportError:
            path = "datasource"
    if path == "native":
        from neve.spark.commands import write
        from neve.spark.reader import read

        write(df, table, mode="append")
        back = read(spark, table.refresh())
    else:
        from neve.spark.datasource import register_datasource

        register_datasource(spark)
        options = {"uri": catalog_uri, "warehouse": warehouse}
        df.write.format("neve").options(**options).mode("append").save("db.events")
        back = spark.read.format("neve").options(**options).load("db.events")

    table.refresh()
    pure = table.scan().to_arrow()
    # one job reads the table back and tells which processes read which rows
    probes = back.rdd.mapPartitions(_probe).collect()
    files = table.scan().plan_files()
    return {
        "path": path,
        "data_files": len(files),
        "data_file_scheme": files[0].file.file_path.split("://")[0]
        if "://" in files[0].file.file_path
        else "file",
        "partitions": sorted({str(f.file.partition[0]) for f in files}),
        "neve_rows": pure.num_rows,
        "neve_sum": sum(pure.column("id").to_pylist()),
        "spark_rows": sum(p["rows"] for p in probes),
        "spark_sum": sum(p["id_sum"] for p in probes),
        "probes": probes,
    }


def driver(master: str, work: str) -> dict[str, Any]:
    from pyspark.sql import SparkSession

    from neve.spark.session import check_session, configure

    started = time.monotonic()
    timings: dict[str, float] = {}

    def lap(name: str) -> None:
        timings[name] = round(time.monotonic() - started - sum(timings.values()), 2)

    builder = configure(SparkSession.builder.master(master).appName("neve-cluster-test"))
    for key, value in {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.memory": "512m",
        "spark.executor.memory": "512m",
        "spark.executor.cores": "1",
        "spark.cores.max": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "4",
        "spark.sql.adaptive.enabled": "false",
    }.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    check_session(spark)
    lap("session")
    executors = _wait_for_executors(spark, 2, 60)
    lap("executors")

    # the local warehouse, and an object store when the test gives one (its settings
    # travel with the table's FileIO)
    stores = [{"warehouse": f"{work}/warehouse", "properties": {}}]
    stores += json.loads(os.environ.get("NEVE_CLUSTER_STORES", "[]"))
    tables = [
        _round_trip(spark, f"{work}/catalog{i}.db", **store) for i, store in enumerate(stores)
    ]
    lap("tables")
    result = {
        "executors_registered": executors,
        "driver_pid": os.getpid(),
        "driver_jvm_pid": int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()),  # type: ignore[union-attr]
        "tables": tables,
        "timings": timings,
    }
    spark.stop()
    return result


# -- the test ---------------------------------------------------------------------------------


def _cluster_helpers() -> tuple[Any, Any]:
    """cluster.py next to this file, however pytest set up sys.path."""
    spec = importlib.util.spec_from_file_location(
        "neve_tests_spark_cluster", Path(__file__).with_name("cluster.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module.cluster_env, module.standalone_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A master and two workers, shared by this module's drivers."""
    _, standalone_cluster = _cluster_helpers()
    with standalone_cluster(tmp_path_factory.mktemp("standalone") / "cluster") as running:
        yield running


def _run_driver(cluster: Any, tmp_path: Path, **env: str) -> dict[str, Any]:
    """Run the driver program against the cluster; its result."""
    cluster_env, _ = _cluster_helpers()
    work = tmp_path / "shared"
    work.mkdir()
    process = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--driver", cluster.master_url, str(work)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=cluster_env(**env),
        start_new_session=True,
    )
    try:
        out, _ = process.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate()
        pytest.fail(f"the driver timed out:\n{out.decode(errors='replace')[-5000:]}")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    text = out.decode(errors="replace")
    assert process.returncode == 0, f"{cluster.logs()}\n\ndriver failed:\n{text[-8000:]}"
    lines = [line for line in text.splitlines() if line.startswith(RESULT_MARK)]
    assert lines, text[-5000:]
    r: dict[str, Any] = json.loads(lines[-1][len(RESULT_MARK) :])
    print("driver timings (s):", r["timings"], "paths:", [t["path"] for t in r["tables"]])
    return r


def _check(r: dict[str, Any], t: dict[str, Any]) -> None:
    expected_sum = ROWS * (ROWS - 1) // 2
    assert r["executors_registered"] >= 2
    assert (t["neve_rows"], t["neve_sum"]) == (ROWS, expected_sum)
    assert (t["spark_rows"], t["spark_sum"]) == (ROWS, expected_sum)
    assert t["partitions"] == [f"c{i}" for i in range(CATS)]
    assert t["data_files"] >= CATS

    probes = t["probes"]
    workers = [p for p in probes if p["rows"]]
    executor_pids = {p["executor_pid"] for p in workers}
    assert None not in executor_pids, probes
    assert len(executor_pids) >= 2, f"the rows were read in one executor only: {probes}"
    assert r["driver_jvm_pid"] not in executor_pids
    assert r["driver_pid"] not in {p["pid"] for p in probes}
    # each executor works in its own folder under its worker's work dir
    assert len({p["cwd"] for p in workers}) >= 2
    assert all("/cluster/worker" in p["cwd"] for p in workers), probes


@pytest.mark.spark
def test_write_and_read_local_and_s3_tables_on_a_standalone_cluster(
    cluster: Any, tmp_path: Path, s3_warehouse: Any
) -> None:
    """One driver writes and reads a table on local disk, then the same on an object
    store with no Hadoop S3 jars: there the executors read and write through neve's
    FileIO (the store's settings travel with the table)."""
    store = {"warehouse": s3_warehouse.uri, "properties": s3_warehouse.properties}
    r = _run_driver(cluster, tmp_path, NEVE_CLUSTER_STORES=json.dumps([store]))
    local, s3 = r["tables"]
    assert local["data_file_scheme"] != "s3" and s3["data_file_scheme"] == "s3"
    _check(r, local)
    _check(r, s3)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "--driver":
        sys.exit("usage: test_cluster.py --driver <spark master URL> <shared folder>")
    print(RESULT_MARK + json.dumps(driver(sys.argv[2], sys.argv[3])), flush=True)
