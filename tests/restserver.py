"""A real ``neve serve`` on a loopback port, started as its own process (the way a
user runs it), for the REST tests and the ``rest`` kind of the ``catalog`` fixture.

    with NeveServer.start(tmp_path, anonymous=True) as server:
        cat = neve.connect(server.url, warehouse="w1")
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt
import pyarrow as pa
import yaml
from cryptography.hazmat.primitives.asymmetric import rsa

from neve.catalog import SqlCatalog

__all__ = [
    "MAX_BODY",
    "OIDC_ISSUER",
    "PRINCIPALS",
    "SCHEMA",
    "SIGNING_KEY",
    "NeveServer",
    "auth",
    "backing_catalog",
    "free_port",
    "oidc_key",
    "secured_config",
    "state",
    "token",
]

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _neve() -> list[str]:
    exe = Path(sys.executable).with_name("neve")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "neve.cli"]


@dataclass
class NeveServer:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path
    db: str
    warehouse: str

    @classmethod
    def start(
        cls,
        workdir: Path,
        *,
        anonymous: bool = False,
        config: dict[str, Any] | None = None,
        uri: str | None = None,
        workers: int = 1,
        warehouse_root: bool = False,
        timeout: float = 60.0,
        warehouse: str | None = None,
    ) -> NeveServer:
        """Start ``neve serve`` on a free loopback port, backed by SQLite in
        ``workdir`` (or ``uri``), its warehouse in ``workdir`` (or ``warehouse``), and
        wait until it answers."""
        workdir.mkdir(parents=True, exist_ok=True)
        db = uri or f"sqlite:///{workdir}/rest-catalog.db"
        warehouse = warehouse or str(workdir / "warehouse")
        args = [*_neve(), "serve", "--uri", db, "--warehouse", warehouse]
        if anonymous:
            args.append("--anonymous")
        if warehouse_root:
            args += ["--warehouse-root", str(workdir / "warehouses")]
        if config is not None:
            path = workdir / "server.yaml"
            path.write_text(yaml.safe_dump(config))
            args += ["--config", str(path)]
        if workers > 1:
            args += ["--workers", str(workers)]
        log = workdir / "server.log"
        for _attempt in range(3):  # a free port may be taken before the server binds it
            port = free_port()
            with open(log, "ab") as out:
                proc = subprocess.Popen(
                    [*args, "--port", str(port)],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env={**os.environ, "PYTHONUNBUFFERED": "1"},
                )
            server = cls(f"http://127.0.0.1:{port}", proc, log, db, warehouse)
            if server._wait(timeout):
                return server
            server.stop()
        raise RuntimeError(f"neve serve did not start; log {log}:\n{log.read_text()[-3000:]}")

    def _wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                status = httpx.get(f"{self.url}/v1/config", timeout=2).status_code
                if status in (200, 401):
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def __enter__(self) -> NeveServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(Path(self.warehouse).parent, ignore_errors=True)


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


def secured_config(work: Path, idp: rsa.RSAPrivateKey) -> dict[str, Any]:
    """A server config with principals, roles and grants, no anonymous access, a known
    signing key, a small body limit, and ``idp``'s public key as an OIDC issuer's."""
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(idp.public_key()))
    jwks = work / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}))
    return {
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
