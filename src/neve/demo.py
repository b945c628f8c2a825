"""The main job: a TPC-H pipeline on Spark over neve tables, on the embedded default
(an SQLite catalog and a local warehouse folder).

1. generate TPC-H ``orders`` and ``lineitem`` with tpchgen-cli (cached);
2. load them through Spark into neve tables partitioned by ``month(o_orderdate)`` and
   ``month(l_shipdate)``;
3. apply TPC-H's refresh functions as commits on primary-key tables: RF1 upserts SF x
   1500 new orders and their line items, RF2 deletes SF x 1500 old orders and their
   line items merge-on-read (position delete files; no data file is rewritten);
4. run TPC-H Q1 and Q6 (Q6 prunes to one year of partitions);
5. show the history and a time-travel query;
6. upkeep: compact the partitions RF1 and RF2 touched, expire the superseded snapshots,
   and show files and bytes before and after, and time travel to a kept snapshot.

    python -m neve.demo [--scale 0.1] [--root .demo] [--master local[2]]
"""

from __future__ import annotations

import argparse
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table as RichTable

from neve.catalog import connect
from neve.spark import (
    delete,
    from_spark_schema,
    local_session,
    read,
    register_view,
    upsert,
    write,
)
from neve.spec.snapshot import Snapshot
from neve.table.table import Table
from neve.tpch import Q1, Q6, generate

__all__ = ["main", "run"]

T = TypeVar("T")


#: The demo's output. Spark's own console progress bar is off (it draws into the middle
#: of other lines); each step shows a progress line of its own below the step's label,
#: fed by Spark's status tracker, and removes it when the step ends.
console = Console(highlight=False, markup=False, soft_wrap=True)


class _Steps:
    """Runs the demo's steps: a label on a fresh line, live progress while the step
    runs (on a terminal), its duration after it, and a summary table at the end."""

    def __init__(self) -> None:
        self.spark: SparkSession | None = None
        self.done: list[tuple[str, float]] = []

    def __call__(self, label: str, fn: Callable[[], T]) -> T:
        console.print(f"> {label}")
        t0 = time.perf_counter()
        if self.spark is None:  # nothing to follow yet (Spark's own start logs its lines)
            out = fn()
        else:
            out = self._follow(fn)
        seconds = time.perf_counter() - t0
        console.print(f"  done in {seconds:6.2f} s")
        self.done.append((label, seconds))
        return out

    def _follow(self, fn: Callable[[], T]) -> T:
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as progress:
            task = progress.add_task("  working", total=None)
            stop = threading.Event()
            poller = threading.Thread(target=self._poll, args=(progress, task, stop), daemon=True)
            poller.start()
            try:
                return fn()
            finally:
                stop.set()
                poller.join()

    def _poll(self, progress: Progress, task: Any, stop: threading.Event) -> None:
        """Show the tasks of Spark's running stages (done of all) as the step's bar."""
        while not stop.wait(0.25):
            spark = self.spark
            if spark is None:
                continue
            try:
                tracker = spark.sparkContext.statusTracker()
                infos = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
            except Exception:  # the session is stopping; nothing more to show
                return
            stages = [s for s in infos if s is not None]
            if not stages:
                progress.update(task, description="  working", total=None)
                continue
            progress.update(
                task,
                description=f"  Spark stage {', '.join(str(s.stageId) for s in stages)}",
                completed=sum(s.numCompletedTasks for s in stages),
                total=sum(s.numTasks for s in stages),
            )

    def summary(self) -> None:
        table = RichTable(title="what the demo did", title_justify="left")
        table.add_column("step")
        table.add_column("seconds", justify="right")
        for label, seconds in self.done:
            table.add_row(label, f"{seconds:.2f}")
        table.add_row("total", f"{sum(s for _, s in self.done):.2f}", style="bold")
        console.print(table)


def _history(table: Table) -> None:
    console.print(f"history of {table.name}:")
    for s in table.snapshots():
        summary = s.summary
        console.print(
            f"  {s.snapshot_id:>20}  {s.operation.value:<9}"
            f" +{summary.get('added-records', '0'):>8} -{summary.get('deleted-records', '0'):>8}"
            f"  total {summary.get('total-records', '?'):>9}"
            f"  files {summary.get('total-data-files', '?'):>5}"
            f"  rows deleted by delete files {summary.get('total-position-deletes', '0'):>6}"
        )


def _written(table: Table, executed_by: str | None = None) -> None:
    """What the table's latest commit wrote, from its snapshot summary (and which path
    ran a MERGE or upsert: Spark jobs, or the driver for a small change)."""
    snap = table.refresh().current_snapshot()
    if snap is None:
        return
    s = snap.summary
    console.print(
        f"  {table.name}: +{s.get('added-records', '0')} rows in "
        f"{s.get('added-data-files', '0')} data files, "
        f"{s.get('added-position-deletes', '0')} rows marked deleted in "
        f"{s.get('added-delete-files', '0')} delete files, "
        f"{s.get('deleted-data-files', '0')} data files removed"
        + (f" (ran on {_PATHS.get(executed_by, executed_by)})" if executed_by else "")
    )


