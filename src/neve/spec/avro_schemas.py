"""Avro schemas of manifests and manifest lists (spec "Manifests", "Manifest Lists" and
Appendix A "Avro").

Every field carries its Iceberg field id as a ``field-id`` attribute, lists carry
``element-id``, and the int-keyed metric maps are arrays of key/value records with
``logicalType: map`` whose key and value fields carry their ids. Record names follow
Iceberg-Java (``manifest_entry``, ``r2`` for data_file, ``r102`` for the partition
struct, ``k117_v118`` for map entries, ``manifest_file``, ``r508``), so the files look
like the ones Java writes.

Schemas are built per format version and partition type and cached; both the JSON
form (what goes into the file header) and fastavro's parsed form are available. The
returned objects are shared: treat them as read-only.

For reading, :func:`manifest_decoding_schema` and :func:`manifest_list_decoding_schema`
derive a schema from a file's own writer schema: the same encoding, without value
logical types (so fastavro yields Iceberg's raw ints and bytes, not datetimes) and
with fields renamed to canonical names by field id (so other writers' naming does
not matter).
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastavro

from neve.errors import SchemaError, UnsupportedFormatVersionError
from neve.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
    decimal_required_bytes,
)

__all__ = [
    "DATA_FILE_FIELD_NAMES",
    "ENTRY_FIELD_NAMES",
    "FIELD_SUMMARY_FIELD_NAMES",
    "MANIFEST_ENTRY_RECORD",
    "MANIFEST_FILE_FIELD_NAMES",
    "MANIFEST_FILE_RECORD",
    "SUPPORTED_VERSIONS",
    "ManifestDecodingSchema",
    "PartitionFieldInfo",
    "avro_field_name",
    "manifest_decoding_schema",
    "manifest_entry_schema",
    "manifest_file_schema",
    "manifest_list_decoding_schema",
    "parsed_manifest_entry_schema",
    "parsed_manifest_file_schema",
    "partition_field_avro_type",
    "without_logical_types",
]

AvroSchema = Any  # a JSON-like Avro schema: str, list or dict

SUPPORTED_VERSIONS = (1, 2, 3)
MANIFEST_ENTRY_RECORD = "manifest_entry"
MANIFEST_FILE_RECORD = "manifest_file"

_NAME_START = frozenset(string.ascii_letters + "_")
_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_")


def _check_version(format_version: int) -> None:
    if format_version not in SUPPORTED_VERSIONS:
        raise UnsupportedFormatVersionError(
            f"format version {format_version} is not supported; use one of "
            f"{', '.join(map(str, SUPPORTED_VERSIONS))}"
        )


def avro_field_name(name: str) -> str:
    """An Avro-valid field name for an Iceberg name, escaped as Iceberg-Java does: a
    leading digit gets a ``_`` prefix, any other invalid character becomes ``_x`` and
    its code point in upper-case hex (``a-b`` -> ``a_x2Db``)."""
    if name and name[0] in _NAME_START and all(c in _NAME_CHARS for c in name):
        return name
    out = []
    for i, c in enumerate(name):
        ok = c in _NAME_START if i == 0 else c in _NAME_CHARS
        if ok:
            out.append(c)
        elif i == 0 and c in string.digits:
            out.append("_" + c)
        else:
            out.append(f"_x{ord(c):X}")
    return "".join(out) or "_"


# -- building blocks -------------------------------------------------------------------


def _field(field_id: int, name: str, avro_type: AvroSchema, *, optional: bool) -> dict[str, Any]:
    if optional:
        return {"name": name, "type": ["null", avro_type], "default": None, "field-id": field_id}
    return {"name": name, "type": avro_type, "field-id": field_id}


def _int_map(
    field_id: int, name: str, key_id: int, value_id: int, value_type: str
) -> dict[str, Any]:
    """An optional map<int, value_type> stored as an array of key/value records."""
    entry = {
        "type": "record",
        "name": f"k{key_id}_v{value_id}",
        "fields": [
            {"name": "key", "type": "int", "field-id": key_id},
            {"name": "value", "type": value_type, "field-id": value_id},
        ],
    }
    return _field(
        field_id, name, {"type": "array", "logicalType": "map", "items": entry}, optional=True
    )


def _list(field_id: int, name: str, element_id: int, element_type: str) -> dict[str, Any]:
    return _field(
        field_id,
        name,
        {"type": "array", "items": element_type, "element-id": element_id},
        optional=True,
    )


def partition_field_avro_type(t: IcebergType, seen_names: set[str] | None = None) -> AvroSchema:
    """The Avro type of a partition value (without the null branch), as Iceberg-Java
    writes it. Named fixed types already in ``seen_names`` are referenced by name,
    because Avro allows a named type to be defined only once per schema."""
    if isinstance(t, BooleanType):
        return "boolean"
    if isinstance(t, IntegerType):
        return "int"
    if isinstance(t, LongType):
        return "long"
    if isinstance(t, FloatType):
        return "float"
    if isinstance(t, DoubleType):
        return "double"
    if isinstance(t, StringType):
        return "string"
    if isinstance(t, BinaryType):
        return "bytes"
    if isinstance(t, DateType):
        return {"type": "int", "logicalType": "date"}
    if isinstance(t, TimeType):
        return {"type": "long", "logicalType": "time-micros"}
    if isinstance(t, (TimestampType, TimestamptzType)):
        return {
            "type": "long",
            "logicalType": "timestamp-micros",
            "adjust-to-utc": isinstance(t, TimestamptzType),
        }
    if isinstance(t, (TimestampNsType, TimestamptzNsType)):
        return {
            "type": "long",
            "logicalType": "timestamp-nanos",
            "adjust-to-utc": isinstance(t, TimestamptzNsType),
        }
    if isinstance(t, (DecimalType, UUIDType, FixedType)):
        if isinstance(t, DecimalType):
            name = f"decimal_{t.precision}_{t.scale}"
            fixed: dict[str, Any] = {
                "type": "fixed",
                "name": name,
                "size": decimal_required_bytes(t.precision),
                "logicalType": "decimal",
                "precision": t.precision,
                "scale": t.scale,
            }
        elif isinstance(t, UUIDType):
            name = "uuid_fixed"
            fixed = {"type": "fixed", "name": name, "size": 16, "logicalType": "uuid"}
        else:
            name = f"fixed_{t.length}"
            fixed = {"type": "fixed", "name": name, "size": t.length}
        if seen_names is not None:
            if name in seen_names:
                return name
            seen_names.add(name)
        return fixed
    raise SchemaError(
        f"type {t} cannot be a partition value; partition by a primitive column instead"
    )


def _partition_record(partition_type: StructType) -> dict[str, Any]:
    seen: set[str] = set()
    fields = []
    for f in partition_type.fields:
        if isinstance(f.field_type, UnknownType):
            # an unknown-typed value is always null: Avro's null type, no union needed
            fields.append(
                {
                    "name": avro_field_name(f.name),
                    "type": "null",
                    "default": None,
                    "field-id": f.field_id,
                }
            )
            continue
        avro_type = partition_field_avro_type(f.field_type, seen)
        fields.append(_field(f.field_id, avro_field_name(f.name), avro_type, optional=True))
    return {"type": "record", "name": "r102", "fields": fields}


def _data_file_record(format_version: int, partition_type: StructType) -> dict[str, Any]:
    v1 = format_version == 1
    fields: list[dict[str, Any]] = []
    if not v1:
        fields.append(_field(134, "content", "int", optional=False))
    fields += [
        _field(100, "file_path", "string", optional=False),
        _field(101, "file_format", "string", optional=False),
        _field(102, "partition", _partition_record(partition_type), optional=False),
        _field(103, "record_count", "long", optional=False),
        _field(104, "file_size_in_bytes", "long", optional=False),
    ]
    if v1:
        # deprecated, but required in v1: always written with a default, never read
        fields.append(_field(105, "block_size_in_bytes", "long", optional=False))
    fields += [
        _int_map(108, "column_sizes", 117, 118, "long"),
        _int_map(109, "value_counts", 119, 120, "long"),
        _int_map(110, "null_value_counts", 121, 122, "long"),
        _int_map(137, "nan_value_counts", 138, 139, "long"),
        _int_map(125, "lower_bounds", 126, 127, "bytes"),
        _int_map(128, "upper_bounds", 129, 130, "bytes"),
        _field(131, "key_metadata", "bytes", optional=True),
        _list(132, "split_offsets", 133, "long"),
    ]
    if not v1:
        fields.append(_list(135, "equality_ids", 136, "int"))
    fields.append(_field(140, "sort_order_id", "int", optional=True))
    if format_version >= 3:
        fields.append(_field(142, "first_row_id", "long", optional=True))
    if not v1:
        fields.append(_field(143, "referenced_data_file", "string", optional=True))
    if format_version >= 3:
        fields.append(_field(144, "content_offset", "long", optional=True))
        fields.append(_field(145, "content_size_in_bytes", "long", optional=True))
    return {"type": "record", "name": "r2", "fields": fields}


# -- public schemas --------------------------------------------------------------------


@lru_cache(maxsize=256)
def manifest_entry_schema(format_version: int, partition_type: StructType) -> dict[str, Any]:
    """The Avro schema of a manifest of the given format version and partition type."""
    _check_version(format_version)
    fields = [_field(0, "status", "int", optional=False)]
    if format_version == 1:
        fields.append(_field(1, "snapshot_id", "long", optional=False))
    else:
        fields += [
            _field(1, "snapshot_id", "long", optional=True),
            _field(3, "sequence_number", "long", optional=True),
            _field(4, "file_sequence_number", "long", optional=True),
        ]
    fields.append(
        _field(2, "data_file", _data_file_record(format_version, partition_type), optional=False)
    )
    return {"type": "record", "name": MANIFEST_ENTRY_RECORD, "fields": fields}


@lru_cache(maxsize=256)
def parsed_manifest_entry_schema(format_version: int, partition_type: StructType) -> Any:
    """:func:`manifest_entry_schema` parsed by fastavro, ready for its writer."""
    return fastavro.parse_schema(manifest_entry_schema(format_version, partition_type))


def _field_summary_record() -> dict[str, Any]:
    return {
        "type": "record",
        "name": "r508",
        "fields": [
            _field(509, "contains_null", "boolean", optional=False),
            _field(518, "contains_nan", "boolean", optional=True),
            _field(510, "lower_bound", "bytes", optional=True),
            _field(511, "upper_bound", "bytes", optional=True),
        ],
    }


@lru_cache(maxsize=8)
def manifest_file_schema(format_version: int) -> dict[str, Any]:
    """The Avro schema of a manifest list of the given format version."""
    _check_version(format_version)
    partitions = _field(
        507,
        "partitions",
        {"type": "array", "items": _field_summary_record(), "element-id": 508},
        optional=True,
    )
    head = [
        _field(500, "manifest_path", "string", optional=False),
        _field(501, "manifest_length", "long", optional=False),
        _field(502, "partition_spec_id", "int", optional=False),
    ]
    if format_version == 1:
        # v1 lists: counts optional, no content and no sequence numbers
        fields = [
            *head,
            _field(503, "added_snapshot_id", "long", optional=True),
            _field(504, "added_files_count", "int", optional=True),
            _field(505, "existing_files_count", "int", optional=True),
            _field(506, "deleted_files_count", "int", optional=True),
            partitions,
            _field(512, "added_rows_count", "long", optional=True),
            _field(513, "existing_rows_count", "long", optional=True),
            _field(514, "deleted_rows_count", "long", optional=True),
            _field(519, "key_metadata", "bytes", optional=True),
        ]
    else:
        fields = [
            *head,
            _field(517, "content", "int", optional=False),
            _field(515, "sequence_number", "long", optional=False),
            _field(516, "min_sequence_number", "long", optional=False),
            _field(503, "added_snapshot_id", "long", optional=False),
            _field(504, "added_files_count", "int", optional=False),
            _field(505, "existing_files_count", "int", optional=False),
            _field(506, "deleted_files_count", "int", optional=False),
            _field(512, "added_rows_count", "long", optional=False),
            _field(513, "existing_rows_count", "long", optional=False),
            _field(514, "deleted_rows_count", "long", optional=False),
            partitions,
            _field(519, "key_metadata", "bytes", optional=True),
        ]
        if format_version >= 3:
            fields.append(_field(520, "first_row_id", "long", optional=True))
    return {"type": "record", "name": MANIFEST_FILE_RECORD, "fields": fields}


@lru_cache(maxsize=8)
def parsed_manifest_file_schema(format_version: int) -> Any:
    """:func:`manifest_file_schema` parsed by fastavro, ready for its writer."""
    return fastavro.parse_schema(manifest_file_schema(format_version))


def without_logical_types(schema: AvroSchema) -> AvroSchema:
    """A copy of an Avro schema without value logical types (date, timestamp-micros,
    decimal, uuid ...). The binary encoding is the same, so decoding with it yields the
    raw ints/bytes Iceberg stores instead of fastavro's datetime and Decimal objects.
    ``logicalType: map`` (a structural marker, not a value conversion) is kept."""
    if isinstance(schema, list):
        return [without_logical_types(s) for s in schema]
    if isinstance(schema, dict):
        return {
            k: without_logical_types(v)
            for k, v in schema.items()
            if not (k == "logicalType" and v != "map")
        }
    return schema


# -- reading: decoding schemas derived from a file's own writer schema -----------------

#: Canonical field names by field id. Decoding schemas rename fields by id, so files
#: whose writers named a field differently still decode to the same keys.
ENTRY_FIELD_NAMES = {
    0: "status",
    1: "snapshot_id",
    2: "data_file",
    3: "sequence_number",
    4: "file_sequence_number",
}
DATA_FILE_FIELD_NAMES = {
    100: "file_path",
    101: "file_format",
    102: "partition",
    103: "record_count",
    104: "file_size_in_bytes",
    105: "block_size_in_bytes",
    108: "column_sizes",
    109: "value_counts",
    110: "null_value_counts",
    125: "lower_bounds",
    128: "upper_bounds",
    131: "key_metadata",
    132: "split_offsets",
    134: "content",
    135: "equality_ids",
    137: "nan_value_counts",
    140: "sort_order_id",
    142: "first_row_id",
    143: "referenced_data_file",
    144: "content_offset",
    145: "content_size_in_bytes",
}
MANIFEST_FILE_FIELD_NAMES = {
    500: "manifest_path",
    501: "manifest_length",
    502: "partition_spec_id",
    503: "added_snapshot_id",
    504: "added_files_count",
    505: "existing_files_count",
    506: "deleted_files_count",
    507: "partitions",
    512: "added_rows_count",
    513: "existing_rows_count",
    514: "deleted_rows_count",
    515: "sequence_number",
    516: "min_sequence_number",
    517: "content",
    519: "key_metadata",
    520: "first_row_id",
}
FIELD_SUMMARY_FIELD_NAMES = {
    509: "contains_null",
    518: "contains_nan",
    510: "lower_bound",
    511: "upper_bound",
}


def _collect_named(schema: AvroSchema, out: dict[str, Any]) -> None:
    if isinstance(schema, list):
        for s in schema:
            _collect_named(s, out)
    elif isinstance(schema, dict):
        if schema.get("type") in ("record", "fixed", "enum") and "name" in schema:
            out.setdefault(schema["name"], schema)
        for key in ("type", "fields", "items", "values"):
            if key in schema and not isinstance(schema[key], str):
                _collect_named(schema[key], out)


def _record_of(avro_type: AvroSchema) -> dict[str, Any] | None:
    """The record schema of a (possibly optional) record-typed field, or None."""
    if isinstance(avro_type, list):
        for b in avro_type:
            if isinstance(b, dict) and b.get("type") == "record":
                return b
        return None
    if isinstance(avro_type, dict) and avro_type.get("type") == "record":
        return avro_type
    return None


def _rename_by_id(
    record: dict[str, Any] | None, names: dict[int, str]
) -> dict[str, dict[str, Any]]:
    """Rename the fields of ``record`` in place to their canonical names by field id;
    return the fields by (new) name. Unknown fields never shadow canonical names."""
    if record is None or not isinstance(record.get("fields"), list):
        return {}
    canonical = set(names.values())
    for i, f in enumerate(record["fields"]):
        fid = f.get("field-id")
        if isinstance(fid, int) and fid in names:
            f["name"] = names[fid]
        elif f.get("name") in canonical:
            f["name"] = f"_unknown_{i}"
    return {f["name"]: f for f in record["fields"]}


@dataclass(frozen=True)
class PartitionFieldInfo:
    """A partition field as a manifest's writer schema declares it."""

    key: str  #: the record key it decodes to with the decoding schema
    field_id: int | None
    avro_type: AvroSchema  #: non-null branch, named references resolved, logical types kept


