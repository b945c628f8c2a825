"""A take of few rows from several data files reads their pages at once and decodes
the pages of all files together where their columns splice alike
(arrow/take_files.py, pages.read_positions_of_files). The oracle is a full scan of
the same snapshot: every column type with nulls and edge values, files written before
and after a schema change (columns that splice apart), deletion vectors, ids asked
twice, and the first and later reads of each file (planned row group by row group,
then for the whole file)."""

from __future__ import annotations

import os
import uuid

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neve
import neve.arrow.pages as pages
import neve.arrow.take as take
from budget import examples
from edge_rows import TYPES, canon, edge_table
from forked import run_forked

pytestmark = pytest.mark.property


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
    first = edge_table(names, 1, seed)
    table = sqlite_catalog.create_table(
        f"db.t{uuid.uuid4().hex}", first.schema, properties=props, format_version=3
    )
    written = 0
    for k in range(files):
        n = data.draw(st.integers(1, 300), label=f"rows of file {k}")
        table.append(edge_table(names, n, seed + k, start=written))
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
        edge_table(names, 1, 1).schema,
        properties={"write.parquet.layout": "random-access", "write.parquet.page-row-limit": "5"},
        format_version=3,
    )
    for k in range(3):
        table.append(edge_table(names, 100, k, start=100 * k))
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
        edge_table(names, 1, 1).schema,
        properties={
            "write.parquet.layout": "random-access",
            "write.parquet.page-row-limit": "5",
            "write.parquet.row-group-size-bytes": "2048",
        },
        format_version=3,
    )
    for k in range(3):
        table.append(edge_table(names, 100, k, start=100 * k))
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


def _take_in_child(table: neve.Table, asked: list[int], expected: list[int]) -> None:
    got = table.take(asked, columns=["id"]).column("id").to_pylist()
    os._exit(0 if got == expected else 3)


def test_a_process_forked_after_a_take_takes(sqlite_catalog: neve.Catalog) -> None:
    """The take's pool of file reads (many rows from several files) is the child's own
    after a fork: the parent's, copied without its threads, would run nothing."""
    table = sqlite_catalog.create_table(
        "db.t", edge_table(["l"], 1, 1).schema, properties={}, format_version=3
    )
    for k in range(3):
        table.append(edge_table(["l"], 400, k, start=400 * k))
    asked = list(range(0, 1200, 3))  # more rows than a take reads file by file
    expected = table.take(asked, columns=["id"]).column("id").to_pylist()
    assert take._files_pool.started  # the parent read the files in its pool
    assert run_forked(_take_in_child, (table, asked, expected), "taking rows") == 0
