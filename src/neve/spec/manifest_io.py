"""Reading and writing manifests and manifest lists (spec "Manifests", "Manifest Lists",
"Sequence Number Inheritance", "First Row ID Inheritance") through fastavro.

Writing follows Iceberg-Java: ADDED entries leave their sequence numbers null so they
inherit the manifest's sequence number, which is only known when the manifest list is
written at commit. A freshly written manifest therefore carries
:data:`UNASSIGNED_SEQ` as its sequence number (and as its minimum sequence number when
it holds no entry with a known one); :func:`write_manifest_list` fills in the
snapshot's sequence number for manifests added by that snapshot. Commit retries
rewrite only the manifest list.

Reading applies inheritance (snapshot id, sequence numbers, v3 first row ids) and
returns partition tuples in neve's value representation. Values are decoded raw: the
file's own Avro schema, minus its value logical types, is handed to fastavro, so dates
and timestamps arrive as Iceberg's ints rather than datetime objects; decimals and
uuids are then converted by a per-schema plan. Plans are cached by schema text, so
reading many manifests of one spec parses the schema once. For scan planning,
:func:`decode_manifest_lazy` first decodes only what partition pruning needs, handing
fastavro a reader schema without the metric maps (which it skips), and decodes an
entry in full only when asked for it.
"""

from __future__ import annotations

import io as _io
import json
import math
import struct
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from operator import itemgetter
from typing import Any, TypeVar

import fastavro
import pyarrow as pa
from fastavro.read import SchemaResolutionError

from neve.errors import NeveIOError, SchemaError, ValidationError
from neve.io.fileio import FileIO
from neve.spec import avro_schemas as _schemas
from neve.spec.avro_container import AvroHeader, read_header
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
from neve.spec.manifest_columnar import (
    ManifestColumns,
    PolarsRead,
    columnar_enabled,
    finish_read,
    prepare_read,
    read_columns,
    run_read,
)
from neve.spec.metadata_json import partition_fields_to_json, schema_to_json
from neve.spec.metric_arrays import MetricArrays
from neve.spec.partition import PARTITION_DATA_ID_START, PartitionSpec
from neve.spec.schema import Schema
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
    PrimitiveType,
    StringType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
    decimal_required_bytes,
)
from neve.spec.values import decimal_to_unscaled, to_bytes, unscaled_to_decimal

__all__ = [
    "UNASSIGNED_SEQ",
    "LazyManifest",
    "ManifestReads",
    "decode_manifest",
    "decode_manifest_lazy",
    "decode_manifests_lazy",
    "finish_manifest_reads",
    "prepare_manifest_reads",
    "read_manifest",
    "read_manifest_columns",
    "read_manifest_list",
    "run_manifest_reads",
    "write_manifest",
    "write_manifest_list",
]

_T = TypeVar("_T")

#: Sequence number of a manifest written before its snapshot committed; replaced by the
#: snapshot's sequence number when the manifest list is written (Iceberg-Java's
#: ``ManifestWriter.UNASSIGNED_SEQ``).
UNASSIGNED_SEQ = -1

_CODEC = "deflate"
#: Value written for the deprecated, v1-required ``block_size_in_bytes`` (as Java does).
_V1_BLOCK_SIZE = 64 * 1024 * 1024
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1

_ADDED = ManifestEntryStatus.ADDED
_DELETED = ManifestEntryStatus.DELETED
_STATUSES = {s.value: s for s in ManifestEntryStatus}
_CONTENTS = {c.value: c for c in DataFileContent}
_FORMATS = {f.value: f for f in FileFormat}


def _check_version(format_version: int) -> None:
    _schemas.manifest_file_schema(format_version)  # raises for unsupported versions


# ======================================================================================
# Writing manifests
# ======================================================================================


def _int_encoder(lo: int, hi: int, what: str) -> Callable[[Any], Any]:
    def enc(v: Any) -> Any:
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            raise ValidationError(f"partition value {v!r} is not a valid {what}")
        return v

    return enc


def _partition_encoder(t: IcebergType) -> Callable[[Any], Any]:
    """Turns a neve partition value (not None) into what fastavro writes for its type."""
    if isinstance(t, (IntegerType, DateType)):
        return _int_encoder(_INT_MIN, _INT_MAX, str(t))
    if isinstance(
        t, (LongType, TimeType, TimestampType, TimestamptzType, TimestampNsType, TimestamptzNsType)
    ):
        return _int_encoder(_LONG_MIN, _LONG_MAX, str(t))
    if isinstance(t, (FloatType, DoubleType)):

        def enc_float(v: Any) -> Any:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValidationError(f"partition value {v!r} is not a valid {t}")
            return float(v)

        return enc_float
    if isinstance(t, DecimalType):
        size, scale, limit = decimal_required_bytes(t.precision), t.scale, 10**t.precision

        def enc_decimal(v: Any) -> Any:
            unscaled = decimal_to_unscaled(v, scale)
            if abs(unscaled) >= limit:
                raise ValidationError(f"partition value {v} does not fit {t}")
            return unscaled.to_bytes(size, "big", signed=True)

        return enc_decimal
    if isinstance(t, UUIDType):

        def enc_uuid(v: Any) -> Any:
            if isinstance(v, uuid.UUID):
                return v.bytes
            raise ValidationError(f"partition value {v!r} is not a uuid.UUID")

        return enc_uuid
    if isinstance(t, (FixedType, BinaryType)):
        length = t.length if isinstance(t, FixedType) else None

        def enc_bytes(v: Any) -> Any:
            if not isinstance(v, (bytes, bytearray)) or (length is not None and len(v) != length):
                raise ValidationError(f"partition value {v!r} is not a valid {t}")
            return bytes(v)

        return enc_bytes
    if isinstance(t, StringType):

        def enc_str(v: Any) -> Any:
            if not isinstance(v, str):
                raise ValidationError(f"partition value {v!r} is not a string")
            return v

        return enc_str
    if isinstance(t, BooleanType):

        def enc_bool(v: Any) -> Any:
            if not isinstance(v, bool):
                raise ValidationError(f"partition value {v!r} is not a boolean")
            return v

        return enc_bool
    if isinstance(t, UnknownType):

        def enc_unknown(v: Any) -> Any:
            raise ValidationError(f"partition value {v!r} of an unknown-typed field must be None")

        return enc_unknown
    raise ValidationError(f"type {t} cannot be a partition value")


