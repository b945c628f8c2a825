"""Bounded waiting for the writers of a contended table: a commit queue in the catalog.

Rebasing commits retry until they land, so under contention nothing makes a slow
writer lose less often: a writer whose rebase takes as long as another's next statement
can lose the compare-and-swap again and again while others commit. The queue orders
the writers that lost by when their change first tried to commit:

- a writer that loses a swap joins the table's queue with a ticket (the time its change
  first tried to commit, and a heartbeat);
- before each retry it waits until its ticket is the oldest live one, refreshing its
  heartbeat, then reloads, rebases and commits;
- every swap of that table is refused while an older live ticket than the committer's
  own is queued (the SQL catalog checks this in the swap's own transaction; the
  filesystem catalog just before its put), so a writer arriving meanwhile queues behind;
- a ticket is dropped by the swap made with it (so the next writer's turn starts when
  that swap lands) and left when its change fails; one whose writer died is ignored
  once its heartbeat is older than :data:`TTL_SECONDS`.

An uncontended commit never touches the queue: on the SQL catalog the swap reads the
(empty) queue in the same transaction; on the filesystem catalog the queue is listed
only on local folders or after contention was seen. Fairness is not correctness: every
commit is still validated and swapped as before, the queue only decides who goes next.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from neve.errors import CommitFailedError

__all__ = ["TTL_SECONDS", "QueueEntry", "head", "new_ticket", "queued_first"]

#: A ticket whose heartbeat is older than this belongs to a writer that is gone.
TTL_SECONDS = 10.0


@dataclass(frozen=True, order=True)
class QueueEntry:
    """One queued writer: when its change first tried to commit, its ticket, and when
    it last said it is alive (seconds since the epoch)."""

    since: float
    ticket: str
    heartbeat: float


def new_ticket() -> str:
    return uuid.uuid4().hex


def head(entries: Iterable[QueueEntry], now: float) -> QueueEntry | None:
    """The oldest live ticket (None: nobody is queued)."""
    live = [e for e in entries if now - e.heartbeat <= TTL_SECONDS]
    return min(live) if live else None


def queued_first(name: str) -> CommitFailedError:
    """The refusal of a swap while an older queued writer has not committed."""
    return CommitFailedError(
        f"a writer that has waited longer is committing to {name} first; queued behind it "
        "(commits retry this on their own)"
    )
