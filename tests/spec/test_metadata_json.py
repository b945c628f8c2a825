"""Table metadata JSON codec: hand-written golden files (v1, v2, v3), real files written
by Iceberg-Java and iceberg-go, bad input, and Hypothesis round trips."""

from __future__ import annotations

import gzip
import json
import string
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neve.errors import UnsupportedFormatVersionError, ValidationError
from neve.spec.metadata_json import (
    metadata_from_bytes,
    metadata_from_json,
    metadata_to_bytes,
    metadata_to_json,
    partition_spec_from_json,
    partition_spec_to_json,
    schema_from_json,
    schema_to_json,
    snapshot_from_json,
    snapshot_to_json,
    sort_order_from_json,
    sort_order_to_json,
    type_from_json,
    type_to_json,
)
from neve.spec.partition import PartitionField, PartitionSpec
from neve.spec.refs import MAIN_BRANCH, SnapshotRef, SnapshotRefType
from neve.spec.schema import Schema
from neve.spec.snapshot import MetadataLogEntry, Operation, Snapshot, SnapshotLogEntry
from neve.spec.sort_order import NullOrder, SortDirection, SortField, SortOrder
from neve.spec.table_metadata import TableMetadata
from neve.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)
from neve.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UUID,
    DecimalType,
    FixedType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)
from strategies import SIMPLE_PRIMITIVES, values_of

GOLDEN = Path(__file__).parent / "golden"
GOLDEN_FILES = sorted(GOLDEN.glob("*.metadata.json"))
FIXTURES = Path("/work/shared/fixtures/iceberg-verification")


def load_golden(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / f"{name}.metadata.json").read_text())
    return data


def read_golden(name: str) -> TableMetadata:
    return metadata_from_bytes((GOLDEN / f"{name}.metadata.json").read_bytes())


def test_all_goldens_are_present() -> None:
    assert [p.name for p in GOLDEN_FILES] == [
        "v1_single_schema.metadata.json",
        "v2_empty.metadata.json",
        "v2_evolved.metadata.json",
        "v3_row_lineage.metadata.json",
    ]


# -- v1 golden ------------------------------------------------------------------------


def test_v1_golden_reads_single_schema_and_spec() -> None:
    md = read_golden("v1_single_schema")
    assert md.format_version == 1
    assert md.table_uuid == "5a7d2f3e-1c4b-4e8a-9f60-2b3c4d5e6f70"
    assert md.location == "s3://warehouse/sales/orders"
    assert md.last_updated_ms == 1602638573874
    assert md.last_column_id == 5
    assert md.last_sequence_number == 0
    # "schema" becomes the one schema, id 0, current.
    assert len(md.schemas) == 1
    schema = md.schema()
    assert schema.schema_id == 0 and md.current_schema_id == 0
    assert [(f.field_id, f.name, f.field_type, f.required) for f in schema.fields] == [
        (1, "order_id", LONG, True),
        (2, "customer", STRING, False),
        (3, "placed_at", TIMESTAMPTZ, True),
        (4, "amount", DecimalType(12, 2), False),
        (5, "region", STRING, False),
    ]
    assert schema.find_field("customer").doc == "customer display name"
    assert schema.identifier_field_ids == ()
    # "partition-spec" (fields only, no ids) becomes spec 0 with ids from 1000.
    assert len(md.partition_specs) == 1
    spec = md.spec()
    assert spec.spec_id == 0 and md.default_spec_id == 0
    assert spec.fields == (
        PartitionField(3, 1000, DayTransform(), "placed_at_day"),
        PartitionField(5, 1001, IdentityTransform(), "region"),
    )
    assert md.last_partition_id == 1001
    # No sort orders: the unsorted order.
    assert md.sort_orders == (SortOrder(0, ()),)
    assert md.default_sort_order_id == 0
    assert md.sort_order().is_unsorted
    assert dict(md.properties) == {"owner": "sales-eng", "write.format.default": "parquet"}


def test_v1_golden_snapshots_have_sequence_number_zero_and_main_is_derived() -> None:
    md = read_golden("v1_single_schema")
    first, second = md.snapshots
    assert first.snapshot_id == 6813592453618453870
    assert first.parent_snapshot_id is None
    assert first.sequence_number == 0 and second.sequence_number == 0
    assert first.operation is Operation.APPEND
    assert dict(first.summary) == {"added-data-files": "4", "added-records": "1200"}
    assert first.schema_id is None
    assert second.operation is Operation.OVERWRITE
    assert second.parent_snapshot_id == first.snapshot_id
    assert second.schema_id == 0
    assert md.current_snapshot_id == 3051729675574597004
    assert md.current_snapshot() == second
    # A v1 file has no refs: main is the current snapshot.
    assert dict(md.refs) == {MAIN_BRANCH: SnapshotRef(3051729675574597004, SnapshotRefType.BRANCH)}
    assert md.snapshot_log == (
        SnapshotLogEntry(1515100955770, 6813592453618453870),
        SnapshotLogEntry(1602638573000, 3051729675574597004),
    )
    assert md.metadata_log == ()
    assert md.next_row_id is None


