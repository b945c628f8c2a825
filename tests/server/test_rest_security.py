"""Security of ``neve serve``: every endpoint refuses a request without a token (401),
with an expired (419) or forged (401) token, and from a principal without the grant
(403); tokens of an external OIDC issuer are checked against its key set; identifiers
with path tricks, oversized and malformed bodies, unknown update kinds and stale
requirements get the right 4xx with a message. Every refused request leaves the
catalog exactly as it was (namespaces, properties, table pointers and files)."""

from __future__ import annotations

import time
from typing import Any

import httpx
import jwt
import pyarrow as pa
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

import neve
from neve.server import ENDPOINTS
from restserver import (
    MAX_BODY,
    OIDC_ISSUER,
    SCHEMA,
    SIGNING_KEY,
    NeveServer,
    auth,
    oidc_key,
    state,
)

TABLE = {"namespace": ["db"], "name": "t"}
SCHEMA_JSON = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}],
}
#: A well-formed body for each endpoint that takes one, so that only the grant decides.
BODIES: dict[str, Any] = {
    "POST namespaces": {"namespace": ["other"]},
    "POST namespaces/{namespace}/properties": {"updates": {"k": "v"}},
    "POST namespaces/{namespace}/tables": {"name": "x", "schema": SCHEMA_JSON},
    "POST namespaces/{namespace}/tables/{table}": {"requirements": [], "updates": []},
    "POST namespaces/{namespace}/register": {"name": "x", "metadata-location": "/nope.json"},
    "POST namespaces/{namespace}/tables/{table}/metrics": {"report-type": "scan-report"},
    "POST namespaces/{namespace}/tables/{table}/plan": {},
    "POST namespaces/{namespace}/tables/{table}/tasks": {"plan-task": "x"},
    "POST tables/rename": {"source": TABLE, "destination": {"namespace": ["db"], "name": "u"}},
    "POST transactions/commit": {
        "table-changes": [{"identifier": TABLE, "requirements": [], "updates": []}]
    },
    "POST namespaces/{namespace}/views": {"name": "x"},
    "POST namespaces/{namespace}/views/{view}": {"requirements": [], "updates": []},
    "POST views/rename": {
        "source": {"namespace": ["db"], "name": "v"},
        "destination": {"namespace": ["db"], "name": "w"},
    },
    "POST namespaces/{namespace}/register-view": {"name": "x", "metadata-location": "/n.json"},
    "PUT namespaces/{namespace}/tables/{table}/commit-queue/{ticket}": {"waited-ms": 0},
}


def _requests() -> list[tuple[str, str, Any]]:
    out = []
    for endpoint in ENDPOINTS:
        verb, path = endpoint.split(" ", 1)
        route = path.removeprefix("/v1/{prefix}/")
        concrete = (
            route.replace("{namespace}", "db")
            .replace("{table}", "t")
            .replace("{view}", "v")
            .replace("{plan-id}", "x")
            .replace("{ticket}", "0" * 32)
        )
        out.append((verb, f"/v1/{concrete}", BODIES.get(f"{verb} {route}")))
    return out


@pytest.fixture(scope="module")
def populated(secured: NeveServer) -> NeveServer:
    admin = neve.connect(secured.url, credential="admin:admin-secret")
    admin.create_namespace_if_not_exists("db", {"owner": "ops"})
    if not admin.table_exists("db.t"):
        t = admin.create_table("db.t", SCHEMA)
        t.append(pa.table({"id": [1, 2], "s": ["a", "b"]}, schema=SCHEMA))
    admin.dispose()
    return secured


def _send(
    server: NeveServer, verb: str, path: str, body: Any, headers: dict[str, str]
) -> httpx.Response:
    return httpx.request(verb, server.url + path, json=body, headers=headers, timeout=30)


def test_every_endpoint_without_a_token_is_401_and_changes_nothing(populated: NeveServer) -> None:
    before = state(populated)
    requests = [*_requests(), ("GET", "/v1/config", None)]
    assert len(requests) >= 20
    for verb, path, body in requests:
        resp = _send(populated, verb, path, body, {})
        assert resp.status_code == 401, (verb, path, resp.text)
        if verb != "HEAD":
            err = resp.json()["error"]
            assert err["code"] == 401 and "token" in err["message"]
    assert state(populated) == before


