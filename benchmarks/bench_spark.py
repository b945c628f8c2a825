"""Spark data plane against raw Spark Parquet, in one Spark session on the same data
(TPC-H lineitem, generated with tpchgen-cli; SF1 = 6M rows by default).

Five steps, raw Spark and neve taking turns, ``--runs`` times each after one unmeasured
run of each (the JVM's compiled code, Spark's Python workers and the page cache warm on
both sides, not on whichever runs first); each step prints both medians and the median
ratio neve/raw with its spread (benchmarks/harness.py). Before every timed run the
script collects the heaps of Python and of the driver's JVM (untimed), so that a
collection of garbage left by earlier runs does not fall on whichever side runs next:

1. unpartitioned write   raw: df.write.parquet        neve: neve.spark.write
2. full-scan aggregate    raw: spark.read.parquet + Q1  neve: neve.spark.read + Q1
3. month-partitioned write raw: partitionBy(month col) neve: table partitioned by month(l_shipdate)
                          two more sides in the same rounds, each the same work as one of
                          the first two: raw-hash, rows shuffled by month first, as neve's
                          write.distribution-mode=hash (Iceberg's default) does; and
                          neve-none, a table with write.distribution-mode=none, which
                          sorts each task's rows by month as raw partitionBy does
4. one-month aggregate    raw: partition pruning      neve: filter on l_shipdate, planner pruning
5. append of 1,000 rows   raw: df.write.mode("append").parquet   neve: an append to an
                          unpartitioned table (cached rows: the fixed cost of a write)

A script, not a test: it asserts results agree (every run of both aggregates), never
times.

    .venv/bin/python benchmarks/bench_spark.py [--scale 1] [--runs 5] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness

DATA = Path(__file__).resolve().parent / "data"

MONTH = ("1995-03-01", "1995-04-01")
#: Rows of each small append (step 5).
SMALL_ROWS = 1_000


def q1(df: Any) -> list[Any]:
    from pyspark.sql import functions as F

    price = F.col("l_extendedprice") * (1 - F.col("l_discount"))
    return sorted(
        df.where(F.col("l_shipdate") <= F.lit("1998-09-02").cast("date"))
        .groupBy("l_returnflag", "l_linestatus")
        .agg(
            F.sum("l_quantity").alias("sum_qty"),
            F.sum(price).alias("sum_disc_price"),
            F.sum(price * (1 + F.col("l_tax"))).alias("sum_charge"),
            F.count(F.lit(1)).alias("n"),
        )
        .collect()
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--quick", action="store_true", help="SF 0.01")
    harness.add_runs_argument(p)
    p.add_argument("--master", default="local[2]")
    args = p.parse_args()
    warnings.simplefilter("ignore")
    with harness.session("Spark data plane: neve against raw Spark Parquet", args.runs):
        run(0.01 if args.quick else args.scale, args.runs, args.master)


def run(scale: float, runs: int, master: str) -> None:

    from pyspark.sql import functions as F

    import neve
    from neve.spark import from_spark_schema, local_session
    from neve.spark import read as neve_read
    from neve.spark import write as neve_write
    from neve.spec.properties import TableProperties
    from neve.tpch import generate

    source = generate(DATA / "tpch", scale, ("lineitem",), parts=4)["lineitem"]
    spark = local_session(
        master,
        "neve-bench",
        conf={
            "spark.driver.memory": "6g",
            # the heap is committed whole from the start: a full collection (settle)
            # would otherwise shrink it, and the next run would pay to grow it again
            "spark.driver.extraJavaOptions": "-Xms6g",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "8",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    root = Path(tempfile.mkdtemp(prefix="neve-bench-spark-"))
    try:
        # raw Spark writes with the codec and the dictionary page size neve's tables
        # default to (Iceberg's zstd and 2 MB; parquet-java's own page is 1 MB, which
        # writes lineitem ~4% faster), so the ratios measure neve's work, not a layout
        codec = "zstd"
        spark.conf.set("spark.sql.parquet.compression.codec", codec)
        dict_page = str(TableProperties({}).as_int("write.parquet.dict-size-bytes"))

        def raw_write(df: Any) -> Any:
            return df.write.mode("overwrite").option("parquet.dictionary.page.size", dict_page)

        src = spark.read.parquet(str(source))
        rows = src.count()
        print(
            f"TPC-H lineitem SF{scale:g}: {rows:,} rows, Spark {spark.version}, {master}, "
            f"Parquet {codec}, dictionary pages of {int(dict_page) >> 20} MB, on both sides"
        )
        cat = neve.connect(f"sqlite:///{root}/cat.db", warehouse=str(root / "wh"))
        cat.create_namespace("tpch")
        schema = from_spark_schema(src.schema)

        def settle() -> None:
            """Collect both heaps before a timed run, so that neither side pays for
            collecting the garbage the runs before it left (the driver's JVM holds 6 GB)."""
            gc.collect()
            spark.sparkContext._jvm.System.gc()

        def measure(
            label: str,
            raw: Callable[[], Any],
            ours: Callable[[], Any],
            check: Callable[[Any, Any], bool] | None = None,
            also: dict[str, Callable[[], Any]] | None = None,
            compare: tuple[tuple[str, str], ...] = (),
        ) -> None:
            """Time ``raw``, ``ours`` and the sides of ``also`` in alternating rounds;
            report neve against raw, and each (subject, reference) pair of ``compare``."""

            out: dict[str, list[Any]] = {"raw": [], "neve": []}

            def side(name: str, fn: Callable[[], Any]) -> Callable[[], float]:
                def one() -> float:
                    settle()
                    took, result = harness.timed(fn)
                    out[name].append(result)
                    return took

                return one

            sides = {"neve": side("neve", ours), "raw": side("raw", raw)}
            for name, fn in (also or {}).items():
                out[name] = []
                sides[name] = side(name, fn)
            measured = harness.alternate(sides, runs, warmup=True)
            if check is not None:
                for a, b in zip(out["raw"], out["neve"], strict=True):
                    assert check(a, b), f"{label}: raw Parquet and neve differ"
            harness.report(label, measured, "neve", "raw", width=24)
            for subject, reference in compare:
                harness.report(
                    f"{label}: {subject} against {reference}",
                    measured,
                    subject,
                    reference,
                    width=24,
                )

        # 1. unpartitioned write
        raw_flat = str(root / "raw-flat")
        flat = cat.create_table("tpch.lineitem_flat", schema)

        measure(
            "unpartitioned write",
            lambda: raw_write(src).parquet(raw_flat),
            lambda: neve_write(src, flat, mode="overwrite"),
        )
        flat = flat.refresh()

        # 2. full-scan aggregate
        measure(
            "full-scan aggregate (Q1)",
            lambda: q1(spark.read.parquet(raw_flat)),
            lambda: q1(neve_read(spark, flat)),
            lambda a, b: bool(a == b),
        )

        # 3. month-partitioned write
        raw_part = str(root / "raw-month")
        monthly = cat.create_table(
            "tpch.lineitem_month", schema, partition_by=["month(l_shipdate)"]
        )
        monthly_none = cat.create_table(
            "tpch.lineitem_month_none",
            schema,
            partition_by=["month(l_shipdate)"],
            properties={"write.distribution-mode": "none"},
        )
        with_month = src.withColumn("l_shipmonth", F.date_format("l_shipdate", "yyyy-MM"))
        raw_hashed = str(root / "raw-month-hashed")
        measure(
            "month-partitioned write",
            lambda: raw_write(with_month).partitionBy("l_shipmonth").parquet(raw_part),
            lambda: neve_write(src, monthly, mode="overwrite"),
            also={
                "raw-hash": lambda: (
                    raw_write(with_month.repartition("l_shipmonth"))
                    .partitionBy("l_shipmonth")
                    .parquet(raw_hashed)
                ),
                "neve-none": lambda: neve_write(src, monthly_none, mode="overwrite"),
            },
            # each against the side doing the same work
            compare=(("neve", "raw-hash"), ("neve-none", "raw")),
        )
        monthly = monthly.refresh()

        # 4. one-month filtered aggregate
        lo, hi = MONTH
        measure(
            "one-month aggregate",
            lambda: q1(spark.read.parquet(raw_part).where(F.col("l_shipmonth") == lo[:7])),
            lambda: q1(
                neve_read(spark, monthly, filter=f"l_shipdate >= '{lo}' and l_shipdate < '{hi}'")
            ),
            lambda a, b: bool(a == b),
        )
        # 5. small appends: what a write costs beyond Spark's job (micro-batches)
        small = src.limit(SMALL_ROWS).cache()
        small.count()
        raw_small = raw_write(small).mode("append")
        appended = cat.create_table("tpch.lineitem_small", schema)
        measure(
            f"append of {SMALL_ROWS:,} rows",
            lambda: raw_small.parquet(str(root / "raw-small")),
            lambda: neve_write(small, appended, mode="append"),
        )
        small.unpersist()
        files = len(monthly.scan().plan_files())
        print(
            f"  neve month table: {files} data files; raw month folders: "
            f"{sum(1 for _ in Path(raw_part).glob('l_shipmonth=*/*.parquet'))} files "
            f"(raw-hash: {sum(1 for _ in Path(raw_hashed).glob('l_shipmonth=*/*.parquet'))}); "
            f"neve-none table: {len(monthly_none.refresh().scan().plan_files())} data files"
        )
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
