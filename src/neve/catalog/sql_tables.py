"""The SQL catalog's two tables, as Iceberg-Java's JDBC catalog and pyiceberg's
SqlCatalog define them, and how names are stored in them.

- ``iceberg_tables(catalog_name, table_namespace, table_name, metadata_location,
  previous_metadata_location[, iceberg_type])``: one row per table or view.
  ``iceberg_type`` is the column of Java's "V1" layout (``TABLE``, ``VIEW`` or NULL for
  rows written by older clients, which are tables).
- ``iceberg_namespace_properties(catalog_name, namespace, property_key,
  property_value)``: namespace properties, with the ``exists`` = ``true`` row Java
  writes for every namespace.

Namespaces are stored dotted (``a.b``), so no level may contain a dot.
"""

from __future__ import annotations

import re

from sqlalchemy import Column, ColumnElement, MetaData, String, Table, and_, bindparam

from neve.catalog.base import Identifier
from neve.errors import ValidationError

__all__ = [
    "EXISTS_KEY",
    "ICEBERG_TABLES",
    "NAMESPACE_PROPERTIES",
    "SCHEMA",
    "TABLE_TYPE",
    "VIEW_TYPE",
    "check_name",
    "dotted_name",
    "like_prefix",
    "parse_version",
    "table_key",
    "table_match",
]

EXISTS_KEY = "exists"  # the marker property Iceberg-Java writes on every namespace
TABLE_TYPE = "TABLE"
VIEW_TYPE = "VIEW"

SCHEMA = MetaData()

ICEBERG_TABLES = Table(
    "iceberg_tables",
    SCHEMA,
    Column("catalog_name", String(255), primary_key=True, nullable=False),
    Column("table_namespace", String(255), primary_key=True, nullable=False),
    Column("table_name", String(255), primary_key=True, nullable=False),
    Column("metadata_location", String(1000), nullable=True),
    Column("previous_metadata_location", String(1000), nullable=True),
    Column("iceberg_type", String(5), nullable=True),
)

NAMESPACE_PROPERTIES = Table(
    "iceberg_namespace_properties",
    SCHEMA,
    Column("catalog_name", String(255), primary_key=True, nullable=False),
    Column("namespace", String(255), primary_key=True, nullable=False),
    Column("property_key", String(255), primary_key=True, nullable=False),
    Column("property_value", String(1000), nullable=True),
)


def dotted_name(namespace: Identifier) -> str:
    """``("a", "b")`` -> ``"a.b"`` (ValidationError for a level with a dot)."""
    for level in namespace:
        if "." in level:
            raise ValidationError(
                f"namespace level {level!r} contains a dot; the SQL catalog stores "
                "namespaces dotted ('a.b'), so pick names without dots"
            )
    return ".".join(namespace)


def table_match(table: Table) -> ColumnElement[bool]:
    """The rows of one table in ``table`` (keyed like ``iceberg_tables`` by
    ``catalog_name``, ``table_namespace``, ``table_name``), its name bound when the
    statement runs (:func:`table_key`): statements on the commit path are built once,
    since building one costs several times what running it does on SQLite."""
    c = table.c
    return and_(
        c.catalog_name == bindparam("key_catalog"),
        c.table_namespace == bindparam("key_namespace"),
        c.table_name == bindparam("key_table"),
    )


def table_key(catalog_name: str, ident: Identifier) -> dict[str, str]:
    """The parameters of :func:`table_match` for table ``ident`` of a catalog."""
    return {
        "key_catalog": catalog_name,
        "key_namespace": dotted_name(ident[:-1]),
        "key_table": check_name(ident[-1]),
    }


def check_name(name: str, what: str = "table") -> str:
    """A table or view name, refused when it holds a dot."""
    if "." in name:
        raise ValidationError(f"{what} name {name!r} contains a dot; pick a name without dots")
    return name


def like_prefix(prefix: str) -> str:
    """A LIKE pattern for names starting with ``prefix.`` (escape character ``!``)."""
    escaped = prefix.replace("!", "!!").replace("_", "!_").replace("%", "!%")
    return escaped + ".%"


_JAVA_VERSION = re.compile(r"^(\d+)-")
_HADOOP_VERSION = re.compile(r"^v(\d+)\.")


def parse_version(metadata_location: str) -> int:
    """The version number in a metadata file name (``00042-<uuid>.metadata.json`` or
    ``v42.metadata.json``); -1 when the name carries none, as in Iceberg-Java."""
    name = metadata_location.rsplit("/", 1)[-1]
    m = _JAVA_VERSION.match(name) or _HADOOP_VERSION.match(name)
    return int(m.group(1)) if m else -1
