"""A take of few rows from several data files reads their pages at once and decodes
the pages of all files together where their columns splice alike
(arrow/take_files.py, pages.read_positions_of_files). The oracle is a full scan of
the same snapshot: every column type with nulls and edge values, files written before
and after a schema change (columns that splice apart), deletion vectors, ids asked
twice, and the first and later reads of each file (planned row group by row group,
then for the whole file)."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neve
import neve.arrow.pages as pages
from budget import examples

pytestmark = pytest.mark.property

UTC = dt.timezone.utc

TYPES: dict[str, pa.DataType] = {
    "b": pa.bool_(),
    "i": pa.int32(),
    "l": pa.int64(),
    "f": pa.float32(),
    "d": pa.float64(),
    "s": pa.string(),
    "bi": pa.binary(),
    "dec": pa.decimal128(20, 3),
    "dt": pa.date32(),
    "ts": pa.timestamp("us", tz="UTC"),
    "st": pa.struct([("a", pa.int64()), ("c", pa.string())]),
    "li": pa.list_(pa.int64()),
    "m": pa.map_(pa.string(), pa.float64()),
}


def _value(name: str, i: int, rnd: np.random.Generator) -> Any:
    if rnd.random() < 0.15:
        return None
    k = int(rnd.integers(0, 1 << 30))
    values: dict[str, Any] = {
        "b": bool(k & 1),
        "i": [-(2**31), 2**31 - 1, 0, k][k % 4],
        "l": [-(2**63), 2**63 - 1, -1, k * 7919][k % 4],
        "f": [math.nan, -0.0, math.inf, k / 3][k % 4],
        "d": [math.nan, -0.0, 0.0, -math.inf, k / 7][k % 5],
        "s": ["", "é" * (k % 7), "x" * (k % 300)][k % 3] + str(i),
        "bi": bytes([k % 256]) * (k % 40),
        "dec": Decimal(k - (1 << 29)) / 1000,
        "dt": dt.date(1900, 1, 1) + dt.timedelta(days=k % 80_000),
        "ts": dt.datetime(1960, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=k * 1_000_003),
        "st": {"a": k, "c": None if k % 5 == 0 else "v" * (k % 9)},
        "li": [k + j for j in range(k % 5)],
        "m": {f"k{j}": j / 2 for j in range(k % 3)},
    }
    return values[name]


def _rows(names: list[str], start: int, n: int, seed: int) -> pa.Table:
    rnd = np.random.default_rng(seed)
    arrays = {
        name: pa.array([_value(name, start + i, rnd) for i in range(n)], TYPES[name])
        for name in names
    }
    return pa.table({"id": pa.array(np.arange(start, start + n), pa.int64()), **arrays})


def canon(v: Any) -> Any:
    if isinstance(v, float):
        return ("nan",) if math.isnan(v) else (v, math.copysign(1.0, v))
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [canon(x) for x in v]
    return v


def _check(table: neve.Table, asked: list[int]) -> None:
    full = table.scan(columns=None).to_arrow()
    ids = table.scan(columns=["_row_id"]).to_arrow().column("_row_id").to_pylist()
    at = {rid: i for i, rid in enumerate(ids)}
    live = [i for i in asked if i in at]
    got = table.take(live, missing="skip")
    assert got.schema == full.schema
    expected = full.take(pa.array([at[i] for i in live], pa.int64()))
    assert canon(got.to_pylist()) == canon(expected.to_pylist())
    assert canon(table.take(asked, missing="skip").to_pylist()) == canon(got.to_pylist())
    places = [at[i] for i in live]
    rows = table.take_rows(places, columns=["id"])
    assert rows.column("id").to_pylist() == expected.column("id").to_pylist()


@settings(
    max_examples=examples(12, 200),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    names=st.lists(st.sampled_from(sorted(TYPES)), min_size=1, max_size=5, unique=True),
    seed=st.integers(0, 2**31),
    files=st.integers(2, 4),
    data=st.data(),
)
def test_takes_from_several_files_equal_the_scan(
    sqlite_catalog: neve.Catalog, names: list[str], seed: int, files: int, data: st.DataObject
) -> None:
    props = {
        "write.parquet.layout": "random-access",
        "write.parquet.page-row-limit": str(data.draw(st.sampled_from([3, 50, 20_000]))),
        "write.parquet.row-group-size-bytes": "4096",
        "write.delete.mode": "merge-on-read",
    }
    first = _rows(names, 0, 1, seed)
    table = sqlite_catalog.create_table(
        f"db.t{uuid.uuid4().hex}", first.schema, properties=props, format_version=3
    )
    written = 0
    for k in range(files):
        n = data.draw(st.integers(1, 300), label=f"rows of file {k}")
        table.append(_rows(names, written, n, seed + k))
        written += n
        if k == 0 and data.draw(st.booleans(), label="add a column"):
            with table.update_schema() as u:
                u.add_column("later", "long")
            table = table.refresh()
    if data.draw(st.booleans(), label="delete"):
        lo = data.draw(st.integers(0, written - 1))
        table.delete(f"id >= {lo} and id < {lo + data.draw(st.integers(1, 40))}")
    for _ in range(3):  # the first read of each file, then later ones
        asked = data.draw(st.lists(st.integers(0, written + 2), min_size=1, max_size=40))
        _check(table, asked)


def test_pages_of_several_files_are_decoded_together(
    sqlite_catalog: neve.Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows from three files of one schema are decoded in one pyarrow decode, their
    columns' pages holding the same rows."""
    names = ["l", "s", "d"]
    table = sqlite_catalog.create_table(
        "db.t",
        _rows(names, 0, 1, 1).schema,
        properties={"write.parquet.layout": "random-access", "write.parquet.page-row-limit": "5"},
        format_version=3,
    )
    for k in range(3):
        table.append(_rows(names, 100 * k, 100, k))
    decodes = []
    real = pages.decode
    monkeypatch.setattr(pages, "decode", lambda *a: decodes.append(a) or real(*a))
    asked = [5, 150, 299, 42, 150, 210]
    for _ in range(3):
        decodes.clear()
        got = table.take(asked, columns=["id", "l", "s", "d"])
        full = table.scan(columns=["id", "l", "s", "d", "_row_id"]).to_arrow()
        at = {rid: i for i, rid in enumerate(full.column("_row_id").to_pylist())}
        expected = full.take(pa.array([at[i] for i in asked], pa.int64())).drop(["_row_id"])
        assert canon(got.to_pylist()) == canon(expected.to_pylist())
        # every column's pages hold five rows: one decode for the three files
        assert len(decodes) == 1