#: How the demo names the paths a MERGE or upsert ran on (``MergeResult.executed_by``).
_PATHS = {"spark": "Spark jobs", "spark-driver": "the driver: a small change"}


def run(root: Path, scale: float, master: str) -> None:
    root = root.resolve()
    for stale in ("warehouse", "catalog.db"):
        target = root / stale
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    root.mkdir(parents=True, exist_ok=True)
    step = _Steps()

    sources = step(
        f"generate TPC-H SF{scale:g} orders and lineitem with tpchgen-cli (cached)",
        lambda: generate(root / "tpch", scale, ("orders", "lineitem"), parts=2),
    )
    spark = step(
        f"start Spark ({master})",
        lambda: local_session(
            master,
            "neve-demo",
            conf={"spark.ui.showConsoleProgress": "false", "spark.driver.memory": "2g"},
        ),
    )
    spark.sparkContext.setLogLevel("ERROR")
    step.spark = spark
    catalog = connect(f"sqlite:///{root}/catalog.db", warehouse=str(root / "warehouse"))
    console.print(f"catalog: {catalog}")
    catalog.create_namespace("tpch")

    orders_src = spark.read.parquet(str(sources["orders"]))
    lineitem_src = spark.read.parquet(str(sources["lineitem"]))
    orders = catalog.create_table(
        "tpch.orders",
        from_spark_schema(orders_src.schema),
        partition_by=["month(o_orderdate)"],
        primary_key=["o_orderkey"],
    )
    lineitem = catalog.create_table(
        "tpch.lineitem",
        from_spark_schema(lineitem_src.schema),
        partition_by=["month(l_shipdate)"],
        primary_key=["l_orderkey", "l_linenumber"],
    )
    step("load orders through Spark", lambda: write(orders_src, orders))
    step("load lineitem through Spark", lambda: write(lineitem_src, lineitem))
    loaded = lineitem.current_snapshot()
    after_rf1 = _refresh(spark, step, scale, (orders_src, orders), (lineitem_src, lineitem))
    _queries(spark, step, lineitem)
    _history(orders)
    _history(lineitem)
    if loaded is not None and after_rf1 is not None:
        then: DataFrame = read(spark, lineitem, snapshot_id=loaded.snapshot_id)
        between = read(spark, lineitem, snapshot_id=after_rf1.snapshot_id)
        console.print(
            f"time travel: lineitem had {then.count():,} rows after the load, "
            f"{between.count():,} after RF1, and has {read(spark, lineitem).count():,} now"
        )
    console.print(f"metadata: {lineitem.metadata_location}")
    console.print()
    for table in (orders, lineitem):
        _upkeep(spark, table.refresh(), step)
    step.summary()
    spark.stop()


def _refresh(
    spark: SparkSession,
    step: _Steps,
    scale: float,
    orders: tuple[DataFrame, Table],
    lineitem: tuple[DataFrame, Table],
) -> Snapshot | None:
    """TPC-H's refresh functions RF1 and RF2 on the (source rows, table) pairs of
    orders and lineitem; returns lineitem's snapshot after RF1."""
    orders_src, orders_table = orders
    lineitem_src, lineitem_table = lineitem
    # RF1: SF x 1500 new orders with fresh keys above the current maximum, and their
    # line items; built from generated rows so values follow TPC-H's distributions.
    n_new = max(1, int(scale * 1500))
    max_key = orders_src.agg(F.max("o_orderkey")).collect()[0][0]

    def rf1() -> None:
        # the keys once (a top-k on Spark), then each table's rows by a filter that the
        # Parquet reader pushes down; each upsert is small enough for the driver path
        picked = orders_src.orderBy("o_orderkey").limit(n_new).select("o_orderkey")
        keys = [row[0] for row in picked.collect()]
        new_orders = orders_src.where(F.col("o_orderkey").isin(keys)).withColumn(
            "o_orderkey", F.col("o_orderkey") + F.lit(max_key)
        )
        new_items = lineitem_src.where(F.col("l_orderkey").isin(keys)).withColumn(
            "l_orderkey", F.col("l_orderkey") + F.lit(max_key)
        )
        done = upsert(spark, new_orders.select(*orders_src.columns), orders_table)
        _written(orders_table, done.executed_by)
        done = upsert(spark, new_items.select(*lineitem_src.columns), lineitem_table)
        _written(lineitem_table, done.executed_by)

    step(f"RF1: upsert {n_new:,} new orders and their line items (2 commits)", rf1)
    after_rf1 = lineitem_table.current_snapshot()

    # RF2: delete SF x 1500 old orders (the lowest keys) and their line items.
    cutoff = (
        orders_src.orderBy("o_orderkey").select("o_orderkey").limit(n_new).agg(F.max("o_orderkey"))
    ).collect()[0][0]

    def rf2() -> None:
        delete(spark, orders_table, f"o_orderkey <= {cutoff}")
        _written(orders_table)
        delete(spark, lineitem_table, f"l_orderkey <= {cutoff}")
        _written(lineitem_table)

    step(f"RF2: delete {n_new:,} old orders and their line items (merge-on-read)", rf2)
    return after_rf1


