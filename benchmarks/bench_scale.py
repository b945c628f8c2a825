"""Scale: how neve's costs grow with the table, next to pyiceberg where it can run.

The table: ``--files`` data files (1,000,000 by default) added by ``--snapshots``
appends (10,000; one day's files each) through ``Transaction.add_files``, the manifests
merged as Iceberg merges them (``commit.manifest-merge.enabled``) into about
``--manifests`` manifests (1,000): ``commit.manifest.min-count-to-merge`` is
snapshots/manifests, and ``commit.manifest.target-size-bytes`` is set after the first
append to hold that many one-append manifests. The data files are never written:
every DataFile entry carries full metrics (value, null and NaN counts, lower and upper
bounds of all 16 columns of benchmarks/bench_scan.py's planning table) and planning
reads only manifests. Old metadata files are
deleted after each commit (``write.metadata.delete-after-commit.enabled``).

Printed (benchmarks/harness.py says how numbers are taken):

1. commit latency as the history grows: every append of the build is timed; the mean
   and median of the first and last 10% and the median of each tenth;
2. at every tenth of the history, ``--runs`` appends of neve (the build's next appends)
   alternating with pyiceberg 0.12's append of the same files (``merge_append``) to a
   copy of the version neve's append started from (its metadata registered in
   pyiceberg's own SQLite catalog), so both make the same commit; then the metadata JSON's size and loading the table through the catalog,
   neve against pyiceberg, alternating;
3. planning on the whole table, cold (the first plan of a fresh process after loading
   the table) and warm (the median of ``--repeat`` more plans in it), ``--runs``
   fresh processes per library taking turns, for two filters: one day (the manifest
   list's partition summaries prune all manifests but one) and a narrow ``id`` range
   (every manifest is read, its entries judged by their bounds); both libraries must
   plan the same files;
4. expiring all snapshots but the last 10% (one run of neve's ``expire_snapshots``,
   for the state it leaves), then the metadata JSON's size and loading it again.

A script, not a test: it asserts nothing about time.

    .venv/bin/python benchmarks/bench_scale.py [--files 1000000] [--manifests 1000]
        [--snapshots 10000] [--runs 5] [--repeat 3] [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import bench_scan
import harness
from bench_scan import MICROS_PER_DAY, ROWS_PER_FILE
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan
from pyiceberg.manifest import DataFile as PyDataFile
from pyiceberg.manifest import DataFileContent as PyContent
from pyiceberg.manifest import FileFormat as PyFormat
from pyiceberg.typedef import Record

import neve
from neve.expressions import and_, greater_than_or_equal, less_than
from neve.planning.manifests import read_manifest_list
from neve.spec.manifest import DataFile

CATALOG = "bench"
NAME = "bench.scale"
COPY = "bench.copy"  # pyiceberg's copy of the table
DAY0 = 10_000  # 1997-05-19, days since the epoch


def data_files(table: Any, snapshot: int, per: int) -> list[DataFile]:
    """The files of append number ``snapshot``: ``per`` files of one day, with full
    metrics on 16 columns (bench_scan.py's planning files)."""
    return bench_scan.data_files(table, snapshot * per, per, lambda n: DAY0 + n // per)


def pyiceberg_file(f: DataFile, spec_id: int) -> PyDataFile:
    """The same file as pyiceberg's DataFile."""
    out = PyDataFile.from_args(
        content=PyContent.DATA,
        file_path=f.file_path,
        file_format=PyFormat.PARQUET,
        partition=Record(*f.partition),
        record_count=f.record_count,
        file_size_in_bytes=f.file_size_in_bytes,
        column_sizes=dict(f.column_sizes or {}),
        value_counts=dict(f.value_counts or {}),
        null_value_counts=dict(f.null_value_counts or {}),
        nan_value_counts=dict(f.nan_value_counts or {}),
        lower_bounds=dict(f.lower_bounds or {}),
        upper_bounds=dict(f.upper_bounds or {}),
        split_offsets=None if f.split_offsets is None else list(f.split_offsets),
        sort_order_id=f.sort_order_id,
    )
    out.spec_id = spec_id
    return out


def ms(seconds: list[float]) -> str:
    mean, median = 1000 * statistics.fmean(seconds), 1000 * statistics.median(seconds)
    return f"mean {mean:.1f} ms, median {median:.1f} ms"


def file_mb(location: str) -> float:
    return os.path.getsize(location.removeprefix("file://")) / 1e6


class Scale:
    """The table, its build and pyiceberg's copy of it."""

    def __init__(self, root: Path, files: int, manifests: int, snapshots: int) -> None:
        self.uri = f"sqlite:///{root}/neve.db"
        self.warehouse = str(root / "wh")
        self.cat = neve.connect(self.uri, warehouse=self.warehouse, name=CATALOG)
        self.cat.create_namespace("bench")
        self.pyi_uri, self.pyi_warehouse = f"sqlite:///{root}/pyi.db", f"file://{root}"
        self.pcat = SqlCatalog(CATALOG, uri=self.pyi_uri, warehouse=self.pyi_warehouse)
        self.pcat.create_namespace("bench")
        self.per = files // snapshots
        self.snapshots = snapshots
        self.merge_count = max(1, snapshots // manifests)
        props = {"write.metadata.delete-after-commit.enabled": "true"}
        if self.merge_count > 1:
            props["commit.manifest-merge.enabled"] = "true"
            props["commit.manifest.min-count-to-merge"] = str(self.merge_count)
        else:
            props["commit.manifest-merge.enabled"] = "false"
        self.table = self.cat.create_table(
            NAME, bench_scan.plan_schema(), partition_by=["day(ts)"], properties=props
        )
        self.done = 0  # appends made
        self.latency: list[float] = []

    def append(self) -> float:
        """The build's next append; returns its seconds."""
        files = data_files(self.table, self.done, self.per)
        t0 = time.perf_counter()
        with self.table.transaction() as tx:
            tx.add_files(files)
        took = time.perf_counter() - t0
        self.latency.append(took)
        self.done += 1
        if self.done == 1 and self.merge_count > 1:
            # a merged manifest holds merge_count one-append manifests, and no more
            (first,) = self.manifests()
            target = int(first.manifest_length * (self.merge_count + 0.5))
            self.table.set_properties({"commit.manifest.target-size-bytes": str(target)})
        return took

    def manifests(self) -> list[Any]:
        """The manifests of the current snapshot."""
        snap = self.table.current_snapshot()
        assert snap is not None
        return read_manifest_list(self.table.io, snap.manifest_list)

    def copy_for_pyiceberg(self, location: str | None = None) -> Any:
        """pyiceberg's copy: the current metadata (or that at ``location``) registered
        in its own catalog."""
        if self.pcat.table_exists(COPY):
            self.pcat.drop_table(COPY)
        return self.pcat.register_table(COPY, location or self.table.metadata_location)

    def pyiceberg_append(self, location: str, snapshot: int) -> float:
        """pyiceberg appends the files of append number ``snapshot`` to a copy of the
        table at ``location`` (the version that append starts from)."""
        copy = self.copy_for_pyiceberg(location)
        spec_id = copy.spec().spec_id
        files = [pyiceberg_file(f, spec_id) for f in data_files(self.table, snapshot, self.per)]
        t0 = time.perf_counter()
        with copy.transaction() as tx, tx.update_snapshot().merge_append() as add:
            for f in files:
                add.append_data_file(f)
        return time.perf_counter() - t0

    def paired_appends(self) -> dict[str, Callable[[], float]]:
        """The two sides of a round of appends: neve's next append, and pyiceberg's
        append of the same files to a copy of the version neve's append starts from
        (whichever side runs first in the round), so both make the same commit, manifest
        merges included."""
        made = {"neve": 0, "pyiceberg": 0}
        before = {"location": self.table.metadata_location}

        def neve_side() -> float:
            before["location"] = self.table.metadata_location
            made["neve"] += 1
            return self.append()

        def pyiceberg_side() -> float:
            made["pyiceberg"] += 1
            if made["neve"] == made["pyiceberg"]:  # neve's append of this round ran first
                return self.pyiceberg_append(before["location"], self.done - 1)
            return self.pyiceberg_append(self.table.metadata_location, self.done)

        return {"neve": neve_side, "pyiceberg": pyiceberg_side}

    def load(self, runs: int) -> harness.Runs:
        """Load the table through the catalog, neve against pyiceberg, alternating."""
        self.copy_for_pyiceberg()
        snapshots = len(self.table.metadata.snapshots)

        def neve_load() -> float:
            took, t = harness.timed(self.cat.load_table, NAME)
            assert len(t.metadata.snapshots) == snapshots
            return took

        def pyiceberg_load() -> float:
            took, t = harness.timed(self.pcat.load_table, COPY)
            assert len(t.metadata.snapshots) == snapshots
            return took

        return harness.alternate({"neve": neve_load, "pyiceberg": pyiceberg_load}, runs)


def build(s: Scale, runs: int) -> None:
    tenth = s.snapshots // 10
    if tenth < runs:
        raise SystemExit(f"--snapshots must be at least 10 * --runs ({10 * runs})")
    print(
        f"== 1-2. build: {s.snapshots:,} appends of {s.per:,} files each through "
        f"Transaction.add_files (commit latency), and at every tenth of the history "
        f"{runs} appends and loads against pyiceberg",
        flush=True,
    )
    t0 = time.perf_counter()
    for c in range(1, 11):
        while s.done < c * tenth - runs:
            s.append()
        commits = harness.alternate(s.paired_appends(), runs)
        size = file_mb(s.table.metadata_location)
        print(f"  at {s.done:,} snapshots, metadata JSON {size:.2f} MB:", flush=True)
        harness.report("append", commits, "neve", "pyiceberg", invert=True, width=6)
        harness.report("load", s.load(runs), "neve", "pyiceberg", invert=True, width=6)
    while s.done < s.snapshots:
        s.append()
    built = time.perf_counter() - t0
    md = s.table.metadata
    snap = s.table.current_snapshot()
    assert snap is not None
    print(
        f"  built in {built:.0f} s: {len(md.snapshots):,} snapshots, {len(s.manifests()):,} "
        f"manifests in the head, {int(snap.summary['total-data-files']):,} data files; "
        f"metadata JSON {file_mb(s.table.metadata_location):.2f} MB",
        flush=True,
    )
    lat, n = s.latency, max(1, len(s.latency) // 10)
    print(f"  neve commit latency, first 10%: {ms(lat[:n])}; last 10%: {ms(lat[-n:])}")
    tenths = " ".join(
        f"{1000 * statistics.median(lat[i * n : (i + 1) * n]):.1f}" for i in range(10)
    )
    print(f"  median ms per commit by tenth of the history: {tenths}", flush=True)


# -- planning in fresh processes --------------------------------------------------------


FILTERS = ("one day", "id range")


def _bounds(s: Scale, kind: str) -> tuple[int, int]:
    if kind == "one day":
        return DAY0 + s.snapshots // 2, 0
    lo = (s.per * s.snapshots // 2) * ROWS_PER_FILE + 1
    return lo, lo + ROWS_PER_FILE // 2


class PlanRun(NamedTuple):
    load: float
    cold: float
    warm: list[float]
    files: int
    digest: str


def plan_process(s: Scale, lib: str, kind: str, lo: int, hi: int, repeat: int) -> PlanRun:
    """Plan in a fresh process (this script's hidden worker mode)."""
    name, uri, warehouse = (
        (NAME, s.uri, s.warehouse) if lib == "neve" else (COPY, s.pyi_uri, s.pyi_warehouse)
    )
    args = [lib, uri, warehouse, name, kind, str(lo), str(hi), str(repeat)]
    out = subprocess.run(
        [sys.executable, __file__, "--_plan-worker", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return PlanRun(float(out[0]), float(out[1]), [float(x) for x in out[4:]], int(out[2]), out[3])


def cold_plan(
    s: Scale, lib: str, kind: str, lo: int, hi: int, repeat: int, done: dict[str, list[PlanRun]]
) -> float:
    """One planning process of ``lib``, kept in ``done``; returns its cold plan's
    seconds."""
    run = plan_process(s, lib, kind, lo, hi, repeat)
    done[lib].append(run)
    return run.cold


def plan(s: Scale, runs: int, repeat: int) -> None:
    print(
        f"== 3. planning the whole table: {runs} fresh processes per library, taking turns; "
        f"cold = the first plan after loading the table, warm = the median of {repeat} "
        "more plans in the same process",
        flush=True,
    )
    s.copy_for_pyiceberg()
    for kind in FILTERS:
        lo, hi = _bounds(s, kind)
        done: dict[str, list[PlanRun]] = {"neve": [], "pyiceberg": []}

        sides = {lib: partial(cold_plan, s, lib, kind, lo, hi, repeat, done) for lib in done}
        cold = harness.alternate(sides, runs)
        digests = {r.digest for lib_runs in done.values() for r in lib_runs}
        if len(digests) != 1:
            raise RuntimeError(f"{kind}: the libraries planned different files")
        warm = harness.Runs(
            {lib: [statistics.median(r.warm) for r in rs] for lib, rs in done.items()},
            cold.load_start,
            cold.load_end,
        )
        what = f"day {lo}" if kind == "one day" else f"{lo} <= id < {hi}"
        files = done["neve"][0].files
        loads = {lib: 1000 * statistics.median(r.load for r in rs) for lib, rs in done.items()}
        print(
            f"  {kind} ({what}): both planned the same {files} files; connecting and loading "
            f"the table took neve {loads['neve']:.0f} ms, pyiceberg {loads['pyiceberg']:.0f} ms "
            "(medians)",
            flush=True,
        )
        harness.report("cold", cold, "neve", "pyiceberg", invert=True, width=4)
        harness.report("warm", warm, "neve", "pyiceberg", invert=True, width=4)


def plan_worker(args: list[str]) -> None:
    lib, uri, warehouse, name, kind = args[:5]
    lo, hi, repeat = (int(a) for a in args[5:8])
    t0 = time.perf_counter()
    if lib == "neve":
        table = neve.connect(uri, warehouse=warehouse, name=CATALOG).load_table(name)
        load = time.perf_counter() - t0
        if kind == "one day":
            lo_ts, hi_ts = lo * MICROS_PER_DAY, (lo + 1) * MICROS_PER_DAY
            expr = and_(greater_than_or_equal("ts", lo_ts), less_than("ts", hi_ts))
        else:
            expr = and_(greater_than_or_equal("id", lo), less_than("id", hi))

        def fn() -> list[str]:
            return [t.file.file_path for t in table.scan(filter=expr).plan_files()]
    else:
        ptable = SqlCatalog(CATALOG, uri=uri, warehouse=warehouse).load_table(name)
        load = time.perf_counter() - t0
        # pyiceberg's predicates take (term, literal) positionally; its typing says otherwise
        if kind == "one day":
            lo_ts, hi_ts = lo * MICROS_PER_DAY, (lo + 1) * MICROS_PER_DAY
            pexpr = And(GreaterThanOrEqual("ts", lo_ts), LessThan("ts", hi_ts))  # type: ignore[call-arg, arg-type]
        else:
            pexpr = And(GreaterThanOrEqual("id", lo), LessThan("id", hi))  # type: ignore[call-arg, arg-type]

        def fn() -> list[str]:
            return [t.file.file_path for t in ptable.scan(row_filter=pexpr).plan_files()]

    t0 = time.perf_counter()
    paths = fn()
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(max(1, repeat)):
        took, _ = harness.timed(fn)
        warm.append(took)
    digest = hashlib.sha1("\n".join(sorted(paths)).encode()).hexdigest()[:16]
    print(load, cold, len(paths), digest, *warm)


# -- expiration --------------------------------------------------------------------------


def expire(s: Scale, runs: int) -> None:
    md = s.table.metadata
    keep = md.snapshots[-max(1, len(md.snapshots) // 10)]
    before = file_mb(s.table.metadata_location)
    took, result = harness.timed(
        s.table.maintenance.expire_snapshots, older_than=keep.timestamp_ms, retain_last=1
    )
    s.table.refresh()
    left = len(s.table.metadata.snapshots)
    print(
        f"== 4. expiration: all snapshots older than the last 10% expired by neve in "
        f"{took:.1f} s (one run, for the state it leaves): {len(result.expired_snapshot_ids):,} "
        f"expired, {left:,} left; metadata JSON {before:.2f} MB -> "
        f"{file_mb(s.table.metadata_location):.2f} MB",
        flush=True,
    )
    harness.report("load", s.load(runs), "neve", "pyiceberg", invert=True, width=4)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--_plan-worker":
        warnings.simplefilter("ignore")
        plan_worker(argv[1:])
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--files", type=int, default=1_000_000, help="data files in the table")
    p.add_argument("--manifests", type=int, default=1_000, help="manifests to merge into")
    p.add_argument("--snapshots", type=int, default=10_000, help="appends")
    p.add_argument("--repeat", type=int, default=3, help="warm plans in each planning process")
    p.add_argument(
        "--quick", action="store_true", help="small scale: 10,000 files, 10 manifests, 100 appends"
    )
    harness.add_runs_argument(p)
    args = p.parse_args(argv)
    if args.quick:
        args.files, args.manifests, args.snapshots = 10_000, 10, 100
    warnings.simplefilter("ignore")
    with (
        tempfile.TemporaryDirectory() as d,
        harness.session(
            f"Scale: {args.files:,} data files, about {args.manifests:,} manifests, "
            f"{args.snapshots:,} snapshots; neve against pyiceberg 0.12",
            args.runs,
        ),
    ):
        s = Scale(Path(d), args.files, args.manifests, args.snapshots)
        build(s, args.runs)
        plan(s, args.runs, args.repeat)
        expire(s, args.runs)


if __name__ == "__main__":
    main()
