"""DuckDB 1.5 with its iceberg extension as a reference reader of Iceberg tables.

The iceberg, avro and httpfs extensions come from PyPI (``duckdb-extension-*``) and
need DuckDB 1.5.x, while neve's own DuckDB (the CLI's ``sql``) is newer, so the
reference lives in its own virtualenv, ``.venv-duckdb``, built by ``make
duckdb-engine`` (part of ``make setup``). :func:`duckdb_query` runs
``tests/duckdbengine/runner.py`` there: the extensions are loaded from their files,
never downloaded. A missing engine fails the test that needs it, never skips it.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["DUCKDB_VERSION", "ENGINE_PYTHON", "DuckDBError", "duckdb_query"]

REPO = Path(__file__).resolve().parents[2]
ENGINE_PYTHON = Path(os.environ.get("NEVE_DUCKDB_VENV", REPO / ".venv-duckdb")) / "bin" / "python"
RUNNER = Path(__file__).with_name("runner.py")
DUCKDB_VERSION = "1.5"


class DuckDBError(RuntimeError):
    """DuckDB refused a statement (the message is DuckDB's)."""


def duckdb_query(
    sql: str,
    *,
    setup: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> list[dict[str, Any]]:
    """Run the statements ``setup`` (``CREATE SECRET``, ``ATTACH`` ...), then ``sql``, in
    a fresh DuckDB process with the iceberg extension loaded; returns the rows of
    ``sql`` as dicts (values JSON-safe: see runner.py)."""
    if not ENGINE_PYTHON.exists():
        raise RuntimeError(
            f"DuckDB's reference virtualenv is missing ({ENGINE_PYTHON}); build it with "
            "`make duckdb-engine`"
        )
    job = json.dumps({"setup": list(setup), "sql": sql})
    done = subprocess.run(
        [str(ENGINE_PYTHON), str(RUNNER)],
        input=job,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {})},
    )
    if done.returncode == 3:
        # DuckDB's message, then (for a statement it could not bind) the statement and
        # a caret under the place: the whole of it
        raise DuckDBError(done.stderr.strip())
    if done.returncode != 0:
        raise RuntimeError(f"DuckDB failed:\n{done.stderr[-4000:]}")
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows
