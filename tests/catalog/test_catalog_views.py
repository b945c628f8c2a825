"""Views (the Iceberg view spec) through neve's Python API, on every catalog that
stores them: SQLite, PostgreSQL and REST (neve's client against ``neve serve``). The
filesystem catalog says it does not store views. And every catalog, with its tables,
pickles."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

from neve.catalog import Catalog, FilesystemCatalog
from neve.errors import (
    CommitFailedError,
    NoSuchNamespaceError,
    NoSuchViewError,
    TableAlreadyExistsError,
    ValidationError,
    ViewAlreadyExistsError,
)
from neve.spec.view_metadata import AssertViewUUID, ViewSetProperties

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
WIDER = pa.schema([*SCHEMA, pa.field("note", pa.string())])


def test_views_are_created_loaded_replaced_renamed_and_dropped(catalog: Catalog) -> None:
    if isinstance(catalog, FilesystemCatalog):
        with pytest.raises(ValidationError, match="does not store views"):
            catalog.create_view("db.v", SCHEMA, "SELECT 1")
        return
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA)
    view = catalog.create_view(
        "db.v",
        SCHEMA,
        {"spark": "SELECT id, name FROM t", "trino": 'SELECT "id", "name" FROM t'},
        properties={"comment": "naïve ✓"},
    )
    assert view.sql("spark") == "SELECT id, name FROM t"
    assert view.sql("TRINO") == 'SELECT "id", "name" FROM t'
    with pytest.raises(ValidationError, match="has no SQL for 'duckdb'"):
        view.sql("duckdb")
    loaded = catalog.load_view("db.v")
    assert loaded.metadata.view_uuid == view.metadata.view_uuid
    assert loaded.schema().column_names == ["id", "name"]
    assert loaded.version().default_namespace == ("db",)
    assert loaded.properties["comment"] == "naïve ✓"
    assert catalog.list_views("db") == [("db", "v")]
    assert catalog.list_tables("db") == [("db", "t")]  # views are not tables
    assert catalog.view_exists("db.v") and not catalog.view_exists("db.t")
    assert not catalog.table_exists("db.v")

    replaced = catalog.replace_view("db.v", WIDER, "SELECT id, name, 'x' AS note FROM t")
    assert replaced.metadata.current_version_id == 2
    assert [v.version_id for v in replaced.metadata.versions] == [1, 2]
    assert replaced.schema().column_names == ["id", "name", "note"]
    assert [e.version_id for e in replaced.metadata.version_log] == [1, 2]
    # going back to the first SQL reuses its version (the spec's rule)
    back = catalog.replace_view(
        "db.v", SCHEMA, {"spark": "SELECT id, name FROM t", "trino": 'SELECT "id", "name" FROM t'}
    )
    assert back.metadata.current_version_id == 1 and len(back.metadata.versions) == 2

    catalog.rename_view("db.v", "db.w")
    assert catalog.list_views("db") == [("db", "w")]
    with pytest.raises(NoSuchViewError):
        catalog.load_view("db.v")
    catalog.drop_view("db.w")
    assert catalog.list_views("db") == []
    with pytest.raises(NoSuchViewError):
        catalog.drop_view("db.w")


def test_view_names_and_stale_commits(catalog: Catalog) -> None:
    if isinstance(catalog, FilesystemCatalog):
        return  # (the first test shows it refuses views)
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA)
    with pytest.raises((ViewAlreadyExistsError, TableAlreadyExistsError)):
        catalog.create_view("db.t", SCHEMA, "SELECT 1")  # a table's name
    view = catalog.create_view("db.v", SCHEMA, "SELECT id, name FROM t")
    with pytest.raises((ViewAlreadyExistsError, TableAlreadyExistsError)):
        catalog.create_view("db.v", SCHEMA, "SELECT 2")
    with pytest.raises(NoSuchNamespaceError):
        catalog.create_view("nope.v", SCHEMA, "SELECT 1")
    catalog.drop_view("db.v")
    again = catalog.create_view("db.v", SCHEMA, "SELECT id FROM t")
    assert again.metadata.view_uuid != view.metadata.view_uuid
    # a commit that expects the dropped view's UUID changes nothing
    with pytest.raises(CommitFailedError, match="assert-view-uuid"):
        catalog.commit_view(
            "db.v", [AssertViewUUID(view.metadata.view_uuid)], [ViewSetProperties({"k": "v"})]
        )
    assert "k" not in catalog.load_view("db.v").properties
    done = catalog.commit_view(
        "db.v", [AssertViewUUID(again.metadata.view_uuid)], [ViewSetProperties({"k": "v"})]
    )
    assert done.properties["k"] == "v"


def test_a_catalog_and_its_tables_pickle(catalog: Catalog) -> None:
    """Catalogs travel to Spark tasks and worker processes; a REST catalog does so
    without asking its server anything until it is used."""
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA)
    t.append(pa.table({"id": [1], "name": ["a"]}, schema=SCHEMA))
    copy = pickle.loads(pickle.dumps(catalog))
    assert type(copy) is type(catalog) and copy.warehouse == catalog.warehouse
    assert copy.list_tables("db") == [("db", "t")]
    table = pickle.loads(pickle.dumps(catalog.load_table("db.t")))
    table.append(pa.table({"id": [2], "name": ["b"]}, schema=SCHEMA))
    assert sorted(catalog.load_table("db.t").scan().to_arrow().column("id").to_pylist()) == [1, 2]