def test_v1_written_json_keeps_v1_fields() -> None:
    md = read_golden("v1_single_schema")
    out = metadata_to_json(md)
    assert out["format-version"] == 1
    assert "last-sequence-number" not in out
    assert "next-row-id" not in out
    assert out["schema"] == out["schemas"][0]
    assert out["schema"]["fields"][1] == {
        "id": 2,
        "name": "customer",
        "required": False,
        "type": "string",
        "doc": "customer display name",
    }
    assert out["partition-spec"] == out["partition-specs"][0]["fields"]
    assert out["partition-spec"] == [
        {"source-id": 3, "field-id": 1000, "name": "placed_at_day", "transform": "day"},
        {"source-id": 5, "field-id": 1001, "name": "region", "transform": "identity"},
    ]
    assert all("sequence-number" not in s for s in out["snapshots"])


# -- v2 goldens -----------------------------------------------------------------------


def test_v2_golden_schemas() -> None:
    md = read_golden("v2_evolved")
    assert md.format_version == 2
    assert md.last_sequence_number == 34
    assert md.last_column_id == 23
    assert [s.schema_id for s in md.schemas] == [0, 1]
    assert md.current_schema_id == 1
    old = md.schema_by_id(0)
    assert [f.name for f in old.fields] == ["event_id", "user", "ts"]
    assert old.identifier_field_ids == ()
    schema = md.schema()
    assert schema.identifier_field_ids == (1, 9)
    assert schema.find_field(1).doc == "unique per event"
    assert schema.find_type("price") == DecimalType(10, 2)
    device = schema.find_field("device")
    assert device.required and device.doc == "where the event came from"
    assert device.field_type == StructType(
        NestedField(9, "serial", UUID, True),
        NestedField(10, "model", STRING, False),
        NestedField(11, "fingerprint", FixedType(16), False),
    )
    assert schema.find_type("tags") == ListType(13, STRING, True)
    assert schema.find_type("attributes") == MapType(
        15,
        STRING,
        16,
        StructType(
            NestedField(17, "score", DOUBLE, False), NestedField(18, "valid", BOOLEAN, True)
        ),
        False,
    )
    assert schema.find_type("readings") == ListType(20, MapType(21, INT, 22, FLOAT, True), False)
    assert schema.column_name(22) == "readings.element.value"
    assert schema.find_type("payload") == BINARY
    assert schema.highest_field_id == 23


def test_v2_golden_specs_cover_every_transform() -> None:
    md = read_golden("v2_evolved")
    assert [s.spec_id for s in md.partition_specs] == [0, 1]
    assert md.default_spec_id == 1
    assert md.last_partition_id == 1007
    assert md.spec_by_id(0).fields == (PartitionField(3, 1000, DayTransform(), "ts_day"),)
    assert md.spec().fields == (
        PartitionField(3, 1000, VoidTransform(), "ts_day"),
        PartitionField(2, 1001, IdentityTransform(), "user"),
        PartitionField(1, 1002, BucketTransform(16), "event_id_bucket"),
        PartitionField(2, 1003, TruncateTransform(4), "user_trunc"),
        PartitionField(5, 1004, YearTransform(), "day_year"),
        PartitionField(4, 1005, MonthTransform(), "received_month"),
        PartitionField(3, 1006, HourTransform(), "ts_hour"),
        PartitionField(6, 1007, TruncateTransform(100), "price_trunc"),
    )
    # every field resolves against the current schema
    part = md.spec().partition_type(md.schema())
    assert [f.field_type for f in part.fields] == [
        TIMESTAMP,
        STRING,
        INT,
        STRING,
        INT,
        INT,
        INT,
        DecimalType(10, 2),
    ]


def test_v2_golden_sort_orders_and_properties() -> None:
    md = read_golden("v2_evolved")
    assert [o.order_id for o in md.sort_orders] == [0, 1, 2]
    assert md.sort_orders[0].is_unsorted
    assert md.default_sort_order_id == 2
    assert md.sort_order().fields == (
        SortField(3, DayTransform(), SortDirection.DESC, NullOrder.NULLS_LAST),
        SortField(1, BucketTransform(8), SortDirection.ASC, NullOrder.NULLS_LAST),
    )
    assert md.sort_orders[1].fields == (
        SortField(3, IdentityTransform(), SortDirection.ASC, NullOrder.NULLS_FIRST),
    )
    assert md.props.as_int("commit.retry.num-retries") == 8
    assert md.properties["comment"] == "click stream"


