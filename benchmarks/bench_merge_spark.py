"""Upsert on Spark: neve against Iceberg-Java 1.10.2's MERGE INTO, on the same data.

TPC-H lineitem (SF1 by default, 6M rows) as a primary-key table on (l_orderkey,
l_linenumber), partitioned by bucket(16, l_orderkey), format v3, merge-on-read. The
source holds 60,000 rows at SF1 (scaled with the scale factor): half are existing keys
with a changed l_quantity, half new keys. Both engines run PySpark ``local[2]`` (neve
on PySpark 4, Iceberg-Java on PySpark 3.5 in its own process, see tests/javaengine);
the engines take turns, ``--runs`` times each (benchmarks/harness.py: medians, the
median ratio neve/Java and its spread), each run starting from the same loaded snapshot
(rolled back after the run); the Java engine is started once and its statements
alternate with neve's calls. First a small upsert of 150 rows (75 changed, 75 new: the
size of the demo's RF1, which neve finishes on the driver; goal <= 0.5x Java's time),
then the large one; neve's copy-on-write upsert is then timed against Iceberg-Java the
same way.

A script, not a test: it checks both engines end with the same rows, never times.

    .venv/bin/python benchmarks/bench_merge_spark.py [--scale 1] [--runs 5]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
KEYS = ("l_orderkey", "l_linenumber")
SMALL = 150  # rows of the small upsert
PROPS = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}


def timed(fn: Callable[[], Any]) -> float:
    return harness.timed(fn)[0]


def upsert_source(spark: Any, lineitem: Any, half: int, path: Path) -> Any:
    """The upsert's source, written once to ``path`` and read back: ``half``
    random existing rows with l_quantity + 1, and ``half`` random rows moved to new
    keys (l_orderkey + the largest key)."""
    from pyspark.sql import functions as F

    max_key = lineitem.agg(F.max("l_orderkey")).collect()[0][0]
    changed = (
        lineitem.orderBy(F.rand(7))
        .limit(half)
        .withColumn(
            "l_quantity", (F.col("l_quantity") + 1).cast(lineitem.schema["l_quantity"].dataType)
        )
    )
    fresh = (
        lineitem.orderBy(F.rand(11))
        .limit(half)
        .withColumn("l_orderkey", F.col("l_orderkey") + F.lit(max_key))
    )
    changed.unionByName(fresh).write.parquet(str(path))
    return spark.read.parquet(str(path))


def run(scale: float, runs: int, master: str = "local[2]") -> dict[str, harness.Ratio]:
    """Time the upserts; returns the ratios neve/Java of neve's merge-on-read and
    copy-on-write upserts."""

    import neve
    from neve.spark import from_spark_schema, local_session, upsert, write
    from neve.tpch import generate

    sys.path.insert(0, str(HERE.parent / "tests"))
    from javaengine import IcebergJava, JdbcCatalog

    source_dir = generate(DATA / "tpch", scale, ("lineitem",), parts=4)["lineitem"]
    root = Path(tempfile.mkdtemp(prefix="neve-bench-merge-"))
    spark = local_session(
        master,
        "neve-bench-merge",
        conf={
            "spark.driver.memory": "4g",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    java: IcebergJava | None = None
    try:
        lineitem = spark.read.parquet(str(source_dir))
        rows = lineitem.count()
        half = max(1, int(30_000 * scale))
        source_path = root / "source.parquet"
        source = upsert_source(spark, lineitem, half, source_path)
        n_source = source.count()
        # a small upsert (75 changed rows, 75 new: the size of the demo's RF1 orders),
        # which neve finishes on the driver (spark.neve.local.rows-max)
        small_path = root / "small.parquet"
        small = upsert_source(spark, lineitem, SMALL // 2, small_path)

        # neve: one table, merge-on-read; copy-on-write by switching the property
        cat = neve.connect(f"sqlite:///{root}/neve.db", warehouse=str(root / "neve-wh"))
        cat.create_namespace("bench")
        table = cat.create_table(
            "bench.lineitem",
            from_spark_schema(lineitem.schema),
            partition_by=["bucket(16, l_orderkey)"],
            primary_key=list(KEYS),
            format_version=3,
            properties=PROPS,
        )
        write(lineitem, table)
        base = table.refresh().current_snapshot()
        assert base is not None

        # Iceberg-Java: its own catalog file, the same data
        uri = f"sqlite:///{root}/java.db"
        neve.connect(uri, warehouse=str(root / "java-wh")).list_namespaces()  # tables
        java = IcebergJava.start(
            root / "java-engine",
            [JdbcCatalog.from_sqlalchemy("neve", uri, str(root / "java-wh"))],
            memory="4g",
        )
        columns = ", ".join(
            f"{f.name} {f.dataType.simpleString()}" + (" NOT NULL" if f.name in KEYS else "")
            for f in lineitem.schema.fields
        )
        props = ", ".join(f"'{k}'='{v}'" for k, v in {"format-version": "3", **PROPS}.items())
        java.sql("CREATE NAMESPACE IF NOT EXISTS neve.bench")
        java.sql(
            f"CREATE TABLE neve.bench.lineitem ({columns}) USING iceberg "
            f"PARTITIONED BY (bucket(16, l_orderkey)) TBLPROPERTIES ({props})"
        )
        java.sql(f"INSERT INTO neve.bench.lineitem SELECT * FROM parquet.`{source_dir}`")
        java_base = java.sql(
            "SELECT snapshot_id FROM neve.bench.lineitem.snapshots ORDER BY committed_at DESC LIMIT 1"
        ).scalar()

        def merge_sql(path: Path) -> str:
            return (
                f"MERGE INTO neve.bench.lineitem t USING (SELECT * FROM parquet.`{path}`) s "
                "ON t.l_orderkey = s.l_orderkey AND t.l_linenumber = s.l_linenumber "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
            )

        print(
            f"TPC-H lineitem SF{scale:g}: {rows:,} rows; upsert {n_source:,} rows "
            f"({half:,} changed, {half:,} new); v3, bucket(16, l_orderkey), {master}",
            flush=True,
        )

        Check = list[tuple[int, tuple[float, int]]]

        def sides_of(src: Any, path: Path, neve_check: Check, java_check: Check) -> Any:
            """neve's upsert of ``src`` and Java's MERGE of the same rows at ``path``,
            each recording the rows it ends with and rolling back."""

            def neve_run() -> float:
                t = cat.load_table("bench.lineitem")
                took = timed(lambda: upsert(spark, src, t))
                result = cat.load_table("bench.lineitem").scan().to_arrow()
                neve_check.append((result.num_rows, _checksum(result)))
                cat.load_table("bench.lineitem").set_current_snapshot(base.snapshot_id)
                return took

            def java_run() -> float:
                assert java is not None
                took = timed(lambda: java.sql(merge_sql(path)))
                got = java.sql(
                    "SELECT count(*), sum(l_quantity), sum(l_orderkey) FROM neve.bench.lineitem"
                ).rows[0]
                java_check.append((int(got[0]), (float(got[1]), int(got[2]))))
                java.sql(f"CALL neve.system.rollback_to_snapshot('bench.lineitem', {java_base})")
                return took

            return {"neve": neve_run, "Java": java_run}

        small_neve: Check = []
        small_java: Check = []
        small_runs = harness.alternate(sides_of(small, small_path, small_neve, small_java), runs)
        assert len(set(small_neve)) == 1 and set(small_neve) == set(small_java), (
            small_neve,
            small_java,
        )
        neve_check: Check = []
        java_check: Check = []
        sides = sides_of(source, source_path, neve_check, java_check)
        mor = harness.alternate(sides, runs)
        table = cat.load_table("bench.lineitem")
        table.set_properties({"write.merge.mode": "copy-on-write"})
        cow = harness.alternate(sides, runs)
        assert len(set(neve_check)) == 1 and set(neve_check) == set(java_check), (
            neve_check,
            java_check,
        )
        assert neve_check[0][0] == rows + half
        print(
            f"  rows check passed: every run of both engines ends with {rows + half:,} rows "
            "and the same sums",
            flush=True,
        )
        out = {
            "small": harness.report(f"{SMALL}-row upsert", small_runs, "neve", "Java", width=20),
            "merge-on-read": harness.report("neve merge-on-read", mor, "neve", "Java", width=20),
            "copy-on-write": harness.report("neve copy-on-write", cow, "neve", "Java", width=20),
        }
        return out
    finally:
        if java is not None:
            java.close()
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def _checksum(table: Any) -> tuple[float, int]:
    import pyarrow.compute as pc

    qty = pc.sum(pc.cast(table.column("l_quantity"), "float64")).as_py()
    keys = pc.sum(table.column("l_orderkey")).as_py()
    return (float(qty), int(keys))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--master", default="local[2]")
    harness.add_runs_argument(p)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    with harness.session("Spark upsert: neve against Iceberg-Java MERGE INTO", args.runs):
        run(args.scale, args.runs, args.master)


if __name__ == "__main__":
    main()
