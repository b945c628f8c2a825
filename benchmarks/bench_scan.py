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
day and ``id`` in a range. Reported per layout: the first plan in a fresh process
(cold) and repeated plans (warm), best and median, and the ratios. The data files
are registered, not written: planning never opens them.

Part 2, reading. TPC-H ``lineitem`` at scale ``--scale`` (default 1), generated once
with ``tpchgen-cli`` into benchmarks/data/ (git-ignored), appended to a neve table,
then read in full to Arrow by neve and by pyiceberg.

A script, not a test: it asserts nothing about time.

    .venv/bin/python benchmarks/bench_scan.py [--files 10000] [--manifests 100]
        [--repeat 5] [--processes 5] [--scale 1] [--skip-plan] [--skip-tpch] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
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


def _file_bounds(n: int, day: int) -> dict[str, tuple[Any, Any]]:
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


def _data_files(table: Any, first: int, count: int, layout: str, per: int) -> list[Any]:
    from neve.spec.manifest import DataFile, FileFormat
    from neve.spec.types import PrimitiveType
    from neve.spec.values import to_bytes

    schema = table.schema()
    fields = [(f.field_id, f.name, f.field_type) for f in schema.fields]
    out = []
    for n in range(first, first + count):
        day = _day(layout, n, per)
        bounds = _file_bounds(n, day)
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
                tx.add_files(_data_files(table, done, count, layout, per))
            done += count
    return uri, warehouse


def _neve_plan(
    uri: str, warehouse: str, name: str, lo: int, hi: int, max_id: int
) -> Callable[[], int]:
    import neve
    from neve.expressions import and_, greater_than_or_equal, less_than

    cat = neve.connect(uri, warehouse=warehouse, name=CATALOG)
    table = cat.load_table(name)
    expr = and_(and_(greater_than_or_equal("ts", lo), less_than("ts", hi)), less_than("id", max_id))
    return lambda: len(table.scan(filter=expr).plan_files())


def _pyiceberg_plan(
    uri: str, warehouse: str, name: str, lo: int, hi: int, max_id: int
) -> Callable[[], int]:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan

    cat = SqlCatalog(CATALOG, uri=uri, warehouse=f"file://{warehouse}")
    table = cat.load_table(name)
    # pyiceberg's predicates take (term, literal) positionally; its typing says otherwise
    expr = And(
        And(GreaterThanOrEqual("ts", lo), LessThan("ts", hi)),  # type: ignore[call-arg, arg-type]
        LessThan("id", max_id),  # type: ignore[call-arg, arg-type]
    )
    return lambda: len(list(table.scan(row_filter=expr).plan_files()))


def _time(fn: Callable[[], int], repeat: int) -> tuple[float, list[float], int]:
    t0 = time.perf_counter()
    n = fn()
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t0)
    return cold, warm, n


def _line(name: str, cold: float, warm: list[float]) -> None:
    print(
        f"  {name:<10} cold {cold * 1000:8.1f} ms   warm best {min(warm) * 1000:8.1f} ms"
        f"   median {statistics.median(warm) * 1000:8.1f} ms"
    )


