"""Load through one ``neve serve`` (SQLite behind it): 16 client processes alternate
appends and upserts on two tables for a while (6 s in ``make test``, the full 60 s in
``make test-long``). Afterwards nothing acknowledged is lost, nothing is duplicated,
every acknowledged commit is in the history exactly once and every refused one not at
all, and each key holds the value of its last acknowledged upsert."""

from __future__ import annotations

import multiprocessing
import time
import uuid
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from budget import LONG
from neve.catalog.rest import RestCatalog
from restserver import NeveServer
from server.load_workers import EVENTS, KEYED, OP_ID, run, warm_up

CLIENTS = 16
SECONDS = 60.0 if LONG else 6.0


@pytest.mark.property
def test_sixteen_clients_commit_through_one_server(tmp_path: Path) -> None:
    with NeveServer.start(tmp_path / "server", anonymous=True, warehouse_root=True) as server:
        warehouse = f"load{uuid.uuid4().hex[:6]}"
        cat = RestCatalog("neve", server.url, {"warehouse": warehouse})
        cat.create_namespace("load")
        fast = {
            "commit.retry.num-retries": "20",
            "commit.retry.min-wait-ms": "5",
            "commit.retry.max-wait-ms": "200",
            "commit.retry.total-timeout-ms": "120000",
        }
        cat.create_table("load.events", EVENTS, properties=fast)
        cat.create_table("load.keyed", KEYED, primary_key=["k"], format_version=3, properties=fast)
        # a fork server with the workers' module loaded: 16 clients start in moments
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["server.load_workers"])
        with ProcessPoolExecutor(CLIENTS, mp_context=ctx) as pool:
            list(pool.map(warm_up, range(CLIENTS)))
            start_at = time.time() + 1.0
            results = list(
                pool.map(
                    run,
                    [server.url] * CLIENTS,
                    [warehouse] * CLIENTS,
                    range(CLIENTS),
                    [start_at] * CLIENTS,
                    [SECONDS] * CLIENTS,
                )
            )
        appended = [op for r in results for op in r["appended"]]
        upserted = [u for r in results for u in r["upserted"]]
        failed = {op for r in results for op in r["failed"]}
        assert appended and upserted, "no commit went through"
        events = cat.load_table("load.events")
        keyed = cat.load_table("load.keyed")
        # rows: every acknowledged append's three rows once, nothing else
        rows = Counter(events.scan().to_arrow().column("op").to_pylist())
        assert rows == Counter({op: 3 for op in appended})
        # history: each acknowledged commit exactly once, no refused one
        history = Counter(s.summary.get(OP_ID) for s in events.snapshots() if s.summary.get(OP_ID))
        assert history == Counter(appended)
        key_history = Counter(
            s.summary.get(OP_ID) for s in keyed.snapshots() if s.summary.get(OP_ID)
        )
        assert key_history == Counter(op for op, _k, _v in upserted)
        assert not (set(history) | set(key_history)) & failed
        # each key holds its last acknowledged upsert (every key is one worker's)
        last: dict[int, int] = {}
        for _op, key, value in upserted:
            last[key] = max(value, last.get(key, value))
        table = keyed.scan().to_arrow()
        got = dict(zip(table.column("k").to_pylist(), table.column("v").to_pylist(), strict=True))
        assert got == last
        cat.dispose()
