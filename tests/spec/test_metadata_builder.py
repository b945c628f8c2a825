"""The metadata builder: updates applied to a base metadata, requirements checked
against it, and the metadata log kept by next_metadata."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from neve.errors import (
    CommitFailedError,
    NoSuchSnapshotError,
    SchemaError,
    UnsupportedFormatVersionError,
    ValidationError,
)
from neve.spec.metadata_builder import apply_updates, next_metadata
from neve.spec.metadata_json import metadata_from_bytes, metadata_from_json, metadata_to_json
from neve.spec.partition import PartitionField, PartitionSpec
from neve.spec.refs import MAIN_BRANCH, SnapshotRef, SnapshotRefType
from neve.spec.requirements import (
    AssertCurrentSchemaId,
    AssertDefaultSpecId,
    AssertRefSnapshotId,
    AssertTableUUID,
    TableRequirement,
)
from neve.spec.schema import Schema
from neve.spec.snapshot import MetadataLogEntry, Operation, Snapshot, SnapshotLogEntry
from neve.spec.sort_order import NullOrder, SortDirection, SortField, SortOrder
from neve.spec.table_metadata import TableMetadata
from neve.spec.transforms import BucketTransform, DayTransform, IdentityTransform
from neve.spec.types import DOUBLE, LONG, STRING, TIMESTAMP, ListType, NestedField
from neve.spec.updates import (
    LAST_ADDED,
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
    UpgradeFormatVersion,
)

UUID = "3f0b7a52-9d61-4c8e-b5a4-1e2d3c4b5a69"
T0 = 1_700_000_000_000

ID = NestedField(1, "id", LONG, True)
DATA = NestedField(2, "data", STRING)
TS = NestedField(3, "ts", TIMESTAMP)
SCHEMA = Schema(ID, DATA, TS, schema_id=0, identifier_field_ids=[1])


def new_table(version: int = 2) -> TableMetadata:
    return TableMetadata(
        format_version=version,
        table_uuid=UUID,
        location="file:///wh/db/t",
        last_sequence_number=0,
        last_updated_ms=T0,
        last_column_id=3,
        schemas=(SCHEMA,),
        current_schema_id=0,
        partition_specs=(PartitionSpec(0, ()),),
        default_spec_id=0,
        last_partition_id=999,
        sort_orders=(SortOrder(0, ()),),
        default_sort_order_id=0,
        next_row_id=0 if version >= 3 else None,
    )


def snap(
    sid: int,
    seq: int,
    parent: int | None = None,
    ts: int | None = None,
    first_row_id: int | None = None,
    added_rows: int | None = None,
) -> Snapshot:
    return Snapshot(
        snapshot_id=sid,
        sequence_number=seq,
        timestamp_ms=T0 + 1000 * seq if ts is None else ts,
        manifest_list=f"file:///wh/db/t/metadata/snap-{sid}.avro",
        operation=Operation.APPEND,
        summary={"added-records": "10"},
        parent_snapshot_id=parent,
        schema_id=0,
        first_row_id=first_row_id,
        added_rows=added_rows,
    )


def commit(md: TableMetadata, s: Snapshot, branch: str = MAIN_BRANCH) -> TableMetadata:
    return apply_updates(md, [AddSnapshot(s), SetSnapshotRef(branch, SnapshotRef(s.snapshot_id))])


def history(n: int, version: int = 2) -> TableMetadata:
    """A table with n appends on main: snapshot ids 1..n, sequence numbers 1..n."""
    md = new_table(version)
    for i in range(1, n + 1):
        md = commit(md, snap(i, i if version > 1 else 0, parent=i - 1 or None, ts=T0 + 1000 * i))
    return md


# -- schemas --------------------------------------------------------------------------


def test_add_schema_assigns_next_id_and_last_column_id() -> None:
    md = new_table()
    evolved = Schema(ID, DATA, TS, NestedField(4, "score", DOUBLE), identifier_field_ids=[1])
    out = apply_updates(md, [AddSchema(evolved, last_column_id=4)])
    assert [s.schema_id for s in out.schemas] == [0, 1]
    assert out.schema_by_id(1).fields == evolved.fields
    assert out.last_column_id == 4
    assert out.current_schema_id == 0  # adding does not make it current
    # the base is unchanged
    assert md.schemas == (SCHEMA,) and md.last_column_id == 3


def test_add_schema_takes_max_of_ids_and_last_column_id() -> None:
    md = new_table().with_(schemas=(SCHEMA, Schema(ID, TS, schema_id=5)))
    nested = NestedField(7, "tags", ListType(8, STRING), False)
    schema = Schema(ID, nested, schema_id=42)
    # the update's last_column_id may be above the schema's highest id (dropped columns)
    out = apply_updates(md, [AddSchema(schema, last_column_id=11)])
    assert [s.schema_id for s in out.schemas] == [0, 5, 6]
    assert out.last_column_id == 11
    # and the schema's highest id wins over a stale last_column_id
    out = apply_updates(md, [AddSchema(schema, last_column_id=2)])
    assert out.last_column_id == 8


def test_add_identical_schema_reuses_existing_id() -> None:
    md = new_table()
    same = Schema(ID, DATA, TS, schema_id=9, identifier_field_ids=[1])
    out = apply_updates(md, [AddSchema(same, last_column_id=3), SetCurrentSchema(LAST_ADDED)])
    assert out.schemas == md.schemas
    assert out.current_schema_id == 0
    # identifier fields are part of the identity of a schema
    other = Schema(ID, DATA, TS, identifier_field_ids=[])
    out = apply_updates(md, [AddSchema(other, last_column_id=3)])
    assert [s.schema_id for s in out.schemas] == [0, 1]


def test_set_current_schema_last_added() -> None:
    md = new_table()
    evolved = Schema(ID, DATA, TS, NestedField(4, "score", DOUBLE))
    out = apply_updates(md, [AddSchema(evolved, 4), SetCurrentSchema(LAST_ADDED)])
    assert out.current_schema_id == 1
    assert out.schema().find_field("score").field_id == 4
    # an explicit id works too, and can go back
    assert apply_updates(out, [SetCurrentSchema(0)]).current_schema_id == 0


def test_set_current_schema_errors() -> None:
    md = new_table()
    with pytest.raises(SchemaError, match="same commit"):
        apply_updates(md, [SetCurrentSchema(LAST_ADDED)])
    with pytest.raises(SchemaError, match="schema id 7"):
        apply_updates(md, [SetCurrentSchema(7)])


def test_add_schema_validates_identifier_fields() -> None:
    md = new_table()
    optional_id = Schema(ID, DATA, identifier_field_ids=[2])
    with pytest.raises(SchemaError, match="required"):
        apply_updates(md, [AddSchema(optional_id, 3)])
    float_id = Schema(ID, NestedField(4, "f", DOUBLE, True), identifier_field_ids=[4])
    with pytest.raises(SchemaError, match="float or double"):
        apply_updates(md, [AddSchema(float_id, 4)])


# -- partition specs and sort orders ---------------------------------------------------


def test_add_spec_assigns_new_id_and_last_partition_id() -> None:
    md = new_table()
    spec = PartitionSpec(0, (PartitionField(3, 1000, DayTransform(), "ts_day"),))
    out = apply_updates(md, [AddSpec(spec), SetDefaultSpec(LAST_ADDED)])
    assert [s.spec_id for s in out.partition_specs] == [0, 1]
    assert out.spec_by_id(1).fields == spec.fields
    assert out.default_spec_id == 1
    assert out.last_partition_id == 1000
    wider = PartitionSpec(
        0,
        (
            PartitionField(3, 1000, DayTransform(), "ts_day"),
            PartitionField(1, 1001, BucketTransform(8), "id_bucket"),
        ),
    )
    out = apply_updates(out, [AddSpec(wider)])
    assert [s.spec_id for s in out.partition_specs] == [0, 1, 2]
    assert out.last_partition_id == 1001
    assert out.default_spec_id == 1


def test_add_identical_spec_reuses_its_id() -> None:
    spec = PartitionSpec(0, (PartitionField(3, 1000, DayTransform(), "ts_day"),))
    md = apply_updates(new_table(), [AddSpec(spec)])
    again = PartitionSpec(17, spec.fields)
    out = apply_updates(md, [AddSpec(again), SetDefaultSpec(LAST_ADDED)])
    assert out.partition_specs == md.partition_specs
    assert out.default_spec_id == 1
    # the empty spec is spec 0 already
    assert (
        apply_updates(md, [AddSpec(PartitionSpec(3, ())), SetDefaultSpec(-1)]).default_spec_id == 0
    )


def test_add_spec_rejects_bad_sources_and_transforms() -> None:
    md = new_table()
    with pytest.raises(SchemaError, match="day"):
        apply_updates(
            md, [AddSpec(PartitionSpec(0, (PartitionField(2, 1000, DayTransform(), "d"),)))]
        )
    with pytest.raises(SchemaError, match="column id 99"):
        apply_updates(
            md, [AddSpec(PartitionSpec(0, (PartitionField(99, 1000, IdentityTransform(), "x"),)))]
        )
    with pytest.raises(ValidationError, match="partition spec 4"):
        apply_updates(md, [SetDefaultSpec(4)])
    with pytest.raises(ValidationError):
        apply_updates(md, [SetDefaultSpec(LAST_ADDED)])


def test_add_sort_order() -> None:
    md = new_table()
    by_ts = SortOrder(
        0, (SortField(3, IdentityTransform(), SortDirection.DESC, NullOrder.NULLS_LAST),)
    )
    out = apply_updates(md, [AddSortOrder(by_ts), SetDefaultSortOrder(LAST_ADDED)])
    assert [o.order_id for o in out.sort_orders] == [0, 1]
    assert out.default_sort_order_id == 1
    assert out.sort_order().fields == by_ts.fields
    # the same fields reuse the id; unsorted is always order 0
    again = apply_updates(out, [AddSortOrder(SortOrder(5, by_ts.fields)), SetDefaultSortOrder(-1)])
    assert again.sort_orders == out.sort_orders and again.default_sort_order_id == 1
    unsorted = apply_updates(out, [AddSortOrder(SortOrder(3, ())), SetDefaultSortOrder(-1)])
    assert unsorted.sort_orders == out.sort_orders and unsorted.default_sort_order_id == 0
    by_id = SortOrder(0, (SortField(1, BucketTransform(4)),))
    assert [o.order_id for o in apply_updates(out, [AddSortOrder(by_id)]).sort_orders] == [0, 1, 2]
    with pytest.raises(ValidationError, match="sort order 9"):
        apply_updates(md, [SetDefaultSortOrder(9)])


# -- snapshots ------------------------------------------------------------------------


def test_add_snapshot_updates_sequence_number_and_time() -> None:
    md = new_table()
    s1 = snap(11, 1)
    out = apply_updates(md, [AddSnapshot(s1)])
    assert out.snapshots == (s1,)
    assert out.last_sequence_number == 1
    assert out.last_updated_ms == s1.timestamp_ms
    # adding alone does not move main
    assert out.current_snapshot_id is None and dict(out.refs) == {}
    assert out.snapshot_log == ()


def test_add_snapshot_sequence_number_must_increase() -> None:
    md = history(3)
    assert md.last_sequence_number == 3
    with pytest.raises(ValidationError, match="sequence number 3"):
        apply_updates(md, [AddSnapshot(snap(4, 3, parent=3))])
    with pytest.raises(ValidationError, match="sequence number 2"):
        apply_updates(md, [AddSnapshot(snap(4, 2, parent=3))])
    # a snapshot without a parent (a replaced table) is allowed, as in Iceberg-Java
    out = apply_updates(md, [AddSnapshot(snap(4, 3))])
    assert out.last_sequence_number == 3
    assert apply_updates(md, [AddSnapshot(snap(4, 4, parent=3))]).last_sequence_number == 4


def test_add_snapshot_with_existing_id_fails() -> None:
    md = history(2)
    with pytest.raises(ValidationError, match="exists already"):
        apply_updates(md, [AddSnapshot(snap(2, 3, parent=2))])


def test_v1_snapshots_have_no_sequence_numbers() -> None:
    md = history(3, version=1)
    assert md.last_sequence_number == 0
    assert [s.sequence_number for s in md.snapshots] == [0, 0, 0]
    assert md.current_snapshot_id == 3
    # no sequence-number check in v1
    assert apply_updates(md, [AddSnapshot(snap(4, 0, parent=3))]).last_sequence_number == 0


def test_v3_add_snapshot_advances_next_row_id() -> None:
    md = new_table(3)
    md = commit(md, snap(1, 1, first_row_id=0, added_rows=100))
    assert md.next_row_id == 100
    md = commit(md, snap(2, 2, parent=1, first_row_id=100, added_rows=0))
    assert md.next_row_id == 100
    md = commit(md, snap(3, 3, parent=2, first_row_id=100, added_rows=25))
    assert md.next_row_id == 125
    again = metadata_from_json(metadata_to_json(md))
    assert again.next_row_id == 125 and again == md


def test_v3_add_snapshot_rejects_row_ids_behind_next_row_id() -> None:
    md = commit(new_table(3), snap(1, 1, first_row_id=0, added_rows=100))
    with pytest.raises(ValidationError, match="next-row-id 100"):
        apply_updates(md, [AddSnapshot(snap(2, 2, parent=1, first_row_id=50, added_rows=10))])
    with pytest.raises(ValidationError, match="first-row-id None"):
        apply_updates(md, [AddSnapshot(snap(2, 2, parent=1))])


# -- refs -----------------------------------------------------------------------------


def test_set_main_moves_current_snapshot_and_appends_to_log() -> None:
    md = apply_updates(new_table(), [AddSnapshot(snap(1, 1)), AddSnapshot(snap(2, 2, parent=1))])
    out = apply_updates(md, [SetSnapshotRef(MAIN_BRANCH, SnapshotRef(1))])
    assert out.current_snapshot_id == 1
    assert dict(out.refs) == {MAIN_BRANCH: SnapshotRef(1, SnapshotRefType.BRANCH)}
    assert out.snapshot_log == (SnapshotLogEntry(T0 + 1000, 1),)
    out = apply_updates(out, [SetSnapshotRef(MAIN_BRANCH, SnapshotRef(2))])
    assert out.current_snapshot_id == 2
    assert out.snapshot_log == (SnapshotLogEntry(T0 + 1000, 1), SnapshotLogEntry(T0 + 2000, 2))
    assert out.snapshot_as_of(T0 + 1500).snapshot_id == 1


def test_rolling_main_back_logs_the_time_of_the_change() -> None:
    md = history(2)
    before = int(time.time() * 1000)
    out = apply_updates(md, [SetSnapshotRef(MAIN_BRANCH, SnapshotRef(1))])
    assert out.current_snapshot_id == 1
    last = out.snapshot_log[-1]
    assert last.snapshot_id == 1
    assert last.timestamp_ms >= before  # now, not the old snapshot's time
    assert [e.timestamp_ms for e in out.snapshot_log] == sorted(
        e.timestamp_ms for e in out.snapshot_log
    )


def test_setting_main_to_its_current_ref_changes_nothing() -> None:
    md = history(2)
    out = apply_updates(md, [SetSnapshotRef(MAIN_BRANCH, SnapshotRef(2))])
    assert out == md
    assert len(out.snapshot_log) == 2


def test_other_branches_and_tags_leave_main_alone() -> None:
    md = history(3)
    retention = SnapshotRef(2, SnapshotRefType.BRANCH, 3, 86_400_000, 604_800_000)
    out = apply_updates(
        md,
        [
            SetSnapshotRef("audit", retention),
            SetSnapshotRef("v1", SnapshotRef(1, SnapshotRefType.TAG, max_ref_age_ms=1000)),
        ],
    )
    assert out.current_snapshot_id == 3
    assert out.snapshot_log == md.snapshot_log
    assert out.refs["audit"] == retention
    tagged = out.snapshot_for_ref("v1")
    assert tagged is not None and tagged.snapshot_id == 1
    written = metadata_to_json(out)["refs"]
    assert written["audit"] == {
        "snapshot-id": 2,
        "type": "branch",
        "min-snapshots-to-keep": 3,
        "max-snapshot-age-ms": 86_400_000,
        "max-ref-age-ms": 604_800_000,
    }
    assert written["v1"] == {"snapshot-id": 1, "type": "tag", "max-ref-age-ms": 1000}


def test_set_ref_errors() -> None:
    md = history(1)
    with pytest.raises(NoSuchSnapshotError):
        apply_updates(md, [SetSnapshotRef("b", SnapshotRef(99))])
    with pytest.raises(ValidationError, match="branch"):
        apply_updates(md, [SetSnapshotRef(MAIN_BRANCH, SnapshotRef(1, SnapshotRefType.TAG))])


def test_remove_snapshot_ref() -> None:
    md = apply_updates(history(2), [SetSnapshotRef("b", SnapshotRef(1))])
    out = apply_updates(md, [RemoveSnapshotRef("b")])
    assert set(out.refs) == {MAIN_BRANCH}
    assert out.current_snapshot_id == 2
    out = apply_updates(md, [RemoveSnapshotRef(MAIN_BRANCH)])
    assert set(out.refs) == {"b"}
    assert out.current_snapshot_id is None
    assert metadata_to_json(out)["current-snapshot-id"] == -1
    assert metadata_from_json(metadata_to_json(out)) == out
    with pytest.raises(NoSuchSnapshotError, match="nope"):
        apply_updates(md, [RemoveSnapshotRef("nope")])


# -- removing snapshots ---------------------------------------------------------------


def test_remove_snapshots_refuses_referenced_snapshots() -> None:
    md = apply_updates(history(3), [SetSnapshotRef("keep", SnapshotRef(1, SnapshotRefType.TAG))])
    with pytest.raises(ValidationError, match="'keep'"):
        apply_updates(md, [RemoveSnapshots((1,))])
    with pytest.raises(ValidationError, match="'main'"):
        apply_updates(md, [RemoveSnapshots((3,))])


def test_remove_snapshots_drops_them_and_their_history() -> None:
    md = history(3)
    md = md.with_(
        statistics=(
            {"snapshot-id": 2, "statistics-path": "s2.puffin", "file-size-in-bytes": 1},
            {"snapshot-id": 3, "statistics-path": "s3.puffin", "file-size-in-bytes": 1},
        ),
        partition_statistics=(
            {"snapshot-id": 2, "statistics-path": "p2.parquet", "file-size-in-bytes": 1},
        ),
    )
    out = apply_updates(md, [RemoveSnapshots((2,))])
    assert [s.snapshot_id for s in out.snapshots] == [1, 3]
    # spec: entries before an expired snapshot leave the log with it
    assert out.snapshot_log == (SnapshotLogEntry(T0 + 3000, 3),)
    with pytest.raises(NoSuchSnapshotError):
        out.snapshot_as_of(T0 + 2500)
    assert [s["snapshot-id"] for s in out.statistics] == [3]
    assert out.partition_statistics == ()
    assert out.current_snapshot_id == 3
    assert out.last_sequence_number == 3
    assert metadata_from_json(metadata_to_json(out)) == out


def test_remove_oldest_snapshots_keeps_later_log() -> None:
    md = history(4)
    out = apply_updates(md, [RemoveSnapshots((1,))])
    assert [e.snapshot_id for e in out.snapshot_log] == [2, 3, 4]
    assert out.snapshot_as_of(T0 + 2500).snapshot_id == 2
    # unknown ids are ignored
    assert apply_updates(md, [RemoveSnapshots((77,))]) == md


# -- properties and format version ----------------------------------------------------


def test_set_and_remove_properties() -> None:
    md = new_table()
    out = apply_updates(md, [SetProperties({"a": "1", "b": "2"}), SetProperties({"a": "3"})])
    assert dict(out.properties) == {"a": "3", "b": "2"}
    out = apply_updates(out, [RemoveProperties(("a", "missing"))])
    assert dict(out.properties) == {"b": "2"}
    assert dict(md.properties) == {}


def test_upgrade_format_version() -> None:
    md = history(2, version=1)
    v2 = apply_updates(md, [UpgradeFormatVersion(2)])
    assert v2.format_version == 2 and v2.next_row_id is None
    v3 = apply_updates(v2, [UpgradeFormatVersion(3)])
    assert v3.format_version == 3 and v3.next_row_id == 0
    assert apply_updates(v3, [UpgradeFormatVersion(3)]) == v3
    out = metadata_to_json(v3)
    assert out["format-version"] == 3 and out["next-row-id"] == 0
    assert "schema" not in out and "partition-spec" not in out
    assert metadata_from_json(out) == v3


@pytest.mark.parametrize(("start", "target"), [(2, 1), (3, 2), (3, 1), (2, 4), (1, 0)])
def test_upgrade_format_version_refuses_downgrades_and_unknown_versions(
    start: int, target: int
) -> None:
    with pytest.raises(UnsupportedFormatVersionError):
        apply_updates(new_table(start), [UpgradeFormatVersion(target)])


# -- next_metadata: metadata log ------------------------------------------------------


def test_next_metadata_appends_the_previous_file() -> None:
    base = history(1)
    new = apply_updates(base, [SetProperties({"k": "v"})])
    out = next_metadata(new, base, "file:///wh/db/t/metadata/00001.metadata.json")
    assert out.metadata_log == (
        MetadataLogEntry(base.last_updated_ms, "file:///wh/db/t/metadata/00001.metadata.json"),
    )
    assert out.last_updated_ms >= int(time.time() * 1000) - 60_000
    assert out.last_updated_ms >= new.last_updated_ms
    # a new table has no previous file
    created = next_metadata(new_table(), None, None)
    assert created.metadata_log == ()


def test_next_metadata_keeps_a_future_update_time() -> None:
    future = 4_000_000_000_000
    md = new_table().with_(last_updated_ms=future)
    assert next_metadata(md, None, None).last_updated_ms == future


@pytest.mark.parametrize(("cap", "kept"), [(None, 100), ("3", 3), ("1", 1), ("0", 1)])
def test_next_metadata_caps_the_log(cap: str | None, kept: int) -> None:
    md = new_table()
    if cap is not None:
        md = apply_updates(md, [SetProperties({"write.metadata.previous-versions-max": cap})])
    locations = [f"file:///wh/db/t/metadata/{i:05d}.metadata.json" for i in range(120)]
    for i, loc in enumerate(locations):
        base = md.with_(last_updated_ms=T0 + i)
        md = next_metadata(base, base, loc)
    assert len(md.metadata_log) == kept
    assert [e.metadata_file for e in md.metadata_log] == locations[-kept:]
    assert md.metadata_log[-1].timestamp_ms == T0 + 119


# -- requirements ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "requirement",
    [
        AssertTableUUID(UUID),
        AssertRefSnapshotId(MAIN_BRANCH, 2),
        AssertRefSnapshotId("absent", None),
        AssertCurrentSchemaId(0),
        AssertDefaultSpecId(0),
    ],
)
def test_requirements_that_hold(requirement: TableRequirement) -> None:
    requirement.check(history(2))


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        (AssertTableUUID("00000000-0000-0000-0000-000000000000"), "re-created"),
        (AssertRefSnapshotId(MAIN_BRANCH, 1), "moved from 1 to 2"),
        (AssertRefSnapshotId(MAIN_BRANCH, None), "moved from None to 2"),
        (AssertRefSnapshotId("feature", 1), "moved from 1 to None"),
        (AssertCurrentSchemaId(1), "schema changed from 1 to 0"),
        (AssertDefaultSpecId(3), "spec changed from 3 to 0"),
    ],
)
def test_requirements_that_fail(requirement: TableRequirement, message: str) -> None:
    with pytest.raises(CommitFailedError, match=message) as info:
        requirement.check(history(2))
    assert info.value.retryable


def test_concurrent_commit_fails_the_ref_requirement() -> None:
    base = history(1)
    # two writers plan against the same base; the first one wins
    requirement = AssertRefSnapshotId(MAIN_BRANCH, base.current_snapshot_id)
    requirement.check(base)
    winner = commit(base, snap(2, 2, parent=1))
    with pytest.raises(CommitFailedError):
        requirement.check(winner)


# -- builder output through the codec -------------------------------------------------


def test_updates_on_a_golden_table_round_trip_through_json() -> None:
    golden = Path(__file__).parent / "golden" / "v2_evolved.metadata.json"
    md = metadata_from_bytes(golden.read_bytes())
    head = md.current_snapshot_id
    assert head is not None
    s = snap(123456789, md.last_sequence_number + 1, parent=head, ts=1719000400000)
    out = apply_updates(
        md,
        [
            AddSnapshot(s),
            SetSnapshotRef(MAIN_BRANCH, SnapshotRef(s.snapshot_id)),
            SetProperties({"owner": "data-eng"}),
            RemoveSnapshotRef("release-2024.06"),
            RemoveSnapshots((881903721495723052,)),
        ],
    )
    out = next_metadata(out, md, "s3://lake/events/clicks/metadata/00033-5f6a.metadata.json")
    assert out.last_sequence_number == 35
    assert out.current_snapshot_id == 123456789
    assert set(out.refs) == {MAIN_BRANCH, "audit"}
    assert [e.snapshot_id for e in out.snapshot_log] == [
        2148503374093862170,
        7450216593015398411,
        123456789,
    ]
    assert len(out.metadata_log) == 3
    assert metadata_from_json(metadata_to_json(out)) == out


def test_the_default_spec_and_the_current_schema_cannot_be_removed() -> None:
    md = new_table()
    with pytest.raises(ValidationError, match="default spec"):
        apply_updates(md, [RemovePartitionSpecs((md.default_spec_id,))])
    with pytest.raises(ValidationError, match="current schema"):
        apply_updates(md, [RemoveSchemas((md.current_schema_id,))])
