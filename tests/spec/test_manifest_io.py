"""Manifest and manifest-list codecs: Avro layout, round trips for v1-v3, inheritance,
files written by Iceberg-Java / iceberg-go / pyiceberg, and pyiceberg reading ours."""

from __future__ import annotations

import datetime as dt
import glob
import io as _io
import json
import math
import os
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neve.errors import NeveIOError, UnsupportedFormatVersionError, ValidationError
from neve.io.fileio import FileIO
from neve.planning.manifests import read_manifest, read_manifest_list
from neve.spec import avro_schemas, manifest_io
from neve.spec.manifest import (
    DataFile,
    DataFileContent,
    FieldSummary,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from neve.spec.manifest_writer import UNASSIGNED_SEQ, write_manifest, write_manifest_list
from neve.spec.metadata_json import partition_spec_from_json, schema_from_json
from neve.spec.partition import PartitionField, PartitionSpec
from neve.spec.schema import Schema
from neve.spec.transforms import BucketTransform, IdentityTransform
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
    NestedField,
    PrimitiveType,
    StructType,
)
from neve.spec.values import from_bytes, to_bytes

ADDED, EXISTING, DELETED = (
    ManifestEntryStatus.ADDED,
    ManifestEntryStatus.EXISTING,
    ManifestEntryStatus.DELETED,
)
FIXTURES = Path("/work/shared/fixtures/iceberg-verification")

# -- a schema with one column of every partitionable type, identity-partitioned --------

ALL_TYPES: list[tuple[str, PrimitiveType]] = [
    ("b", BOOLEAN),
    ("i", INT),
    ("l", LONG),
    ("f", FLOAT),
    ("d", DOUBLE),
    ("dec", DecimalType(9, 2)),
    ("bigdec", DecimalType(38, 10)),
    ("dt", DATE),
    ("t", TIME),
    ("ts", TIMESTAMP),
    ("tstz", TIMESTAMPTZ),
    ("tsns", TIMESTAMP_NS),
    ("tstzns", TIMESTAMPTZ_NS),
    ("s", STRING),
    ("u", UUID),
    ("fx", FixedType(4)),
    ("bin", BINARY),
    ("dec-2", DecimalType(9, 2)),  # a second decimal(9,2): a named Avro type used twice
]
SCHEMA = Schema(
    *(NestedField(i + 1, name, t, False) for i, (name, t) in enumerate(ALL_TYPES)),
    schema_id=3,
)
SPEC = PartitionSpec(
    2,
    tuple(
        PartitionField(i + 1, 1000 + i, IdentityTransform(), name)
        for i, (name, _) in enumerate(ALL_TYPES)
    ),
)
VALUES: tuple[Any, ...] = (
    True,
    -7,
    2**40,
    1.5,
    -2.25,
    Decimal("-123.45"),
    Decimal("1234567890123456789012345678.0123456789"),
    19_000,
    45_296_000_001,
    -1,
    1_700_000_000_123_456,
    1_700_000_000_123_456_789,
    -1_700_000_000_123_456_789,
    "héllo ☃",
    uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
    b"\x00\x01\x02\x03",
    b"\xff\x00",
    Decimal("0.01"),
)
NULLS = (None,) * len(ALL_TYPES)

UNPARTITIONED_SCHEMA = Schema(NestedField(1, "id", LONG, True), NestedField(2, "data", STRING))
UNPARTITIONED = PartitionSpec(0, ())


@pytest.fixture
def fio() -> FileIO:
    return FileIO()


def data_file(
    path: str,
    partition: tuple[Any, ...] = (),
    *,
    records: int = 10,
    **kw: Any,
) -> DataFile:
    return DataFile(
        file_path=path,
        file_format=kw.pop("file_format", FileFormat.PARQUET),
        partition=partition,
        record_count=records,
        file_size_in_bytes=kw.pop("file_size_in_bytes", 1000 + records),
        **kw,
    )


def full_data_file(path: str, partition: tuple[Any, ...], format_version: int) -> DataFile:
    """A data file with every field a data file may carry in ``format_version``."""
    return data_file(
        path,
        partition,
        records=123,
        column_sizes={1: 10, 2: 20},
        value_counts={1: 123, 2: 123},
        null_value_counts={1: 0, 2: 5},
        nan_value_counts={4: 1},
        lower_bounds={1: to_bytes(LONG, -5), 2: b"a"},
        upper_bounds={1: to_bytes(LONG, 99), 2: b"z"},
        key_metadata=b"\x01key",
        split_offsets=(4, 1024, 4096),
        sort_order_id=1,
        first_row_id=1_000 if format_version >= 3 else None,
    )


def added(f: DataFile, snapshot_id: int | None = None, seq: int | None = None) -> ManifestEntry:
    return ManifestEntry(ADDED, snapshot_id, seq, None, f)


# -- Avro schemas --------------------------------------------------------------------


def _walk_fields(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, list):
        for s in schema:
            yield from _walk_fields(s)
    elif isinstance(schema, dict):
        for f in schema.get("fields", []):
            yield f
            yield from _walk_fields(f["type"])
        if "items" in schema:
            yield from _walk_fields(schema["items"])


def _ids(schema: Any) -> set[int]:
    """Every field-id and element-id in an Avro schema."""
    if isinstance(schema, list):
        return set().union(*(_ids(s) for s in schema))
    if not isinstance(schema, dict):
        return set()
    found = {schema[k] for k in ("field-id", "element-id") if k in schema}
    for k in ("type", "fields", "items"):
        if k in schema:
            found |= _ids(schema[k])
    return found


@pytest.mark.parametrize("version", [1, 2, 3])
def test_every_avro_field_carries_a_field_id(version: int) -> None:
    for schema in (
        avro_schemas.manifest_entry_schema(version, SPEC.partition_type(SCHEMA)),
        avro_schemas.manifest_file_schema(version),
    ):
        for f in _walk_fields(schema):
            assert isinstance(f.get("field-id"), int), f


def test_manifest_entry_field_ids_per_version() -> None:
    maps = {108, 117, 118, 109, 119, 120, 110, 121, 122, 137, 138, 139}
    bounds = {125, 126, 127, 128, 129, 130}
    common = {0, 1, 2, 100, 101, 102, 103, 104, 131, 132, 133, 140} | maps | bounds
    v2 = common | {3, 4, 134, 135, 136, 143}
    part = StructType()
    assert _ids(avro_schemas.manifest_entry_schema(1, part)) == common | {105}
    assert _ids(avro_schemas.manifest_entry_schema(2, part)) == v2
    assert _ids(avro_schemas.manifest_entry_schema(3, part)) == v2 | {142, 144, 145}


def test_manifest_file_field_ids_per_version() -> None:
    summary = {507, 508, 509, 510, 511, 518}
    v1 = {500, 501, 502, 503, 504, 505, 506, 512, 513, 514, 519} | summary
    assert _ids(avro_schemas.manifest_file_schema(1)) == v1
    assert _ids(avro_schemas.manifest_file_schema(2)) == v1 | {515, 516, 517}
    assert _ids(avro_schemas.manifest_file_schema(3)) == v1 | {515, 516, 517, 520}


