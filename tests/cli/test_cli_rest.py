"""The ``neve`` command against a REST catalog: ``--uri http://...`` (with the
warehouse) and ``NEVE_URI`` reach the tables a ``neve serve`` serves; ``neve serve``
says where it listens and how Spark, pyiceberg and DuckDB connect to it."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from cli_support import Runner, fill

import neve
from restserver import NeveServer

pytestmark = pytest.mark.rest


def test_verbs_work_against_a_rest_uri(run: Runner, rest_server: NeveServer) -> None:
    warehouse = f"cli{uuid.uuid4().hex[:8]}"
    cat = neve.connect(rest_server.url, warehouse=warehouse)
    table = fill(cat)
    flags = ["--uri", rest_server.url, "--warehouse", warehouse]
    tables = run(*flags, "tables", "db", "--json")
    assert tables.code == 0, tables.err
    assert tables.json() == ["db.events"]
    count = run(*flags, "sql", "select count(*) as n from db.events", "--json")
    assert count.code == 0, count.err
    assert count.json() == [{"n": table.refresh().scan().count()}]
    # NEVE_URI (and NEVE_WAREHOUSE) name the REST catalog too
    env = {"NEVE_URI": rest_server.url, "NEVE_WAREHOUSE": warehouse}
    renamed = run("rename", "db.events", "db.renamed", env=env)
    assert renamed.code == 0, renamed.err
    assert cat.list_tables("db") == [("db", "renamed")]
    cat.dispose()


def test_serve_says_where_and_how_to_connect(rest_server: NeveServer) -> None:
    log = Path(rest_server.log).read_text()
    # one line per setting, not wrapped: they are copied from the terminal
    assert f"--conf spark.sql.catalog.neve.uri={rest_server.url} \\" in [
        line.strip() for line in log.splitlines()
    ]
    text = " ".join(log.split())
    assert f"neve REST catalog at {rest_server.url}" in text
    assert "spark.sql.catalog.neve.type=rest" in text
    assert 'type="rest"' in text  # pyiceberg
    assert "TYPE ICEBERG" in text  # DuckDB
