"""Commit latency: N sequential appends of R rows through neve, through pyiceberg, and
the floor of such a commit, each on an SQLite catalog on this machine.

A run makes a fresh table and appends N batches of R rows to it, one commit each, and
its value is the mean milliseconds per commit; neve, pyiceberg and the floor take
turns, ``--runs`` times each (benchmarks/harness.py).

The floor replays a neve table made before the runs (untimed), commit by commit, with
nothing but what such a commit must write: its manifest(s) with neve's manifest writer
(``neve.spec.manifest_writer``), its manifest list, and its metadata file with the
catalog's compare-and-swap (``Catalog.commit_metadata``, the seam under every commit),
the same entries and the same metadata as neve's commit made, into a table of its own in
neve's catalog. It writes no data file (the appends write one Parquet file each) and
reads nothing. Every table, the floor's too, must read back the same rows.

A script, not a test: it asserts nothing about time.

    .venv/bin/python benchmarks/bench_commits.py [--commits 100] [--rows 1000] [--runs 5]
        [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import harness
import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog

import neve
from neve.planning.manifests import read_manifest, read_manifest_list
from neve.spec.manifest import ManifestEntryStatus
from neve.spec.manifest_writer import write_manifest, write_manifest_list

PREVIOUS_VERSIONS = "write.metadata.previous-versions-max"


def make_batch(i: int, rows: int) -> pa.Table:
    start = i * rows
    return pa.table(
        {
            "id": pa.array(range(start, start + rows), pa.int64()),
            "name": pa.array([f"row-{j % 97}" for j in range(start, start + rows)]),
            "value": pa.array([j * 0.5 for j in range(start, start + rows)], pa.float64()),
        }
    )


def properties(commits: int) -> dict[str, str]:
    """Keep every metadata version in the log when there are more commits than the
    default keeps (the floor replays them all)."""
    return {} if commits < 100 else {PREVIOUS_VERSIONS: str(commits + 1)}


def rows_of(rows: pa.Table) -> pa.Table:
    """The rows in id order, as plain columns (the sides may differ in string types)."""
    rows = rows.select(["id", "name", "value"]).sort_by("id")
    return rows.cast(
        pa.schema([("id", pa.int64()), ("name", pa.string()), ("value", pa.float64())])
    )


@dataclass
class Appends:
    """The append loops of one catalog per library."""

    root: Path
    commits: int
    rows: int
    batches: list[pa.Table]

    def __post_init__(self) -> None:
        self.neve = neve.connect(f"sqlite:///{self.root}/neve.db", warehouse=str(self.root / "wh"))
        self.neve.create_namespace("bench")
        self.pyiceberg = SqlCatalog(
            "bench", uri=f"sqlite:///{self.root}/pyi.db", warehouse=f"file://{self.root}/pyi-wh"
        )
        self.pyiceberg.create_namespace("bench")
        self.expected = rows_of(pa.concat_tables(self.batches))

    def run_neve(self, name: str) -> list[float]:
        table = self.neve.create_table(
            f"bench.{name}", self.batches[0].schema, properties=properties(self.commits)
        )
        times = []
        for batch in self.batches:
            took, _ = harness.timed(table.append, batch)
            times.append(took)
        got = rows_of(self.neve.load_table(f"bench.{name}").scan().to_arrow())
        assert got.equals(self.expected), f"neve's table {name} holds other rows"
        return times

    def run_pyiceberg(self, name: str, commits: int | None = None) -> list[float]:
        table = self.pyiceberg.create_table(
            f"bench.{name}", schema=self.batches[0].schema, properties=properties(self.commits)
        )
        times = []
        for batch in self.batches[:commits]:
            took, _ = harness.timed(table.append, batch)
            times.append(took)
        if commits is None:
            got = rows_of(self.pyiceberg.load_table(f"bench.{name}").scan().to_arrow())
            assert got.equals(self.expected), f"pyiceberg's table {name} holds other rows"
        return times


# -- the floor -------------------------------------------------------------------------


@dataclass(frozen=True)
class FloorCommit:
    """What one commit of the template table wrote: the entries of each manifest it
    added, its manifest list (template paths), and its metadata."""

    new_manifests: list[tuple[Any, list[Any]]]  # (template ManifestFile, entries)
    manifest_list: list[Any]  # the template's ManifestFiles, in list order
    metadata: Any  # TableMetadata


def template_commits(table: Any) -> list[FloorCommit]:
    """Read back every commit of the template table (untimed)."""
    cat, md = table.catalog, table.metadata
    versions = [cat.read_metadata(e.metadata_file) for e in md.metadata_log] + [md]
    by_snapshot = {v.current_snapshot_id: v for v in versions if v.current_snapshot_id}
    out = []
    for snap in md.snapshots:  # in commit order
        version = by_snapshot[snap.snapshot_id]
        listed = read_manifest_list(table.io, snap.manifest_list)
        new = []
        for m in listed:
            if m.added_snapshot_id != snap.snapshot_id:
                continue
            entries = [
                # ADDED entries of this commit inherit their sequence numbers, as written
                e.with_(sequence_number=None, file_sequence_number=None)
                if e.status is ManifestEntryStatus.ADDED and e.snapshot_id == snap.snapshot_id
                else e
                for e in read_manifest(table.io, m, specs_by_id=version.specs_by_id)
            ]
            new.append((m, entries))
        out.append(FloorCommit(new, listed, version))
    return out


class Floor:
    """Replays the template's commits into a new table of the same catalog."""

    def __init__(self, catalog: Any, commits: list[FloorCommit]) -> None:
        self.catalog = catalog
        self.commits = commits
        self.parts: dict[str, list[float]] = {"manifests": [], "list": [], "metadata": []}

    def run(self, name: str, expected: pa.Table) -> list[float]:
        first = self.commits[0].metadata
        table = self.catalog.create_table(f"bench.{name}", first.schema())
        loc, io, ident = table.location, table.io, table.identifier
        base = table.metadata_location
        list_paths = {
            c.metadata.current_snapshot_id: f"{loc}/metadata/snap-{c.metadata.current_snapshot_id}"
            f"-floor.avro"
            for c in self.commits
        }
        written: dict[str, Any] = {}  # template manifest path -> the floor's ManifestFile
        times = []
        parts: dict[str, list[float]] = {k: [] for k in self.parts}
        for n, c in enumerate(self.commits):
            md = c.metadata
            snap = md.current_snapshot()
            # the metadata as the floor's table would hold it (untimed)
            md = md.with_(
                location=loc,
                snapshots=tuple(
                    replace(s, manifest_list=list_paths[s.snapshot_id]) for s in md.snapshots
                ),
            )
            t0 = time.perf_counter()
            fresh = {}
            for m, entries in c.new_manifests:
                fresh[m.manifest_path] = write_manifest(
                    io,
                    f"{loc}/metadata/floor-{n}-{len(fresh)}-m0.avro",
                    format_version=md.format_version,
                    spec=md.spec_by_id(m.partition_spec_id),
                    schema=md.schema(),
                    content=m.content,
                    snapshot_id=snap.snapshot_id,
                    entries=entries,
                )
            t1 = time.perf_counter()
            listed = write_manifest_list(
                io,
                list_paths[snap.snapshot_id],
                format_version=md.format_version,
                snapshot_id=snap.snapshot_id,
                parent_snapshot_id=snap.parent_snapshot_id,
                sequence_number=snap.sequence_number,
                manifests=[
                    fresh.get(m.manifest_path) or written[m.manifest_path] for m in c.manifest_list
                ],
                first_row_id=snap.first_row_id,
            )
            t2 = time.perf_counter()
            base = self.catalog.commit_metadata(ident, base, md)
            t3 = time.perf_counter()
            times.append(t3 - t0)
            parts["manifests"].append(t1 - t0)
            parts["list"].append(t2 - t1)
            parts["metadata"].append(t3 - t2)
            written.update(zip((m.manifest_path for m in c.manifest_list), listed, strict=True))
        for k, v in parts.items():
            self.parts[k].append(statistics.fmean(v))
        got = rows_of(self.catalog.load_table(f"bench.{name}").scan().to_arrow())
        assert got.equals(expected), f"the floor's table {name} holds other rows"
        return times