def _own_token(claims: dict[str, Any], key: str = SIGNING_KEY) -> str:
    return jwt.encode({"iss": "neve", "iat": int(time.time()) - 100, **claims}, key, "HS256")


def test_bad_tokens_on_every_endpoint(populated: NeveServer) -> None:
    now = int(time.time())
    bearers = {
        "expired": (_own_token({"sub": "admin", "exp": now - 10}), 419),
        "forged": (_own_token({"sub": "admin", "exp": now + 600}, key="another-key" * 4), 401),
        "unknown principal": (_own_token({"sub": "mallory", "exp": now + 600}), 401),
        "not a JWT": ("abc", 401),
    }
    before = state(populated)
    for kind, (bearer, status) in bearers.items():
        for verb, path, body in _requests():
            resp = _send(populated, verb, path, body, {"Authorization": f"Bearer {bearer}"})
            assert resp.status_code == status, (kind, verb, path, resp.text)
    assert state(populated) == before


def test_a_principal_without_the_grant_is_403_everywhere(populated: NeveServer) -> None:
    headers = auth(populated, "nobody")
    before = state(populated)
    for verb, path, body in _requests():
        resp = _send(populated, verb, path, body, headers)
        assert resp.status_code == 403, (verb, path, resp.text)
        if verb != "HEAD":
            assert "may not" in resp.json()["error"]["message"]
    assert _send(populated, "GET", "/v1/config", None, headers).status_code == 200
    assert state(populated) == before


def test_grants_by_privilege_and_target(populated: NeveServer) -> None:
    writer, reader = auth(populated, "writer"), auth(populated, "reader")
    before = state(populated)
    # the reader may read db.t and nothing else
    assert _send(populated, "GET", "/v1/namespaces/db/tables/t", None, reader).status_code == 200
    assert _send(populated, "GET", "/v1/namespaces/db/tables", None, reader).status_code == 403
    assert _send(populated, "GET", "/v1/namespaces", None, reader).status_code == 403
    commit = BODIES["POST namespaces/{namespace}/tables/{table}"]
    assert _send(populated, "POST", "/v1/namespaces/db/tables/t", commit, reader).status_code == 403
    # the writer may commit in db, not drop tables (manage) nor create namespaces
    assert _send(populated, "DELETE", "/v1/namespaces/db/tables/t", None, writer).status_code == 403
    assert (
        _send(populated, "POST", "/v1/namespaces", {"namespace": ["z"]}, writer).status_code == 403
    )
    assert state(populated) == before
    props = {"updates": [{"action": "set-properties", "updates": {"k": "w"}}], "requirements": []}
    assert _send(populated, "POST", "/v1/namespaces/db/tables/t", props, writer).status_code == 200
    assert (
        neve.connect(populated.url, credential="writer:writer-secret")
        .load_table("db.t")
        .properties["k"]
        == "w"
    )


def _idp_token(key: rsa.RSAPrivateKey, **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": OIDC_ISSUER, "aud": "neve", "sub": "carol", "iat": now, "exp": now + 300}
    return jwt.encode({**body, **claims}, key, "RS256", headers={"kid": "k1"})


def test_tokens_of_the_external_issuer(populated: NeveServer, idp_key: rsa.RSAPrivateKey) -> None:
    good = {"Authorization": f"Bearer {_idp_token(idp_key, groups=['analyst'])}"}
    assert _send(populated, "GET", "/v1/namespaces/db/tables", None, good).status_code == 200
    assert _send(populated, "POST", "/v1/namespaces", {"namespace": ["q"]}, good).status_code == 403
    before = state(populated)
    for bad, status in [
        (_idp_token(idp_key, groups=["analyst"], aud="other"), 401),
        (_idp_token(oidc_key(), groups=["analyst"]), 401),  # not the issuer's key
        (_idp_token(idp_key, groups=["analyst"], exp=int(time.time()) - 5), 419),
    ]:
        resp = _send(
            populated, "GET", "/v1/namespaces/db/tables", None, {"Authorization": f"Bearer {bad}"}
        )
        assert resp.status_code == status, resp.text
    assert state(populated) == before


def test_the_token_endpoint(populated: NeveServer) -> None:
    url = f"{populated.url}/v1/oauth/tokens"
    wrong = httpx.post(
        url, data={"grant_type": "client_credentials", "client_id": "admin", "client_secret": "x"}
    )
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    odd = httpx.post(url, data={"grant_type": "password", "username": "admin"})
    assert odd.status_code == 400 and odd.json()["error"] == "unsupported_grant_type"
    first = auth(populated, "admin")["Authorization"].split()[1]
    claims = jwt.decode(first, SIGNING_KEY, algorithms=["HS256"], issuer="neve")
    assert claims["sub"] == "admin" and claims["exp"] - claims["iat"] == 600
    refreshed = httpx.post(
        url,
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": first,
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
        },
    )
    assert refreshed.status_code == 200
    assert refreshed.json()["access_token"] != first