def _float_key(v: float) -> tuple[float, float]:
    # -0.0 sorts before +0.0 (spec: bounds follow IEEE 754 totalOrder)
    return (v, math.copysign(1.0, v))


class _FieldStats:
    """Running summary of one partition field over the entries of a manifest."""

    __slots__ = ("contains_nan", "contains_null", "is_float", "lower", "type", "upper")

    def __init__(self, t: PrimitiveType) -> None:
        self.type = t
        self.is_float = isinstance(t, (FloatType, DoubleType))
        self.contains_null = False
        self.contains_nan = False
        self.lower: Any = None
        self.upper: Any = None

    def update(self, v: Any) -> None:
        if v is None:
            self.contains_null = True
            return
        if self.is_float:
            v = float(v)
            if math.isnan(v):
                self.contains_nan = True
                return
            if self.lower is None or _float_key(v) < _float_key(self.lower):
                self.lower = v
            if self.upper is None or _float_key(v) > _float_key(self.upper):
                self.upper = v
            return
        if self.lower is None or v < self.lower:
            self.lower = v
        if self.upper is None or v > self.upper:
            self.upper = v

    def summary(self) -> FieldSummary:
        return FieldSummary(
            contains_null=self.contains_null,
            contains_nan=self.contains_nan,
            lower_bound=None if self.lower is None else to_bytes(self.type, self.lower),
            upper_bound=None if self.upper is None else to_bytes(self.type, self.upper),
        )


def _primitive(t: IcebergType) -> PrimitiveType:
    if not isinstance(t, PrimitiveType):
        raise ValidationError(f"type {t} cannot be a partition value")
    return t


def _kv(m: Mapping[int, Any] | None) -> list[dict[str, Any]] | None:
    if m is None:
        return None
    return [{"key": k, "value": v} for k, v in m.items()]


def _check_entry(
    e: ManifestEntry, format_version: int, content: ManifestContent, n_fields: int
) -> None:
    f = e.data_file
    if len(f.partition) != n_fields:
        raise ValidationError(
            f"{f.file_path}: partition tuple has {len(f.partition)} values but the spec has "
            f"{n_fields} fields; build the tuple from the manifest's partition spec"
        )
    is_data = f.content is DataFileContent.DATA
    if is_data != (content is ManifestContent.DATA):
        kind = "data" if content is ManifestContent.DATA else "delete"
        raise ValidationError(
            f"{f.file_path}: a {kind} manifest cannot hold {f.content.name.lower()} files; "
            "write data and delete files to separate manifests"
        )
    if f.content is DataFileContent.EQUALITY_DELETES and not f.equality_ids:
        raise ValidationError(f"{f.file_path}: an equality delete file needs equality_ids")
    if format_version < 3 and (f.content_offset is not None or f.is_deletion_vector):
        raise ValidationError(
            f"{f.file_path}: deletion vectors need format version 3; upgrade the table"
        )
    if (
        format_version >= 2
        and e.status is not _ADDED
        and (e.sequence_number is None or e.file_sequence_number is None)
    ):
        raise ValidationError(
            f"{f.file_path}: {e.status.name} entries must carry their data and file "
            "sequence numbers (read them from a committed manifest)"
        )


def write_manifest(
    io: FileIO,
    path: str,
    *,
    format_version: int,
    spec: PartitionSpec,
    schema: Schema,
    content: ManifestContent,
    snapshot_id: int,
    entries: Iterable[ManifestEntry],
    sequence_number: int | None = None,
) -> ManifestFile:
    """Write a manifest and return its manifest-list entry.

    In v2+ ADDED entries are written with null sequence numbers (they inherit the
    manifest's), unless an entry carries an explicit data sequence number (a file added
    with older data, as compaction does); EXISTING and DELETED entries must carry both.
    Without ``sequence_number`` the returned manifest's sequence number is
    :data:`UNASSIGNED_SEQ`, filled in by :func:`write_manifest_list`.
    """
    _check_version(format_version)
    if format_version == 1 and content is not ManifestContent.DATA:
        raise ValidationError("format version 1 has no delete files; upgrade the table to v2")
    partition_type = spec.partition_type(schema)
    pfields = partition_type.fields
    names = [_schemas.avro_field_name(f.name) for f in pfields]
    encoders = [_partition_encoder(f.field_type) for f in pfields]
    stats = [_FieldStats(_primitive(f.field_type)) for f in pfields]
    v1 = format_version == 1

    counts = {s: [0, 0] for s in ManifestEntryStatus}  # status -> [files, rows]
    min_seq: int | None = None
    records = []
    for e in entries:
        _check_entry(e, format_version, content, len(pfields))
        f = e.data_file
        part = {}
        for name, enc, st, v in zip(names, encoders, stats, f.partition, strict=True):
            part[name] = None if v is None else enc(v)  # validates before comparing
            st.update(v)
        c = counts[e.status]
        c[0] += 1
        c[1] += f.record_count

        rec: dict[str, Any] = {
            "status": int(e.status),
            "snapshot_id": snapshot_id if e.snapshot_id is None else e.snapshot_id,
        }
        if not v1:
            if e.status is _ADDED:
                data_seq = e.sequence_number
                rec["sequence_number"] = data_seq
                rec["file_sequence_number"] = None  # always the committing snapshot's
                if data_seq is None:
                    data_seq = sequence_number
            else:
                data_seq = e.sequence_number
                rec["sequence_number"] = data_seq
                rec["file_sequence_number"] = e.file_sequence_number
            if e.status is not _DELETED and data_seq is not None:
                min_seq = data_seq if min_seq is None else min(min_seq, data_seq)
        rec["data_file"] = {
            "content": int(f.content),
            "file_path": f.file_path,
            "file_format": f.file_format.value,
            "partition": part,
            "record_count": f.record_count,
            "file_size_in_bytes": f.file_size_in_bytes,
            "block_size_in_bytes": _V1_BLOCK_SIZE,
            "column_sizes": _kv(f.column_sizes),
            "value_counts": _kv(f.value_counts),
            "null_value_counts": _kv(f.null_value_counts),
            "nan_value_counts": _kv(f.nan_value_counts),
            "lower_bounds": _kv(f.lower_bounds),
            "upper_bounds": _kv(f.upper_bounds),
            "key_metadata": f.key_metadata,
            "split_offsets": None if f.split_offsets is None else list(f.split_offsets),
            "equality_ids": None if f.equality_ids is None else list(f.equality_ids),
            "sort_order_id": f.sort_order_id,
            "first_row_id": f.first_row_id if f.content is DataFileContent.DATA else None,
            "referenced_data_file": f.referenced_data_file,
            "content_offset": f.content_offset,
            "content_size_in_bytes": f.content_size_in_bytes,
        }
        records.append(rec)

    metadata = {
        "schema": json.dumps(schema_to_json(schema), separators=(",", ":")),
        "schema-id": str(schema.schema_id),
        "partition-spec": json.dumps(partition_fields_to_json(spec), separators=(",", ":")),
        "partition-spec-id": str(spec.spec_id),
        "format-version": str(format_version),
        "content": "data" if content is ManifestContent.DATA else "deletes",
    }
    data = _encode(
        _schemas.parsed_manifest_entry_schema(format_version, partition_type),
        records,
        metadata,
        path,
    )
    io.write_bytes(path, data)

    if v1:
        seq = min_seq_out = 0
    else:
        seq = UNASSIGNED_SEQ if sequence_number is None else sequence_number
        min_seq_out = seq if min_seq is None else min_seq
    added, existing, deleted = (
        counts[ManifestEntryStatus.ADDED],
        counts[ManifestEntryStatus.EXISTING],
        counts[ManifestEntryStatus.DELETED],
    )
    return ManifestFile(
        manifest_path=path,
        manifest_length=len(data),
        partition_spec_id=spec.spec_id,
        content=content,
        sequence_number=seq,
        min_sequence_number=min_seq_out,
        added_snapshot_id=snapshot_id,
        added_files_count=added[0],
        existing_files_count=existing[0],
        deleted_files_count=deleted[0],
        added_rows_count=added[1],
        existing_rows_count=existing[1],
        deleted_rows_count=deleted[1],
        partitions=tuple(st.summary() for st in stats),
    )