def test_a_take_of_many_bytes_decodes_each_file_on_both_cores(
    sqlite_catalog: neve.Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past _HALVES_FROM bytes read (parquet-java's 1 MiB pages) a take of few rows
    decodes file by file, units in halves on threads, and still gives the scan's rows
    in the order asked."""
    names = ["l", "s", "d"]
    table = sqlite_catalog.create_table(
        "db.t",
        _rows(names, 0, 1, 1).schema,
        properties={
            "write.parquet.layout": "random-access",
            "write.parquet.page-row-limit": "5",
            "write.parquet.row-group-size-bytes": "2048",
        },
        format_version=3,
    )
    for k in range(3):
        table.append(_rows(names, 100 * k, 100, k))
    monkeypatch.setattr(pages, "_HALVES_FROM", 0)
    monkeypatch.setattr(pages, "_PARALLEL_FROM", 0)
    decodes = []
    real = pages.decode
    monkeypatch.setattr(pages, "decode", lambda *a: decodes.append(a) or real(*a))
    asked = [5, 150, 299, 42, 150, 210, 7, 61]
    got = table.take(asked, columns=["id", "l", "s", "d"])
    full = table.scan(columns=["id", "l", "s", "d", "_row_id"]).to_arrow()
    at = {rid: i for i, rid in enumerate(full.column("_row_id").to_pylist())}
    expected = full.take(pa.array([at[i] for i in asked], pa.int64())).drop(["_row_id"])
    assert canon(got.to_pylist()) == canon(expected.to_pylist())
    assert len(decodes) > 3  # not one decode for the three files: each its own, in halves
