"""DuckDB 1.5 with its iceberg extension reads through ``neve serve``: ``ATTACH`` with a
client id and secret (the token endpoint), then reads of a partitioned v2 table with
position deletes and a v3 table with deletion vectors, equal to neve's own scans; the
server's grants and credentials apply to DuckDB as to any client."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest

import neve
from duckdbengine import DuckDBError, duckdb_query
from restserver import NeveServer

SCHEMA = pa.schema(
    [pa.field("id", pa.int64()), pa.field("s", pa.string()), pa.field("x", pa.float64())]
)


def _attach(server: NeveServer, client: str, secret: str) -> list[str]:
    return [
        f"ATTACH 'neve' AS c (TYPE ICEBERG, ENDPOINT '{server.url}', "
        f"CLIENT_ID '{client}', CLIENT_SECRET '{secret}')"
    ]


def test_duckdb_attaches_with_client_credentials_and_reads(secured: NeveServer) -> None:
    nv = neve.connect(secured.url, credential="admin:admin-secret")
    ns = f"dk{uuid.uuid4().hex[:6]}"
    nv.create_namespace(ns)
    rows = pa.table(
        {
            "id": list(range(40)),
            "s": [None if i % 9 == 0 else f"é{i} 🦆" for i in range(40)],
            "x": [float("nan") if i % 7 == 0 else i / 3 for i in range(40)],
        },
        schema=SCHEMA,
    )
    for version in (2, 3):
        t = nv.create_table(
            f"{ns}.v{version}", SCHEMA, partition_by=["bucket(4, id)"], format_version=version
        )
        t.append(rows)
        t.delete("id < 5 or id = 33")  # position deletes (v2) or deletion vectors (v3)
    setup = _attach(secured, "writer", "writer-secret")
    for version in (2, 3):
        expected = sorted(
            nv.load_table(f"{ns}.v{version}").scan().to_arrow().to_pylist(), key=lambda r: r["id"]
        )
        got = duckdb_query(f"SELECT id, s, x FROM c.{ns}.v{version} ORDER BY id", setup=setup)
        assert [r["id"] for r in got] == [r["id"] for r in expected]
        assert [r["s"] for r in got] == [r["s"] for r in expected]
        assert ["nan" if r["x"] != r["x"] else r["x"] for r in expected] == [r["x"] for r in got]
    counts = duckdb_query(f"SELECT count(*) AS n FROM c.{ns}.v3 WHERE id >= 20", setup=setup)
    assert counts == [{"n": 19}]


def test_duckdb_is_held_to_the_grants(secured: NeveServer) -> None:
    nv = neve.connect(secured.url, credential="admin:admin-secret")
    nv.create_namespace_if_not_exists("db")
    if not nv.table_exists("db.secret"):
        nv.create_table("db.secret", SCHEMA)
    with pytest.raises(DuckDBError, match=r"may not read table db\.secret"):
        duckdb_query("SELECT * FROM c.db.secret", setup=_attach(secured, "reader", "reader-secret"))
    with pytest.raises(DuckDBError, match=r"(?i)invalid_client|401|unauthori"):
        duckdb_query("SELECT 1", setup=_attach(secured, "writer", "wrong-secret"))