def _encode(
    parsed_schema: Any, records: list[dict[str, Any]], metadata: dict[str, str], path: str
) -> bytes:
    buf = _io.BytesIO()
    try:
        fastavro.writer(buf, parsed_schema, records, codec=_CODEC, metadata=metadata)
    except (TypeError, ValueError, OverflowError, AttributeError) as exc:
        raise ValidationError(f"cannot encode {path}: {exc}; check the values written") from exc
    return buf.getvalue()


# ======================================================================================
# Writing manifest lists
# ======================================================================================


def write_manifest_list(
    io: FileIO,
    path: str,
    *,
    format_version: int,
    snapshot_id: int,
    parent_snapshot_id: int | None,
    sequence_number: int,
    manifests: Sequence[ManifestFile],
    first_row_id: int | None = None,
) -> list[ManifestFile]:
    """Write the manifest list of a snapshot and return its entries as written.

    Manifests added by this snapshot with :data:`UNASSIGNED_SEQ` get ``sequence_number``.
    In v3, data manifests without a ``first_row_id`` are assigned consecutive ranges
    starting at ``first_row_id`` (each as long as its existing plus added rows); the
    snapshot's ``added-rows`` is the sum of those ranges.
    """
    _check_version(format_version)
    out: list[ManifestFile] = []
    next_row_id = first_row_id
    for m in manifests:
        changes: dict[str, Any] = {}
        for attr in ("sequence_number", "min_sequence_number"):
            if getattr(m, attr) == UNASSIGNED_SEQ:
                if m.added_snapshot_id != snapshot_id:
                    raise ValidationError(
                        f"manifest {m.manifest_path} has no sequence number but was added by "
                        f"snapshot {m.added_snapshot_id}, not {snapshot_id}; only manifests "
                        "of the committing snapshot may be unassigned"
                    )
                changes[attr] = sequence_number
        if format_version == 1:
            if m.content is not ManifestContent.DATA:
                raise ValidationError(
                    f"{m.manifest_path} is a delete manifest, which a v1 manifest list cannot "
                    "hold; upgrade the table to v2"
                )
        elif format_version >= 3 and m.content is ManifestContent.DATA and m.first_row_id is None:
            if next_row_id is None:
                raise ValidationError(
                    "a v3 manifest list needs first_row_id (the table's next-row-id) to "
                    f"assign row ids to {m.manifest_path}"
                )
            changes["first_row_id"] = next_row_id
            next_row_id += m.existing_rows_count + m.added_rows_count
        out.append(m.with_(**changes) if changes else m)

    records = [_manifest_file_record(m, format_version) for m in out]
    metadata = {
        "snapshot-id": str(snapshot_id),
        "parent-snapshot-id": "null" if parent_snapshot_id is None else str(parent_snapshot_id),
        "format-version": str(format_version),
    }
    if format_version >= 2:
        metadata["sequence-number"] = str(sequence_number)
    if format_version >= 3 and first_row_id is not None:
        metadata["first-row-id"] = str(first_row_id)
    data = _encode(_schemas.parsed_manifest_file_schema(format_version), records, metadata, path)
    io.write_bytes(path, data)
    return out


def _manifest_file_record(m: ManifestFile, format_version: int) -> dict[str, Any]:
    return {
        "manifest_path": m.manifest_path,
        "manifest_length": m.manifest_length,
        "partition_spec_id": m.partition_spec_id,
        "content": int(m.content),
        "sequence_number": m.sequence_number,
        "min_sequence_number": m.min_sequence_number,
        "added_snapshot_id": m.added_snapshot_id,
        "added_files_count": m.added_files_count,
        "existing_files_count": m.existing_files_count,
        "deleted_files_count": m.deleted_files_count,
        "added_rows_count": m.added_rows_count,
        "existing_rows_count": m.existing_rows_count,
        "deleted_rows_count": m.deleted_rows_count,
        "partitions": None
        if m.partitions is None
        else [
            {
                "contains_null": s.contains_null,
                "contains_nan": s.contains_nan,
                "lower_bound": s.lower_bound,
                "upper_bound": s.upper_bound,
            }
            for s in m.partitions
        ],
        "key_metadata": m.key_metadata,
        "first_row_id": m.first_row_id if format_version >= 3 else None,
    }


