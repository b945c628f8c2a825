"""What the writer processes of the concurrency and crash tests run, and the model the
parent checks their outcome against.

A table of rows ``(key, grp, k2, op)``, partitioned by ``grp``: ``key`` is unique per
row ever written, ``op`` is the id of the operation that wrote it. Each operation commits
with ``snapshot_properties={"op-id": <id>}``, so the snapshot log gives the commit order.
Groups ``0..SHARED-1`` are written by every writer (overlapping ranges); group
``100 + w`` only by writer ``w`` (disjoint ranges).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

# imported up front, so that the fork server (which preloads this module) has them
import neve.arrow.scan
import neve.arrow.write  # noqa: F401
from neve.catalog import Catalog, FilesystemCatalog, SqlCatalog
from neve.errors import CommitConflictError, CommitFailedError
from neve.table.table import Table

SCHEMA = pa.schema(
    [
        pa.field("key", pa.int64(), nullable=False),
        pa.field("grp", pa.int32(), nullable=False),
        pa.field("k2", pa.int32(), nullable=False),
        pa.field("op", pa.string(), nullable=False),
    ]
)
SHARED = 3
OP_ID = "op-id"
#: Fast backoff for tests; the retry *count* stays Iceberg's default (4).
TABLE_PROPERTIES = {"commit.retry.min-wait-ms": "20", "commit.retry.max-wait-ms": "300"}


@dataclass(frozen=True)
class Op:
    """One operation of a writer: ``append`` (``n`` rows into ``grp``), ``delete``
    (rows of ``grp`` with ``k2 < t``) or ``overwrite`` (replace the rows of ``grp``
    with ``k2 >= t`` by ``n`` new ones)."""

    op_id: str
    kind: str
    grp: int
    t: int
    n: int
    seq: int  # unique per (writer, op): makes keys unique

    def rows(self) -> pa.Table:
        keys = [self.seq * 100 + j for j in range(self.n)]
        lo = self.t if self.kind == "overwrite" else 0
        k2 = [lo + (j * 7) % (10 - lo) for j in range(self.n)]
        return pa.table(
            {
                "key": pa.array(keys, pa.int64()),
                "grp": pa.array([self.grp] * self.n, pa.int32()),
                "k2": pa.array(k2, pa.int32()),
                "op": [self.op_id] * self.n,
            },
            schema=SCHEMA,
        )

    def filter(self) -> str:
        if self.kind == "delete":
            return f"grp = {self.grp} and k2 < {self.t}"
        return f"grp = {self.grp} and k2 >= {self.t}"

    def removes(self, row: tuple[int, int, int, str]) -> bool:
        _key, grp, k2, _op = row
        if self.kind == "delete":
            return grp == self.grp and k2 < self.t
        if self.kind == "overwrite":
            return grp == self.grp and k2 >= self.t
        return False


def plan_ops(worker: int, appends: int, others: int, seed: int, prefix: str = "") -> list[Op]:
    """``appends`` appends and ``others`` deletes/overwrites in a random order; half
    of each on shared groups, half on the writer's own group."""
    rnd = random.Random(seed * 1000 + worker)
    kinds = ["append"] * appends + [rnd.choice(["delete", "overwrite"]) for _ in range(others)]
    rnd.shuffle(kinds)
    ops = []
    for i, kind in enumerate(kinds):
        grp = rnd.randrange(SHARED) if rnd.random() < 0.5 else 100 + worker
        t = rnd.randrange(1, 9)
        n = rnd.randrange(1, 6)
        ops.append(Op(f"{prefix}w{worker}-{i}", kind, grp, t, n, (worker * 10_000 + i)))
    return ops


def apply(table: Table, op: Op) -> None:
    props = {OP_ID: op.op_id}
    if op.kind == "append":
        table.append(op.rows(), snapshot_properties=props)
    elif op.kind == "delete":
        table.delete(op.filter(), snapshot_properties=props)
    else:
        table.overwrite(op.rows(), op.filter(), snapshot_properties=props)


def run_writer(
    catalog: Catalog, name: str, ops: Sequence[Op], start_at: float
) -> list[tuple[str, str]]:
    """Runs in a writer process: apply ``ops`` in order (each on a freshly loaded
    table), from ``start_at``; returns ``(op id, outcome)`` pairs, where the outcome is
    ``ok``, ``conflict`` (CommitConflictError), ``gave-up`` (CommitFailedError after
    the retries) or ``error: ...``."""
    time.sleep(max(0.0, start_at - time.time()))
    out: list[tuple[str, str]] = []
    for op in ops:
        try:
            apply(catalog.load_table(name), op)
            outcome = "ok"
        except CommitConflictError:
            outcome = "conflict"
        except CommitFailedError:
            outcome = "gave-up"
        except Exception as exc:  # reported to the parent, which fails the test
            outcome = f"error: {type(exc).__name__}: {exc}"
        out.append((op.op_id, outcome))
    return out


def process_context() -> Any:
    """Writer processes come from a fork server that imported neve and pyarrow once,
    so each starts in milliseconds, and none inherits the test process's state."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["concurrency.workers"])
    return ctx


def warm_up(_index: int = 0) -> int:
    """Import what the writers need (once per process)."""

    return os.getpid()


# -- checking -----------------------------------------------------------------------


def committed_op_ids(table: Table) -> list[str]:
    """The op ids of the main branch's snapshots, oldest first."""
    md = table.metadata
    return [s.summary.get(OP_ID, "?") for s in reversed(md.ancestors(md.current_snapshot_id))]


