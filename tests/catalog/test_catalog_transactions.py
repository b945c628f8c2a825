"""Commits to several tables at once (``Catalog.commit_transaction``; the REST
protocol's ``/transactions/commit``): all tables change, or none does, and a refused
transaction leaves no metadata file behind. On SQLite, PostgreSQL and REST; the
filesystem catalog says it cannot."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from neve.catalog import Catalog, FilesystemCatalog
from neve.errors import CommitFailedError, ValidationError
from neve.io.fileio import local_path
from neve.spec.requirements import AssertRefSnapshotId, AssertTableUUID
from neve.spec.updates import SetProperties

SCHEMA = pa.schema([pa.field("id", pa.int64())])


def _metadata_files(location: str) -> set[str]:
    folder = os.path.join(local_path(location), "metadata")
    return {n for n in os.listdir(folder) if n.endswith(".metadata.json")}


def test_a_transaction_changes_every_table_or_none(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    a = catalog.create_table("db.a", SCHEMA)
    b = catalog.create_table("db.b", SCHEMA)
    a.append(pa.table({"id": [1]}, schema=SCHEMA))
    if isinstance(catalog, FilesystemCatalog):
        with pytest.raises(ValidationError, match="cannot commit several tables atomically"):
            catalog.commit_transaction(
                [
                    ("db.a", [], [SetProperties({"k": "1"})]),
                    ("db.b", [], [SetProperties({"k": "1"})]),
                ]
            )
        return
    a, b = catalog.load_table("db.a"), catalog.load_table("db.b")
    done = catalog.commit_transaction(
        [
            ("db.a", [AssertTableUUID(a.metadata.table_uuid)], [SetProperties({"k": "1"})]),
            ("db.b", [AssertTableUUID(b.metadata.table_uuid)], [SetProperties({"k": "1"})]),
        ]
    )
    assert [r.metadata.properties["k"] for r in done] == ["1", "1"]
    assert catalog.load_table("db.a").properties["k"] == "1"
    assert catalog.load_table("db.b").properties["k"] == "1"
    before = {
        n: (
            catalog.load_table(n).metadata_location,
            _metadata_files(catalog.load_table(n).location),
        )
        for n in ("db.a", "db.b")
    }
    # b's requirement does not hold (main is not at snapshot 7): a is not changed either
    with pytest.raises(CommitFailedError, match="assert-ref-snapshot-id"):
        catalog.commit_transaction(
            [
                ("db.a", [], [SetProperties({"k": "2"})]),
                ("db.b", [AssertRefSnapshotId("main", 7)], [SetProperties({"k": "2"})]),
            ]
        )
    after = {
        n: (
            catalog.load_table(n).metadata_location,
            _metadata_files(catalog.load_table(n).location),
        )
        for n in ("db.a", "db.b")
    }
    assert after == before
    assert catalog.load_table("db.a").properties["k"] == "1"
    with pytest.raises(ValidationError, match="twice"):
        catalog.commit_transaction(
            [("db.a", [], [SetProperties({"x": "1"})]), ("db.a", [], [SetProperties({"x": "2"})])]
        )
