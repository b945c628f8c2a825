"""What the server keeps in the catalog's own database besides tables: idempotency
keys and metrics reports.

``Idempotency-Key``: a mutation retried with the same key is applied once. Keys live in the catalog's own database (table ``neve_rest_idempotency``), so every
server process on that database sees them. A request first claims its key with an
insert; the final response (2xx, and 4xx that would be the same again) is stored and
replayed to every retry within the key's lifetime. A 5xx is not kept, so a retry runs
again (the spec's rule). A key claimed by a request that has not finished (another
process still working, or one that died mid-way) is answered 503 "in progress", never
run twice.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    Integer,
    MetaData,
    String,
    Text,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy import Table as SqlTable
from sqlalchemy.exc import IntegrityError

__all__ = ["IdempotencyStore", "MetricsStore", "Stored"]

_schema = MetaData()
_KEYS = SqlTable(
    "neve_rest_idempotency",
    _schema,
    Column("idempotency_key", String(64), primary_key=True),
    Column("route", String(1000), nullable=False),
    Column("state", String(10), nullable=False),
    Column("status", Integer, nullable=True),
    Column("body", Text, nullable=True),
    Column("created_ms", BigInteger, nullable=False),
)
_K = _KEYS.c
_METRICS = SqlTable(
    "neve_rest_metrics",
    _schema,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("warehouse", String(255), nullable=False),
    Column("table_name", String(1000), nullable=False),
    Column("report_type", String(64), nullable=False),
    Column("report", Text, nullable=False),
    Column("received_ms", BigInteger, nullable=False),
)
_M = _METRICS.c


@dataclass(frozen=True)
class Stored:
    """A claimed key: ``status`` None while its request has not finished."""

    route: str
    status: int | None
    body: Any


#: How often (at most) a server process removes expired keys: a removal reads the
#: whole table, and every mutation claims a key.
_EXPIRE_EVERY_MS = 60_000


class IdempotencyStore:
    def __init__(self, engine: Engine, lifetime_s: int) -> None:
        self.engine = engine
        self.lifetime_ms = lifetime_s * 1000
        self._expired_ms = 0  # when this process last removed expired keys
        _schema.create_all(engine, checkfirst=True)

    def claim(self, key: str, route: str) -> Stored | None:
        """Claim ``key`` for a request; None when it is new (run the request), else
        what the earlier request with this key left. Keys past twice their lifetime
        are removed in the same transaction, once a minute."""
        now = int(time.time() * 1000)
        expire = now - self._expired_ms >= _EXPIRE_EVERY_MS
        try:
            with self.engine.begin() as conn:
                if expire:
                    conn.execute(delete(_KEYS).where(_K.created_ms < now - 2 * self.lifetime_ms))
                conn.execute(
                    insert(_KEYS).values(
                        idempotency_key=key, route=route, state="pending", created_ms=now
                    )
                )
            if expire:
                self._expired_ms = now
            return None
        except IntegrityError:
            pass
        with self.engine.connect() as conn:
            row = conn.execute(
                select(_K.route, _K.status, _K.body).where(_K.idempotency_key == key)
            ).first()
        if row is None:  # finished with a 5xx and released just now: claim again
            return self.claim(key, route)
        body = json.loads(row.body) if row.body else None
        return Stored(row.route, row.status, body)

    def finish(self, key: str, status: int, body: Any) -> None:
        """Keep the final response of the request that claimed ``key``."""
        with self.engine.begin() as conn:
            conn.execute(
                update(_KEYS)
                .where(_K.idempotency_key == key)
                .values(
                    state="done", status=status, body=json.dumps(body) if body is not None else None
                )
            )

    def release(self, key: str) -> None:
        """Forget ``key`` (its request failed with a 5xx: a retry runs again)."""
        with self.engine.begin() as conn:
            conn.execute(delete(_KEYS).where(_K.idempotency_key == key, _K.state == "pending"))


class MetricsStore:
    """Metrics reports clients send after scans and commits, kept as they came."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        _schema.create_all(engine, checkfirst=True)

    def keep(self, warehouse: str, table: tuple[str, ...], report: dict[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                insert(_METRICS).values(
                    warehouse=warehouse,
                    table_name=".".join(table),
                    report_type=str(report.get("report-type")),
                    report=json.dumps(report),
                    received_ms=int(time.time() * 1000),
                )
            )

    def reports(self, warehouse: str, table: tuple[str, ...]) -> list[dict[str, Any]]:
        """The reports kept for a table, oldest first."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(_M.report)
                .where(_M.warehouse == warehouse, _M.table_name == ".".join(table))
                .order_by(_M.id)
            ).scalars()
            return [json.loads(r) for r in rows]