def _queries(spark: SparkSession, step: _Steps, lineitem: Table) -> None:
    """TPC-H Q1 and Q6 on Spark, and how many lineitem files Q6's year plans."""
    register_view(spark, lineitem, "lineitem")
    q1: list[Any] = step("TPC-H Q1 (pricing summary) on Spark", lambda: spark.sql(Q1).collect())
    q6: list[Any] = step("TPC-H Q6 (revenue change, 1994)", lambda: spark.sql(Q6).collect())
    year = "l_shipdate >= '1994-01-01' and l_shipdate < '1995-01-01'"
    planned = len(lineitem.scan(filter=year).plan_files())
    total = len(lineitem.scan().plan_files())
    console.print()
    console.print("Q1:")
    for row in q1:
        console.print(
            f"  {row['l_returnflag']} {row['l_linestatus']}  qty {row['sum_qty']:>14,.2f}"
            f"  charge {row['sum_charge']:>20,.2f}  orders {row['count_order']:>9,}"
        )
    console.print(
        f"Q6 revenue: {q6[0]['revenue']:,.2f}  (planned {planned} of {total} lineitem files)"
    )
    console.print()


#: Compaction options for the demo: RF1 left a small file next to the loaded one in the
#: partitions it touched, RF2 left deletion vectors; both qualify.
_COMPACT = {"min-input-files": "2", "delete-ratio-threshold": "0.000001"}


def _footprint(table: Table) -> str:
    tasks = table.scan().plan_files()
    deletes = {(d.file_path, d.content_offset) for t in tasks for d in t.delete_files}
    listed = table.io.list_files(table.location.rstrip("/"))
    size = sum(table.io.file_size(p) for p in listed)
    return (
        f"{len(tasks)} data files, {len(deletes)} delete files; "
        f"{len(listed)} files ({size / 1e6:,.1f} MB) under its location"
    )


def _upkeep(spark: Any, table: Table, step: _Steps) -> None:
    """Compact the partitions RF1 and RF2 touched, expire the superseded snapshots, and
    show that time travel to a kept snapshot still works."""
    console.print(f"{table.name} before upkeep: {_footprint(table)}")
    rows = read(spark, table).count()
    done = step(
        f"compact {table.name} (small files and files with deletes, per partition)",
        lambda: table.maintenance.rewrite_data_files(options=_COMPACT),
    )
    console.print(
        f"  rewrote {done.rewritten_data_files_count} data files into "
        f"{done.added_data_files_count}, dropped {done.removed_delete_files_count} delete files"
    )
    table = table.refresh()
    kept = table.snapshots()[0]
    table.create_tag("loaded", kept.snapshot_id)  # a tag keeps its snapshot's files
    expired = step(
        f"expire {table.name}'s superseded snapshots (the head and the tag 'loaded' stay)",
        lambda: table.maintenance.expire_snapshots(
            older_than=int(time.time() * 1000) + 1, retain_last=1
        ),
    )
    console.print(
        f"  expired {len(expired.expired_snapshot_ids)} snapshots, deleted "
        f"{expired.deleted['data_files']} data files, "
        f"{expired.deleted['position_delete_files']} delete files, "
        f"{expired.deleted['manifest_files']} manifests, "
        f"{expired.deleted['manifest_lists']} manifest lists"
    )
    table = table.refresh()
    console.print(f"{table.name} after upkeep: {_footprint(table)}")
    now = read(spark, table).count()
    back = read(spark, table, ref="loaded").count()
    console.print(
        f"  {now:,} rows now (were {rows:,}); time travel to the tag 'loaded' "
        f"({kept.operation.value} {kept.snapshot_id}): {back:,} rows"
    )


def main() -> None:
    p = argparse.ArgumentParser(description="neve's main job: a TPC-H pipeline on Spark")
    p.add_argument("--root", default=".demo", help="folder for data, catalog and warehouse")
    p.add_argument("--scale", type=float, default=0.1, help="TPC-H scale factor")
    p.add_argument("--master", default="local[2]", help="Spark master URL")
    args = p.parse_args()
    run(Path(args.root), args.scale, args.master)


if __name__ == "__main__":
    main()