def test_v2_golden_snapshots_refs_and_logs() -> None:
    md = read_golden("v2_evolved")
    ids = [s.snapshot_id for s in md.snapshots]
    assert ids == [881903721495723052, 2148503374093862170, 7450216593015398411]
    assert [s.sequence_number for s in md.snapshots] == [32, 33, 34]
    assert [s.operation for s in md.snapshots] == [
        Operation.APPEND,
        Operation.OVERWRITE,
        Operation.DELETE,
    ]
    assert [s.parent_snapshot_id for s in md.snapshots] == [None, ids[0], ids[1]]
    assert [s.schema_id for s in md.snapshots] == [0, 1, 1]
    assert md.snapshots[0].summary["total-records"] == "480000"
    assert "operation" not in md.snapshots[0].summary
    assert md.snapshots[2].summary["added-position-deletes"] == "17"
    assert md.snapshots[1].manifest_list == (
        "s3://lake/events/clicks/metadata/snap-2148503374093862170-1-9a0c.avro"
    )
    assert md.current_snapshot_id == ids[2]
    assert [s.snapshot_id for s in md.ancestors(md.current_snapshot_id)] == ids[::-1]
    assert dict(md.refs) == {
        "main": SnapshotRef(ids[2], SnapshotRefType.BRANCH),
        "audit": SnapshotRef(
            ids[1],
            SnapshotRefType.BRANCH,
            min_snapshots_to_keep=5,
            max_snapshot_age_ms=604800000,
            max_ref_age_ms=2592000000,
        ),
        "release-2024.06": SnapshotRef(ids[0], SnapshotRefType.TAG, max_ref_age_ms=31536000000),
    }
    assert md.snapshot_for_ref("audit") == md.snapshots[1]
    assert md.snapshot_log == tuple(
        SnapshotLogEntry(t, i)
        for t, i in zip((1719000100000, 1719000200000, 1719000300000), ids, strict=True)
    )
    assert md.snapshot_as_of(1719000250000).snapshot_id == ids[1]
    assert md.metadata_log == (
        MetadataLogEntry(
            1718990000000, "s3://lake/events/clicks/metadata/00031-1b2c.metadata.json"
        ),
        MetadataLogEntry(
            1719000200000, "s3://lake/events/clicks/metadata/00032-3d4e.metadata.json"
        ),
    )
    (stats,) = md.statistics
    assert stats["snapshot-id"] == ids[2]
    assert stats["file-footer-size-in-bytes"] == 312
    assert stats["blob-metadata"][0]["properties"] == {"ndv": "440983"}
    (pstats,) = md.partition_statistics
    assert pstats["file-size-in-bytes"] == 2211


def test_v2_written_json_reproduces_the_golden_file() -> None:
    raw = load_golden("v2_evolved")
    out = metadata_to_json(metadata_from_json(raw))
    assert "schema" not in out and "partition-spec" not in out
    assert out == raw


def test_v2_current_snapshot_id_minus_one_means_none() -> None:
    md = read_golden("v2_empty")
    assert md.current_snapshot_id is None
    assert md.current_snapshot() is None
    assert md.snapshot_for_ref(MAIN_BRANCH) is None
    assert dict(md.refs) == {}
    assert md.snapshots == () and md.snapshot_log == () and md.metadata_log == ()
    assert md.last_partition_id == 999
    assert md.spec().is_unpartitioned
    assert md.schema().find_type("usage") == FLOAT
    out = metadata_to_json(md)
    assert out["current-snapshot-id"] == -1
    assert out["refs"] == {} and out["snapshots"] == []
    assert "schema" not in out and "partition-spec" not in out


def test_v2_null_current_snapshot_id_reads_as_none() -> None:
    raw = load_golden("v2_empty")
    raw["current-snapshot-id"] = None
    assert metadata_from_json(raw).current_snapshot_id is None


# -- v3 golden ------------------------------------------------------------------------


def test_v3_golden_row_lineage() -> None:
    md = read_golden("v3_row_lineage")
    assert md.format_version == 3
    assert md.next_row_id == 1250
    first, second = md.snapshots
    assert (first.first_row_id, first.added_rows) == (0, 1000)
    assert (second.first_row_id, second.added_rows) == (1000, 250)
    assert second.sequence_number == 2 == md.last_sequence_number
    out = metadata_to_json(md)
    assert out["next-row-id"] == 1250
    assert [(s["first-row-id"], s["added-rows"]) for s in out["snapshots"]] == [
        (0, 1000),
        (1000, 250),
    ]
    assert "schema" not in out and "partition-spec" not in out


def test_v3_golden_nanosecond_types_and_defaults() -> None:
    schema = read_golden("v3_row_lineage").schema()
    assert schema.find_type("captured") == TIMESTAMP_NS
    assert schema.find_type("ingested") == TIMESTAMPTZ_NS

    def defaults(name: str) -> tuple[Any, Any]:
        f = schema.find_field(name)
        return f.initial_default, f.write_default

    # 2025-01-01T00:00:00Z is 1735689600 s since the epoch
    assert defaults("ingested") == (
        1735689600_000_000_001,
        1735689600_000_000_000 + (12 * 3600 + 30 * 60 + 45) * 10**9 + 123456789,
    )
    calibration = defaults("calibration")
    assert calibration == (Decimal("1.000"), Decimal("-0.125"))
    assert all(isinstance(d, Decimal) for d in calibration)
    # 2024-07-01T00:00:00Z is 1719792000 s
    assert defaults("installed") == (1719792000_000_000 - 1, 0)
    # 2024-02-29 is day 19782; 1969-12-31 is day -1
    assert defaults("service_day") == (19782, -1)
    assert defaults("firmware") == (b"\xde\xad\xbe\xef", b"")
    assert defaults("active") == (True, False)
    assert defaults("retries") == (3, 9007199254740993)
    assert defaults("gain") == (1.5, -0.25)
    assert defaults("label") == ("n/a", "unlabelled")
    assert defaults("device_id") == (uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), None)
    assert defaults("checksum") == (None, b"\x00\x01\x02\x03")
    # structs are keyed by field id; a missing key is a null field
    assert defaults("location") == ((52.52, "berlin-1"), (None, "unknown-site"))
    assert defaults("local_time") == (1735063200_000_000, None)


