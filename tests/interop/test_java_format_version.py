"""``format-version`` as a table property, as Iceberg-Java 1.10.2 handles it.

What Java does (checked here on its own tables, next to neve's):

- ``CREATE TABLE ... TBLPROPERTIES ('format-version'='3', 'foo'='bar')`` writes metadata
  with ``"format-version": 3`` and ``"next-row-id": 0``; ``format-version`` is not among
  the stored ``properties`` (``foo`` is). ``SHOW TBLPROPERTIES`` still lists it, read
  from the metadata.
- ``ALTER TABLE ... SET TBLPROPERTIES ('format-version'='3')`` on a v2 (or v1) table
  upgrades it the same way, and stores no property either.
- ``'format-version'='2'`` on a v3 table fails: "Cannot downgrade v3 table to v2".

neve must do the same through ``create_table(properties=...)`` and ``set_properties``,
and both engines must read each other's result alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from javaengine import IcebergJava, JavaSqlError
from neve.catalog import SqlCatalog
from neve.errors import NeveError

pytestmark = pytest.mark.java

SCHEMA = pa.schema([("i", pa.int32())])


def metadata(catalog: SqlCatalog, ns: str, name: str) -> dict[str, Any]:
    location = catalog.load_table((ns, name)).metadata_location
    doc: dict[str, Any] = json.loads(Path(location).read_text())
    return doc


def shown_properties(java: IcebergJava, table: str) -> dict[str, str]:
    return dict(java.sql(f"SHOW TBLPROPERTIES {table}").rows)


def assert_v3_without_property(doc: dict[str, Any]) -> None:
    assert doc["format-version"] == 3
    assert "format-version" not in doc.get("properties", {})
    assert doc["next-row-id"] == 0


def test_create_with_format_version_property(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    iceberg_java.sql(
        f"CREATE TABLE neve.{java_ns}.by_java (i int) USING iceberg "
        "TBLPROPERTIES ('format-version'='3', 'foo'='bar')"
    )
    java_catalog.create_table(
        (java_ns, "by_neve"), SCHEMA, properties={"format-version": "3", "foo": "bar"}
    )
    for name in ("by_java", "by_neve"):
        doc = metadata(java_catalog, java_ns, name)
        assert_v3_without_property(doc)
        assert doc["properties"]["foo"] == "bar"
        assert java_catalog.load_table((java_ns, name)).format_version == 3
        shown = shown_properties(iceberg_java, f"neve.{java_ns}.{name}")
        assert shown["format-version"] == "3" and shown["foo"] == "bar"


def test_upgrade_through_set_properties(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    iceberg_java.sql(f"CREATE TABLE neve.{java_ns}.by_java (i int) USING iceberg")
    assert metadata(java_catalog, java_ns, "by_java")["format-version"] == 2
    iceberg_java.sql(f"ALTER TABLE neve.{java_ns}.by_java SET TBLPROPERTIES ('format-version'='3')")
    t = java_catalog.create_table((java_ns, "by_neve"), SCHEMA)
    assert t.format_version == 2
    t.set_properties({"format-version": "3"})
    for name in ("by_java", "by_neve"):
        assert_v3_without_property(metadata(java_catalog, java_ns, name))
        # The upgraded table is a working v3 table for Java: rows get row ids from 0.
        iceberg_java.sql(f"INSERT INTO neve.{java_ns}.{name} VALUES (7), (8)")
        ids = iceberg_java.sql(f"SELECT i, _row_id FROM neve.{java_ns}.{name} ORDER BY i").rows
        assert ids == [(7, 0), (8, 1)]


def test_downgrade_is_refused(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    iceberg_java.sql(
        f"CREATE TABLE neve.{java_ns}.by_java (i int) USING iceberg "
        "TBLPROPERTIES ('format-version'='3')"
    )
    with pytest.raises(JavaSqlError, match="Cannot downgrade v3 table to v2"):
        iceberg_java.sql(
            f"ALTER TABLE neve.{java_ns}.by_java SET TBLPROPERTIES ('format-version'='2')"
        )
    t = java_catalog.create_table((java_ns, "by_neve"), SCHEMA, format_version=3)
    with pytest.raises(NeveError, match="downgrade"):
        t.set_properties({"format-version": "2"})
    for name in ("by_java", "by_neve"):
        assert_v3_without_property(metadata(java_catalog, java_ns, name))