# ======================================================================================
# Reading: decoding plans (cached per Avro schema text)
# ======================================================================================


def _to_decimal(scale: int) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        if isinstance(v, (bytes, bytearray)):
            v = int.from_bytes(v, "big", signed=True)
        elif isinstance(v, Decimal):  # the columnar decoder reads logical decimals
            v = decimal_to_unscaled(v, scale)
        return unscaled_to_decimal(v, scale)

    return conv


def _to_uuid(v: Any) -> Any:
    return uuid.UUID(v) if isinstance(v, str) else uuid.UUID(bytes=bytes(v))


def _partition_converter(
    avro_type: Any, iceberg_type: IcebergType | None
) -> Callable[[Any], Any] | None:
    """How to turn a raw decoded partition value into neve's representation; None when
    the raw value is already right (ints for dates and timestamps, str, bytes ...).
    The Iceberg type decides when known, else the Avro logical type."""
    base = avro_type.get("type") if isinstance(avro_type, dict) else avro_type
    logical = avro_type.get("logicalType") if isinstance(avro_type, dict) else None
    if isinstance(iceberg_type, DecimalType):
        return _to_decimal(iceberg_type.scale)
    if iceberg_type is None and logical == "decimal" and base in ("fixed", "bytes"):
        return _to_decimal(int(avro_type.get("scale", 0)))
    if isinstance(iceberg_type, UUIDType) or (iceberg_type is None and logical == "uuid"):
        return _to_uuid
    if isinstance(iceberg_type, (FloatType, DoubleType)) and base in ("int", "long"):
        return float
    return None


_PartitionFn = Callable[[Mapping[str, Any]], tuple[Any, ...]]


def _partition_fn(
    keys: Sequence[str | None], convs: Sequence[Callable[[Any], Any] | None]
) -> _PartitionFn:
    present = [k for k in keys if k is not None]
    if len(present) == len(keys) and not any(convs):
        if not present:
            return lambda p: ()
        if len(present) == 1:
            only = present[0]
            return lambda p: (p[only],)
        getter: _PartitionFn = itemgetter(*present)
        return getter
    pairs = tuple(zip(keys, convs, strict=True))

    def fn(p: Mapping[str, Any]) -> tuple[Any, ...]:
        out = []
        for k, c in pairs:
            v = None if k is None else p[k]
            out.append(v if v is None or c is None else c(v))
        return tuple(out)

    return fn


@dataclass(frozen=True)
class _EntryPlan:
    schema: Any  # fastavro-parsed decoding schema (the file's encoding, raw values)
    #: fastavro-parsed reader schema projecting ``schema`` onto what inheritance and
    #: partition pruning need (fastavro skips the other fields); None when it cannot
    #: be built, and then entries are decoded in full at once.
    head: Any
    has_sequence_numbers: bool
    partition: _PartitionFn  # decoded partition record -> tuple in spec order
    #: per spec field, in spec order: its key in the decoded partition record (None if
    #: the file lacks it) and the converter of its raw value (None if none is needed)
    partition_keys: tuple[str | None, ...]
    partition_convs: tuple[Callable[[Any], Any] | None, ...]


#: data_file fields a head decode keeps; fastavro skips all others (metric maps above all).
_HEAD_FIELDS = frozenset({"content", "partition", "record_count", "first_row_id"})


def _head_schema(parsed: Any) -> Any:
    """``parsed`` (a manifest decoding schema) with only :data:`_HEAD_FIELDS` left in
    ``data_file``, parsed as a reader schema; None if the schema does not allow it."""
    try:
        entry = _plain(parsed)
        df = next(f for f in entry["fields"] if f["name"] == "data_file")
        record = df["type"]
        if isinstance(record, list):
            record = next(b for b in record if isinstance(b, dict))
        record["fields"] = [f for f in record["fields"] if f["name"] in _HEAD_FIELDS]
        return fastavro.parse_schema(entry)
    except (KeyError, TypeError, StopIteration, ValueError, fastavro.schema.SchemaParseException):
        return None  # e.g. a kept field names a type only a dropped field defines


def _plain(schema: Any) -> Any:
    """A deep copy of a parsed schema without fastavro's bookkeeping keys."""
    if isinstance(schema, dict):
        return {k: _plain(v) for k, v in schema.items() if not k.startswith("__")}
    if isinstance(schema, list):
        return [_plain(v) for v in schema]
    return schema


#: A manifest layout's decoding schema (fastavro-parsed), shared by its entry plans.
_decoding_schema = lru_cache(maxsize=64)(_schemas.manifest_decoding_schema)


@lru_cache(maxsize=256)
def _entry_plan(
    text: str,
    spec_field_ids: tuple[int, ...] | None,
    partition_types: tuple[IcebergType, ...] | None,
) -> _EntryPlan:
    """The decoding plan of a manifest layout: partition fields are matched to the spec
    by field id (v2+ writers must write them), else by position."""
    decoding = _decoding_schema(text)
    fields = decoding.partition_fields
    chosen: list[_schemas.PartitionFieldInfo | None]
    if spec_field_ids is None:
        chosen = list(fields)
    elif any(f.field_id is not None for f in fields):
        by_id = {f.field_id: f for f in fields}
        chosen = [by_id.get(fid) for fid in spec_field_ids]
    else:
        chosen = [fields[i] if i < len(fields) else None for i in range(len(spec_field_ids))]
    keys: list[str | None] = []
    convs: list[Callable[[Any], Any] | None] = []
    for n, info in enumerate(chosen):
        ice = (
            partition_types[n] if partition_types is not None and n < len(partition_types) else None
        )
        keys.append(None if info is None else info.key)
        convs.append(None if info is None else _partition_converter(info.avro_type, ice))
    return _EntryPlan(
        decoding.parsed,
        _head_schema(decoding.parsed),
        decoding.has_sequence_numbers,
        _partition_fn(keys, convs),
        tuple(keys),
        tuple(convs),
    )


