"""Rows of every column kind with nulls and edge values (NaN, -0.0, infinities, integer
extremes, dates before 1970, long and non-ASCII strings, nested structs, lists and
maps), for the tests of the page reader and of takes; and an exact comparison of
their values."""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa

UTC = dt.timezone.utc

TYPES: dict[str, pa.DataType] = {
    "b": pa.bool_(),
    "i": pa.int32(),
    "l": pa.int64(),
    "f": pa.float32(),
    "d": pa.float64(),
    "s": pa.large_string(),
    "bi": pa.binary(),
    "fx": pa.binary(4),
    "dec": pa.decimal128(20, 3),
    "dt": pa.date32(),
    "ts": pa.timestamp("us", tz="UTC"),
    "st": pa.struct([("a", pa.int64()), ("b", pa.struct([("c", pa.string())]))]),
    "li": pa.list_(pa.int64()),
    "ls": pa.list_(pa.struct([("x", pa.int32()), ("y", pa.string())])),
    "m": pa.map_(pa.string(), pa.float64()),
}


def value(name: str, i: int, rnd: np.random.Generator) -> Any:
    """A value of column ``name`` for row ``i``, edge values included."""
    if rnd.random() < 0.15:
        return None
    k = int(rnd.integers(0, 1 << 30))
    if name == "b":
        return bool(k & 1)
    if name == "i":
        return [-(2**31), 2**31 - 1, 0, k][k % 4]
    if name == "l":
        return [-(2**63), 2**63 - 1, -1, k * 7919][k % 4]
    if name in ("f", "d"):
        return [math.nan, -0.0, 0.0, math.inf, -math.inf, k / 3][k % 6]
    if name == "s":
        return ["", "é" * (k % 7), "x" * (k % 300), "\U0010ffff" * 3][k % 4] + str(i)
    if name == "bi":
        return bytes([k % 256]) * (k % 40)
    if name == "fx":
        return struct.pack(">I", k)
    if name == "dec":
        return Decimal(k - (1 << 29)) / 1000
    if name == "dt":
        return dt.date(1900, 1, 1) + dt.timedelta(days=k % 80_000)
    if name == "ts":
        return dt.datetime(1960, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=k * 1_000_003)
    if name == "st":
        return {"a": k, "b": None if k % 5 == 0 else {"c": "v" * (k % 9)}}
    if name == "li":
        return [k + j for j in range(k % 5)]
    if name == "ls":
        return [{"x": j, "y": None if j % 2 else str(k)} for j in range(k % 4)]
    return {f"k{j}": j / 2 for j in range(k % 3)}


def edge_table(names: list[str], n: int, seed: int, start: int = 0) -> pa.Table:
    """``n`` rows of the columns ``names`` (of :data:`TYPES`) and an ``id`` column
    counting from ``start``."""
    rnd = np.random.default_rng(seed)
    arrays = {
        name: pa.array([value(name, start + i, rnd) for i in range(n)], TYPES[name])
        for name in names
    }
    return pa.table({"id": pa.array(np.arange(start, start + n), pa.int64()), **arrays})


def canon(v: Any) -> Any:
    """A value that compares exactly: NaN equal to NaN, -0.0 apart from 0.0."""
    if isinstance(v, float):
        return ("nan",) if math.isnan(v) else (v, math.copysign(1.0, v))
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [canon(x) for x in v]
    return v
