"""neve against another version of itself, step by step: neve's side of the README's
benchmarks (pyarrow and Spark steps), each run in fresh processes, this checkout's
code and the code at ``--other`` (a ``src`` folder, e.g. a worktree of an older commit)
taking turns.

Why: a README ratio compares neve with a reference (pyiceberg, raw Spark) that is the
same program in both versions, so whether a ratio got worse is whether neve's own time
did. Two runs of a benchmark script, one per version, also measure the reference twice,
and its drift between the runs (10-20% here) lands in the comparison; alternating the
two versions' neve step in one run leaves it out.

Steps (``--only``):
- ``plan``: bench_scan.py's planning (``time_plans``) on its scattered layout (10,000 files in
  100 manifests), cold (the first plan, from a collected heap) and warm (the median of
  20 more plans) in each process;
- ``scan``: TPC-H lineitem SF``--scale`` read in full to Arrow (bench_scan.py part 2),
  after one unmeasured scan in the process; the median of 3;
- ``upsert``: bench_merge.py (b), the 6,000-row upsert into lineitem SF0.1 (v2, primary
  key, bucket(16, l_orderkey)), the first upsert of the process, then the snapshot is
  set back;
- ``spark``: bench_spark.py's neve steps on lineitem SF``--scale`` in a fresh
  ``local[2]`` session per process (after one unmeasured job): the unpartitioned
  write, the full-scan Q1, the month-partitioned write, the one-month Q1;
- ``changelog``: bench_changelog.py's ``neve.spark.changes`` of one upsert of 60,000 rows
  into lineitem SF``--scale`` (v3, primary key, bucket(16, l_orderkey), merge-on-read)
  in a fresh ``local[2]`` session per process, as called and on Spark tasks only
  (``local_rows_max=0``), each materialised in full after one unmeasured changelog; the
  median of 3;
- ``orphans``: bench_maintenance.py (c), the dry-run orphan listing of a table with
  1,000 snapshots (50 with ``--quick``) under a location of 100,000 files, after one
  unmeasured listing in the process; the median of 3.

The tables are written once by this checkout's code and read by both versions. Both
versions must return the same rows. Reported per step: both medians and the median of
the per-round ratios this/other with its spread (benchmarks/harness.py). A script, not
a test: it asserts nothing about time.

    .venv/bin/python benchmarks/bench_versions.py --other ../wt-base/src
        [--runs 10] [--only plan,scan,upsert,spark,changelog,orphans] [--scale 1] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import harness
import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
SIDES = ("this", "other")
#: The catalog name a step's tables were made under, when not "bench" (None: the default).
NAMES: dict[str, str | None] = {"orphans": None}


def _run(src: Path, *args: str) -> dict[str, Any]:
    """Run this script's worker with ``src`` first on the import path; its JSON answer."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, __file__, "--_worker", *args],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    answer: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return answer


def worker(args: list[str]) -> None:
    import bench_merge

    import neve

    step, uri, warehouse = args[:3]
    cat = neve.connect(uri, warehouse=warehouse, name=NAMES.get(step, "bench"))
    if step == "plan":
        import bench_scan

        lo, hi, max_id = (int(a) for a in args[3:6])
        plan = bench_scan._neve_plan(uri, warehouse, "bench.scattered", lo, hi, max_id)
        cold, warm, _, digest = bench_scan.time_plans(plan, 20)
        times = {"plan cold": cold, "plan warm": statistics.median(warm)}
        print(json.dumps({"times": times, "digest": digest}))
    elif step == "scan":
        table = cat.load_table("tpch.lineitem")
        table.scan().to_arrow()
        took = []
        for _ in range(3):
            seconds, out = harness.timed(lambda: table.scan().to_arrow())
            took.append(seconds)
        digest = [out.num_rows, int(pc.sum(out.column("l_orderkey")).as_py())]
        print(json.dumps({"times": {"scan to Arrow": statistics.median(took)}, "digest": digest}))
    elif step == "upsert":
        table = cat.load_table("bench.lineitem")
        base = table.metadata.current_snapshot_id
        data = bench_merge.lineitem(float(args[3]))
        source = bench_merge.upsert_source(data, max(1, int(30_000 * float(args[3]))))
        del data
        seconds, _ = harness.timed(table.upsert, source)
        after = cat.load_table("bench.lineitem")
        digest = list(
            bench_merge.checksum(after.scan(columns=["l_orderkey", "l_quantity"]).to_arrow())
        )
        after.set_current_snapshot(base)
        label = f"upsert {source.num_rows:,} rows"
        print(json.dumps({"times": {label: seconds}, "digest": [str(x) for x in digest]}))
    elif step == "spark":
        print(json.dumps(spark_worker(cat, Path(args[3]))))
    elif step == "changelog":
        print(json.dumps(changelog_worker(cat, int(args[3]), int(args[4]))))
    elif step == "orphans":
        table = cat.load_table("bench.history")
        table.maintenance.remove_orphan_files(dry_run=True)
        took = []
        for _ in range(3):
            seconds, out = harness.timed(table.maintenance.remove_orphan_files, dry_run=True)
            took.append(seconds)
        found = sorted(out.orphan_file_locations)
        times = {"orphan listing": statistics.median(took)}
        print(json.dumps({"times": times, "digest": [len(found), found[:3]]}))
    else:
        raise SystemExit(f"unknown step {step!r}")