@lru_cache(maxsize=256)
def _spec_ids_from_json(text: str) -> tuple[int, ...] | None:
    """Partition field ids, in spec order, from a manifest's ``partition-spec`` value."""
    try:
        fields = json.loads(text)
    except ValueError:
        return None
    if isinstance(fields, dict):
        fields = fields.get("fields", [])
    if not isinstance(fields, list):
        return None
    ids = []
    for i, f in enumerate(fields):
        fid = f.get("field-id") if isinstance(f, dict) else None
        ids.append(int(fid) if fid is not None else PARTITION_DATA_ID_START + i)
    return tuple(ids)


# ======================================================================================
# Reading manifests
# ======================================================================================


def _open(data: bytes) -> Any:
    """A fastavro block reader over a file's bytes (header already parsed)."""
    return fastavro.block_reader(_io.BytesIO(data))


def _iter_records(reader: Any, schema: Any) -> Iterator[Any]:
    """Raw records of every block, decoded with ``schema``: the writer schema minus its
    value logical types, which has the same encoding but yields raw ints and bytes."""
    decode = fastavro.schemaless_reader
    for block in reader:
        buf = block.bytes_
        if not hasattr(buf, "read"):
            buf = _io.BytesIO(buf)
        for _ in range(block.num_records):
            yield decode(buf, schema, None)


def _block_bytes(block: Any) -> bytes:
    buf = block.bytes_
    return bytes(buf.getvalue() if hasattr(buf, "getvalue") else buf)


def _map(kvs: list[dict[str, Any]] | dict[int, Any] | None) -> dict[int, Any] | None:
    """A metric map, which fastavro gives as a list of key/value records."""
    if kvs is None or isinstance(kvs, dict):  # the columnar decoder builds dicts itself
        return kvs
    return {kv["key"]: kv["value"] for kv in kvs}


def read_manifest(
    io: FileIO,
    manifest: ManifestFile,
    *,
    specs_by_id: Mapping[int, PartitionSpec] | None = None,
    schema: Schema | None = None,
) -> list[ManifestEntry]:
    """All entries of a manifest, with inherited values filled in.

    Partition tuples follow the field order of the manifest's spec (from ``specs_by_id``,
    else from the file's own ``partition-spec``). With ``schema`` too, partition values
    are converted by their Iceberg types; without it, by the file's Avro types.
    """
    data = io.read_bytes(manifest.manifest_path)
    return decode_manifest(data, manifest, specs_by_id=specs_by_id, schema=schema)


def decode_manifest(
    data: bytes,
    manifest: ManifestFile,
    *,
    specs_by_id: Mapping[int, PartitionSpec] | None = None,
    schema: Schema | None = None,
) -> list[ManifestEntry]:
    """Like :func:`read_manifest`, for the bytes of a manifest already in memory."""
    return decode_manifest_lazy(
        data, manifest, specs_by_id=specs_by_id, schema=schema, eager=True
    ).entries()


def decode_manifest_lazy(
    data: bytes,
    manifest: ManifestFile,
    *,
    specs_by_id: Mapping[int, PartitionSpec] | None = None,
    schema: Schema | None = None,
    eager: bool = False,
    columnar: bool | None = None,
    prepared: ManifestColumns | None = None,
) -> LazyManifest:
    """The entries of a manifest decoded in two steps: at once the head of each entry
    (status, inherited snapshot id, sequence numbers and first row id, content and
    partition tuple: enough to prune by partition), and each entry's full data file
    (metrics, path, splits) on first :meth:`LazyManifest.entry`. ``eager`` decodes every
    entry in full now, which is cheaper when all of them will be needed.

    ``columnar`` chooses the decoder: polars' columnar reader (True; files it cannot
    read go to fastavro), fastavro alone (False), or as ``NEVE_MANIFEST_DECODER`` says
    (None, the default; see :mod:`neve.spec.manifest_columnar`)."""
    try:
        return LazyManifest(data, manifest, specs_by_id, schema, eager, columnar, prepared)
    except _DECODE_ERRORS as exc:
        raise _damaged(manifest, exc) from exc


@dataclass(frozen=True)
class ManifestReads:
    """The polars reads of some manifests, prepared: the files of one writer schema and
    codec together (see ``manifest_columnar.PolarsRead``)."""

    #: How many manifests were given.
    count: int
    #: The positions of the manifests each read covers, and the read.
    reads: tuple[tuple[tuple[int, ...], PolarsRead], ...]


def prepare_manifest_reads(datas: Sequence[bytes]) -> ManifestReads:
    """Group the manifest files by writer schema and codec and prepare one polars read
    per group (on the calling thread: it runs Python)."""
    groups: dict[tuple[str, str], list[int]] = {}
    headers: dict[int, AvroHeader] = {}
    for i, data in enumerate(datas):
        try:
            headers[i] = header = read_header(data)
            groups.setdefault((header.schema_text, header.codec), []).append(i)
        except (ValueError, EOFError, KeyError):
            continue  # decode_manifest_lazy reports it
    reads = []
    for (text, _), members in groups.items():
        try:
            decoding = _entry_plan(text, None, None).schema
        except _DECODE_ERRORS:
            continue
        read = prepare_read([datas[i] for i in members], [headers[i] for i in members], decoding)
        if read is not None:
            reads.append((tuple(members), read))
    return ManifestReads(len(datas), tuple(reads))


def run_manifest_reads(reads: ManifestReads) -> list[pa.Table | None]:
    """polars' part of the reads: hardly holds the GIL, so run it on threads."""
    return [run_read(read) for _, read in reads.reads]


def finish_manifest_reads(
    reads: ManifestReads, tables: Sequence[pa.Table | None]
) -> list[ManifestColumns | None]:
    """The columns of each manifest for :func:`decode_manifests_lazy`; None for a file
    fastavro will decode."""
    prepared: list[ManifestColumns | None] = [None] * reads.count
    for (members, read), table in zip(reads.reads, tables, strict=True):
        for i, columns in zip(members, finish_read(read, table) or (), strict=False):
            prepared[i] = columns
    return prepared


