"""What each client process of the REST load test runs (imported by spawned workers).

Every operation carries its id in the snapshot summary (``op-id``), so the table's
history says which commits landed, and how often."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa

from neve.catalog.rest import RestCatalog
from neve.errors import CommitConflictError, CommitFailedError

EVENTS = pa.schema(
    [
        pa.field("w", pa.int32(), nullable=False),
        pa.field("i", pa.int32(), nullable=False),
        pa.field("op", pa.string(), nullable=False),
    ]
)
KEYED = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("v", pa.int32(), nullable=False),
        pa.field("op", pa.string(), nullable=False),
    ]
)
KEYS_PER_WORKER = 4
OP_ID = "op-id"


def warm_up(_: int) -> bool:
    return True


def run(url: str, warehouse: str, worker: int, start_at: float, seconds: float) -> dict[str, Any]:
    """Alternate appends (to ``load.events``) and upserts of this worker's keys (to
    ``load.keyed``) until ``seconds`` are over; what was acknowledged, what failed."""
    cat = RestCatalog("neve", url, {"warehouse": warehouse})
    appended: list[str] = []
    upserted: list[tuple[str, int, int]] = []  # (op, key, value)
    failed: list[str] = []
    latencies: list[float] = []
    time.sleep(max(0.0, start_at - time.time()))
    end = time.time() + seconds
    i = 0
    while time.time() < end:
        op = f"w{worker}-{i}"
        started = time.perf_counter()
        try:
            if i % 2 == 0:
                rows = pa.table({"w": [worker] * 3, "i": [i] * 3, "op": [op] * 3}, schema=EVENTS)
                cat.load_table("load.events").append(rows, snapshot_properties={OP_ID: op})
                appended.append(op)
            else:
                key = worker * 1000 + (i // 2) % KEYS_PER_WORKER
                rows = pa.table({"k": [key], "v": [i], "op": [op]}, schema=KEYED)
                cat.load_table("load.keyed").upsert(rows, snapshot_properties={OP_ID: op})
                upserted.append((op, key, i))
            latencies.append(time.perf_counter() - started)
        except (CommitFailedError, CommitConflictError):
            failed.append(op)  # refused: it must not be in the table
        i += 1
    cat.dispose()
    return {"appended": appended, "upserted": upserted, "failed": failed, "latencies": latencies}
