"""``Idempotency-Key``: a commit whose response was lost (the connection dropped after
the request was sent) and that is retried with the same key is applied once; the
retry gets the first answer. A key reused for another request is refused."""

from __future__ import annotations

import json
import socket
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pyarrow as pa
import pytest
from sqlalchemy import create_engine, text

import neve
from neve.server import store
from restserver import SCHEMA, NeveServer, auth


def _send_and_drop(server: NeveServer, path: str, body: bytes, headers: dict[str, str]) -> None:
    """Send a request and close the connection without reading the answer."""
    parts = urlsplit(server.url)
    head = [f"POST {path} HTTP/1.1", f"Host: {parts.netloc}", "Content-Type: application/json"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head.append(f"Content-Length: {len(body)}")
    with socket.create_connection((parts.hostname, parts.port)) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        sock.shutdown(socket.SHUT_WR)


def test_a_retried_commit_with_the_same_key_is_applied_once(secured: NeveServer) -> None:
    admin = neve.connect(secured.url, credential="admin:admin-secret")
    admin.create_namespace_if_not_exists("idem")
    table = admin.create_table(f"idem.t{uuid.uuid4().hex[:8]}", SCHEMA)
    path = f"/v1/namespaces/idem/tables/{table.identifier[-1]}"
    commit = {
        "requirements": [{"type": "assert-table-uuid", "uuid": table.metadata.table_uuid}],
        "updates": [{"action": "set-properties", "updates": {"n": "1"}}],
    }
    key = str(uuid.uuid4())
    headers = {**auth(secured, "admin"), "Idempotency-Key": key}
    _send_and_drop(secured, path, json.dumps(commit).encode(), headers)
    deadline = time.monotonic() + 30
    while admin.load_table(table.identifier).properties.get("n") != "1":
        assert time.monotonic() < deadline, "the dropped commit was never applied"
        time.sleep(0.05)
    applied = admin.load_table(table.identifier).metadata_location
    time.sleep(0.2)  # let the server record the answer it could not send
    retry = httpx.post(secured.url + path, json=commit, headers=headers)
    assert retry.status_code == 200, retry.text
    assert retry.json()["metadata-location"] == applied
    again = httpx.post(secured.url + path, json=commit, headers=headers)
    assert again.json() == retry.json()
    after = admin.load_table(table.identifier)
    assert after.metadata_location == applied  # applied once: no second version
    assert len(after.metadata.metadata_log) == 1
    # without the key the same body is a second, new commit
    fresh = httpx.post(secured.url + path, json=commit, headers=auth(secured, "admin"))
    assert fresh.status_code == 200
    assert admin.load_table(table.identifier).metadata_location != applied
    # the key of that commit cannot be used for another request
    other = httpx.post(
        f"{secured.url}/v1/namespaces",
        json={"namespace": ["elsewhere"]},
        headers=headers,
    )
    assert other.status_code == 422
    assert not admin.namespace_exists("elsewhere")


def test_a_refused_request_is_replayed_not_run_again(secured: NeveServer) -> None:
    admin = neve.connect(secured.url, credential="admin:admin-secret")
    name = f"n{uuid.uuid4().hex[:8]}"
    headers = {**auth(secured, "admin"), "Idempotency-Key": str(uuid.uuid4())}
    first = httpx.post(f"{secured.url}/v1/namespaces", json={"namespace": [name]}, headers=headers)
    assert first.status_code == 200
    admin.drop_namespace(name)
    # the same key again: the first answer, and the namespace is not created again
    second = httpx.post(f"{secured.url}/v1/namespaces", json={"namespace": [name]}, headers=headers)
    assert (second.status_code, second.json()) == (first.status_code, first.json())
    assert not admin.namespace_exists(name)
    bad = httpx.post(
        f"{secured.url}/v1/namespaces",
        json={"namespace": [name]},
        headers={**headers, "Idempotency-Key": "not-a-uuid"},
    )
    assert bad.status_code == 400


def test_expired_keys_are_removed_by_a_later_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys past twice their lifetime go in the transaction of a later claim, at most
    once a minute per process (a removal reads the whole table; every mutation claims)."""
    engine = create_engine(f"sqlite:///{tmp_path}/keys.db")
    keys = store.IdempotencyStore(engine, lifetime_s=1)
    clock = [1_000_000.0]
    monkeypatch.setattr(store.time, "time", lambda: clock[0])

    def kept() -> set[str]:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT idempotency_key FROM neve_rest_idempotency"))
            return {r[0] for r in rows}

    assert keys.claim("a", "r") is None
    clock[0] += 3  # "a" is past twice its lifetime, but a removal ran a moment ago
    assert keys.claim("b", "r") is None
    assert kept() == {"a", "b"}
    clock[0] += 60
    assert keys.claim("c", "r") is None
    assert kept() == {"c"}
    assert keys.claim("c", "r") == store.Stored("r", None, None)  # claimed: in progress


def test_a_replayed_commit_answers_with_the_metadata_it_made(secured: NeveServer) -> None:
    """A commit's answer is kept without its table metadata (it grows with the table's
    history) and the replay reads it again from the metadata file: the same answer."""
    admin = neve.connect(secured.url, credential="admin:admin-secret")
    admin.create_namespace_if_not_exists("idem")
    table = admin.create_table(f"idem.t{uuid.uuid4().hex[:8]}", SCHEMA)
    for i in range(5):  # a history: snapshots in the metadata
        table.append(pa.table({"id": [i], "s": [str(i)]}, schema=SCHEMA))
    path = f"/v1/namespaces/idem/tables/{table.identifier[-1]}"
    commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    key = str(uuid.uuid4())
    headers = {**auth(secured, "admin"), "Idempotency-Key": key}
    first = httpx.post(secured.url + path, json=commit, headers=headers)
    assert first.status_code == 200, first.text
    assert len(first.json()["metadata"]["snapshots"]) == 5
    admin.load_table(table.identifier).append(pa.table({"id": [9], "s": ["9"]}, schema=SCHEMA))
    replay = httpx.post(secured.url + path, json=commit, headers=headers)
    assert (replay.status_code, replay.json()) == (200, first.json())
    with create_engine(secured.db).connect() as conn:
        kept = conn.execute(
            text("SELECT body FROM neve_rest_idempotency WHERE idempotency_key = :k"), {"k": key}
        ).scalar_one()
    assert "metadata" not in json.loads(kept)  # left out, read again for the replay
