"""``neve take`` (rows by row id or position) and ``neve files --pages`` (the physical
layout of the data files) through the installed command, compared with the Python
API."""

from __future__ import annotations

import pyarrow as pa
from cli_support import Catalog, Runner

import neve


def _table(sqlite: Catalog) -> neve.Table:
    sqlite.catalog.create_namespace_if_not_exists("db")
    t = sqlite.catalog.create_table(
        "db.rows",
        pa.schema([("id", pa.int64()), ("name", pa.string())]),
        properties={"write.parquet.layout": "random-access", "write.delete.mode": "merge-on-read"},
        format_version=3,
    )
    t.append(pa.table({"id": list(range(3000)), "name": [f"n{i}" * 30 for i in range(3000)]}))
    t.delete("id < 10")
    return t.refresh()


def test_take_by_row_id_and_position(run: Runner, sqlite: Catalog) -> None:
    t = _table(sqlite)
    got = run(*sqlite.flags, "take", "db.rows", "--row-ids", "2999,17,1500", "--json")
    assert got.code == 0, got.err
    assert [r["id"] for r in got.json()] == [2999, 17, 1500]
    assert got.json()[0]["name"] == "n2999" * 30
    # a deleted id fails with the neve error's exit code, or is left out when asked
    gone = run(*sqlite.flags, "take", "db.rows", "--row-ids", "3,17", "--json")
    assert gone.code == 1 and "--skip-missing" in gone.err
    kept = run(*sqlite.flags, "take", "db.rows", "--row-ids", "3,17", "--skip-missing", "--json")
    assert [r["id"] for r in kept.json()] == [17]
    places = run(*sqlite.flags, "take", "db.rows", "--positions", "0,5", "-c", "id", "--json")
    want = t.take_rows([0, 5], columns=["id"]).to_pylist()
    assert places.json() == want
    usage = run(*sqlite.flags, "take", "db.rows")
    assert usage.code == 2


def test_files_pages(run: Runner, sqlite: Catalog) -> None:
    _table(sqlite)
    got = run(*sqlite.flags, "files", "db.rows", "--pages", "--json")
    assert got.code == 0, got.err
    rows = got.json()
    assert {r["column"] for r in rows} == {"id", "name"}
    assert all(r["offset_index"] and r["column_index"] for r in rows)
    by_column = {r["column"]: r for r in rows}
    # the random-access layout: ~8 KiB pages, no dictionary
    assert by_column["name"]["dictionary"] is False
    assert by_column["name"]["pages"] > 1
    assert by_column["name"]["page_bytes_max"] <= 16 * 1024
