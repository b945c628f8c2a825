"""An S3-protocol server on loopback for the tests: moto 5.2 (``moto[server]``) in its
own virtualenv, ``.venv-moto``, built by ``make s3-server`` (part of ``make setup``),
behind a front (``server.py``) that logs every request and injects faults per bucket.

:class:`S3Server` starts it and talks to the front's control requests; the fixtures in
``tests/conftest.py`` (``s3_server``, ``s3_warehouse``) hand tests a fresh bucket with
the settings neve, pyiceberg, DuckDB and Spark tasks need. A missing server fails the
tests that need it, never skips them.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ACCESS_KEY", "REGION", "SECRET_KEY", "S3Server", "S3Warehouse", "op_counts"]

REPO = Path(__file__).resolve().parents[2]
SERVER_PYTHON = Path(os.environ.get("NEVE_MOTO_VENV", REPO / ".venv-moto")) / "bin" / "python"
SCRIPT = Path(__file__).with_name("server.py")
ACCESS_KEY = "neve-test"
SECRET_KEY = "neve-test-secret"
REGION = "us-east-1"


def op_counts(log: Sequence[Mapping[str, Any]]) -> Counter[str]:
    """Requests by operation (``GET``, ``PUT``, ``LIST``, ``HEAD``, ``DELETE_MULTI``...)."""
    return Counter(str(e["op"]) for e in log)


@dataclass
class S3Warehouse:
    """A fresh bucket on the test server: ``uri`` (``s3://bucket/wh``), the catalog
    ``properties`` that reach it (pyiceberg's names), and the same as AWS environment
    variables in ``env`` (for processes that get no properties: DuckDB, Spark tasks, the
    command line)."""

    server: S3Server
    bucket: str
    uri: str
    properties: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    def log(self) -> list[dict[str, Any]]:
        return self.server.log(self.bucket)

    def clear_log(self) -> None:
        self.server.clear_log(self.bucket)

    def counts(self) -> Counter[str]:
        return op_counts(self.log())

    @contextmanager
    def counting(self) -> Iterator[list[dict[str, Any]]]:
        """The requests made inside the block (the list fills when the block ends)."""
        self.clear_log()
        out: list[dict[str, Any]] = []
        yield out
        out.extend(self.log())

    @contextmanager
    def faults(self, rate: float, kinds: Sequence[str], **options: Any) -> Iterator[None]:
        self.server.set_faults(self.bucket, rate, kinds, **options)
        try:
            yield
        finally:
            self.server.clear_faults(self.bucket)

    def settings(self, **settings: Any) -> None:
        self.server.set_settings(self.bucket, **settings)


class S3Server:
    """moto's S3 server behind the logging and fault-injecting front, on a loopback
    port, for as long as the object lives (``stop`` ends it)."""

    def __init__(self, log_dir: Path) -> None:
        if not SERVER_PYTHON.exists():
            raise RuntimeError(
                f"the test S3 server's virtualenv is missing ({SERVER_PYTHON}); build it "
                "with `make s3-server`"
            )
        log_dir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = log_dir / "s3server.log"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 (lives with the server)
        self.process = subprocess.Popen(
            [str(SERVER_PYTHON), str(SCRIPT), "127.0.0.1"],
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode()
        if not line.startswith("port "):
            self.stop()
            raise RuntimeError(
                f"the test S3 server did not start: {self.stderr_path.read_text()[-2000:]}"
            )
        self.port = int(line.split()[1])
        self.endpoint = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                self._control("GET", "ping")
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self._stderr.close()

    # -- control -------------------------------------------------------------------------

    def _control(self, method: str, what: str, body: Any = None, query: str = "") -> Any:
        data = None if body is None else json.dumps(body).encode()
        url = f"{self.endpoint}/_neve/{what}" + (f"?{query}" if query else "")
        request = urllib.request.Request(url, data=data, method=method)
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read() or b"null")

    def create_bucket(self, name: str | None = None) -> str:
        name = name or f"b-{uuid.uuid4().hex[:16]}"
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(request, timeout=30):
            pass
        self.clear_log(name)
        return name

    def log(self, bucket: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self._control("GET", "log", query=f"bucket={bucket}")
        return found

    def clear_log(self, bucket: str) -> None:
        self._control("DELETE", "log", query=f"bucket={bucket}")

    def set_faults(
        self,
        bucket: str,
        rate: float,
        kinds: Sequence[str],
        *,
        seed: int = 0,
        slow_s: float = 0.2,
        ops: Sequence[str] | None = None,
        match: str | None = None,
        limit: int | None = None,
    ) -> None:
        """Faults on a fraction ``rate`` of the requests to ``bucket`` (see server.py:
        ``kinds`` of ``503``, ``500``, ``reset-before``, ``reset-after``, ``slow``), for
        the operations ``ops`` and keys containing ``match``, at most ``limit``."""
        body = {
            "bucket": bucket,
            "rate": rate,
            "kinds": list(kinds),
            "seed": seed,
            "slow_s": slow_s,
            "ops": list(ops) if ops else None,
            "match": match,
            "limit": limit,
        }
        self._control("PUT", "faults", body)

    def clear_faults(self, bucket: str) -> None:
        self._control("DELETE", "faults", query=f"bucket={bucket}")

    def set_settings(self, bucket: str, **settings: Any) -> None:
        self._control("PUT", "settings", {"bucket": bucket, **settings})

    def sts_sessions(self) -> list[dict[str, Any]]:
        """The sessions moto's STS handed out: ``access_key``, ``role_arn``,
        ``session_name``, ``policy`` (the session policy as sent), ``expiration``."""
        found: list[dict[str, Any]] = self._control("GET", "sts-sessions")
        return found

    def sts_evaluate(self, access_key: str, action: str, resource: str) -> str:
        """moto's IAM policy evaluator on the session policy of ``access_key``:
        ``PERMITTED``, ``DENIED`` or ``NEUTRAL`` (not allowed)."""
        body = {"access_key": access_key, "action": action, "resource": resource}
        found: dict[str, str] = self._control("PUT", "sts-evaluate", body)
        return found["result"]

    # -- warehouses ----------------------------------------------------------------------

    def properties(self) -> dict[str, str]:
        """Catalog properties reaching this server (pyiceberg's names)."""
        return {
            "s3.endpoint": self.endpoint,
            "s3.access-key-id": ACCESS_KEY,
            "s3.secret-access-key": SECRET_KEY,
            "s3.region": REGION,
            "s3.path-style-access": "true",
        }

    def env(self) -> dict[str, str]:
        """The same settings as AWS environment variables."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_ALLOW_HTTP": "true",
        }

    def warehouse(self, bucket: str | None = None) -> S3Warehouse:
        """A fresh bucket and its warehouse URI ``s3://<bucket>/wh``."""
        name = self.create_bucket(bucket)
        return S3Warehouse(self, name, f"s3://{name}/wh", self.properties(), self.env())