def test_v3_written_defaults_use_single_value_json() -> None:
    raw = load_golden("v3_row_lineage")
    out = metadata_to_json(metadata_from_json(raw))
    fields = {f["name"]: f for f in out["schemas"][0]["fields"]}
    assert fields["calibration"]["initial-default"] == "1.000"
    assert fields["calibration"]["write-default"] == "-0.125"
    assert fields["ingested"]["write-default"] == "2025-01-01T12:30:45.123456789+00:00"
    assert fields["installed"]["write-default"] == "1970-01-01T00:00:00.000000+00:00"
    assert fields["firmware"]["initial-default"] == "deadbeef"
    assert fields["firmware"]["write-default"] == ""
    assert fields["location"]["initial-default"] == {"15": 52.52, "16": "berlin-1"}
    assert fields["location"]["write-default"] == {"16": "unknown-site"}
    assert fields["retries"]["write-default"] == 9007199254740993
    assert "write-default" not in fields["device_id"]
    # everything but the schema (whose timestamps are written with all digits) is as read
    assert {k: v for k, v in out.items() if k != "schemas"} == {
        k: v for k, v in raw.items() if k != "schemas"
    }


# -- all goldens: write then read -----------------------------------------------------


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=lambda p: p.name)
def test_golden_write_read_round_trip(path: Path) -> None:
    md = metadata_from_bytes(path.read_bytes())
    assert metadata_from_bytes(metadata_to_bytes(md)) == md
    assert metadata_from_json(metadata_to_json(md)) == md
    again = metadata_to_json(md)
    assert ("schema" in again) == (md.format_version == 1)
    assert ("partition-spec" in again) == (md.format_version == 1)
    assert ("last-sequence-number" in again) == (md.format_version > 1)
    assert ("next-row-id" in again) == (md.format_version >= 3)


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=lambda p: p.name)
def test_gzip_compressed_golden(path: Path) -> None:
    plain = path.read_bytes()
    expected = metadata_from_bytes(plain)
    assert metadata_from_bytes(gzip.compress(plain)) == expected
    written = metadata_to_bytes(expected, compress=True)
    assert written[:2] == b"\x1f\x8b"
    assert json.loads(gzip.decompress(written)) == metadata_to_json(expected)
    assert metadata_from_bytes(written) == expected
    # the gzip header carries mtime 0 (bytes 4-8), so a rewrite is byte-identical
    # whenever it happens, as with Java's GZIPOutputStream
    assert written[4:8] == b"\0\0\0\0"


# -- real metadata files (Iceberg-Java 1.11, iceberg-go) ------------------------------

REAL_FILES = sorted(FIXTURES.glob("*/bytes/**/metadata/*.metadata.json"))


def real_file(case: str, version: int) -> TableMetadata:
    (path,) = FIXTURES.glob(f"{case}/bytes/**/metadata/{version:05d}-*.metadata.json")
    return metadata_from_bytes(path.read_bytes())


def test_real_files_are_found() -> None:
    assert {p.parent.parent.parent.parent.parent.name for p in REAL_FILES} >= {
        "v2_read_append_timetravel",
        "v2_types_decimal_uuid_binary_read",
        "v2_types_temporal_read",
    }
    assert len(REAL_FILES) >= 7


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: f"{p.parents[4].name}/{p.name[:5]}")
def test_real_file_round_trips(path: Path) -> None:
    md = metadata_from_bytes(path.read_bytes())
    assert md.format_version == 2
    assert metadata_from_bytes(metadata_to_bytes(md)) == md
    assert metadata_from_bytes(metadata_to_bytes(md, compress=True)) == md
    out = metadata_to_json(md)
    assert "schema" not in out and "partition-spec" not in out


