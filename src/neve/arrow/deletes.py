"""Row-level deletes: position delete files, deletion vectors, equality deletes.

Positions are file-global row numbers of a data file (0 for its first row, across
row groups). Deleted positions of one data file are held as a ``pyroaring.BitMap64``.

Deletion vectors (format v3) are ``deletion-vector-v1`` blobs in Puffin files
(Iceberg spec "Deletion Vectors"; Puffin spec "deletion-vector-v1"): a 4-byte big-endian length of magic + vector, the magic
``D1 D3 39 64``, the positions as a Roaring bitmap in the portable 64-bit layout
(8-byte LE count of 32-bit bitmaps, then per bitmap its 4-byte LE key and the portable
32-bit bitmap), and a big-endian CRC-32 of magic + vector.

Equality deletes drop every data row whose equality columns equal those of some delete
row, a null matching a null (and, as Java's equality does, a NaN matching a NaN).
"""

from __future__ import annotations

import array
import datetime
import decimal
import json
import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyroaring import BitMap, BitMap64

from neve.arrow.metrics import MetricsConfig, MetricsMode
from neve.arrow.schema import field_id
from neve.arrow.writer import write_parquet_file
from neve.errors import NeveIOError, ValidationError
from neve.io.fileio import FileIO
from neve.spec.manifest import DataFile, DataFileContent, FileFormat
from neve.spec.schema import Schema
from neve.spec.types import LONG, STRING, NestedField, StructType

__all__ = [
    "DELETE_FILE_PATH_ID",
    "DELETE_POS_ID",
    "DV_BLOB_TYPE",
    "POSITION_DELETE_SCHEMA",
    "ROW_POSITION_ID",
    "PuffinBlob",
    "apply_positions",
    "deserialize_deletion_vector",
    "equality_keep_mask",
    "read_deletion_vector",
    "read_position_deletes",
    "read_puffin_footer",
    "serialize_deletion_vector",
    "write_deletion_vector_puffin",
    "write_equality_delete_file",
    "write_position_delete_file",
]

DELETE_FILE_PATH_ID = 2147483546
DELETE_POS_ID = 2147483545
#: Id of the ``_pos`` metadata column, the field a deletion vector applies to.
ROW_POSITION_ID = 2147483645
DV_BLOB_TYPE = "deletion-vector-v1"

POSITION_DELETE_SCHEMA = Schema(
    NestedField(DELETE_FILE_PATH_ID, "file_path", STRING, True),
    NestedField(DELETE_POS_ID, "pos", LONG, True),
)

_DV_MAGIC = b"\xd1\xd3\x39\x64"
_PUFFIN_MAGIC = b"PFA1"


# -- applying positions ----------------------------------------------------------------


def apply_positions(batch: pa.RecordBatch, start: int, deleted: BitMap64 | None) -> pa.RecordBatch:
    """The rows of ``batch`` (file positions ``start`` ...) not in ``deleted``."""
    n = batch.num_rows
    if deleted is None or n == 0:
        return batch
    window = BitMap64(range(start, start + n))
    if not deleted.intersect(window):
        return batch
    keep = window - deleted
    if not keep:
        return batch.slice(0, 0)
    kept = keep.to_array()
    indices = pa.Array.from_buffers(pa.uint64(), len(kept), [None, pa.py_buffer(kept)])
    return batch.take(pc.subtract(indices, pa.scalar(start, pa.uint64())))


def _bitmap64(values: pa.Array | pa.ChunkedArray) -> BitMap64:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    values = values.cast(pa.int64())
    if values.null_count:
        values = values.drop_null()
    if len(values) and pc.min(values).as_py() < 0:
        raise NeveIOError("a position delete has a negative position; the delete file is corrupt")
    out = array.array("Q")
    buf = values.buffers()[1]
    if buf is not None:
        out.frombytes(buf.to_pybytes()[values.offset * 8 : (values.offset + len(values)) * 8])
    return BitMap64(out)


# -- position delete files -------------------------------------------------------------


