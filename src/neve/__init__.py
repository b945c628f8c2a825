"""neve: a table format engine on the Iceberg format, with a PySpark data plane.

import neve
catalog = neve.connect("sqlite:////abs/catalog.db", warehouse="/abs/warehouse")
table = catalog.create_table("db.events", schema=pa_schema, partition_by=["day(ts)"])
table.append(pa_table)
table.scan(filter="id < 100").to_arrow()
"""

from neve.arrow.engine import ArrowEngine
from neve.catalog import Catalog, FilesystemCatalog, RestCatalog, SqlCatalog, View, connect
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
