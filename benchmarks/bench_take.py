"""Random access: neve's ``take`` next to Lance (pylance 14.0.2, ``.venv-lance``) on the
same rows, in one run (issue 26, docs/RANDOM-ACCESS.md).

The rows: ``--rows`` (default 10,000,000; ``--quick``: 1,000,000) of two longs, a
double, an int and a 100-character string, written once as neve v3 tables in three
layouts and once as a Lance dataset:

- take layout: ``write.parquet.layout=random-access`` (8 KiB pages, uncompressed, the
  page index, no dictionaries);
- java layout: neve's default, which is also what Spark and Iceberg-Java write
  (parquet-java's defaults: 1 MiB pages of at most 20,000 rows, dictionaries, the page
  index);
- default layout: the same without the page index (pyarrow's default, and what neve
  wrote before issue 26).

Reported: what each layout costs (write time, file size); then per take size (1, 10,
100, 1,000, 10,000 random rows) the warm time of Lance's ``take`` and neve's
``table.take`` on each layout, in alternating runs (each run's order reversed in the
next) of their own per comparison: the random-access layout with Lance (three times
as many runs: its takes last milliseconds, as does the machine's noise); the 1 MiB
layouts and the floor of the java layout's takes (the data pages holding the rows
read and decompressed, nothing else: what bounds any reader of 1 MiB compressed pages)
with Lance again; pyarrow's best (reading the row groups that hold the rows, then
taking). With the median ratio neve/Lance and its spread, and the bytes neve read per
row taken next to the page size. Then cold-ish takes (a
fresh process opens the table and takes); then a filtered scan of 0.1% of the rows on
the sorted ``id``: page skipping against row-group pruning alone (bytes and time); and
what the page index does to DuckDB, which skips pages by page-header statistics that
pyarrow stops writing when it writes the page index.

Warm means in memory: after the files are written they are flushed to disk, then
every table's and the dataset's files are locked in memory (``harness.kept_in_memory``)
while the takes run (this machine pages out page-cache pages idle for a minute, and a
warm take then reads the disk, for Lance and neve alike).

A script, not a test: it checks that every engine returned the rows asked for and
asserts nothing about time.

    .venv/bin/python benchmarks/bench_take.py [--rows N] [--runs 7] [--pair-runs 21]
        [--cold 5] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import harness  # noqa: E402  (benchmarks/ is not a package)

import neve  # noqa: E402
from lanceengine import LanceEngine  # noqa: E402
from neve.arrow.page_file import open_page_file  # noqa: E402
from neve.arrow.pages import counting_reads  # noqa: E402
from neve.arrow.thrift import decode_struct  # noqa: E402
from neve.io.fileio import FileIO  # noqa: E402

COLUMNS = ["id", "a", "d", "i", "s"]
LAYOUTS = {
    "take": {"write.parquet.layout": "random-access"},
    "java": {},
    "default": {"write.parquet.page-index.enabled": "false"},
}
PAGE_SIZE = {"take": "8 KiB", "java": "1 MiB", "default": "1 MiB"}


def rows(n: int, seed: int = 7) -> pa.Table:
    rnd = np.random.default_rng(seed)
    letters = rnd.integers(97, 123, size=(n, 100), dtype=np.uint8)
    strings = pa.Array.from_buffers(
        pa.string(),
        n,
        [
            None,
            pa.py_buffer(np.arange(0, 100 * (n + 1), 100, dtype=np.int32)),
            pa.py_buffer(letters),
        ],
    )
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "a": pa.array(rnd.integers(-(2**62), 2**62, n)),
            "d": pa.array(rnd.random(n)),
            "i": pa.array(rnd.integers(-(2**31), 2**31 - 1, n, dtype=np.int64).astype(np.int32)),
            "s": strings,
        }
    )


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def spread(ratios: Sequence[float]) -> str:
    return f"median {statistics.median(ratios):6.2f}x  spread {min(ratios):.2f}-{max(ratios):.2f}"


def pyarrow_best(files: list[tuple[str, int]], positions: np.ndarray) -> tuple[pa.Table, int]:
    """Rows at table positions, reading only the row groups that hold them (pyarrow's
    best without a page index), and the bytes of the column chunks read: ``files``
    are (path, first position) in table order."""
    parts = []
    nbytes = 0
    order = np.argsort(positions, kind="stable")
    sorted_pos = positions[order]
    starts = np.array([s for _, s in files] + [2**62])
    for k, (path, start) in enumerate(files):
        lo, hi = np.searchsorted(sorted_pos, [start, starts[k + 1]])
        if lo == hi:
            continue
        pf = pq.ParquetFile(path)
        group_rows = [pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)]
        group_starts = np.concatenate([[0], np.cumsum(group_rows)[:-1]])
        local = sorted_pos[lo:hi] - start
        groups = np.unique(np.searchsorted(group_starts, local, side="right") - 1)
        table = pf.read_row_groups(groups.tolist(), columns=COLUMNS)
        for g in groups.tolist():
            rg = pf.metadata.row_group(g)
            nbytes += sum(rg.column(c).total_compressed_size for c in range(rg.num_columns))
        base = np.concatenate([[0], np.cumsum([group_rows[g] for g in groups])[:-1]])
        g_of = np.searchsorted(groups, np.searchsorted(group_starts, local, side="right") - 1)
        parts.append(table.take(pa.array(base[g_of] + local - group_starts[groups[g_of]])))
    taken = pa.concat_tables(parts)
    return taken.take(pa.array(np.argsort(order, kind="stable"))), nbytes


def build(workdir: Path, n: int) -> tuple[dict[str, neve.Table], Path]:
    catalog = neve.connect(f"sqlite:///{workdir}/catalog.db", str(workdir / "warehouse"))
    catalog.create_namespace("bench")
    data = rows(n)
    staging = workdir / "rows.parquet"
    pq.write_table(data, staging)
    tables = {}
    print(f"== layouts: {n:,} rows (2 longs, a double, an int, a 100-character string)")
    for name, props in LAYOUTS.items():
        t = catalog.create_table(f"bench.{name}", data.schema, properties=props, format_version=3)
        seconds, _ = timed(lambda t=t: t.append(data))
        t = t.refresh()
        # each file once (a large file is planned as several split tasks)
        size = sum(f.file.file_size_in_bytes for f in t.scan().plan_files() if f.start == 0)
        print(f"  {name:<8} layout: write {seconds:6.2f} s   {size / 2**20:8.1f} MiB")
        tables[name] = t
    return tables, staging


def files_of(t: neve.Table) -> list[tuple[str, int]]:
    out, start = [], 0
    for task in t.scan().plan_files():
        if task.start == 0:
            out.append((task.file.file_path.removeprefix("file://"), start))
            start += task.file.record_count
    return out


#: Parquet's codec numbers (ColumnMetaData.codec) as pyarrow names them.
CODECS = {1: "snappy", 2: "gzip", 4: "brotli", 5: "lz4_raw", 6: "zstd", 7: "lz4_raw"}


class PageFloor:
    """The physical floor of a take on a layout: the data pages that hold the rows,
    read from the file and decompressed (two threads), nothing decoded, no dictionary
    page (neve keeps those across takes). No reader of these files can take the rows
    in less; on large compressed pages it is what bounds a take."""

    def __init__(self, files: list[tuple[str, int]]) -> None:
        self.files = []
        for path, start in files:
            layout, reader = open_page_file(FileIO(), path)
            wanted = [(g, leaf.index) for g in range(len(layout.chunks)) for leaf in layout.leaves]
            layout.load_page_indexes(reader, wanted)
            reader.close()
            self.files.append((path, start, layout))
        self.pool = ThreadPoolExecutor(2)
        self.fds = {path: os.open(path, os.O_RDONLY) for path, _ in files}

    def pages(self, positions: np.ndarray) -> list[tuple[str, int, int, str | None]]:
        """(path, offset, size, codec) of the data pages holding ``positions``."""
        out = []
        ordered = np.sort(positions)
        for path, start, layout in self.files:
            lo, hi = np.searchsorted(ordered, [start, start + layout.num_rows])
            local = ordered[lo:hi] - start
            group_of = np.searchsorted(layout.group_starts, local, side="right") - 1
            for g in np.unique(group_of).tolist():
                rows = local[group_of == g] - layout.group_starts[g]
                for chunk in layout.chunks[g]:
                    index = chunk.pages
                    assert index is not None, "a layout with the page index"
                    codec = CODECS.get(int(chunk.meta[4].value))
                    for k in np.unique(np.searchsorted(index.first_rows, rows, side="right") - 1):
                        out.append((path, int(index.offsets[k]), int(index.sizes[k]), codec))
        return out

    def time(self, pages: list[tuple[str, int, int, str | None]]) -> float:
        def one(page: tuple[str, int, int, str | None]) -> None:
            path, offset, size, codec = page
            data = os.pread(self.fds[path], size, offset)
            header, used = decode_struct(data)
            if codec is not None:
                pa.Codec(codec).decompress(data[used:], decompressed_size=int(header[2].value))

        seconds, _ = timed(lambda: list(self.pool.map(one, pages)))
        return seconds


def warm(
    tables: dict[str, neve.Table], lance: LanceEngine, dataset: Path, n: int, args: Any
) -> None:
    print(
        "\n== warm takes of random rows (ms; ratio = neve/Lance per run, alternating runs; "
        f"{args.pair_runs} runs of the random-access layout against Lance)"
    )
    rnd = np.random.default_rng(11)
    sides = Sides(tables, lance, dataset)
    # warm means every file's footer and page index already read: one row of each file
    # taken first by every engine (else the first takes of each size pay them)
    for t in tables.values():
        firsts = [start for _, start in files_of(t)]
        t.take(firsts, columns=COLUMNS)
        lance.take(dataset, firsts, COLUMNS, check="id")
    for k in args.sizes:
        # Each comparison in rounds of its own: the random-access layout against Lance;
        # then the 1 MiB layouts and their floor, with Lance again; then pyarrow. Heavy
        # steps leave the caches cold for whatever runs next (a 100-row take right after
        # pyarrow's read of whole row groups took 11 ms against 7 ms alone), so they
        # are kept out of the rounds of the lighter comparison.
        # the random-access layout's takes last milliseconds: more rounds of them, for a
        # median that moves less between runs (the machine's noise is of their size)
        pair, nbytes = rounds(sides, ["lance", "take"], k, n, rnd, args.pair_runs)
        rest, more = rounds(sides, ["lance", "java", "default", "floor"], k, n, rnd, args.repeat)
        nbytes.update(more)
        best, _ = rounds(sides, ["pyarrow"], k, n, rnd, max(1, args.repeat // 2))
        med = {x: statistics.median(v) * 1000 for x, v in {**rest, **pair, **best}.items()}
        lance_rest = statistics.median(rest["lance"]) * 1000
        print(
            f"  take {k:>6,}: Lance {med['lance']:8.2f} ms (with the 1 MiB layouts "
            f"{lance_rest:.2f} ms)   pyarrow row groups {med['pyarrow']:8.1f} ms"
        )
        print(
            f"      floor of the java layout (its data pages read and decompressed, 2 threads) "
            f"{med['floor']:8.2f} ms   floor/Lance {spread(_ratios(rest, 'floor', 'lance'))}   "
            f"neve java/floor {spread(_ratios(rest, 'java', 'floor'))}"
        )
        for layout in LAYOUTS:
            per_row = nbytes[layout] / (k * (args.pair_runs if layout == "take" else args.repeat))
            # the page reader's reads; a take that reads whole files (most pages
            # touched) reads them with polars, which the count does not see
            read = f"{per_row:10,.0f} B read/row" if per_row else "whole files read"
            runs = pair if layout in pair else rest
            print(
                f"      neve {layout:<8} {med[layout]:8.2f} ms   "
                f"neve/Lance {spread(_ratios(runs, layout, 'lance'))}"
                f"   {read} (page size {PAGE_SIZE[layout]})"
            )


def _ratios(runs: dict[str, list[float]], subject: str, reference: str) -> list[float]:
    return [a / b for a, b in zip(runs[subject], runs[reference], strict=True)]


class Sides:
    """What each side of the warm takes runs: Lance's take, neve's on each layout, the
    floor of the java layout and pyarrow's best, each checked to return the rows asked
    for."""

    def __init__(self, tables: dict[str, neve.Table], lance: LanceEngine, dataset: Path) -> None:
        self.tables, self.lance, self.dataset = tables, lance, dataset
        self.floor = PageFloor(files_of(tables["java"]))
        self.default_files = files_of(tables["default"])

    def run(self, side: str, ids: np.ndarray) -> tuple[float, int]:
        """The seconds of one take of ``ids`` by ``side``, and the bytes neve read."""
        if side == "lance":
            seconds, got = self.lance.take(self.dataset, ids.tolist(), COLUMNS, check="id")
            assert got == ids.tolist(), "Lance took other rows"
            return seconds, 0
        if side == "floor":
            return self.floor.time(self.floor.pages(ids)), 0
        if side == "pyarrow":
            seconds, (best, _) = timed(lambda: pyarrow_best(self.default_files, ids))
            assert best.column("id").to_pylist() == ids.tolist()
            return seconds, 0
        t = self.tables[side]
        with counting_reads() as stats:
            seconds, rows_ = timed(lambda: t.take(ids, columns=COLUMNS))
        assert rows_.column("id").to_pylist() == ids.tolist(), "neve took other rows"
        return seconds, stats.bytes


def rounds(
    sides: Sides, names: list[str], k: int, n: int, rnd: np.random.Generator, runs: int
) -> tuple[dict[str, list[float]], dict[str, int]]:
    """``runs`` rounds (after one unmeasured) in which each of ``names`` takes the same
    ``k`` random rows, each round's order reversed in the next (whoever runs right after
    another engine, its threads winding down and its memory just freed, is not always
    the same side): the seconds per side and round, and the bytes neve read per side."""
    times: dict[str, list[float]] = {x: [] for x in names}
    nbytes: dict[str, int] = {x: 0 for x in names}
    for run in range(runs + 1):
        ids = rnd.choice(n, size=k, replace=False)
        for side in names[:: -1 if run % 2 == 0 else 1]:
            seconds, read = sides.run(side, ids)
            if run:
                times[side].append(seconds)
                nbytes[side] += read
    return times, nbytes


def cold(catalog_uri: str, warehouse: str, dataset: Path, n: int, args: Any) -> None:
    print("\n== cold-ish takes (a fresh process opens the table or dataset and takes)")
    rnd = np.random.default_rng(13)
    for k in (1, 100):
        ratios, neve_ms, lance_ms = [], [], []
        for _ in range(args.cold):
            ids = rnd.choice(n, size=k, replace=False).tolist()
            job = json.dumps({"uri": catalog_uri, "warehouse": warehouse, "ids": ids})
            out = subprocess.run(
                [sys.executable, __file__, "--cold-worker", job],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            ours = float(out.strip().splitlines()[-1])
            engine = LanceEngine.start()
            try:
                theirs = engine.open_and_take(dataset, ids, COLUMNS)
            finally:
                engine.close()
            neve_ms.append(ours * 1000)
            lance_ms.append(theirs * 1000)
            ratios.append(ours / theirs)
        print(
            f"  take {k:>4}: Lance {statistics.median(lance_ms):8.2f} ms   neve take layout "
            f"{statistics.median(neve_ms):8.2f} ms   neve/Lance {spread(ratios)}"
        )


def cold_worker(job: str) -> None:
    spec = json.loads(job)
    catalog = neve.connect(spec["uri"], spec["warehouse"])
    start = time.perf_counter()
    t = catalog.load_table("bench.take")
    got = t.take(spec["ids"], columns=COLUMNS)
    seconds = time.perf_counter() - start
    assert got.column("id").to_pylist() == spec["ids"]
    print(seconds)


def skipping(tables: dict[str, neve.Table], n: int, args: Any) -> None:
    print("\n== a filtered scan of 0.1% of the rows on the sorted id (take layout)")
    t = tables["take"]
    files = files_of(t)
    width = max(1, n // 1000)
    rnd = np.random.default_rng(17)
    ratios, ours, theirs, our_bytes, their_bytes = [], [], [], [], []
    for _ in range(args.repeat):
        lo = int(rnd.integers(0, n - width))
        where = f"id >= {lo} and id < {lo + width}"
        with counting_reads() as stats:
            seconds, got = timed(lambda where=where: t.scan(filter=where).to_arrow())
        assert got.num_rows == width
        ours.append(seconds)
        our_bytes.append(stats.bytes)

        def pruned(lo: int = lo) -> tuple[int, int]:
            """Row-group pruning alone: the row groups whose id range meets the filter,
            read whole, then filtered."""
            found, nbytes = 0, 0
            for path, _ in files:
                pf = pq.ParquetFile(path)
                for g in range(pf.num_row_groups):
                    rg = pf.metadata.row_group(g)
                    stats_ = rg.column(0).statistics
                    if stats_.max < lo or stats_.min >= lo + width:
                        continue
                    nbytes += sum(rg.column(c).total_compressed_size for c in range(rg.num_columns))
                    table = pf.read_row_group(g, columns=COLUMNS)
                    mask = pc.and_(
                        pc.greater_equal(table["id"], lo), pc.less(table["id"], lo + width)
                    )
                    found += table.filter(mask).num_rows
            return found, nbytes

        seconds, (found, nbytes) = timed(pruned)
        assert found == width
        theirs.append(seconds)
        their_bytes.append(nbytes)
        ratios.append(ours[-1] / theirs[-1])
    print(
        f"  page skipping  {statistics.median(ours) * 1000:8.1f} ms  "
        f"{statistics.median(our_bytes) / 2**20:8.2f} MiB read\n"
        f"  row groups     {statistics.median(theirs) * 1000:8.1f} ms  "
        f"{statistics.median(their_bytes) / 2**20:8.2f} MiB read\n"
        f"  skipping/row groups: time {spread(ratios)}   bytes "
        f"{statistics.median(their_bytes) / max(1, statistics.median(our_bytes)):.1f}x fewer"
    )


def duckdb_pages(workdir: Path, n: int, args: Any) -> None:
    """DuckDB skips pages by page-header statistics, which pyarrow leaves out when it
    writes the page index."""
    import duckdb  # neve's own dependency (the CLI's sql): only this section needs it

    print("\n== DuckDB on a sorted column, 0.1% of the rows: page index on vs off (pyarrow files)")
    data = rows(n).select(["id", "a", "d"])
    paths = {}
    for name, index in (("off", False), ("on", True)):
        paths[name] = workdir / f"duck-{name}.parquet"
        pq.write_table(data, paths[name], write_page_index=index, data_page_size=8192)
    width = max(1, n // 1000)
    times: dict[str, list[float]] = {"off": [], "on": []}
    con = duckdb.connect()
    for _ in range(args.repeat):
        lo = int(np.random.default_rng().integers(0, n - width))
        for name, path in paths.items():
            q = f"SELECT sum(a) FROM read_parquet('{path}') WHERE id >= {lo} AND id < {lo + width}"
            seconds, _ = timed(lambda q=q: con.execute(q).fetchall())
            times[name].append(seconds)
    ratios = [a / b for a, b in zip(times["on"], times["off"], strict=True)]
    print(
        f"  page index off (page-header statistics) {statistics.median(times['off']) * 1000:7.1f} ms"
        f"   on {statistics.median(times['on']) * 1000:7.1f} ms   on/off {spread(ratios)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", "--repeat", dest="repeat", type=int, default=7)
    parser.add_argument(
        "--pair-runs",
        type=int,
        help="rounds of the random-access layout against Lance (default: 3 x --runs)",
    )
    parser.add_argument("--cold", type=int, default=5)
    parser.add_argument("--sizes", default="1,10,100,1000,10000")
    parser.add_argument("--quick", action="store_true", help="1,000,000 rows")
    parser.add_argument("--cold-worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_worker:
        cold_worker(args.cold_worker)
        return
    n = 1_000_000 if args.quick and args.rows == 10_000_000 else args.rows
    args.sizes = [k for k in (int(x) for x in args.sizes.split(",")) if k <= n]
    args.pair_runs = args.pair_runs or 3 * args.repeat
    with harness.session("Random access: neve's take against Lance's", args.repeat):
        run(n, args)


def run(n: int, args: Any) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-take-") as tmp:
        workdir = Path(tmp)
        tables, staging = build(workdir, n)
        lance = LanceEngine.start()
        try:
            dataset = workdir / "rows.lance"
            seconds, _ = timed(lambda: lance.write(staging, dataset))
            size = sum(f.stat().st_size for f in dataset.rglob("*") if f.is_file())
            print(f"  Lance    dataset: write {seconds:6.2f} s   {size / 2**20:8.1f} MiB")
            # the files just written (4 GB at 10M rows) are still being written back to
            # disk for a while: flushed first, so that no take is timed beside it
            seconds, _ = timed(os.sync)
            print(f"  written back to disk in {seconds:.1f} s before the takes")
            # warm means in memory, for every engine, however long the rounds last
            kept = [str(f) for f in workdir.rglob("*") if f.is_file() and f != staging]
            with harness.kept_in_memory(kept) as locked:
                print(
                    f"  the tables' and the dataset's files kept in memory: {locked / 2**20:,.0f} "
                    "MiB locked" + ("" if locked else " (locking refused: warm may read disk)")
                )
                measure(tables, lance, dataset, workdir, n, args)
        finally:
            lance.close()


def measure(
    tables: dict[str, neve.Table],
    lance: LanceEngine,
    dataset: Path,
    workdir: Path,
    n: int,
    args: Any,
) -> None:
    warm(tables, lance, dataset, n, args)
    if args.cold:  # --cold 0 leaves the cold-ish takes out
        cold(f"sqlite:///{workdir}/catalog.db", str(workdir / "warehouse"), dataset, n, args)
    skipping(tables, n, args)
    duckdb_pages(workdir, n, args)


if __name__ == "__main__":
    main()
