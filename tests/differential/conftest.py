"""The catalog of the differential tests: one SQLite catalog per test module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from neve.catalog import Catalog, connect


@pytest.fixture(scope="module")
def diff_catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    root: Path = tmp_path_factory.mktemp("differential")
    catalog = connect(f"sqlite:///{root}/catalog.db", warehouse=str(root / "warehouse"))
    catalog.create_namespace("db")
    yield catalog
