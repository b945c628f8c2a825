"""The commit queue over HTTP (``neve.server.queue``): ``config`` advertises it, neve's
REST client uses it, a join is idempotent, a held poll is woken by the commit or the
leave it waits for, bad input is a 4xx that queues nothing, a commit refused for a
queued writer leaves no metadata file behind, and a REST client races until it has
lost three swaps before it queues. (The ordering rules themselves run against the REST
catalog in tests/catalog/test_commit_queue.py.)"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest

from neve.catalog import Catalog, RestCatalog
from neve.errors import CommitFailedError
from neve.spec.updates import SetProperties
from restserver import NeveServer

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])
QUEUE_ENDPOINTS = {
    f"{verb} /v1/{{prefix}}/namespaces/{{namespace}}/tables/{{table}}/commit-queue/{{ticket}}"
    for verb in ("PUT", "POST", "DELETE")
}


@pytest.fixture
def rest(catalog_factory: Callable[[str], Catalog]) -> RestCatalog:
    cat = catalog_factory("rest")
    assert isinstance(cat, RestCatalog)
    cat.create_namespace("db")
    cat.create_table("db.t", SCHEMA)
    return cat


def _queue_url(server: NeveServer, cat: RestCatalog, ticket: str, table: str = "t") -> str:
    return f"{server.url}/v1/{cat.prefix}/namespaces/db/tables/{table}/commit-queue/{ticket}"


def _ticket() -> str:
    return uuid.uuid4().hex


def _poll_until_turn(cat: RestCatalog, ticket: str, answers: list[bool]) -> None:
    """Poll as a queued writer does (each poll held by the server) until the turn comes."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if cat.commit_turn(("db", "t"), ticket):
            answers.append(True)
            return
    answers.append(False)


def _metadata_files(cat: RestCatalog) -> set[str]:
    location = cat.load_table("db.t").location
    return {p.name for p in Path(location, "metadata").glob("*.metadata.json")}


def test_config_advertises_the_queue_and_the_client_uses_it(
    rest_server: NeveServer, rest: RestCatalog
) -> None:
    body = httpx.get(f"{rest_server.url}/v1/config").json()
    assert set(body["endpoints"]) >= QUEUE_ENDPOINTS
    assert rest.commit_queue_supported
    assert rest.commit_queue_after_losses == 3
    # a server that does not offer all three: the client backs off instead
    partial = RestCatalog("neve", rest_server.url, {"warehouse": rest.prefix or ""})
    partial.endpoints -= {sorted(QUEUE_ENDPOINTS)[0]}
    assert not partial.commit_queue_supported


def test_a_join_sent_twice_queues_once(rest_server: NeveServer, rest: RestCatalog) -> None:
    ident = ("db", "t")
    ticket = _ticket()
    for _ in range(2):  # the second is a retry after a lost answer
        resp = httpx.put(_queue_url(rest_server, rest, ticket), json={"waited-ms": 1000})
        assert resp.status_code == 204, resp.text
    with pytest.raises(CommitFailedError, match="waited longer"):
        rest.commit(ident, [], [SetProperties({"early": "1"})])
    rest.leave_commit_queue(ident, ticket)
    # one leave empties the queue: a second entry would still refuse this commit
    rest.commit(ident, [], [SetProperties({"after": "1"})])
    assert rest.load_table(ident).properties["after"] == "1"


def test_a_held_poll_wakes_when_the_writer_ahead_leaves(rest: RestCatalog) -> None:
    ident = ("db", "t")
    first = rest.join_commit_queue(ident, time.time() - 2)
    second = rest.join_commit_queue(ident, time.time() - 1)
    answers: list[bool] = []
    poller = threading.Thread(target=_poll_until_turn, args=(rest, second, answers))
    poller.start()
    time.sleep(0.2)  # the poll is held on the server, first still queued
    assert not answers
    rest.leave_commit_queue(ident, first)
    poller.join(timeout=60)
    assert answers == [True]
    rest.commit(ident, [], [SetProperties({"x": "1"})], turn=second)


def test_a_held_poll_wakes_when_the_writer_ahead_commits(rest: RestCatalog) -> None:
    ident = ("db", "t")
    first = rest.join_commit_queue(ident, time.time() - 2)
    second = rest.join_commit_queue(ident, time.time() - 1)
    assert not rest.commit_turn(ident, second)  # held, then answered: not yet
    answers: list[bool] = []
    poller = threading.Thread(target=_poll_until_turn, args=(rest, second, answers))
    poller.start()
    time.sleep(0.2)
    assert not answers
    rest.commit(ident, [], [SetProperties({"first": "1"})], turn=first)  # drops its ticket
    poller.join(timeout=60)
    assert answers == [True]