@dataclass(frozen=True)
class ManifestDecodingSchema:
    """How to decode one manifest layout: the writer schema minus value logical types,
    with canonical field names; partition fields decode to keys ``p0``, ``p1``..."""

    parsed: Any
    has_sequence_numbers: bool
    partition_fields: tuple[PartitionFieldInfo, ...]


def manifest_decoding_schema(writer_schema_text: str) -> ManifestDecodingSchema:
    """The decoding schema for a manifest written with ``writer_schema_text``."""
    writer = json.loads(writer_schema_text)
    named: dict[str, Any] = {}
    _collect_named(writer, named)
    raw = without_logical_types(writer)
    entry_fields = _rename_by_id(_record_of(raw), ENTRY_FIELD_NAMES)
    data_file = (
        _record_of(entry_fields["data_file"]["type"]) if "data_file" in entry_fields else None
    )
    if data_file is None:
        raise SchemaError("the Avro schema has no data_file record: not an Iceberg manifest")
    df_fields = _rename_by_id(data_file, DATA_FILE_FIELD_NAMES)
    part = _record_of(df_fields["partition"]["type"]) if "partition" in df_fields else None
    # the same partition fields in the writer schema, for their logical types
    original = _record_of(writer)
    infos = []
    if part is not None and original is not None:
        original_part = _writer_partition_fields(original)
        for i, (f, g) in enumerate(zip(part["fields"], original_part, strict=True)):
            f["name"] = f"p{i}"
            fid = g.get("field-id")
            infos.append(
                PartitionFieldInfo(
                    f"p{i}", fid if isinstance(fid, int) else None, _unwrap(g["type"], named)
                )
            )
    return ManifestDecodingSchema(
        parsed=fastavro.parse_schema(raw),
        has_sequence_numbers="sequence_number" in entry_fields,
        partition_fields=tuple(infos),
    )


