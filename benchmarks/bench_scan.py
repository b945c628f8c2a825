"""Scan speed: neve next to pyiceberg, on the same tables, in one run.

Part 1, planning. Tables of ``--files`` data files (default 10,000) in ``--manifests``
manifests (default 100: one append of files/manifests files each), 16 columns with
value/null/NaN counts and lower/upper bounds for every column, partitioned by
``day(ts)`` over 50 days, in two layouts:

- scattered: every append covers every day, so manifest summaries cannot prune a
  one-day filter: all manifests are read and the partition filter prunes the entries;
- aligned: every append is one day's files, so the summaries prune all manifests but
  the filtered day's, whose entries all match the partition filter.

Both libraries load each table through the same SQLite catalog and plan ``ts`` in one
day and ``id`` in a range. Each run is a fresh process per library (neve's and
pyiceberg's taking turns, ``--runs`` each): cold is its first plan after loading the
table (the heap collected just before it, in both), warm the median of ``--repeat``
more plans in the same process. Reported per
layout: the medians and the median ratio of cold and of warm plans, with their spread
(benchmarks/harness.py). Both libraries must plan the same files. The data files are
registered, not written: planning never opens them.

Part 2, reading. TPC-H ``lineitem`` at scale ``--scale`` (default 1), generated once
with ``tpchgen-cli`` into benchmarks/data/ (git-ignored), appended to a neve table,
then read in full to Arrow by neve and by pyiceberg, taking turns, after one unmeasured
scan each; every scan must read the same rows.

A script, not a test: it asserts nothing about time.

    .venv/bin/python benchmarks/bench_scan.py [--files 10000] [--manifests 100]
        [--repeat 5] [--runs 5] [--scale 1] [--skip-plan] [--skip-tpch] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import harness
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

DATA_DIR = Path(__file__).resolve().parent / "data"
CATALOG = "bench"
DAY0 = 19_000  # 2022-01-08, days since the epoch
DAYS = 50
MICROS_PER_DAY = 86_400_000_000
ROWS_PER_FILE = 100_000


def plan_schema() -> pa.Schema:
    return pa.schema(
        [
            ("id", pa.int64()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("user_id", pa.int64()),
            ("amount", pa.float64()),
            ("price", pa.decimal128(12, 2)),
            ("category", pa.string()),
            ("country", pa.string()),
            ("status", pa.int32()),
            ("qty", pa.int32()),
            ("score", pa.float32()),
            ("flag", pa.bool_()),
            ("event_date", pa.date32()),
            ("session", pa.string()),
            ("device", pa.string()),
            ("latency", pa.int64()),
            ("note", pa.string()),
        ]
    )


def file_bounds(n: int, day: int) -> dict[str, tuple[Any, Any]]:
    """Plausible per-file min/max for each column of file number ``n``."""
    lo_ts = day * MICROS_PER_DAY + (n % 7) * 1_000_000
    return {
        "id": (n * ROWS_PER_FILE, (n + 1) * ROWS_PER_FILE - 1),
        "ts": (lo_ts, lo_ts + MICROS_PER_DAY // 2),
        "user_id": (n % 1000, 1_000_000 + n % 1000),
        "amount": (0.5 + n % 10, 9_999.5 + n % 10),
        "price": (Decimal("0.01"), Decimal("99999.99")),
        "category": (f"cat-{n % 10:02d}", f"cat-{90 + n % 10:02d}"),
        "country": ("AR", "ZW"),
        "status": (0, 5),
        "qty": (1, 100 + n % 50),
        "score": (0.0, 1.0),
        "flag": (False, True),
        "event_date": (day, day),
        "session": (f"s-{n:08d}-a", f"s-{n:08d}-z"),
        "device": ("android", "web"),
        "latency": (1, 10_000 + n),
        "note": ("a note", "zzz note"),
    }


LAYOUTS = ("scattered", "aligned")


def _day(layout: str, n: int, per_manifest: int) -> int:
    """The day of data file number ``n``: round robin over the days (scattered), or the
    day of its append (aligned)."""
    if layout == "aligned":
        return DAY0 + (n // per_manifest) % DAYS
    return DAY0 + n % DAYS


def data_files(table: Any, first: int, count: int, day_of: Callable[[int], int]) -> list[Any]:
    """DataFile entries numbered ``first`` to ``first + count - 1``, file ``n`` in day
    ``day_of(n)``, with full metrics for every column (bench_scale.py uses them too)."""
    from neve.spec.manifest import DataFile, FileFormat
    from neve.spec.types import PrimitiveType
    from neve.spec.values import to_bytes

    schema = table.schema()
    fields = [(f.field_id, f.name, f.field_type) for f in schema.fields]
    out = []
    for n in range(first, first + count):
        day = day_of(n)
        bounds = file_bounds(n, day)
        lower: dict[int, bytes] = {}
        upper: dict[int, bytes] = {}
        for fid, name, t in fields:
            assert isinstance(t, PrimitiveType)
            lo, hi = bounds[name]
            lower[fid] = to_bytes(t, lo)
            upper[fid] = to_bytes(t, hi)
        floats = {fid for fid, name, _ in fields if name in ("amount", "score")}
        out.append(
            DataFile(
                file_path=f"{table.location}/data/ts_day={day}/part-{n:06d}.parquet",
                file_format=FileFormat.PARQUET,
                partition=(day,),
                record_count=ROWS_PER_FILE,
                file_size_in_bytes=4_000_000 + n,
                column_sizes={fid: 200_000 + fid for fid, _, _ in fields},
                value_counts={fid: ROWS_PER_FILE for fid, _, _ in fields},
                null_value_counts={fid: (n + fid) % 3 for fid, _, _ in fields},
                nan_value_counts={fid: 0 for fid in floats},
                lower_bounds=lower,
                upper_bounds=upper,
                split_offsets=(4, 1_000_000, 2_000_000, 3_000_000),
                sort_order_id=0,
            )
        )
    return out


def build_plan_tables(root: Path, files: int, manifests: int) -> tuple[str, str]:
    """Create one planning table per layout (``bench.<layout>``) through neve; returns
    (catalog uri, warehouse)."""
    import neve

    uri = f"sqlite:///{root}/catalog.db"
    warehouse = str(root / "wh")
    cat = neve.connect(uri, warehouse=warehouse, name=CATALOG)
    cat.create_namespace("bench")
    per = max(1, files // manifests)
    for layout in LAYOUTS:
        table = cat.create_table(
            f"bench.{layout}",
            plan_schema(),
            partition_by=["day(ts)"],
            properties={"commit.manifest-merge.enabled": "false"},
        )
        done = 0
        while done < files:
            count = min(per, files - done)
            with table.transaction() as tx:
                tx.add_files(
                    data_files(table, done, count, partial(_day, layout, per_manifest=per))
                )
            done += count
    return uri, warehouse


def _neve_plan(
    uri: str, warehouse: str, name: str, lo: int, hi: int, max_id: int
) -> Callable[[], list[str]]:
    import neve
    from neve.expressions import and_, greater_than_or_equal, less_than

    cat = neve.connect(uri, warehouse=warehouse, name=CATALOG)
    table = cat.load_table(name)
    expr = and_(and_(greater_than_or_equal("ts", lo), less_than("ts", hi)), less_than("id", max_id))
    return lambda: [t.file.file_path for t in table.scan(filter=expr).plan_files()]


def _pyiceberg_plan(
    uri: str, warehouse: str, name: str, lo: int, hi: int, max_id: int
) -> Callable[[], list[str]]:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan

    cat = SqlCatalog(CATALOG, uri=uri, warehouse=f"file://{warehouse}")
    table = cat.load_table(name)
    # pyiceberg's predicates take (term, literal) positionally; its typing says otherwise
    expr = And(
        And(GreaterThanOrEqual("ts", lo), LessThan("ts", hi)),  # type: ignore[call-arg, arg-type]
        LessThan("id", max_id),  # type: ignore[call-arg, arg-type]
    )
    return lambda: [t.file.file_path for t in table.scan(row_filter=expr).plan_files()]


def _time(fn: Callable[[], list[str]], repeat: int) -> tuple[float, list[float], list[str]]:
    t0 = time.perf_counter()
    paths = fn()
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t0)
    return cold, warm, paths


def bench_planning(root: Path, files: int, manifests: int, repeat: int, runs: int) -> None:
    t0 = time.perf_counter()
    uri, warehouse = build_plan_tables(root, files, manifests)
    print(
        f"planning: {files} data files in {manifests} manifests, 16 columns with full "
        f"metrics, day(ts) partitions over {DAYS} days, layouts {' and '.join(LAYOUTS)} "
        f"(built in {time.perf_counter() - t0:.1f} s)"
    )
    # day 7 (day 0 when there are too few manifests for the aligned layout to reach it)
    day = DAY0 + (7 if manifests > 7 else 0)
    lo, hi = day * MICROS_PER_DAY, (day + 1) * MICROS_PER_DAY
    max_id = (files // 2) * ROWS_PER_FILE
    print(
        f"  filter: ts in day {day} and id < {max_id}. Each run is a fresh process per "
        f"library: cold = its first plan after loading the table, warm = the median of "
        f"{repeat} more plans in it, import = importing the library in it"
    )
    for layout in LAYOUTS:
        done: dict[str, list[_PlanRun]] = {"neve": [], "pyiceberg": []}

        def side(
            lib: str, name: str = f"bench.{layout}", done: dict[str, list[_PlanRun]] = done
        ) -> Callable[[], float]:
            def one() -> float:
                run = _plan_in_subprocess(lib, uri, warehouse, name, lo, hi, max_id, repeat)
                done[lib].append(run)
                return run.cold

            return one

        cold = harness.alternate({lib: side(lib) for lib in done}, runs)
        plans = {lib: {r.digest for r in lib_runs} for lib, lib_runs in done.items()}
        if len(plans["neve"] | plans["pyiceberg"]) != 1:
            raise RuntimeError(f"{layout}: the libraries planned different files: {plans}")
        warm = harness.Runs(
            {lib: [statistics.median(r.warm) for r in lib_runs] for lib, lib_runs in done.items()},
            cold.load_start,
            cold.load_end,
        )
        tasks = {lib: lib_runs[0].tasks for lib, lib_runs in done.items()}
        imports = {
            lib: statistics.median(r.imports for r in lib_runs) for lib, lib_runs in done.items()
        }
        print(
            f"  layout {layout}: both libraries planned the same {tasks['neve']} files in "
            f"every run; import neve {imports['neve'] * 1000:.0f} ms, pyiceberg "
            f"{imports['pyiceberg'] * 1000:.0f} ms (medians)"
        )
        harness.report(f"{layout} cold", cold, "neve", "pyiceberg", invert=True, width=15)
        harness.report(f"{layout} warm", warm, "neve", "pyiceberg", invert=True, width=15)


class _PlanRun(NamedTuple):
    imports: float
    cold: float
    warm: list[float]
    tasks: int
    digest: str


def _plan_in_subprocess(
    lib: str, uri: str, warehouse: str, name: str, lo: int, hi: int, max_id: int, repeat: int
) -> _PlanRun:
    """Plan in a fresh subprocess, so that "cold" means cold for both libraries."""
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--_plan-worker",
            lib,
            uri,
            warehouse,
            name,
            str(lo),
            str(hi),
            str(max_id),
            str(repeat),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return _PlanRun(float(out[0]), float(out[1]), [float(x) for x in out[4:]], int(out[2]), out[3])


def plan_worker(args: list[str]) -> None:
    lib, uri, warehouse, name = args[:4]
    lo, hi, max_id, repeat = (int(a) for a in args[4:8])
    t0 = time.perf_counter()
    if lib == "neve":
        import neve
        import neve.expressions  # noqa: F401
    else:
        import pyiceberg.catalog.sql
        import pyiceberg.expressions  # noqa: F401
    imports = time.perf_counter() - t0
    make = _neve_plan if lib == "neve" else _pyiceberg_plan
    cold, warm, paths, digest = time_plans(make(uri, warehouse, name, lo, hi, max_id), repeat)
    print(imports, cold, len(paths), digest, *warm)


def time_plans(
    fn: Callable[[], list[str]], repeat: int
) -> tuple[float, list[float], list[str], str]:
    """The first plan's seconds, ``repeat`` more plans' seconds, the files planned and
    a digest of them. A full collection left pending by the imports and the table load
    would otherwise fall inside the first plan or not, by how many objects the imports
    happened to leave (one such collection takes ~60 ms here): the first plan starts
    from a collected heap, as timeit does."""
    gc.collect()
    cold, warm, paths = _time(fn, max(1, repeat))
    digest = hashlib.sha1("\n".join(sorted(paths)).encode()).hexdigest()[:16]
    return cold, warm, paths, digest


# -- part 2: TPC-H lineitem ---------------------------------------------------------------


def lineitem_path(scale: float) -> Path:
    """The folder of lineitem at ``scale``, generated once with tpchgen-cli under
    benchmarks/data (shared with bench_spark.py)."""
    from neve.tpch import generate

    return generate(DATA_DIR / "tpch", scale, ("lineitem",))["lineitem"]


def bench_tpch(root: Path, scale: float, runs: int) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    import neve

    path = lineitem_path(scale)
    data = pq.read_table(path)
    uri = f"sqlite:///{root}/tpch.db"
    warehouse = str(root / "tpch-wh")
    cat = neve.connect(uri, warehouse=warehouse, name=CATALOG)
    cat.create_namespace("tpch")
    table = cat.create_table("tpch.lineitem", data.schema)
    t0 = time.perf_counter()
    table.append(data)
    load = time.perf_counter() - t0
    rows = data.num_rows
    del data
    table = cat.load_table("tpch.lineitem")
    ptable = SqlCatalog(CATALOG, uri=uri, warehouse=f"file://{warehouse}").load_table(
        "tpch.lineitem"
    )
    nfiles = len(table.scan().plan_files())
    print(
        f"TPC-H lineitem SF{scale:g}: {rows} rows, {nfiles} scan tasks "
        f"(neve append {load:.1f} s); full scan to Arrow, after one unmeasured scan each"
    )

    sums: dict[str, set[tuple[int, int]]] = {"neve": set(), "pyiceberg": set()}

    def read(lib: str, scan: Callable[[], Any]) -> Callable[[], float]:
        def one() -> float:
            took, out = harness.timed(lambda: scan().to_arrow())
            sums[lib].add((out.num_rows, int(pc.sum(out.column("l_orderkey")).as_py())))
            return took

        return one

    runs = harness.alternate(
        {"neve": read("neve", table.scan), "pyiceberg": read("pyiceberg", ptable.scan)},
        runs,
        warmup=True,
    )
    if len(sums["neve"] | sums["pyiceberg"]) != 1 or rows not in {n for n, _ in sums["neve"]}:
        raise RuntimeError(f"the scans differ: {rows} rows loaded, read {sums}")
    print(f"  rows check passed: every scan read the {rows:,} rows with the same sum(l_orderkey)")
    harness.report("full scan", runs, "neve", "pyiceberg", invert=True, width=9)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--_plan-worker":
        warnings.simplefilter("ignore")
        plan_worker(argv[1:])
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--files", type=int, default=10_000, help="data files in the planning table")
    p.add_argument("--manifests", type=int, default=100, help="manifests (one per append)")
    p.add_argument("--repeat", type=int, default=5, help="warm plans in each planning process")
    harness.add_runs_argument(p)
    p.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor")
    p.add_argument("--skip-plan", action="store_true", help="skip part 1 (planning)")
    p.add_argument("--skip-tpch", action="store_true", help="skip part 2 (TPC-H scan)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="small scale: 200 files in 4 manifests, TPC-H scale 0.01, 1 warm plan",
    )
    args = p.parse_args(argv)
    if args.quick:
        args.files, args.manifests, args.repeat, args.scale = 200, 4, 1, 0.01
    warnings.simplefilter("ignore")
    with (
        tempfile.TemporaryDirectory() as d,
        harness.session("Scan speed: neve against pyiceberg 0.12", args.runs),
    ):
        root = Path(d)
        if not args.skip_plan:
            bench_planning(root, args.files, args.manifests, args.repeat, args.runs)
        if not args.skip_tpch:
            bench_tpch(root, args.scale, args.runs)


if __name__ == "__main__":
    main()
