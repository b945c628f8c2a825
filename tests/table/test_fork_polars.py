"""polars' thread pool does not survive fork(): in a process forked after polars ran
(a web server's workers forked after the app upserted at start-up, a data loader's
workers), every neve operation that runs polars raises a typed error saying how to
start workers instead of waiting forever, and leaves the table as it was; reads that
have a pyarrow path (a take) keep working there."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import neve
from forked import run_forked
from neve.errors import EngineSetupError
from neve.io.pools import POLARS, ForkGuard

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def rows(ids: range, v: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def files_under(path: str) -> set[str]:
    return {os.path.join(r, n) for r, _, ns in os.walk(path) for n in ns}


def _in_child(table: neve.Table, warehouse: str, expected: list[dict[str, object]]) -> None:
    before = (table.refresh().metadata_location, files_under(warehouse))
    refused = 0
    for what, run in [
        ("upsert", lambda: table.upsert(rows(range(5, 15), "child"))),
        ("merge", lambda: table.merge(rows(range(0, 3), "m")).when_matched_update_all().execute()),
        ("changes", lambda: table.changes()),
        ("append", lambda: table.append(rows(range(100, 101), "dup-check"))),
    ]:
        try:
            run()
        except EngineSetupError as exc:
            refused += "'spawn'" in str(exc) and "forkserver" in str(exc)
        else:
            print(f"{what} ran polars in the forked child", flush=True)
            os._exit(3)
    # the take reads its rows with pyarrow there
    taken = table.refresh().take_rows([0, 7], columns=["id", "v"]).to_pylist()
    after = (table.refresh().metadata_location, files_under(warehouse))
    os._exit(0 if refused == 4 and after == before and taken == expected else 4)


def test_a_child_forked_after_polars_ran_is_refused_not_hung(sqlite_catalog: neve.Catalog) -> None:
    table = sqlite_catalog.create_table("db.t", SCHEMA, primary_key=["id"], format_version=3)
    table.append(rows(range(0, 10), "a"))
    table.upsert(rows(range(5, 10), "b"))  # runs polars here: its pool now has threads
    assert not POLARS.forked_after_use  # this process goes on using it
    warehouse = str(sqlite_catalog.warehouse)
    expected = table.take_rows([0, 7], columns=["id", "v"]).to_pylist()
    assert run_forked(_in_child, (table, warehouse, expected), "running polars") == 0
    # the parent still runs it
    table.upsert(rows(range(0, 2), "c"))
    assert sorted(table.refresh().scan().to_arrow().to_pylist(), key=lambda r: r["id"])[:3] == [
        {"id": 0, "v": "c"},
        {"id": 1, "v": "c"},
        {"id": 2, "v": "a"},
    ]


@pytest.mark.parametrize("used", [False, True])
def test_the_guard_refuses_only_after_a_fork_that_followed_use(used: bool) -> None:
    guard = ForkGuard("a library")
    if used:
        guard.require("a test")
    assert run_forked(_require_in_child, (guard, used), "asking the guard") == 0


def _require_in_child(guard: ForkGuard, used: bool) -> None:
    try:
        guard.require("a test")
    except EngineSetupError as exc:
        os._exit(0 if used and "a library" in str(exc) else 5)
    os._exit(0 if not used else 6)
