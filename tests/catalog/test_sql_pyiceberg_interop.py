"""neve's SqlCatalog and pyiceberg's SqlCatalog on one database see the same tables."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog
from pyiceberg.schema import Schema as PySchema
from pyiceberg.types import LongType, NestedField, StringType

from neve.catalog import SqlCatalog
from neve.spec.schema import Schema
from neve.spec.types import LONG, STRING
from neve.spec.types import NestedField as NeveField

SCHEMA = Schema(
    NeveField(1, "id", LONG, required=True),
    NeveField(2, "name", STRING),
    NeveField(3, "tags", STRING),
)


@pytest.fixture
def pyiceberg_catalog(sql_catalog: SqlCatalog) -> Iterator[PyIcebergSqlCatalog]:
    cat = PyIcebergSqlCatalog(
        sql_catalog.name, uri=sql_catalog.uri, warehouse=sql_catalog.warehouse
    )
    yield cat
    cat.close()


def _fields(schema: Schema) -> list[tuple[int, str, bool]]:
    return [(f.field_id, f.name, f.required) for f in schema.fields]


def test_pyiceberg_loads_neve_table(
    sql_catalog: SqlCatalog, pyiceberg_catalog: PyIcebergSqlCatalog
) -> None:
    sql_catalog.create_namespace("db", {"owner": "ana"})
    created = sql_catalog.create_table("db.events", SCHEMA, properties={"k": "v"})

    assert pyiceberg_catalog.list_namespaces() == [("db",)]
    assert pyiceberg_catalog.load_namespace_properties("db")["owner"] == "ana"
    assert pyiceberg_catalog.list_tables("db") == [("db", "events")]
    table = pyiceberg_catalog.load_table("db.events")
    assert table.metadata_location == created.metadata_location
    assert str(table.metadata.table_uuid) == created.metadata.table_uuid
    assert [(f.field_id, f.name, f.required) for f in table.schema().fields] == _fields(SCHEMA)
    assert table.properties["k"] == "v"

    # A neve commit is what pyiceberg sees next.
    new = sql_catalog.commit_metadata(
        ("db", "events"),
        created.metadata_location,
        created.metadata.with_(properties={**created.metadata.properties, "k": "w"}),
    )
    table = pyiceberg_catalog.load_table("db.events")
    assert table.metadata_location == new
    assert table.properties["k"] == "w"


def test_neve_loads_pyiceberg_table(
    sql_catalog: SqlCatalog, pyiceberg_catalog: PyIcebergSqlCatalog
) -> None:
    pyiceberg_catalog.create_namespace("py")
    schema = PySchema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType(), required=False),
    )
    created = pyiceberg_catalog.create_table("py.events", schema, properties={"k": "v"})

    assert sql_catalog.list_namespaces() == [("py",)]
    assert sql_catalog.list_tables("py") == [("py", "events")]
    table = sql_catalog.load_table("py.events")
    assert table.metadata_location == created.metadata_location
    assert table.metadata.table_uuid == str(created.metadata.table_uuid)
    assert _fields(table.schema()) == [(1, "id", True), (2, "name", False)]
    assert table.properties["k"] == "v"

    # A pyiceberg commit is what neve sees next; neve's commit follows it.
    with created.transaction() as tx:
        tx.set_properties(k="w")
    after = pyiceberg_catalog.load_table("py.events")
    table = sql_catalog.load_table("py.events")
    assert table.metadata_location == after.metadata_location
    assert table.properties["k"] == "w"
    new = sql_catalog.commit_metadata(
        ("py", "events"),
        table.metadata_location,
        table.metadata.with_(properties={**table.metadata.properties, "k": "x"}),
    )
    assert pyiceberg_catalog.load_table("py.events").metadata_location == new


def test_pyiceberg_arrow_schema_table(
    sql_catalog: SqlCatalog, pyiceberg_catalog: PyIcebergSqlCatalog
) -> None:
    sql_catalog.create_namespace("db")
    pyiceberg_catalog.create_table(
        "db.arrow", pa.schema([pa.field("a", pa.int64()), pa.field("b", pa.string())])
    )
    table = sql_catalog.load_table("db.arrow")
    assert [f.name for f in table.schema().fields] == ["a", "b"]
    sql_catalog.drop_table("db.arrow")
    assert pyiceberg_catalog.list_tables("db") == []
