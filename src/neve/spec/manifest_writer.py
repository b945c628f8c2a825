"""Writing manifests and manifest lists (spec "Manifests", "Manifest Lists") through
fastavro, as Iceberg-Java writes them: ADDED entries leave their sequence numbers null
so they inherit the manifest's, which is only known when the manifest list is written
at commit. A freshly written manifest carries :data:`UNASSIGNED_SEQ` as its sequence
number (and as its minimum sequence number when no entry has a known one);
:func:`write_manifest_list` fills in the snapshot's sequence number for the manifests
the snapshot added, so commit retries rewrite only the manifest list.

Both are compressed as the table's ``write.avro.compression-codec`` and
``write.avro.compression-level`` say (:class:`AvroCodec`), as Iceberg-Java's commits
compress them."""

from __future__ import annotations

import io as _io
import json
import math
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import fastavro
import fastavro.write

from neve.errors import ValidationError
from neve.io.fileio import FileIO
from neve.spec import avro_schemas as _schemas
from neve.spec.encoded import EncodedCache
from neve.spec.manifest import (
    DataFile,
    DataFileContent,
    FieldSummary,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from neve.spec.metadata_json import partition_fields_to_json, schema_to_json
from neve.spec.partition import PartitionSpec
from neve.spec.properties import AVRO_CODECS, TableProperties
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
from neve.spec.values import decimal_to_unscaled, to_bytes

__all__ = ["UNASSIGNED_SEQ", "AvroCodec", "write_manifest", "write_manifest_list"]

#: Sequence number of a manifest written before its snapshot committed; replaced by the
#: snapshot's sequence number when the manifest list is written (Iceberg-Java's
#: ``ManifestWriter.UNASSIGNED_SEQ``).
UNASSIGNED_SEQ = -1


@dataclass(frozen=True)
class AvroCodec:
    """How a manifest or manifest list is compressed: the Avro codec's name (as the
    file's ``avro.codec`` names it) and its level (None: the codec's own default)."""

    name: str = "deflate"
    level: int | None = None

    @classmethod
    def of(cls, props: TableProperties) -> AvroCodec:
        """The codec a table's properties ask for. Iceberg's names map to Avro's
        (``gzip`` is ``deflate``, ``zstd`` is ``zstandard``, ``uncompressed`` is
        ``null``). A level beyond the codec's range is brought into it (deflate 0-9,
        zstandard up to 22, as Iceberg-Java's zstd writer bounds it); snappy and null
        take none. Without a level: zlib's default for deflate, and 1 for zstandard,
        Iceberg-Java's."""
        name = AVRO_CODECS[props.as_text("write.avro.compression-codec") or "gzip"]
        level = props.as_optional_int("write.avro.compression-level")
        if name == "deflate":
            return cls(name, None if level is None else max(0, min(level, 9)))
        if name == "zstandard":
            return cls(name, 1 if level is None else max(-(1 << 17), min(level, 22)))
        return cls(name)


_DEFLATE = AvroCodec()
#: Value written for the deprecated, v1-required ``block_size_in_bytes`` (as Java does).
_V1_BLOCK_SIZE = 64 * 1024 * 1024
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1

_ADDED = ManifestEntryStatus.ADDED
_DELETED = ManifestEntryStatus.DELETED


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
    codec: AvroCodec = _DEFLATE,
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
            data_seq = _put_sequence_numbers(rec, e, sequence_number)
            if e.status is not _DELETED and data_seq is not None:
                min_seq = data_seq if min_seq is None else min(min_seq, data_seq)
        rec["data_file"] = _data_file_record(f, part)
        records.append(rec)

    data = _encode(
        _schemas.parsed_manifest_entry_schema(format_version, partition_type),
        records,
        _manifest_metadata(schema, spec, format_version, content),
        path,
        codec,
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


def _put_sequence_numbers(
    rec: dict[str, Any], e: ManifestEntry, sequence_number: int | None
) -> int | None:
    """Set the v2+ sequence numbers of an entry's record; return its data sequence
    number (the manifest's ``sequence_number`` for an ADDED entry that has none)."""
    data_seq = e.sequence_number
    rec["sequence_number"] = data_seq
    if e.status is _ADDED:
        rec["file_sequence_number"] = None  # always the committing snapshot's
        if data_seq is None:
            data_seq = sequence_number
    else:
        rec["file_sequence_number"] = e.file_sequence_number
    return data_seq


def _data_file_record(f: DataFile, part: dict[str, Any]) -> dict[str, Any]:
    """The Avro record of a data or delete file, its partition already encoded."""
    return {
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


def _manifest_metadata(
    schema: Schema, spec: PartitionSpec, format_version: int, content: ManifestContent
) -> dict[str, str]:
    """The key-value metadata of a manifest file's Avro header."""
    return {
        "schema": json.dumps(schema_to_json(schema), separators=(",", ":")),
        "schema-id": str(schema.schema_id),
        "partition-spec": json.dumps(partition_fields_to_json(spec), separators=(",", ":")),
        "partition-spec-id": str(spec.spec_id),
        "format-version": str(format_version),
        "content": "data" if content is ManifestContent.DATA else "deletes",
    }


def _encode(
    parsed_schema: Any,
    records: list[dict[str, Any]],
    metadata: dict[str, str],
    path: str,
    codec: AvroCodec,
) -> bytes:
    buf = _io.BytesIO()
    with _values_of(path):
        fastavro.writer(
            buf,
            parsed_schema,
            records,
            codec=codec.name,
            metadata=metadata,
            codec_compression_level=codec.level,
        )
    return buf.getvalue()


@contextmanager
def _values_of(path: str) -> Iterator[None]:
    """What fastavro raises for a value it cannot encode, as a ValidationError naming
    the file being written."""
    try:
        yield
    except (TypeError, ValueError, OverflowError, AttributeError) as exc:
        raise ValidationError(f"cannot encode {path}: {exc}; check the values written") from exc


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
    codec: AvroCodec = _DEFLATE,
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

    schema = _schemas.parsed_manifest_file_schema(format_version)
    records = [_encoded_manifest_file(schema, m, format_version, path) for m in out]
    metadata = {
        "snapshot-id": str(snapshot_id),
        "parent-snapshot-id": "null" if parent_snapshot_id is None else str(parent_snapshot_id),
        "format-version": str(format_version),
    }
    if format_version >= 2:
        metadata["sequence-number"] = str(sequence_number)
    if format_version >= 3 and first_row_id is not None:
        metadata["first-row-id"] = str(first_row_id)
    buf = _io.BytesIO()
    writer = fastavro.write.Writer(
        buf, schema, codec=codec.name, metadata=metadata, compression_level=codec.level
    )
    if records:
        writer.write_block(_Block(_io.BytesIO(b"".join(records)), len(records)))
    writer.flush()
    io.write_bytes(path, buf.getvalue())
    return out


@dataclass(frozen=True)
class _Block:
    """Records already encoded, as ``fastavro``'s ``Writer.write_block`` takes them (it
    compresses ``bytes_`` with the file's codec and frames it as one Avro block)."""

    bytes_: _io.BytesIO
    num_records: int


#: Manifest list entries encoded as Avro records: a snapshot's list carries its
#: parent's entries, each encoded once.
_ENCODED: EncodedCache[bytes] = EncodedCache(10_000)


def _encoded_manifest_file(schema: Any, m: ManifestFile, format_version: int, path: str) -> bytes:
    def encode() -> bytes:
        buf = _io.BytesIO()
        with _values_of(path):
            fastavro.schemaless_writer(buf, schema, _manifest_file_record(m, format_version))
        return buf.getvalue()

    return _ENCODED.get(m, format_version, encode)


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
