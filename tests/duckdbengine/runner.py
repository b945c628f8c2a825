"""Run with the reference DuckDB's own Python (``.venv-duckdb/bin/python``, see
tests/duckdbengine/__init__.py): reads ``{"setup": [...], "sql": "..."}`` on stdin,
loads the avro, httpfs and iceberg extensions from their PyPI packages, runs the setup
statements and the query, and prints the query's rows as JSON. Values that JSON lacks
are given as text: decimals, dates and times in ISO form, bytes as hex, NaN and the
infinities as "nan", "inf", "-inf". Exit code 3: DuckDB refused a statement."""

from __future__ import annotations

import datetime as dt
import decimal
import glob
import importlib
import json
import math
import os
import sys
from typing import Any

import duckdb

EXTENSIONS = ("avro", "httpfs", "iceberg")


def _value(v: Any) -> Any:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (dt.date, dt.datetime, dt.time)):
        return v.isoformat()
    if isinstance(v, dt.timedelta):
        return v.total_seconds()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, dict):
        return {k: _value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_value(x) for x in v]
    return v


def main() -> None:
    job = json.load(sys.stdin)
    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    for name in EXTENSIONS:
        package = importlib.import_module(f"duckdb_extension_{name}")
        root = os.path.dirname(package.__file__ or "")
        (path,) = glob.glob(os.path.join(root, "extensions", "*", f"{name}.duckdb_extension"))
        con.execute(f"LOAD '{path}'")
    try:
        for statement in job["setup"]:
            con.execute(statement)
        cursor = con.execute(job["sql"])
        names = [d[0] for d in cursor.description or []]
        rows = [dict(zip(names, map(_value, r), strict=True)) for r in cursor.fetchall()]
    except duckdb.Error as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(3)
    json.dump(rows, sys.stdout)


if __name__ == "__main__":
    main()
