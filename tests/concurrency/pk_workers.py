"""What the writer processes of the primary-key rebase test run, and the model the
parent replays their committed operations through.

A primary-key table ``(k, v)``: writers upsert small batches of keys from one shared
range (some keys existing, some new, so two writers insert the same new key) and
delete small sets of keys (marking rows of the same data files as other writers).
Every operation commits with ``snapshot_properties={"op-id": <id>}``; the snapshot
log gives the commit order, and replaying the committed operations in that order
must give the table's rows.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from neve.catalog import Catalog
from neve.errors import CommitConflictError, CommitFailedError
from neve.table.table import Table

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
OP_ID = "op-id"
#: Keys 0..INITIAL-1 exist when the writers start; they upsert and delete in 0..KEYS-1.
INITIAL = 120
KEYS = 160
TABLE_PROPERTIES = {
    "commit.retry.min-wait-ms": "10",
    "commit.retry.max-wait-ms": "200",
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}


#: The partial-update table: non-null fields overwrite, the higher ``seq`` wins.
PARTIAL_SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("a", pa.string()),
        pa.field("b", pa.string()),
        pa.field("seq", pa.int64()),
    ]
)
PARTIAL_PROPERTIES = {
    **TABLE_PROPERTIES,
    "merge-engine": "partial-update",
    "sequence.field": "seq",
}


@dataclass(frozen=True)
class PkOp:
    op_id: str
    kind: str  # "upsert" or "delete"
    keys: tuple[int, ...]
    #: partial-update rows: per key (a, b, seq), None for a null field
    fields: tuple[tuple[str | None, str | None, int], ...] = ()

    def rows(self) -> pa.Table:
        if self.fields:
            return pa.table(
                {
                    "k": list(self.keys),
                    "a": [f[0] for f in self.fields],
                    "b": [f[1] for f in self.fields],
                    "seq": [f[2] for f in self.fields],
                },
                schema=PARTIAL_SCHEMA,
            )
        return pa.table(
            {"k": list(self.keys), "v": [f"{self.op_id}:{k}" for k in self.keys]}, schema=SCHEMA
        )

    def filter(self) -> str:
        return f"k in ({', '.join(str(k) for k in self.keys)})"


def plan_pk_ops(worker: int, count: int, seed: int, partial: bool = False) -> list[PkOp]:
    rnd = random.Random(seed * 1000 + worker)
    ops = []
    for i in range(count):
        kind = "delete" if rnd.random() < 0.25 else "upsert"
        keys = tuple(sorted(rnd.sample(range(KEYS), rnd.randrange(2, 7))))
        op_id = f"s{seed}-w{worker}-{i}"
        fields: tuple[tuple[str | None, str | None, int], ...] = ()
        if partial and kind == "upsert":
            fields = tuple(
                (
                    None if rnd.random() < 0.4 else f"{op_id}:a",
                    None if rnd.random() < 0.4 else f"{op_id}:b",
                    rnd.randrange(0, 50),  # out of order across writers and commits
                )
                for _ in keys
            )
        ops.append(PkOp(op_id, kind, keys, fields))
    return ops


_SPARK: list[Any] = []


def _spark_session() -> Any:
    """The writer process's Spark session (one per process, made on first use), with
    Spark jobs for every change: the writer is there to race as a Spark writer."""
    if not _SPARK:
        # Spark only in the processes that run a Spark writer
        from neve.spark import local_session

        _SPARK.append(
            local_session(
                "local[1]",
                "neve-pk-writer",
                conf={
                    "spark.ui.enabled": "false",
                    "spark.ui.showConsoleProgress": "false",
                    "spark.sql.shuffle.partitions": "2",
                    "spark.driver.memory": "1g",
                    "spark.neve.local.rows-max": "0",
                    "spark.neve.local.bytes-max": "0",
                },
            )
        )
        _SPARK[0].sparkContext.setLogLevel("ERROR")
    return _SPARK[0]


def _apply(table: Table, op: PkOp, spark: Any) -> None:
    props = {OP_ID: op.op_id}
    if spark is None:
        if op.kind == "upsert":
            table.upsert(op.rows(), snapshot_properties=props)
        else:
            table.delete(op.filter(), snapshot_properties=props)
        return
    # the Spark verbs, only in a Spark writer's process
    import neve.spark as ns

    if op.kind == "upsert":
        ns.upsert(spark, spark.createDataFrame(op.rows()), table, snapshot_properties=props)
    else:
        ns.delete(spark, table, op.filter(), snapshot_properties=props)


def run_pk_writer(
    catalog: Catalog, name: str, ops: Sequence[PkOp], start_at: float, spark: bool = False
) -> list[tuple[str, str]]:
    """Runs in a writer process: apply ``ops`` in order, each on a freshly loaded
    table (with the Spark verbs when ``spark``); returns ``(op id, outcome)``: ``ok``,
    ``conflict``, ``gave-up`` or ``error: ...``."""
    session = _spark_session() if spark else None
    time.sleep(max(0.0, start_at - time.time()))
    out: list[tuple[str, str]] = []
    for op in ops:
        try:
            _apply(catalog.load_table(name), op, session)
            outcome = "ok"
        except CommitConflictError as exc:
            outcome = f"conflict: {exc}"
        except CommitFailedError:
            outcome = "gave-up"
        except Exception as exc:  # reported to the parent, which fails the test
            outcome = f"error: {type(exc).__name__}: {exc}"
        out.append((op.op_id, outcome))
    return out


def committed(table: Table) -> list[str]:
    """The op ids of the main branch's snapshots, oldest first (the load has none)."""
    md = table.metadata
    ids = [s.summary.get(OP_ID) for s in reversed(md.ancestors(md.current_snapshot_id))]
    return [i for i in ids if i is not None]


def replay(ops: Iterable[PkOp]) -> dict[int, str]:
    """The rows after ``ops`` committed in this order: an upsert's rows win."""
    rows = {k: f"load:{k}" for k in range(INITIAL)}
    for op in ops:
        for k in op.keys:
            if op.kind == "upsert":
                rows[k] = f"{op.op_id}:{k}"
            else:
                rows.pop(k, None)
    return rows


def initial_partial_rows() -> pa.Table:
    keys = list(range(INITIAL))
    return pa.table(
        {"k": keys, "a": ["load"] * INITIAL, "b": [None] * INITIAL, "seq": [10] * INITIAL},
        schema=PARTIAL_SCHEMA,
    )


def replay_partial(ops: Iterable[PkOp]) -> dict[int, tuple[str | None, str | None, int]]:
    """Partial-update with a sequence field, committed in this order: a key's stored
    row and an incoming row are folded in sequence order (the stored row first on a
    tie); each field takes the last non-null value, ``seq`` the last row's."""
    rows: dict[int, tuple[str | None, str | None, int]] = {
        k: ("load", None, 10) for k in range(INITIAL)
    }
    for op in ops:
        for j, k in enumerate(op.keys):
            if op.kind == "delete":
                rows.pop(k, None)
                continue
            incoming = op.fields[j]
            folded = sorted([*([rows[k]] if k in rows else []), incoming], key=lambda r: r[2])
            a = b = None
            for ra, rb, _ in folded:
                a = ra if ra is not None else a
                b = rb if rb is not None else b
            rows[k] = (a, b, folded[-1][2])
    return rows
