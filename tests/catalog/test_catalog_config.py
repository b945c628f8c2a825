"""Catalog resolution: neve.connect() with no arguments or a name, the environment,
neve's config file and pyiceberg's .pyiceberg.yaml (with a table pyiceberg made)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

import neve
from neve.catalog import FilesystemCatalog, SqlCatalog
from neve.catalog.config import configured_catalogs, neve_config_path, register_catalog
from neve.errors import (
    CatalogNotConfiguredError,
    NeveIOError,
    NoSuchCatalogError,
    ValidationError,
)


def _write(path: Path, doc: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def _sql(tmp_path: Path, key: str) -> dict[str, str]:
    return {"uri": f"sqlite:///{tmp_path}/{key}.db", "warehouse": str(tmp_path / f"wh-{key}")}


def test_nothing_configured(home: Path) -> None:
    with pytest.raises(CatalogNotConfiguredError, match="NEVE_URI") as err:
        neve.connect()
    assert str(home / ".config" / "neve" / "config.yaml") in str(err.value)


def test_environment(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEVE_URI", f"sqlite:///{tmp_path}/env.db")
    monkeypatch.setenv("NEVE_WAREHOUSE", str(tmp_path / "wh"))
    cat = neve.connect()
    assert isinstance(cat, SqlCatalog)
    assert (cat.uri, cat.warehouse, cat.name) == (
        f"sqlite:///{tmp_path}/env.db",
        str(tmp_path / "wh"),
        "neve",
    )
    monkeypatch.setenv("NEVE_CATALOG", "rows")
    assert neve.connect().name == "rows"  # with NEVE_URI: the name stored in the rows
    # the environment wins over a config file
    _write(neve_config_path(), {"default": "a", "catalogs": {"a": _sql(tmp_path, "a")}})
    assert neve.connect().uri == f"sqlite:///{tmp_path}/env.db"  # type: ignore[attr-defined]


def test_config_file(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(
        home / ".config" / "neve" / "config.yaml",
        {
            "default": "dev",
            "catalogs": {
                "dev": _sql(tmp_path, "dev"),
                "prod": {**_sql(tmp_path, "prod"), "name": "lake", "sqlite.busy-timeout-ms": 5000},
                "local": {"uri": str(tmp_path / "folder")},
            },
        },
    )
    assert neve_config_path() == path
    dev = neve.connect()
    assert isinstance(dev, SqlCatalog) and dev.uri.endswith("/dev.db") and dev.name == "neve"
    prod = neve.connect("prod")
    assert isinstance(prod, SqlCatalog)
    assert (prod.name, prod.properties["sqlite.busy-timeout-ms"]) == ("lake", "5000")
    assert neve.connect("prod", name="other").name == "other"
    assert isinstance(neve.connect("local"), FilesystemCatalog)
    monkeypatch.setenv("NEVE_CATALOG", "prod")
    assert neve.connect().name == "lake"
    monkeypatch.delenv("NEVE_CATALOG")
    with pytest.raises(NoSuchCatalogError) as err:
        neve.connect("staging")
    for known in ("dev", "prod", "local", str(path)):
        assert known in str(err.value)
    # XDG_CONFIG_HOME moves the file; NEVE_CONFIG names one
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert neve_config_path() == tmp_path / "xdg" / "neve" / "config.yaml"
    with pytest.raises(CatalogNotConfiguredError):
        neve.connect()
    other = _write(tmp_path / "elsewhere.yaml", {"catalogs": {"only": _sql(tmp_path, "only")}})
    monkeypatch.setenv("NEVE_CONFIG", str(other))
    assert neve.connect().uri.endswith("/only.db")  # type: ignore[attr-defined]  # the only one


def test_default_must_exist_and_several_need_one(home: Path, tmp_path: Path) -> None:
    path = neve_config_path()
    _write(path, {"default": "gone", "catalogs": {"a": _sql(tmp_path, "a")}})
    with pytest.raises(NoSuchCatalogError, match="gone"):
        neve.connect()
    _write(path, {"catalogs": {"a": _sql(tmp_path, "a"), "b": _sql(tmp_path, "b")}})
    with pytest.raises(CatalogNotConfiguredError, match=r"a .*b"):
        neve.connect()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("catalogs: [1, 2]", "must map names"),
        ("catalogs: {a: {warehouse: /x}}", "has no uri"),
        ("catalogs: {a: {uri: x, opts: {k: v}}}", "single value"),
        ("[unclosed", "not valid YAML"),
        ("- 1", "must hold a mapping"),
    ],
)
def test_bad_config_files(home: Path, text: str, match: str) -> None:
    path = neve_config_path()
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(ValidationError, match=match) as err:
        neve.connect()
    assert str(path) in str(err.value)


def test_names_and_paths(home: Path, tmp_path: Path) -> None:
    """A bare word is a configured name; an existing folder of that name that is not
    configured stays a folder; both at once is refused; ./word is always a path."""
    (home / "lake").mkdir()
    (home / "both").mkdir()
    _write(
        neve_config_path(),
        {"catalogs": {"both": _sql(tmp_path, "both"), "named": _sql(tmp_path, "named")}},
    )
    lake = neve.connect("lake")
    assert isinstance(lake, FilesystemCatalog) and lake.warehouse == str(home / "lake")
    assert isinstance(neve.connect("named"), SqlCatalog)
    with pytest.raises(ValidationError, match="both a configured catalog"):
        neve.connect("both")
    assert isinstance(neve.connect("./both"), FilesystemCatalog)
    assert isinstance(neve.connect(Path("both")), FilesystemCatalog)
    with pytest.raises(NoSuchCatalogError, match=r"'\./fresh'"):
        neve.connect("fresh")
    assert not (home / "fresh").exists()
    with pytest.raises(ValidationError, match="no URI"):
        neve.connect(warehouse="/x")


def test_register_catalog(home: Path, tmp_path: Path) -> None:
    path, default = register_catalog("demo", "sqlite:////x/c.db", "/x/wh")
    assert default and path == neve_config_path()
    assert yaml.safe_load(path.read_text()) == {
        "catalogs": {"demo": {"uri": "sqlite:////x/c.db", "warehouse": "/x/wh"}},
        "default": "demo",
    }
    _, default = register_catalog("second", "sqlite:////y/c.db", "/y/wh", name="lake")
    assert not default  # the default stays
    entries = configured_catalogs()
    assert set(entries) == {"demo", "second"} and entries["second"].name == "lake"
    _, default = register_catalog("demo", "sqlite:////z/c.db", "/z/wh")
    assert default and configured_catalogs()["demo"].uri == "sqlite:////z/c.db"
    with pytest.raises(ValidationError):
        register_catalog("a/b", "sqlite:////y/c.db", "/y")


def _pyiceberg_table(tmp_path: Path, name: str) -> tuple[str, str]:
    """A table made by pyiceberg's own SqlCatalog (rows under catalog name ``name``)."""
    uri, wh = f"sqlite:///{tmp_path}/py.db", f"file://{tmp_path}/py-wh"
    cat = PyIcebergSqlCatalog(name, uri=uri, warehouse=wh)
    cat.create_namespace("shop")
    table = cat.create_table("shop.items", pa.schema([pa.field("id", pa.int64())]))
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    cat.close()
    return uri, wh


