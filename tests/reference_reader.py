"""A reader of Iceberg tables written from the spec alone, sharing no code with neve: the
oracle that neve's pyarrow scan and its Spark reader are checked against.

It reads the table metadata with ``json``, the manifest list and the manifests with
fastavro, data files and Parquet delete files with pyarrow's Parquet reader, and
deletion vectors by taking their Puffin blob apart byte by byte (only the 32-bit Roaring
bitmaps inside are decoded, by pyroaring). It plans nothing and prunes nothing: every
live data file is read whole, and a test applies its filter to the rows afterwards.

The rules it follows (Iceberg table spec, "Scan Planning", "Delete Formats",
"Deletion Vectors", "Column Projection"):

- A manifest entry with status DELETED (2) is not live. An entry's data sequence number
  is its own, or the manifest's (from the manifest list) when it has none.
- A position delete file applies to a data file whose data sequence number is at most
  its own and whose partition (spec id and values; NaN equal to NaN, -0.0 apart from
  0.0, as Iceberg-Java compares them) equals its own; it deletes the positions listed
  next to that data file's path. A deletion vector applies likewise, to the data file
  its ``referenced_data_file`` names; when one applies, the data file's position
  delete files do not.
- An equality delete file applies to a data file whose data sequence number is below
  its own, in the same partition, or in any partition when its spec is unpartitioned
  (no field, or only ``void`` ones). It deletes the rows whose values of its equality
  columns (found by field id, also in columns the table has dropped since) equal those
  of one of its rows, a null equal to a null and NaN equal to NaN. (The spec does not
  say whether -0.0 equals 0.0; the tests keep floating columns out of equality keys.)
- Columns are found by field id (or, in files without field ids, by the names the
  table's name mapping gives); a column a file lacks reads as its ``initial-default``
  or null, or as the file's partition value when an identity partition field has it
  as source. Promoted types (int to long, float to double, wider decimals) are cast.

Only tables whose schema holds primitive columns are read.
"""

from __future__ import annotations

import gzip
import json
import math
import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap

__all__ = [
    "DataFileEntry",
    "live_entries",
    "local_path",
    "manifest_list",
    "reached_files",
    "read_rows",
]

_DV_MAGIC = bytes([0xD1, 0xD3, 0x39, 0x64])
_NAME_MAPPING = "schema.name-mapping.default"
_DATA, _POSITION_DELETES, _EQUALITY_DELETES = 0, 1, 2


def local_path(location: str) -> str:
    """A local file's path from a table location (a path or a ``file:`` URI)."""
    for prefix in ("file://", "file:"):
        if location.startswith(prefix):
            return location[len(prefix) :]
    return location


def _metadata(location: str) -> dict[str, Any]:
    with open(local_path(location), "rb") as f:
        raw = f.read()
    if location.endswith(".gz.metadata.json"):
        raw = gzip.decompress(raw)
    out: dict[str, Any] = json.loads(raw)
    return out


def _avro(location: str) -> Iterator[dict[str, Any]]:
    with open(local_path(location), "rb") as f:
        yield from fastavro.reader(f)


# -- planning ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataFileEntry:
    """A live manifest entry: what the delete rules need of it."""

    content: int  # 0 data, 1 position deletes (or a deletion vector), 2 equality deletes
    path: str
    file_format: str
    spec_id: int
    partition: tuple[Any, ...]
    record_count: int
    data_sequence_number: int
    equality_ids: tuple[int, ...]
    referenced_data_file: str | None
    content_offset: int | None
    content_size_in_bytes: int | None
    partition_values: dict[str, Any]

    @property
    def is_deletion_vector(self) -> bool:
        return self.content == _POSITION_DELETES and self.file_format.upper() == "PUFFIN"


def _snapshot(metadata: dict[str, Any], snapshot_id: int | None) -> dict[str, Any] | None:
    wanted = metadata.get("current-snapshot-id") if snapshot_id is None else snapshot_id
    if wanted is None or wanted == -1:
        return None
    for s in metadata.get("snapshots", []):
        if s["snapshot-id"] == wanted:
            return dict(s)
    raise AssertionError(f"snapshot {wanted} is not in the metadata")


def manifest_list(metadata_location: str, snapshot_id: int | None = None) -> list[dict[str, Any]]:
    """The manifest list records of a snapshot (the current one by default), as fastavro
    reads them."""
    snapshot = _snapshot(_metadata(metadata_location), snapshot_id)
    return [] if snapshot is None else list(_avro(snapshot["manifest-list"]))


