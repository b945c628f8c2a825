"""Commit throughput: N sequential appends of R rows through neve and through pyiceberg,
both on an SQLite catalog on this machine, in one run. Prints ms per commit and the
ratio. A script, not a test: it asserts nothing about time.

    .venv/bin/python benchmarks/bench_commits.py [--commits 100] [--rows 1000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import pyarrow as pa


def make_batch(i: int, rows: int) -> pa.Table:
    start = i * rows
    return pa.table(
        {
            "id": pa.array(range(start, start + rows), pa.int64()),
            "name": pa.array([f"row-{j % 97}" for j in range(start, start + rows)]),
            "value": pa.array([j * 0.5 for j in range(start, start + rows)], pa.float64()),
        }
    )


def bench_neve(root: Path, commits: int, rows: int) -> list[float]:
    import neve

    cat = neve.connect(f"sqlite:///{root}/neve.db", warehouse=str(root / "neve-wh"))
    cat.create_namespace("bench")
    table = cat.create_table("bench.t", make_batch(0, 1).schema)
    times = []
    for i in range(commits):
        batch = make_batch(i, rows)
        t0 = time.perf_counter()
        table.append(batch)
        times.append(time.perf_counter() - t0)
    assert table.scan().count() == commits * rows
    return times


def bench_pyiceberg(root: Path, commits: int, rows: int) -> list[float]:
    from pyiceberg.catalog.sql import SqlCatalog

    cat = SqlCatalog("bench", uri=f"sqlite:///{root}/pyi.db", warehouse=f"file://{root}/pyi-wh")
    cat.create_namespace("bench")
    table = cat.create_table("bench.t", schema=make_batch(0, 1).schema)
    times = []
    for i in range(commits):
        batch = make_batch(i, rows)
        t0 = time.perf_counter()
        table.append(batch)
        times.append(time.perf_counter() - t0)
    assert table.scan().to_arrow().num_rows == commits * rows
    return times


def report(name: str, times: list[float]) -> float:
    ms = [t * 1000 for t in times]
    tenth = max(1, len(ms) // 10)
    mean = statistics.fmean(ms)
    print(
        f"{name:<10} mean {mean:8.1f} ms/commit   median {statistics.median(ms):8.1f}   "
        f"first10% {statistics.fmean(ms[:tenth]):8.1f}   last10% {statistics.fmean(ms[-tenth:]):8.1f}"
    )
    return mean


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--commits", type=int, default=100)
    p.add_argument("--rows", type=int, default=1000)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        print(f"{args.commits} sequential appends of {args.rows} rows, SQLite catalog, local disk")
        n = report("neve", bench_neve(root, args.commits, args.rows))
        p_ = report("pyiceberg", bench_pyiceberg(root, args.commits, args.rows))
        print(f"ratio pyiceberg/neve per commit: {p_ / n:.1f}x")


if __name__ == "__main__":
    main()
