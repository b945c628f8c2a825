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
    deletes no file (apache/iceberg-python#2604), so it does less work. Each run
    expires a copy of the same table: neve's the same metadata registered under a new
    name in its catalog, the files its run deleted put back (hard links) afterwards.
(c) orphan listing: the table of (b), before expiring, with stray files added until
    its location holds ``--orphan-files`` files (100,000 by default), 1% of them older
    than the 3-day cut-off. neve's ``remove_orphan_files`` dry run against
    Iceberg-Java 1.10.2's ``remove_orphan_files`` procedure with ``dry_run`` on a copy
    (registered in its catalog): both list the whole location, compute what the
    table's metadata reaches and report the old unreachable files; both must report
    the same number.

Each step runs neve and its reference alternately, ``--runs`` times each, and prints both
medians and the median of the per-round ratios with its spread (benchmarks/harness.py).
A script, not a test: it checks results agree in every run, never times.

    .venv/bin/python benchmarks/bench_maintenance.py [--scale 1] [--files 2000]
        [--snapshots 1000] [--orphan-files 100000] [--runs 5] [--only a,b,c] [--quick]
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

import harness
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


def bench_compaction(root: Path, scale: float, n_files: int, runs: int, java: Any) -> harness.Ratio:
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
            f"default options, local[2] both; each run from the loaded snapshot",
            flush=True,
        )
        base = t.current_snapshot()
        assert base is not None
        java.sql(
            f"CALL neve.system.register_table(table => 'bench.lineitem', "
            f"metadata_file => '{location}')"
        )
        rewrite_sql = "CALL neve.system.rewrite_data_files(table => 'bench.lineitem')"
        checks: dict[str, list[tuple[int, float, int]]] = {"neve": [], "Java": []}
        files_after: dict[str, set[int]] = {"neve": set(), "Java": set()}

        def neve_run() -> float:
            t = cat.load_table("bench.lineitem")
            took, result = timed(partial(spark_maintenance.rewrite_data_files, spark, t))
            assert result.rewritten_data_files_count == n_data, result
            t = cat.load_table("bench.lineitem")
            checks["neve"].append(
                check_rows(t.scan(columns=["l_quantity", "l_orderkey"]).to_arrow())
            )
            files_after["neve"].add(len({task.file.file_path for task in t.scan().plan_files()}))
            t.set_current_snapshot(base.snapshot_id)
            return took

        def java_run() -> float:
            took, out = timed(lambda: java.sql(rewrite_sql))
            assert int(out.rows[0][0]) == n_data, out.rows
            got = java.sql(
                "SELECT count(*), sum(l_quantity), sum(l_orderkey) FROM neve.bench.lineitem"
            ).rows[0]
            checks["Java"].append((int(got[0]), round(float(got[1]), 2), int(got[2])))
            files_after["Java"].add(
                int(java.sql("SELECT count(*) FROM neve.bench.lineitem.files").scalar())
            )
            java.sql(f"CALL neve.system.rollback_to_snapshot('bench.lineitem', {base.snapshot_id})")
            return took

        measured = harness.alternate({"neve": neve_run, "Java": java_run}, runs)
        got = set(checks["neve"]) | set(checks["Java"])
        assert len(got) == 1 and next(iter(got))[0] == live, (checks, live)
        print(
            f"  both rewrote all {n_data:,} files in every run, into "
            f"{'/'.join(map(str, sorted(files_after['neve'])))} (neve) and "
            f"{'/'.join(map(str, sorted(files_after['Java'])))} (Java) files",
            flush=True,
        )
        print(f"  rows check passed: both tables hold {live:,} rows with the same sums", flush=True)
        return harness.report("rewrite_data_files", measured, "neve", "Java", width=18)
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


def bench_orphans(t: Any, total: int, java: Any, runs: int) -> harness.Ratio:
    old = add_strays(t.location, total)
    listed = len(files_below(t.location.removeprefix("file://")))
    print(
        f"{listed:,} files under the table location ({len(t.snapshots()):,} snapshots), "
        f"{old:,} of them unreachable and older than 3 days; dry runs, so every run sees "
        "the same files",
        flush=True,
    )
    java.sql(
        f"CALL neve.system.register_table(table => 'bench.history', "
        f"metadata_file => '{t.metadata_location}')"
    )
    found: dict[str, set[int]] = {"neve": set(), "Java": set()}

    def neve_run() -> float:
        took, out = timed(lambda: t.maintenance.remove_orphan_files(dry_run=True))
        found["neve"].add(len(out.orphan_file_locations))
        return took

    def java_run() -> float:
        took, out = timed(
            lambda: java.sql(
                "CALL neve.system.remove_orphan_files(table => 'bench.history', dry_run => true)"
            )
        )
        found["Java"].add(len(out.rows))
        return took

    measured = harness.alternate({"neve": neve_run, "Java": java_run}, runs)
    assert found["neve"] == found["Java"] == {old}, (found, old)
    print(f"  both found the same {old:,} orphans in every run", flush=True)
    for folder in Path(t.location.removeprefix("file://"), "data").glob("stray-*"):
        shutil.rmtree(folder)
    return harness.report("remove_orphan_files", measured, "neve", "Java", width=19)


