"""The catalog seam: ``commit(identifier, requirements, updates)`` on every catalog kind
(SQLite, PostgreSQL, filesystem). The catalog checks the requirements on its current
metadata, applies the updates, and swaps the pointer; a requirement that does not hold
is a CommitFailedError that changes nothing (no new pointer, no file left behind)."""

from __future__ import annotations

import os
import pickle

import pyarrow as pa
import pytest

from neve.catalog import Catalog
from neve.errors import CommitFailedError
from neve.io.fileio import local_path
from neve.spec.commit_json import requirement_from_json, update_from_json
from neve.spec.refs import MAIN_BRANCH
from neve.spec.requirements import (
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    TableRequirement,
)
from neve.spec.updates import RemoveSnapshotRef, SetProperties, SetSnapshotRef
from neve.table.table import Table

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64())})


def _files(table: Table) -> set[str]:
    root = local_path(table.location)
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


@pytest.fixture
def table(catalog: Catalog) -> Table:
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", ROWS.schema)
    t.append(ROWS)
    return t


def test_a_commit_of_requirements_and_updates_applies_them(catalog: Catalog, table: Table) -> None:
    md = table.metadata
    head = md.current_snapshot_id
    assert head is not None
    reqs = [
        AssertTableUUID(md.table_uuid),
        AssertRefSnapshotId(MAIN_BRANCH, head),
        AssertCurrentSchemaId(md.current_schema_id),
        AssertLastAssignedFieldId(md.last_column_id),
        AssertDefaultSpecId(md.default_spec_id),
        AssertLastAssignedPartitionId(md.last_partition_id),
        AssertDefaultSortOrderId(md.default_sort_order_id),
    ]
    updates = [
        SetProperties({"owner": "neve"}),
        update_from_json(
            {"action": "set-snapshot-ref", "ref-name": "audit", "type": "tag", "snapshot-id": head}
        ),
    ]
    result = catalog.commit(("db", "t"), reqs, updates)
    loaded = catalog.load_table("db.t")
    assert loaded.metadata_location == result.metadata_location != table.metadata_location
    assert loaded.properties["owner"] == "neve"
    assert loaded.metadata.refs["audit"].snapshot_id == head
    assert loaded.metadata.metadata_log[-1].metadata_file == table.metadata_location
    assert loaded.scan().to_arrow().num_rows == 3


@pytest.mark.parametrize(
    "stale",
    [
        {"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"},
        {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None},
        {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1},
        {"type": "assert-current-schema-id", "current-schema-id": 7},
        {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 99},
        {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1},
        {"type": "assert-default-spec-id", "default-spec-id": 3},
        {"type": "assert-default-sort-order-id", "default-sort-order-id": 5},
        {"type": "assert-create"},
    ],
    ids=lambda b: str(b["type"]),
)
def test_a_requirement_that_fails_changes_nothing(
    catalog: Catalog, table: Table, stale: dict[str, object]
) -> None:
    before_location = table.metadata_location
    before_files = _files(table)
    req: TableRequirement = requirement_from_json(stale)
    with pytest.raises(CommitFailedError, match=str(stale["type"])):
        catalog.commit(("db", "t"), [req], [SetProperties({"x": "1"})])
    assert catalog.load_table("db.t").metadata_location == before_location
    assert _files(table) == before_files
    assert "x" not in catalog.load_table("db.t").properties


def test_a_stale_branch_requirement_fails_after_a_concurrent_append(
    catalog: Catalog, table: Table
) -> None:
    head = table.metadata.current_snapshot_id
    other = catalog.load_table("db.t")
    other.append(ROWS)  # a concurrent writer moves main
    with pytest.raises(CommitFailedError, match="moved from"):
        catalog.commit(
            ("db", "t"),
            [AssertRefSnapshotId(MAIN_BRANCH, head)],
            [RemoveSnapshotRef(MAIN_BRANCH)],
        )
    assert catalog.load_table("db.t").scan().to_arrow().num_rows == 6


def test_a_requirement_that_holds_only_on_a_version_this_catalog_has_not_seen(
    catalog: Catalog, table: Table
) -> None:
    """A commit may start from the version its catalog last saw (a stale one would only
    lose the swap); a requirement failing there is checked again on the current
    version, which another process's catalog made."""
    other = pickle.loads(pickle.dumps(catalog))  # a catalog of its own, as in another process
    other.load_table("db.t").append(ROWS)
    head = other.load_table("db.t").metadata.current_snapshot_id
    assert head != table.metadata.current_snapshot_id
    catalog.commit(
        ("db", "t"), [AssertRefSnapshotId(MAIN_BRANCH, head)], [SetProperties({"k": "v"})]
    )
    fresh = other.load_table("db.t")
    assert fresh.properties["k"] == "v"
    assert fresh.metadata.current_snapshot_id == head
    assert fresh.scan().to_arrow().num_rows == 6


def test_updates_without_requirements_apply_on_top_of_a_concurrent_commit(
    catalog: Catalog, table: Table
) -> None:
    """As on a REST server: a property change needs no requirement beyond the table's
    identity, so it lands on whatever version is current."""
    catalog.load_table("db.t").append(ROWS)
    catalog.commit(
        ("db", "t"), [AssertTableUUID(table.metadata.table_uuid)], [SetProperties({"k": "v"})]
    )
    fresh = catalog.load_table("db.t")
    assert fresh.properties["k"] == "v"
    assert fresh.scan().to_arrow().num_rows == 6


def test_updates_that_do_not_apply_are_a_commit_failure(catalog: Catalog, table: Table) -> None:
    before = table.metadata_location
    head = table.metadata.current_snapshot_id
    assert head is not None
    ref = update_from_json(
        {"action": "set-snapshot-ref", "ref-name": "b", "type": "branch", "snapshot-id": 404}
    )
    assert isinstance(ref, SetSnapshotRef)
    with pytest.raises(CommitFailedError, match="do not apply"):
        catalog.commit(("db", "t"), [], [ref])
    assert catalog.load_table("db.t").metadata_location == before


def test_requirements_on_a_missing_table(table: Table) -> None:
    AssertCreate().check(None)
    with pytest.raises(CommitFailedError, match="exists already"):
        AssertCreate().check(table.metadata)
    with pytest.raises(CommitFailedError, match="does not exist"):
        AssertTableUUID(table.metadata.table_uuid).check(None)
