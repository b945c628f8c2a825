"""Decoding manifests with fastavro: the per-schema decoding plans and the Avro
container access that :mod:`neve.planning.manifests` reads manifests and manifest
lists with (spec "Manifests", "Sequence Number Inheritance", "First Row ID
Inheritance"); writing is :mod:`neve.spec.manifest_writer`'s.

Values are decoded raw: the file's own Avro schema, minus its value logical types, is
handed to fastavro, so dates and timestamps arrive as Iceberg's ints rather than
datetime objects; decimals and uuids are then converted by a per-schema plan
(:func:`entry_plan`). Plans are cached by schema text, so reading many manifests of one
spec parses the schema once. For pruning, a plan's head schema leaves out the metric
maps, which fastavro then skips.
"""

from __future__ import annotations

import dataclasses
import io as _io
import json
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from operator import itemgetter
from typing import Any, TypeVar

import fastavro

from neve.spec import avro_schemas as _schemas
from neve.spec.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntryStatus,
)
from neve.spec.partition import PARTITION_DATA_ID_START
from neve.spec.types import (
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    UUIDType,
)
from neve.spec.values import decimal_to_unscaled, unscaled_to_decimal

__all__ = [
    "DATA_FILE_FIELDS",
    "ENTRY_STATUSES",
    "FILE_CONTENTS",
    "FILE_FORMATS",
    "METRIC_MAPS",
    "PLAIN_FIELDS",
    "EntryPlan",
    "block_bytes",
    "decoding_schema",
    "entry_plan",
    "int_keyed",
    "iter_records",
    "open_container",
    "spec_ids_from_json",
]

_T = TypeVar("_T")

_ADDED = ManifestEntryStatus.ADDED
_DELETED = ManifestEntryStatus.DELETED
ENTRY_STATUSES = {s.value: s for s in ManifestEntryStatus}
FILE_CONTENTS = {c.value: c for c in DataFileContent}
FILE_FORMATS = {f.value: f for f in FileFormat}
#: The fields of a DataFile, in order.
DATA_FILE_FIELDS = tuple(f.name for f in dataclasses.fields(DataFile))
#: The data_file fields holding int-keyed maps (key/value records in Avro).
METRIC_MAPS = (
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
)
#: The data_file fields that are DataFile fields as the record holds them (but for
#: the metric maps' records), None where a file lacks them.
PLAIN_FIELDS = (
    "file_path",
    "record_count",
    "file_size_in_bytes",
    *METRIC_MAPS,
    "key_metadata",
    "split_offsets",
    "equality_ids",
    "sort_order_id",
    "referenced_data_file",
    "content_offset",
    "content_size_in_bytes",
)


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
class EntryPlan:
    schema: Any  # fastavro-parsed decoding schema (the file's encoding, raw values)
    #: The writer schema's text (what ``head`` is derived from).
    text: str
    has_sequence_numbers: bool
    partition: _PartitionFn  # decoded partition record -> tuple in spec order
    #: per spec field, in spec order: its key in the decoded partition record (None if
    #: the file lacks it) and the converter of its raw value (None if none is needed)
    partition_keys: tuple[str | None, ...]
    partition_convs: tuple[Callable[[Any], Any] | None, ...]

    @property
    def head(self) -> Any:
        """fastavro-parsed reader schema projecting ``schema`` onto what inheritance
        and partition pruning need (fastavro skips the other fields); None when it
        cannot be built, and then entries are decoded in full at once. Built on first
        use, once per writer schema (the columnar decoder never needs it)."""
        return _head_schema_of(self.text)


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


def decoding_schema(text: str) -> Any:
    """The fastavro-parsed decoding schema of a manifest's writer schema ``text``: what
    an :class:`EntryPlan` decodes with, without the plan's partition converters."""
    return _decoding_schema(text).parsed


@lru_cache(maxsize=64)
def _head_schema_of(text: str) -> Any:
    return _head_schema(_decoding_schema(text).parsed)


@lru_cache(maxsize=256)
def entry_plan(
    text: str,
    spec_field_ids: tuple[int, ...] | None,
    partition_types: tuple[IcebergType, ...] | None,
) -> EntryPlan:
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
    return EntryPlan(
        decoding.parsed,
        text,
        decoding.has_sequence_numbers,
        _partition_fn(keys, convs),
        tuple(keys),
        tuple(convs),
    )


@lru_cache(maxsize=256)
def spec_ids_from_json(text: str) -> tuple[int, ...] | None:
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


def open_container(data: bytes) -> Any:
    """A fastavro block reader over a file's bytes (header already parsed)."""
    return fastavro.block_reader(_io.BytesIO(data))


def iter_records(reader: Any, schema: Any) -> Iterator[Any]:
    """Raw records of every block, decoded with ``schema``: the writer schema minus its
    value logical types, which has the same encoding but yields raw ints and bytes."""
    decode = fastavro.schemaless_reader
    for block in reader:
        buf = block.bytes_
        if not hasattr(buf, "read"):
            buf = _io.BytesIO(buf)
        for _ in range(block.num_records):
            yield decode(buf, schema, None)


def block_bytes(block: Any) -> bytes:
    buf = block.bytes_
    return bytes(buf.getvalue() if hasattr(buf, "getvalue") else buf)


def int_keyed(
    kvs: list[dict[str, Any]] | Mapping[int, Any] | None,
) -> Mapping[int, Any] | None:
    """A metric map, which fastavro gives as a list of key/value records."""
    if kvs is None or not isinstance(kvs, list):  # the columnar decoder builds maps itself
        return kvs
    return {kv["key"]: kv["value"] for kv in kvs}
