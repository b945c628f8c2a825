"""Requirements and updates in the JSON form of the Iceberg REST catalog's commit body:
bodies shaped as the REST protocol defines them read and write back unchanged, every
kind neve has round-trips, and kinds or bodies neve cannot apply are typed errors."""

from __future__ import annotations

from typing import Any

import pytest

from neve.errors import ValidationError
from neve.spec.commit_json import (
    UNSUPPORTED_UPDATES,
    requirement_from_json,
    requirement_to_json,
    update_from_json,
    update_to_json,
)
from neve.spec.partition import PartitionField, PartitionSpec
from neve.spec.refs import SnapshotRef, SnapshotRefType
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
from neve.spec.schema import Schema
from neve.spec.snapshot import Operation, Snapshot
from neve.spec.sort_order import NullOrder, SortDirection, SortField, SortOrder
from neve.spec.transforms import parse_transform
from neve.spec.types import LONG, STRING, NestedField
from neve.spec.updates import (
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AddSpec,
    RemovePartitionSpecs,
    RemoveProperties,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetProperties,
    SetSnapshotRef,
    TableUpdate,
    UpgradeFormatVersion,
)

# Bodies as the REST protocol (open-api/rest-catalog-open-api.yaml) shapes them.
REST_REQUIREMENTS: list[dict[str, Any]] = [
    {"type": "assert-create"},
    {"type": "assert-table-uuid", "uuid": "2cc52516-5e73-41f2-b139-545d41a4e151"},
    {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 3051729675574597004},
    {"type": "assert-ref-snapshot-id", "ref": "audit", "snapshot-id": None},
    {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 12},
    {"type": "assert-current-schema-id", "current-schema-id": 4},
    {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1002},
    {"type": "assert-default-spec-id", "default-spec-id": 5},
    {"type": "assert-default-sort-order-id", "default-sort-order-id": 0},
]

REST_UPDATES: list[dict[str, Any]] = [
    {"action": "upgrade-format-version", "format-version": 3},
    {
        "action": "add-schema",
        "schema": {
            "type": "struct",
            "schema-id": 1,
            "fields": [
                {"id": 1, "name": "id", "required": True, "type": "long"},
                {"id": 2, "name": "data", "required": False, "type": "string"},
            ],
            "identifier-field-ids": [1],
        },
        "last-column-id": 2,
    },
    {"action": "set-current-schema", "schema-id": -1},
    {
        "action": "add-spec",
        "spec": {
            "spec-id": 1,
            "fields": [
                {"source-id": 1, "field-id": 1000, "name": "id_bucket", "transform": "bucket[16]"}
            ],
        },
    },
    {"action": "set-default-spec", "spec-id": -1},
    {
        "action": "add-sort-order",
        "sort-order": {
            "order-id": 1,
            "fields": [
                {
                    "source-id": 1,
                    "transform": "identity",
                    "direction": "asc",
                    "null-order": "nulls-first",
                }
            ],
        },
    },
    {"action": "set-default-sort-order", "sort-order-id": -1},
    {
        "action": "add-snapshot",
        "snapshot": {
            "snapshot-id": 3055729675574597004,
            "parent-snapshot-id": 3051729675574597004,
            "sequence-number": 2,
            "timestamp-ms": 1555100955770,
            "manifest-list": "s3://b/wh/db/t/metadata/snap-3055729675574597004-1-c87bfec7.avro",
            "summary": {"operation": "append", "added-data-files": "4"},
            "schema-id": 1,
        },
    },
    {
        "action": "set-snapshot-ref",
        "ref-name": "main",
        "snapshot-id": 3055729675574597004,
        "type": "branch",
    },
    {
        "action": "set-snapshot-ref",
        "ref-name": "release",
        "snapshot-id": 3051729675574597004,
        "type": "tag",
        "max-ref-age-ms": 86400000,
    },
    {"action": "remove-snapshot-ref", "ref-name": "audit"},
    {"action": "remove-snapshots", "snapshot-ids": [1, 2]},
    {"action": "remove-partition-specs", "spec-ids": [0, 2]},
    {"action": "remove-schemas", "schema-ids": [1]},
    {"action": "set-properties", "updates": {"commit.retry.num-retries": "8"}},
    {"action": "remove-properties", "removals": ["owner", "comment"]},
]


@pytest.mark.parametrize("body", REST_REQUIREMENTS, ids=lambda b: str(b["type"]))
def test_rest_requirements_read_and_write_back(body: dict[str, Any]) -> None:
    assert requirement_to_json(requirement_from_json(body)) == body


@pytest.mark.parametrize(
    "body", REST_UPDATES, ids=lambda b: f"{b['action']}-{b.get('ref-name', '')}"
)
def test_rest_updates_read_and_write_back(body: dict[str, Any]) -> None:
    assert update_to_json(update_from_json(body)) == body


SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "data", STRING),
    schema_id=3,
    identifier_field_ids=(1,),
)

REQUIREMENTS: list[TableRequirement] = [
    AssertCreate(),
    AssertTableUUID("9c12d441-03fe-4693-9a96-a0705ddf69c1"),
    AssertRefSnapshotId("main", 7),
    AssertRefSnapshotId("dev", None),
    AssertLastAssignedFieldId(9),
    AssertCurrentSchemaId(2),
    AssertLastAssignedPartitionId(1001),
    AssertDefaultSpecId(1),
    AssertDefaultSortOrderId(3),
]

UPDATES: list[TableUpdate] = [
    UpgradeFormatVersion(2),
    AddSchema(SCHEMA, 2),
    SetCurrentSchema(3),
    AddSpec(PartitionSpec(2, (PartitionField(1, 1000, parse_transform("bucket[8]"), "b"),))),
    SetDefaultSpec(2),
    AddSortOrder(
        SortOrder(
            1,
            (SortField(2, parse_transform("identity"), SortDirection.DESC, NullOrder.NULLS_LAST),),
        )
    ),
    SetDefaultSortOrder(1),
    AddSnapshot(
        Snapshot(
            snapshot_id=11,
            parent_snapshot_id=10,
            sequence_number=5,
            timestamp_ms=1_700_000_000_000,
            manifest_list="file:///wh/t/metadata/snap-11-0-x.avro",
            operation=Operation.OVERWRITE,
            summary={"added-records": "3"},
            schema_id=3,
        )
    ),
    AddSnapshot(
        Snapshot(
            snapshot_id=12,
            parent_snapshot_id=None,
            sequence_number=1,
            timestamp_ms=1,
            manifest_list="file:///wh/t/metadata/snap-12-0-x.avro",
            operation=Operation.APPEND,
            first_row_id=0,
            added_rows=3,
        )
    ),
    SetSnapshotRef("main", SnapshotRef(11)),
    SetSnapshotRef("v1", SnapshotRef(10, SnapshotRefType.TAG, max_ref_age_ms=5)),
    SetSnapshotRef("dev", SnapshotRef(10, min_snapshots_to_keep=2, max_snapshot_age_ms=9)),
    RemoveSnapshotRef("dev"),
    RemoveSnapshots((1, 2, 3)),
    RemovePartitionSpecs((0, 2)),
    RemoveSchemas((1,)),
    SetProperties({"a": "1", "b": ""}),
    RemoveProperties(("a",)),
]


@pytest.mark.parametrize("req", REQUIREMENTS, ids=lambda r: type(r).__name__)
def test_every_requirement_round_trips(req: TableRequirement) -> None:
    assert requirement_from_json(requirement_to_json(req)) == req


@pytest.mark.parametrize("update", UPDATES, ids=lambda u: type(u).__name__)
def test_every_update_round_trips(update: TableUpdate) -> None:
    assert update_from_json(update_to_json(update)) == update


def test_every_requirement_kind_is_covered() -> None:
    kinds = {b["type"] for b in REST_REQUIREMENTS}
    assert kinds == {requirement_to_json(r)["type"] for r in REQUIREMENTS}
    assert len(kinds) == 8


@pytest.mark.parametrize("kind", sorted(UNSUPPORTED_UPDATES))
def test_rest_updates_neve_does_not_apply_are_refused_by_name(kind: str) -> None:
    with pytest.raises(ValidationError, match=kind):
        update_from_json({"action": kind})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"action": "no-such-thing"}, "unknown update action"),
        ({"action": "set-current-schema"}, "'schema-id' is missing"),
        ({"action": "set-current-schema", "schema-id": "3"}, "is an integer"),
        ({"action": "set-properties", "updates": {"a": 1}}, "maps strings to strings"),
        ({"action": "remove-properties", "removals": "a"}, "list of strings"),
        ({"action": "remove-snapshots", "snapshot-ids": [True]}, "list of integers"),
        (
            {"action": "add-snapshot", "snapshot": {"snapshot-id": 1, "manifest-list": "m"}},
            "malformed",
        ),
        ({"nothing": 1}, "'action' is missing"),
    ],
)
def test_malformed_updates_are_typed_errors(body: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        update_from_json(body)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"type": "assert-everything"}, "unknown requirement type"),
        ({"type": "assert-ref-snapshot-id", "ref": "main"}, "'snapshot-id' is missing"),
        ({"type": "assert-table-uuid", "uuid": 5}, "is a string"),
        ({"type": "assert-default-spec-id", "default-spec-id": None}, "is an integer"),
    ],
)
def test_malformed_requirements_are_typed_errors(body: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        requirement_from_json(body)
