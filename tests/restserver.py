"""A real ``neve serve`` on a loopback port, started as its own process (the way a
user runs it), for the REST tests and the ``rest`` kind of the ``catalog`` fixture.

    with NeveServer.start(tmp_path, anonymous=True) as server:
        cat = neve.connect(server.url, warehouse="w1")
"""

from __future__ import annotations

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
import yaml

__all__ = ["NeveServer", "free_port"]

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
    ) -> NeveServer:
        """Start ``neve serve`` on a free loopback port, backed by SQLite in
        ``workdir`` (or ``uri``), and wait until it answers."""
        workdir.mkdir(parents=True, exist_ok=True)
        db = uri or f"sqlite:///{workdir}/rest-catalog.db"
        warehouse = str(workdir / "warehouse")
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