def test_real_append_timetravel_history() -> None:
    case = "v2_read_append_timetravel"
    created = real_file(case, 0)
    assert created.table_uuid == "26a2a321-6b02-4ca3-84d3-9c81fca78c2e"
    assert created.location == (
        "file:///tmp/iceberg-verification-fixtures/v2_read_append_timetravel/default.db/t"
    )
    assert created.last_sequence_number == 0
    assert created.current_snapshot_id is None and created.snapshots == ()
    assert dict(created.refs) == {}
    assert [(f.field_id, f.name, f.field_type, f.required) for f in created.schema().fields] == [
        (1, "__rowkey", STRING, False),
        (2, "id", LONG, True),
        (3, "category", STRING, False),
    ]
    assert created.spec() == PartitionSpec(0, ())
    assert created.last_partition_id == 999
    assert created.sort_order() == SortOrder(0, ())

    first_id, second_id = 3022689860945069661, 8190990186656353016
    one = real_file(case, 1)
    assert one.last_sequence_number == 1
    assert one.current_snapshot_id == first_id
    (snap,) = one.snapshots
    assert (snap.sequence_number, snap.timestamp_ms, snap.schema_id) == (1, 1783180554762, 0)
    assert snap.summary["total-records"] == "2"
    assert snap.manifest_list.endswith(
        "snap-3022689860945069661-0-0822c88a-9bd5-4e8b-8bf2-84b06044746d.avro"
    )
    assert one.metadata_log == (
        MetadataLogEntry(
            1783180554742,
            "file:///tmp/iceberg-verification-fixtures/v2_read_append_timetravel/default.db/t"
            "/metadata/00000-b6fc4eae-1c35-463a-9252-e7326bc5fc31.metadata.json",
        ),
    )

    two = real_file(case, 2)
    assert two.last_sequence_number == 2
    assert [s.snapshot_id for s in two.snapshots] == [first_id, second_id]
    assert [s.sequence_number for s in two.snapshots] == [1, 2]
    assert two.snapshots[1].parent_snapshot_id == first_id
    assert two.snapshots[1].summary["total-records"] == "3"
    assert dict(two.refs) == {"main": SnapshotRef(second_id, SnapshotRefType.BRANCH)}
    assert two.snapshot_log == (
        SnapshotLogEntry(1783180554762, first_id),
        SnapshotLogEntry(1783180554775, second_id),
    )
    assert two.snapshot_as_of(1783180554770).snapshot_id == first_id
    assert len(two.metadata_log) == 2


def test_real_decimal_uuid_binary_table() -> None:
    case = "v2_types_decimal_uuid_binary_read"
    created = real_file(case, 0)
    assert created.current_snapshot_id is None  # written as -1
    assert created.last_column_id == 7
    assert dict(created.properties) == {"write.parquet.compression-codec": "zstd"}
    assert [(f.field_id, f.field_type) for f in created.schema().fields] == [
        (1, STRING),
        (2, LONG),
        (3, DecimalType(9, 2)),
        (4, DecimalType(38, 10)),
        (5, UUID),
        (6, FixedType(4)),
        (7, BINARY),
    ]
    md = real_file(case, 1)
    assert md.current_snapshot_id == 825558586185674020
    (snap,) = md.snapshots
    assert (snap.sequence_number, snap.parent_snapshot_id) == (1, None)
    assert snap.operation is Operation.APPEND
    assert snap.summary["iceberg-version"].startswith("Apache Iceberg 1.11.0")
    assert snap.summary["added-files-size"] == "2066"
    assert dict(md.refs) == {"main": SnapshotRef(825558586185674020, SnapshotRefType.BRANCH)}
    assert md.snapshot_log == (SnapshotLogEntry(1783192722932, 825558586185674020),)
    assert md.metadata_log[0].timestamp_ms == created.last_updated_ms == 1783192722125


def test_real_temporal_table() -> None:
    case = "v2_types_temporal_read"
    md = real_file(case, 1)
    assert md.table_uuid == "804e6f52-7822-4e7f-b1d7-7dd5b6094493"
    assert [(f.name, f.field_type) for f in md.schema().fields] == [
        ("__rowkey", STRING),
        ("id", LONG),
        ("d", DATE),
        ("t", TIME),
        ("ts", TIMESTAMP),
        ("tstz", TIMESTAMPTZ),
    ]
    assert md.current_snapshot_id == 4468807567077415298
    assert md.snapshots[0].sequence_number == 1 == md.last_sequence_number
    assert md.snapshot_by_id(4468807567077415298).timestamp_ms == 1783192720231
    assert real_file(case, 0).current_snapshot_id is None


# -- bad input ------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 4, 99, "4", None, "two", [2]])
def test_unsupported_format_version(version: Any) -> None:
    raw = load_golden("v2_empty")
    raw["format-version"] = version
    with pytest.raises(UnsupportedFormatVersionError):
        metadata_from_json(raw)


def test_missing_format_version() -> None:
    raw = load_golden("v2_empty")
    del raw["format-version"]
    with pytest.raises(UnsupportedFormatVersionError, match="format-version"):
        metadata_from_json(raw)
    with pytest.raises(UnsupportedFormatVersionError):
        metadata_from_bytes(json.dumps(raw).encode())


def test_writing_an_unsupported_version_fails() -> None:
    md = read_golden("v2_empty").with_(format_version=4)
    with pytest.raises(UnsupportedFormatVersionError):
        metadata_to_json(md)


@pytest.mark.parametrize(
    ("golden", "key"),
    [
        ("v1_single_schema", "location"),
        ("v1_single_schema", "last-column-id"),
        ("v1_single_schema", "schema"),
        ("v2_evolved", "location"),
        ("v2_evolved", "last-column-id"),
        ("v2_evolved", "table-uuid"),
        ("v2_evolved", "last-sequence-number"),
        ("v2_evolved", "last-updated-ms"),
        ("v2_evolved", "schemas"),
        ("v2_evolved", "current-schema-id"),
        ("v2_evolved", "partition-specs"),
        ("v2_evolved", "default-spec-id"),
        ("v2_evolved", "last-partition-id"),
        ("v2_evolved", "sort-orders"),
        ("v2_evolved", "default-sort-order-id"),
        ("v3_row_lineage", "next-row-id"),
    ],
)
def test_missing_required_field(golden: str, key: str) -> None:
    raw = load_golden(golden)
    del raw[key]
    with pytest.raises(ValidationError, match=key):
        metadata_from_json(raw)


