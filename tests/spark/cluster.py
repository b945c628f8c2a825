"""A real Spark standalone cluster on this machine, for tests: a master and workers,
each its own JVM started from the pyspark package's jars, stopped reliably.

    with standalone_cluster(tmp_path) as cluster:
        run a driver with master=cluster.master_url (in another process: one
        process holds one SparkContext, and the test process has a local one)

Executors run ``sys.executable`` (``PYSPARK_PYTHON``), so they import neve from this
environment. Every process is started in its own process group; stopping kills the
groups, which takes the executors and their Python workers with them.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

__all__ = ["StandaloneCluster", "cluster_env", "spark_home", "standalone_cluster"]

HOST = "127.0.0.1"


def spark_home() -> str:
    return os.path.dirname(os.path.abspath(pyspark.__file__))


def _java_home() -> str | None:
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    java = shutil.which("java")
    if java is None:
        return None
    return str(Path(java).resolve().parent.parent)


def cluster_env(**extra: str) -> dict[str, str]:
    """The environment for the cluster's JVMs and for drivers that use it."""
    env = dict(os.environ)
    env.update(
        SPARK_HOME=spark_home(),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP=HOST,
        SPARK_DAEMON_MEMORY="256m",  # master and worker JVMs need little
    )
    java_home = _java_home()
    if java_home:
        env["JAVA_HOME"] = java_home
    env.pop("SPARK_CONF_DIR", None)
    env.update(extra)
    return env


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


@dataclass
class _Daemon:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def tail(self, lines: int = 40) -> str:
        return f"--- {self.name} ({self.log}) ---\n" + "\n".join(self.text().splitlines()[-lines:])

    def kill(self) -> None:
        """Kill the process group (the JVM, and for a worker its executors)."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)
        # executors may outlive a worker that exited: always sweep the whole group
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)


@dataclass
class StandaloneCluster:
    """A running master and its workers."""

    master_url: str
    workdir: Path
    daemons: list[_Daemon] = field(default_factory=list)

    def logs(self) -> str:
        return "\n".join(d.tail() for d in self.daemons)

    def stop(self) -> None:
        for d in reversed(self.daemons):  # workers (and executors) first, then the master
            d.kill()
        self.daemons.clear()


def _start(name: str, args: list[str], workdir: Path, env: dict[str, str]) -> _Daemon:
    log = workdir / f"{name}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [os.path.join(spark_home(), "bin", "spark-class"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=workdir,
            start_new_session=True,  # its own process group, killed as a whole
        )
    return _Daemon(name, process, log)


def _wait(cluster: StandaloneCluster, done: re.Pattern[str], count: int, deadline: float) -> None:
    master = cluster.daemons[0]
    while time.monotonic() < deadline:
        if len(done.findall(master.text())) >= count:
            return
        dead = [d for d in cluster.daemons if d.process.poll() is not None]
        if dead:
            raise RuntimeError(f"{', '.join(d.name for d in dead)} exited early:\n{cluster.logs()}")
        time.sleep(0.2)
    raise RuntimeError(f"the Spark cluster did not come up in time:\n{cluster.logs()}")


@contextlib.contextmanager
def standalone_cluster(
    workdir: Path,
    *,
    workers: int = 2,
    cores: int = 1,
    memory: str = "1g",
    timeout: float = 90.0,
) -> Iterator[StandaloneCluster]:
    """Start a master and ``workers`` workers; stop them all on exit, also on errors."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = cluster_env()
    port = _free_port()
    cluster = StandaloneCluster(f"spark://{HOST}:{port}", workdir)
    atexit.register(cluster.stop)  # even if the caller never reaches the finally below
    deadline = time.monotonic() + timeout
    try:
        cluster.daemons.append(
            _start(
                "master",
                [
                    "org.apache.spark.deploy.master.Master",
                    *("--host", HOST, "--port", str(port), "--webui-port", "0"),
                ],
                workdir,
                env,
            )
        )
        _wait(cluster, re.compile(r"I have been elected leader|Starting Spark master"), 1, deadline)
        for i in range(workers):
            work = workdir / f"worker{i}"
            work.mkdir(exist_ok=True)
            cluster.daemons.append(
                _start(
                    f"worker{i}",
                    [
                        "org.apache.spark.deploy.worker.Worker",
                        cluster.master_url,
                        *("--host", HOST, "--cores", str(cores), "--memory", memory),
                        *("--webui-port", "0", "--work-dir", str(work)),
                    ],
                    workdir,
                    env,
                )
            )
        _wait(cluster, re.compile(r"Registering worker "), workers, deadline)
        yield cluster
    finally:
        cluster.stop()
        atexit.unregister(cluster.stop)
