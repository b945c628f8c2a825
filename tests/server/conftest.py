"""A secured ``neve serve`` for the server tests: principals with roles and grants,
no anonymous access, a known signing key (so tests can make expired and forged
tokens), a small body limit, and an external OIDC issuer's key set."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pyarrow as pa
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from neve.catalog import SqlCatalog
from restserver import NeveServer

SIGNING_KEY = "test-signing-key-" + "x" * 40
OIDC_ISSUER = "https://idp.test/realms/data"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
PRINCIPALS = {
    "admin": {"secret": "admin-secret", "roles": ["admin"]},
    "writer": {"secret": "writer-secret", "roles": ["writer"]},
    "reader": {"secret": "reader-secret", "roles": ["reader"]},
    "nobody": {"secret": "nobody-secret", "roles": []},
}
MAX_BODY = 256 * 1024


def oidc_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="session")
def idp_key() -> rsa.RSAPrivateKey:
    return oidc_key()


@pytest.fixture(scope="session")
def secured(
    tmp_path_factory: pytest.TempPathFactory, idp_key: rsa.RSAPrivateKey
) -> Iterator[NeveServer]:
    work = tmp_path_factory.mktemp("secured")
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(idp_key.public_key()))
    jwks = work / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}))
    config = {
        "token": {"signing-key": SIGNING_KEY, "lifetime-seconds": 600},
        "principals": PRINCIPALS,
        "roles": {
            "admin": ["manage on catalog *"],
            "writer": ["write on namespace db", "read on catalog"],
            "reader": ["read on table db.t"],
            "analyst": ["read on namespace db"],
        },
        "oidc": {
            "issuer": OIDC_ISSUER,
            "audience": "neve",
            "jwks-file": str(jwks),
            "roles-claim": "groups",
        },
        "max-body-bytes": MAX_BODY,
    }
    with NeveServer.start(work, config=config) as server:
        yield server


def token(server: NeveServer, client: str) -> str:
    resp = httpx.post(
        f"{server.url}/v1/oauth/tokens",
        data={
            "grant_type": "client_credentials",
            "client_id": client,
            "client_secret": PRINCIPALS[client]["secret"],
        },
    )
    assert resp.status_code == 200, resp.text
    return str(resp.json()["access_token"])


def auth(server: NeveServer, client: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token(server, client)}"}


def backing_catalog(server: NeveServer) -> SqlCatalog:
    """The server's own catalog, opened on its database (to look, not through HTTP)."""
    return SqlCatalog("neve", server.db, server.warehouse)


def state(server: NeveServer) -> dict[str, Any]:
    """Everything a request could change: namespaces and their properties, tables and
    their metadata locations, and every file under the warehouse."""
    cat = backing_catalog(server)
    out: dict[str, Any] = {}

    def walk(parent: tuple[str, ...]) -> None:
        for ns in cat.list_namespaces(parent):
            out[".".join(ns)] = cat.namespace_properties(ns)
            for t in cat.list_tables(ns):
                out[".".join(t)] = cat.load_table(t).metadata_location
            walk(ns)

    walk(())
    files = sorted(str(p) for p in Path(server.warehouse).rglob("*") if p.is_file())
    out["files"] = files
    cat.dispose()
    return out
