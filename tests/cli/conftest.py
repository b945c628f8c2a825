"""Fixtures of the command's tests: the ``neve`` command run in a process of its own in
an isolated home (no config of the machine leaks in), and a SQLite catalog with a table
whose history has appends, a merge-on-read delete, a tag and a branch."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Catalog, Result, Runner, fill

import neve

ZYGOTE = Path(__file__).with_name("cli_zygote.py")


@pytest.fixture(scope="session")
def zygote() -> Iterator[subprocess.Popen[str]]:
    """One process per test worker that has imported the command and forks a child for
    each run (tests/cli/cli_zygote.py); the installed entry point itself is run by the
    demo and terminal tests and by test_cli_browse."""
    proc = subprocess.Popen(
        [sys.executable, str(ZYGOTE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    yield proc
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=60)


@pytest.fixture()
def run(home: Path, tmp_path: Path, zygote: subprocess.Popen[str]) -> Runner:
    """``run("tables", "db", env={...})``: the ``neve`` command in a process of its own
    (the environment of the test, plus ``env``)."""
    calls = iter(range(1_000_000))

    def go(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Result:
        n = next(calls)
        out, err = tmp_path / f"run-{n}.out", tmp_path / f"run-{n}.err"
        request = {
            "args": list(args),
            "env": {**os.environ, "COLUMNS": "200", **(env or {})},
            "cwd": str(cwd or home),
            "out": str(out),
            "err": str(err),
        }
        assert zygote.stdin is not None and zygote.stdout is not None
        zygote.stdin.write(json.dumps(request) + "\n")
        zygote.stdin.flush()
        ready, _, _ = select.select([zygote.stdout], [], [], 300)
        assert ready, f"neve {' '.join(args)} ran longer than 300 s"
        code = json.loads(zygote.stdout.readline())["code"]
        return Result(code, out.read_text(), err.read_text())

    return go


@pytest.fixture()
def sqlite(tmp_path: Path) -> Catalog:
    uri, wh = f"sqlite:///{tmp_path}/catalog.db", str(tmp_path / "warehouse")
    return Catalog(uri, wh, neve.connect(uri, wh))


@pytest.fixture()
def events(sqlite: Catalog) -> neve.Table:
    return fill(sqlite.catalog)
