"""The commit queue that gives writers of a contended table bounded waiting
(neve.catalog.commit_queue), on the catalogs that have one (SQLite, PostgreSQL, the
filesystem catalog, and a REST catalog on ``neve serve``, whose SQL queue it reaches
through the server's commit-queue endpoints): a swap is refused while an older writer
is queued, the queued writer's own swap goes through, a commit that lost waits for its
turn before it retries, and a ticket whose writer is gone stops counting (on the
catalogs in this process: the session's server keeps the real ten-second TTL)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import neve.catalog.commit_queue as commit_queue
from neve.catalog import Catalog, SqlCatalog
from neve.errors import CommitFailedError
from neve.spec.updates import SetProperties

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
KINDS = ["sqlite", "filesystem", pytest.param("postgres", marks=pytest.mark.postgres)]
#: The same queue reached through neve serve (its SQL catalog's, see neve.server.queue).
WITH_REST = [*KINDS, "rest"]


def rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "v": [f"r{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture(params=WITH_REST)
def catalog(request: pytest.FixtureRequest, catalog_factory: Callable[[str], Catalog]) -> Catalog:
    cat = catalog_factory(request.param)
    cat.create_namespace("db")
    assert cat.commit_queue_supported
    return cat


def test_a_swap_waits_for_an_older_queued_writer(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows([1]))
    ident = ("db", "t")
    older = catalog.join_commit_queue(ident, time.time() - 1)
    before = catalog.load_table(ident).metadata_location
    with pytest.raises(CommitFailedError, match="waited longer"):
        catalog.commit(ident, [], [SetProperties({"late": "1"})])
    assert catalog.load_table(ident).metadata_location == before  # nothing changed
    assert catalog.commit_turn(ident, older)
    catalog.commit(ident, [], [SetProperties({"queued": "1"})], turn=older)
    catalog.leave_commit_queue(ident, older)
    catalog.commit(ident, [], [SetProperties({"late": "1"})])
    props = catalog.load_table(ident).properties
    assert props["queued"] == "1" and props["late"] == "1"


def test_tickets_are_served_by_first_attempt(catalog: Catalog) -> None:
    catalog.create_table("db.t", SCHEMA)
    ident = ("db", "t")
    now = time.time()
    second = catalog.join_commit_queue(ident, now - 1)
    first = catalog.join_commit_queue(ident, now - 2)
    assert catalog.commit_turn(ident, first) and not catalog.commit_turn(ident, second)
    with pytest.raises(CommitFailedError, match="waited longer"):
        catalog.commit(ident, [], [SetProperties({"x": "1"})], turn=second)
    catalog.leave_commit_queue(ident, first)
    assert catalog.commit_turn(ident, second)
    catalog.commit(ident, [], [SetProperties({"x": "1"})], turn=second)
    catalog.leave_commit_queue(ident, second)


def test_a_commit_that_lost_waits_for_its_turn(catalog: Catalog) -> None:
    """A writer loses its swap to a concurrent commit, joins the queue behind an older
    waiter, and commits only once that waiter has gone; it then leaves the queue."""
    t = catalog.create_table(
        "db.t", SCHEMA, properties={"write.delete.mode": "merge-on-read"}, format_version=3
    )
    t.append(rows(list(range(10))))
    ident = ("db", "t")
    stale = catalog.load_table(ident)
    catalog.load_table(ident).delete("id = 1")  # the concurrent winner
    older = catalog.join_commit_queue(ident, time.time() - 5)
    done = threading.Event()
    errors: list[BaseException] = []

    def late_delete() -> None:
        try:
            stale.delete("id = 2")  # loses the swap, queues, waits for its turn
        except BaseException as exc:
            errors.append(exc)
        done.set()

    worker = threading.Thread(target=late_delete)
    worker.start()
    time.sleep(1.0)
    assert not done.is_set(), "committed before the older queued writer"
    assert sorted(catalog.load_table(ident).scan().to_arrow().column("id").to_pylist()) == [
        0,
        *range(2, 10),
    ]
    catalog.leave_commit_queue(ident, older)
    worker.join(timeout=60)
    assert done.is_set() and not errors, errors
    ids = catalog.load_table(ident).scan().to_arrow().column("id").to_pylist()
    assert sorted(ids) == [0, *range(3, 10)]
    # the late writer left the queue: a fresh commit goes straight through
    catalog.commit(ident, [], [SetProperties({"after": "1"})])


@pytest.mark.parametrize("kind", KINDS)
def test_a_gone_writers_ticket_stops_counting(
    kind: str, catalog_factory: Callable[[str], Catalog], monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = catalog_factory(kind)
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA)
    ident = ("db", "t")
    monkeypatch.setattr(commit_queue, "TTL_SECONDS", 0.3)
    catalog.join_commit_queue(ident, time.time() - 1)  # its writer never comes back
    with pytest.raises(CommitFailedError, match="waited longer"):
        catalog.commit(ident, [], [SetProperties({"x": "1"})])
    time.sleep(0.5)
    catalog.commit(ident, [], [SetProperties({"x": "1"})])
    assert catalog.load_table(ident).properties["x"] == "1"


def test_a_waiting_writer_polls_without_the_write_lock(tmp_path: Path) -> None:
    """A queued writer asks for its turn often; on SQLite that must be a read, or the
    pollers take the database's one write lock from the swap they are waiting for. With
    another connection holding the write lock, a poll still answers at once (within
    the 0.5 s busy timeout, which a write would wait out and then fail)."""
    uri = f"sqlite:///{tmp_path}/c.db"
    cat = SqlCatalog("neve", uri, str(tmp_path / "wh"), {"sqlite.busy-timeout-ms": "500"})
    cat.create_namespace("db")
    cat.create_table("db.t", SCHEMA)
    ident = ("db", "t")
    first = cat.join_commit_queue(ident, time.time() - 2)
    second = cat.join_commit_queue(ident, time.time() - 1)
    holder = sqlite3.connect(tmp_path / "c.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer's swap, in progress
    try:
        assert cat.commit_turn(ident, first) and not cat.commit_turn(ident, second)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_polling_writer_stays_live(
    kind: str, catalog_factory: Callable[[str], Catalog], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polls renew the poller's heartbeat once it is a quarter of the TTL old: a writer
    that keeps polling stays first, one that stopped polling (its writer died) expires."""
    cat = catalog_factory(kind)
    cat.create_namespace("db")
    cat.create_table("db.t", SCHEMA)
    ident = ("db", "t")
    monkeypatch.setattr(commit_queue, "TTL_SECONDS", 2.0)
    first = cat.join_commit_queue(ident, time.time() - 2)
    cat.join_commit_queue(ident, time.time() - 1)  # its writer stops polling
    time.sleep(0.7)
    assert cat.commit_turn(ident, first)  # renews first's heartbeat
    time.sleep(1.6)  # gone's heartbeat is now past the TTL, first's is not
    third = cat.join_commit_queue(ident, time.time())
    assert not cat.commit_turn(ident, third)  # first is live and ahead of it


def test_a_swap_made_in_turn_ends_the_turn(catalog: Catalog) -> None:
    """The queued writer's swap drops its ticket (in the swap's own transaction on the
    SQL catalog), so the next writer's turn starts when the swap lands, not when the
    first writer gets round to leaving."""
    catalog.create_table("db.t", SCHEMA)
    ident = ("db", "t")
    now = time.time()
    first = catalog.join_commit_queue(ident, now - 2)
    second = catalog.join_commit_queue(ident, now - 1)
    assert not catalog.commit_turn(ident, second)
    catalog.commit(ident, [], [SetProperties({"x": "1"})], turn=first)
    assert catalog.commit_turn(ident, second)
    catalog.commit(ident, [], [SetProperties({"y": "1"})], turn=second)
    catalog.leave_commit_queue(ident, first)  # leaving again changes nothing
    catalog.commit(ident, [], [SetProperties({"z": "1"})])
    assert {"x", "y", "z"} <= set(catalog.load_table(ident).properties)
