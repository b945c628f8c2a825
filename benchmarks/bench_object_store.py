"""neve on an object store next to pyiceberg 0.12 on the same S3-protocol server (moto in
``.venv-moto`` behind the test front that counts requests, tests/s3server), in one run.

(a) 100 small appends (``--appends``): neve's filesystem catalog on s3, neve's SQL catalog
    with an s3 warehouse, and pyiceberg's SQL catalog with an s3 warehouse (its pyarrow
    FileIO), each on its own table; requests by kind and seconds per commit, and the
    metadata requests of neve's filesystem-catalog commit after its data file (goal: at
    most 4 on the happy path).
(b) a cold plan of a 1,000-manifest table (``--manifests``; one data file per manifest,
    written straight by neve's manifest writer): neve (a new catalog, the process-wide
    manifest cache cleared) and pyiceberg (``StaticTable`` of the same metadata file),
    ``plan_files`` of the whole table.
(c) a filtered scan of TPC-H lineitem at ``--scale`` (SF0.1: 600k rows) written by neve
    to s3, one month of ``l_shipdate`` and four columns, by neve and by pyiceberg
    (``StaticTable`` of the same metadata, its own planning and reading).
(d) Spark, lineitem SF1 (``--spark-scale``) written and read (a full-scan aggregate) on
    s3 through neve's FileIO in Spark's Python tasks, against the same job on local disk
    through Spark's own Parquet reader and writer; runs alternate.

Each step of (b) and (c) runs ``--runs`` times, neve and pyiceberg alternating, every run
cold; it prints both medians, the median of the per-pair ratios pyiceberg/neve and their
spread (min-max), and the requests of one run of each. The numbers depend on the test
server (a Python server on loopback: no network latency, slow per request), so they say
more about request counts than about seconds on a real store.

A script, not a test: it checks results agree, never times.

    .venv/bin/python benchmarks/bench_object_store.py [--appends 100] [--manifests 1000]
        [--scale 0.1] [--runs 5] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the test server and its table builder

import neve  # noqa: E402
from neve.planning.manifest_cache import manifest_cache  # noqa: E402
from s3server import S3Server, S3Warehouse, op_counts  # noqa: E402
from s3server.tables import table_with_manifests  # noqa: E402

KINDS = ("GET", "PUT", "LIST", "HEAD", "DELETE_MULTI")


def _pyiceberg_props(wh: S3Warehouse) -> dict[str, str]:
    return {**wh.properties, "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"}


def _requests(counts: Counter[str]) -> str:
    shown = [f"{k} {counts[k]}" for k in KINDS if counts.get(k)]
    others = sum(v for k, v in counts.items() if k not in KINDS)
    if others:
        shown.append(f"other {others}")
    return f"{sum(counts.values()):>6} requests ({', '.join(shown)})"


def _measure(wh: S3Warehouse, fn: Callable[[], Any]) -> tuple[float, Counter[str], Any]:
    wh.clear_log()
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    return seconds, op_counts(wh.log()), result


SMALL = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.float64())])


def _small_batch(i: int) -> pa.Table:
    return pa.table({"id": range(10 * i, 10 * i + 10), "v": [float(i)] * 10}, schema=SMALL)


# -- (a) appends ------------------------------------------------------------------------


def appends(server: S3Server, count: int, root: Path) -> None:
    print(f"== (a) {count} small appends (10 rows each), one table per engine", flush=True)
    schema = SMALL
    results: dict[str, tuple[float, Counter[str]]] = {}

    wh = server.warehouse()
    cat = neve.connect(wh.uri, **wh.properties)
    cat.create_namespace("db")
    fs_table = cat.create_table("db.t", schema)

    def run_fs() -> list[Counter[str]]:
        per: list[Counter[str]] = []
        for i in range(count):
            wh.clear_log()
            fs_table.append(_small_batch(i))
            per.append(op_counts(wh.log()))
        return per

    seconds, counts, per = _measure(wh, run_fs)
    counts = sum(per, Counter())
    results["neve filesystem catalog on s3"] = (seconds, counts)
    metadata = [sum(c.values()) - 1 for c in per]  # less the data file's PUT
    assert sum(cat.load_table("db.t").scan().to_arrow().num_rows for _ in [0]) == 10 * count

    wh2 = server.warehouse()
    sql = neve.connect(f"sqlite:///{root}/neve.db", warehouse=wh2.uri, **wh2.properties)
    sql.create_namespace("db")
    sql_table = sql.create_table("db.t", schema)
    seconds, counts, _ = _measure(
        wh2, lambda: [sql_table.append(_small_batch(i)) for i in range(count)]
    )
    results["neve SQL catalog, s3 warehouse"] = (seconds, counts)

    from pyiceberg.catalog.sql import SqlCatalog

    wh3 = server.warehouse()
    theirs = SqlCatalog(
        "py", uri=f"sqlite:///{root}/py.db", warehouse=wh3.uri, **_pyiceberg_props(wh3)
    )
    theirs.create_namespace("db")
    py_table = theirs.create_table("db.t", schema=schema)

    def run_py() -> None:
        table = py_table
        for i in range(count):
            table.append(_small_batch(i))

    seconds, counts, _ = _measure(wh3, run_py)
    results["pyiceberg SQL catalog, s3 warehouse"] = (seconds, counts)
    assert theirs.load_table("db.t").scan().to_arrow().num_rows == 10 * count

    for name, (secs, counts) in results.items():
        print(
            f"  {name:<38} {1000 * secs / count:8.1f} ms/commit  "
            f"{_requests(counts)}  = {sum(counts.values()) / count:.1f} per commit"
        )
    print(
        f"  neve filesystem catalog: a commit's metadata requests after its data file: "
        f"median {statistics.median(metadata):g}, max {max(metadata)} (goal <= 4; the commits that also merge manifests do more)",
        flush=True,
    )


# -- (b) cold plan ----------------------------------------------------------------------


def _alternate(
    runs: int,
    neve_fn: Callable[[], tuple[float, Counter[str], Any]],
    py_fn: Callable[[], tuple[float, Counter[str], Any]],
) -> tuple[list[float], list[float], Counter[str], Counter[str], Any, Any]:
    ours: list[float] = []
    theirs: list[float] = []
    oc: Counter[str] = Counter()
    tc: Counter[str] = Counter()
    ores = tres = None
    for _ in range(runs):
        s, oc, ores = neve_fn()
        ours.append(s)
        s, tc, tres = py_fn()
        theirs.append(s)
    return ours, theirs, oc, tc, ores, tres


def _report(
    label: str, ours: list[float], theirs: list[float], oc: Counter[str], tc: Counter[str]
) -> None:
    ratios = [t / o for o, t in zip(ours, theirs, strict=True)]
    print(f"  neve       median {statistics.median(ours):7.3f} s  {_requests(oc)}")
    print(f"  pyiceberg  median {statistics.median(theirs):7.3f} s  {_requests(tc)}")
    print(
        f"  ratio pyiceberg/neve ({label}): median {statistics.median(ratios):.2f}, "
        f"spread {min(ratios):.2f}-{max(ratios):.2f} over {len(ratios)} runs; requests "
        f"{sum(tc.values()) / max(1, sum(oc.values())):.2f}x",
        flush=True,
    )


def cold_plan(server: S3Server, manifests: int, runs: int) -> None:
    print(f"== (b) cold plan of a {manifests:,}-manifest table", flush=True)
    from pyiceberg.table import StaticTable

    wh = server.warehouse()
    cat = neve.connect(wh.uri, **wh.properties)
    cat.create_namespace("db")
    location = table_with_manifests(cat, "db.m", manifests).metadata_location

    def ours() -> tuple[float, Counter[str], Any]:
        manifest_cache().clear()
        fresh = neve.connect(wh.uri, **wh.properties)
        return _measure(wh, lambda: len(list(fresh.load_table("db.m").scan().plan_files())))

    def theirs() -> tuple[float, Counter[str], Any]:
        def plan() -> int:
            table = StaticTable.from_metadata(location, properties=_pyiceberg_props(wh))
            return len(list(table.scan().plan_files()))

        return _measure(wh, plan)

    o, t, oc, tc, on, tn = _alternate(runs, ours, theirs)
    assert on == tn == manifests, (on, tn)
    _report("cold plan", o, t, oc, tc)


# -- (c) filtered scan ------------------------------------------------------------------


def filtered_scan(server: S3Server, scale: float, runs: int) -> None:
    from bench_merge import lineitem
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan
    from pyiceberg.table import StaticTable

    data = lineitem(scale)
    print(
        f"== (c) filtered scan of TPC-H lineitem SF{scale:g} ({data.num_rows:,} rows)", flush=True
    )
    wh = server.warehouse()
    cat = neve.connect(wh.uri, **wh.properties)
    cat.create_namespace("db")
    table = cat.create_table("db.lineitem", data.schema)
    table.append(data)
    location = cat.load_table("db.lineitem").metadata_location
    columns = ["l_orderkey", "l_quantity", "l_extendedprice", "l_shipdate"]
    lo, hi = "1995-06-01", "1995-07-01"

    def ours() -> tuple[float, Counter[str], Any]:
        manifest_cache().clear()
        fresh = neve.connect(wh.uri, **wh.properties)
        return _measure(
            wh,
            lambda: (
                fresh.load_table("db.lineitem")
                .scan(f"l_shipdate >= '{lo}' and l_shipdate < '{hi}'", columns=columns)
                .to_arrow()
            ),
        )

    def theirs() -> tuple[float, Counter[str], Any]:
        def scan() -> pa.Table:
            t = StaticTable.from_metadata(location, properties=_pyiceberg_props(wh))
            flt = And(GreaterThanOrEqual("l_shipdate", lo), LessThan("l_shipdate", hi))
            return t.scan(row_filter=flt, selected_fields=tuple(columns)).to_arrow()

        return _measure(wh, scan)

    o, t, oc, tc, orows, trows = _alternate(runs, ours, theirs)
    assert orows.num_rows == trows.num_rows > 0, (orows.num_rows, trows.num_rows)
    assert pc.sum(orows.column("l_quantity")).as_py() == pc.sum(trows.column("l_quantity")).as_py()
    print(f"  {orows.num_rows:,} rows of {data.num_rows:,}")
    _report("filtered scan", o, t, oc, tc)


# -- (d) Spark --------------------------------------------------------------------------


def spark_on_s3(server: S3Server, scale: float, runs: int, root: Path) -> None:
    """lineitem written and read (a full-scan aggregate) by Spark on s3, through neve's
    FileIO in Spark's Python tasks (no Hadoop S3 jars), against the same job on local
    disk through Spark's own Parquet reader and writer, alternately."""
    from bench_merge import lineitem
    from pyspark.sql import functions as F

    import neve.spark as ns

    data = lineitem(scale)
    print(
        f"== (d) Spark: lineitem SF{scale:g} ({data.num_rows:,} rows) written and read on s3 "
        "(neve's FileIO in Python tasks) against local disk (Spark's Parquet I/O)",
        flush=True,
    )
    spark = ns.local_session(
        "local[2]",
        "bench-object-store",
        conf={"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    # the generated Parquet files read by Spark (an Arrow table of SF1 handed over
    # through the driver does not fit its default heap)
    from bench_merge import DATA

    from neve.tpch import generate

    folder = generate(DATA / "tpch", scale, ("lineitem",))["lineitem"]
    source = spark.read.parquet(str(folder)).persist()
    source.count()
    wh = server.warehouse()
    places = {
        "s3": neve.connect(f"sqlite:///{root}/spark-s3.db", warehouse=wh.uri, **wh.properties),
        "local": neve.connect(f"sqlite:///{root}/spark-local.db", warehouse=str(root / "wh")),
    }
    for cat in places.values():
        cat.create_namespace("db")
    times: dict[str, dict[str, list[float]]] = {k: {"write": [], "read": []} for k in places}
    sums: dict[str, Any] = {}
    try:
        for run in range(runs):
            for where in ("s3", "local") if run % 2 == 0 else ("local", "s3"):
                cat = places[where]
                table = cat.create_table(f"db.l{run}", data.schema)
                t0 = time.perf_counter()
                ns.write(source, table)
                t1 = time.perf_counter()
                agg = (
                    ns.read(spark, table.refresh())
                    .groupBy("l_returnflag", "l_linestatus")
                    .agg(F.sum("l_quantity").alias("q"), F.count(F.lit(1)).alias("n"))
                    .collect()
                )
                t2 = time.perf_counter()
                times[where]["write"].append(t1 - t0)
                times[where]["read"].append(t2 - t1)
                sums[where] = sorted((r[0], r[1], float(r[2]), r[3]) for r in agg)
                cat.drop_table(f"db.l{run}", purge=True)
            assert sums["s3"] == sums["local"], "s3 and local disk disagree"
        for step in ("write", "read"):
            s3, local = times["s3"][step], times["local"][step]
            ratios = [a / b for a, b in zip(s3, local, strict=True)]
            print(
                f"  {step:<5} s3 median {statistics.median(s3):7.2f} s, local median "
                f"{statistics.median(local):7.2f} s; ratio s3/local median "
                f"{statistics.median(ratios):.2f} (spread {min(ratios):.2f}-{max(ratios):.2f}, "
                f"{runs} runs)",
                flush=True,
            )
    finally:
        spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=100)
    parser.add_argument("--manifests", type=int, default=1000)
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=None, help="5 (3 with --quick)")
    parser.add_argument("--spark-scale", type=float, default=1.0, help="TPC-H scale of (d)")
    parser.add_argument("--only", default="a,b,c,d", help="steps to run, e.g. a,c")
    parser.add_argument("--quick", action="store_true", help="small sizes, 3 runs")
    args = parser.parse_args()
    if args.quick:
        args.appends, args.manifests, args.scale = 20, 200, 0.01
        args.spark_scale = 0.01
    if args.runs is None:
        args.runs = 3 if args.quick else 5
    warnings.filterwarnings("ignore")
    steps = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="neve-bench-s3-") as tmp:
        server = S3Server(Path(tmp) / "server")
        try:
            if "a" in steps:
                appends(server, args.appends, Path(tmp))
            if "b" in steps:
                cold_plan(server, args.manifests, args.runs)
            if "c" in steps:
                filtered_scan(server, args.scale, args.runs)
            if "d" in steps:
                spark_on_s3(server, args.spark_scale, args.runs, Path(tmp))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
