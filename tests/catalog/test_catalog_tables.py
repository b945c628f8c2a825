"""Tables through the public catalog API, the same for every catalog kind."""

from __future__ import annotations

import os

import pytest

from neve.catalog import Catalog, FilesystemCatalog
from neve.errors import (
    NeveIOError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
    ValidationError,
)
from neve.io.fileio import local_path
from neve.spec.schema import Schema
from neve.spec.types import LONG, STRING, TIMESTAMPTZ, NestedField

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "name", STRING),
    NestedField(3, "ts", TIMESTAMPTZ),
)


def _exists(path: str) -> bool:
    return os.path.exists(local_path(path))


def test_create_and_load(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    created = catalog.create_table("db.events", SCHEMA, properties={"owner": "ana"})
    assert created.identifier == ("db", "events")
    assert created.location == catalog.default_table_location(("db", "events"))
    assert _exists(created.metadata_location)

    loaded = catalog.load_table("db.events")
    assert loaded.metadata_location == created.metadata_location
    assert loaded.metadata.table_uuid == created.metadata.table_uuid
    assert loaded.schema() == created.schema()
    assert [(f.field_id, f.name) for f in loaded.schema().fields] == [
        (f.field_id, f.name) for f in created.schema().fields
    ]
    assert loaded.properties["owner"] == "ana"
    assert catalog.table_exists("db.events")
    assert catalog.table_exists(("db", "events"))
    assert not catalog.table_exists("db.other")


def test_list_tables(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    catalog.create_namespace("db.sub")
    catalog.create_namespace("other")
    for name in ("db.b", "db.a", "db.sub.c", "other.d"):
        catalog.create_table(name, SCHEMA)
    assert catalog.list_tables("db") == [("db", "a"), ("db", "b")]
    assert catalog.list_tables("db.sub") == [("db", "sub", "c")]
    assert catalog.list_tables("other") == [("other", "d")]
    assert catalog.list_namespaces("db") == [("db", "sub")]


def test_create_errors(catalog: Catalog) -> None:
    with pytest.raises(NoSuchNamespaceError, match="db"):
        catalog.create_table("db.events", SCHEMA)
    catalog.create_namespace("db")
    with pytest.raises(ValidationError, match="namespace"):
        catalog.create_table("events", SCHEMA)
    first = catalog.create_table("db.events", SCHEMA)
    with pytest.raises(TableAlreadyExistsError, match=r"db\.events"):
        catalog.create_table("db.events", SCHEMA)
    assert catalog.load_table("db.events").metadata_location == first.metadata_location


def test_missing_table(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    with pytest.raises(NoSuchTableError, match=r"db\.nope"):
        catalog.load_table("db.nope")
    with pytest.raises(NoSuchTableError):
        catalog.drop_table("db.nope")
    with pytest.raises(NoSuchTableError):
        catalog.drop_table("db.nope", purge=True)


def test_drop_keeps_files(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.events", SCHEMA)
    data_file = os.path.join(local_path(table.location), "data", "kept.parquet")
    os.makedirs(os.path.dirname(data_file))
    with open(data_file, "wb") as f:
        f.write(b"not really parquet")
    catalog.drop_table("db.events")
    assert not catalog.table_exists("db.events")
    assert catalog.list_tables("db") == []
    with pytest.raises(NoSuchTableError):
        catalog.load_table("db.events")
    assert os.path.exists(data_file)
    # The name is free again.
    again = catalog.create_table("db.events", SCHEMA)
    assert again.metadata.table_uuid != table.metadata.table_uuid
    catalog.drop_table("db.events")
    catalog.drop_namespace("db")


def test_drop_purge_removes_metadata(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    table = catalog.create_table("db.events", SCHEMA)
    catalog.drop_table("db.events", purge=True)
    assert not catalog.table_exists("db.events")
    assert not _exists(table.metadata_location)


def test_rename(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    catalog.create_namespace("archive")
    table = catalog.create_table("db.events", SCHEMA)
    if isinstance(catalog, FilesystemCatalog):
        with pytest.raises(ValidationError, match="cannot rename"):
            catalog.rename_table("db.events", "archive.events")
        assert catalog.load_table("db.events").metadata_location == table.metadata_location
        return
    catalog.rename_table("db.events", "archive.events")
    assert not catalog.table_exists("db.events")
    moved = catalog.load_table("archive.events")
    assert moved.metadata_location == table.metadata_location
    assert moved.location == table.location  # data stays where it is
    assert catalog.list_tables("archive") == [("archive", "events")]


def test_rename_errors(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    catalog.create_table("db.a", SCHEMA)
    catalog.create_table("db.b", SCHEMA)
    with pytest.raises(TableAlreadyExistsError, match=r"db\.b"):
        catalog.rename_table("db.a", "db.b")
    with pytest.raises(NoSuchNamespaceError):
        catalog.rename_table("db.a", "nope.a")
    with pytest.raises(NoSuchTableError):
        catalog.rename_table("db.nope", "db.c")
    assert catalog.list_tables("db") == [("db", "a"), ("db", "b")]


def test_register(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    original = catalog.create_table("db.events", SCHEMA)
    catalog.drop_table("db.events")  # the metadata file itself stays for SQL catalogs
    source = original.metadata_location
    if isinstance(catalog, FilesystemCatalog):  # the filesystem catalog drops its files
        source = os.path.join(local_path(catalog.warehouse), "elsewhere.metadata.json")
        original.catalog.write_metadata(original.metadata, source)
    registered = catalog.register_table("db.copy", source)
    loaded = catalog.load_table("db.copy")
    assert loaded.metadata_location == registered.metadata_location
    assert loaded.metadata.table_uuid == original.metadata.table_uuid
    assert loaded.location == original.location
    assert loaded.schema() == original.schema()
    with pytest.raises(TableAlreadyExistsError):
        catalog.register_table("db.copy", source)
    with pytest.raises(NoSuchNamespaceError):
        catalog.register_table("nope.copy", source)


def test_register_missing_file(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    with pytest.raises(NeveIOError, match="cannot read metadata"):
        catalog.register_table("db.t", os.path.join(catalog.warehouse, "missing.metadata.json"))
    assert not catalog.table_exists("db.t")
