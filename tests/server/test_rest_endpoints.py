"""The endpoints of ``neve serve`` as the spec describes them, through plain HTTP:
config (endpoints, idempotency, warehouses), pagination, ETag / If-None-Match,
``snapshots=refs``, staged create (pyiceberg's create transaction), register, drop with
purge, metrics reports kept, and static storage credentials by location prefix."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog as PyRest

import neve
from neve.catalog import SqlCatalog
from neve.server.store import MetricsStore
from restserver import NeveServer, auth

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])


def _get(server: NeveServer, path: str, **kw: Any) -> httpx.Response:
    headers = {**auth(server, "admin"), **kw.pop("headers", {})}
    return httpx.get(server.url + path, headers=headers, **kw)


def _ns(server: NeveServer) -> tuple[neve.Catalog, str]:
    cat = neve.connect(server.url, credential="admin:admin-secret")
    ns = f"e{uuid.uuid4().hex[:8]}"
    cat.create_namespace(ns)
    return cat, ns


def test_config_advertises_what_the_server_does(secured: NeveServer) -> None:
    body = _get(secured, "/v1/config").json()
    assert body["defaults"] == {}
    assert body["overrides"]["warehouse"] == secured.warehouse
    assert body["idempotency-key-lifetime"] == "PT1800S"
    endpoints = set(body["endpoints"])
    for e in (
        "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
        "POST /v1/{prefix}/transactions/commit",
        "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
        "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
    ):
        assert e in endpoints
    assert _get(secured, "/v1/config", params={"warehouse": "nowhere"}).status_code == 404


def test_pagination(secured: NeveServer) -> None:
    cat, ns = _ns(secured)
    for i in range(5):
        cat.create_table(f"{ns}.t{i}", SCHEMA)
    names, token, pages = [], "", 0
    while token is not None:
        body = _get(
            secured,
            f"/v1/namespaces/{ns}/tables",
            params={"pageToken": token, "pageSize": "2"},
        ).json()
        names += [i["name"] for i in body["identifiers"]]
        token = body.get("next-page-token")
        pages += 1
    assert names == [f"t{i}" for i in range(5)] and pages == 3
    whole = _get(secured, f"/v1/namespaces/{ns}/tables").json()
    assert "next-page-token" not in whole and len(whole["identifiers"]) == 5
    bad = _get(secured, f"/v1/namespaces/{ns}/tables", params={"pageToken": "", "pageSize": "0"})
    assert bad.status_code == 400


def test_etag_and_snapshots_refs(secured: NeveServer) -> None:
    cat, ns = _ns(secured)
    t = cat.create_table(f"{ns}.t", SCHEMA)
    for i in range(2):
        t.append(pa.table({"id": [i], "s": ["x"]}, schema=SCHEMA))
    path = f"/v1/namespaces/{ns}/tables/t"
    first = _get(secured, path)
    etag = first.headers["etag"]
    assert len(first.json()["metadata"]["snapshots"]) == 2
    assert _get(secured, path, headers={"If-None-Match": etag}).status_code == 304
    refs = _get(secured, path, params={"snapshots": "refs"})
    assert refs.headers["etag"] != etag
    assert len(refs.json()["metadata"]["snapshots"]) == 1  # main's head only
    t.append(pa.table({"id": [9], "s": ["y"]}, schema=SCHEMA))
    after = _get(secured, path, headers={"If-None-Match": etag})
    assert after.status_code == 200 and after.headers["etag"] != etag


def test_staged_create_register_and_purge(secured: NeveServer) -> None:
    cat, ns = _ns(secured)
    py = PyRest("neve", uri=secured.url, credential="admin:admin-secret")
    with py.create_table_transaction(f"{ns}.staged", schema=SCHEMA) as tx:
        assert not cat.table_exists(f"{ns}.staged")  # staged: nothing until the commit
        tx.append(pa.table({"id": [1, 2], "s": ["a", "b"]}, schema=SCHEMA))
    staged = cat.load_table(f"{ns}.staged")
    assert staged.scan().count() == 2
    registered = cat.register_table(f"{ns}.again", staged.metadata_location)
    assert registered.metadata.table_uuid == staged.metadata.table_uuid
    cat.drop_table(f"{ns}.again")  # keeps the files the other name still uses
    assert cat.load_table(f"{ns}.staged").scan().count() == 2
    folder = Path(staged.location)
    assert any(folder.rglob("*.parquet"))
    cat.drop_table(f"{ns}.staged", purge=True)
    assert not any(p.is_file() for p in folder.rglob("*"))


def test_metrics_reports_are_kept(secured: NeveServer) -> None:
    cat, ns = _ns(secured)
    cat.create_table(f"{ns}.t", SCHEMA)
    report = {
        "report-type": "scan-report",
        "table-name": f"{ns}.t",
        "snapshot-id": 1,
        "filter": True,
        "schema-id": 0,
        "projected-field-ids": [1],
        "projected-field-names": ["id"],
        "metrics": {
            "total-planning-duration": {"count": 1, "time-unit": "nanoseconds", "total-duration": 5}
        },
    }
    resp = httpx.post(
        f"{secured.url}/v1/namespaces/{ns}/tables/t/metrics",
        json=report,
        headers=auth(secured, "admin"),
    )
    assert resp.status_code == 204
    store = MetricsStore(SqlCatalog("neve", secured.db, secured.warehouse).engine)
    assert store.reports("", (ns, "t")) == [report]
    bad = httpx.post(
        f"{secured.url}/v1/namespaces/{ns}/tables/t/metrics",
        json={},
        headers=auth(secured, "admin"),
    )
    assert bad.status_code == 400


@pytest.mark.rest
def test_static_storage_credentials_by_prefix(tmp_path: Path) -> None:
    work = tmp_path / "server"
    warehouse = str(work / "warehouse")
    config = {
        "anonymous": True,
        "storage-credentials": [
            {"prefix": warehouse, "config": {"client.region": "eu-west-1"}},
            {"prefix": warehouse + "/db", "config": {"client.region": "eu-north-1"}},
            {"prefix": "s3://elsewhere/", "config": {"client.region": "us-east-1"}},
        ],
    }
    with NeveServer.start(work, config=config) as server:
        cat = neve.connect(server.url)
        cat.create_namespace("db")
        cat.create_table("db.t", SCHEMA)
        body = httpx.get(f"{server.url}/v1/namespaces/db/tables/t").json()
        prefixes = [c["prefix"] for c in body["storage-credentials"]]
        assert prefixes == [warehouse + "/db", warehouse]  # longest first, others left out
        assert body["config"]["client.region"] == "eu-north-1"
        creds = httpx.get(f"{server.url}/v1/namespaces/db/tables/t/credentials").json()
        assert sorted(c["prefix"] for c in creds["storage-credentials"]) == sorted(prefixes)


def test_plan_fetch_plan_cancel_and_fetch_tasks(secured: NeveServer) -> None:
    cat, ns = _ns(secured)
    t = cat.create_table(f"{ns}.t", SCHEMA, partition_by=["s"])
    for i, s in enumerate("abc"):
        t.append(pa.table({"id": [i * 10, i * 10 + 1], "s": [s, s]}, schema=SCHEMA))
    t.refresh()
    first, last = t.snapshots()[0].snapshot_id, t.snapshots()[-1].snapshot_id
    headers = auth(secured, "admin")
    base = f"{secured.url}/v1/namespaces/{ns}/tables/t"

    def files(body: dict[str, Any]) -> list[str]:
        return sorted(task["data-file"]["file-path"] for task in body["file-scan-tasks"])

    plan = httpx.post(
        f"{base}/plan",
        json={"filter": {"type": "gt-eq", "term": "id", "value": 10}},
        headers=headers,
    ).json()
    assert plan["status"] == "completed"
    expected = sorted(task.file.file_path for task in t.scan(filter="id >= 10").plan_files())
    assert files(plan) == expected and len(expected) == 2
    assert all("lower-bounds" not in task["data-file"] for task in plan["file-scan-tasks"])
    fetched = httpx.get(f"{base}/plan/{plan['plan-id']}", headers=headers).json()
    assert fetched["status"] == "completed" and files(fetched) == expected
    tasks = httpx.post(f"{base}/tasks", json={"plan-task": plan["plan-id"]}, headers=headers).json()
    assert files(tasks) == expected
    assert httpx.delete(f"{base}/plan/{plan['plan-id']}", headers=headers).status_code == 204
    assert httpx.get(f"{base}/plan/bogus", headers=headers).status_code == 404
    # statistics for the fields asked for; an incremental plan of the appends after the first
    stats = httpx.post(f"{base}/plan", json={"stats-fields": ["id"]}, headers=headers).json()
    bounds = [task["data-file"]["lower-bounds"] for task in stats["file-scan-tasks"]]
    assert all(b["keys"] == [1] for b in bounds)
    assert sorted(b["values"][0] for b in bounds) == [0, 10, 20]
    incremental = httpx.post(
        f"{base}/plan",
        json={"start-snapshot-id": first, "end-snapshot-id": last},
        headers=headers,
    ).json()
    assert len(incremental["file-scan-tasks"]) == 2
    bad = httpx.post(f"{base}/plan", json={"start-snapshot-id": first}, headers=headers)
    assert bad.status_code == 400
