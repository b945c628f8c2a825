"""pylance 14.0.2 (Lance's Python package) as the reference engine of random access.

Lance's format exists to read a few arbitrary rows fast; ``benchmarks/bench_take.py``
measures neve's ``take`` next to it on the same rows. pylance pins its own pyarrow,
so it lives in its own virtualenv, ``.venv-lance``, built by ``make lance-engine``
(part of ``make setup``). :class:`LanceEngine` runs ``tests/lanceengine/runner.py``
there as a long-lived process and talks to it in JSON lines: write a dataset from a
Parquet file, take rows by position. A missing engine fails loudly, never skips.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["ENGINE_PYTHON", "LANCE_VERSION", "LanceEngine", "LanceError"]

REPO = Path(__file__).resolve().parents[2]
ENGINE_PYTHON = Path(os.environ.get("NEVE_LANCE_VENV", REPO / ".venv-lance")) / "bin" / "python"
RUNNER = Path(__file__).with_name("runner.py")
LANCE_VERSION = "14.0.2"


class LanceError(RuntimeError):
    """The engine refused a request or died (the message is pylance's)."""


class LanceEngine:
    """One pylance process; requests are answered in order."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self._proc = proc

    @classmethod
    def start(cls) -> LanceEngine:
        if not ENGINE_PYTHON.exists():
            raise LanceError(
                f"Lance's reference virtualenv is missing ({ENGINE_PYTHON}); build it with "
                "`make lance-engine`"
            )
        proc = subprocess.Popen(
            [str(ENGINE_PYTHON), str(RUNNER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        return cls(proc)

    def request(self, job: dict[str, Any]) -> dict[str, Any]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(job) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise LanceError(f"the Lance engine died (exit code {self._proc.poll()})")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise LanceError(answer["error"])
        return answer

    def write(self, source: str | Path, dest: str | Path) -> int:
        """Write the rows of the Parquet file ``source`` as a Lance dataset at ``dest``;
        returns the row count."""
        return int(self.request({"op": "write", "source": str(source), "dest": str(dest)})["rows"])

    def take(
        self,
        path: str | Path,
        indices: Sequence[int],
        columns: Sequence[str] | None = None,
        *,
        check: str | None = None,
    ) -> tuple[float, list[Any]]:
        """Take the rows at ``indices`` of the dataset at ``path`` (opened once per
        process, like a warm reader); the seconds the take took, and the values of
        column ``check`` in the rows taken."""
        answer = self.request(
            {
                "op": "take",
                "path": str(path),
                "indices": [int(i) for i in indices],
                "columns": list(columns) if columns is not None else None,
                "check": check,
            }
        )
        return float(answer["seconds"]), list(answer["check"])

    def open_and_take(
        self, path: str | Path, indices: Sequence[int], columns: Sequence[str] | None = None
    ) -> float:
        """Seconds to open the dataset and take the rows, in a process that has not
        opened it before (the cold-ish case: start a new engine for each)."""
        answer = self.request(
            {
                "op": "open_and_take",
                "path": str(path),
                "indices": [int(i) for i in indices],
                "columns": list(columns) if columns is not None else None,
            }
        )
        return float(answer["seconds"])

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