def spark_worker(cat: Any, source: Path) -> dict[str, Any]:
    """bench_spark.py's four neve steps in a fresh Spark session (after one unmeasured
    Spark job over the source): the tables are overwritten in place."""
    from bench_spark import MONTH, q1

    from neve.spark import local_session
    from neve.spark import read as neve_read
    from neve.spark import write as neve_write

    spark = local_session("local[2]", "neve-bench-versions", conf=SPARK_CONF)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        src = spark.read.parquet(str(source))
        src.count()
        flat, monthly = cat.load_table("tpch.flat"), cat.load_table("tpch.month")
        times = {"spark write": harness.timed(neve_write, src, flat, mode="overwrite")[0]}
        scan, full = harness.timed(lambda: q1(neve_read(spark, flat.refresh())))
        times["spark full scan Q1"] = scan
        times["spark month write"] = harness.timed(neve_write, src, monthly, mode="overwrite")[0]
        lo, hi = MONTH
        where = f"l_shipdate >= '{lo}' and l_shipdate < '{hi}'"
        month, part = harness.timed(lambda: q1(neve_read(spark, monthly.refresh(), filter=where)))
        times["spark one month Q1"] = month
        return {"times": times, "digest": [str(full), str(part)]}
    finally:
        spark.stop()


def changelog_worker(cat: Any, start: int, end: int) -> dict[str, Any]:
    """The changelog from ``start`` to ``end`` as called and on Spark tasks only, each
    the median of 3 after one unmeasured run, in a fresh Spark session."""
    from bench_changelog import materialise

    from neve.spark import changes, local_session

    spark = local_session("local[2]", "neve-bench-versions", conf=SPARK_CONF)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        table = cat.load_table("bench.lineitem")

        def changelog(**kw: Any) -> Any:
            return changes(spark, table, start_snapshot_id=start, end_snapshot_id=end, **kw)

        times: dict[str, float] = {}
        for label, kw in (("changelog", {}), ("changelog on tasks", {"local_rows_max": 0})):
            materialise(changelog(**kw))
            took = [harness.timed(lambda kw=kw: materialise(changelog(**kw)))[0] for _ in range(3)]
            times[label] = statistics.median(took)
        kinds = changelog().groupBy("_change_type").count().collect()
        return {"times": times, "digest": sorted([str(r[0]), int(r[1])] for r in kinds)}
    finally:
        spark.stop()


SPARK_CONF = {
    "spark.driver.memory": "6g",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
}


def _versions(label: str, other: Path, runs: int, args: list[str]) -> None:
    """Alternate the two versions' worker ``args``; report each of the times they
    answer (the first is the one the turns are taken on)."""
    got: dict[str, list[dict[str, Any]]] = {s: [] for s in SIDES}
    src = {"this": HERE.parent / "src", "other": other}

    def side(name: str) -> Any:
        def one() -> float:
            answer = _run(src[name], *args)
            got[name].append(answer)
            return float(next(iter(answer["times"].values())))

        return one

    times = harness.alternate({s: side(s) for s in SIDES}, runs)
    digests = {json.dumps(a.get("digest")) for s in SIDES for a in got[s]}
    if len(digests) != 1:
        raise RuntimeError(f"{label}: the versions returned different rows: {digests}")
    for key in got["this"][0]["times"]:
        each = {s: [float(a["times"][key]) for a in got[s]] for s in SIDES}
        harness.report(
            key, harness.Runs(each, times.load_start, times.load_end), "this", "other", width=18
        )


