"""Run with the reference engine's own Python (``.venv-lance/bin/python``, see
tests/lanceengine/__init__.py): answers JSON-line requests on stdin, one JSON line
each on stdout: ``write`` a Lance dataset from a Parquet file, ``take`` rows by
position from a dataset opened once, ``open_and_take`` in one timed step. Errors are
answered as ``{"error": "..."}``."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import lance
import pyarrow.parquet as pq

_open: dict[str, Any] = {}


def _dataset(path: str) -> Any:
    ds = _open.get(path)
    if ds is None:
        ds = _open[path] = lance.dataset(path)
    return ds


def _answer(job: dict[str, Any]) -> dict[str, Any]:
    op = job["op"]
    if op == "write":
        source = pq.ParquetFile(job["source"])
        reader = source.iter_batches(batch_size=65_536)
        lance.write_dataset(reader, job["dest"], schema=source.schema_arrow)
        return {"rows": source.metadata.num_rows}
    if op == "take":
        ds = _dataset(job["path"])
        start = time.perf_counter()
        rows = ds.take(job["indices"], columns=job["columns"])
        seconds = time.perf_counter() - start
        check = rows.column(job["check"]).to_pylist() if job.get("check") else []
        return {"seconds": seconds, "check": check}
    if op == "open_and_take":
        start = time.perf_counter()
        ds = lance.dataset(job["path"])
        ds.take(job["indices"], columns=job["columns"])
        return {"seconds": time.perf_counter() - start}
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    for line in sys.stdin:
        try:
            answer = _answer(json.loads(line))
        except Exception as exc:  # the answer carries the engine's message
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
