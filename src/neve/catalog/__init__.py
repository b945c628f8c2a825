"""Catalogs: where tables are found and how commits swap their metadata atomically.

:func:`connect` opens one from a URI: a SQL database (SQLite, PostgreSQL; shared with
Iceberg-Java's JDBC catalog and pyiceberg) or a local folder; or by a name configured in
a config file, or as the environment says; or an Iceberg REST catalog server by its
``http(s)://`` URI (:mod:`neve.catalog.config`).
"""

from neve.catalog.base import Catalog, Identifier, parse_identifier
from neve.catalog.connect import connect
from neve.catalog.filesystem import FilesystemCatalog
from neve.catalog.rest import RestCatalog
from neve.catalog.sql import SqlCatalog
from neve.catalog.views import View

__all__ = [
    "Catalog",
    "FilesystemCatalog",
    "Identifier",
    "RestCatalog",
    "SqlCatalog",
    "View",
    "connect",
    "parse_identifier",
]