def _delete_columns(pf: pq.ParquetFile) -> tuple[str, str]:
    names = {field_id(f): f.name for f in pf.schema_arrow}
    path_col = names.get(DELETE_FILE_PATH_ID, "file_path")
    pos_col = names.get(DELETE_POS_ID, "pos")
    if path_col not in pf.schema_arrow.names or pos_col not in pf.schema_arrow.names:
        raise NeveIOError(
            "a position delete file needs the columns file_path (id 2147483546) and pos "
            "(id 2147483545); the file is not a position delete file"
        )
    return path_col, pos_col


def read_position_deletes(
    io: FileIO, delete_file: DataFile, data_file_path: str | None = None
) -> dict[str, BitMap64]:
    """The deleted positions in a position delete file, by data file path.

    With ``data_file_path`` only that file's positions are read (row groups whose
    file_path statistics exclude it are skipped).
    """
    try:
        with io.open_input(delete_file.file_path, delete_file.file_size_in_bytes) as f:
            pf = pq.ParquetFile(f)
            path_col, pos_col = _delete_columns(pf)
            path_index = pf.schema_arrow.get_field_index(path_col)
            tables = []
            for rg in range(pf.metadata.num_row_groups):
                if data_file_path is not None and not _may_contain(
                    pf, rg, path_index, data_file_path
                ):
                    continue
                tables.append(pf.read_row_group(rg, columns=[path_col, pos_col]))
    except (OSError, pa.ArrowException) as exc:
        if isinstance(exc, NeveIOError):
            raise
        raise NeveIOError(
            f"cannot read position delete file {delete_file.file_path}: {exc}"
        ) from exc
    if not tables:
        return {}
    table = pa.concat_tables(tables)
    paths = table.column(path_col)
    if data_file_path is not None:
        selected = table.filter(pc.equal(paths, data_file_path))
        if selected.num_rows == 0:
            return {}
        return {data_file_path: _bitmap64(selected.column(pos_col))}
    groups = table.group_by(path_col, use_threads=False).aggregate([(pos_col, "list")])
    lists = groups.column(f"{pos_col}_list")
    return {
        path: _bitmap64(lists[i].values)
        for i, path in enumerate(groups.column(path_col).to_pylist())
    }


def _may_contain(pf: pq.ParquetFile, rg: int, column: int, path: str) -> bool:
    stats = pf.metadata.row_group(rg).column(column).statistics
    if stats is None or not stats.has_min_max:
        return True
    lo, hi = stats.min_raw, stats.max_raw
    encoded = path.encode()
    lo = lo if isinstance(lo, bytes) else str(lo).encode()
    hi = hi if isinstance(hi, bytes) else str(hi).encode()
    return bool(lo <= encoded <= hi)


def write_position_delete_file(
    io: FileIO,
    path: str,
    deletes: Mapping[str, Iterable[int]],
    *,
    partition: tuple[Any, ...] = (),
    spec_id: int = 0,
    properties: Mapping[str, str] | None = None,
) -> DataFile:
    """Write a position delete file (rows sorted by file_path, then pos).

    Metrics are kept in full for both columns; when every delete references one data
    file, ``referenced_data_file`` is set to it.
    """
    paths: list[str] = []
    positions: list[int] = []
    for data_path in sorted(deletes):
        pos = sorted(set(deletes[data_path]))
        paths.extend([data_path] * len(pos))
        positions.extend(pos)
    table = pa.table(
        {"file_path": pa.array(paths, pa.large_string()), "pos": pa.array(positions, pa.int64())}
    )
    full = MetricsConfig(MetricsMode("full"))
    out = write_parquet_file(
        io,
        path,
        POSITION_DELETE_SCHEMA,
        table,
        properties,
        partition=partition,
        spec_id=spec_id,
        content=DataFileContent.POSITION_DELETES,
        metrics=full,
    )
    referenced = sorted(set(paths))
    if len(referenced) == 1:
        out = out.with_(referenced_data_file=referenced[0])
    return out


