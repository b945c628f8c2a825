"""Upserting a stream's micro-batches: the ``neve`` sink (``upsert=true``, each batch
merged on the driver by the pyarrow engine) against ``foreachBatch`` with
``neve.spark.upsert_batches`` (each batch merged by Spark jobs), in one Spark session.

A primary-key table of ``--rows`` rows (v3, merge-on-read, bucket(8, id)) is created
twice per run; a file stream of ``--batches`` Parquet files of ``--batch-rows`` rows
each (half of them updates of existing keys, half new keys; one file per micro-batch,
``maxFilesPerTrigger=1``) is upserted into a fresh copy by each path, the paths taking
turns (benchmarks/harness.py): seconds per micro-batch, both medians and the median
ratio Spark/driver with its spread. Both copies must end with the same rows. A script,
not a test.

    .venv/bin/python benchmarks/bench_stream_upsert.py [--rows 2000000]
        [--batch-rows 1000000] [--batches 2] [--runs 5] [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import warnings
from pathlib import Path

import harness
import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("qty", pa.int64()),
        pa.field("price", pa.float64()),
        pa.field("note", pa.string()),
    ]
)


def rows(ids: range, tag: int) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "qty": pa.array([(i * 7 + tag) % 100 for i in ids], pa.int64()),
            "price": pa.array([i * 0.25 + tag for i in ids], pa.float64()),
            "note": pa.array([f"n{tag}-{i % 1000}" for i in range(n)]),
        },
        schema=SCHEMA,
    )


def batch_files(folder: Path, base: int, batch_rows: int, batches: int) -> None:
    """One Parquet file per micro-batch: half updates of existing keys, half new."""
    folder.mkdir(parents=True)
    half = batch_rows // 2
    for b in range(batches):
        updates = range(b * half, (b + 1) * half)
        inserts = range(base + b * half, base + (b + 1) * half)
        table = pa.concat_tables([rows(updates, 100 + b), rows(inserts, 200 + b)])
        pq.write_table(table, folder / f"batch-{b:04d}.parquet")


def checksum(table: object) -> tuple[int, int, float]:
    import pyarrow.compute as pc

    t = table.scan().to_arrow()  # type: ignore[attr-defined]
    return (t.num_rows, pc.sum(t["qty"]).as_py(), round(pc.sum(t["price"]).as_py(), 2))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--batch-rows", type=int, default=1_000_000)
    p.add_argument("--batches", type=int, default=2)
    harness.add_runs_argument(p)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--quick", action="store_true", help="100k rows, 50k-row batches")
    args = p.parse_args()
    if args.quick:
        args.rows, args.batch_rows, args.batches = 100_000, 50_000, 2
    warnings.simplefilter("ignore")

    import neve
    import neve.spark as ns
    from neve.spark.datasource import register_datasource

    spark = ns.local_session(
        args.master,
        "bench-stream-upsert",
        conf={"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    register_datasource(spark)
    root = Path(tempfile.mkdtemp(prefix="neve-bench-stream-"))
    uri, wh = f"sqlite:///{root}/c.db", str(root / "wh")
    cat = neve.connect(uri, wh)
    cat.create_namespace("b")
    source = root / "source"
    batch_files(source, args.rows, args.batch_rows, args.batches)
    base = rows(range(args.rows), 0)
    props = {f"write.{op}.mode": "merge-on-read" for op in ("delete", "update", "merge")}
    sums: dict[str, tuple[int, int, float]] = {}
    made = {"driver": 0, "spark": 0}
    # the source files' own schema (a table's Spark schema carries field ids, which a
    # session reading by field id would look for in these files)
    source_schema = spark.read.parquet(str(source)).schema

    def one_run(path: str) -> float:
        """A fresh copy of the table, the stream upserted into it by ``path``; seconds
        per micro-batch (the table's creation untimed)."""
        made[path] += 1
        name = f"b.t_{path}_{made[path]}"
        table = cat.create_table(
            name,
            SCHEMA,
            primary_key=["id"],
            partition_by=["bucket(8, id)"],
            format_version=3,
            properties=props,
        )
        table.append(base)
        stream = (
            spark.readStream.schema(source_schema)
            .option("maxFilesPerTrigger", 1)
            .parquet(str(source))
        )
        ck = str(root / f"ck_{path}_{made[path]}")
        if path == "driver":
            writer = stream.writeStream.format("neve").options(uri=uri, warehouse=wh, upsert="true")
            target: str | None = name
        else:
            upsert = ns.upsert_batches(name, query_id=f"q{made[path]}", catalog=uri, warehouse=wh)
            writer = stream.writeStream.foreachBatch(upsert)
            target = None
        q = writer.option("checkpointLocation", ck).trigger(availableNow=True)
        elapsed, _ = harness.timed(
            lambda: (q.start(target) if target else q.start()).awaitTermination()
        )
        sums[path] = checksum(cat.load_table(name))
        cat.drop_table(name, purge=True)
        if len(sums) == 2:
            assert sums["driver"] == sums["spark"], sums
        return elapsed / args.batches

    title = (
        f"Upserting a stream: table {args.rows:,} rows; {args.batches} micro-batches of "
        f"{args.batch_rows:,} rows; seconds per micro-batch"
    )
    try:
        with harness.session(title, args.runs):
            runs = harness.alternate(
                {"spark": lambda: one_run("spark"), "driver": lambda: one_run("driver")},
                args.runs,
            )
            harness.report("upsert per micro-batch", runs, "spark", "driver")
            print("  rows check passed: both paths ended every run with the same rows")
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
