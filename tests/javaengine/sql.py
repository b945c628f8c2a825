"""Spark SQL text for exact values: literals that reach Iceberg-Java unchanged.

Every literal names its type, so that Spark neither widens nor rounds it: numbers as
``CAST('<text>' AS <type>)`` (constant-folded before Iceberg sees the filter), NaN and
infinities by name, -0.0 with its sign, strings through their UTF-8 bytes, dates and
timestamps as typed literals (the engine's session time zone is UTC).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

__all__ = ["insert_values", "literal", "row_literal"]

_PLAIN = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.:")


def literal(value: Any, spark_type: str) -> str:
    """``value`` (neve's Python form) as a Spark SQL literal of ``spark_type``
    (``int``, ``bigint``, ``float``, ``double``, ``decimal(p,s)``, ``date``,
    ``timestamp``, ``timestamp_ntz``, ``string``, ``binary``, ``boolean``)."""
    t = spark_type.strip().lower()
    if value is None:
        return f"CAST(NULL AS {t.upper()})"
    if t == "boolean":
        return "TRUE" if value else "FALSE"
    if t in ("int", "bigint", "smallint", "tinyint"):
        return f"CAST('{int(value)}' AS {t.upper()})"
    if t in ("float", "double"):
        v = float(value)
        if math.isnan(v):
            text = "NaN"
        elif math.isinf(v):
            text = "Infinity" if v > 0 else "-Infinity"
        else:
            text = repr(v)  # shortest round trip; keeps the sign of -0.0
        return f"CAST('{text}' AS {t.upper()})"
    if t.startswith("decimal"):
        return f"CAST('{Decimal(value)}' AS {t.upper()})"
    if t == "date":
        if isinstance(value, int):
            value = dt.date(1970, 1, 1) + dt.timedelta(days=value)
        return f"DATE'{value.isoformat()}'"
    if t in ("timestamp", "timestamp_ntz"):
        if isinstance(value, dt.datetime):
            if value.tzinfo is not None:
                value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        else:
            value = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(value))
        text = value.isoformat(sep=" ", timespec="microseconds")
        return f"{'TIMESTAMP_NTZ' if t == 'timestamp_ntz' else 'TIMESTAMP'}'{text}'"
    if t == "string":
        s = str(value)
        if all(c in _PLAIN for c in s):
            return f"'{s}'"
        return f"decode(unhex('{s.encode('utf-8').hex()}'), 'UTF-8')"
    if t == "binary":
        return f"X'{bytes(value).hex()}'"
    raise ValueError(f"no literal for Spark type {spark_type!r}")


def row_literal(row: Sequence[Any], types: Sequence[str]) -> str:
    """One ``(v1, v2, ...)`` tuple of a VALUES list."""
    return "(" + ", ".join(literal(v, t) for v, t in zip(row, types, strict=True)) + ")"


def insert_values(table: str, rows: Iterable[Sequence[Any]], types: Sequence[str]) -> str:
    """``INSERT INTO table VALUES ...`` for rows given in the table's column order."""
    return f"INSERT INTO {table} VALUES " + ", ".join(row_literal(r, types) for r in rows)
