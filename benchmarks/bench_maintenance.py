"""Table maintenance: neve next to the reference engines, in one run.

(a) compaction on Spark: TPC-H lineitem at ``--scale`` (SF1 = 6M rows) as a v3
    unpartitioned table of ``--files`` small data files (2,000 by default), then 1% of
    its rows deleted by merge-on-read (``l_suppkey <= N``: deletion vectors on every
    file). The table is built once and cached under benchmarks/data/maintenance. Both
    engines get a copy of it: its metadata registered as a table of their own catalog
    (the data files are shared, never changed; each engine writes new files and
    commits to its own table). neve's ``neve.spark.maintenance.rewrite_data_files``
    (bin-pack, PySpark 4 ``local[2]``) against Iceberg-Java 1.10.2's
    ``rewrite_data_files`` procedure (binpack, PySpark 3.5 ``local[2]`` in its own
    process, tests/javaengine); default options in both (target 512 MB, so every file
    qualifies). Then both tables' rows are checked. The files the run wrote into the
    cached table's folder are removed afterwards.
(b) expiration: a v2 table built by ``--snapshots`` appends of 10 data files each
    (10,000 files with 1,000), then one overwrite replacing them all. Expire every
    snapshot but the head: neve's ``table.maintenance.expire_snapshots`` (metadata
    commit, then the data files, manifests and manifest lists deleted with 8 threads)
    against pyiceberg 0.12's ``expire_snapshots`` on a copy (the same metadata
    registered in its own SQLite catalog), which only changes metadata: pyiceberg
    deletes no file (apache/iceberg-python#2604), so it does less work.
(c) orphan listing: the table of (b), before expiring, with stray files added until
    its location holds ``--orphan-files`` files (100,000 by default), 1% of them older
    than the 3-day cut-off. neve's ``remove_orphan_files`` dry run against
    Iceberg-Java 1.10.2's ``remove_orphan_files`` procedure with ``dry_run`` on a copy
    (registered in its catalog): both list the whole location, compute what the
    table's metadata reaches and report the old unreachable files; both must report
    the same number.

A script, not a test: it checks results agree, never times. The machine may be shared:
times are from one run each.

    .venv/bin/python benchmarks/bench_maintenance.py [--scale 1] [--files 2000]
        [--snapshots 1000] [--orphan-files 100000] [--runs 2] [--only a,b,c] [--quick]
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from bench_merge import lineitem

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
OLD = 4 * 24 * 3600  # seconds: older than remove_orphan_files' 3-day default cut-off


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def files_below(folder: Path | str) -> set[str]:
    return {os.path.join(r, n) for r, _, ns in os.walk(folder) for n in ns}


def java_engine(root: Path, uri: str, warehouse: Path) -> Any:
    import neve

    sys.path.insert(0, str(HERE.parent / "tests"))
    from javaengine import IcebergJava, JdbcCatalog

    neve.connect(uri, warehouse=str(warehouse)).list_namespaces()  # the catalog tables
    java = IcebergJava.start(
        root / "java-engine",
        [JdbcCatalog.from_sqlalchemy("neve", uri, str(warehouse))],
        memory="4g",
    )
    java.sql("CREATE NAMESPACE IF NOT EXISTS neve.bench")
    return java


# -- (a) compaction on Spark ----------------------------------------------------------


def compaction_table(scale: float, n_files: int) -> tuple[str, int, int]:
    """The cached v3 table of ``n_files`` small files with 1% of its rows deleted
    (deletion vectors); returns its metadata location, live rows and deleted rows."""
    import neve
    from neve.arrow.write import write_table_files

    folder = DATA / "maintenance" / f"lineitem-sf{scale:g}-{n_files}-files"
    uri = f"sqlite:///{folder}/catalog.db"
    marker = folder / ".complete"
    if not marker.exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        data = lineitem(scale)
        cat = neve.connect(uri, warehouse=str(folder / "wh"))
        cat.create_namespace("bench")
        t = cat.create_table(
            "bench.lineitem",
            data.schema,
            format_version=3,
            properties={"write.delete.mode": "merge-on-read"},
        )
        per = math.ceil(data.num_rows / n_files)
        written = []
        for i in range(n_files):
            written += write_table_files(t, data.slice(i * per, per))
        txn = t.transaction()
        txn.add_files(written)
        txn.commit()
        n_supp = max(1, round(100 * scale))  # 1% of the 10,000 suppliers per SF
        cat.load_table("bench.lineitem").delete(f"l_suppkey <= {n_supp}")
        marker.write_text("ok\n")
    cat = neve.connect(uri, warehouse=str(folder / "wh"))
    t = cat.load_table("bench.lineitem")
    snap = t.current_snapshot()
    assert snap is not None
    live = t.scan(columns=["l_orderkey"]).to_arrow().num_rows
    deleted = int(snap.summary["total-records"]) - live
    return t.metadata_location, live, deleted


def check_rows(rows: pa.Table) -> tuple[int, float, int]:
    return (
        rows.num_rows,
        round(float(pc.sum(pc.cast(rows.column("l_quantity"), pa.float64())).as_py()), 2),
        int(pc.sum(rows.column("l_orderkey")).as_py()),
    )


def bench_compaction(
    root: Path, scale: float, n_files: int, runs: int, java: Any
) -> tuple[float, float]:
    import neve
    from neve.spark import local_session
    from neve.spark import maintenance as spark_maintenance

    location, live, deleted = compaction_table(scale, n_files)
    cache = Path(location).parent.parent
    before_run = files_below(cache)
    spark = local_session(
        "local[2]",
        "neve-bench-maintenance",
        conf={
            "spark.driver.memory": "4g",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        cat = neve.connect(f"sqlite:///{root}/neve-a.db", warehouse=str(root / "neve-a-wh"))
        cat.create_namespace("bench")
        t = cat.register_table("bench.lineitem", location)
        n_data = len({task.file.file_path for task in t.scan().plan_files()})
        n_deletes = len({d.file_path for task in t.scan().plan_files() for d in task.delete_files})
        print(
            f"TPC-H lineitem SF{scale:g}: {live + deleted:,} rows in {n_data:,} data files "
            f"(v3, unpartitioned), {deleted:,} rows ({deleted / (live + deleted):.2%}) "
            f"deleted by deletion vectors in {n_deletes:,} Puffin files; bin-pack with "
            f"default options, local[2] both; best of {runs}, alternating",
            flush=True,
        )
        base = t.current_snapshot()
        assert base is not None
        java.sql(
            f"CALL neve.system.register_table(table => 'bench.lineitem', "
            f"metadata_file => '{location}')"
        )
        rewrite_sql = "CALL neve.system.rewrite_data_files(table => 'bench.lineitem')"
        neve_times, java_times = [], []
        for _ in range(runs):  # alternating; each run starts from the loaded snapshot
            t = cat.load_table("bench.lineitem")
            took, result = timed(partial(spark_maintenance.rewrite_data_files, spark, t))
            neve_times.append(took)
            t = cat.load_table("bench.lineitem")
            neve_rows = check_rows(t.scan(columns=["l_quantity", "l_orderkey"]).to_arrow())
            neve_files = len({task.file.file_path for task in t.scan().plan_files()})
            t.set_current_snapshot(base.snapshot_id)

            took, out = timed(lambda: java.sql(rewrite_sql))
            java_times.append(took)
            got = java.sql(
                "SELECT count(*), sum(l_quantity), sum(l_orderkey) FROM neve.bench.lineitem"
            ).rows[0]
            java_rows = (int(got[0]), round(float(got[1]), 2), int(got[2]))
            java_files = int(java.sql("SELECT count(*) FROM neve.bench.lineitem.files").scalar())
            java.sql(f"CALL neve.system.rollback_to_snapshot('bench.lineitem', {base.snapshot_id})")
            assert neve_rows == java_rows and neve_rows[0] == live, (neve_rows, java_rows, live)
            assert result.rewritten_data_files_count == n_data == int(out.rows[0][0]), out.rows
        took_neve, took_java = min(neve_times), min(java_times)
        print(
            f"  neve rewrite_data_files (Spark)   {took_neve:7.2f} s   "
            f"{result.rewritten_data_files_count:,} -> {neve_files} files",
            flush=True,
        )
        print(
            f"  Iceberg-Java rewrite_data_files   {took_java:7.2f} s   "
            f"{int(out.rows[0][0]):,} -> {java_files} files   neve/Java {took_neve / took_java:5.2f}",
            flush=True,
        )
        print(f"  rows check passed: both tables hold {live:,} rows with the same sums", flush=True)
        return took_neve, took_java
    finally:
        spark.stop()
        for path in files_below(cache) - before_run:  # what this run wrote
            os.remove(path)
        for folder, _, _ in os.walk(cache, topdown=False):  # and its write directories
            if not os.listdir(folder):
                os.rmdir(folder)


# -- (b) and (c): a table with a long history -----------------------------------------

SMALL = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def history_table(root: Path, snapshots: int, per: int = 10) -> Any:
    """``snapshots`` appends of ``per`` one-row files each, then an overwrite of all."""
    import neve
    from neve.arrow.write import write_table_files

    cat = neve.connect(f"sqlite:///{root}/neve-b.db", warehouse=str(root / "neve-b-wh"))
    cat.create_namespace("bench")
    t = cat.create_table("bench.history", SMALL, format_version=2)
    for s in range(snapshots):
        files = []
        for i in range(per):
            k = s * per + i
            files += write_table_files(t, pa.table({"id": [k], "v": [f"v{k}"]}, schema=SMALL))
        txn = t.transaction()
        txn.add_files(files)
        txn.commit()
    t.overwrite(pa.table({"id": [-1], "v": ["last"]}, schema=SMALL))
    return cat.load_table("bench.history")


def add_strays(location: str, total: int) -> int:
    """Stray files under the location until it holds ``total`` files, 1% of them old
    enough to be orphans; returns how many are old."""
    base = Path(location.removeprefix("file://"))
    have = len(files_below(base))
    want = max(0, total - have)
    old = max(1, want // 100)
    stamp = time.time() - OLD
    for i in range(want):
        folder = base / "data" / f"stray-{i // 1000:03d}"
        if i % 1000 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"file-{i:06d}.parquet"
        path.write_bytes(b"x")
        if i < old:
            os.utime(path, (stamp, stamp))
    return old


def bench_orphans(t: Any, total: int, java: Any) -> tuple[float, float]:
    old = add_strays(t.location, total)
    listed = len(files_below(t.location.removeprefix("file://")))
    print(
        f"{listed:,} files under the table location ({len(t.snapshots()):,} snapshots), "
        f"{old:,} of them unreachable and older than 3 days; dry runs",
        flush=True,
    )
    took_neve, found = timed(lambda: t.maintenance.remove_orphan_files(dry_run=True))
    java.sql(
        f"CALL neve.system.register_table(table => 'bench.history', "
        f"metadata_file => '{t.metadata_location}')"
    )
    took_java, out = timed(
        lambda: java.sql(
            "CALL neve.system.remove_orphan_files(table => 'bench.history', dry_run => true)"
        )
    )
    assert len(found.orphan_file_locations) == old == len(out.rows), (
        len(found.orphan_file_locations),
        old,
        len(out.rows),
    )
    print(f"  neve remove_orphan_files          {took_neve:7.2f} s   {old:,} orphans", flush=True)
    print(
        f"  Iceberg-Java remove_orphan_files  {took_java:7.2f} s   {len(out.rows):,} orphans   "
        f"neve/Java {took_neve / took_java:5.2f}",
        flush=True,
    )
    for folder in Path(t.location.removeprefix("file://"), "data").glob("stray-*"):
        shutil.rmtree(folder)
    return took_neve, took_java


def bench_expire(root: Path, t: Any) -> tuple[float, float]:
    from pyiceberg.catalog.sql import SqlCatalog

    head = t.current_snapshot()
    snaps = len(t.snapshots())
    on_disk = len(files_below(t.location.removeprefix("file://")))
    pcat = SqlCatalog("bench", uri=f"sqlite:///{root}/pyiceberg.db", warehouse=f"file://{root}")
    pcat.create_namespace("bench")
    ptbl = pcat.register_table(("bench", "history"), t.metadata_location)
    cut = dt.datetime.fromtimestamp(head.timestamp_ms / 1000, tz=dt.timezone.utc)
    took_pyi, _ = timed(lambda: ptbl.maintenance.expire_snapshots().older_than(cut).commit())
    took_neve, result = timed(
        lambda: t.maintenance.expire_snapshots(older_than=head.timestamp_ms, retain_last=1)
    )
    left_pyi = len(pcat.load_table(("bench", "history")).snapshots())
    print(
        f"a v2 table of {snaps:,} snapshots, {on_disk:,} files; expire all but the head",
        flush=True,
    )
    assert len(result.expired_snapshot_ids) == snaps - 1 and left_pyi == 1, (
        len(result.expired_snapshot_ids),
        left_pyi,
    )
    counts = ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in result.deleted.items() if v)
    print(f"  neve expire_snapshots             {took_neve:7.2f} s   deleted {counts}", flush=True)
    print(
        f"  pyiceberg expire_snapshots        {took_pyi:7.2f} s   metadata only, 0 files "
        f"deleted   neve/pyiceberg {took_neve / took_pyi:5.2f}",
        flush=True,
    )
    return took_neve, took_pyi


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--files", type=int, default=2000)
    p.add_argument("--snapshots", type=int, default=1000)
    p.add_argument("--orphan-files", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=2, help="compaction runs per engine")
    p.add_argument("--only", default="a,b,c")
    p.add_argument("--quick", action="store_true", help="SF0.01, 50 files, 50 snapshots")
    args = p.parse_args()
    if args.quick:
        args.scale, args.files, args.snapshots, args.orphan_files = 0.01, 50, 50, 2000
        args.runs = 1
    only = set(args.only.split(","))
    warnings.simplefilter("ignore")
    root = Path(tempfile.mkdtemp(prefix="neve-bench-maintenance-"))
    uri = f"sqlite:///{root}/java.db"
    java = None
    try:
        if only & {"a", "c"}:
            java = java_engine(root, uri, root / "java-wh")
        if "a" in only:
            print("== (a) compaction on Spark: neve against Iceberg-Java", flush=True)
            bench_compaction(root, args.scale, args.files, args.runs, java)
        if only & {"b", "c"}:
            t = history_table(root, args.snapshots)
            if "c" in only:
                print("== (c) orphan listing: neve against Iceberg-Java", flush=True)
                bench_orphans(t, args.orphan_files, java)
            if "b" in only:
                print("== (b) expiration: neve against pyiceberg", flush=True)
                bench_expire(root, t)
    finally:
        if java is not None:
            java.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
