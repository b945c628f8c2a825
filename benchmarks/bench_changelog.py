"""Changelog of one upsert on Spark: neve's changelog read against diffing snapshots.

TPC-H lineitem (SF1 by default, 6M rows) as a primary-key table on (l_orderkey,
l_linenumber), bucket(16, l_orderkey), format v3, merge-on-read, written by
``neve.spark.write``. Then ``neve.spark.upsert`` of 60,000 rows at SF1 (scaled): half
existing keys with l_quantity + 1, half new keys (as benchmarks/bench_merge_spark.py).
Timed, in the same Spark session (``local[2]``), each materialising every column of its
result (Spark's ``noop`` sink), the four taking turns, ``--runs`` times each
(benchmarks/harness.py):

- neve: ``neve.spark.changes(spark, table, start_snapshot_id=<before>,
  end_snapshot_id=<upsert>)`` -- the upsert's changelog: the new files, and the rows
  its deletion vectors mark, read back by position; updates paired by the key. By
  default a changelog this small (the plan bounds it by ``local_rows_max`` rows) is
  finished by the pyarrow engine on the driver; also timed with ``local_rows_max=0``,
  read and finished by Spark tasks;
- diff (exceptAll): what a user does without a changelog: read both snapshots with
  ``neve.spark.read`` and ``before.exceptAll(after)`` (deleted rows) plus
  ``after.exceptAll(before)`` (inserted rows);
- diff (join): the same snapshots full-outer-joined on the key, keeping keys whose row
  differs (the cheaper of the two ways, usually).

The ratios are against the faster diff of each round (median and spread over the
rounds). The script checks that all three give the same changes (updates as a delete
plus an insert), never times in a test.

    .venv/bin/python benchmarks/bench_changelog.py [--scale 1] [--runs 5] [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness
from bench_merge_spark import upsert_source

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
KEYS = ("l_orderkey", "l_linenumber")
PROPS = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}


def timed(fn: Callable[[], Any]) -> float:
    return harness.timed(fn)[0]


def materialise(df: Any) -> None:
    """Compute every column of every row (and write nothing)."""
    df.write.format("noop").mode("overwrite").save()


def create_lineitem(cat: Any, lineitem: Any) -> Any:
    """The empty table ``bench.lineitem`` of ``cat`` for the DataFrame ``lineitem``: v3,
    primary key ``KEYS``, bucket(16, l_orderkey), merge-on-read."""
    import neve.spark as ns

    return cat.create_table(
        "bench.lineitem",
        ns.from_spark_schema(lineitem.schema),
        partition_by=["bucket(16, l_orderkey)"],
        primary_key=list(KEYS),
        format_version=3,
        properties=PROPS,
    )


def run(scale: float, runs: int, master: str = "local[2]") -> dict[str, harness.Ratio]:
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    import neve
    import neve.spark as ns
    from neve.tpch import generate

    source_dir = generate(DATA / "tpch", scale, ("lineitem",), parts=4)["lineitem"]
    root = Path(tempfile.mkdtemp(prefix="neve-bench-changelog-"))
    spark = ns.local_session(
        master,
        "neve-bench-changelog",
        conf={
            "spark.driver.memory": "4g",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        lineitem = spark.read.parquet(str(source_dir))
        rows = lineitem.count()
        half = max(1, int(30_000 * scale))
        source_path = root / "source.parquet"
        source = upsert_source(spark, lineitem, half, source_path)

        cat = neve.connect(f"sqlite:///{root}/neve.db", warehouse=str(root / "wh"))
        cat.create_namespace("bench")
        table = create_lineitem(cat, lineitem)
        t0 = time.perf_counter()
        ns.write(lineitem, table)
        loaded = time.perf_counter() - t0
        before = table.refresh().current_snapshot()
        assert before is not None
        t0 = time.perf_counter()
        ns.upsert(spark, source, table.refresh())
        upserted = time.perf_counter() - t0
        after = table.refresh().current_snapshot()
        assert after is not None and after.snapshot_id != before.snapshot_id
        print(
            f"TPC-H lineitem SF{scale:g}: {rows:,} rows (loaded in {loaded:.1f} s); upsert of "
            f"{2 * half:,} rows ({half:,} changed, {half:,} new) in {upserted:.1f} s; v3, "
            f"bucket(16, l_orderkey), merge-on-read, {master}",
            flush=True,
        )
        columns = [f.name for f in table.schema().fields]
        key_cols = list(KEYS)

        def changelog(local_rows_max: int | None = None) -> DataFrame:
            t = cat.load_table("bench.lineitem")
            path = {} if local_rows_max is None else {"local_rows_max": local_rows_max}
            return ns.changes(
                spark,
                t,
                start_snapshot_id=before.snapshot_id,
                end_snapshot_id=after.snapshot_id,
                **path,
            )

        def snapshots() -> tuple[DataFrame, DataFrame]:
            t = cat.load_table("bench.lineitem")
            return (
                ns.read(spark, t, snapshot_id=before.snapshot_id),
                ns.read(spark, t, snapshot_id=after.snapshot_id),
            )

        def diff_except() -> DataFrame:
            old, new = snapshots()
            deleted = old.exceptAll(new).withColumn("_change_type", F.lit("DELETE"))
            inserted = new.exceptAll(old).withColumn("_change_type", F.lit("INSERT"))
            return deleted.unionByName(inserted)

        def diff_join() -> DataFrame:
            old, new = snapshots()
            o = old.select(*[F.col(c).alias(f"o_{c}") for c in columns])
            n = new.select(*[F.col(c).alias(f"n_{c}") for c in columns])
            on = [o[f"o_{k}"] == n[f"n_{k}"] for k in key_cols]
            joined = o.join(n, on, "full_outer")
            same = F.lit(True)
            for c in columns:
                same = same & o[f"o_{c}"].eqNullSafe(n[f"n_{c}"])
            changed_rows = joined.filter(~same)
            deleted = changed_rows.filter(o[f"o_{key_cols[0]}"].isNotNull()).select(
                *[F.col(f"o_{c}").alias(c) for c in columns], F.lit("DELETE").alias("_change_type")
            )
            inserted = changed_rows.filter(n[f"n_{key_cols[0]}"].isNotNull()).select(
                *[F.col(f"n_{c}").alias(c) for c in columns], F.lit("INSERT").alias("_change_type")
            )
            return deleted.unionByName(inserted)

        # the same changes from all three (updates as a delete and an insert)
        as_plain = (
            F.when(F.col("_change_type") == "UPDATE_BEFORE", "DELETE")
            .when(F.col("_change_type") == "UPDATE_AFTER", "INSERT")
            .otherwise(F.col("_change_type"))
        )
        ours = changelog().withColumn("_change_type", as_plain).select(*columns, "_change_type")
        kinds = {r[0]: r[1] for r in changelog().groupBy("_change_type").count().collect()}
        assert kinds == {"UPDATE_BEFORE": half, "UPDATE_AFTER": half, "INSERT": half}, kinds
        tasks = changelog(0).withColumn("_change_type", as_plain).select(*columns, "_change_type")
        # the changes are small (the upsert's rows twice at most): compared on the driver
        order = [(c, "ascending") for c in (*columns, "_change_type")]
        expected = ours.toArrow().sort_by(order)
        for other in (tasks, diff_except(), diff_join()):
            got = other.select(*columns, "_change_type").toArrow().sort_by(order)
            same = got.num_rows == expected.num_rows and all(
                got.column(c).equals(expected.column(c)) for c in expected.column_names
            )  # by column: Spark's nullability flags may differ between plans
            assert same, "the changelog and the diffs disagree"

        measured = harness.alternate(
            {
                "changelog": lambda: timed(lambda: materialise(changelog())),
                "tasks-only": lambda: timed(lambda: materialise(changelog(0))),
                "exceptAll": lambda: timed(lambda: materialise(diff_except())),
                "outer-join": lambda: timed(lambda: materialise(diff_join())),
            },
            runs,
        )
        v = measured.values
        diff = [min(a, b) for a, b in zip(v["exceptAll"], v["outer-join"], strict=True)]
        runs_ = harness.Runs({**v, "diff": diff}, measured.load_start, measured.load_end)
        print(
            f"  the diffs: exceptAll {statistics.median(v['exceptAll']):.2f} s, outer join "
            f"{statistics.median(v['outer-join']):.2f} s (medians); diff = the faster of the "
            "two in each round",
            flush=True,
        )
        return {
            "changelog": harness.report(
                "neve.spark.changes", runs_, "changelog", "diff", invert=True, width=22
            ),
            "tasks-only": harness.report(
                "on Spark tasks only", runs_, "tasks-only", "diff", invert=True, width=22
            ),
        }
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--scale", type=float, default=1.0, help="TPC-H scale (1 = 6M rows)")
    p.add_argument("--master", default="local[2]", help="Spark master")
    p.add_argument("--quick", action="store_true", help="SF0.01")
    harness.add_runs_argument(p)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    with harness.session("Changelog of one upsert: neve against diffing snapshots", args.runs):
        run(0.01 if args.quick else args.scale, args.runs, args.master)


if __name__ == "__main__":
    main()
