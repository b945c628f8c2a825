"""neve serve: what HTTP costs a commit, and what server-side planning saves a client.

Part 1, commits. ``--clients`` processes each append ``--commits`` small batches (each
commit: load the table, write a data file and manifests, commit), once on the SQL
catalog directly (SQLite in WAL mode) and once through ``neve serve`` on the same
database, alternating ``--runs`` times. Reported per run: commits per second and the
p50/p99 latency of a commit; then the median ratio through-REST/direct of p50 latency
and of throughput, with their spread (min-max over the runs). Goal: <= 1.5x.

Part 2, planning. A table of ``--files`` data files (default 10,000) in
``--manifests`` manifests (bench_scan.py's planning table: files registered, not
written). Alternating ``--runs`` times: loading the table through the server and
directly; planning it (no filter, and one day of fifty) with pyiceberg 0.12 planning
itself (the reference), pyiceberg with ``scan-planning-mode=server``, neve's REST
client planning on the server, and neve planning itself. Reported: medians, and the
median ratio pyiceberg-self / server-side with its spread. Goal: server-side >= 5x
faster.

A script, not a test: it asserts nothing about time.

    .venv/bin/python benchmarks/bench_rest.py [--clients 4] [--commits 20] [--runs 5]
        [--files 10000] [--manifests 100] [--skip-commits] [--skip-plan] [--quick]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scan import CATALOG, DAY0, MICROS_PER_DAY, build_plan_tables

BATCH = pa.schema([("id", pa.int64()), ("payload", pa.string())])


# -- the server -------------------------------------------------------------------------


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``neve serve`` on a loopback port, in its own process (anonymous access)."""

    def __init__(self, uri: str, warehouse: str, log: Path) -> None:
        neve_cli = Path(sys.executable).with_name("neve")
        port = _port()
        self.url = f"http://127.0.0.1:{port}"
        with open(log, "w") as out:
            self.proc = subprocess.Popen(
                [
                    str(neve_cli),
                    "serve",
                    "--uri",
                    uri,
                    "--warehouse",
                    warehouse,
                    "--name",
                    CATALOG,
                    "--anonymous",
                    "--port",
                    str(port),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/v1/config", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise SystemExit(f"neve serve did not start: {log.read_text()[-2000:]}")

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=30)


# -- part 1: commits --------------------------------------------------------------------


def commit_worker(
    kind: str, target: str, warehouse: str, table: str, n: int, start_at: float
) -> list[float]:
    """Append ``n`` batches to ``table``; the latency of each commit (load + append)."""
    import neve

    cat = (
        neve.connect(target, warehouse, name=CATALOG) if kind == "direct" else neve.connect(target)
    )
    batch = pa.table({"id": list(range(100)), "payload": ["x" * 20] * 100}, schema=BATCH)
    time.sleep(max(0.0, start_at - time.time()))
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        cat.load_table(table).append(batch)
        out.append(time.perf_counter() - t0)
    return out


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_commits(root: Path, clients: int, commits: int, runs: int) -> None:
    import neve

    uri, warehouse = f"sqlite:///{root}/commits.db", str(root / "commits-wh")
    cat = neve.connect(uri, warehouse, name=CATALOG)
    cat.create_namespace("c")
    server = Server(uri, warehouse, root / "server-commits.log")
    print(f"== commits: {clients} client processes x {commits} appends, {runs} alternating runs")
    ratios_p50, ratios_rate = [], []
    ctx = multiprocessing.get_context("spawn")
    try:
        with ctx.Pool(clients) as pool:
            for run in range(runs):
                result: dict[str, tuple[float, float, float]] = {}
                for kind in ("direct", "rest") if run % 2 == 0 else ("rest", "direct"):
                    name = f"c.{kind}_{run}"
                    cat.create_table(name, BATCH)
                    target = uri if kind == "direct" else server.url
                    start_at = time.time() + 0.5
                    t0 = time.time()
                    lists = pool.starmap(
                        commit_worker,
                        [(kind, target, warehouse, name, commits, start_at)] * clients,
                    )
                    wall = time.time() - max(t0, start_at)
                    lat = [x for lst in lists for x in lst]
                    assert cat.load_table(name).scan().count() == clients * commits * 100
                    result[kind] = (len(lat) / wall, _pct(lat, 0.5), _pct(lat, 0.99))
                for kind, label in (
                    ("direct", "SQL catalog directly"),
                    ("rest", "through neve serve"),
                ):
                    rate, p50, p99 = result[kind]
                    print(
                        f"  run {run + 1} {label:22s} {rate:7.1f} commits/s  p50 {p50 * 1000:7.1f} ms"
                        f"  p99 {p99 * 1000:7.1f} ms"
                    )
                ratios_p50.append(result["rest"][1] / result["direct"][1])
                ratios_rate.append(result["direct"][0] / result["rest"][0])
    finally:
        server.stop()
    print(
        f"  HTTP overhead per commit (p50 REST/direct): median {statistics.median(ratios_p50):.2f}x "
        f"(spread {min(ratios_p50):.2f}-{max(ratios_p50):.2f}); throughput direct/REST: median "
        f"{statistics.median(ratios_rate):.2f}x (spread {min(ratios_rate):.2f}-{max(ratios_rate):.2f})"
    )


# -- part 2: planning -------------------------------------------------------------------


def _timed(fn: Callable[[], int]) -> tuple[float, int]:
    t0 = time.perf_counter()
    n = fn()
    return time.perf_counter() - t0, n


def bench_planning(root: Path, files: int, manifests: int, runs: int) -> None:
    from pyiceberg.catalog.rest import RestCatalog as PyRest
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan

    import neve

    uri, warehouse = build_plan_tables(root, files, manifests)
    server = Server(uri, warehouse, root / "server-plan.log")
    name = "bench.scattered"
    day_lo = (DAY0 + 7) * MICROS_PER_DAY
    day_hi = day_lo + MICROS_PER_DAY
    neve_filter = f"ts >= {day_lo} and ts < {day_hi}"
    print(f"== planning: {files:,} data files in {manifests} manifests, {runs} alternating runs")
    try:
        direct = neve.connect(uri, warehouse, name=CATALOG)
        rest = neve.connect(server.url)
        rest_plans = neve.connect(server.url, **{"scan-planning-mode": "server"})
        py_client = PyRest("bench", uri=server.url)
        py_server = PyRest("bench", uri=server.url, **{"scan-planning-mode": "server"})
        py_day = And(GreaterThanOrEqual("ts", day_lo), LessThan("ts", day_hi))

        def py_plan(cat: Any, day: bool) -> Callable[[], int]:
            def plan() -> int:
                table = cat.load_table(name)
                scan = table.scan(row_filter=py_day) if day else table.scan()
                return len(list(scan.plan_files()))

            return plan

        def neve_plan(cat: Any, day: bool) -> Callable[[], int]:
            def plan() -> int:
                scan = cat.load_table(name).scan(filter=neve_filter if day else None)
                return len({t.file.file_path for t in scan.plan_files()})

            return plan

        cases: dict[str, Callable[[], int]] = {
            "load table through REST": lambda: len(rest.load_table(name).snapshots()),
            "load table directly": lambda: len(direct.load_table(name).snapshots()),
        }
        for day, label in ((False, "all"), (True, "one day")):
            cases[f"plan {label}: pyiceberg plans itself"] = py_plan(py_client, day)
            cases[f"plan {label}: pyiceberg, server-side"] = py_plan(py_server, day)
            cases[f"plan {label}: neve REST client, server-side"] = neve_plan(rest_plans, day)
            cases[f"plan {label}: neve plans itself (direct)"] = neve_plan(direct, day)
        times: dict[str, list[float]] = {k: [] for k in cases}
        counts: dict[str, int] = {}
        for run in range(runs):
            order = list(cases) if run % 2 == 0 else list(reversed(cases))
            for key in order:
                seconds, n = _timed(cases[key])
                times[key].append(seconds)
                counts[key] = n
        for key, values in times.items():
            print(
                f"  {key:48s} median {statistics.median(values) * 1000:9.1f} ms  ({counts[key]:,})"
            )
        for label in ("all", "one day"):
            self_t = times[f"plan {label}: pyiceberg plans itself"]
            server_t = times[f"plan {label}: pyiceberg, server-side"]
            ratios = [a / b for a, b in zip(self_t, server_t, strict=True)]
            print(
                f"  ratio pyiceberg-self/server-side ({label}): median "
                f"{statistics.median(ratios):.1f}x (spread {min(ratios):.1f}-{max(ratios):.1f})"
            )
        load = [
            a / b
            for a, b in zip(
                times["load table through REST"], times["load table directly"], strict=True
            )
        ]
        print(
            f"  ratio load table REST/direct: median {statistics.median(load):.2f}x "
            f"(spread {min(load):.2f}-{max(load):.2f})"
        )
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--manifests", type=int, default=100)
    parser.add_argument("--skip-commits", action="store_true")
    parser.add_argument("--skip-plan", action="store_true")
    parser.add_argument("--quick", action="store_true", help="2 clients x 3 commits, 500 files")
    args = parser.parse_args(argv)
    if args.quick:
        args.clients, args.commits, args.files, args.manifests = 2, 3, 500, 10
    warnings.filterwarnings("ignore")
    with tempfile.TemporaryDirectory(prefix="bench-rest-") as tmp:
        root = Path(tmp)
        if not args.skip_commits:
            bench_commits(root, args.clients, args.commits, args.runs)
        if not args.skip_plan:
            bench_planning(root, args.files, args.manifests, args.runs)


if __name__ == "__main__":
    main()
