"""The public API is exactly what we mean to offer (in the manner of httpx's
``test_exported_members``): adding or dropping a public name is a decision, made here."""

from __future__ import annotations

import importlib
import pkgutil
import types

import pytest

import neve
import neve.spark

NEVE_API = {
    "ArrowEngine",
    "Engine",
    "AccessDeniedError",
    "AlreadyExistsError",
    "Catalog",
    "CatalogBusyError",
    "CatalogNotConfiguredError",
    "CommitConflictError",
    "CommitError",
    "CommitFailedError",
    "CommitStateUnknownError",
    "DataSchemaMismatchError",
    "DuplicateKeyError",
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
    "NonAppendSnapshotError",
    "NoSuchCatalogError",
    "NoSuchNamespaceError",
    "NoSuchRowError",
    "NoSuchSnapshotError",
    "NoSuchTableError",
    "NoSuchViewError",
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
}

SPARK_API = {
    "REQUIRED_CONF",
    "NeveDataSource",
    "SparkEngine",
    "upsert_batches",
    "changes",
    "check_session",
    "configure",
    "delete",
    "from_spark_schema",
    "local_session",
    "maintenance",
    "merge",
    "overwrite",
    "overwrite_partitions",
    "read",
    "read_tasks",
    "register_datasource",
    "register_view",
    "to_spark_schema",
    "to_spark_type",
    "update",
    "upsert",
    "write",
    "write_files",
}


def _public_members(module: types.ModuleType) -> set[str]:
    """Names a user finds on the module that are not submodules or private."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    } - {"annotations"}


def test_neve_exports_exactly_its_api() -> None:
    assert set(neve.__all__) == NEVE_API
    assert len(neve.__all__) == len(NEVE_API)  # no name twice


@pytest.mark.parametrize("name", sorted(NEVE_API))
def test_every_exported_name_exists(name: str) -> None:
    assert getattr(neve, name) is not None


def test_neve_has_no_public_name_outside_its_api() -> None:
    assert _public_members(neve) <= NEVE_API


def test_neve_spark_exports_exactly_its_api() -> None:
    assert set(neve.spark.__all__) == SPARK_API
    assert len(neve.spark.__all__) == len(SPARK_API)
    for name in SPARK_API:
        assert getattr(neve.spark, name) is not None
    assert _public_members(neve.spark) <= SPARK_API


def test_every_module_declares_its_public_names() -> None:
    """Each module of the package says what it offers (``__all__``), and offers only
    names it has."""
    missing = []
    for info in pkgutil.walk_packages(neve.__path__, "neve."):
        module = importlib.import_module(info.name)
        names = getattr(module, "__all__", None)
        if names is None:
            missing.append(info.name)
            continue
        absent = [n for n in names if not hasattr(module, n)]
        assert not absent, f"{info.name}.__all__ names missing members {absent}"
    assert missing == [], f"modules without __all__: {missing}"
