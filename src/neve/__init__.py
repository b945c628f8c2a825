"""neve: a table format engine on the Iceberg format, with a PySpark data plane.

import neve
catalog = neve.connect("sqlite:////abs/catalog.db", warehouse="/abs/warehouse")
table = catalog.create_table("db.events", schema=pa_schema, partition_by=["day(ts)"])
table.append(pa_table)
table.scan(filter="id < 100").to_arrow()
"""

import typing

from neve.arrow.engine import ArrowEngine
from neve.catalog import Catalog, FilesystemCatalog, RestCatalog, View, connect
from neve.engine.protocol import Engine
from neve.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    CatalogBusyError,
    CatalogNotConfiguredError,
    CommitConflictError,
    CommitError,
    CommitFailedError,
    CommitStateUnknownError,
    DataSchemaMismatchError,
    DuplicateKeyError,
    EngineSetupError,
    ExpressionError,
    MergeEngineError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NeveError,
    NeveIOError,
    NonAppendSnapshotError,
    NoSuchCatalogError,
    NoSuchNamespaceError,
    NoSuchRowError,
    NoSuchSnapshotError,
    NoSuchTableError,
    NoSuchViewError,
    NotFoundError,
    SchemaError,
    TableAlreadyExistsError,
    UnsupportedFormatVersionError,
    ValidationError,
    ViewAlreadyExistsError,
)
from neve.planning.tasks import FileScanTask
from neve.spec.schema import Schema
from neve.spec.types import NestedField
from neve.table.scan import TableScan
from neve.table.table import Table
from neve.table.transaction import Transaction

if typing.TYPE_CHECKING:
    from neve.catalog.sql import SqlCatalog

__version__ = "0.1.0"

__all__ = [
    "AccessDeniedError",
    "AlreadyExistsError",
    "ArrowEngine",
    "Catalog",
    "CatalogBusyError",
    "CatalogNotConfiguredError",
    "CommitConflictError",
    "CommitError",
    "CommitFailedError",
    "CommitStateUnknownError",
    "DataSchemaMismatchError",
    "DuplicateKeyError",
    "Engine",
    "EngineSetupError",
    "ExpressionError",
    "FileScanTask",
    "FilesystemCatalog",
    "MergeEngineError",
    "NamespaceAlreadyExistsError",
    "NamespaceNotEmptyError",
    "NestedField",
    "NeveError",
    "NeveIOError",
    "NoSuchCatalogError",
    "NoSuchNamespaceError",
    "NoSuchRowError",
    "NoSuchSnapshotError",
    "NoSuchTableError",
    "NoSuchViewError",
    "NonAppendSnapshotError",
    "NotFoundError",
    "RestCatalog",
    "Schema",
    "SchemaError",
    "SqlCatalog",
    "Table",
    "TableAlreadyExistsError",
    "TableScan",
    "Transaction",
    "UnsupportedFormatVersionError",
    "ValidationError",
    "View",
    "ViewAlreadyExistsError",
    "__version__",
    "connect",
]


def __getattr__(name: str) -> object:
    """``neve.SqlCatalog`` on first use (see :mod:`neve.catalog`: SQLAlchemy loads with
    it)."""
    if name == "SqlCatalog":
        # heavy: SQLAlchemy loads with the first SQL catalog
        from neve.catalog import SqlCatalog

        return SqlCatalog
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
