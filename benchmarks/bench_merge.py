"""Row-level changes: neve's upsert and delete next to the reference engines, in one run.

(a) Spark upsert: neve merge-on-read vs Iceberg-Java 1.10.2's MERGE INTO vs neve
    copy-on-write (benchmarks/bench_merge_spark.py, TPC-H lineitem at ``--scale``).
(b) pyarrow upsert: TPC-H lineitem at ``--pyarrow-scale`` (SF0.1 = 600k rows) as a
    primary-key table on (l_orderkey, l_linenumber), bucket(16, l_orderkey), format v2,
    in neve and in pyiceberg (its own SQLite catalog, the same rows, identifier fields
    set). Source: 6,000 rows at SF0.1 (scaled): half existing keys with l_quantity + 1,
    half new keys. ``table.upsert`` (neve, merge-on-read: position delete files) against
    pyiceberg's ``tbl.upsert`` (copy-on-write); each run starts from the loaded snapshot;
    every run of both must end with the same rows.
(c) delete 1%: lineitem at ``--scale`` in two neve v3 tables, bucket(16, l_orderkey), one
    merge-on-read (deletion vectors), one copy-on-write. Delete ``l_suppkey <= N`` (N =
    1% of the suppliers, so ~1% of the rows, spread over every file) in each, each run
    from the loaded snapshot. Then a full-scan aggregate (sum of l_quantity and
    l_extendedprice by l_returnflag, l_linestatus) on the merge-on-read table with its
    deletion vectors against the copy-on-write table after its delete (the same rows, no
    delete files).
(d) concurrent deletes: 4 writers per engine deleting disjoint orders from the same 4
    data files of lineitem at ``--scale`` (v3, merge-on-read), neve's ``table.delete``
    (which rebases a lost commit) against Iceberg-Java 1.10.2's ``DELETE FROM`` (a
    statement refused for a concurrent commit is re-run), for ``--window`` seconds:
    commits per minute and failed attempts for each, then both tables' rows checked;
    ``--runs`` windows per engine, taking turns, each from the loaded snapshot
    (benchmarks/bench_merge_concurrent.py).
(e) the key-uniqueness check: ``table.append`` of 60,000 rows under new keys (scaled)
    to lineitem at ``--scale`` as a primary-key table (v3, bucket(16, l_orderkey)), with
    ``write.primary-key.check`` on (the default) and off. Two kinds of new keys: orders
    inside the key range (TPC-H leaves gaps in l_orderkey: every data file's bounds
    cover them, so the check probes the key column of every file) and orders above the
    largest key (bounds skip every file). The check keeps each file's probed key column
    in a process-wide cache (data files never change): "on" is a writer appending again
    in the same process, "on-cleared" the first append of a process.

Every step runs neve and its reference alternately, ``--runs`` times each, and prints
both medians and the median of the per-round ratios with its spread
(benchmarks/harness.py). A script, not a test: it checks results agree, never times.

    .venv/bin/python benchmarks/bench_merge.py [--scale 1] [--pyarrow-scale 0.1]
        [--runs 5] [--window 30] [--skip-spark] [--only a,b,c,d,e] [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import harness
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
KEYS = ("l_orderkey", "l_linenumber")
BUCKET = "bucket(16, l_orderkey)"
GROUP = ("l_returnflag", "l_linestatus")
SUMS = ("l_quantity", "l_extendedprice")


def timed(fn: Callable[..., Any], *args: Any) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def lineitem(scale: float) -> pa.Table:
    """TPC-H lineitem at ``scale`` (generated once under benchmarks/data), with plain
    string columns and no Parquet field ids, so both libraries take the same schema."""
    from neve.tpch import generate

    folder = generate(DATA / "tpch", scale, ("lineitem",))["lineitem"]
    data = pq.read_table(folder)
    fields = [
        pa.field(
            f.name,
            pa.large_string() if pa.types.is_string_view(f.type) else f.type,
            nullable=f.nullable,
        )
        for f in data.schema
    ]
    return data.cast(pa.schema(fields))


def upsert_source(data: pa.Table, half: int) -> pa.Table:
    """``half`` existing rows with l_quantity + 1 and ``half`` rows under new keys
    (l_orderkey + the largest key), drawn at random (fixed seed)."""
    rng = np.random.default_rng(7)
    picks = rng.choice(data.num_rows, size=2 * half, replace=False)
    changed = data.take(pa.array(np.sort(picks[:half])))
    qty_type = data.schema.field("l_quantity").type
    assert data.schema.names[4] == "l_quantity" and data.schema.names[0] == "l_orderkey"
    qty = pc.cast(pc.add(changed.column("l_quantity"), pa.scalar(Decimal(1))), qty_type)
    changed = changed.set_column(4, data.schema.field("l_quantity"), qty)
    fresh = data.take(pa.array(np.sort(picks[half:])))
    max_key = pc.max(data.column("l_orderkey"))
    keys = pc.add(fresh.column("l_orderkey"), max_key)
    fresh = fresh.set_column(0, data.schema.field("l_orderkey"), keys)
    return pa.concat_tables([changed, fresh])


def checksum(rows: pa.Table) -> tuple[int, Decimal, int]:
    """Row count, sum of l_quantity (exact), sum of l_orderkey."""
    return (
        rows.num_rows,
        pc.sum(rows.column("l_quantity")).as_py(),
        pc.sum(rows.column("l_orderkey")).as_py(),
    )


# -- (b) pyarrow upsert: neve against pyiceberg ------------------------------------------


def bench_upsert(root: Path, scale: float, runs: int) -> harness.Ratio:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.transforms import BucketTransform

    import neve

    data = lineitem(scale)
    rows = data.num_rows
    half = max(1, int(30_000 * scale))
    source = upsert_source(data, half)

    cat = neve.connect(f"sqlite:///{root}/neve.db", warehouse=str(root / "neve-wh"))
    cat.create_namespace("bench")
    table = cat.create_table(
        "bench.lineitem",
        data.schema,
        partition_by=[BUCKET],
        primary_key=list(KEYS),
        format_version=2,
    )
    load_neve = timed(table.append, data)
    base = table.refresh().current_snapshot()
    assert base is not None

    pcat = SqlCatalog(
        "bench", uri=f"sqlite:///{root}/pyiceberg.db", warehouse=f"file://{root}/pyiceberg-wh"
    )
    pcat.create_namespace("bench")
    ptbl = pcat.create_table(
        "bench.lineitem", schema=data.schema, properties={"format-version": "2"}
    )
    with ptbl.update_schema() as us:
        us.set_identifier_fields(*KEYS)
    with ptbl.update_spec() as sp:
        sp.add_field("l_orderkey", BucketTransform(16), "l_orderkey_bucket")
    # pyiceberg checks the arrow schema against its own (large types, required keys)
    parrow = ptbl.schema().as_arrow()
    pdata = data.cast(parrow)
    psource = source.cast(parrow)
    load_pyi = timed(ptbl.append, pdata)
    pbase = ptbl.current_snapshot()
    assert pbase is not None
    del data, pdata

    print(
        f"TPC-H lineitem SF{scale:g}: {rows:,} rows; upsert {source.num_rows:,} rows "
        f"({half:,} changed, {half:,} new); format v2, {BUCKET}, primary key "
        f"({', '.join(KEYS)}); neve merge-on-read, pyiceberg copy-on-write; loaded in "
        f"{load_neve:.1f} s (neve), {load_pyi:.1f} s (pyiceberg)",
        flush=True,
    )

    columns = ["l_orderkey", "l_quantity"]
    neve_check: list[tuple[int, Decimal, int]] = []
    pyi_check: list[tuple[int, Decimal, int]] = []

    def neve_run() -> float:
        t = cat.load_table("bench.lineitem")
        took = timed(t.upsert, source)
        neve_check.append(
            checksum(cat.load_table("bench.lineitem").scan(columns=columns).to_arrow())
        )
        cat.load_table("bench.lineitem").set_current_snapshot(base.snapshot_id)
        return took

    def pyi_run() -> float:
        t = pcat.load_table("bench.lineitem")
        took = timed(t.upsert, psource)
        pyi_check.append(
            checksum(
                pcat.load_table("bench.lineitem").scan(selected_fields=tuple(columns)).to_arrow()
            )
        )
        with pcat.load_table("bench.lineitem").manage_snapshots() as ms:
            ms.set_current_snapshot(snapshot_id=pbase.snapshot_id)
        return took

    measured = harness.alternate({"neve": neve_run, "pyiceberg": pyi_run}, runs)
    assert len(set(neve_check)) == 1 and len(set(pyi_check)) == 1, (neve_check, pyi_check)
    assert neve_check[0] == pyi_check[0], (neve_check[0], pyi_check[0])
    assert neve_check[0][0] == rows + half, (neve_check[0], rows, half)
    print(
        f"  rows check passed: every run of both ends with {neve_check[0][0]:,} rows, "
        f"sum(l_quantity) {neve_check[0][1]}, sum(l_orderkey) {neve_check[0][2]:,}",
        flush=True,
    )
    return harness.report("table.upsert", measured, "neve", "pyiceberg", invert=True)


# -- (c) delete 1%: merge-on-read against copy-on-write, then a scan ---------------------


def aggregate(table: Any) -> pa.Table:
    """Sum of l_quantity and l_extendedprice by (l_returnflag, l_linestatus), scanned
    in full to Arrow."""
    rows = table.scan(columns=[*GROUP, *SUMS]).to_arrow()
    out = rows.group_by(list(GROUP)).aggregate([(c, "sum") for c in SUMS])
    return out.sort_by([(c, "ascending") for c in GROUP])


def bench_delete(root: Path, scale: float, runs: int) -> tuple[harness.Ratio, harness.Ratio]:
    import neve

    data = lineitem(scale)
    rows = data.num_rows
    # TPC-H has 10,000 suppliers per scale factor, l_suppkey uniform over them
    n_supp = max(1, round(100 * scale))
    where = f"l_suppkey <= {n_supp}"
    matched = int(pc.sum(pc.less_equal(data.column("l_suppkey"), n_supp)).as_py())

    cat = neve.connect(f"sqlite:///{root}/neve.db", warehouse=str(root / "neve-wh"))
    cat.create_namespace("bench")
    tables = {}
    loads = {}
    for mode in ("merge-on-read", "copy-on-write"):
        name = f"bench.lineitem_{mode.replace('-', '_')}"
        t = cat.create_table(
            name,
            data.schema,
            partition_by=[BUCKET],
            format_version=3,
            properties={"write.delete.mode": mode},
        )
        loads[mode] = timed(t.append, data)
        tables[mode] = name
    del data
    mor, cow = tables["merge-on-read"], tables["copy-on-write"]
    bases = {}
    for name in (mor, cow):
        snap = cat.load_table(name).current_snapshot()
        assert snap is not None
        bases[name] = snap.snapshot_id
    n_files = len(cat.load_table(mor).scan().plan_files())
    print(
        f"TPC-H lineitem SF{scale:g}: {rows:,} rows in {n_files} data files per table "
        f"(v3, {BUCKET}; loaded in {loads['merge-on-read']:.1f} s and "
        f"{loads['copy-on-write']:.1f} s); delete {where}: {matched:,} rows "
        f"({100 * matched / rows:.2f}%); each run from the loaded snapshot",
        flush=True,
    )

    done = {mor: 0, cow: 0}

    def delete(name: str) -> float:
        if done[name]:
            cat.load_table(name).set_current_snapshot(bases[name])
        done[name] += 1
        t = cat.load_table(name)
        return timed(t.delete, where)

    # the last run's deletes stay for the scans
    deletes = harness.alternate(
        {"merge-on-read": partial(delete, mor), "copy-on-write": partial(delete, cow)}, runs
    )
    dvs = cat.load_table(mor).inspect.delete_files().num_rows
    cow_deletes = cat.load_table(cow).inspect.delete_files().num_rows
    assert cow_deletes == 0, cow_deletes
    print(f"  merge-on-read wrote {dvs} deletion vectors, copy-on-write none", flush=True)
    delete_ratio = harness.report(
        "delete", deletes, "merge-on-read", "copy-on-write", invert=True, width=19
    )

    counts = [
        cat.load_table(n).scan(columns=["l_orderkey"]).to_arrow().num_rows for n in (mor, cow)
    ]
    assert counts == [rows - matched] * 2, (counts, rows, matched)
    print(
        f"full-scan aggregate, sum({', '.join(SUMS)}) by {', '.join(GROUP)}: the "
        f"merge-on-read table with its deletion vectors against the copy-on-write table "
        f"after its delete (the same {rows - matched:,} rows, no delete files); after one "
        f"unmeasured scan of each",
        flush=True,
    )
    results: dict[str, list[pa.Table]] = {mor: [], cow: []}

    def scan(name: str) -> float:
        t = cat.load_table(name)
        t0 = time.perf_counter()
        results[name].append(aggregate(t))
        return time.perf_counter() - t0

    # warmed up (imports, page cache) by one unmeasured scan of each
    scans = harness.alternate(
        {"with-deletes": partial(scan, mor), "clean": partial(scan, cow)}, runs, warmup=True
    )
    first = results[mor][0]
    assert first.num_rows > 0
    for got in (*results[mor], *results[cow]):
        assert got.equals(first), (got, first)
    print("  rows check passed: every scan of both tables gave the same sums", flush=True)
    scan_ratio = harness.report("full-scan aggregate", scans, "with-deletes", "clean", width=19)
    return delete_ratio, scan_ratio


# -- (e) the key-uniqueness check of appends: on against off -----------------------------


def bench_key_check(root: Path, scale: float, runs: int) -> dict[str, harness.Ratio]:
    import neve
    from neve.arrow.keys import key_column_cache
    from neve.errors import DuplicateKeyError

    data = lineitem(scale)
    rows = data.num_rows
    n_new = max(1, int(60_000 * scale))
    rng = np.random.default_rng(13)
    sample = data.take(pa.array(np.sort(rng.choice(rows, size=n_new, replace=False))))
    key_field = data.schema.field("l_orderkey")
    assert data.schema.names[0] == "l_orderkey"
    old_keys = data.column("l_orderkey")
    max_key = pc.max(old_keys)
    # TPC-H uses 8 of every 32 order keys, so l_orderkey + 8 is always a free key
    batches = {
        "inside the key range": pc.add(sample.column("l_orderkey"), 8),
        "above the largest key": pc.add(sample.column("l_orderkey"), max_key),
    }
    new_rows = {}
    for kind, keys in batches.items():
        assert not pc.any(pc.is_in(keys, value_set=old_keys)).as_py(), kind
        new_rows[kind] = sample.set_column(0, key_field, keys)

    cat = neve.connect(f"sqlite:///{root}/neve.db", warehouse=str(root / "neve-wh"))
    cat.create_namespace("bench")
    name = "bench.lineitem"
    table = cat.create_table(
        name, data.schema, partition_by=[BUCKET], primary_key=list(KEYS), format_version=3
    )
    load = timed(table.append, data)
    base = table.refresh().current_snapshot()
    assert base is not None
    n_files = len(table.scan().plan_files())
    del data
    print(
        f"TPC-H lineitem SF{scale:g}: {rows:,} rows in {n_files} data files (v3, {BUCKET}, "
        f"primary key ({', '.join(KEYS)}); loaded in {load:.1f} s); table.append of "
        f"{n_new:,} rows under new keys with write.primary-key.check on (default) and off; "
        f"each run from the loaded snapshot, after one unmeasured run of each; on = the "
        f"key columns cached (a writer appending again), on-cleared = the cache cleared "
        f"before the append (a process's first append)",
        flush=True,
    )

    def append(batch: pa.Table, check: bool, cold: bool = False) -> float:
        cat.load_table(name).set_properties({"write.primary-key.check": str(check).lower()})
        t = cat.load_table(name)
        if cold:
            key_column_cache.clear()
        took = timed(t.append, batch)
        snap = cat.load_table(name).current_snapshot()
        assert snap is not None and int(snap.summary["total-records"]) == rows + n_new
        cat.load_table(name).set_current_snapshot(base.snapshot_id)
        return took

    out = {}
    for kind, batch in new_rows.items():
        # warmed up (imports, page cache, manifest cache) by one unmeasured run of each
        measured = harness.alternate(
            {
                "on": partial(append, batch, True),
                "on-cleared": partial(append, batch, True, True),
                "off": partial(append, batch, False),
            },
            runs,
            warmup=True,
        )
        out[kind] = harness.report(kind, measured, "on", "off", width=21)
        out[f"{kind}, cache cleared"] = harness.report("", measured, "on-cleared", "off", width=21)

    # the check was on: an existing key is refused and the table is left as it was
    cat.load_table(name).set_properties({"write.primary-key.check": "true"})
    t = cat.load_table(name)
    try:
        t.append(sample.slice(0, 1))
    except DuplicateKeyError:
        pass
    else:
        raise AssertionError("appending an existing key was not refused")
    snap = cat.load_table(name).current_snapshot()
    assert snap is not None and snap.snapshot_id == base.snapshot_id
    print(
        f"  key check passed: every run added {n_new:,} rows; with the check on, an "
        f"existing key is refused (DuplicateKeyError), table unchanged",
        flush=True,
    )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--scale", type=float, default=1.0, help="TPC-H scale: Spark and delete")
    p.add_argument("--pyarrow-scale", type=float, default=0.1, help="TPC-H scale: pyarrow upsert")
    p.add_argument("--master", default="local[2]", help="Spark master for (a)")
    p.add_argument("--window", type=float, default=30.0, help="seconds of concurrent deletes (d)")
    p.add_argument("--skip-spark", action="store_true", help="skip (a), the Spark upsert")
    p.add_argument("--only", default="a,b,c,d,e", help="the sections to run, e.g. d,e")
    p.add_argument(
        "--quick",
        action="store_true",
        help="small scale: TPC-H scale 0.01 everywhere, a 5 s window",
    )
    harness.add_runs_argument(p)
    args = p.parse_args()
    if args.quick:
        args.scale = args.pyarrow_scale = 0.01
        args.window = 5.0
    sections = set(args.only.split(","))
    if args.skip_spark:
        sections.discard("a")
    warnings.simplefilter("ignore")
    root = Path(tempfile.mkdtemp(prefix="neve-bench-merge-"))
    try:
        with harness.session("Row-level changes: neve against the reference engines", args.runs):
            run(root, sections, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(root: Path, sections: set[str], args: argparse.Namespace) -> None:
    if "a" in sections:
        print("== (a) Spark upsert: neve against Iceberg-Java MERGE INTO ==", flush=True)
        sys.path.insert(0, str(HERE))
        import bench_merge_spark

        bench_merge_spark.run(args.scale, args.runs, args.master)
    if "b" in sections:
        print(
            "== (b) pyarrow upsert: neve table.upsert against pyiceberg upsert ==",
            flush=True,
        )
        (root / "upsert").mkdir()
        bench_upsert(root / "upsert", args.pyarrow_scale, args.runs)
    if "c" in sections:
        print(
            "== (c) delete 1%: merge-on-read against copy-on-write, then a full scan ==",
            flush=True,
        )
        (root / "delete").mkdir()
        bench_delete(root / "delete", args.scale, args.runs)
    if "d" in sections:
        print(
            "== (d) concurrent deletes on the same data files: neve against "
            "Iceberg-Java DELETE FROM ==",
            flush=True,
        )
        sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]
        import bench_merge_concurrent

        (root / "concurrent").mkdir()
        bench_merge_concurrent.run(
            root / "concurrent", lineitem(args.scale), args.scale, args.window, args.runs
        )
    if "e" in sections:
        print(
            "== (e) key-uniqueness check: append new keys to the primary-key table, "
            "check on against off ==",
            flush=True,
        )
        (root / "keycheck").mkdir()
        bench_key_check(root / "keycheck", args.scale, args.runs)


if __name__ == "__main__":
    main()
