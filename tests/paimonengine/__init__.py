"""pypaimon 2.x as a reference engine for the merge engines it implements
(deduplicate, first-row). pypaimon pins pyarrow < 20, which neve's pyarrow is past, so
it lives in its own virtualenv, ``.venv-paimon``, built by ``make paimon-engine``
(part of ``make setup``); :func:`paimon_rows` runs tests/paimonengine/runner.py there.
A missing engine fails the test that needs it, never skips it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["ENGINE_PYTHON", "PYPAIMON_VERSION", "paimon_rows"]

REPO = Path(__file__).resolve().parents[2]
ENGINE_PYTHON = Path(os.environ.get("NEVE_PAIMON_VENV", REPO / ".venv-paimon")) / "bin" / "python"
RUNNER = Path(__file__).with_name("runner.py")
PYPAIMON_VERSION = "2.1.0"


def paimon_rows(
    options: dict[str, str], batches: list[list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """The rows of a pypaimon primary-key table (key ``k``) with table ``options``
    after writing each batch as one commit."""
    if not ENGINE_PYTHON.exists():
        raise RuntimeError(
            f"pypaimon's virtualenv is missing ({ENGINE_PYTHON}); build it with "
            "`make paimon-engine`"
        )
    job = json.dumps({"options": options, "batches": batches})
    done = subprocess.run(
        [str(ENGINE_PYTHON), str(RUNNER)],
        input=job,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pypaimon failed:\n{done.stderr[-4000:]}")
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows
