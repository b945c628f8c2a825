"""The commit queue over HTTP: a neve extension that lets REST clients wait their turn
as direct clients of the SQL catalog do (:mod:`neve.catalog.commit_queue`).

Without it a REST client whose commit lost the swap can only back off and retry, and
under steady contention it can lose again and again while others commit. With it, a
client that lost joins the table's queue on the server, polls for its turn, and sends
its next commit with its ticket in the ``X-Neve-Commit-Turn`` header; every swap of
the table is refused while an older live ticket than the committer's is queued,
whoever sends it (pyiceberg and Iceberg-Java get the 409 they already retry on).

- ``PUT .../tables/{table}/commit-queue/{ticket}`` with ``{"waited-ms": n}``, how long
  ago the client's change first tried to commit: queue under the ticket the client chose
  (32 hex digits), or nothing when it is queued already, so a join sent again after a
  lost answer is harmless. The server dates the ticket by its own clock, so clients'
  clocks need not agree.
- ``POST .../tables/{table}/commit-queue/{ticket}?wait-ms=n``: ``{"turn": true}`` when
  the ticket is the oldest live one (the poll also says the client is alive). With
  ``wait-ms`` the server holds the poll until the turn comes or the time is up: a
  commit or a leave through this server wakes the polls waiting in it at once, and they
  look again every :data:`RECHECK_SECONDS` for changes made elsewhere (direct clients,
  other server processes, tickets that expired). Polls held by the server instead of
  repeated by the clients leave its threads free for the commits they wait for.
- ``DELETE .../tables/{table}/commit-queue/{ticket}``: leave (a swap made with the
  ticket drops it already; a ticket left behind expires after ``TTL_SECONDS``).

``config`` advertises the three endpoints, so neve's client uses them only where a
server offers them. Each needs the write grant on the table.
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from neve.catalog.base import Catalog
from neve.errors import NoSuchTableError
from neve.server.config import WRITE
from neve.server.http import Call, Reply, RestError

__all__ = ["HANDLERS", "RECHECK_SECONDS", "TURN_HEADER", "commit_turn", "queue_moved"]

#: The header of a commit sent in its turn: the committer's ticket.
TURN_HEADER = "x-neve-commit-turn"

#: Tickets are ``uuid4().hex`` (``commit_queue.new_ticket``).
_TICKET = re.compile(r"[0-9a-f]{32}")

#: The longest wait a client may claim: a day (a change older than that is not
#: waiting for a turn, and a huge claim would put its ticket ahead of everyone's).
_MAX_WAITED_MS = 86_400_000


#: How often a held poll looks at the queue again without being woken.
RECHECK_SECONDS = 0.02

#: The longest a client may ask the server to hold a poll.
_MAX_WAIT_MS = 5_000


class _Signal:
    """Wakes the polls held in this server when a queue of its catalog may have moved.
    The generation tells a waiter whether anything happened since it last looked, so a
    wake-up between its look and its wait is not lost."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.generation = 0

    def notify(self) -> None:
        with self._cond:
            self.generation += 1
            self._cond.notify_all()

    def wait_past(self, generation: int, timeout: float) -> None:
        with self._cond:
            if self.generation == generation:
                self._cond.wait(timeout)


_SIGNALS: weakref.WeakKeyDictionary[Catalog, _Signal] = weakref.WeakKeyDictionary()
_SIGNALS_LOCK = threading.Lock()


def _signal(catalog: Catalog) -> _Signal:
    with _SIGNALS_LOCK:
        found = _SIGNALS.get(catalog)
        if found is None:
            found = _SIGNALS[catalog] = _Signal()
        return found


def queue_moved(call: Call) -> None:
    """Wake the polls held for the catalog of ``call``: a commit or a leave went
    through (a swap made in turn drops its ticket, so the next writer's turn starts)."""
    _signal(call.catalog).notify()


def _held(look: Callable[[], bool], signal: _Signal, seconds: float) -> bool:
    """``look()`` until it is true or ``seconds`` have passed, waiting between looks
    for a wake-up or :data:`RECHECK_SECONDS`."""
    deadline = time.monotonic() + seconds
    while True:
        generation = signal.generation
        if look():
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        signal.wait_past(generation, min(left, RECHECK_SECONDS))


def _wait_seconds(call: Call) -> float:
    raw = call.query.get("wait-ms", "0")
    if not raw.isdigit() or int(raw) > _MAX_WAIT_MS:
        raise RestError(
            400, "BadRequestException", f"wait-ms must be a whole number from 0 to {_MAX_WAIT_MS}"
        )
    return int(raw) / 1000


def _ticket(text: str) -> str:
    if not _TICKET.fullmatch(text):
        raise RestError(400, "BadRequestException", f"malformed commit-queue ticket {text!r}")
    return text


def commit_turn(call: Call) -> str | None:
    """The ticket a commit request is sent with (``X-Neve-Commit-Turn``), if any."""
    found = call.headers.get(TURN_HEADER)
    return None if found is None else _ticket(found)


def _waited_seconds(data: Any) -> float:
    waited = data.get("waited-ms") if isinstance(data, dict) else None
    if isinstance(waited, bool) or not isinstance(waited, int):
        raise RestError(400, "BadRequestException", "waited-ms must be a whole number")
    if not 0 <= waited <= _MAX_WAITED_MS:
        raise RestError(
            400, "BadRequestException", f"waited-ms must be between 0 and {_MAX_WAITED_MS}"
        )
    return waited / 1000


def join_queue(call: Call) -> Reply:
    ident = call.ident()
    call.authorize(WRITE, "table", ident)
    ticket = _ticket(call.params["ticket"])
    waited = _waited_seconds(call.json())
    if not call.catalog.table_exists(ident):
        raise NoSuchTableError(f"table {'.'.join(ident)} does not exist")
    call.catalog.join_commit_queue(ident, time.time() - waited, ticket)
    return Reply(204)


def poll_turn(call: Call) -> Reply:
    ident = call.ident()
    call.authorize(WRITE, "table", ident)
    ticket = _ticket(call.params["ticket"])
    seconds = _wait_seconds(call)
    cat = call.catalog
    turn = _held(lambda: cat.commit_turn(ident, ticket), _signal(cat), seconds)
    return Reply(200, {"turn": turn})


def leave_queue(call: Call) -> Reply:
    ident = call.ident()
    call.authorize(WRITE, "table", ident)
    call.catalog.leave_commit_queue(ident, _ticket(call.params["ticket"]))
    queue_moved(call)
    return Reply(204)


_QUEUE = "namespaces/{namespace}/tables/{table}/commit-queue"

# each is idempotent (the client names the ticket): no idempotency keys needed
HANDLERS: list[tuple[str, str, Any, bool]] = [
    ("PUT", f"{_QUEUE}/{{ticket}}", join_queue, False),
    ("POST", f"{_QUEUE}/{{ticket}}", poll_turn, False),
    ("DELETE", f"{_QUEUE}/{{ticket}}", leave_queue, False),
]