def read_manifest_columns(datas: Sequence[bytes]) -> list[ManifestColumns | None]:
    """Prepare, run and finish the polars reads of some manifests on this thread."""
    reads = prepare_manifest_reads(datas)
    return finish_manifest_reads(reads, run_manifest_reads(reads))


def decode_manifests_lazy(
    datas: Sequence[bytes],
    manifests: Sequence[ManifestFile],
    *,
    specs_by_id: Mapping[int, PartitionSpec] | None = None,
    eager: Sequence[bool] | None = None,
    columnar: bool | None = None,
    prepared: Sequence[ManifestColumns | None] | None = None,
) -> list[LazyManifest]:
    """:func:`decode_manifest_lazy` for several manifests (with one ``eager`` flag
    each). The columnar decoder reads them with :func:`read_manifest_columns` unless
    ``prepared`` holds what it returned."""
    flags = list(eager) if eager is not None else [False] * len(manifests)
    if columnar is None:
        columnar = columnar_enabled()
    if prepared is None:
        prepared = read_manifest_columns(datas) if columnar else [None] * len(datas)
    return [
        decode_manifest_lazy(
            data, m, specs_by_id=specs_by_id, eager=e, columnar=columnar, prepared=p
        )
        for data, m, e, p in zip(datas, manifests, flags, prepared, strict=True)
    ]


def _damaged(manifest: ManifestFile, exc: Exception) -> NeveIOError:
    return NeveIOError(
        f"cannot read manifest {manifest.manifest_path}: {exc!r}; the file is damaged or "
        "not an Iceberg manifest"
    )


#: What fastavro and record access raise on a damaged or foreign file.
_DECODE_ERRORS = (
    ValueError,
    EOFError,
    KeyError,
    TypeError,
    IndexError,
    struct.error,
    SchemaError,
)


@dataclass
class _Heads:
    """What a head decode gives, one list per field with one item per entry: status
    codes, snapshot ids, data and file sequence numbers (None when absent), content
    codes, record counts, first row ids, partitions (records, or spec-ordered tuples
    from the columnar decoder), and the full data_file records when they were decoded
    too (else None)."""

    status: list[int]
    snapshot_id: list[Any]
    sequence_number: list[Any]
    file_sequence_number: list[Any]
    content: list[Any]
    record_count: list[int]
    first_row_id: list[Any]
    partition: list[Any]
    full: list[Mapping[str, Any]] | None


def _record_heads(records: Iterable[Any], full: bool) -> _Heads:
    """Heads of fastavro-decoded entry records."""
    heads = _Heads([], [], [], [], [], [], [], [], [] if full else None)
    for rec in records:
        df = rec["data_file"]
        heads.status.append(rec["status"])
        heads.snapshot_id.append(rec["snapshot_id"])
        heads.sequence_number.append(rec.get("sequence_number"))
        heads.file_sequence_number.append(rec.get("file_sequence_number"))
        heads.content.append(df.get("content"))
        heads.record_count.append(df["record_count"])
        heads.first_row_id.append(df.get("first_row_id"))
        heads.partition.append(df["partition"])
        if heads.full is not None:
            heads.full.append(df)
    return heads


def _inherit(values: list[Any], inherited: Any, only: list[bool] | None) -> list[Any]:
    """``values`` with None replaced by ``inherited`` (where ``only`` is True, if given)."""
    if inherited is None or None not in values:
        return values
    if only is None:
        return [inherited if v is None else v for v in values]
    return [inherited if v is None and o else v for v, o in zip(values, only, strict=True)]


