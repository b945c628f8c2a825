"""The main job, on the embedded default (a local warehouse folder and an SQLite
catalog): create a partitioned table, append, delete, overwrite, evolve the schema,
time travel, and print what happened with timings.

    python -m neve.demo [--root .demo]
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

import neve

T = TypeVar("T")
UTC = dt.timezone.utc


def _step(label: str, fn: Callable[[], T]) -> T:
    t0 = time.perf_counter()
    out = fn()
    print(f"  {label:<58} {1000 * (time.perf_counter() - t0):8.1f} ms")
    return out


def _events(start: int, n: int, day0: int) -> pa.Table:
    base = dt.datetime(2024, 1, 1, tzinfo=UTC)
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table(
        {
            "id": ids,
            "user": pa.array([f"user-{i % 500}" for i in range(start, start + n)]),
            "kind": pa.array([("view", "click", "buy")[i % 3] for i in range(start, start + n)]),
            "ts": pa.array(
                [base + dt.timedelta(days=day0 + i % 14, seconds=i % 86400) for i in range(n)],
                pa.timestamp("us", tz="UTC"),
            ),
            "amount": pa.array([round((i % 1000) * 0.25, 2) for i in range(start, start + n)]),
        },
        schema=pa.schema(
            [
                pa.field("id", pa.int64(), nullable=False),
                pa.field("user", pa.string()),
                pa.field("kind", pa.string()),
                pa.field("ts", pa.timestamp("us", tz="UTC")),
                pa.field("amount", pa.float64()),
            ]
        ),
    )


def run(root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    catalog = neve.connect(
        f"sqlite:///{root.resolve()}/catalog.db", warehouse=str(root.resolve() / "warehouse")
    )
    print(f"catalog: {catalog}")
    catalog.create_namespace("demo")
    table = _step(
        "create demo.events partitioned by day(ts), bucket(8, id)",
        lambda: catalog.create_table(
            "demo.events", _events(0, 1, 0).schema, partition_by=["day(ts)", "bucket(8, id)"]
        ),
    )
    for k in range(3):
        batch = _events(k * 100_000, 100_000, 0)

        def append(batch: pa.Table = batch) -> None:
            table.append(batch)

        _step(f"append 100,000 rows (batch {k + 1})", append)
    after_appends = table.current_snapshot()
    _step(
        "delete where kind = 'view' and id < 50000 (copy-on-write)",
        lambda: table.delete("kind = 'view' and id < 50000"),
    )
    week2 = "ts >= '2024-01-08T00:00:00+00:00' and ts < '2024-01-15T00:00:00+00:00'"
    _step(
        "overwrite week 2 with 20,000 new rows",
        lambda: table.overwrite(_events(1_000_000, 20_000, 7), filter=week2),
    )

    def evolve() -> None:
        with table.update_schema() as u:
            u.rename_column("user", "customer")
            u.add_column("channel", "string")

    _step("schema: rename user -> customer, add channel", evolve)
    counted = _step("scan: count rows", lambda: table.scan().count())
    buys = _step(
        "scan: kind = 'buy' and day 2024-01-03 (pruned)",
        lambda: table.scan(
            filter="kind = 'buy' and ts >= '2024-01-03T00:00:00+00:00' and ts < '2024-01-04T00:00:00+00:00'",
            columns=["id", "customer", "amount"],
        ).to_arrow(),
    )
    planned = table.scan(filter="id = 4242").plan_files()
    total_files = len(table.scan().plan_files())
    assert after_appends is not None
    old = _step(
        "time travel: count rows as of the third append",
        lambda: table.scan(snapshot_id=after_appends.snapshot_id).count(),
    )
    print()
    print(f"rows now: {counted:,}; rows after the appends: {old:,}")
    total = pc.sum(buys["amount"]).as_py() or 0.0
    print(f"buys on 2024-01-03: {buys.num_rows:,} rows, total amount {total:,.2f}")
    print(f"a lookup of id = 4242 plans {len(planned)} of {total_files} data files")
    print("history:")
    for s in table.snapshots():
        print(
            f"  {s.snapshot_id:>20}  {s.operation.value:<9} +{s.summary.get('added-records', '0'):>7} "
            f"-{s.summary.get('deleted-records', '0'):>7}  total {s.summary.get('total-records', '?'):>7}"
        )
    print(f"metadata: {table.metadata_location}")


def main() -> None:
    p = argparse.ArgumentParser(description="neve's main job on the embedded default")
    p.add_argument("--root", default=".demo", help="folder for the catalog and warehouse")
    args = p.parse_args()
    run(Path(args.root))


if __name__ == "__main__":
    main()
