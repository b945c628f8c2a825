"""Catalogs: where tables are found and how commits swap their metadata atomically.

:func:`connect` opens one from a URI: a SQL database (SQLite, PostgreSQL; shared with
Iceberg-Java's JDBC catalog and pyiceberg) or a local folder; or by a name configured in
a config file, or as the environment says (:mod:`neve.catalog.config`).
"""

from neve.catalog.base import Catalog, Identifier, parse_identifier
from neve.catalog.connect import connect
from neve.catalog.filesystem import FilesystemCatalog
from neve.catalog.sql import SqlCatalog

__all__ = [
    "Catalog",
    "FilesystemCatalog",
    "Identifier",
    "SqlCatalog",
    "connect",
    "parse_identifier",
]
