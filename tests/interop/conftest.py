"""Fixtures for cross-checks against Iceberg-Java 1.10.2 (``tests/javaengine``).

- ``iceberg_java``: one engine per test process (so one per pytest-xdist worker), started
  on first use and kept for the session. Its catalog ``neve`` is an Iceberg JdbcCatalog
  on the same SQLite file as ``java_catalog``. It fails, never skips, when the engine
  cannot start (build it with ``make java-engine``, part of ``make setup``).
- ``java_catalog``: neve's :class:`~neve.catalog.SqlCatalog` named ``neve`` on that file.
- ``java_ns``: a fresh namespace per test in that catalog (``neve.<ns>.<table>`` in
  Java's SQL, ``<ns>.<table>`` in neve).

One engine per worker rather than one shared by all: each worker then has its own
catalog file (no SQLite lock contention between workers' tests), nothing has to
coordinate the engine's lifetime across processes, and a crash stays in one worker. The
cost is a second JVM (about 8 s to start, under 1 GB) when both workers draw Java tests.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from javaengine import IcebergJava, JavaEngineError, JdbcCatalog
from neve.catalog import SqlCatalog

CATALOG_NAME = "neve"


@dataclass(frozen=True)
class JavaSetup:
    """Where the engine's catalog lives (an SQLite file and a warehouse folder)."""

    uri: str
    warehouse: str


@pytest.fixture(scope="session")
def java_setup(tmp_path_factory: pytest.TempPathFactory) -> JavaSetup:
    base = tmp_path_factory.mktemp("iceberg-java")
    setup = JavaSetup(f"sqlite:///{base}/catalog.db", str(base / "warehouse"))
    # neve creates the catalog tables (Java's V1 layout) before Java connects.
    SqlCatalog(CATALOG_NAME, setup.uri, setup.warehouse).list_namespaces()
    return setup


@pytest.fixture(scope="session")
def iceberg_java(
    java_setup: JavaSetup, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[IcebergJava]:
    """Iceberg-Java 1.10.2 (Spark 3.5) with catalog ``neve`` on ``java_catalog``'s database."""
    workdir = tmp_path_factory.mktemp("iceberg-java-engine")
    try:
        engine = IcebergJava.start(
            workdir,
            [JdbcCatalog.from_sqlalchemy(CATALOG_NAME, java_setup.uri, java_setup.warehouse)],
        )
    except JavaEngineError as exc:
        pytest.fail(f"the Iceberg-Java test engine did not start: {exc}", pytrace=False)
    yield engine
    engine.close()


@pytest.fixture
def java_catalog(java_setup: JavaSetup) -> SqlCatalog:
    """neve's catalog on the same database and name as ``iceberg_java``'s."""
    return SqlCatalog(CATALOG_NAME, java_setup.uri, java_setup.warehouse)


@pytest.fixture
def java_ns(java_catalog: SqlCatalog) -> str:
    """A new namespace for this test's tables."""
    ns = f"t_{uuid.uuid4().hex[:10]}"
    java_catalog.create_namespace(ns)
    return ns