def bench_planning(root: Path, files: int, manifests: int, repeat: int, processes: int) -> None:
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
        f"  filter: ts in day {day} and id < {max_id}; cold = the first plan in a fresh "
        f"process after loading the table ({processes} processes per library, taking turns; "
        "best and median); import = importing the library in that process"
    )
    for layout in LAYOUTS:
        runs: dict[str, list[_PlanRun]] = {"neve": [], "pyiceberg": []}
        for _ in range(processes):
            for lib in runs:
                run = _plan_in_subprocess(
                    lib, uri, warehouse, f"bench.{layout}", lo, hi, max_id, repeat
                )
                runs[lib].append(run)
        print(f"  layout {layout}:")
        summary = {}
        for lib, lib_runs in runs.items():
            colds = [r.cold for r in lib_runs]
            warm = [w for r in lib_runs for w in r.warm]
            imports = statistics.median(r.imports for r in lib_runs)
            cold_best, cold_median, warm_best, warm_median = summary[lib] = (
                min(colds),
                statistics.median(colds),
                min(warm),
                statistics.median(warm),
            )
            print(
                f"    {lib:<10} cold best {cold_best * 1000:7.1f} ms  median "
                f"{cold_median * 1000:7.1f} ms   warm best {warm_best * 1000:7.1f} ms"
                f"  median {warm_median * 1000:7.1f} ms   import "
                f"{imports * 1000:5.0f} ms   ({lib_runs[0].tasks} tasks)"
            )
        n, p = summary["neve"], summary["pyiceberg"]
        print(
            f"    ratio pyiceberg/neve ({layout}): cold best {p[0] / n[0]:.1f}x, cold median "
            f"{p[1] / n[1]:.1f}x, warm best {p[2] / n[2]:.1f}x, warm median {p[3] / n[3]:.1f}x"
        )


class _PlanRun(NamedTuple):
    imports: float
    cold: float
    warm: list[float]
    tasks: int


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
    return _PlanRun(float(out[0]), float(out[1]), [float(x) for x in out[3:]], int(out[2]))


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
    fn = make(uri, warehouse, name, lo, hi, max_id)
    cold, warm, n = _time(fn, repeat)
    print(imports, cold, n, *warm)


# -- part 2: TPC-H lineitem ---------------------------------------------------------------


def lineitem_path(scale: float) -> Path:
    """The folder of lineitem at ``scale``, generated once with tpchgen-cli under
    benchmarks/data (shared with bench_spark.py)."""
    from neve.tpch import generate

    return generate(DATA_DIR / "tpch", scale, ("lineitem",))["lineitem"]


def bench_tpch(root: Path, scale: float, repeat: int) -> None:
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
        f"(neve append {load:.1f} s); full scan to Arrow"
    )

    def neve_read() -> int:
        return int(table.scan().to_arrow().num_rows)

    def pyi_read() -> int:
        return int(ptable.scan().to_arrow().num_rows)

    ncold, nwarm, nn = _time(neve_read, repeat)
    pcold, pwarm, pn = _time(pyi_read, repeat)
    if nn != rows or pn != rows:
        raise RuntimeError(f"row counts differ: data {rows}, neve {nn}, pyiceberg {pn}")
    _line("neve", ncold, nwarm)
    _line("pyiceberg", pcold, pwarm)
    print(
        f"  ratio pyiceberg/neve: warm best {min(pwarm) / min(nwarm):.1f}x, "
        f"warm median {statistics.median(pwarm) / statistics.median(nwarm):.1f}x"
    )


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--_plan-worker":
        warnings.simplefilter("ignore")
        plan_worker(argv[1:])
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--files", type=int, default=10_000, help="data files in the planning table")
    p.add_argument("--manifests", type=int, default=100, help="manifests (one per append)")
    p.add_argument("--repeat", type=int, default=5, help="warm repetitions")
    p.add_argument(
        "--processes", type=int, default=5, help="fresh processes per library for cold plans"
    )
    p.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor")
    p.add_argument("--skip-plan", action="store_true", help="skip part 1 (planning)")
    p.add_argument("--skip-tpch", action="store_true", help="skip part 2 (TPC-H scan)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 200 files in 4 manifests, TPC-H scale 0.01, 1 repetition and process",
    )
    args = p.parse_args(argv)
    if args.quick:
        args.files, args.manifests, args.repeat, args.scale = 200, 4, 1, 0.01
        args.processes = 1
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        if not args.skip_plan:
            bench_planning(root, args.files, args.manifests, args.repeat, args.processes)
        if not args.skip_tpch:
            bench_tpch(root, args.scale, args.repeat)


if __name__ == "__main__":
    main()
