"""The commit queue of a REST catalog: the one of ``neve serve`` (``neve.server.queue``),
reached through its commit-queue endpoints where ``config`` advertises them.

The ordering is the server's SQL catalog's (:mod:`neve.catalog.commit_queue`); this
side joins under a ticket it chooses (so a join sent again after a lost answer is
harmless), asks for its turn with a poll the server holds until the turn comes or
:data:`TURN_WAIT_MS` pass, and leaves. A commit sent in its turn carries the ticket in
:data:`TURN_HEADER`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from neve.catalog.base import Identifier
from neve.catalog.rest_http import RestHttp

__all__ = ["AFTER_LOSSES", "ENDPOINTS", "TURN_HEADER", "TURN_WAIT_MS", "RestCommitQueue"]

_PATH = "/v1/{prefix}/namespaces/{namespace}/tables/{table}/commit-queue/{ticket}"
#: The endpoints a server must offer for the client to queue (join, poll, leave).
ENDPOINTS = frozenset(f"{verb} {_PATH}" for verb in ("PUT", "POST", "DELETE"))

#: The header of a commit sent in its turn: the committer's ticket.
TURN_HEADER = "X-Neve-Commit-Turn"

#: How long the server may hold a poll for the turn.
TURN_WAIT_MS = 500

#: Lost swaps before a change queues (``Catalog.commit_queue_after_losses``): three,
#: where a direct client queues after one. Through a server every step of the queue is
#: a round trip, and writers that take turns commit one after another at the pace of a
#: whole HTTP commit, where racing lets them overlap their work; so a client races
#: until it has lost three times, and the queue bounds the wait of the unlucky ones.
#: Measured with 4 clients appending through ``neve serve`` (benchmarks/bench_rest.py,
#: a busy machine): p99 0.37-0.52 s against 1.3-3.0 s without the queue, at 32-43
#: commits a second against 22-39; queueing after one loss gave p99 0.2-0.5 s but
#: 23-27 commits a second.
AFTER_LOSSES = 3


class RestCommitQueue:
    """The server's queue as one REST catalog reaches it: ``table_path`` makes the path
    of a table's endpoints (identifier, then the segments below the table)."""

    def __init__(self, http: RestHttp, table_path: Callable[..., str]) -> None:
        self.http = http
        self.table_path = table_path

    def path(self, ident: Identifier, ticket: str) -> str:
        return self.table_path(ident, "commit-queue", ticket)

    def join(self, ident: Identifier, since: float, ticket: str) -> str:
        # how long ago, not when: the server dates the ticket by its own clock
        waited_ms = max(0, round((time.time() - since) * 1000))
        self.http.request(
            "PUT",
            self.path(ident, ticket),
            f"queueing a commit to {'.'.join(ident)}",
            json={"waited-ms": waited_ms},
        )
        return ticket

    def turn(self, ident: Identifier, ticket: str) -> bool:
        resp = self.http.request(
            "POST",
            self.path(ident, ticket),
            f"waiting to commit to {'.'.join(ident)}",
            params={"wait-ms": str(TURN_WAIT_MS)},
        )
        return bool(resp.json()["turn"])

    def leave(self, ident: Identifier, ticket: str) -> None:
        self.http.request(
            "DELETE", self.path(ident, ticket), f"leaving the commit queue of {'.'.join(ident)}"
        )
