"""Appends to a primary-key table keep keys unique: a key the table or the batch holds
already is refused with a typed error naming it, nothing written; also when a concurrent
commit added the key first. ``write.primary-key.check=false`` turns the check off for
trusted loads."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

import neve
from neve.errors import DuplicateKeyError, ValidationError

SCHEMA = pa.schema(
    [
        pa.field("region", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.float64()),
    ]
)


def rows(keys: list[tuple[str, int]], v: float = 0.0) -> pa.Table:
    return pa.table(
        {
            "region": [k[0] for k in keys],
            "id": [k[1] for k in keys],
            "v": [v] * len(keys),
        },
        schema=SCHEMA,
    )


def files_under(path: Path) -> set[str]:
    return {os.path.join(r, n) for r, _, ns in os.walk(path) for n in ns}


@pytest.fixture
def table(sqlite_catalog: neve.Catalog) -> neve.Table:
    t = sqlite_catalog.create_table(
        "db.t", SCHEMA, primary_key=["region", "id"], partition_by=["region"]
    )
    t.append(rows([(r, i) for r in ("eu", "us") for i in range(50)]))
    return t


def unchanged(t: neve.Table, catalog: neve.Catalog) -> tuple[str, set[str]]:
    return t.refresh().metadata_location, files_under(Path(catalog.warehouse))


def test_existing_keys_are_refused_by_name(table: neve.Table, sqlite_catalog: neve.Catalog) -> None:
    before = unchanged(table, sqlite_catalog)
    with pytest.raises(DuplicateKeyError, match=r"2 key\(s\).*exist in the table") as err:
        table.append(rows([("eu", 3), ("us", 49), ("eu", 50)]))
    assert "(eu, 3)" in str(err.value) and "(us, 49)" in str(err.value)
    assert "upsert()" in str(err.value) and "write.primary-key.check=false" in str(err.value)
    assert unchanged(table, sqlite_catalog) == before
    table.append(rows([("eu", 50), ("ap", 3)]))  # new keys go in
    assert table.refresh().scan().to_arrow().num_rows == 102


def test_keys_twice_in_the_batch_and_null_keys_are_refused(
    table: neve.Table, sqlite_catalog: neve.Catalog
) -> None:
    before = unchanged(table, sqlite_catalog)
    with pytest.raises(DuplicateKeyError, match="more than once in the rows to append"):
        table.append(rows([("ap", 1), ("ap", 2), ("ap", 1)]))
    with pytest.raises(ValidationError, match="null primary-key column"):
        table.append(pa.table({"region": ["ap"], "id": pa.array([None], pa.int64()), "v": [1.0]}))
    assert unchanged(table, sqlite_catalog) == before


def test_a_source_of_other_integer_width_is_compared_by_value(table: neve.Table) -> None:
    narrow = pa.table({"region": ["eu"], "id": pa.array([7], pa.int32()), "v": [1.0]})
    with pytest.raises(DuplicateKeyError, match=r"\(eu, 7\)"):
        table.append(narrow)


def test_the_check_sees_deleted_rows_as_gone(table: neve.Table) -> None:
    table.set_properties({"write.delete.mode": "merge-on-read"})
    table.delete("region = 'eu' and id < 5")
    table.append(rows([("eu", 1), ("eu", 2)]))  # their old rows are deleted
    assert table.refresh().scan().to_arrow().num_rows == 100 - 5 + 2


def test_the_check_can_be_turned_off_for_trusted_loads(table: neve.Table) -> None:
    table.set_properties({"write.primary-key.check": "false"})
    table.append(rows([("eu", 3)]))
    assert table.refresh().scan(filter="region = 'eu' and id = 3").to_arrow().num_rows == 2
    with pytest.raises(ValidationError, match=r"write\.primary-key\.check"):
        table.set_properties({"write.primary-key.check": "maybe"})


def test_a_key_a_concurrent_commit_added_is_refused(
    table: neve.Table, sqlite_catalog: neve.Catalog
) -> None:
    catalog = table.catalog
    stale = catalog.load_table("db.t")
    table.append(rows([("ap", 1)]))
    before = unchanged(table, sqlite_catalog)
    with pytest.raises(DuplicateKeyError, match="added by a concurrent commit"):
        stale.append(rows([("ap", 1), ("ap", 2)]))
    assert unchanged(table, sqlite_catalog) == before
    stale.refresh().append(rows([("ap", 2)]))  # a key nobody else added goes in
    assert table.refresh().scan().to_arrow().num_rows == 102


def test_tables_without_a_primary_key_take_any_rows(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.plain", SCHEMA)
    t.append(rows([("eu", 1), ("eu", 1)]))
    t.append(rows([("eu", 1)]))
    assert t.refresh().scan().to_arrow().num_rows == 3


def test_a_cached_key_column_never_hides_a_delete(sqlite_catalog: neve.Catalog) -> None:
    # the check probes one key column per file, cached as stored (deletes not
    # applied); a probe hit must go through the exact, delete-aware read
    from neve.arrow.keys import key_column_cache

    t = sqlite_catalog.create_table(
        "db.t", SCHEMA, primary_key=["id"], properties={"write.delete.mode": "merge-on-read"}
    )
    t.append(rows([("eu", i) for i in range(0, 100, 2)]))
    key_column_cache.clear()
    t.refresh().append(rows([("eu", 51)]))  # inside the file's bounds: the file is probed
    assert len(key_column_cache) == 1
    t.refresh().delete("id = 4")
    t.refresh().append(rows([("eu", 4)]))  # the cached column still holds 4, deleted
    with pytest.raises(DuplicateKeyError, match=r"1 key\(s\).*: 6"):
        t.refresh().append(rows([("eu", 6), ("eu", 53)]))
    got = sorted(t.refresh().scan().to_arrow().column("id").to_pylist())
    assert got == sorted([i for i in range(0, 100, 2)] + [51])


def test_the_key_column_cache_keeps_to_its_bound() -> None:
    import polars as pl

    from neve.arrow.keys import KeyColumnCache

    loads: list[str] = []

    def loader(name: str) -> pl.Series:
        loads.append(name)
        return pl.Series(name, list(range(10)), dtype=pl.Int64)  # 80 bytes

    cache = KeyColumnCache(max_bytes=100)
    cache.get(("a", 1, 1, "long"), lambda: loader("a"))
    cache.get(("a", 1, 1, "long"), lambda: loader("a"))
    assert loads == ["a"] and len(cache) == 1
    cache.get(("b", 1, 1, "long"), lambda: loader("b"))  # evicts a
    assert len(cache) == 1
    cache.get(("a", 1, 1, "long"), lambda: loader("a"))
    assert loads == ["a", "b", "a"]
    off = KeyColumnCache(max_bytes=0)
    assert off.get(("c", 1, 1, "long"), lambda: loader("c")).len() == 10 and len(off) == 0
