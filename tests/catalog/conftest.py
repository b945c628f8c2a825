"""Fixtures for catalog tests that need no table layer: hand-built metadata and a way to
create a table through the catalog primitive."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest

from neve.catalog import Catalog, Identifier, SqlCatalog
from neve.spec.partition import UNPARTITIONED
from neve.spec.schema import Schema
from neve.spec.sort_order import UNSORTED
from neve.spec.table_metadata import TableMetadata
from neve.spec.types import LONG, STRING, NestedField

RawTable = tuple[Identifier, str, TableMetadata]


def simple_metadata(location: str) -> TableMetadata:
    schema = Schema(
        NestedField(1, "id", LONG, required=True),
        NestedField(2, "data", STRING),
        schema_id=0,
    )
    return TableMetadata(
        format_version=2,
        table_uuid=str(uuid.uuid4()),
        location=location,
        last_sequence_number=0,
        last_updated_ms=int(time.time() * 1000),
        last_column_id=2,
        schemas=(schema,),
        current_schema_id=0,
        partition_specs=(UNPARTITIONED,),
        default_spec_id=0,
        last_partition_id=999,
        sort_orders=(UNSORTED,),
        default_sort_order_id=0,
    )


@pytest.fixture
def make_metadata() -> Callable[[str], TableMetadata]:
    """Hand-built v2 metadata (id long, data string) for a table at a location."""
    return simple_metadata


@pytest.fixture
def create_raw() -> Callable[[Catalog, str], RawTable]:
    """Create ``ns.table`` through ``Catalog._create_table`` (no table layer needed)."""

    def create(catalog: Catalog, name: str) -> RawTable:
        ident = tuple(name.split("."))
        catalog.create_namespace_if_not_exists(ident[:-1])
        md = simple_metadata(catalog.default_table_location(ident))
        return ident, catalog._create_table(ident, md), md

    return create


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def sql_catalog(
    request: pytest.FixtureRequest, catalog_factory: Callable[[str], Catalog]
) -> SqlCatalog:
    """A fresh SqlCatalog on SQLite and on PostgreSQL."""
    cat = catalog_factory(request.param)
    assert isinstance(cat, SqlCatalog)
    return cat


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests of the catalog primitives (``create_raw``, or marked ``primitives``: a
    metadata file written and a pointer swapped by the client, or that swap replaced
    to stage a race) have no REST form: a REST client sends requirements and updates,
    and the server writes the files. They run on the other kinds."""
    kept, dropped = [], []
    for item in items:
        params = getattr(item, "callspec", None)
        rest = params is not None and params.params.get("catalog") == "rest"
        primitive = "create_raw" in getattr(item, "fixturenames", ()) or item.get_closest_marker(
            "primitives"
        )
        (dropped if rest and primitive else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