def test_avro_names_ids_and_requiredness_follow_iceberg_java() -> None:
    schema = avro_schemas.manifest_entry_schema(2, SPEC.partition_type(SCHEMA))
    assert schema["name"] == "manifest_entry"
    fields = {f["name"]: f for f in schema["fields"]}
    assert [f["name"] for f in schema["fields"]] == [
        "status",
        "snapshot_id",
        "sequence_number",
        "file_sequence_number",
        "data_file",
    ]
    assert fields["status"]["type"] == "int"
    assert fields["snapshot_id"]["type"] == ["null", "long"]
    data_file_rec = fields["data_file"]["type"]
    assert data_file_rec["name"] == "r2"
    df = {f["name"]: f for f in data_file_rec["fields"]}
    assert df["content"] == {"name": "content", "type": "int", "field-id": 134}
    assert df["partition"]["type"]["name"] == "r102"
    sizes = df["column_sizes"]["type"][1]
    assert sizes["logicalType"] == "map" and sizes["type"] == "array"
    assert sizes["items"]["name"] == "k117_v118"
    assert [(f["name"], f["field-id"]) for f in sizes["items"]["fields"]] == [
        ("key", 117),
        ("value", 118),
    ]
    for name, key, value in [
        ("value_counts", 119, 120),
        ("null_value_counts", 121, 122),
        ("nan_value_counts", 138, 139),
        ("lower_bounds", 126, 127),
        ("upper_bounds", 129, 130),
    ]:
        assert df[name]["type"][1]["items"]["name"] == f"k{key}_v{value}"
    assert df["split_offsets"]["type"][1] == {"type": "array", "items": "long", "element-id": 133}
    assert df["equality_ids"]["type"][1] == {"type": "array", "items": "int", "element-id": 136}

    v1 = {f["name"]: f for f in avro_schemas.manifest_entry_schema(1, StructType())["fields"]}
    assert v1["snapshot_id"]["type"] == "long"  # required in v1
    v1_df = {f["name"]: f for f in v1["data_file"]["type"]["fields"]}
    assert v1_df["block_size_in_bytes"]["type"] == "long"
    assert "content" not in v1_df and "equality_ids" not in v1_df

    ml = avro_schemas.manifest_file_schema(2)
    assert ml["name"] == "manifest_file"
    ml_fields = {f["name"]: f for f in ml["fields"]}
    assert ml_fields["partitions"]["type"][1]["items"]["name"] == "r508"
    assert ml_fields["partitions"]["type"][1]["element-id"] == 508
    assert ml_fields["added_files_count"]["type"] == "int"
    v1_list = {f["name"]: f for f in avro_schemas.manifest_file_schema(1)["fields"]}
    assert v1_list["added_files_count"]["type"] == ["null", "int"]
    assert "sequence_number" not in v1_list and "content" not in v1_list


