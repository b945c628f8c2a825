"""The SQL catalog's commit queue (:mod:`neve.catalog.commit_queue`): the table
``neve_commit_queue(catalog_name, table_namespace, table_name, ticket, since,
heartbeat)`` in the catalog's database, created beside the catalog tables (other
engines ignore it). The swap reads the table's queue in its own transaction."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Protocol

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    Float,
    MetaData,
    String,
    Table,
    bindparam,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.exc import SQLAlchemyError

import neve.catalog.commit_queue as commit_queue
from neve.catalog.base import Identifier
from neve.catalog.commit_queue import QueueEntry, head
from neve.catalog.sql_tables import dotted_name, table_key, table_match

__all__ = ["COMMIT_QUEUE", "SqlCommitQueue"]

_SCHEMA = MetaData()

COMMIT_QUEUE = Table(
    "neve_commit_queue",
    _SCHEMA,
    Column("catalog_name", String(255), primary_key=True, nullable=False),
    Column("table_namespace", String(255), primary_key=True, nullable=False),
    Column("table_name", String(255), primary_key=True, nullable=False),
    Column("ticket", String(64), primary_key=True, nullable=False),
    Column("since", Float(53), nullable=False),
    Column("heartbeat", Float(53), nullable=False),
)
_Q = COMMIT_QUEUE.c

# The queue of one table, its name bound when the statement runs (table_key); read
# by every swap, so built once.
_OF_TABLE = table_match(COMMIT_QUEUE)
_ENTRIES = select(_Q.since, _Q.ticket, _Q.heartbeat).where(_OF_TABLE)
_HAS_TICKET = select(_Q.ticket).where(_OF_TABLE, _Q.ticket == bindparam("ticket"))


class _Host(Protocol):
    name: str

    @property
    def engine(self) -> Engine: ...

    def writing(self, action: str) -> AbstractContextManager[Connection]: ...

    def reading(self, action: str) -> AbstractContextManager[Connection]: ...


class SqlCommitQueue:
    """The queue of one SQL catalog (``host``)."""

    def __init__(self, host: _Host) -> None:
        self.host = host

    def create(self) -> bool:
        """Create the queue table when missing; False when the database refuses (then
        the catalog commits without a queue)."""
        try:
            _SCHEMA.create_all(self.host.engine, checkfirst=True)
        except SQLAlchemyError:
            return False
        return True

    def _entries(self, conn: Connection, ident: Identifier) -> Iterator[QueueEntry]:
        for since, ticket, beat in conn.execute(_ENTRIES, table_key(self.host.name, ident)):
            yield QueueEntry(float(since), str(ticket), float(beat))

    def join(self, ident: Identifier, since: float, ticket: str) -> str:
        row = {
            "catalog_name": self.host.name,
            "table_namespace": dotted_name(ident[:-1]),
            "table_name": ident[-1],
            "ticket": ticket,
            "since": since,
            "heartbeat": time.time(),
        }
        with self.host.writing(f"queueing a commit to {'.'.join(ident)}") as conn:
            key = {**table_key(self.host.name, ident), "ticket": ticket}
            if conn.execute(_HAS_TICKET, key).first() is None:  # not joined already
                conn.execute(insert(COMMIT_QUEUE).values(row))
        return ticket

    def turn(self, ident: Identifier, ticket: str) -> bool:
        """Whether ``ticket`` is the oldest live one. A read: waiters poll often, and a
        write per poll would take the database's write lock from the swap they wait
        for. The heartbeat is written only when it is a quarter of the TTL old."""
        now = time.time()
        with self.host.reading(f"waiting to commit to {'.'.join(ident)}") as conn:
            entries = list(self._entries(conn, ident))
        mine = next((e for e in entries if e.ticket == ticket), None)
        if mine is not None and now - mine.heartbeat > commit_queue.TTL_SECONDS / 4:
            with self.host.writing(f"waiting to commit to {'.'.join(ident)}") as conn:
                conn.execute(
                    update(COMMIT_QUEUE)
                    .where(_OF_TABLE, _Q.ticket == ticket)
                    .values(heartbeat=now),
                    table_key(self.host.name, ident),
                )
            entries = [e if e is not mine else QueueEntry(e.since, ticket, now) for e in entries]
        first = head(entries, now)
        return first is None or first.ticket == ticket

    def leave(self, ident: Identifier, ticket: str) -> None:
        with self.host.writing(f"leaving the commit queue of {'.'.join(ident)}") as conn:
            self.remove(conn, ident, ticket)

    def remove(self, conn: Connection, ident: Identifier, ticket: str) -> None:
        """Inside a transaction: drop ``ticket`` (a swap made with it drops it, so the
        next writer's turn starts when the swap commits)."""
        conn.execute(
            delete(COMMIT_QUEUE).where(_OF_TABLE, _Q.ticket == ticket),
            table_key(self.host.name, ident),
        )

    def ahead(self, ident: Identifier, turn: str | None) -> bool:
        """Outside a swap: whether a swap made now would be refused (a read)."""
        with self.host.reading(f"committing to {'.'.join(ident)}") as conn:
            return self.refuses(conn, ident, turn)

    def refuses(self, conn: Connection, ident: Identifier, turn: str | None) -> bool:
        """Inside a swap's transaction: whether an older live ticket than ``turn`` (the
        committer's own, None when it has none) is queued for ``ident``."""
        first = head(self._entries(conn, ident), time.time())
        return first is not None and first.ticket != turn
