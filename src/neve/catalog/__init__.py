"""Catalogs: where tables are found and how commits swap their metadata atomically.

:func:`connect` opens one from a URI: a SQL database (SQLite, PostgreSQL; shared with
Iceberg-Java's JDBC catalog and pyiceberg) or a local folder; or by a name configured in
a config file, or as the environment says; or an Iceberg REST catalog server by its
``http(s)://`` URI (:mod:`neve.catalog.config`).
"""

import typing

from neve.catalog.base import Catalog, Identifier, parse_identifier
from neve.catalog.connect import connect
from neve.catalog.filesystem import FilesystemCatalog
from neve.catalog.rest import RestCatalog
from neve.catalog.views import View

if typing.TYPE_CHECKING:
    from neve.catalog.sql import SqlCatalog

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


def __getattr__(name: str) -> object:
    """``SqlCatalog`` on first use: it brings SQLAlchemy (~0.2 s of a process's start),
    which REST and filesystem catalogs, the command's other verbs and Spark's workers
    reading through a REST catalog never need."""
    if name == "SqlCatalog":
        # heavy: SQLAlchemy loads with the first SQL catalog
        from neve.catalog.sql import SqlCatalog

        return SqlCatalog
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
