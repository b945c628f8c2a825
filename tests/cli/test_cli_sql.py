"""neve sql: DuckDB over neve scans. The filters pushed into neve's planner prune
files (planned file counts), and pushing never changes a result: every query gives
the rows DuckDB gives over the tables read whole."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from cli_support import Catalog, Runner, fill

import neve
from neve.cli.sql import explain, plan_query, run_query


@pytest.fixture()
def two(sqlite: Catalog, events: neve.Table) -> neve.Catalog:
    """db.events and db.other (the same rows), so joins have two tables."""
    fill(sqlite.catalog, "db.other")
    return sqlite.catalog


def _whole(cat: neve.Catalog, sql: str) -> pa.Table:
    """The reference: DuckDB over every row of every table, nothing pushed."""
    con = duckdb.connect()
    con.execute("CREATE SCHEMA db")
    for name in ("events", "other"):
        data = cat.load_table(f"db.{name}").scan().to_arrow()
        con.register(f"whole_{name}", data)
        con.execute(f"CREATE VIEW db.{name} AS SELECT * FROM whole_{name}")
    return con.sql(sql).to_arrow_table()


def _sorted(t: pa.Table) -> list[tuple[object, ...]]:
    return sorted((tuple(r.values()) for r in t.to_pylist()), key=repr)


QUERIES = {
    # query: the filter neve is expected to push for db.events (None: nothing)
    "select id, name from db.events where ts >= '2024-01-02T00:00:00+00:00' and id > 50": (
        '"ts" >= \'2024-01-02T00:00:00+00:00\' and "id" > 50'
    ),
    "select count(*) from db.events where day = DATE '2024-01-02'": "\"day\" = '2024-01-02'",
    "select * from db.events where day between '2024-01-01' and '2024-01-02' and ID in (7, 50)": (
        '("day" >= \'2024-01-01\' and "day" <= \'2024-01-02\') and "id" in (7, 50)'
    ),
    "select id from db.events e where e.name like 'name-1%' or e.id is null": (
        '("name" like \'name-1%\' or "id" is null)'
    ),
    "select id from db.events where amount > 10": None,  # floating point: NaN order
    "select id from db.events where id < 10.5": None,  # a decimal literal on a long column
    "select id from db.events where not (id < 100)": None,
    "select e.id, o.id from db.events e left join db.other o on e.id = o.id + 200 "
    "where o.id is null and e.id < 20": None,
    "select e.id from db.events e join db.other o on e.id = o.id where e.id < 20 and o.id > 3": (
        '"id" < 20'
    ),
    "with small as (select * from db.events where id < 12) select count(*) from small": (
        '"id" < 12'
    ),
    "select a.id from db.events a, db.events b where a.id = b.id and a.id < 9 and b.id > 7": (
        '("id" < 9) or ("id" > 7)'
    ),
    "select id from db.events where id < 30 union all select id from db.events": None,
    "select id from db.events where id in (select id from db.other where id < 8)": None,
    "select a from db.events as e(a, b) where a < 3": None,  # columns renamed by the alias
}


@pytest.mark.parametrize("sql", list(QUERIES))
def test_pushdown_never_changes_a_result(two: neve.Catalog, sql: str) -> None:
    plan, _ = plan_query(sql, two)
    pushed = {r.table: r.filter for r in plan.reads}
    assert pushed["db.events"] == QUERIES[sql]
    rows, _ = run_query(sql, two)
    assert _sorted(rows) == _sorted(_whole(two, sql))


def test_columns_read(two: neve.Catalog) -> None:
    def columns(sql: str) -> list[str] | None:
        return {r.table: r.columns for r in plan_query(sql, two)[0].reads}["db.events"]

    assert columns("select count(*) from db.events") == ["id"]
    assert columns("select name, max(amount) from db.events group by name") == ["name", "amount"]
    assert columns("select * from db.events") is None
    assert columns("select e from db.events e") is None  # the whole row as a struct
    assert columns("select a from db.events e(a)") is None


def test_pushdown_prunes_files(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    sql = "select count(*) as n from db.events where ts >= '2024-01-03T00:00:00+00:00'"
    plan = run(*sqlite.flags, "sql", sql, "--explain", "--json").json()
    assert len(plan) == 1
    read = plan[0]
    want = events.scan(filter="ts >= '2024-01-03T00:00:00+00:00'").plan_files()
    assert read["planned_files"] == len(want) == 1
    assert read["total_files"] == 3
    assert read["columns"] == ["ts"]
    got = run(*sqlite.flags, "sql", sql, "--json").json()
    assert got == [{"n": 40}]
    shown = run(*sqlite.flags, "sql", sql, "--show-reads")
    assert "1 of 3" in shown.err and "40" in shown.out
    assert explain(sql, sqlite.catalog).reads[0].planned_files == 1


def test_sql_errors(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    r = run(*sqlite.flags, "sql", "select * from db.missing")
    assert r.code == 1 and r.err.startswith("error: ") and "db.missing" in r.err
    r = run(*sqlite.flags, "sql", "select * from events")
    assert r.code == 1 and "namespace.table" in r.err
    r = run(*sqlite.flags, "sql", "select nope from db.events")
    assert r.code == 1 and "DuckDB" in r.err and len(r.err.strip().splitlines()) == 1