@pytest.mark.parametrize("key", ["snapshot-id", "timestamp-ms"])
def test_snapshot_missing_required_field(key: str) -> None:
    raw = load_golden("v2_evolved")
    del raw["snapshots"][1][key]
    with pytest.raises(ValidationError, match=key):
        metadata_from_json(raw)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("current-schema-id",), 7),
        (("default-spec-id",), 5),
        (("schemas",), [1]),
        (("schemas",), {"schema-id": 0}),
        (("snapshots", 0, "summary", "operation"), "truncate"),
        (("refs", "main", "type"), "bookmark"),
        (("sort-orders", 1, "fields", 0, "direction"), "sideways"),
        (("schemas", 1, "fields", 0, "type"), "long long"),
        (("last-column-id",), "many"),
    ],
    ids=[
        "unknown-current-schema",
        "unknown-default-spec",
        "schema-not-object",
        "schemas-not-list",
        "bad-operation",
        "bad-ref-type",
        "bad-direction",
        "bad-type",
        "bad-int",
    ],
)
def test_malformed_metadata_is_a_validation_error(path: tuple[Any, ...], value: Any) -> None:
    raw = load_golden("v2_evolved")
    target: Any = raw
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    with pytest.raises(ValidationError):
        metadata_from_json(raw)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{not json",
        b'{"format-version": 2,',
        b"\xff\xfe\x00",
        b"[1, 2]",
        b'"metadata"',
        b"null",
    ],
)
def test_invalid_json_is_a_validation_error(data: bytes) -> None:
    with pytest.raises(ValidationError):
        metadata_from_bytes(data)


