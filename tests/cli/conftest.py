"""Fixtures of the command's tests: the ``neve`` command run as a subprocess in an
isolated home (no config of the machine leaks in), and a SQLite catalog with a table
whose history has appends, a merge-on-read delete, a tag and a branch."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from cli_support import NEVE, Catalog, Result, Runner, fill

import neve


@pytest.fixture()
def run(home: Path) -> Runner:
    """``run("tables", "db", env={...})``: the installed ``neve`` command in a
    subprocess (the environment of the test, plus ``env``)."""

    def go(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Result:
        proc = subprocess.run(
            [str(NEVE), *args],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "200", **(env or {})},
            cwd=cwd or home,
            timeout=300,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    return go


@pytest.fixture()
def sqlite(tmp_path: Path) -> Catalog:
    uri, wh = f"sqlite:///{tmp_path}/catalog.db", str(tmp_path / "warehouse")
    return Catalog(uri, wh, neve.connect(uri, wh))


@pytest.fixture()
def events(sqlite: Catalog) -> neve.Table:
    return fill(sqlite.catalog)
