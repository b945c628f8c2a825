"""``kill -9`` of a writer at points of its commit, on SQLite, PostgreSQL and the
filesystem catalog, and on the filesystem catalog on s3 (the test server: there the
writer also dies while its put is in flight). Afterwards the table loads at a committed
snapshot holding every acknowledged row (and no row of an unacknowledged append other
than the one that was in flight), and a later writer commits fine.

The points: before the new metadata file is written, halfway through writing it, after
it is written but before the pointer swap, inside the database transaction just before
its COMMIT (SQL), before the version hint (filesystem), and just after the swap (the
commit landed but was never acknowledged); plus kills at random moments of a stream of
appends. A test-only wrapper in the child (:func:`concurrency.workers.arm`) picks the
point; neve itself runs unchanged.
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import neve
from budget import examples
from concurrency.workers import (
    CRASH_POINTS,
    SCHEMA,
    Op,
    committed_op_ids,
    crash_writer,
    process_context,
    table_rows,
)
from neve.catalog import Catalog
from s3server import S3Warehouse

APPENDS = 6


def crash_trial(
    catalog: Catalog,
    tmp_path: Path,
    name: str,
    point: str,
    nth: int,
    kill_after: float | None,
    settle: float = 0.0,
) -> None:
    """Run one writer that dies (at ``point``, the ``nth`` time; or killed by the parent
    after ``kill_after`` seconds), then check the table and commit to it again. A request
    of the dead writer still in flight is given ``settle`` seconds to land (or not)."""
    catalog.create_namespace_if_not_exists("db")
    catalog.create_table(name, SCHEMA)
    prefix = name.replace(".", "_")
    count = APPENDS if kill_after is None else 3 * APPENDS
    ops = [Op(f"{prefix}-{i}", "append", i % 3, 0, 2, seq=i) for i in range(count)]
    ack = tmp_path / f"{prefix}.ack"
    ctx = process_context()
    child = ctx.Process(
        target=crash_writer, args=(catalog, name, ops, str(ack), point, nth), daemon=True
    )
    child.start()
    if kill_after is not None:
        deadline = time.monotonic() + 60
        while not ack.exists() and child.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)  # the writer creates the file when it starts writing
        time.sleep(kill_after)
        if child.is_alive():
            child.kill()
    child.join(120)
    assert not child.is_alive()
    time.sleep(settle)
    acknowledged = ack.read_text().split() if ack.exists() else []
    if kill_after is None:
        assert child.exitcode == -signal.SIGKILL, f"the writer was not killed at {point}"
        assert len(acknowledged) == nth - 1  # it died in the nth commit

    # the table loads at a committed state with every acknowledged append
    after = catalog.load_table(name)
    committed = committed_op_ids(after)
    assert len(committed) == len(set(committed))
    assert committed[: len(acknowledged)] == acknowledged
    in_flight = ops[len(acknowledged)].op_id if len(acknowledged) < len(ops) else None
    assert set(committed) - set(acknowledged) <= {in_flight}
    rows = table_rows(after)
    assert all(c == 1 for c in rows.values())
    assert {r[3] for r in rows} == set(committed)
    assert sum(rows.values()) == 2 * len(committed)
    if point in ("after-swap", "before-hint"):
        assert in_flight in committed  # landed, never acknowledged
    if point in ("before-write", "mid-write", "after-write", "before-db-commit"):
        assert in_flight not in committed
    # "in-put": the put may have landed or not, either is a committed state

    # a later writer commits fine, through the same catalog and a fresh one
    later = Op(f"{prefix}-later", "append", 5, 0, 3, seq=9_999_999)
    after.append(later.rows(), snapshot_properties={"op-id": later.op_id})
    final = catalog.load_table(name)
    assert committed_op_ids(final) == [*committed, later.op_id]
    assert sum(table_rows(final).values()) == 2 * len(committed) + 3


def _kinds() -> list[object]:
    return ["sqlite", "filesystem", pytest.param("postgres", marks=pytest.mark.postgres)]


def _points(kind: str) -> list[str]:
    return CRASH_POINTS["filesystem" if kind == "filesystem" else "sql"]


@pytest.mark.parametrize("kind", _kinds())
def test_kill_at_each_commit_point(
    kind: str, catalog_factory: Callable[[str], Catalog], tmp_path: Path
) -> None:
    catalog = catalog_factory(kind)
    for i, point in enumerate(_points(kind)):
        nth = 1 + i % 3  # the first, second or third commit
        crash_trial(catalog, tmp_path, f"db.{point.replace('-', '_')}", point, nth, None)


@pytest.mark.parametrize("kind", _kinds())
def test_kill_at_random_moments(
    kind: str, catalog_factory: Callable[[str], Catalog], tmp_path: Path
) -> None:
    catalog = catalog_factory(kind)
    rnd = random.Random(7)
    for trial in range(2):
        crash_trial(catalog, tmp_path, f"db.timer{trial}", "timer", 0, rnd.uniform(0.0, 0.15))


def test_kill_on_the_object_store_catalog(s3_warehouse: S3Warehouse, tmp_path: Path) -> None:
    catalog = neve.connect(s3_warehouse.uri, **s3_warehouse.properties)
    for i, point in enumerate(CRASH_POINTS["s3"]):
        nth = 1 + i % 3
        if point == "in-put":
            with s3_warehouse.faults(
                1.0, ["slow"], slow_s=0.5, ops=["PUT"], match=".metadata.json"
            ):
                crash_trial(catalog, tmp_path, "db.in_put", point, nth, None, settle=1.0)
        else:
            crash_trial(catalog, tmp_path, f"db.{point.replace('-', '_')}", point, nth, None)
    rnd = random.Random(5)
    for trial in range(examples(1, 12)):
        crash_trial(catalog, tmp_path, f"db.timer{trial}", "timer", 0, rnd.uniform(0.0, 0.3))


@pytest.mark.property
@pytest.mark.parametrize("kind", _kinds())
def test_kill_many_times(
    kind: str, catalog_factory: Callable[[str], Catalog], tmp_path: Path
) -> None:
    """Every point at every commit of the stream, and many random moments (``make
    test-long`` runs more)."""
    catalog = catalog_factory(kind)
    rnd = random.Random(11)
    for trial in range(examples(2, 24)):
        point = rnd.choice([*_points(kind), "timer"])
        if point == "timer":
            crash_trial(catalog, tmp_path, f"db.t{trial}", point, 0, rnd.uniform(0.0, 0.25))
        else:
            crash_trial(catalog, tmp_path, f"db.t{trial}", point, rnd.randint(1, APPENDS), None)