class LazyManifest:
    """The entries of one manifest; see :func:`decode_manifest_lazy`. Immutable once
    built apart from the memo of full entries; safe to share between threads (two
    threads may decode the same entry; both get equal values)."""

    __slots__ = (
        "_blocks",
        "_columns",
        "_entries",
        "_inherited",
        "_locations",
        "_partition_of",
        "_schema",
        "contents",
        "manifest",
        "partitions",
        "statuses",
    )

    def __init__(
        self,
        data: bytes,
        manifest: ManifestFile,
        specs_by_id: Mapping[int, PartitionSpec] | None,
        schema: Schema | None,
        eager: bool,
        columnar: bool | None = None,
        prepared: ManifestColumns | None = None,
    ) -> None:
        self.manifest = manifest
        #: Per entry, in file order: status, content and partition tuple (spec order).
        self.statuses: list[ManifestEntryStatus] = []
        self.contents: list[DataFileContent] = []
        self.partitions: list[tuple[Any, ...]] = []
        # per entry: (snapshot id, data seq, file seq, first row id)
        self._inherited: list[tuple[int | None, int | None, int | None, int | None]] = []
        self._blocks: list[bytes] = []
        self._locations: list[tuple[int, int]] = []  # (block index, offset in block)
        self._entries: list[ManifestEntry | None] = []
        self._columns: ManifestColumns | None = None

        spec = specs_by_id.get(manifest.partition_spec_id) if specs_by_id else None
        partition_types: tuple[IcebergType, ...] | None = None
        if spec is not None and schema is not None:
            partition_types = _partition_types(spec, schema)
        header = read_header(data)
        metadata = header.metadata()
        if spec is not None:
            spec_ids: tuple[int, ...] | None = tuple(f.field_id for f in spec.fields)
        else:
            spec_text = metadata.get("partition-spec")
            spec_ids = _spec_ids_from_json(spec_text) if spec_text is not None else None
        plan = _entry_plan(metadata["avro.schema"], spec_ids, partition_types)
        self._partition_of = plan.partition
        self._schema = plan.schema
        if columnar is None:
            columnar = columnar_enabled()
        columns = None
        if columnar:
            columns = prepared if prepared is not None else read_columns(data, header, plan.schema)
        if columns is not None:
            try:
                self._columns = columns
                head_columns = columns.heads(plan.partition_keys, plan.partition_convs)
                self._read_heads(_Heads(*head_columns, full=None), plan, None)
                if eager:
                    self._fill(range(len(self.statuses)))
                return
            except _DECODE_ERRORS:  # columns polars read but neve cannot use: fastavro
                self._reset()
        reader = _open(data)
        if not eager and plan.head is not None:
            try:
                heads = self._heads(reader, plan.schema, plan.head)
                self._read_heads(_record_heads(heads, False), plan, self._partition_of)
                return
            except SchemaResolutionError:  # fastavro cannot project this schema: no heads
                self._reset()
                reader = _open(data)
        records = _iter_records(reader, plan.schema)
        self._read_heads(_record_heads(records, True), plan, self._partition_of)

    def _reset(self) -> None:
        self.statuses, self.contents, self.partitions, self._inherited = [], [], [], []
        self._blocks, self._locations, self._entries = [], [], []
        self._columns = None

    def _heads(self, reader: Any, schema: Any, head: Any) -> Iterator[Any]:
        """Head records of every block (fastavro resolves ``schema`` to ``head``,
        skipping the other fields), remembering where each entry starts."""
        blocks, locations = self._blocks, self._locations
        decode = fastavro.schemaless_reader
        for block in reader:
            data = _block_bytes(block)
            index = len(blocks)
            blocks.append(data)
            buf = _io.BytesIO(data)
            for _ in range(block.num_records):
                locations.append((index, buf.tell()))
                yield decode(buf, schema, head)

    def _read_heads(
        self, heads: _Heads, plan: _EntryPlan, partition_of: Callable[[Any], Any] | None
    ) -> None:
        """Fill the per-entry memos from heads, whose partitions ``partition_of`` turns
        into spec-ordered tuples (None: they are tuples already); entries whose full
        data_file record was decoded too are built at once. Column by column, as list
        comprehensions: planning reads the heads of every entry of every manifest."""
        manifest = self.manifest
        n = len(heads.status)
        statuses = [_STATUSES[c] for c in heads.status]
        snapshot_ids = _inherit(heads.snapshot_id, manifest.added_snapshot_id, None)
        if plan.has_sequence_numbers:
            # spec "Sequence Number Inheritance": null means inherit, for ADDED entries
            # (and, as Java does, for any entry of a manifest with sequence number 0)
            seq = manifest.sequence_number if manifest.sequence_number >= 0 else None
            added = None if seq == 0 else [s is _ADDED for s in statuses]
            seqs = _inherit(heads.sequence_number, seq, added)
            file_seqs = _inherit(heads.file_sequence_number, seq, added)
        else:
            seqs = file_seqs = [0] * n  # v1 manifests read as sequence number 0
        first_row_ids = heads.first_row_id
        next_row_id = manifest.first_row_id if manifest.content is ManifestContent.DATA else None
        if next_row_id is not None and None in first_row_ids:
            # spec "First Row ID Inheritance"; deleted entries are not given ids,
            # matching the ranges writers reserve (existing + added rows)
            first_row_ids = list(first_row_ids)
            for i, (status, count) in enumerate(zip(statuses, heads.record_count, strict=True)):
                if status is not _DELETED and first_row_ids[i] is None:
                    first_row_ids[i] = next_row_id
                    next_row_id += count
        partitions = (
            heads.partition if partition_of is None else [partition_of(p) for p in heads.partition]
        )
        inherited = list(zip(snapshot_ids, seqs, file_seqs, first_row_ids, strict=True))
        self.statuses = statuses
        self.contents = [_CONTENTS[c or 0] for c in heads.content]
        self.partitions = partitions
        self._inherited = inherited
        full = heads.full
        self._entries = (
            [None] * n
            if full is None
            else [
                self._build(*args)
                for args in zip(statuses, inherited, partitions, full, strict=True)
            ]
        )

    def _build(
        self,
        status: ManifestEntryStatus,
        inherited: tuple[int | None, int | None, int | None, int | None],
        partition: tuple[Any, ...],
        df: Mapping[str, Any],
    ) -> ManifestEntry:
        snapshot_id, seq, file_seq, first_row_id = inherited
        fmt = df["file_format"]
        split_offsets = df.get("split_offsets")
        equality_ids = df.get("equality_ids")
        return ManifestEntry(
            status,
            snapshot_id,
            seq,
            file_seq,
            DataFile(
                file_path=df["file_path"],
                file_format=_FORMATS.get(fmt) or FileFormat.parse(fmt),
                partition=partition,
                record_count=df["record_count"],
                file_size_in_bytes=df["file_size_in_bytes"],
                content=_CONTENTS[df.get("content", 0)],
                column_sizes=_map(df.get("column_sizes")),
                value_counts=_map(df.get("value_counts")),
                null_value_counts=_map(df.get("null_value_counts")),
                nan_value_counts=_map(df.get("nan_value_counts")),
                lower_bounds=_map(df.get("lower_bounds")),
                upper_bounds=_map(df.get("upper_bounds")),
                key_metadata=df.get("key_metadata"),
                split_offsets=None if split_offsets is None else tuple(split_offsets),
                equality_ids=None if equality_ids is None else tuple(equality_ids),
                sort_order_id=df.get("sort_order_id"),
                first_row_id=first_row_id,
                referenced_data_file=df.get("referenced_data_file"),
                content_offset=df.get("content_offset"),
                content_size_in_bytes=df.get("content_size_in_bytes"),
                spec_id=self.manifest.partition_spec_id,
            ),
        )

    def __len__(self) -> int:
        return len(self.statuses)

    def entry(self, i: int) -> ManifestEntry:
        """Entry ``i`` (file order) in full, decoded on first use."""
        e = self._entries[i]
        if e is not None:
            return e
        if self._columns is not None:
            return self.entries_at((i,))[0]
        try:
            block, pos = self._locations[i]
            buf = _io.BytesIO(self._blocks[block])
            buf.seek(pos)
            rec: Any = fastavro.schemaless_reader(buf, self._schema, None)
            e = self._build(
                self.statuses[i], self._inherited[i], self.partitions[i], rec["data_file"]
            )
        except _DECODE_ERRORS as exc:
            raise _damaged(self.manifest, exc) from exc
        self._entries[i] = e
        return e

    def metrics_at(
        self, indices: Sequence[int], field_ids: Iterable[int]
    ) -> list[tuple[Any, ...]] | None:
        """For entries not yet decoded in full, their record counts and metrics limited
        to ``field_ids`` (see ``ManifestColumns.metrics``), cheaper than decoding them;
        None unless the columnar decoder read this manifest."""
        return self._from_columns(lambda columns: columns.metrics(indices, field_ids))

    def metric_arrays(self, field_ids: Iterable[int]) -> MetricArrays | None:
        """Every entry's record count and metrics of ``field_ids`` as arrays (see
        ``ManifestColumns.metric_arrays``); None unless the columnar decoder read this
        manifest."""
        return self._from_columns(lambda columns: columns.metric_arrays(field_ids))

    def _from_columns(self, read: Callable[[ManifestColumns], _T]) -> _T | None:
        """``read`` of this manifest's columns; None unless the columnar decoder read
        the manifest."""
        columns = self._columns
        if columns is None:
            return None
        try:
            return read(columns)
        except _DECODE_ERRORS as exc:
            raise _damaged(self.manifest, exc) from exc

    def is_decoded(self, i: int) -> bool:
        """Whether entry ``i`` is decoded in full already."""
        return self._entries[i] is not None

    def entries_at(self, indices: Sequence[int]) -> list[ManifestEntry]:
        """The entries at ``indices`` (file order) in full; decodes those not yet
        decoded together, which the columnar decoder does much faster than one by one."""
        if self._columns is not None:
            self._fill(indices)
        return [self.entry(i) for i in indices]

    def _fill(self, indices: Iterable[int]) -> None:
        columns = self._columns
        entries = self._entries
        missing = [i for i in indices if entries[i] is None]
        if columns is None or not missing:
            return
        try:
            files = columns.data_files(missing)
            for i, df in zip(missing, files, strict=True):
                entries[i] = self._build(
                    self.statuses[i], self._inherited[i], self.partitions[i], df
                )
        except _DECODE_ERRORS as exc:
            raise _damaged(self.manifest, exc) from exc

    def entries(self) -> list[ManifestEntry]:
        """Every entry in full."""
        return self.entries_at(range(len(self.statuses)))

    def live_entries(self) -> list[ManifestEntry]:
        """The entries that are not DELETED, in full."""
        gone = _DELETED
        return self.entries_at([i for i, s in enumerate(self.statuses) if s is not gone])


