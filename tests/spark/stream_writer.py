"""The writer process of the streaming copy test (tests/spark/test_streaming_copy.py):
appends, upserts and deletes on a primary-key table, one commit each, in a loop.

    python stream_writer.py <catalog uri> <warehouse> <table> <operations> <seed>
"""

from __future__ import annotations

import random
import sys
import time

import pyarrow as pa

import neve

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.int32()),
        pa.field("s", pa.string()),
    ]
)


def batch(ids: list[int], step: int) -> pa.Table:
    return pa.table(
        {"id": ids, "v": [step * 10 + i % 7 for i in ids], "s": [f"{i}@{step}" for i in ids]},
        schema=SCHEMA,
    )


def main(uri: str, warehouse: str, name: str, operations: int, seed: int) -> None:
    rng = random.Random(seed)
    table = neve.connect(uri, warehouse).load_table(name)
    next_id = 1_000
    for step in range(operations):
        table.refresh()
        op = rng.choice(["append", "upsert", "upsert", "delete"])
        if op == "append":
            ids = list(range(next_id, next_id + rng.randint(1, 20)))
            next_id = ids[-1] + 1
            table.append(batch(ids, step))
        elif op == "upsert":
            old = rng.sample(range(next_id), 8)
            new = list(range(next_id, next_id + rng.randint(0, 5)))
            next_id += len(new)
            table.upsert(batch(sorted(set(old + new)), step))
        else:
            lo = rng.randrange(next_id)
            table.delete(f"id >= {lo} and id < {lo + rng.randint(1, 6)}")
        time.sleep(rng.random() * 0.2)
    print("done", flush=True)


if __name__ == "__main__":
    uri, warehouse, name, operations, seed = sys.argv[1:6]
    main(uri, warehouse, name, int(operations), int(seed))
