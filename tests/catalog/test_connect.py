"""connect(): one URI to a catalog."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import neve.catalog
from neve.catalog import FilesystemCatalog, SqlCatalog, connect
from neve.errors import ValidationError


def test_public_names() -> None:
    assert sorted(neve.catalog.__all__) == [
        "Catalog",
        "FilesystemCatalog",
        "Identifier",
        "RestCatalog",
        "SqlCatalog",
        "View",
        "connect",
        "parse_identifier",
    ]


def test_sqlite(tmp_path: Path) -> None:
    cat = connect(f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"), name="prod")
    assert isinstance(cat, SqlCatalog)
    try:
        assert (cat.name, cat.warehouse) == ("prod", str(tmp_path / "wh"))
        cat.create_namespace("db")
        again = connect(f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"), name="prod")
        assert again.list_namespaces() == [("db",)]
    finally:
        cat.dispose()


def test_sqlite_relative_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cat = connect("sqlite:///rel.db", warehouse="wh", token="abc")
    assert isinstance(cat, SqlCatalog)
    try:
        assert cat.warehouse == str(tmp_path / "wh")  # metadata needs absolute locations
        assert cat.properties == {"token": "abc"}
        assert (tmp_path / "rel.db").is_file()
    finally:
        cat.dispose()


def test_sql_needs_warehouse(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="warehouse="):
        connect(f"sqlite:///{tmp_path}/c.db")
    assert not (tmp_path / "c.db").exists()


def test_object_store_warehouse_kept_as_uri(tmp_path: Path) -> None:
    cat = connect(f"sqlite:///{tmp_path}/c.db", warehouse="s3://bucket/wh/")
    assert isinstance(cat, SqlCatalog)
    try:
        assert cat.warehouse == "s3://bucket/wh"
        assert cat.default_table_location(("db", "t")) == "s3://bucket/wh/db/t"
    finally:
        cat.dispose()


def test_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cat = connect(str(tmp_path / "wh"))
    assert isinstance(cat, FilesystemCatalog)
    assert cat.warehouse == str(tmp_path / "wh")
    assert os.path.isdir(tmp_path / "wh")
    monkeypatch.chdir(tmp_path)
    rel = connect("./wh2", name="local")
    assert (rel.warehouse, rel.name) == (str(tmp_path / "wh2"), "local")
    uri = connect(f"file://{tmp_path}/wh3")
    assert isinstance(uri, FilesystemCatalog)
    assert uri.warehouse == f"file://{tmp_path}/wh3"
    assert connect(tmp_path / "wh", warehouse=tmp_path / "wh").warehouse == str(tmp_path / "wh")


def test_folder_with_other_warehouse(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="leave warehouse unset"):
        connect(str(tmp_path / "a"), warehouse=str(tmp_path / "b"))


@pytest.mark.parametrize("uri", ["hdfs://nn/wh", "mysql+nodriver://x@h/db", "ftp://x"])
def test_unsupported(uri: str) -> None:
    with pytest.raises(ValidationError, match="cannot open a catalog"):
        connect(uri, warehouse="/tmp/wh")


@pytest.mark.postgres
@pytest.mark.parametrize("scheme", ["postgresql", "postgres", "postgresql+psycopg"])
def test_postgres(postgres_uri: str, tmp_path: Path, scheme: str) -> None:
    plain = postgres_uri.replace("postgresql+psycopg://", f"{scheme}://")
    cat = connect(plain, warehouse=str(tmp_path), name=f"connect_{scheme.replace('+', '_')}")
    assert isinstance(cat, SqlCatalog)
    assert cat.uri == postgres_uri  # psycopg 3 unless a driver is named
    cat.create_namespace_if_not_exists("db")
    assert ("db",) in cat.list_namespaces()