# -- the runs ----------------------------------------------------------------------------


def summary(label: str, runs: list[list[float]]) -> None:
    """Per side: medians over the runs of each run's mean, first 10% and last 10%."""
    tenth = max(1, len(runs[0]) // 10)

    def ms(pick: Callable[[list[float]], list[float]]) -> float:
        return 1000 * statistics.median(statistics.fmean(pick(r)) for r in runs)

    print(
        f"    {label:<10} mean {ms(lambda r: r):7.1f} ms/commit   first 10% "
        f"{ms(lambda r: r[:tenth]):7.1f}   last 10% {ms(lambda r: r[-tenth:]):7.1f}",
        flush=True,
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--commits", type=int, default=100)
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--quick", action="store_true", help="20 commits per run (a smoke run)")
    harness.add_runs_argument(p)
    args = p.parse_args()
    if args.quick:
        args.commits = 20
    warnings.simplefilter("ignore")
    with (
        tempfile.TemporaryDirectory() as d,
        harness.session(
            f"{args.commits} sequential appends of {args.rows} rows per run, SQLite catalog, "
            "local disk: neve, pyiceberg and the floor of a commit",
            args.runs,
        ),
    ):
        root = Path(d)
        batches = [make_batch(i, args.rows) for i in range(args.commits)]
        appends = Appends(root, args.commits, args.rows, batches)
        # untimed: the template the floor replays (also neve's warm-up), and pyiceberg's
        # warm-up
        appends.run_neve("template")
        floor = Floor(appends.neve, template_commits(appends.neve.load_table("bench.template")))
        appends.run_pyiceberg("warmup", commits=min(5, args.commits))
        per_commit: dict[str, list[list[float]]] = {"neve": [], "pyiceberg": [], "floor": []}
        rounds = {"neve": 0, "pyiceberg": 0, "floor": 0}

        def side(name: str, run: Callable[[str], list[float]]) -> Callable[[], float]:
            def one() -> float:
                times = run(f"{name}_{rounds[name]}")
                rounds[name] += 1
                per_commit[name].append(times)
                return statistics.fmean(times)

            return one

        runs = harness.alternate(
            {
                "neve": side("neve", appends.run_neve),
                "pyiceberg": side("pyiceberg", appends.run_pyiceberg),
                "floor": side("floor", lambda n: floor.run(n, appends.expected)),
            },
            args.runs,
        )
        print("  per commit, the mean of each run (every table read back the same rows):")
        harness.report("commit", runs, "neve", "pyiceberg", invert=True, width=6)
        harness.report("commit", runs, "neve", "floor", width=6)
        print("  medians over the runs:")
        for name, times in per_commit.items():
            summary(name, times)
        parts = ", ".join(
            f"{k} {1000 * statistics.median(v):.1f} ms" for k, v in floor.parts.items()
        )
        print(
            f"  the floor's parts (medians): {parts} (metadata = the metadata file and the "
            "swap); the floor writes no data file",
            flush=True,
        )
        n_rows = sum(b.num_rows for b in batches)
        print(f"  rows check passed: every table holds the same {n_rows:,} rows", flush=True)


if __name__ == "__main__":
    main()