def live_entries(metadata_location: str, snapshot_id: int | None = None) -> list[DataFileEntry]:
    """The live data and delete files of a snapshot (the current one by default)."""
    metadata = _metadata(metadata_location)
    snapshot = _snapshot(metadata, snapshot_id)
    if snapshot is None:
        return []
    out = []
    for manifest in _avro(snapshot["manifest-list"]):
        inherited = manifest.get("sequence_number") or 0
        spec_id = manifest.get("partition_spec_id", 0)
        for entry in _avro(manifest["manifest_path"]):
            if entry["status"] == 2:
                continue
            f = entry["data_file"]
            seq = entry.get("sequence_number")
            partition = dict(f.get("partition") or {})
            out.append(
                DataFileEntry(
                    content=f.get("content", _DATA),
                    path=f["file_path"],
                    file_format=f["file_format"],
                    spec_id=spec_id,
                    partition=tuple(partition.values()),
                    record_count=f["record_count"],
                    data_sequence_number=inherited if seq is None else seq,
                    equality_ids=tuple(f.get("equality_ids") or ()),
                    referenced_data_file=f.get("referenced_data_file"),
                    content_offset=f.get("content_offset"),
                    content_size_in_bytes=f.get("content_size_in_bytes"),
                    partition_values=partition,
                )
            )
    return out


def reached_files(metadata_location: str, snapshot_ids: Sequence[int]) -> dict[str, set[str]]:
    """The files the given snapshots reach, by kind: their manifest lists, manifests,
    and the data, position delete and equality delete files live in them."""
    metadata = _metadata(metadata_location)
    out: dict[str, set[str]] = {
        k: set()
        for k in (
            "manifest_lists",
            "manifest_files",
            "data_files",
            "position_delete_files",
            "equality_delete_files",
        )
    }
    kinds = {_DATA: "data_files", _POSITION_DELETES: "position_delete_files"}
    for snapshot_id in snapshot_ids:
        snapshot = _snapshot(metadata, snapshot_id)
        assert snapshot is not None
        out["manifest_lists"].add(snapshot["manifest-list"])
        out["manifest_files"] |= {m["manifest_path"] for m in _avro(snapshot["manifest-list"])}
        for e in live_entries(metadata_location, snapshot_id):
            out[kinds.get(e.content, "equality_delete_files")].add(e.path)
    return out


def _unpartitioned(spec: dict[str, Any]) -> bool:
    return all(field["transform"] == "void" for field in spec["fields"])


# -- deletion vectors -----------------------------------------------------------------------