def bench_plan(root: Path, other: Path, runs: int, files: int, manifests: int) -> None:
    import bench_scan

    (root / "plan").mkdir()
    uri, warehouse = bench_scan.build_plan_tables(root / "plan", files, manifests)
    day = bench_scan.DAY0 + 7
    lo, hi = day * bench_scan.MICROS_PER_DAY, (day + 1) * bench_scan.MICROS_PER_DAY
    max_id = (files // 2) * bench_scan.ROWS_PER_FILE
    _versions("plan", other, runs, ["plan", uri, warehouse, str(lo), str(hi), str(max_id)])


def bench_scan_tpch(root: Path, other: Path, runs: int, scale: float) -> None:
    import bench_scan

    import neve

    uri, warehouse = f"sqlite:///{root}/tpch.db", str(root / "tpch-wh")
    cat = neve.connect(uri, warehouse=warehouse, name="bench")
    cat.create_namespace("tpch")
    data = pq.read_table(bench_scan.lineitem_path(scale))
    cat.create_table("tpch.lineitem", data.schema).append(data)
    del data
    _versions("scan", other, runs, ["scan", uri, warehouse])


def bench_upsert(root: Path, other: Path, runs: int, scale: float) -> None:
    import bench_merge

    import neve

    uri, warehouse = f"sqlite:///{root}/upsert.db", str(root / "upsert-wh")
    cat = neve.connect(uri, warehouse=warehouse, name="bench")
    cat.create_namespace("bench")
    data = bench_merge.lineitem(scale)
    table = cat.create_table(
        "bench.lineitem",
        data.schema,
        partition_by=[bench_merge.BUCKET],
        primary_key=list(bench_merge.KEYS),
        format_version=2,
    )
    table.append(data)
    _versions("upsert", other, runs, ["upsert", uri, warehouse, str(scale)])


def bench_spark_steps(root: Path, other: Path, runs: int, scale: float) -> None:
    from bench_spark import DATA

    import neve
    from neve.spark import from_spark_schema, local_session
    from neve.tpch import generate

    source = generate(DATA / "tpch", scale, ("lineitem",), parts=4)["lineitem"]
    spark = local_session("local[1]", "neve-bench-versions-schema", conf=SPARK_CONF)
    try:
        schema = from_spark_schema(spark.read.parquet(str(source)).schema)
    finally:
        spark.stop()
    uri, warehouse = f"sqlite:///{root}/spark.db", str(root / "spark-wh")
    cat = neve.connect(uri, warehouse=warehouse, name="bench")
    cat.create_namespace("tpch")
    cat.create_table("tpch.flat", schema)
    cat.create_table("tpch.month", schema, partition_by=["month(l_shipdate)"])
    _versions("spark", other, runs, ["spark", uri, warehouse, str(source)])


def bench_changelog_steps(root: Path, other: Path, runs: int, scale: float) -> None:
    from bench_changelog import create_lineitem
    from bench_merge_spark import upsert_source
    from bench_spark import DATA

    import neve
    import neve.spark as ns
    from neve.tpch import generate

    source = generate(DATA / "tpch", scale, ("lineitem",), parts=4)["lineitem"]
    uri, warehouse = f"sqlite:///{root}/changelog.db", str(root / "changelog-wh")
    cat = neve.connect(uri, warehouse=warehouse, name="bench")
    cat.create_namespace("bench")
    spark = ns.local_session("local[2]", "neve-bench-versions-changelog", conf=SPARK_CONF)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        lineitem = spark.read.parquet(str(source))
        rows = upsert_source(spark, lineitem, max(1, int(30_000 * scale)), root / "up.parquet")
        table = create_lineitem(cat, lineitem)
        ns.write(lineitem, table)
        start = table.refresh().metadata.current_snapshot_id
        ns.upsert(spark, rows, table.refresh())
        end = table.refresh().metadata.current_snapshot_id
    finally:
        spark.stop()
    _versions("changelog", other, runs, ["changelog", uri, warehouse, str(start), str(end)])


def bench_orphans(root: Path, other: Path, runs: int, snapshots: int, files: int) -> None:
    import bench_maintenance

    table = bench_maintenance.history_table(root, snapshots)
    bench_maintenance.add_strays(table.location, files)
    cat = table.catalog  # the catalog history_table made (its name: NAMES)
    _versions("orphans", other, runs, ["orphans", cat.uri, cat.warehouse])


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--_worker"]:
        worker(argv[1:])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--other", type=Path, required=True, help="the other version's src folder")
    p.add_argument("--only", default="plan,scan,upsert,spark,changelog,orphans")
    p.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="TPC-H scale of the scan, spark and changelog steps",
    )
    p.add_argument("--quick", action="store_true", help="small tables, for a smoke run")
    harness.add_runs_argument(p, default=10)
    args = p.parse_args(argv)
    other = args.other.resolve()
    if not (other / "neve" / "__init__.py").is_file():
        raise SystemExit(f"{other} holds no neve package")
    steps = args.only.split(",")
    with (
        harness.session(f"neve ({HERE.parent / 'src'}) against neve at {other}", args.runs),
        tempfile.TemporaryDirectory(prefix="neve-bench-versions-") as tmp,
    ):
        root = Path(tmp)
        if "plan" in steps:
            bench_plan(root, other, args.runs, *((200, 10) if args.quick else (10_000, 100)))
        if "scan" in steps:
            bench_scan_tpch(root, other, args.runs, 0.01 if args.quick else args.scale)
        if "upsert" in steps:
            bench_upsert(root, other, args.runs, 0.01 if args.quick else 0.1)
        if "spark" in steps:
            bench_spark_steps(root, other, args.runs, 0.01 if args.quick else args.scale)
        if "changelog" in steps:
            bench_changelog_steps(root, other, args.runs, 0.01 if args.quick else args.scale)
        if "orphans" in steps:
            sizes = (50, 2_000) if args.quick else (1_000, 100_000)
            bench_orphans(root, other, args.runs, *sizes)


if __name__ == "__main__":
    main()
