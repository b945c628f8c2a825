"""Two ``neve serve`` processes on one PostgreSQL database (the production set-up):
each sees what the other committed, appends through both at once all land, and an
Idempotency-Key used at one is honoured at the other."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pyarrow as pa
import pytest

import neve
from restserver import NeveServer

pytestmark = [pytest.mark.postgres, pytest.mark.rest]

SCHEMA = pa.schema([pa.field("w", pa.int32()), pa.field("i", pa.int32())])


def test_two_servers_on_one_postgres_database(tmp_path: Path, postgres_uri: str) -> None:
    config = {
        "anonymous": True,
        "catalog": {"name": f"rest_{uuid.uuid4().hex[:8]}"},
        "token": {"signing-key": "k" * 40},
    }
    with (
        NeveServer.start(tmp_path / "a", uri=postgres_uri, config=config) as a,
        NeveServer.start(tmp_path / "b", uri=postgres_uri, config=config) as b,
    ):
        # both serve the first server's warehouse folder for new tables
        ca = neve.connect(a.url)
        cb = neve.connect(b.url)
        ca.create_namespace("db")
        ca.create_table("db.t", SCHEMA)
        assert cb.list_tables("db") == [("db", "t")]

        def append(args: tuple[neve.Catalog, int]) -> int:
            cat, w = args
            for i in range(5):
                cat.load_table("db.t").append(pa.table({"w": [w], "i": [i]}, schema=SCHEMA))
            return w

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(append, [(ca, 0), (cb, 1), (ca, 2), (cb, 3)]))
        rows = cb.load_table("db.t").scan().to_arrow()
        got = sorted(zip(rows["w"].to_pylist(), rows["i"].to_pylist(), strict=True))
        assert got == [(w, i) for w in range(4) for i in range(5)]
        # an Idempotency-Key claimed at one server is replayed by the other
        key = str(uuid.uuid4())
        first = httpx.post(
            f"{a.url}/v1/namespaces", json={"namespace": ["once"]}, headers={"Idempotency-Key": key}
        )
        again = httpx.post(
            f"{b.url}/v1/namespaces", json={"namespace": ["once"]}, headers={"Idempotency-Key": key}
        )
        assert first.status_code == again.status_code == 200
        assert again.json() == first.json()
        fresh = httpx.post(f"{b.url}/v1/namespaces", json={"namespace": ["once"]})
        assert fresh.status_code == 409  # without the key it is a second create
