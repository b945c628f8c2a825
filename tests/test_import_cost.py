"""What ``import neve`` brings with it: every process that uses neve pays for it (the
command, Spark's Python workers, each writer process), so what only one kind of catalog
or one command needs is imported where it is used."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: Imported only by what needs them: httpx (and the click, rich and pygments its own
#: command line imports) by the REST catalog's client, pyspark by neve.spark, the
#: server by ``neve serve``, botocore by the server's vended credentials, polars (~165 ms)
#: by key lookups, row-level changes, merge engines and changelogs, SQLAlchemy (~0.2 s)
#: by the first SQL catalog.
NOT_ON_IMPORT = [
    "httpx",
    "click",
    "rich",
    "pygments",
    "pyspark",
    "neve.server",
    "botocore",
    "polars",
    "sqlalchemy",
]


def _modules_after(statement: str) -> set[str]:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            f"{statement}; import json, sys; print(json.dumps(list(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_neve_leaves_what_it_does_not_need() -> None:
    loaded = _modules_after("import neve")
    assert "neve.catalog.rest" in loaded  # the REST catalog class is still importable
    assert sorted(m for m in NOT_ON_IMPORT if m in loaded) == []


def test_a_sql_catalog_brings_sqlalchemy(tmp_path: Path) -> None:
    for statement in (
        f"import neve; neve.connect('sqlite:///{tmp_path}/c.db', warehouse='{tmp_path}/wh')",
        "import neve; neve.SqlCatalog",
        "from neve.catalog import SqlCatalog",
    ):
        assert "sqlalchemy" in _modules_after(statement), statement


def test_a_rest_catalog_client_imports_httpx_when_made() -> None:
    loaded = _modules_after(
        "from neve.catalog.rest_http import RestHttp; RestHttp('http://127.0.0.1:9', {})"
    )
    assert "httpx" in loaded


def test_planning_and_reading_a_table_leave_polars_out(tmp_path: Path) -> None:
    """Manifests are decoded by polars-avro's native reader, loaded without its package
    (whose ``__init__`` imports polars): a process that plans and reads a table with more
    manifest entries than fastavro takes (so the native reader runs) never imports
    polars."""
    script = f"""
import sys
import pyarrow as pa
import neve
from neve.planning import manifest_columnar
calls = []
read_arrow = manifest_columnar.read_arrow
manifest_columnar.read_arrow = lambda data: calls.append(1) or read_arrow(data)
cat = neve.connect("sqlite:///{tmp_path}/c.db", warehouse="{tmp_path}/wh")
cat.create_namespace("n")
t = cat.create_table("n.t", pa.schema([("id", pa.int64()), ("p", pa.int32())]), partition_by=["p"])
t.append(pa.table({{"id": list(range(40)), "p": [i % 20 for i in range(40)]}}))
t = cat.load_table("n.t")
assert len(t.scan(filter="id < 30").plan_files()) == 20
assert t.scan().to_arrow().num_rows == 40
assert calls, "the native reader did not run"
print("polars" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


#: What the command imports only for the verb that needs it: the REST server and
#: uvicorn for ``neve serve``, sqlglot (and DuckDB) for ``neve sql`` (~0.27 s of every
#: other command's start together).
NOT_ON_COMMAND_START = ["neve.server", "uvicorn", "sqlglot", "duckdb", "neve.cli.sql"]


def test_the_command_leaves_the_server_and_sql_to_their_verbs() -> None:
    loaded = _modules_after("import neve.cli.main")
    assert "neve.cli.serve" in loaded and "click" in loaded  # the verbs are registered
    assert sorted(m for m in NOT_ON_COMMAND_START if m in loaded) == []
    with_sql = _modules_after("from neve.cli.main import main; import neve.cli.sql")
    assert "sqlglot" in with_sql  # the guard can fail: the verb's module brings it