def _roaring32_length(buf: bytes, start: int) -> int:
    """Bytes taken by the portable 32-bit Roaring bitmap at ``buf[start:]`` (the Roaring
    format spec: a cookie, container keys and cardinalities, offsets, containers)."""
    (cookie,) = struct.unpack_from("<I", buf, start)
    at = start + 4
    if cookie & 0xFFFF == 12347:  # with run containers; the count is in the cookie
        count = (cookie >> 16) + 1
        runs = buf[at : at + (count + 7) // 8]
        at += len(runs)
        has_offsets = count >= 4
    elif cookie == 12346:  # without run containers; the count follows
        (count,) = struct.unpack_from("<I", buf, at)
        at += 4
        runs = b""
        has_offsets = True
    else:
        raise AssertionError(f"not a portable Roaring bitmap (cookie {cookie})")
    cardinalities = [1 + struct.unpack_from("<HH", buf, at + 4 * i)[1] for i in range(count)]
    at += 4 * count + (4 * count if has_offsets else 0)
    for i, cardinality in enumerate(cardinalities):
        if runs and runs[i // 8] & (1 << (i % 8)):
            (n_runs,) = struct.unpack_from("<H", buf, at)
            at += 2 + 4 * n_runs
        else:
            at += 8192 if cardinality > 4096 else 2 * cardinality
    return at - start


def deletion_vector_positions(blob: bytes) -> set[int]:
    """The positions of a ``deletion-vector-v1`` blob: a 4-byte big-endian length of
    what follows up to the CRC, the magic D1 D3 39 64, a portable 64-bit Roaring bitmap
    (an 8-byte little-endian count of 32-bit bitmaps, each after its 4-byte
    little-endian key, the high half of its positions), and a big-endian CRC-32 of the
    magic and the bitmap."""
    (length,) = struct.unpack_from(">I", blob, 0)
    assert length == len(blob) - 8, f"length field {length} for a blob of {len(blob)} bytes"
    body = blob[4 : 4 + length]
    assert body[:4] == _DV_MAGIC, f"bad deletion vector magic {body[:4].hex()}"
    (crc,) = struct.unpack_from(">I", blob, 4 + length)
    assert zlib.crc32(body) == crc, "deletion vector CRC mismatch"
    (count,) = struct.unpack_from("<Q", body, 4)
    at = 12
    positions: set[int] = set()
    for _ in range(count):
        (high,) = struct.unpack_from("<I", body, at)
        at += 4
        size = _roaring32_length(body, at)
        positions.update((high << 32) | low for low in BitMap.deserialize(body[at : at + size]))
        at += size
    assert at == len(body), "bytes left after the deletion vector's bitmaps"
    return positions


def _read_blob(entry: DataFileEntry) -> bytes:
    assert entry.content_offset is not None and entry.content_size_in_bytes is not None
    with open(local_path(entry.path), "rb") as f:
        f.seek(entry.content_offset)
        return f.read(entry.content_size_in_bytes)


# -- Parquet --------------------------------------------------------------------------------


def _parquet(path: str) -> pa.Table:
    with open(local_path(path), "rb") as f:
        return pq.ParquetFile(f).read()


def _field_ids(table: pa.Table, mapping: dict[str, int]) -> dict[int, str]:
    """Column name by field id: from the Parquet field ids, else the name mapping."""
    out = {}
    for f in table.schema:
        raw = (f.metadata or {}).get(b"PARQUET:field_id")
        if raw is not None:
            out[int(raw)] = f.name
    if out:
        return out
    return {mapping[f.name]: f.name for f in table.schema if f.name in mapping}


def _name_mapping(metadata: dict[str, Any]) -> dict[str, int]:
    text = metadata.get("properties", {}).get(_NAME_MAPPING)
    if text is None:
        return {}
    return {name: m["field-id"] for m in json.loads(text) for name in m.get("names", [])}


_PRIMITIVE = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "timestamp": pa.timestamp("us"),
    "timestamptz": pa.timestamp("us", tz="UTC"),
    "timestamp_ns": pa.timestamp("ns"),
    "timestamptz_ns": pa.timestamp("ns", tz="UTC"),
    "string": pa.string(),
    "uuid": pa.binary(16),
    "binary": pa.binary(),
}


def arrow_type(iceberg_type: Any) -> pa.DataType:
    """The Arrow type of an Iceberg primitive type, as the metadata JSON writes it."""
    assert isinstance(iceberg_type, str), f"only primitive columns are read: {iceberg_type}"
    if iceberg_type in _PRIMITIVE:
        return _PRIMITIVE[iceberg_type]
    if iceberg_type.startswith("fixed["):
        return pa.binary(int(iceberg_type[6:-1]))
    if iceberg_type.startswith("decimal("):
        precision, scale = iceberg_type[8:-1].split(",")
        return pa.decimal128(int(precision), int(scale))
    raise AssertionError(f"unknown type {iceberg_type}")


def _constant(value: Any, n: int, t: pa.DataType) -> pa.Array:
    return pa.array([value] * n, t)


# -- reading ----------------------------------------------------------------------------------


@dataclass
class _Context:
    metadata: dict[str, Any]
    fields: list[dict[str, Any]]
    specs: dict[int, dict[str, Any]]
    mapping: dict[str, int]


def _project(ctx: _Context, entry: DataFileEntry, raw: pa.Table) -> tuple[pa.Table, dict[int, str]]:
    """The file's rows in the table schema, and its columns by field id."""
    by_id = _field_ids(raw, ctx.mapping)
    spec = ctx.specs[entry.spec_id]
    identity = {
        f["source-id"]: entry.partition_values.get(f["name"])
        for f in spec["fields"]
        if f["transform"] == "identity"
    }
    columns = []
    for field in ctx.fields:
        t = arrow_type(field["type"])
        fid = field["id"]
        if fid in by_id:
            columns.append(raw.column(by_id[fid]).cast(t))
        elif fid in identity:
            columns.append(_constant(identity[fid], raw.num_rows, t))
        elif field.get("initial-default") is not None:
            default = field["initial-default"]
            assert isinstance(default, (bool, int, float, str)), "a default not modelled here"
            columns.append(_constant(default, raw.num_rows, t))
        else:
            columns.append(pa.nulls(raw.num_rows, t))
    names = [f["name"] for f in ctx.fields]
    return pa.table(columns, names=names), by_id


def _key(values: Sequence[Any]) -> tuple[Any, ...]:
    """Equality-delete key: NaN equal to NaN, a null equal to a null."""
    return tuple(("NaN",) if isinstance(v, float) and math.isnan(v) else v for v in values)


def _equality_keys(entry: DataFileEntry, mapping: dict[str, int]) -> set[tuple[Any, ...]]:
    raw = _parquet(entry.path)
    by_id = _field_ids(raw, mapping)
    columns = [raw.column(by_id[fid]).to_pylist() for fid in entry.equality_ids]
    return {_key(row) for row in zip(*columns, strict=True)}


def _position_deletes(entry: DataFileEntry, data_path: str) -> set[int]:
    raw = _parquet(entry.path)
    paths, positions = raw.column("file_path").to_pylist(), raw.column("pos").to_pylist()
    return {pos for p, pos in zip(paths, positions, strict=True) if p == data_path}


def _partition_key(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """Partition values that compare as Iceberg-Java compares them: NaN equal to NaN,
    -0.0 apart from 0.0."""
    return tuple(
        (("NaN",) if math.isnan(v) else (v, math.copysign(1.0, v))) if isinstance(v, float) else v
        for v in values
    )


def _same_partition(a: DataFileEntry, b: DataFileEntry) -> bool:
    return a.spec_id == b.spec_id and _partition_key(a.partition) == _partition_key(b.partition)


def _deleted_positions(data: DataFileEntry, deletes: Sequence[DataFileEntry]) -> set[int]:
    scoped = [
        d
        for d in deletes
        if d.content == _POSITION_DELETES
        and d.data_sequence_number >= data.data_sequence_number
        and _same_partition(d, data)
    ]
    vectors = [d for d in scoped if d.is_deletion_vector and d.referenced_data_file == data.path]
    if vectors:
        assert len(vectors) == 1, f"{len(vectors)} deletion vectors for {data.path}"
        return deletion_vector_positions(_read_blob(vectors[0]))
    out: set[int] = set()
    for d in scoped:
        if not d.is_deletion_vector:
            out |= _position_deletes(d, data.path)
    return out


def _equality_deleted(
    ctx: _Context,
    data: DataFileEntry,
    deletes: Sequence[DataFileEntry],
    projected: pa.Table,
    raw: pa.Table,
    by_id: dict[int, str],
) -> list[bool]:
    deleted = [False] * raw.num_rows
    for d in deletes:
        if d.content != _EQUALITY_DELETES or d.data_sequence_number <= data.data_sequence_number:
            continue
        if not (_unpartitioned(ctx.specs[d.spec_id]) or _same_partition(d, data)):
            continue
        keys = _equality_keys(d, ctx.mapping)
        names = {f["id"]: f["name"] for f in ctx.fields}
        columns = []
        for fid in d.equality_ids:
            if fid in by_id:  # also a column the table has dropped since
                columns.append(raw.column(by_id[fid]).to_pylist())
            else:
                columns.append(projected.column(names[fid]).to_pylist())
        for i, row in enumerate(zip(*columns, strict=True)):
            if _key(row) in keys:
                deleted[i] = True
    return deleted


def read_rows(metadata_location: str, snapshot_id: int | None = None) -> pa.Table:
    """The live rows of a snapshot (the current one by default) in the table's current
    schema, file by file, each file's rows in file order."""
    metadata = _metadata(metadata_location)
    schema = next(s for s in metadata["schemas"] if s["schema-id"] == metadata["current-schema-id"])
    ctx = _Context(
        metadata,
        list(schema["fields"]),
        {s["spec-id"]: s for s in metadata["partition-specs"]},
        _name_mapping(metadata),
    )
    entries = live_entries(metadata_location, snapshot_id)
    deletes = [e for e in entries if e.content != _DATA]
    parts = []
    for data in sorted((e for e in entries if e.content == _DATA), key=lambda e: e.path):
        raw = _parquet(data.path)
        assert raw.num_rows == data.record_count, f"{data.path}: record_count disagrees"
        projected, by_id = _project(ctx, data, raw)
        gone = _deleted_positions(data, deletes)
        by_value = _equality_deleted(ctx, data, deletes, projected, raw, by_id)
        keep = [i not in gone and not by_value[i] for i in range(raw.num_rows)]
        parts.append(projected.filter(pa.array(keep, pa.bool_())))
    fields = [pa.field(f["name"], arrow_type(f["type"])) for f in ctx.fields]
    if not parts:
        return pa.schema(fields).empty_table()
    return pa.concat_tables(parts)
