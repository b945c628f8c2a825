"""Faults on the object store: the test server answers a fraction of the requests with
503 SlowDown or 500, resets the connection before or after doing the work, or answers
slowly. Appends, deletes, upserts, compaction and property commits on both catalog kinds
must each end committed with every acknowledged write present, or fail with a neve
error and leave the table as it was (an unknown outcome may have landed or not, never
half); the table loads and its rows equal a model of what was acknowledged."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

import neve
from budget import examples
from neve.errors import CommitStateUnknownError, NeveError
from s3server import S3Warehouse

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64(), nullable=False)]
)
KINDS = ["503", "500", "reset-before", "reset-after", "slow"]


def _table(rows: dict[int, int]) -> pa.Table:
    keys = sorted(rows)
    return pa.table({"id": keys, "v": [rows[k] for k in keys]}, schema=SCHEMA)


def _state(t: neve.Table) -> dict[int, int]:
    got = t.scan().to_arrow().to_pylist()
    out = {r["id"]: r["v"] for r in got}
    assert len(out) == len(got), "a key appears twice"
    return out


def _operation(rnd: random.Random, n: int, model: dict[int, int]) -> tuple[str, object]:
    kind = rnd.choice(["append", "append", "delete", "upsert", "compact", "properties"])
    if kind == "append":
        return kind, {k: n for k in range(100 * n, 100 * n + rnd.randint(1, 20))}
    if kind == "delete":
        return kind, rnd.randrange(0, 100 * (n + 1))
    if kind == "upsert":
        keys = [*rnd.sample(sorted(model), min(4, len(model))), 100 * n + 50]
        return kind, {k: -n for k in keys}
    return kind, n


def _apply(t: neve.Table, kind: str, arg: object) -> None:
    if kind == "append":
        assert isinstance(arg, dict)
        t.append(_table(arg))
    elif kind == "delete":
        assert isinstance(arg, int)
        t.delete(f"id >= {arg} and id < {arg + 40}")
    elif kind == "upsert":
        assert isinstance(arg, dict)
        t.upsert(_table(arg))
    elif kind == "compact":
        t.maintenance.rewrite_data_files(options={"min-input-files": "2"})
    else:
        t.set_properties({"fault-test.n": str(arg)})


def _expected(model: dict[int, int], kind: str, arg: object) -> dict[int, int]:
    after = dict(model)
    if kind in ("append", "upsert"):
        assert isinstance(arg, dict)
        after.update(arg)
    elif kind == "delete":
        assert isinstance(arg, int)
        after = {k: v for k, v in after.items() if not arg <= k < arg + 40}
    return after


def _run(
    cat: neve.Catalog, wh: S3Warehouse, seed: int, rate: float, steps: int
) -> tuple[dict[str, int], list[str]]:
    """Random operations under faults; returns how they ended and the errors."""
    cat.create_table("db.t", SCHEMA, primary_key=["id"])
    model: dict[int, int] = {}
    rnd = random.Random(seed)
    ended = {"ok": 0, "failed": 0, "unknown": 0}
    errors: list[str] = []
    for n in range(steps):
        kind, arg = _operation(rnd, n, model)
        after = _expected(model, kind, arg)
        with wh.faults(rate, KINDS, seed=seed * 1000 + n, slow_s=0.05):
            try:
                _apply(cat.load_table("db.t"), kind, arg)
                outcome = "ok"
            except CommitStateUnknownError:
                outcome = "unknown"
            except NeveError as exc:
                outcome = "failed"
                errors.append(f"{kind}: {type(exc).__name__}: {exc}")
        ended[outcome] += 1
        state = _state(cat.load_table("db.t"))  # faults are off: the table loads
        if outcome == "ok":
            assert state == after, f"acknowledged {kind} {arg} is not in the table"
        elif outcome == "failed":
            assert state == model, f"failed {kind} {arg} changed the table"
        else:
            assert state in (model, after), f"{kind} {arg} half committed"
        model = state
    assert not [e for e in errors if "ValidationError" in e or "ExpressionError" in e], errors
    return ended, errors


@pytest.mark.parametrize("kind", ["sql", "filesystem"])
def test_operations_under_faults(kind: str, s3_warehouse: S3Warehouse, tmp_path: Path) -> None:
    """A fault on one request in eight: the retries absorb them, everything lands."""
    props = s3_warehouse.properties
    if kind == "sql":
        cat = neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse=s3_warehouse.uri, **props)
    else:
        cat = neve.connect(s3_warehouse.uri, **props)
    cat.create_namespace("db")
    ended, errors = _run(cat, s3_warehouse, seed=len(kind), rate=0.12, steps=examples(12, 60))
    assert ended["ok"] == sum(ended.values()), errors
    injected = [e for e in s3_warehouse.log() if e["fault"]]
    assert {e["fault"] for e in injected} == set(KINDS)


@pytest.mark.parametrize("kind", ["sql", "filesystem"])
def test_operations_when_retries_run_out(
    kind: str, s3_warehouse: S3Warehouse, tmp_path: Path
) -> None:
    """Faults on half the requests and two attempts each: many operations fail, each
    with a neve error and without a trace in the table."""
    props = {**s3_warehouse.properties, "s3.max-attempts": "2"}
    if kind == "sql":
        cat = neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse=s3_warehouse.uri, **props)
    else:
        cat = neve.connect(s3_warehouse.uri, **props)
    cat.create_namespace("db")
    ended, _ = _run(cat, s3_warehouse, seed=7 + len(kind), rate=0.5, steps=examples(6, 40))
    assert ended["failed"] + ended["unknown"] > 0