def link_tree(src: Path, dst: Path) -> None:
    """Hard links in ``dst`` to every file below ``src`` (a copy that costs no bytes)."""
    for path in files_below(src):
        target = dst / Path(path).relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.link(path, target)


def restore(backup: Path, folder: Path) -> None:
    """Put back every file of ``backup`` missing under ``folder`` (what expiration
    deleted)."""
    for path in files_below(backup):
        target = folder / Path(path).relative_to(backup)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(path, target)


def bench_expire(root: Path, t: Any, runs: int) -> harness.Ratio:
    from pyiceberg.catalog.sql import SqlCatalog

    head = t.current_snapshot()
    snaps = len(t.snapshots())
    folder = Path(t.location.removeprefix("file://"))
    on_disk = len(files_below(folder))
    backup = root / "expire-backup"
    link_tree(folder, backup)
    pcat = SqlCatalog("bench", uri=f"sqlite:///{root}/pyiceberg.db", warehouse=f"file://{root}")
    pcat.create_namespace("bench")
    cut = dt.datetime.fromtimestamp(head.timestamp_ms / 1000, tz=dt.timezone.utc)
    print(
        f"a v2 table of {snaps:,} snapshots, {on_disk:,} files; expire all but the head. "
        "Each run expires a copy: the same metadata registered under a new name (neve: "
        "the files it deleted are put back after the run; pyiceberg deletes none)",
        flush=True,
    )
    done = {"neve": 0, "pyiceberg": 0}
    deleted: set[str] = set()

    def neve_run() -> float:
        done["neve"] += 1
        copy = t.catalog.register_table(f"bench.history_{done['neve']}", t.metadata_location)
        took, result = timed(
            lambda: copy.maintenance.expire_snapshots(older_than=head.timestamp_ms, retain_last=1)
        )
        assert len(result.expired_snapshot_ids) == snaps - 1, len(result.expired_snapshot_ids)
        deleted.add(
            ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in result.deleted.items() if v)
        )
        restore(backup, folder)
        return took

    def pyiceberg_run() -> float:
        done["pyiceberg"] += 1
        name = ("bench", f"history_{done['pyiceberg']}")
        ptbl = pcat.register_table(name, t.metadata_location)
        took, _ = timed(lambda: ptbl.maintenance.expire_snapshots().older_than(cut).commit())
        left = len(pcat.load_table(name).snapshots())
        assert left == 1, left
        return took

    measured = harness.alternate({"neve": neve_run, "pyiceberg": pyiceberg_run}, runs)
    assert len(deleted) == 1, deleted
    print(
        f"  every neve run deleted {deleted.pop()}; pyiceberg changes metadata only, 0 "
        "files deleted; both left the head alone",
        flush=True,
    )
    return harness.report("expire_snapshots", measured, "neve", "pyiceberg", width=16)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--files", type=int, default=2000)
    p.add_argument("--snapshots", type=int, default=1000)
    p.add_argument("--orphan-files", type=int, default=100_000)
    p.add_argument("--only", default="a,b,c")
    p.add_argument("--quick", action="store_true", help="SF0.01, 50 files, 50 snapshots")
    harness.add_runs_argument(p)
    args = p.parse_args()
    if args.quick:
        args.scale, args.files, args.snapshots, args.orphan_files = 0.01, 50, 50, 2000
    only = set(args.only.split(","))
    warnings.simplefilter("ignore")
    root = Path(tempfile.mkdtemp(prefix="neve-bench-maintenance-"))
    uri = f"sqlite:///{root}/java.db"
    try:
        with harness.session("Table maintenance: neve against the reference engines", args.runs):
            run(root, uri, only, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(root: Path, uri: str, only: set[str], args: argparse.Namespace) -> None:
    """The sections in ``only``."""
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
                bench_orphans(t, args.orphan_files, java, args.runs)
            if "b" in only:
                print("== (b) expiration: neve against pyiceberg", flush=True)
                bench_expire(root, t, args.runs)
    finally:
        if java is not None:
            java.close()


if __name__ == "__main__":
    main()