@pytest.mark.parametrize(
    ("method", "query", "body"),
    [
        ("PUT", "", {"waited-ms": -1}),
        ("PUT", "", {"waited-ms": 1.5}),
        ("PUT", "", {"waited-ms": True}),
        ("PUT", "", {"waited-ms": 86_400_001}),
        ("PUT", "", {}),
        ("POST", "?wait-ms=-5", None),
        ("POST", "?wait-ms=5001", None),
        ("POST", "?wait-ms=soon", None),
    ],
)
def test_bad_queue_requests_are_400_and_queue_nothing(
    rest_server: NeveServer, rest: RestCatalog, method: str, query: str, body: Any
) -> None:
    resp = httpx.request(
        method, _queue_url(rest_server, rest, _ticket()) + query, json=body, timeout=30
    )
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["type"] == "BadRequestException"
    rest.commit(("db", "t"), [], [SetProperties({"through": "1"})])  # nobody is queued


def test_malformed_tickets_and_missing_tables(rest_server: NeveServer, rest: RestCatalog) -> None:
    for ticket in ("short", "Z" * 32, "0" * 33):
        for method in ("PUT", "POST", "DELETE"):
            resp = httpx.request(
                method, _queue_url(rest_server, rest, ticket), json={"waited-ms": 0}
            )
            assert resp.status_code == 400, (method, ticket, resp.text)
    missing = httpx.put(
        _queue_url(rest_server, rest, _ticket(), table="nope"), json={"waited-ms": 0}
    )
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "NoSuchTableException"
    commit = httpx.post(
        f"{rest_server.url}/v1/{rest.prefix}/namespaces/db/tables/t",
        json={"requirements": [], "updates": []},
        headers={"X-Neve-Commit-Turn": "not-a-ticket"},
    )
    assert commit.status_code == 400
    rest.commit(("db", "t"), [], [SetProperties({"through": "1"})])


def test_a_commit_refused_for_a_queued_writer_writes_no_metadata(rest: RestCatalog) -> None:
    ident = ("db", "t")
    ticket = rest.join_commit_queue(ident, time.time() - 1)
    before = _metadata_files(rest)
    location = rest.load_table(ident).metadata_location
    for _ in range(3):
        with pytest.raises(CommitFailedError, match="waited longer"):
            rest.commit(ident, [], [SetProperties({"late": "1"})])
    assert _metadata_files(rest) == before
    assert rest.load_table(ident).metadata_location == location
    rest.leave_commit_queue(ident, ticket)


def test_a_rest_client_queues_after_three_lost_swaps(
    rest: RestCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append that keeps losing (an older writer is queued, so every swap it tries is
    refused) backs off after its first two losses and joins the queue after the third;
    once the writer ahead has gone, it commits in its turn and leaves nothing queued."""
    ident = ("db", "t")
    ahead = rest.join_commit_queue(ident, time.time() - 60)
    sent: list[str | None] = []
    joined_after: list[int] = []
    commit, join = rest.commit, rest.join_commit_queue

    def counting_commit(*args: Any, **kwargs: Any) -> Any:
        sent.append(kwargs.get("turn"))
        return commit(*args, **kwargs)

    def counting_join(*args: Any, **kwargs: Any) -> str:
        joined_after.append(len(sent))
        return join(*args, **kwargs)

    monkeypatch.setattr(rest, "commit", counting_commit)
    monkeypatch.setattr(rest, "join_commit_queue", counting_join)
    table = rest.load_table(ident)
    done = threading.Event()
    errors: list[BaseException] = []

    def append() -> None:
        try:
            table.append(pa.table({"id": [1, 2]}, schema=SCHEMA))
        except BaseException as exc:
            errors.append(exc)
        done.set()

    writer = threading.Thread(target=append)
    writer.start()
    deadline = time.monotonic() + 30
    while not joined_after and time.monotonic() < deadline:
        time.sleep(0.02)
    assert joined_after == [3], (joined_after, sent)
    assert sent == [None, None, None] and not done.is_set()
    rest.leave_commit_queue(ident, ahead)
    writer.join(timeout=60)
    assert done.is_set() and not errors, errors
    assert len(sent) == 4 and sent[3] is not None  # the fourth try, in its turn
    assert rest.load_table(ident).scan().to_arrow().num_rows == 2
    rest.commit(ident, [], [SetProperties({"after": "1"})])  # its ticket is gone