def replay(ops: Iterable[Op]) -> Counter[tuple[int, int, int, str]]:
    """The rows a table holds after ``ops`` committed in this order."""
    rows: Counter[tuple[int, int, int, str]] = Counter()
    for op in ops:
        if op.kind != "append":
            rows = Counter({r: c for r, c in rows.items() if not op.removes(r)})
        if op.kind != "delete":
            rows.update(_tuples(op.rows()))
    return rows


def _tuples(data: pa.Table) -> list[tuple[int, int, int, str]]:
    cols = [data.column(c).to_pylist() for c in ("key", "grp", "k2", "op")]
    return list(zip(*cols, strict=True))


def table_rows(table: Table) -> Counter[tuple[int, int, int, str]]:
    return Counter(_tuples(table.scan().to_arrow().select(["key", "grp", "k2", "op"])))


# -- crash trials -------------------------------------------------------------------

#: Where a crash trial kills its writer, for each catalog kind.
CRASH_POINTS = {
    "sql": ["before-write", "mid-write", "after-write", "before-db-commit", "after-swap"],
    "filesystem": ["before-write", "mid-write", "before-hint", "after-swap"],
    # the filesystem catalog on an object store: a put is whole or absent, so instead
    # of a half-written file the writer dies while its put is in flight
    "s3": ["before-write", "in-put", "before-hint", "after-swap"],
}


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def arm(catalog: Catalog, point: str, nth: int) -> None:
    """A tiny test-only wrapper: kill this process with SIGKILL at the ``nth`` time
    the commit path reaches ``point``. Replaces methods of this one catalog object; it
    changes nothing else in neve."""
    hits = [0]

    def reached() -> bool:
        hits[0] += 1
        return hits[0] == nth

    def wrap(
        obj: Any, attr: str, before: Callable[..., None] | None = None, after: bool = False
    ) -> None:
        real = getattr(obj, attr)

        def hooked(*args: Any, **kwargs: Any) -> Any:
            if before is not None:
                before(*args, **kwargs)
            result = real(*args, **kwargs)
            if after and reached():
                _die()
            return result

        setattr(obj, attr, hooked)

    def die_before(*_args: Any, **_kwargs: Any) -> None:
        if reached():
            _die()

    if point == "after-swap":
        wrap(catalog, "commit_metadata", after=True)
    elif isinstance(catalog, SqlCatalog):
        if point == "before-write":
            wrap(catalog, "write_metadata", before=die_before)
        elif point == "after-write":
            wrap(catalog, "write_metadata", after=True)
        elif point == "mid-write":

            def half_then_die(md: Any, location: str, exclusive: bool = False) -> None:
                if reached():
                    from neve.spec.metadata_json import metadata_to_bytes

                    data = metadata_to_bytes(md)
                    with catalog.io.open_output(location) as f:
                        f.write(data[: len(data) // 2])
                    _die()

            wrap(catalog, "write_metadata", before=half_then_die)
        elif point == "before-db-commit":
            from sqlalchemy import event

            def on_commit(_conn: Any) -> None:
                if reached():
                    _die()

            event.listen(catalog.engine, "commit", on_commit)
        else:
            raise ValueError(point)
    elif isinstance(catalog, FilesystemCatalog):
        if point == "before-write":
            wrap(catalog, "_create_version", before=die_before)
        elif point == "mid-write":

            def partial_tmp_then_die(location: str, data: bytes) -> None:
                if location.endswith(".metadata.json") and reached():
                    folder, _, name = location.rpartition("/")
                    tmp = os.path.join(folder, f".{name}.{os.urandom(8).hex()}.tmp")
                    with open(tmp, "wb") as f:
                        f.write(data[: len(data) // 2])
                    _die()

            wrap(catalog.io, "create_exclusive", before=partial_tmp_then_die)
        elif point == "before-hint":
            wrap(catalog, "_write_hint", before=die_before)
        elif point == "in-put":
            real_create = catalog.io.create_exclusive

            def put_then_die(location: str, data: bytes) -> None:
                if location.endswith(".metadata.json") and reached():
                    # the server answers these puts slowly (the test sets it up)
                    threading.Thread(target=real_create, args=(location, data)).start()
                    time.sleep(0.1)
                    _die()
                real_create(location, data)

            catalog.io.create_exclusive = put_then_die  # type: ignore[method-assign]
        else:
            raise ValueError(point)
    else:
        raise ValueError(type(catalog).__name__)


def crash_writer(
    catalog: Catalog, name: str, ops: Sequence[Op], ack_path: str, point: str, nth: int
) -> None:
    """Runs in a process that gets killed: apply ``ops`` (appends) and record each one
    acknowledged (the call returned) in ``ack_path``, durably, before the next. With
    ``point`` "timer" nothing is armed (the parent kills at a random moment)."""
    if point != "timer":
        arm(catalog, point, nth)
    fd = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for op in ops:
            apply(catalog.load_table(name), op)
            os.write(fd, f"{op.op_id}\n".encode())
            os.fsync(fd)
    finally:
        os.close(fd)