@pytest.mark.parametrize(
    ("iceberg_type", "avro_type"),
    [
        (BOOLEAN, "boolean"),
        (INT, "int"),
        (LONG, "long"),
        (FLOAT, "float"),
        (DOUBLE, "double"),
        (STRING, "string"),
        (BINARY, "bytes"),
        (DATE, {"type": "int", "logicalType": "date"}),
        (TIME, {"type": "long", "logicalType": "time-micros"}),
        (TIMESTAMP, {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": False}),
        (TIMESTAMPTZ, {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": True}),
        (TIMESTAMP_NS, {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": False}),
        (
            TIMESTAMPTZ_NS,
            {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": True},
        ),
        (
            DecimalType(9, 2),
            {
                "type": "fixed",
                "name": "decimal_9_2",
                "size": 4,
                "logicalType": "decimal",
                "precision": 9,
                "scale": 2,
            },
        ),
        (
            DecimalType(38, 10),
            {
                "type": "fixed",
                "name": "decimal_38_10",
                "size": 16,
                "logicalType": "decimal",
                "precision": 38,
                "scale": 10,
            },
        ),
        (UUID, {"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}),
        (FixedType(7), {"type": "fixed", "name": "fixed_7", "size": 7}),
    ],
)
def test_partition_value_avro_types(iceberg_type: PrimitiveType, avro_type: Any) -> None:
    assert avro_schemas.partition_field_avro_type(iceberg_type) == avro_type
    record = avro_schemas.manifest_entry_schema(
        2, StructType(NestedField(1000, "p", iceberg_type, False))
    )
    data_file_rec = record["fields"][-1]["type"]
    partition = next(f for f in data_file_rec["fields"] if f["name"] == "partition")["type"]
    assert partition["fields"] == [
        {"name": "p", "type": ["null", avro_type], "default": None, "field-id": 1000}
    ]


def test_repeated_named_partition_types_are_referenced_by_name() -> None:
    schema = avro_schemas.manifest_entry_schema(2, SPEC.partition_type(SCHEMA))
    part = next(f for f in schema["fields"][-1]["type"]["fields"] if f["name"] == "partition")
    types = {f["name"]: f["type"][1] for f in part["type"]["fields"]}
    assert types["dec"]["name"] == "decimal_9_2"
    assert types["dec_x2D2"] == "decimal_9_2"
    fastavro.parse_schema(schema)  # a second definition would be rejected here


@pytest.mark.parametrize(
    ("name", "avro"),
    [("ts_day", "ts_day"), ("a-b", "a_x2Db"), ("1st", "_1st"), ("é", "_xE9"), ("a.b", "a_x2Eb")],
)
def test_partition_field_names_are_escaped_like_java(name: str, avro: str) -> None:
    assert avro_schemas.avro_field_name(name) == avro


def test_schemas_are_cached() -> None:
    part = SPEC.partition_type(SCHEMA)
    assert avro_schemas.manifest_entry_schema(2, part) is avro_schemas.manifest_entry_schema(
        2, SPEC.partition_type(SCHEMA)
    )
    assert avro_schemas.parsed_manifest_file_schema(3) is avro_schemas.parsed_manifest_file_schema(
        3
    )


def test_unsupported_format_version() -> None:
    with pytest.raises(UnsupportedFormatVersionError):
        avro_schemas.manifest_file_schema(4)
    with pytest.raises(UnsupportedFormatVersionError):
        write_manifest_list(
            FileIO(),
            "/nonexistent/never-written.avro",
            format_version=0,
            snapshot_id=1,
            parent_snapshot_id=None,
            sequence_number=1,
            manifests=[],
        )


# -- round trips ---------------------------------------------------------------------


def _entries_for(version: int, tmp: Path) -> list[ManifestEntry]:
    return [
        added(full_data_file(f"{tmp}/data/a.parquet", VALUES, version)),
        ManifestEntry(EXISTING, 11, 4, 3, full_data_file(f"{tmp}/data/b.parquet", NULLS, version)),
        ManifestEntry(DELETED, 12, 5, 5, data_file(f"{tmp}/data/c.parquet", VALUES, records=7)),
    ]


def _expected_read(
    e: ManifestEntry, manifest: ManifestFile, version: int, spec_id: int
) -> ManifestEntry:
    f = e.data_file.with_(spec_id=spec_id)
    if version == 1:
        return e.with_(
            snapshot_id=e.snapshot_id or manifest.added_snapshot_id,
            sequence_number=0,
            file_sequence_number=0,
            data_file=f,
        )
    inherit = e.status is ADDED
    return e.with_(
        snapshot_id=e.snapshot_id or manifest.added_snapshot_id,
        sequence_number=manifest.sequence_number if inherit else e.sequence_number,
        file_sequence_number=manifest.sequence_number if inherit else e.file_sequence_number,
        data_file=f,
    )


@pytest.mark.parametrize("version", [1, 2, 3])
def test_round_trip_all_partition_types_and_data_file_fields(
    version: int, tmp_path: Path, fio: FileIO
) -> None:
    entries = _entries_for(version, tmp_path)
    written = write_manifest(
        fio,
        f"{tmp_path}/m0.avro",
        format_version=version,
        spec=SPEC,
        schema=SCHEMA,
        content=ManifestContent.DATA,
        snapshot_id=42,
        entries=entries,
    )
    manifests = write_manifest_list(
        fio,
        f"{tmp_path}/snap-42.avro",
        format_version=version,
        snapshot_id=42,
        parent_snapshot_id=41,
        sequence_number=9,
        manifests=[written],
        first_row_id=500,
    )
    listed = read_manifest_list(fio, f"{tmp_path}/snap-42.avro")
    assert listed == manifests
    (m,) = listed
    if version == 1:
        assert (m.sequence_number, m.min_sequence_number) == (0, 0)
    else:
        assert (m.sequence_number, m.min_sequence_number) == (9, 4)
    assert m.first_row_id == (500 if version >= 3 else None)

    expected = [_expected_read(e, m, version, SPEC.spec_id) for e in entries]
    for got in (
        read_manifest(fio, m, specs_by_id={SPEC.spec_id: SPEC}, schema=SCHEMA),
        read_manifest(fio, m, specs_by_id={SPEC.spec_id: SPEC}),
        read_manifest(fio, m),
    ):
        assert got == expected
        assert [e.data_file.partition for e in got] == [VALUES, NULLS, VALUES]
        assert all(
            type(a) is type(b) for a, b in zip(got[0].data_file.partition, VALUES, strict=True)
        )


@pytest.mark.parametrize("version", [2, 3])
def test_round_trip_delete_files(version: int, tmp_path: Path, fio: FileIO) -> None:
    part = (19_000,)
    schema = Schema(NestedField(1, "id", LONG, True), NestedField(2, "day", DATE))
    spec = PartitionSpec(0, (PartitionField(2, 1000, IdentityTransform(), "day"),))
    files = [
        data_file(
            f"{tmp_path}/pos.parquet",
            part,
            content=DataFileContent.POSITION_DELETES,
            referenced_data_file=f"{tmp_path}/data.parquet",
        ),
        data_file(
            f"{tmp_path}/eq.parquet",
            part,
            content=DataFileContent.EQUALITY_DELETES,
            equality_ids=(1, 2),
            sort_order_id=0,
        ),
    ]
    if version >= 3:
        files.append(
            data_file(
                f"{tmp_path}/dv.puffin",
                part,
                records=3,
                content=DataFileContent.POSITION_DELETES,
                file_format=FileFormat.PUFFIN,
                referenced_data_file=f"{tmp_path}/data.parquet",
                content_offset=4,
                content_size_in_bytes=42,
            )
        )
    m = write_manifest(
        fio,
        f"{tmp_path}/deletes.avro",
        format_version=version,
        spec=spec,
        schema=schema,
        content=ManifestContent.DELETES,
        snapshot_id=7,
        entries=[added(f) for f in files],
        sequence_number=3,
    )
    assert m.content is ManifestContent.DELETES and m.sequence_number == 3
    got = read_manifest(fio, m)
    assert [e.data_file for e in got] == files
    assert all((e.sequence_number, e.file_sequence_number, e.snapshot_id) == (3, 3, 7) for e in got)
    with open(f"{tmp_path}/deletes.avro", "rb") as fh:
        assert fastavro.reader(fh).metadata["content"] == "deletes"


_FLOATS = st.floats(width=32, allow_nan=True)
_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "b": st.booleans(),
    "i": st.integers(-(2**31), 2**31 - 1),
    "l": st.integers(-(2**63), 2**63 - 1),
    "f": _FLOATS,
    "d": st.floats(allow_nan=True),
    "dec": st.decimals(
        min_value=Decimal("-9999999.99"), max_value=Decimal("9999999.99"), places=2, allow_nan=False
    ),
    "bigdec": st.decimals(min_value=-(10**27), max_value=10**27, places=10, allow_nan=False),
    "dt": st.integers(-(2**31), 2**31 - 1),
    "t": st.integers(0, 86_400_000_000 - 1),
    "ts": st.integers(-(2**63), 2**63 - 1),
    "tstz": st.integers(-(2**63), 2**63 - 1),
    "tsns": st.integers(-(2**63), 2**63 - 1),
    "tstzns": st.integers(-(2**63), 2**63 - 1),
    "s": st.text(),
    "u": st.uuids(),
    "fx": st.binary(min_size=4, max_size=4),
    "bin": st.binary(),
    "dec-2": st.decimals(
        min_value=Decimal("-9999999.99"), max_value=Decimal("9999999.99"), places=2, allow_nan=False
    ),
}
_PARTITIONS = st.tuples(*(st.none() | _STRATEGIES[name] for name, _ in ALL_TYPES))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    return type(a) is type(b) and a == b


def _sort_key(t: IcebergType) -> Any:
    if t in (FLOAT, DOUBLE):
        return lambda v: (v, math.copysign(1.0, v))
    return lambda v: v


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(partitions=st.lists(_PARTITIONS, min_size=1, max_size=4))
def test_partition_values_and_summaries_round_trip(
    partitions: list[tuple[Any, ...]], tmp_path: Path
) -> None:
    fio = FileIO()
    path = f"{tmp_path}/{uuid.uuid4().hex}.avro"
    partitions = [
        tuple(
            float(v) if n == "f" and v is not None else v
            for (n, _), v in zip(ALL_TYPES, p, strict=True)
        )
        for p in partitions
    ]
    entries = [added(data_file(f"/d/{i}.parquet", p)) for i, p in enumerate(partitions)]
    m = write_manifest(
        fio,
        path,
        format_version=2,
        spec=SPEC,
        schema=SCHEMA,
        content=ManifestContent.DATA,
        snapshot_id=1,
        entries=entries,
        sequence_number=1,
    )
    got = [
        e.data_file.partition for e in read_manifest(fio, m, specs_by_id={2: SPEC}, schema=SCHEMA)
    ]
    for g, p in zip(got, partitions, strict=True):
        assert all(_same(a, b) for a, b in zip(g, p, strict=True)), (g, p)

    assert m.partitions is not None
    for n, ((_, t), summary) in enumerate(zip(ALL_TYPES, m.partitions, strict=True)):
        column = [p[n] for p in partitions]
        values = [
            v for v in column if v is not None and not (isinstance(v, float) and math.isnan(v))
        ]
        assert summary.contains_null == any(v is None for v in column)
        assert summary.contains_nan == any(isinstance(v, float) and math.isnan(v) for v in column)
        if not values:
            assert summary.lower_bound is None and summary.upper_bound is None
            continue
        assert summary.lower_bound is not None and summary.upper_bound is not None
        key = _sort_key(t)
        assert _same(from_bytes(t, summary.lower_bound), min(values, key=key))
        assert _same(from_bytes(t, summary.upper_bound), max(values, key=key))


def test_summary_orders_negative_zero_first_and_skips_nan(tmp_path: Path, fio: FileIO) -> None:
    schema = Schema(NestedField(1, "x", DOUBLE))
    spec = PartitionSpec(0, (PartitionField(1, 1000, IdentityTransform(), "x"),))
    entries = [added(data_file(f"/d/{i}", (v,))) for i, v in enumerate([0.0, math.nan, -0.0, None])]
    m = write_manifest(
        fio,
        f"{tmp_path}/m.avro",
        format_version=2,
        spec=spec,
        schema=schema,
        content=ManifestContent.DATA,
        snapshot_id=1,
        entries=entries,
    )
    assert m.partitions == (
        FieldSummary(True, True, to_bytes(DOUBLE, -0.0), to_bytes(DOUBLE, 0.0)),
    )


def test_manifest_metadata(tmp_path: Path, fio: FileIO) -> None:
    write_manifest(
        fio,
        f"{tmp_path}/m.avro",
        format_version=2,
        spec=SPEC,
        schema=SCHEMA,
        content=ManifestContent.DATA,
        snapshot_id=1,
        entries=[],
    )
    with open(f"{tmp_path}/m.avro", "rb") as f:
        meta = fastavro.reader(f).metadata
    assert schema_from_json(json.loads(meta["schema"])) == SCHEMA
    assert meta["schema-id"] == "3"
    fields = json.loads(meta["partition-spec"])
    assert isinstance(fields, list)
    assert partition_spec_from_json({"spec-id": 2, "fields": fields}) == SPEC
    assert meta["partition-spec-id"] == "2"
    assert meta["format-version"] == "2"
    assert meta["content"] == "data"
    assert meta["avro.codec"] == "deflate"


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_long_manifest_list_carried_to_the_next_snapshot(
    version: int, tmp_path: Path, fio: FileIO
) -> None:
    """Thousands of manifests (more than one Avro block holds by default), carried from
    one list to the next as commits do, where each entry is encoded once: both lists read
    back as written, through neve and through fastavro."""
    content = ManifestContent.DATA
    manifests = [
        ManifestFile(
            f"{tmp_path}/m-{i}.avro",
            4000 + i,
            i % 3,
            content,
            1 + i % 7,
            1 + i % 5,
            100 + i,
            i % 2,
            i % 3,
            0,
            10 * i,
            2**40 + i,
            0,
            (FieldSummary(i % 2 == 0, None, to_bytes(LONG, -i), to_bytes(LONG, i)),),
            None if i % 4 else b"k" * (i % 9),
            None,
        )
        for i in range(3000)
    ]
    kw: dict[str, Any] = {"format_version": version, "parent_snapshot_id": None}
    first = write_manifest_list(
        fio,
        f"{tmp_path}/snap-1.avro",
        snapshot_id=1,
        sequence_number=1,
        manifests=manifests,
        first_row_id=0 if version >= 3 else None,
        **kw,
    )
    second = write_manifest_list(
        fio,
        f"{tmp_path}/snap-2.avro",
        snapshot_id=2,
        sequence_number=8,
        manifests=first[1:],
        first_row_id=10**9 if version >= 3 else None,
        **kw,
    )
    assert second == first[1:]  # every row id and sequence number was assigned already
    for path, expected in ((f"{tmp_path}/snap-1.avro", first), (f"{tmp_path}/snap-2.avro", second)):
        got = read_manifest_list(fio, path)
        if version == 1:  # v1 lists have no sequence numbers
            expected = [m.with_(sequence_number=0, min_sequence_number=0) for m in expected]
        assert got == expected
        with open(path, "rb") as f:
            assert sum(1 for _ in fastavro.reader(f)) == len(expected)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_manifest_list_metadata(version: int, tmp_path: Path, fio: FileIO) -> None:
    path = f"{tmp_path}/snap.avro"
    write_manifest_list(
        fio,
        path,
        format_version=version,
        snapshot_id=5,
        parent_snapshot_id=None if version == 1 else 4,
        sequence_number=3,
        manifests=[],
        first_row_id=77 if version >= 3 else None,
    )
    with open(path, "rb") as f:
        meta = {k: v for k, v in fastavro.reader(f).metadata.items() if not k.startswith("avro.")}
    expected = {"snapshot-id": "5", "format-version": str(version)}
    expected["parent-snapshot-id"] = "null" if version == 1 else "4"
    if version >= 2:
        expected["sequence-number"] = "3"
    if version >= 3:
        expected["first-row-id"] = "77"
    assert meta == expected


# -- counts, sequence numbers and inheritance ------------------------------------------


def _write(
    fio: FileIO, path: str, entries: list[ManifestEntry], version: int = 2, **kw: Any
) -> ManifestFile:
    return write_manifest(
        fio,
        path,
        format_version=version,
        spec=UNPARTITIONED,
        schema=UNPARTITIONED_SCHEMA,
        content=kw.pop("content", ManifestContent.DATA),
        snapshot_id=kw.pop("snapshot_id", 100),
        entries=entries,
        **kw,
    )


def test_counts_and_unassigned_sequence_numbers(tmp_path: Path, fio: FileIO) -> None:
    entries = [
        added(data_file("/a", records=3)),
        added(data_file("/b", records=4)),
        ManifestEntry(EXISTING, 50, 6, 6, data_file("/c", records=5)),
        ManifestEntry(DELETED, 100, 2, 2, data_file("/d", records=6)),
    ]
    m = _write(fio, f"{tmp_path}/m.avro", entries)
    assert (m.added_files_count, m.existing_files_count, m.deleted_files_count) == (2, 1, 1)
    assert (m.added_rows_count, m.existing_rows_count, m.deleted_rows_count) == (7, 5, 6)
    # the deleted entry's older sequence number does not count: it is not live
    assert (m.sequence_number, m.min_sequence_number) == (UNASSIGNED_SEQ, 6)
    assert m.manifest_length == os.path.getsize(f"{tmp_path}/m.avro")
    assert m.added_snapshot_id == 100 and m.partitions == ()

    only_added = _write(fio, f"{tmp_path}/n.avro", entries[:2])
    assert (only_added.sequence_number, only_added.min_sequence_number) == (-1, -1)
    known = _write(fio, f"{tmp_path}/o.avro", entries[:2], sequence_number=8)
    assert (known.sequence_number, known.min_sequence_number) == (8, 8)

    written = write_manifest_list(
        fio,
        f"{tmp_path}/snap.avro",
        format_version=2,
        snapshot_id=100,
        parent_snapshot_id=None,
        sequence_number=10,
        manifests=[m, only_added, known],
    )
    assert [(w.sequence_number, w.min_sequence_number) for w in written] == [
        (10, 6),
        (10, 10),
        (8, 8),
    ]
    assert read_manifest_list(fio, f"{tmp_path}/snap.avro") == written


def test_unassigned_manifest_of_another_snapshot_is_rejected(tmp_path: Path, fio: FileIO) -> None:
    m = _write(fio, f"{tmp_path}/m.avro", [added(data_file("/a"))], snapshot_id=1)
    with pytest.raises(ValidationError, match="no sequence number"):
        write_manifest_list(
            fio,
            f"{tmp_path}/snap.avro",
            format_version=2,
            snapshot_id=2,
            parent_snapshot_id=1,
            sequence_number=2,
            manifests=[m],
        )


def test_added_entries_are_written_with_null_sequence_numbers(tmp_path: Path, fio: FileIO) -> None:
    entries = [
        added(data_file("/new")),
        added(data_file("/compacted"), seq=3),  # added with an older data sequence number
        ManifestEntry(EXISTING, 9, 4, 5, data_file("/old")),
    ]
    m = _write(fio, f"{tmp_path}/m.avro", entries, snapshot_id=9)
    with open(f"{tmp_path}/m.avro", "rb") as f:
        raw = [
            (r["status"], r["snapshot_id"], r["sequence_number"], r["file_sequence_number"])
            for r in fastavro.reader(f)
        ]
    assert raw == [(1, 9, None, None), (1, 9, 3, None), (0, 9, 4, 5)]
    got = read_manifest(fio, m.with_(sequence_number=12, min_sequence_number=3))
    assert [(e.sequence_number, e.file_sequence_number) for e in got] == [(12, 12), (3, 12), (4, 5)]
    # before commit the manifest's sequence number is unknown: nothing is inherited
    early = read_manifest(fio, m)
    assert [(e.sequence_number, e.file_sequence_number) for e in early] == [
        (None, None),
        (3, None),
        (4, 5),
    ]


def test_snapshot_id_is_inherited_when_null(tmp_path: Path) -> None:
    schema = avro_schemas.parsed_manifest_entry_schema(2, StructType())
    record = {
        "status": 1,
        "snapshot_id": None,
        "sequence_number": None,
        "file_sequence_number": None,
        "data_file": {
            "content": 0,
            "file_path": "/x.parquet",
            "file_format": "parquet",  # lower case, as some writers do
            "partition": {},
            "record_count": 1,
            "file_size_in_bytes": 2,
        },
    }
    path = tmp_path / "m.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, schema, [record], metadata={"format-version": "2"})
    m = ManifestFile(
        str(path), path.stat().st_size, 0, ManifestContent.DATA, 4, 4, 77, 1, 0, 0, 1, 0, 0
    )
    (e,) = read_manifest(FileIO(), m)
    assert (e.snapshot_id, e.sequence_number, e.file_sequence_number) == (77, 4, 4)
    assert e.data_file.file_format is FileFormat.PARQUET
    assert e.data_file.column_sizes is None and e.data_file.content is DataFileContent.DATA


def test_first_row_ids_are_inherited_in_v3(tmp_path: Path, fio: FileIO) -> None:
    entries = [
        added(data_file("/a", records=10)),
        ManifestEntry(EXISTING, 1, 1, 1, data_file("/b", records=5, first_row_id=900)),
        ManifestEntry(DELETED, 2, 1, 1, data_file("/c", records=7)),
        added(data_file("/d", records=3)),
    ]
    m = _write(fio, f"{tmp_path}/m.avro", entries, version=3, snapshot_id=2)
    (listed,) = write_manifest_list(
        fio,
        f"{tmp_path}/snap.avro",
        format_version=3,
        snapshot_id=2,
        parent_snapshot_id=1,
        sequence_number=2,
        manifests=[m],
        first_row_id=1000,
    )
    assert listed.first_row_id == 1000
    got = read_manifest(fio, listed)
    assert [e.data_file.first_row_id for e in got] == [1000, 900, None, 1010]


def test_v3_list_assigns_row_id_ranges_to_data_manifests_only(tmp_path: Path, fio: FileIO) -> None:
    data1 = _write(fio, f"{tmp_path}/a.avro", [added(data_file("/a", records=10))], version=3)
    kept = _write(fio, f"{tmp_path}/b.avro", [added(data_file("/b", records=4))], version=3)
    kept = kept.with_(sequence_number=1, min_sequence_number=1, first_row_id=0, added_snapshot_id=1)
    deletes = _write(
        fio,
        f"{tmp_path}/c.avro",
        [added(data_file("/c", content=DataFileContent.POSITION_DELETES))],
        version=3,
        content=ManifestContent.DELETES,
    )
    data2 = _write(
        fio,
        f"{tmp_path}/d.avro",
        [
            ManifestEntry(EXISTING, 1, 1, 1, data_file("/e", records=6)),
            added(data_file("/f", records=1)),
        ],
        version=3,
    )
    written = write_manifest_list(
        fio,
        f"{tmp_path}/snap.avro",
        format_version=3,
        snapshot_id=100,
        parent_snapshot_id=1,
        sequence_number=2,
        manifests=[data1, kept, deletes, data2],
        first_row_id=50,
    )
    assert [w.first_row_id for w in written] == [50, 0, None, 60]
    assert read_manifest_list(fio, f"{tmp_path}/snap.avro") == written
    with pytest.raises(ValidationError, match="first_row_id"):
        write_manifest_list(
            fio,
            f"{tmp_path}/snap2.avro",
            format_version=3,
            snapshot_id=100,
            parent_snapshot_id=1,
            sequence_number=2,
            manifests=[data1],
        )


def test_v1_manifests_read_as_sequence_number_zero(tmp_path: Path, fio: FileIO) -> None:
    m = _write(fio, f"{tmp_path}/m.avro", [added(data_file("/a"))], version=1)
    assert (m.sequence_number, m.min_sequence_number) == (0, 0)
    # even when listed in a v2 list with a sequence number (a table upgraded to v2)
    got = read_manifest(fio, m.with_(sequence_number=5))
    assert [(e.sequence_number, e.file_sequence_number, e.snapshot_id) for e in got] == [
        (0, 0, 100)
    ]


def test_v1_list_without_counts(tmp_path: Path, fio: FileIO) -> None:
    entries = [
        added(data_file("/a", records=2)),
        ManifestEntry(EXISTING, 1, None, None, data_file("/b", records=3)),
    ]
    m = _write(fio, f"{tmp_path}/m.avro", entries, version=1)
    record = {
        "manifest_path": m.manifest_path,
        "manifest_length": m.manifest_length,
        "partition_spec_id": 0,
        "added_snapshot_id": None,
        "added_files_count": None,
        "existing_files_count": None,
        "deleted_files_count": None,
    }
    path = f"{tmp_path}/snap-1.avro"
    with open(path, "wb") as f:
        fastavro.writer(
            f,
            avro_schemas.parsed_manifest_file_schema(1),
            [record],
            metadata={"snapshot-id": "100"},
        )
    (got,) = read_manifest_list(fio, path)
    assert got == m.with_(partitions=None)  # counts taken from the manifest itself
    assert got.has_added_files and got.has_existing_files and not got.has_deleted_files


def test_v1_rejects_delete_files(tmp_path: Path, fio: FileIO) -> None:
    with pytest.raises(ValidationError, match="version 1"):
        _write(fio, f"{tmp_path}/m.avro", [], version=1, content=ManifestContent.DELETES)
    deletes = _write(
        fio,
        f"{tmp_path}/d.avro",
        [added(data_file("/c", content=DataFileContent.POSITION_DELETES))],
        content=ManifestContent.DELETES,
        sequence_number=1,
    )
    with pytest.raises(ValidationError, match="v1"):
        write_manifest_list(
            fio,
            f"{tmp_path}/snap.avro",
            format_version=1,
            snapshot_id=100,
            parent_snapshot_id=None,
            sequence_number=0,
            manifests=[deletes],
        )


# -- validation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "version", "content", "message"),
    [
        (
            ManifestEntry(EXISTING, 1, None, None, data_file("/a")),
            2,
            ManifestContent.DATA,
            "sequence numbers",
        ),
        (
            ManifestEntry(DELETED, 1, 3, None, data_file("/a")),
            2,
            ManifestContent.DATA,
            "sequence numbers",
        ),
        (
            added(data_file("/a", content=DataFileContent.POSITION_DELETES)),
            2,
            ManifestContent.DATA,
            "separate manifests",
        ),
        (added(data_file("/a")), 2, ManifestContent.DELETES, "separate manifests"),
        (
            added(data_file("/a", content=DataFileContent.EQUALITY_DELETES)),
            2,
            ManifestContent.DELETES,
            "equality_ids",
        ),
        (
            added(
                data_file(
                    "/dv",
                    content=DataFileContent.POSITION_DELETES,
                    file_format=FileFormat.PUFFIN,
                    content_offset=4,
                    content_size_in_bytes=10,
                )
            ),
            2,
            ManifestContent.DELETES,
            "version 3",
        ),
        (added(data_file("/a", (1,))), 2, ManifestContent.DATA, "partition tuple"),
    ],
)
def test_invalid_entries_are_rejected(
    entry: ManifestEntry, version: int, content: ManifestContent, message: str, tmp_path: Path
) -> None:
    with pytest.raises(ValidationError, match=message):
        _write(FileIO(), f"{tmp_path}/m.avro", [entry], version=version, content=content)
    assert not (tmp_path / "m.avro").exists()


@pytest.mark.parametrize(
    ("t", "value"),
    [
        (INT, 2**31),
        (INT, "1"),
        (INT, True),
        (LONG, 2**63),
        (DATE, 1.5),
        (DecimalType(4, 2), Decimal("100.00")),
        (DecimalType(4, 2), Decimal("1.001")),
        (DecimalType(4, 2), 1.5),
        (UUID, "f79c3e09-677c-4bbd-a479-3f349cb785e7"),
        (FixedType(4), b"\x00"),
        (BINARY, "text"),
        (STRING, b"bytes"),
        (BOOLEAN, 1),
        (DOUBLE, "1.0"),
    ],
)
def test_invalid_partition_values_are_rejected(
    t: PrimitiveType, value: Any, tmp_path: Path
) -> None:
    schema = Schema(NestedField(1, "c", t))
    spec = PartitionSpec(0, (PartitionField(1, 1000, IdentityTransform(), "c"),))
    with pytest.raises(ValidationError):
        write_manifest(
            FileIO(),
            f"{tmp_path}/m.avro",
            format_version=2,
            spec=spec,
            schema=schema,
            content=ManifestContent.DATA,
            snapshot_id=1,
            entries=[added(data_file("/a", (value,)))],
        )


def test_damaged_files_raise_neve_io_error(tmp_path: Path, fio: FileIO) -> None:
    path = tmp_path / "bad.avro"
    path.write_bytes(b"not avro at all")
    with pytest.raises(NeveIOError, match="manifest list"):
        read_manifest_list(fio, str(path))
    m = ManifestFile(str(path), 15, 0, ManifestContent.DATA, 1, 1, 1, 0, 0, 0, 0, 0, 0)
    with pytest.raises(NeveIOError, match="manifest"):
        read_manifest(fio, m)
    with pytest.raises(NeveIOError):
        read_manifest(fio, m.with_(manifest_path=str(tmp_path / "missing.avro")))


# -- tolerance to other writers' layouts ---------------------------------------------


def test_partition_fields_are_matched_by_id_not_name_or_order(tmp_path: Path, fio: FileIO) -> None:
    """A writer may order and name partition (and data_file) fields differently; ids rule."""
    schema = Schema(NestedField(1, "day", DATE), NestedField(2, "amount", DecimalType(9, 2)))
    spec = PartitionSpec(
        5,
        (
            PartitionField(1, 1000, IdentityTransform(), "day"),
            PartitionField(2, 1001, IdentityTransform(), "amount"),
        ),
    )
    avro = json.loads(
        json.dumps(avro_schemas.manifest_entry_schema(2, spec.partition_type(schema)))
    )
    df = avro["fields"][-1]["type"]
    for f in df["fields"]:
        if f["name"] == "file_path":
            f["name"] = "path"  # a writer's own name for field 100
        if f["name"] == "partition":
            f["type"]["fields"] = [
                {**f["type"]["fields"][1], "name": "renamed_amount"},
                {**f["type"]["fields"][0], "name": "renamed_day"},
            ]
    record = {
        "status": 1,
        "snapshot_id": 3,
        "sequence_number": None,
        "file_sequence_number": None,
        "data_file": {
            "content": 0,
            "path": "/x.parquet",
            "file_format": "PARQUET",
            "partition": {"renamed_amount": Decimal("12.34"), "renamed_day": 19_500},
            "record_count": 1,
            "file_size_in_bytes": 2,
        },
    }
    path = tmp_path / "m.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(avro), [record])
    m = ManifestFile(
        str(path), path.stat().st_size, 5, ManifestContent.DATA, 1, 1, 3, 1, 0, 0, 1, 0, 0
    )
    for kw in ({"specs_by_id": {5: spec}}, {"specs_by_id": {5: spec}, "schema": schema}):
        (e,) = read_manifest(fio, m, **kw)
        assert e.data_file.partition == (19_500, Decimal("12.34"))
        assert e.data_file.file_path == "/x.parquet" and e.data_file.spec_id == 5


def test_decoding_plans_are_cached_per_schema(tmp_path: Path, fio: FileIO) -> None:
    spec = PartitionSpec(0, (PartitionField(1, 1000, BucketTransform(8), "id_bucket"),))
    paths = []
    for i in range(3):
        paths.append(
            write_manifest(
                fio,
                f"{tmp_path}/m{i}.avro",
                format_version=2,
                spec=spec,
                schema=UNPARTITIONED_SCHEMA,
                content=ManifestContent.DATA,
                snapshot_id=1,
                entries=[added(data_file(f"/f{i}", (i,)))],
                sequence_number=1,
            )
        )
    read_manifest(fio, paths[0], specs_by_id={0: spec})
    before = manifest_io.entry_plan.cache_info()
    got = [read_manifest(fio, m, specs_by_id={0: spec}) for m in paths[1:]]
    after = manifest_io.entry_plan.cache_info()
    assert (after.hits - before.hits, after.misses - before.misses) == (2, 0)
    assert [g[0].data_file.partition for g in got] == [(1,), (2,)]


# -- files written by Iceberg-Java and iceberg-go --------------------------------------


def _fixture_table(name: str) -> Path:
    (metadata,) = glob.glob(str(FIXTURES / name / "bytes" / "**" / "metadata"), recursive=True)
    return Path(metadata)


def _local(metadata: Path, m: ManifestFile) -> ManifestFile:
    return m.with_(manifest_path=str(metadata / m.manifest_path.rsplit("/", 1)[1]))


def test_reads_iceberg_go_append_history(fio: FileIO) -> None:
    metadata = _fixture_table("v2_read_append_timetravel")
    listed = read_manifest_list(
        fio, str(metadata / "snap-8190990186656353016-0-3f8efc1d-1220-42e1-82e7-5bded1b8ae24.avro")
    )
    assert [
        (m.sequence_number, m.added_snapshot_id, m.added_files_count, m.added_rows_count)
        for m in listed
    ] == [
        (2, 8190990186656353016, 1, 1),
        (1, 3022689860945069661, 1, 2),
    ]
    assert listed[0].manifest_path.endswith(
        "/metadata/3f8efc1d-1220-42e1-82e7-5bded1b8ae24-m1.avro"
    )
    assert listed[0].manifest_length == 3659 and listed[0].partitions == ()
    entries = [e for m in listed for e in read_manifest(fio, _local(metadata, m))]
    assert [
        (e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in entries
    ] == [
        (ADDED, 8190990186656353016, 2, 2),
        (ADDED, 3022689860945069661, 1, 1),
    ]
    newest, oldest = (e.data_file for e in entries)
    assert newest.file_path.endswith(
        "/data/00000-0-3f8efc1d-1220-42e1-82e7-5bded1b8ae24-00001.parquet"
    )
    assert (newest.record_count, newest.file_size_in_bytes, newest.split_offsets) == (1, 1124, (4,))
    assert newest.partition == () and newest.file_format is FileFormat.PARQUET
    assert newest.nan_value_counts == {}
    assert oldest.value_counts == {1: 2, 2: 2, 3: 2}
    assert oldest.null_value_counts == {1: 0, 2: 0, 3: 0}
    assert from_bytes(LONG, oldest.lower_bounds[2]) == 1
    assert from_bytes(LONG, oldest.upper_bounds[2]) == 2
    assert (oldest.lower_bounds[3], oldest.upper_bounds[3]) == (b"a", b"b")


def test_reads_iceberg_java_decimal_uuid_binary_table(fio: FileIO) -> None:
    metadata = _fixture_table("v2_types_decimal_uuid_binary_read")
    (snap,) = metadata.glob("snap-*.avro")
    (m,) = read_manifest_list(fio, str(snap))
    assert (m.sequence_number, m.min_sequence_number, m.added_rows_count) == (1, 1, 2)
    (e,) = read_manifest(fio, _local(metadata, m))
    f = e.data_file
    assert f.file_path.endswith("/data/data-0-127044766555416.parquet")
    assert (f.record_count, f.file_size_in_bytes, f.sort_order_id) == (2, 2066, 0)
    assert f.null_value_counts == {1: 0, 2: 0, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1}
    assert f.lower_bounds is not None and f.upper_bounds is not None
    assert from_bytes(LONG, f.lower_bounds[2]) == 1
    assert from_bytes(LONG, f.upper_bounds[2]) == 2
    expected: dict[int, tuple[PrimitiveType, Any]] = {  # one non-null row: lower == upper
        3: (DecimalType(9, 2), Decimal("12.34")),
        4: (DecimalType(38, 10), Decimal("1234567890.0123456789")),
        5: (UUID, uuid.UUID("12345678-1234-1234-1234-123456789abc")),
        6: (FixedType(4), bytes.fromhex("deadbeef")),
        7: (BINARY, bytes.fromhex("0102ff")),
    }
    for field_id, (t, value) in expected.items():
        assert from_bytes(t, f.lower_bounds[field_id]) == value
        assert from_bytes(t, f.upper_bounds[field_id]) == value


def test_reads_iceberg_java_temporal_table(fio: FileIO) -> None:
    metadata = _fixture_table("v2_types_temporal_read")
    (snap,) = metadata.glob("snap-*.avro")
    (m,) = read_manifest_list(fio, str(snap))
    (e,) = read_manifest(fio, _local(metadata, m))
    assert (e.status, e.sequence_number, e.snapshot_id) == (ADDED, 1, 4468807567077415298)
    f = e.data_file
    moment = dt.datetime(2026, 1, 15, 12, 30, 45, tzinfo=dt.timezone.utc)
    micros = int(moment.timestamp()) * 1_000_000
    expected = {
        3: (DATE, (dt.date(2026, 1, 15) - dt.date(1970, 1, 1)).days),
        4: (TIME, (12 * 3600 + 30 * 60 + 45) * 1_000_000),
        5: (TIMESTAMP, micros),
        6: (TIMESTAMPTZ, micros),
    }
    assert f.lower_bounds is not None
    for field_id, (t, value) in expected.items():
        assert from_bytes(t, f.lower_bounds[field_id]) == value


# -- pyiceberg interoperability --------------------------------------------------------


def _pyiceberg_partition_types() -> tuple[Any, Any, Any]:
    from pyiceberg.partitioning import PartitionField as PyField
    from pyiceberg.partitioning import PartitionSpec as PySpec
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.transforms import IdentityTransform as PyIdentity
    from pyiceberg.types import DateType, StringType, TimestamptzType, UUIDType
    from pyiceberg.types import DecimalType as PyDecimal
    from pyiceberg.types import NestedField as PyNested

    py_schema = PySchema(
        PyNested(1, "d", DateType(), required=False),
        PyNested(2, "dec", PyDecimal(9, 2), required=False),
        PyNested(3, "u", UUIDType(), required=False),
        PyNested(4, "ts", TimestamptzType(), required=False),
        PyNested(5, "s", StringType(), required=False),
    )
    py_spec = PySpec(
        *(
            PyField(i, 1000 + i - 1, PyIdentity(), n)
            for i, n in enumerate(["d", "dec", "u", "ts", "s"], 1)
        ),
        spec_id=0,
    )
    schema = Schema(
        NestedField(1, "d", DATE),
        NestedField(2, "dec", DecimalType(9, 2)),
        NestedField(3, "u", UUID),
        NestedField(4, "ts", TIMESTAMPTZ),
        NestedField(5, "s", STRING),
    )
    return py_schema, py_spec, schema


PY_PARTITION = (
    19_000,
    Decimal("12.34"),
    uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
    1_700_000_000_000_001,
    "x",
)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_pyiceberg_reads_what_neve_writes(version: int, tmp_path: Path, fio: FileIO) -> None:
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import read_manifest_list as py_read_manifest_list

    _, _, schema = _pyiceberg_partition_types()
    spec = PartitionSpec(
        0,
        tuple(
            PartitionField(i, 1000 + i - 1, IdentityTransform(), n)
            for i, n in enumerate(["d", "dec", "u", "ts", "s"], 1)
        ),
    )
    f = full_data_file(f"{tmp_path}/data/a.parquet", PY_PARTITION, version)
    m = write_manifest(
        fio,
        f"{tmp_path}/m.avro",
        format_version=version,
        spec=spec,
        schema=schema,
        content=ManifestContent.DATA,
        snapshot_id=42,
        entries=[
            added(f),
            ManifestEntry(EXISTING, 41, 1, 1, data_file(f"{tmp_path}/b", NULLS[:5])),
        ],
    )
    write_manifest_list(
        fio,
        f"{tmp_path}/snap.avro",
        format_version=version,
        snapshot_id=42,
        parent_snapshot_id=41,
        sequence_number=2,
        manifests=[m],
        first_row_id=0 if version >= 3 else None,
    )
    pio = PyArrowFileIO()
    (pm,) = list(py_read_manifest_list(pio.new_input(f"{tmp_path}/snap.avro")))
    assert pm.manifest_path == m.manifest_path and pm.manifest_length == m.manifest_length
    assert (pm.added_files_count, pm.existing_files_count, pm.added_rows_count) == (1, 1, 123)
    assert pm.sequence_number == (0 if version == 1 else 2)
    assert [s.lower_bound for s in pm.partitions] == [s.lower_bound for s in m.partitions or ()]
    first, second = pm.fetch_manifest_entry(pio, discard_deleted=False)
    assert first.snapshot_id == 42 and second.snapshot_id == 41
    if version >= 2:
        assert (first.sequence_number, first.file_sequence_number) == (2, 2)
        assert (second.sequence_number, second.file_sequence_number) == (1, 1)
    pf = first.data_file
    assert pf.file_path == f.file_path and pf.record_count == 123
    assert pf.column_sizes == f.column_sizes and pf.lower_bounds == f.lower_bounds
    assert list(pf.split_offsets) == list(f.split_offsets or ())
    assert pf.key_metadata == f.key_metadata and pf.sort_order_id == 1
    py_values = [pf.partition[i] for i in range(5)]
    assert py_values[0] == 19_000 and py_values[1] == Decimal("12.34")
    assert uuid.UUID(str(py_values[2])) == PY_PARTITION[2] and py_values[4] == "x"
    assert [second.data_file.partition[i] for i in range(5)] == [None] * 5


@pytest.mark.parametrize("version", [1, 2])
def test_neve_reads_what_pyiceberg_writes(version: int, tmp_path: Path, fio: FileIO) -> None:
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import DataFile as PyDataFile
    from pyiceberg.manifest import DataFileContent as PyContent
    from pyiceberg.manifest import FileFormat as PyFormat
    from pyiceberg.manifest import ManifestEntry as PyEntry
    from pyiceberg.manifest import ManifestEntryStatus as PyStatus
    from pyiceberg.manifest import write_manifest as py_write_manifest
    from pyiceberg.manifest import write_manifest_list as py_write_manifest_list
    from pyiceberg.typedef import Record

    py_schema, py_spec, _ = _pyiceberg_partition_types()
    pio = PyArrowFileIO()
    py_file = PyDataFile.from_args(
        content=PyContent.DATA,
        file_path=f"{tmp_path}/data/p.parquet",
        file_format=PyFormat.PARQUET,
        partition=Record(*PY_PARTITION),
        record_count=5,
        file_size_in_bytes=50,
        column_sizes={1: 3},
        value_counts={1: 5},
        null_value_counts={1: 0},
        nan_value_counts={},
        lower_bounds={1: b"\x01\x00\x00\x00"},
        upper_bounds={1: b"\x09\x00\x00\x00"},
        split_offsets=[4],
        sort_order_id=0,
    )
    path = f"{tmp_path}/py-m.avro"
    with py_write_manifest(version, py_spec, py_schema, pio.new_output(path), 42, "deflate") as w:
        w.add(PyEntry.from_args(status=PyStatus.ADDED, snapshot_id=42, data_file=py_file))
    py_manifest = w.to_manifest_file()
    list_path = f"{tmp_path}/py-snap.avro"
    with py_write_manifest_list(version, pio.new_output(list_path), 42, None, 3, "deflate") as lw:
        lw.add_manifests([py_manifest])

    (m,) = read_manifest_list(fio, list_path)
    assert m.manifest_path == path and m.added_files_count == 1 and m.added_rows_count == 5
    assert m.sequence_number == (3 if version == 2 else 0)
    (e,) = read_manifest(fio, m)
    assert (e.status, e.snapshot_id, e.sequence_number) == (ADDED, 42, 3 if version == 2 else 0)
    f = e.data_file
    assert f.partition == PY_PARTITION
    assert (f.file_path, f.record_count, f.file_size_in_bytes) == (py_file.file_path, 5, 50)
    assert f.lower_bounds == {1: b"\x01\x00\x00\x00"} and f.split_offsets == (4,)


def test_entries_may_be_a_one_shot_iterator(tmp_path: Path, fio: FileIO) -> None:
    entries = _entries_for(2, tmp_path)
    a = write_manifest(
        fio,
        f"{tmp_path}/a.avro",
        format_version=2,
        spec=SPEC,
        schema=SCHEMA,
        content=ManifestContent.DATA,
        snapshot_id=1,
        entries=entries,
    )
    b = write_manifest(
        fio,
        f"{tmp_path}/b.avro",
        format_version=2,
        spec=SPEC,
        schema=SCHEMA,
        content=ManifestContent.DATA,
        snapshot_id=1,
        entries=iter(entries),
    )
    assert a.with_(manifest_path="") == b.with_(manifest_path="")
    with open(f"{tmp_path}/a.avro", "rb") as fa, open(f"{tmp_path}/b.avro", "rb") as fb:
        assert list(fastavro.reader(_io.BytesIO(fa.read()))) == list(
            fastavro.reader(_io.BytesIO(fb.read()))
        )


@settings(max_examples=50)
@given(
    path=st.text(max_size=8),
    counts=st.lists(st.integers(0, 2**40), min_size=6, max_size=6),
    lower=st.none() | st.binary(max_size=4),
    nan=st.none() | st.booleans(),
)
def test_assemble_makes_what_the_constructor_makes(
    path: str, counts: list[int], lower: bytes | None, nan: bool | None
) -> None:
    """The decoders build frozen spec objects with ``assemble``: equal, hashing,
    printing and pickling as the dataclass constructor's, as frozen, and refusing a
    missing or extra field."""
    import copy
    import pickle
    from dataclasses import FrozenInstanceError, asdict

    from neve.spec.manifest import FieldSummary, ManifestContent, ManifestFile, assemble

    summary = {"contains_null": False, "contains_nan": nan, "lower_bound": lower}
    summary["upper_bound"] = lower
    values: dict[str, Any] = {
        "manifest_path": path,
        "manifest_length": counts[0],
        "partition_spec_id": 0,
        "content": ManifestContent.DELETES,
        "sequence_number": counts[1],
        "min_sequence_number": counts[2],
        "added_snapshot_id": counts[3],
        "added_files_count": counts[4],
        "existing_files_count": counts[5],
        "deleted_files_count": 0,
        "added_rows_count": 1,
        "existing_rows_count": 2,
        "deleted_rows_count": 3,
        "partitions": (FieldSummary(**summary), assemble(FieldSummary, dict(summary))),
        "key_metadata": None,
        "first_row_id": counts[0],
    }
    made = ManifestFile(**values)
    built = assemble(ManifestFile, dict(values))
    assert built == made and made == built and hash(built) == hash(made)
    assert repr(built) == repr(made) and asdict(built) == asdict(made)
    assert pickle.loads(pickle.dumps(built)) == made and copy.deepcopy(built) == made
    assert built.with_(manifest_length=7) == made.with_(manifest_length=7)
    with pytest.raises(FrozenInstanceError):
        built.manifest_length = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        assemble(ManifestFile, {k: v for k, v in values.items() if k != "first_row_id"})
    with pytest.raises(TypeError):
        assemble(FieldSummary, {**summary, "extra": 1})
