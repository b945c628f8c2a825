"""Concurrent deletes on the same data files: neve rebasing against Iceberg-Java 1.10.2.

Section (d) of benchmarks/bench_merge.py. TPC-H lineitem at ``scale`` in two tables of
one SQLite catalog (format v3, ``bucket(16, l_orderkey)``, merge-on-read: deletion
vectors), both loaded by neve so their data files are laid out alike. Four writers per
engine, each in its own process, delete the lines of 4 orders per statement, one
order in each of 4 "hot" data files (buckets 0-3), so every statement marks rows of
the same 4 files as every other writer's. The writers' orders are disjoint, and the
k-th statement of writer w deletes the same orders on both sides.

- neve: 4 processes; each statement is ``table.delete("l_orderkey in (...)")`` on a
  freshly loaded table. A lost compare-and-swap rebases (the deletion vectors are
  unioned), so no statement should fail.
- Iceberg-Java: 4 engine processes (one PySpark 3.5 session ``local[2]`` each, see
  tests/javaengine), ``DELETE FROM ... WHERE l_orderkey IN (...)`` with the table cache
  off, Iceberg's default commit retries. A statement Iceberg refuses because a
  concurrent commit won (``ValidationException``: a concurrent DV for the same data
  file; ``CommitFailedException``) is re-run as it is, as a user would.

Every writer starts statements for ``window`` seconds; a statement running when the
window closes finishes (and counts), a failed one is then not re-run. Commits per
minute are the commits over the time from the start to the last writer's end. After
each window its table is read by both engines and must hold exactly the loaded rows
minus the orders whose statements committed. The engines take turns, ``runs`` windows
each, every window from the loaded snapshot (each Java window with freshly started
writer engines, their start untimed).
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import harness
import pyarrow as pa
import pyarrow.compute as pc

WRITERS = 4
HOT_FILES = 4  # buckets 0..3: every statement marks rows of each of these files
BUCKETS = 16
BUCKET = f"bucket({BUCKETS}, l_orderkey)"
MAX_STATEMENTS = 5_000  # per writer; more than a writer commits in the window at SF1
PROPS = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}
JAVA_CONFLICTS = (
    "org.apache.iceberg.exceptions.ValidationException",
    "org.apache.iceberg.exceptions.CommitFailedException",
)


@dataclass
class WriterResult:
    """What one writer did: commits, failed attempts (re-run), the orders its committed
    statements deleted, when it ended, its slowest statement, and the first failure's
    message."""

    commits: int = 0
    failed: int = 0
    deleted: list[int] = field(default_factory=list)
    ended: float = 0.0
    exhausted: bool = False
    longest: float = 0.0  # seconds, first attempt to commit, of the slowest statement
    latencies: list[float] = field(default_factory=list)  # of every committed statement
    first_failure: str = ""


def plan_statements(orderkeys: pa.Array) -> list[list[tuple[int, ...]]]:
    """Per writer, the orders each statement deletes: one order of each hot bucket,
    writer w taking every WRITERS-th order of each bucket from offset w."""
    from neve.spec.transforms import BucketTransform
    from neve.spec.types import LONG

    bucket_of = BucketTransform(BUCKETS).transformer(LONG)
    per_bucket: list[list[int]] = [[] for _ in range(HOT_FILES)]
    need = WRITERS * MAX_STATEMENTS
    for key in pc.unique(orderkeys).to_pylist():
        b = bucket_of(key)
        if b < HOT_FILES and len(per_bucket[b]) < need:
            per_bucket[b].append(key)
            if all(len(keys) >= need for keys in per_bucket):
                break
    depth = min(len(keys) for keys in per_bucket) // WRITERS
    return [
        [tuple(per_bucket[b][i * WRITERS + w] for b in range(HOT_FILES)) for i in range(depth)]
        for w in range(WRITERS)
    ]


def in_list(keys: Sequence[int]) -> str:
    return ", ".join(str(k) for k in keys)


# -- neve writers: one process each ------------------------------------------------------


def neve_writer(
    uri: str,
    warehouse: str,
    name: str,
    plan: list[tuple[int, ...]],
    ready: Any,
    go: Any,
    stop_at: Any,
    out: Any,
) -> None:
    """Runs in a writer process: warm up (import, connect, plan one scan), say ready,
    wait for the start, then delete until the window closes; puts a WriterResult."""
    import neve
    from neve.errors import CommitConflictError, CommitFailedError

    cat = neve.connect(uri, warehouse=warehouse)
    cat.load_table(name).scan(f"l_orderkey in ({in_list(plan[0])})").to_arrow()
    ready.put(True)
    go.wait()
    result = WriterResult()
    for keys in plan:
        if time.time() >= stop_at.value:
            break
        t0 = time.time()
        while True:
            try:
                cat.load_table(name).delete(f"l_orderkey in ({in_list(keys)})")
            except (CommitConflictError, CommitFailedError) as exc:
                result.failed += 1
                result.first_failure = result.first_failure or f"{type(exc).__name__}: {exc}"
                if time.time() < stop_at.value:
                    continue  # re-run the statement
                break
            result.commits += 1
            result.deleted.extend(keys)
            result.longest = max(result.longest, time.time() - t0)
            result.latencies.append(time.time() - t0)
            break
    else:
        result.exhausted = True
    result.ended = time.time()
    out.put(result)


def run_neve(
    uri: str, warehouse: str, name: str, plans: list[list[tuple[int, ...]]], window: float
) -> tuple[list[WriterResult], float]:
    ctx = multiprocessing.get_context("spawn")
    ready, out = ctx.Queue(), ctx.Queue()
    go = ctx.Event()
    stop_at = ctx.Value("d", 0.0)
    procs = [
        ctx.Process(target=neve_writer, args=(uri, warehouse, name, plan, ready, go, stop_at, out))
        for plan in plans
    ]
    for p in procs:
        p.start()
    try:
        for _ in procs:
            ready.get(timeout=300)
        started = time.time()
        stop_at.value = started + window
        go.set()
        results = [out.get(timeout=window + 600) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.terminate()
    return results, max(r.ended for r in results) - started


# -- Iceberg-Java writers: one engine process each ---------------------------------------


def java_message(exc: Any) -> str:
    """The Java exception's own line (class and message) out of Py4J's text."""
    short = str(exc.java_class).rsplit(".", 1)[-1]
    lines = str(exc).splitlines()
    return next((ln.strip(" :") for ln in lines if f"{short}:" in ln), lines[0])


def run_java(
    engines: Sequence[Any], table: str, plans: list[list[tuple[int, ...]]], window: float
) -> tuple[list[WriterResult], float]:
    from javaengine import JavaSqlError

    go = threading.Event()
    stop_at = 0.0

    def writer(java: Any, plan: list[tuple[int, ...]]) -> WriterResult:
        go.wait()
        result = WriterResult()
        for keys in plan:
            if time.time() >= stop_at:
                break
            t0 = time.time()
            while True:
                try:
                    java.sql(f"DELETE FROM {table} WHERE l_orderkey IN ({in_list(keys)})")
                except JavaSqlError as exc:
                    if exc.java_class not in JAVA_CONFLICTS:
                        log = java.log.read_text(errors="replace").splitlines()[-40:]
                        print("\n".join(["Iceberg-Java engine log, last lines:", *log]))
                        raise
                    result.failed += 1
                    if not result.first_failure:
                        result.first_failure = java_message(exc)
                    if time.time() < stop_at:
                        continue  # re-run the statement
                    break
                result.commits += 1
                result.deleted.extend(keys)
                result.longest = max(result.longest, time.time() - t0)
                result.latencies.append(time.time() - t0)
                break
        else:
            result.exhausted = True
        result.ended = time.time()
        return result

    with ThreadPoolExecutor(len(engines)) as pool:
        futures = [pool.submit(writer, j, p) for j, p in zip(engines, plans, strict=True)]
        started = time.time()
        stop_at = started + window
        go.set()
        results = [f.result() for f in futures]
    return results, max(r.ended for r in results) - started


# -- the checks ---------------------------------------------------------------------------


def expected(data: pa.Table, deleted: Sequence[int]) -> tuple[int, int]:
    """Rows and sum(l_orderkey) left after deleting the orders ``deleted``."""
    keep = data.column("l_orderkey").filter(
        pc.invert(pc.is_in(data.column("l_orderkey"), pa.array(deleted, pa.int64())))
    )
    return len(keep), int(pc.sum(keep).as_py() or 0)


def neve_reads(cat: Any, name: str, deleted: Sequence[int]) -> tuple[int, int, int]:
    """Rows, sum(l_orderkey) and rows of deleted orders, as neve's scan reads them."""
    keys = cat.load_table(name).scan(columns=["l_orderkey"]).to_arrow().column("l_orderkey")
    gone = pc.sum(pc.is_in(keys, pa.array(deleted, pa.int64()))).as_py() or 0
    return len(keys), int(pc.sum(keys).as_py() or 0), int(gone)