def test_pyiceberg_config(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uri, wh = _pyiceberg_table(tmp_path, "default")
    _write(
        home / ".pyiceberg.yaml",
        {
            "catalog": {
                "default": {"uri": uri, "warehouse": wh},
                "typed": {"type": "sql", "uri": uri, "warehouse": wh},
                "remote": {"uri": "http://127.0.0.1:1"},  # a REST catalog (nothing listens)
            }
        },
    )
    cat = neve.connect()
    assert isinstance(cat, SqlCatalog) and cat.name == "default"
    assert cat.list_tables("shop") == [("shop", "items")]
    assert cat.load_table("shop.items").scan().to_arrow().column("id").to_pylist() == [1, 2, 3]
    assert neve.connect("typed").name == "typed"
    with pytest.raises(NeveIOError, match=r"cannot reach http://127\.0\.0\.1:1"):
        neve.connect("remote")  # pyiceberg's REST catalogs are opened with neve's REST client
    # PYICEBERG_HOME comes first; a neve catalog of the same name hides pyiceberg's
    other = tmp_path / "pyhome"
    _write(
        other / ".pyiceberg.yaml",
        {"catalog": {"only": {"uri": uri, "warehouse": wh}}, "default-catalog": "only"},
    )
    monkeypatch.setenv("PYICEBERG_HOME", str(other))
    assert neve.connect().name == "only"
    _write(neve_config_path(), {"catalogs": {"only": {**_sql(tmp_path, "mine")}}})
    assert neve.connect("only").uri.endswith("/mine.db")  # type: ignore[attr-defined]
