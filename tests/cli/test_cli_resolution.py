"""How the command finds its catalog (flags, environment, config file, --catalog,
pyiceberg's .pyiceberg.yaml), and its errors: one line, exit codes, --debug."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import yaml
from cli_support import Catalog, Runner
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

import neve


def _config(home: Path, doc: object) -> Path:
    path = home / ".config" / "neve" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def test_flags_environment_and_config(
    run: Runner, home: Path, sqlite: Catalog, events: neve.Table, tmp_path: Path
) -> None:
    assert run(*sqlite.flags, "tables", "--json").json() == ["db.events"]
    env = {"NEVE_URI": sqlite.uri, "NEVE_WAREHOUSE": sqlite.warehouse}
    assert run("tables", "--json", env=env).json() == ["db.events"]
    other_uri, other_wh = f"sqlite:///{tmp_path}/other.db", str(tmp_path / "other-wh")
    neve.connect(other_uri, other_wh).create_namespace("elsewhere")
    _config(
        home,
        {
            "default": "main",
            "catalogs": {
                "main": {"uri": sqlite.uri, "warehouse": sqlite.warehouse},
                "other": {"uri": other_uri, "warehouse": other_wh},
            },
        },
    )
    assert run("tables", "--json").json() == ["db.events"]
    assert run("--catalog", "other", "namespaces", "--json").json() == ["elsewhere"]
    assert run("namespaces", "--json", env={"NEVE_CATALOG": "other"}).json() == ["elsewhere"]
    # the environment wins over the config file, flags over both
    assert run("namespaces", "--json", env=env).json() == ["db"]
    flags = ["--uri", other_uri, "--warehouse", other_wh]
    assert run(*flags, "namespaces", "--json", env=env).json() == ["elsewhere"]
    listed = run("catalogs", "--json").json()
    assert [(c["name"], c["default"]) for c in listed] == [("main", True), ("other", False)]
    config = home / ".config" / "neve" / "config.yaml"
    doc = yaml.safe_load(config.read_text())
    doc["catalogs"]["pg"] = {"uri": "postgresql://ana:s3cret@db.example.com/lake"}
    config.write_text(yaml.safe_dump(doc))
    shown = run("catalogs")
    assert "postgresql://ana:***@db.example.com/lake" in shown.out and "s3cret" not in shown.out
    # with --uri, --catalog is the catalog name stored in the rows
    assert run(*sqlite.flags, "--catalog", "elsewhere", "namespaces", "--json").json() == []


def test_pyiceberg_yaml(run: Runner, home: Path, tmp_path: Path) -> None:
    uri, wh = f"sqlite:///{tmp_path}/py.db", f"file://{tmp_path}/py-wh"
    cat = PyIcebergSqlCatalog("default", uri=uri, warehouse=wh)
    cat.create_namespace("shop")
    table = cat.create_table("shop.items", pa.schema([pa.field("id", pa.int64())]))
    table.append(pa.table({"id": pa.array([4, 5], pa.int64())}))
    cat.close()
    (home / ".pyiceberg.yaml").write_text(
        yaml.safe_dump({"catalog": {"default": {"uri": uri, "warehouse": wh}}})
    )
    r = run("tables")
    assert r.code == 0, r.err
    assert r.out.split() == ["shop.items"]
    assert run("scan", "shop.items", "--json").json() == [{"id": 4}, {"id": 5}]
    doc = run("describe", "shop.items", "--json").json()
    assert doc["current_snapshot_id"] == table.metadata.current_snapshot_id


def test_errors(run: Runner, home: Path, sqlite: Catalog, events: neve.Table) -> None:
    nothing = run("tables")
    assert nothing.code == 1
    assert nothing.err.startswith("error: no catalog was named and none is configured")
    assert len(nothing.err.splitlines()) == 1 and "Traceback" not in nothing.err
    _config(home, {"catalogs": {"main": {"uri": sqlite.uri, "warehouse": sqlite.warehouse}}})
    unknown = run("--catalog", "prod", "tables")
    assert unknown.code == 1 and "no catalog named 'prod'" in unknown.err
    assert "main" in unknown.err and len(unknown.err.splitlines()) == 1
    missing = run("describe", "db.nope")
    assert missing.code == 1
    assert missing.err.splitlines() == [missing.err.strip()]
    assert missing.err.startswith("error: table db.nope does not exist")
    debug = run("describe", "db.nope", "--debug")
    assert debug.code == 1
    assert "Traceback (most recent call last)" in debug.err and "NoSuchTableError" in debug.err
    assert debug.err.strip().splitlines()[-1].startswith("error: table db.nope")
    usage = run("describe")
    assert usage.code == 2 and "Missing argument" in usage.err
    assert run("no-such-verb").code == 2
    assert run("--warehouse", "/tmp/x", "tables").code == 2


def test_catalog_name_hint_in_flags(run: Runner, tmp_path: Path) -> None:
    """A database whose rows are under pyiceberg's catalog name: the error says which
    --catalog to give, and giving it shows the table."""
    uri, wh = f"sqlite:///{tmp_path}/py.db", f"file://{tmp_path}/py-wh"
    cat = PyIcebergSqlCatalog("default", uri=uri, warehouse=wh)
    cat.create_namespace("shop")
    cat.create_table("shop.items", pa.schema([pa.field("id", pa.int64())]))
    cat.close()
    flags = ["--uri", uri, "--warehouse", str(tmp_path / "py-wh")]
    r = run(*flags, "describe", "shop.items")
    assert r.code == 1
    assert "under catalog name 'default'" in r.err
    assert "--catalog default (with --uri and --warehouse)" in r.err
    assert run(*flags, "--catalog", "default", "tables", "--json").json() == ["shop.items"]