@pytest.mark.parametrize(
    ("verb", "path", "body"),
    [
        ("GET", "/v1/namespaces/%2E%2E", None),
        ("GET", "/v1/namespaces/db%2Fsecret", None),
        ("GET", "/v1/namespaces/db%00", None),
        ("GET", "/v1/namespaces/db/tables/..%2F..%2Fetc", None),
        ("DELETE", "/v1/namespaces/db%1F..", None),
        ("POST", "/v1/namespaces", {"namespace": ["..", "x"]}),
        ("POST", "/v1/namespaces", {"namespace": ["a/b"]}),
        ("POST", "/v1/namespaces/db/tables", {"name": "../../x", "schema": SCHEMA_JSON}),
        (
            "POST",
            "/v1/tables/rename",
            {"source": TABLE, "destination": {"namespace": ["db"], "name": ".."}},
        ),
    ],
)
def test_path_tricks_are_400(populated: NeveServer, verb: str, path: str, body: Any) -> None:
    before = state(populated)
    resp = _send(populated, verb, path, body, auth(populated, "admin"))
    assert resp.status_code == 400, resp.text
    assert "not allowed" in resp.json()["error"]["message"]
    assert state(populated) == before


def test_bad_bodies_are_4xx_and_change_nothing(populated: NeveServer) -> None:
    headers = auth(populated, "admin")
    t = neve.connect(populated.url, credential="admin:admin-secret").load_table("db.t")
    main = t.metadata.current_snapshot_id
    before = state(populated)
    big = {"namespace": ["huge"], "properties": {"k": "x" * (MAX_BODY + 1)}}
    cases = [
        (_send(populated, "POST", "/v1/namespaces", big, headers), 413, "bytes"),
        (
            httpx.post(
                f"{populated.url}/v1/namespaces",
                content=b'{"namespace": ["x"',
                headers={**headers, "Content-Type": "application/json"},
            ),
            400,
            "malformed JSON",
        ),
        (
            _send(populated, "POST", "/v1/namespaces", ["not", "an", "object"], headers),
            400,
            "object",
        ),
        (
            _send(
                populated,
                "POST",
                "/v1/namespaces/db/tables/t",
                {"requirements": [], "updates": [{"action": "frobnicate"}]},
                headers,
            ),
            400,
            "unknown update action",
        ),
        (
            _send(
                populated,
                "POST",
                "/v1/namespaces/db/tables/t",
                {
                    "requirements": [
                        {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": main + 1}
                    ],
                    "updates": [{"action": "set-properties", "updates": {"stale": "yes"}}],
                },
                headers,
            ),
            409,
            "assert-ref-snapshot-id",
        ),
        (
            _send(
                populated,
                "POST",
                "/v1/namespaces/db/tables/t",
                {"requirements": [{"type": "assert-sky-is-blue"}], "updates": []},
                headers,
            ),
            400,
            "unknown requirement",
        ),
    ]
    for resp, status, words in cases:
        assert resp.status_code == status, resp.text
        assert words in resp.json()["error"]["message"]
    assert state(populated) == before