def _partition_types(spec: PartitionSpec, schema: Schema) -> tuple[IcebergType, ...] | None:
    try:
        return tuple(f.field_type for f in spec.partition_type(schema).fields)
    except ValidationError:
        # a spec over a column the schema no longer has: fall back to the Avro types
        return None


# ======================================================================================
# Reading manifest lists
# ======================================================================================


_list_schema = lru_cache(maxsize=32)(_schemas.manifest_list_decoding_schema)


def read_manifest_list(io: FileIO, path: str) -> list[ManifestFile]:
    """All entries of a manifest list. v1 lists read as data manifests with sequence
    number 0; counts a v1 writer left out are taken from the manifest itself, so that
    "has added/existing files" stays truthful."""
    data = io.read_bytes(path)
    try:
        reader = _open(data)
        metadata = reader.metadata
        rows = [
            _manifest_file(rec, metadata)
            for rec in _iter_records(reader, _list_schema(metadata["avro.schema"]))
        ]
    except _DECODE_ERRORS as exc:
        raise NeveIOError(
            f"cannot read manifest list {path}: {exc!r}; the file is damaged or not an "
            "Iceberg manifest list"
        ) from exc
    return [_with_counts(io, m) if missing else m for m, missing in rows]


_COUNT_FIELDS = (
    "added_files_count",
    "existing_files_count",
    "deleted_files_count",
    "added_rows_count",
    "existing_rows_count",
    "deleted_rows_count",
)


def _manifest_file(
    rec: Mapping[str, Any], metadata: Mapping[str, str]
) -> tuple[ManifestFile, bool]:
    """A manifest-list record as a ManifestFile, and whether any count was missing."""
    summaries = rec.get("partitions")
    snapshot_id = rec.get("added_snapshot_id")
    if snapshot_id is None:  # optional in v1 lists
        snapshot_id = int(metadata.get("snapshot-id", "-1"))
    seq = rec.get("sequence_number")
    seq = 0 if seq is None else seq  # v1 lists: sequence number 0
    min_seq = rec.get("min_sequence_number")
    counts = [rec.get(k) for k in _COUNT_FIELDS]
    m = ManifestFile(
        manifest_path=rec["manifest_path"],
        manifest_length=rec["manifest_length"],
        partition_spec_id=rec["partition_spec_id"],
        content=ManifestContent(rec.get("content") or 0),
        sequence_number=seq,
        min_sequence_number=seq if min_seq is None else min_seq,
        added_snapshot_id=snapshot_id,
        added_files_count=counts[0] or 0,
        existing_files_count=counts[1] or 0,
        deleted_files_count=counts[2] or 0,
        added_rows_count=counts[3] or 0,
        existing_rows_count=counts[4] or 0,
        deleted_rows_count=counts[5] or 0,
        partitions=None
        if summaries is None
        else tuple(
            FieldSummary(
                contains_null=s["contains_null"],
                contains_nan=s.get("contains_nan"),
                lower_bound=s.get("lower_bound"),
                upper_bound=s.get("upper_bound"),
            )
            for s in summaries
        ),
        key_metadata=rec.get("key_metadata"),
        first_row_id=rec.get("first_row_id"),
    )
    return m, any(c is None for c in counts)


def _with_counts(io: FileIO, m: ManifestFile) -> ManifestFile:
    """Fill in the counts an old v1 manifest list left null by reading the manifest."""
    files = {s: 0 for s in ManifestEntryStatus}
    rows = {s: 0 for s in ManifestEntryStatus}
    for e in read_manifest(io, m):
        files[e.status] += 1
        rows[e.status] += e.data_file.record_count
    return m.with_(
        added_files_count=files[ManifestEntryStatus.ADDED],
        existing_files_count=files[ManifestEntryStatus.EXISTING],
        deleted_files_count=files[ManifestEntryStatus.DELETED],
        added_rows_count=rows[ManifestEntryStatus.ADDED],
        existing_rows_count=rows[ManifestEntryStatus.EXISTING],
        deleted_rows_count=rows[ManifestEntryStatus.DELETED],
    )