def write_equality_delete_file(
    io: FileIO,
    path: str,
    table_schema: Schema,
    equality_ids: Sequence[int],
    rows: pa.Table,
    *,
    partition: tuple[Any, ...] = (),
    spec_id: int = 0,
    properties: Mapping[str, str] | None = None,
) -> DataFile:
    """Write an equality delete file: ``rows`` hold the values of the equality columns
    (top-level columns of ``table_schema`` by name; nested ones inside their structs)."""
    ids = set(equality_ids)
    fields = [p for p in (_prune(f, ids) for f in table_schema.fields) if p is not None]
    if not fields or len(ids) != len(equality_ids):
        raise ValidationError(
            f"equality ids {list(equality_ids)} must be distinct columns of the table schema"
        )
    for fid in ids:
        f = table_schema.find_field_or_none(fid)
        if f is None or not f.field_type.is_primitive:
            raise ValidationError(
                f"equality delete column id {fid} must be a primitive column of the table"
            )
    delete_schema = Schema(*fields, schema_id=table_schema.schema_id)
    return write_parquet_file(
        io,
        path,
        delete_schema,
        rows,
        properties,
        partition=partition,
        spec_id=spec_id,
        content=DataFileContent.EQUALITY_DELETES,
        equality_ids=tuple(equality_ids),
    )


def _prune(f: NestedField, ids: set[int]) -> NestedField | None:
    """``f`` reduced to the struct paths that lead to ``ids``, or None."""
    if f.field_id in ids:
        return f
    t = f.field_type
    if isinstance(t, StructType):
        kept = [p for p in (_prune(c, ids) for c in t.fields) if p is not None]
        if kept:
            return f.with_(field_type=StructType(*kept))
    return None


# -- deletion vectors ------------------------------------------------------------------


def serialize_deletion_vector(positions: BitMap64 | Iterable[int]) -> bytes:
    """A ``deletion-vector-v1`` blob of the given positions (run containers used
    where they are smaller)."""
    bitmap = positions.copy() if isinstance(positions, BitMap64) else BitMap64(positions)
    bitmap.run_optimize()
    vector = _DV_MAGIC + bitmap.serialize()
    return struct.pack(">I", len(vector)) + vector + struct.pack(">I", zlib.crc32(vector))


_COOKIE_NO_RUNS = 12346
_COOKIE_RUNS = 12347
_NO_OFFSET_THRESHOLD = 4