def test_corrupt_gzip_is_a_validation_error() -> None:
    packed = gzip.compress((GOLDEN / "v2_empty.metadata.json").read_bytes())
    for data in (packed[: len(packed) // 2], b"\x1f\x8b" + b"\x00" * 30, packed[:-4] + b"xxxx"):
        with pytest.raises(ValidationError):
            metadata_from_bytes(data)
    with pytest.raises(ValidationError):
        metadata_from_bytes(gzip.compress(b"{not json"))


# -- Hypothesis: random metadata round trips ------------------------------------------

V3_PRIMITIVES: list[PrimitiveType] = [TIMESTAMP_NS, TIMESTAMPTZ_NS]
PRIMITIVES = [t for t in SIMPLE_PRIMITIVES if t not in V3_PRIMITIVES]

names = st.text(string.ascii_letters + string.digits + "_ -.é", min_size=1, max_size=8)
docs = st.none() | st.text(max_size=12)
primitive_types = (
    st.sampled_from(PRIMITIVES)
    | st.builds(DecimalType, st.integers(1, 38), st.integers(0, 10))
    | st.builds(FixedType, st.integers(1, 32))
)

# Shapes are types without ids: ("p", type) | ("list", elem, req) | ("map", key, value, req)
# | ("struct", [(name, required, doc, shape), ...]). Ids are assigned afterwards.
Shape = tuple[Any, ...]


def shapes(prims: st.SearchStrategy[PrimitiveType]) -> st.SearchStrategy[Shape]:
    def extend(children: st.SearchStrategy[Shape]) -> st.SearchStrategy[Shape]:
        member = st.tuples(names, st.booleans(), docs, children)
        return (
            st.tuples(st.just("list"), children, st.booleans())
            | st.tuples(st.just("map"), prims.map(lambda t: ("p", t)), children, st.booleans())
            | st.tuples(
                st.just("struct"),
                st.lists(member, min_size=1, max_size=3, unique_by=lambda m: m[0]),
            )
        )

    return st.recursive(prims.map(lambda t: ("p", t)), extend, max_leaves=5)


class _Ids:
    def __init__(self, start: int) -> None:
        self.next = start

    def take(self) -> int:
        self.next += 1
        return self.next - 1


def build_type(shape: Shape, ids: _Ids) -> IcebergType:
    kind = shape[0]
    if kind == "p":
        t: IcebergType = shape[1]
        return t
    if kind == "list":
        eid = ids.take()
        return ListType(eid, build_type(shape[1], ids), shape[2])
    if kind == "map":
        kid, vid = ids.take(), ids.take()
        return MapType(kid, build_type(shape[1], ids), vid, build_type(shape[2], ids), shape[3])
    fields = []
    for name, required, doc, child in shape[1]:
        fid = ids.take()
        fields.append(NestedField(fid, name, build_type(child, ids), required, doc))
    return StructType(*fields)


def default_values(t: IcebergType) -> st.SearchStrategy[Any]:
    """Values for initial-default / write-default of primitive columns (v3)."""
    return values_of(t, max_size=10) if isinstance(t, PrimitiveType) else st.none()


def _top_level(prims: st.SearchStrategy[PrimitiveType]) -> st.SearchStrategy[list[Any]]:
    return st.lists(
        # half the columns primitive, so specs and sort orders have sources
        st.tuples(names, st.booleans(), docs, prims.map(lambda t: ("p", t)) | shapes(prims)),
        min_size=1,
        max_size=5,
        unique_by=lambda m: m[0],
    )


# built once: constructing recursive strategies per draw is slow
TOP_LEVEL_V2 = _top_level(primitive_types)
TOP_LEVEL_V3 = _top_level(primitive_types | st.sampled_from(V3_PRIMITIVES))


@st.composite
def schemas(draw: st.DrawFn, schema_id: int, version: int) -> Schema:
    top = draw(TOP_LEVEL_V3 if version >= 3 else TOP_LEVEL_V2)
    ids = _Ids(1)
    fields = []
    for name, required, doc, shape in top:
        fid = ids.take()
        ftype = build_type(shape, ids)
        initial = write = None
        if version >= 3 and ftype.is_primitive and draw(st.booleans()):
            initial = draw(default_values(ftype))
            write = draw(st.none() | default_values(ftype))
        fields.append(NestedField(fid, name, ftype, required, doc, initial, write))
    candidates = [
        f.field_id
        for f in fields
        if f.required and f.field_type.is_primitive and f.field_type not in (FLOAT, DOUBLE)
    ]
    identifier = draw(st.lists(st.sampled_from(candidates), unique=True)) if candidates else []
    return Schema(*fields, schema_id=schema_id, identifier_field_ids=identifier)


def transforms_for(t: IcebergType) -> list[Transform]:
    options: list[Transform] = [
        IdentityTransform(),
        VoidTransform(),
        BucketTransform(7),
        TruncateTransform(3),
        YearTransform(),
        MonthTransform(),
        DayTransform(),
        HourTransform(),
    ]
    return [tr for tr in options if tr.can_transform(t)]


@st.composite
def partition_specs(draw: st.DrawFn, schema: Schema, spec_id: int, ids: _Ids) -> PartitionSpec:
    columns = [f for f in schema.fields if f.field_type.is_primitive]
    chosen = draw(st.lists(st.sampled_from(columns), max_size=3)) if columns else []
    fields = []
    for i, col in enumerate(chosen):
        transform = draw(st.sampled_from(transforms_for(col.field_type)))
        fields.append(PartitionField(col.field_id, ids.take(), transform, f"p{i}_{col.name}"))
    return PartitionSpec(spec_id, tuple(fields))


@st.composite
def sort_orders(draw: st.DrawFn, schema: Schema) -> tuple[SortOrder, ...]:
    columns = [f for f in schema.fields if f.field_type.is_primitive]
    orders = [SortOrder(0, ())]
    sorted_too: bool = draw(st.booleans())
    if columns and sorted_too:
        n = draw(st.integers(1, 3))
        fields = []
        for _ in range(n):
            col = draw(st.sampled_from(columns))
            fields.append(
                SortField(
                    col.field_id,
                    draw(st.sampled_from(transforms_for(col.field_type))),
                    draw(st.sampled_from(SortDirection)),
                    draw(st.sampled_from(NullOrder)),
                )
            )
        orders.append(SortOrder(1, tuple(fields)))
    return tuple(orders)


summaries = st.dictionaries(
    st.sampled_from(["added-data-files", "total-records", "added-files-size", "x-custom"]),
    st.integers(0, 10**9).map(str),
)


@st.composite
def snapshots(draw: st.DrawFn, version: int, schema_ids: list[int]) -> tuple[Snapshot, ...]:
    ids = draw(st.lists(st.integers(1, 2**63 - 1), unique=True, max_size=4))
    out: list[Snapshot] = []
    ts = draw(st.integers(0, 2**42))
    row_id = 0
    for i, sid in enumerate(ids):
        ts += draw(st.integers(0, 10**6))
        parent = out[i - 1].snapshot_id if i and draw(st.booleans()) else None
        first_row_id = added_rows = None
        if version >= 3:
            added_rows = draw(st.integers(0, 10**6))
            first_row_id, row_id = row_id, row_id + added_rows
        out.append(
            Snapshot(
                snapshot_id=sid,
                sequence_number=i + 1 if version > 1 else 0,
                timestamp_ms=ts,
                manifest_list=f"s3://b/t/metadata/snap-{sid}.avro",
                operation=draw(st.sampled_from(Operation)),
                summary=draw(summaries),
                parent_snapshot_id=parent,
                schema_id=draw(st.none() | st.sampled_from(schema_ids)),
                first_row_id=first_row_id,
                added_rows=added_rows,
            )
        )
    return tuple(out)


def refs_for(snaps: tuple[Snapshot, ...]) -> st.SearchStrategy[dict[str, SnapshotRef]]:
    if not snaps:
        return st.just({})
    opt_int = st.none() | st.integers(1, 2**40)
    ref = st.builds(
        SnapshotRef,
        st.sampled_from([s.snapshot_id for s in snaps]),
        st.sampled_from(SnapshotRefType),
        opt_int,
        opt_int,
        opt_int,
    )
    return st.dictionaries(
        st.text(string.ascii_lowercase + "-._/", min_size=1, max_size=10).filter(
            lambda n: n != MAIN_BRANCH
        ),
        ref,
        max_size=3,
    )


statistics = st.lists(
    st.fixed_dictionaries(
        {
            "snapshot-id": st.integers(1, 2**63 - 1),
            "statistics-path": st.text(max_size=20),
            "file-size-in-bytes": st.integers(0, 2**40),
        }
    ),
    max_size=2,
).map(tuple)


@st.composite
def table_metadata(draw: st.DrawFn, version: int | None = None) -> TableMetadata:
    v = draw(st.sampled_from([1, 2, 3])) if version is None else version
    n_schemas = draw(st.integers(1, 2))
    all_schemas = tuple(draw(schemas(i * 2, v)) for i in range(n_schemas))
    current = draw(st.sampled_from(all_schemas))
    part_ids = _Ids(1000)
    specs = tuple(
        draw(partition_specs(current, spec_id, part_ids))
        for spec_id in range(draw(st.integers(1, 3)))
    )
    orders = draw(sort_orders(current))
    snaps = draw(snapshots(v, [s.schema_id for s in all_schemas]))
    refs = draw(refs_for(snaps))
    current_snapshot_id = None
    has_current: bool = draw(st.booleans())
    if snaps and has_current:
        current_snapshot_id = snaps[-1].snapshot_id
        refs[MAIN_BRANCH] = SnapshotRef(current_snapshot_id, SnapshotRefType.BRANCH)
    log_times = st.integers(0, 2**42)
    return TableMetadata(
        format_version=v,
        table_uuid=str(draw(st.uuids())),
        location=draw(st.sampled_from(["s3://bucket/db/t", "file:///tmp/wh/t", "gs://x/y"])),
        last_sequence_number=len(snaps) + draw(st.integers(0, 3)) if v > 1 else 0,
        last_updated_ms=draw(log_times),
        last_column_id=max(s.highest_field_id for s in all_schemas) + draw(st.integers(0, 2)),
        schemas=all_schemas,
        current_schema_id=current.schema_id,
        partition_specs=specs,
        default_spec_id=draw(st.sampled_from(specs)).spec_id,
        last_partition_id=part_ids.next - 1,
        sort_orders=orders,
        default_sort_order_id=draw(st.sampled_from(orders)).order_id,
        properties=draw(st.dictionaries(st.text(max_size=12), st.text(max_size=12), max_size=4)),
        current_snapshot_id=current_snapshot_id,
        snapshots=snaps,
        snapshot_log=tuple(
            SnapshotLogEntry(draw(log_times), s.snapshot_id) for s in snaps if draw(st.booleans())
        ),
        metadata_log=tuple(
            MetadataLogEntry(draw(log_times), f"s3://bucket/db/t/metadata/{i:05d}.metadata.json")
            for i in range(draw(st.integers(0, 3)))
        ),
        refs=refs,
        statistics=draw(statistics),
        partition_statistics=draw(statistics),
        next_row_id=(sum(s.added_rows or 0 for s in snaps) + draw(st.integers(0, 9)))
        if v >= 3
        else None,
    )


HYPOTHESIS = settings(max_examples=100)

PARTS = settings(max_examples=60)


@HYPOTHESIS
@given(table_metadata())
def test_metadata_json_round_trip(md: TableMetadata) -> None:
    out = metadata_to_json(md)
    assert metadata_from_json(out) == md
    # the dict is plain JSON: it survives a text round trip unchanged
    assert json.loads(json.dumps(out)) == out
    assert ("schema" in out) == (md.format_version == 1)
    assert ("partition-spec" in out) == (md.format_version == 1)


@settings(max_examples=30)
@given(table_metadata(), st.booleans())
def test_metadata_bytes_round_trip(md: TableMetadata, compress: bool) -> None:
    data = metadata_to_bytes(md, compress=compress)
    assert (data[:2] == b"\x1f\x8b") == compress
    back = metadata_from_bytes(data)
    assert back == md
    assert metadata_to_bytes(back, compress=compress) == data
    # the file is the compact text of metadata_to_json, also when its snapshots'
    # encodings are reused (a commit writes its parent's snapshots again)
    text = json.dumps(metadata_to_json(md), separators=(",", ":")).encode()
    assert metadata_to_bytes(md) == text
    assert metadata_to_bytes(md.with_(properties={**md.properties, "w": "1"})) != text


@PARTS
@given(schemas(3, 3))
def test_schema_and_type_round_trip(schema: Schema) -> None:
    assert schema_from_json(schema_to_json(schema)) == schema
    assert schema_from_json(json.loads(json.dumps(schema_to_json(schema)))) == schema
    for f in schema.fields:
        assert type_from_json(type_to_json(f.field_type)) == f.field_type


@PARTS
@given(st.data())
def test_spec_order_and_snapshot_round_trip(data: st.DataObject) -> None:
    version = data.draw(st.sampled_from([1, 2, 3]))
    schema = data.draw(schemas(0, version))
    spec = data.draw(partition_specs(schema, data.draw(st.integers(0, 5)), _Ids(1000)))
    assert partition_spec_from_json(partition_spec_to_json(spec)) == spec
    for order in data.draw(sort_orders(schema)):
        assert sort_order_from_json(sort_order_to_json(order)) == order
    for snap in data.draw(snapshots(version, [0])):
        assert snapshot_from_json(snapshot_to_json(snap, version)) == snap