def _writer_partition_fields(entry: dict[str, Any]) -> list[dict[str, Any]]:
    for f in entry.get("fields", []):
        if f.get("field-id") == 2 or f.get("name") == "data_file":
            df = _record_of(f["type"])
            for g in df.get("fields", []) if df else []:
                if g.get("field-id") == 102 or g.get("name") == "partition":
                    rec = _record_of(g["type"])
                    return list(rec["fields"]) if rec else []
    return []


def _unwrap(avro_type: AvroSchema, named: dict[str, Any]) -> AvroSchema:
    """The non-null branch of an optional type, with a named reference resolved."""
    if isinstance(avro_type, list):
        branches = [b for b in avro_type if b != "null"]
        avro_type = branches[0] if len(branches) == 1 else "null"
    if isinstance(avro_type, str) and avro_type in named:
        return named[avro_type]
    return avro_type


def manifest_list_decoding_schema(writer_schema_text: str) -> Any:
    """The parsed decoding schema for a manifest list written with ``writer_schema_text``
    (raw values, canonical field names)."""
    raw = without_logical_types(json.loads(writer_schema_text))
    fields = _rename_by_id(_record_of(raw), MANIFEST_FILE_FIELD_NAMES)
    if "partitions" in fields:
        arr = _unwrap(fields["partitions"]["type"], {})
        if isinstance(arr, dict):
            _rename_by_id(_record_of(arr.get("items")), FIELD_SUMMARY_FIELD_NAMES)
    return fastavro.parse_schema(raw)