def java_reads(java: Any, table: str, deleted: Sequence[int]) -> tuple[int, int, int]:
    """The same, as Iceberg-Java reads them."""
    row = java.sql(
        f"SELECT count(*), sum(l_orderkey), "
        f"sum(CASE WHEN l_orderkey IN ({in_list(deleted) or 'NULL'}) THEN 1 ELSE 0 END) "
        f"FROM {table}"
    ).rows[0]
    return int(row[0]), int(row[1] or 0), int(row[2] or 0)


def report(label: str, results: list[WriterResult], elapsed: float) -> float:
    commits = sum(r.commits for r in results)
    failed = sum(r.failed for r in results)
    per_min = 60.0 * commits / elapsed
    print(
        f"  {label:<26} {per_min:7.1f} commits/min   {commits:,} commits, "
        f"{failed:,} failed attempts (conflicts) in {elapsed:.1f} s "
        f"(per writer: {', '.join(str(r.commits) for r in results)}; slowest statement "
        f"{max(r.longest for r in results):.1f} s)",
        flush=True,
    )
    latencies = sorted(x for r in results for x in r.latencies)
    if latencies:
        p50 = latencies[len(latencies) // 2]
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        mean_share = commits / len(results)
        lowest = min(r.commits for r in results)
        print(
            f"    statement latency p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms "
            f"(p99/p50 {p99 / p50:.1f}); the fewest commits of a writer {lowest} = "
            f"{lowest / mean_share:.2f} of the mean share",
            flush=True,
        )
    if any(r.exhausted for r in results):
        print(f"    ({label}: a writer ran out of planned statements)", flush=True)
    first = next((r.first_failure for r in results if r.first_failure), "")
    if first:
        print(f"    first failure: {first[:300]}", flush=True)
    return per_min


def run(root: Path, data: pa.Table, scale: float, window: float, runs: int) -> harness.Ratio:
    """Run section (d) on ``data`` (lineitem at ``scale``): ``runs`` windows per engine,
    taking turns, each from the loaded snapshot and checked by both engines; returns the
    ratio of commits per minute, neve over Iceberg-Java."""
    import neve
    from javaengine import IcebergJava, JdbcCatalog

    uri = f"sqlite:///{root}/catalog.db"
    warehouse = str(root / "wh")
    cat = neve.connect(uri, warehouse=warehouse)
    cat.create_namespace("bench")
    names = {"neve": "bench.lineitem_neve", "Java": "bench.lineitem_java"}
    bases = {}
    for side, name in names.items():
        t = cat.create_table(
            name, data.schema, partition_by=[BUCKET], format_version=3, properties=PROPS
        )
        t.append(data)
        snap = t.refresh().current_snapshot()
        assert snap is not None
        bases[side] = snap.snapshot_id
    rows = data.num_rows
    n_files = len(cat.load_table(names["neve"]).scan().plan_files())
    plans = plan_statements(data.column("l_orderkey"))
    print(
        f"TPC-H lineitem SF{scale:g}: {rows:,} rows in {n_files} data files (v3, {BUCKET}, "
        f"merge-on-read: deletion vectors), one table per engine in one SQLite catalog, "
        f"both loaded by neve. {WRITERS} writers per engine, each its own process (neve: "
        f"Python processes; Iceberg-Java: {WRITERS} Spark 3.5 sessions local[2]), "
        f"deleting the lines of {HOT_FILES} orders per statement, one in each of the same "
        f"{HOT_FILES} data files, orders disjoint between writers; statements started for "
        f"{window:g} s; a failed statement is re-run as it is; every window starts from "
        "the loaded snapshot and is checked by both engines",
        flush=True,
    )

    specs = [JdbcCatalog.from_sqlalchemy("neve", uri, warehouse)]
    java_table = f"neve.{names['Java']}"

    def start_engines(count: int, tag: str) -> list[Any]:
        """``count`` Iceberg-Java engines, started together (untimed)."""
        with ThreadPoolExecutor(count) as pool:
            # 2g each: with 1g (its direct-memory limit too) Iceberg's vectorized reader
            # ran out of direct buffer memory after some hundred statements
            futures = [
                pool.submit(
                    IcebergJava.start, root / f"java-{tag}-{w}", specs, memory="2g", timeout=900.0
                )
                for w in range(count)
            ]
            engines: list[Any] = []
            try:
                for f in futures:
                    engines.append(f.result())
            finally:
                if len(engines) < count:
                    for e in engines:
                        e.close()
        return engines

    # one engine reads both tables after every window; the writers are fresh JVMs for each
    # Java window (a long-lived writer's direct memory ran out after some windows)
    (checker,) = start_engines(1, "check")
    windows = {"neve": 0, "Java": 0}

    def start(side: str) -> None:
        """Back to the loaded snapshot after the first window, and the snapshots of the
        windows before expired (untimed), so every window starts from the same
        metadata: a longer history makes every commit's metadata file larger."""
        if windows[side]:
            table = cat.load_table(names[side])
            table.set_current_snapshot(bases[side])
            table.maintenance.expire_snapshots(older_than=datetime.now(UTC), retain_last=1)
        windows[side] += 1

    def check(side: str, results: list[WriterResult]) -> None:
        deleted = sorted(k for r in results for k in r.deleted)
        assert len(deleted) == len(set(deleted)), f"{side}: an order deleted twice"
        want_rows, want_sum = expected(data, deleted)
        got_neve = neve_reads(cat, names[side], deleted)
        got_java = java_reads(checker, f"neve.{names[side]}", deleted)
        assert got_neve == (want_rows, want_sum, 0), (side, got_neve, want_rows, want_sum)
        assert got_java == (want_rows, want_sum, 0), (side, got_java, want_rows, want_sum)

    def neve_window() -> float:
        start("neve")
        results, elapsed = run_neve(uri, warehouse, names["neve"], plans, window)
        check("neve", results)
        return report("neve table.delete", results, elapsed)

    def java_window() -> float:
        start("Java")
        engines = start_engines(WRITERS, f"w{windows['Java']}")
        try:
            for java, plan in zip(engines, plans, strict=True):  # warm up: one scan each
                java.sql(
                    f"SELECT count(*) FROM {java_table} WHERE l_orderkey IN ({in_list(plan[0])})"
                )
            results, elapsed = run_java(engines, java_table, plans, window)
        finally:
            for e in engines:
                e.close()
        check("Java", results)
        return report("Iceberg-Java DELETE FROM", results, elapsed)

    try:
        measured = harness.alternate({"neve": neve_window, "Java": java_window}, runs)
    finally:
        checker.close()
    print(
        "  rows check passed: after every window both engines read exactly the loaded rows "
        "minus the committed deletes",
        flush=True,
    )
    return harness.report("commits per minute", measured, "neve", "Java", unit="commits/min")