def _portable32_size(buf: bytes, start: int) -> int:
    """Byte length of the portable 32-bit Roaring bitmap at ``buf[start:]``."""
    pos = start
    (cookie,) = struct.unpack_from("<I", buf, pos)
    pos += 4
    if cookie & 0xFFFF == _COOKIE_RUNS:
        size = (cookie >> 16) + 1
        run_flags = buf[pos : pos + (size + 7) // 8]
        pos += (size + 7) // 8
    elif cookie == _COOKIE_NO_RUNS:
        (size,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        run_flags = b""
    else:
        raise NeveIOError("the deletion vector holds no portable Roaring bitmap (bad cookie)")
    cards = [struct.unpack_from("<H", buf, pos + 4 * i + 2)[0] + 1 for i in range(size)]
    pos += 4 * size
    if not run_flags or size >= _NO_OFFSET_THRESHOLD:
        pos += 4 * size
    for i, card in enumerate(cards):
        if run_flags and run_flags[i // 8] >> (i % 8) & 1:
            (runs,) = struct.unpack_from("<H", buf, pos)
            pos += 2 + 4 * runs
        elif card > 4096:
            pos += 8192
        else:
            pos += 2 * card
    if pos > len(buf):
        raise NeveIOError("the deletion vector is truncated")
    return int(pos - start)


def deserialize_deletion_vector(blob: bytes) -> BitMap64:
    """The positions in a ``deletion-vector-v1`` blob; checks length, magic and CRC."""
    if len(blob) < 12:
        raise NeveIOError(f"a deletion vector of {len(blob)} bytes is too short to be valid")
    (length,) = struct.unpack_from(">I", blob, 0)
    if length != len(blob) - 8:
        raise NeveIOError(
            f"deletion vector length field says {length} bytes but the blob holds "
            f"{len(blob) - 8}; the blob offset or size in the manifest is wrong"
        )
    vector = blob[4 : 4 + length]
    if vector[:4] != _DV_MAGIC:
        raise NeveIOError("the deletion vector does not start with magic D1 D3 39 64")
    (crc,) = struct.unpack_from(">I", blob, 4 + length)
    if zlib.crc32(vector) != crc:
        raise NeveIOError("the deletion vector's CRC-32 does not match; the file is corrupt")
    try:
        return _read_portable64(vector, 4)
    except struct.error as exc:
        raise NeveIOError(f"the deletion vector is truncated: {exc}") from exc


def _read_portable64(buf: bytes, pos: int) -> BitMap64:
    (count,) = struct.unpack_from("<Q", buf, pos)
    pos += 8
    out = BitMap64()
    last_key = -1
    for _ in range(count):
        (key,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        if key <= last_key:
            raise NeveIOError("the deletion vector's bitmap keys are not ascending")
        last_key = key
        size = _portable32_size(buf, pos)
        low = BitMap.deserialize(buf[pos : pos + size]).to_array()
        pos += size
        if key == 0:
            out.update(array.array("Q", low))
        else:
            base = key << 32
            out.update(array.array("Q", (base + v for v in low)))
    if pos != len(buf):
        raise NeveIOError("the deletion vector has trailing bytes after its bitmaps")
    return out


def read_deletion_vector(io: FileIO, dv: DataFile) -> BitMap64:
    """The positions deleted by a deletion vector entry (a Puffin blob)."""
    if dv.content_offset is None or dv.content_size_in_bytes is None:
        raise NeveIOError(
            f"deletion vector entry for {dv.referenced_data_file} lacks content_offset or "
            "content_size_in_bytes; the manifest is invalid"
        )
    try:
        blob = io.read_range(dv.file_path, dv.content_offset, dv.content_size_in_bytes)
    except (OSError, pa.ArrowException) as exc:
        if isinstance(exc, NeveIOError):
            raise
        raise NeveIOError(f"cannot read deletion vector from {dv.file_path}: {exc}") from exc
    if len(blob) != dv.content_size_in_bytes:
        raise NeveIOError(f"{dv.file_path} ends inside the deletion vector blob")
    positions = deserialize_deletion_vector(blob)
    if len(positions) != dv.record_count:
        raise NeveIOError(
            f"deletion vector in {dv.file_path} holds {len(positions)} positions but its "
            f"manifest entry says {dv.record_count}"
        )
    return positions


@dataclass(frozen=True)
class PuffinBlob:
    """A blob described in a Puffin footer."""

    type: str
    fields: tuple[int, ...]
    offset: int
    length: int
    snapshot_id: int
    sequence_number: int
    properties: Mapping[str, str]
    compression_codec: str | None = None


def write_deletion_vector_puffin(
    io: FileIO,
    path: str,
    deletes: Mapping[str, Iterable[int]],
    *,
    data_files: Mapping[str, DataFile] | None = None,
) -> list[DataFile]:
    """Write one Puffin file with a deletion vector per data file path and return the
    delete entries (one per blob). Partition and spec id come from ``data_files``
    when given."""
    out = bytearray(_PUFFIN_MAGIC)
    blobs: list[dict[str, Any]] = []
    cards: list[tuple[str, int, int, int]] = []
    for data_path in sorted(deletes):
        positions = BitMap64(deletes[data_path])
        blob = serialize_deletion_vector(positions)
        offset = len(out)
        out += blob
        cards.append((data_path, len(positions), offset, len(blob)))
        blobs.append(
            {
                "type": DV_BLOB_TYPE,
                "fields": [ROW_POSITION_ID],
                "snapshot-id": -1,
                "sequence-number": -1,
                "offset": offset,
                "length": len(blob),
                "properties": {
                    "referenced-data-file": data_path,
                    "cardinality": str(len(positions)),
                },
            }
        )
    payload = json.dumps({"blobs": blobs, "properties": {"created-by": "neve"}}).encode()
    out += _PUFFIN_MAGIC + payload + struct.pack("<i", len(payload)) + b"\0\0\0\0" + _PUFFIN_MAGIC
    io.write_bytes(path, bytes(out))
    files = []
    for data_path, card, offset, length in cards:
        ref = (data_files or {}).get(data_path)
        files.append(
            DataFile(
                file_path=path,
                file_format=FileFormat.PUFFIN,
                partition=ref.partition if ref is not None else (),
                record_count=card,
                file_size_in_bytes=len(out),
                content=DataFileContent.POSITION_DELETES,
                referenced_data_file=data_path,
                content_offset=offset,
                content_size_in_bytes=length,
                spec_id=ref.spec_id if ref is not None else 0,
            )
        )
    return files


def read_puffin_footer(data: bytes) -> tuple[list[PuffinBlob], dict[str, str]]:
    """Blobs and file properties from the bytes of a whole Puffin file."""
    if data[:4] != _PUFFIN_MAGIC or data[-4:] != _PUFFIN_MAGIC or len(data) < 20:
        raise NeveIOError("not a Puffin file: magic PFA1 missing at the start or end")
    (size,) = struct.unpack_from("<i", data, len(data) - 12)
    flags = data[-8:-4]
    if flags[0] & 1:
        raise NeveIOError("compressed Puffin footers are not supported; rewrite the file")
    start = len(data) - 12 - size - 4
    if start < 4 or data[start : start + 4] != _PUFFIN_MAGIC:
        raise NeveIOError("the Puffin footer is malformed (footer magic not found)")
    try:
        footer = json.loads(data[start + 4 : start + 4 + size])
    except json.JSONDecodeError as exc:
        raise NeveIOError(f"the Puffin footer is not valid JSON: {exc}") from exc
    blobs = [
        PuffinBlob(
            type=b["type"],
            fields=tuple(b.get("fields", ())),
            offset=b["offset"],
            length=b["length"],
            snapshot_id=b.get("snapshot-id", -1),
            sequence_number=b.get("sequence-number", -1),
            properties=b.get("properties", {}),
            compression_codec=b.get("compression-codec"),
        )
        for b in footer.get("blobs", [])
    ]
    return blobs, footer.get("properties", {})


# -- equality deletes ------------------------------------------------------------------


def _zero(t: pa.DataType) -> pa.Scalar:
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_fixed_size_binary(t):
        return pa.scalar(b"\0" * t.byte_width, t)
    if pa.types.is_decimal(t):
        return pa.scalar(decimal.Decimal(0), t)  # a cast from int64 needs 19 digits
    if pa.types.is_floating(t):
        return pa.scalar(0.0, t)
    if pa.types.is_date(t):
        return pa.scalar(datetime.date(1970, 1, 1), t)  # int64 has no cast to date32
    return pa.scalar(0, pa.int64()).cast(t)


def _normalized_keys(table: pa.Table, columns: Sequence[str]) -> dict[str, pa.ChunkedArray]:
    """Join keys where null equals null and NaN equals NaN: a null flag, a NaN flag
    for floats, and the value with nulls (and NaNs) replaced by a fixed value."""
    out: dict[str, pa.ChunkedArray] = {}
    for i, name in enumerate(columns):
        col = table.column(name)
        t = col.type
        out[f"n{i}"] = pc.is_null(col)
        value = col
        if pa.types.is_floating(t):
            nan = pc.fill_null(pc.is_nan(col), False)
            out[f"f{i}"] = nan
            value = pc.if_else(nan, _zero(t), value)
        out[f"v{i}"] = pc.fill_null(value, _zero(t))
    return out


def equality_keep_mask(
    data: pa.Table, deletes: pa.Table, columns: Sequence[str]
) -> pa.BooleanArray | None:
    """Which rows of ``data`` no delete row matches on ``columns`` (same names and
    types in both tables); None when no row is deleted."""
    if data.num_rows == 0 or deletes.num_rows == 0:
        return None
    n = data.num_rows
    left = _normalized_keys(data, columns)
    right = pa.table(_normalized_keys(deletes, columns))
    keys = list(left)
    row = pc.subtract(pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), n)), 1)
    left_table = pa.table({**left, "__row": row})
    right = right.group_by(keys, use_threads=False).aggregate([])
    hit = left_table.join(right, keys=keys, join_type="left semi", use_threads=False)
    if hit.num_rows == 0:
        return None
    deleted = hit.column("__row").combine_chunks()
    return pc.invert(pc.is_in(row, value_set=deleted))
