"""Position deletes, deletion vectors and equality deletes, written and applied."""

from __future__ import annotations

import json
import struct
import zlib
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap, BitMap64

from neve.arrow.deletes import (
    DELETE_FILE_PATH_ID,
    DELETE_POS_ID,
    DV_BLOB_TYPE,
    ROW_POSITION_ID,
    apply_positions,
    deserialize_deletion_vector,
    equality_keep_mask,
    read_deletion_vector,
    read_position_deletes,
    read_puffin_footer,
    serialize_deletion_vector,
    write_deletion_vector_puffin,
    write_equality_delete_file,
    write_position_delete_file,
)
from neve.arrow.reader import DeleteCache, read_data_file
from neve.arrow.schema import field_id
from neve.arrow.writer import write_data_files
from neve.errors import NeveIOError, ValidationError
from neve.expressions.binding import bind
from neve.expressions.expressions import less_than
from neve.io.fileio import FileIO
from neve.io.locations import LocationProvider
from neve.spec.manifest import DataFile, DataFileContent, FileFormat
from neve.spec.partition import UNPARTITIONED
from neve.spec.schema import Schema
from neve.spec.types import (
    DATE,
    DOUBLE,
    INT,
    LONG,
    STRING,
    DecimalType,
    NestedField,
    PrimitiveType,
    StructType,
)
from neve.spec.values import from_bytes

IO = FileIO()

SCHEMA = Schema(
    NestedField(1, "id", LONG, True),
    NestedField(2, "name", STRING),
    NestedField(3, "x", DOUBLE),
    NestedField(4, "s", StructType(NestedField(5, "k", INT))),
)
N = 6_000


def data(n: int = N) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "name": [None if i % 4 == 0 else f"n{i % 3}" for i in range(n)],
            "x": [float("nan") if i % 5 == 0 else float(i % 2) for i in range(n)],
            "s": [None if i % 6 == 0 else {"k": i % 3} for i in range(n)],
        }
    )


def data_file(tmp_path: Path, n: int = N) -> DataFile:
    (f,) = write_data_files(
        IO,
        SCHEMA,
        UNPARTITIONED,
        data(n),
        LocationProvider(str(tmp_path)),
        {"write.parquet.row-group-size-bytes": "3000"},
    )
    if n >= N:  # positions are file-global: make them cross row groups
        assert pq.read_metadata(f.file_path).num_row_groups >= 3
    return f


def ids(table: pa.Table) -> list[int]:
    return table.column("id").to_pylist()  # type: ignore[no-any-return]


# -- position delete files -------------------------------------------------------------


def test_position_delete_file_layout_and_metrics(tmp_path: Path) -> None:
    path = str(tmp_path / "pos.parquet")
    f = write_position_delete_file(
        IO, path, {"s3://b/f2.parquet": [5, 1], "s3://b/f1.parquet": [9, 9, 0]}
    )
    assert f.content is DataFileContent.POSITION_DELETES and f.record_count == 4
    assert f.referenced_data_file is None  # two data files
    table = pq.read_table(path)
    assert table.to_pylist() == [
        {"file_path": "s3://b/f1.parquet", "pos": 0},
        {"file_path": "s3://b/f1.parquet", "pos": 9},
        {"file_path": "s3://b/f2.parquet", "pos": 1},
        {"file_path": "s3://b/f2.parquet", "pos": 5},
    ]
    schema = pq.read_schema(path)
    assert [field_id(c) for c in schema] == [DELETE_FILE_PATH_ID, DELETE_POS_ID]
    assert not any(c.nullable for c in schema)
    assert f.lower_bounds is not None and f.upper_bounds is not None
    assert from_bytes(STRING, f.lower_bounds[DELETE_FILE_PATH_ID]) == "s3://b/f1.parquet"
    assert from_bytes(STRING, f.upper_bounds[DELETE_FILE_PATH_ID]) == "s3://b/f2.parquet"
    assert from_bytes(LONG, f.upper_bounds[DELETE_POS_ID]) == 9
    single = write_position_delete_file(IO, str(tmp_path / "one.parquet"), {"a": [1]})
    assert single.referenced_data_file == "a"
    assert read_position_deletes(IO, f) == {
        "s3://b/f1.parquet": BitMap64([0, 9]),
        "s3://b/f2.parquet": BitMap64([1, 5]),
    }
    assert read_position_deletes(IO, f, "s3://b/f2.parquet") == {
        "s3://b/f2.parquet": BitMap64([1, 5])
    }
    assert read_position_deletes(IO, f, "s3://b/other") == {}


def test_position_deletes_applied_across_row_groups(tmp_path: Path) -> None:
    f = data_file(tmp_path)
    deleted = {0, 1, 2999, 3000, 3001, N - 1} | set(range(4000, 4100))
    pos = write_position_delete_file(
        IO, str(tmp_path / "d1.parquet"), {f.file_path: sorted(deleted)[:50], "other": [1, 2]}
    )
    pos2 = write_position_delete_file(
        IO, str(tmp_path / "d2.parquet"), {f.file_path: sorted(deleted)[50:]}
    )
    out = read_data_file(IO, f, SCHEMA, delete_files=[pos, pos2], batch_size=1000)
    assert ids(out) == [i for i in range(N) if i not in deleted]
    # with a filter as well: deletes use file positions, not positions after filtering
    filt = bind(SCHEMA, less_than("id", 3002))
    out = read_data_file(IO, f, SCHEMA, row_filter=filt, delete_files=[pos, pos2], batch_size=777)
    assert ids(out) == [i for i in range(3002) if i not in deleted]


def test_apply_positions_windows() -> None:
    batch = pa.record_batch({"v": list(range(10))})
    assert apply_positions(batch, 100, None) is batch
    assert apply_positions(batch, 100, BitMap64([5, 200])) is batch
    out = apply_positions(batch, 100, BitMap64([99, 100, 105, 109, 110]))
    assert out.column(0).to_pylist() == [1, 2, 3, 4, 6, 7, 8]
    assert apply_positions(batch, 0, BitMap64(range(10))).num_rows == 0


# -- deletion vectors ------------------------------------------------------------------


def test_puffin_file_layout(tmp_path: Path) -> None:
    path = str(tmp_path / "dv.puffin")
    ref = DataFile("s3://b/data.parquet", FileFormat.PARQUET, ("p",), 10, 1, spec_id=3)
    entries = write_deletion_vector_puffin(
        IO,
        path,
        {"s3://b/data.parquet": [3, 1, 2], "s3://b/z.parquet": [7]},
        data_files={ref.file_path: ref},
    )
    raw = Path(path).read_bytes()
    assert raw[:4] == b"PFA1" and raw[-4:] == b"PFA1"
    assert raw[-8:-4] == b"\0\0\0\0"
    (size,) = struct.unpack("<i", raw[-12:-8])
    footer = json.loads(raw[-12 - size : -12])
    assert raw[-12 - size - 4 : -12 - size] == b"PFA1"
    blobs, props = read_puffin_footer(raw)
    assert "created-by" in props
    assert footer["blobs"][0]["type"] == DV_BLOB_TYPE
    assert [b.properties for b in blobs] == [
        {"referenced-data-file": "s3://b/data.parquet", "cardinality": "3"},
        {"referenced-data-file": "s3://b/z.parquet", "cardinality": "1"},
    ]
    assert all(b.snapshot_id == -1 and b.sequence_number == -1 for b in blobs)
    assert all(b.fields == (ROW_POSITION_ID,) and b.compression_codec is None for b in blobs)
    first, second = entries
    assert (
        first.file_format is FileFormat.PUFFIN and first.content is DataFileContent.POSITION_DELETES
    )
    assert first.record_count == 3 and first.referenced_data_file == "s3://b/data.parquet"
    assert (first.content_offset, first.content_size_in_bytes) == (blobs[0].offset, blobs[0].length)
    assert first.partition == ("p",) and first.spec_id == 3 and second.partition == ()
    assert first.file_size_in_bytes == len(raw)
    assert read_deletion_vector(IO, first) == BitMap64([1, 2, 3])
    assert read_deletion_vector(IO, second) == BitMap64([7])


def hand_built_dv(groups: dict[int, BitMap]) -> bytes:
    """A deletion-vector-v1 blob assembled byte by byte from the spec."""
    vector = b"\xd1\xd3\x39\x64" + struct.pack("<Q", len(groups))
    for key in sorted(groups):
        vector += struct.pack("<I", key) + groups[key].serialize()
    return struct.pack(">I", len(vector)) + vector + struct.pack(">I", zlib.crc32(vector))


def test_hand_built_dv_with_run_and_bitmap_containers() -> None:
    runs = BitMap(range(10, 70_000))  # long runs: run containers after run_optimize
    runs.run_optimize()
    dense = BitMap(range(0, 65_536 * 3, 2))  # > 4096 values per container: bitmaps
    sparse = BitMap([1, 5, 1 << 20])
    raw_runs = runs.serialize()
    assert struct.unpack("<I", raw_runs[:4])[0] & 0xFFFF == 12347  # the run cookie
    blob = hand_built_dv({0: runs | sparse, 1: dense, 7: sparse})
    positions = deserialize_deletion_vector(blob)
    expected = BitMap64(list(runs | sparse))
    expected |= BitMap64([(1 << 32) + v for v in dense])
    expected |= BitMap64([(7 << 32) + v for v in sparse])
    assert positions == expected
    # our serializer produces bytes the same parser (and the spec layout) accepts
    assert deserialize_deletion_vector(serialize_deletion_vector(expected)) == expected


def test_corrupt_deletion_vectors_raise() -> None:
    blob = serialize_deletion_vector([1, 2, 3, 100_000])
    flipped = bytearray(blob)
    flipped[-6] ^= 0x01  # inside the bitmap
    with pytest.raises(NeveIOError, match="CRC"):
        deserialize_deletion_vector(bytes(flipped))
    bad_crc = blob[:-1] + bytes([blob[-1] ^ 0xFF])
    with pytest.raises(NeveIOError, match="CRC"):
        deserialize_deletion_vector(bad_crc)
    with pytest.raises(NeveIOError, match="magic"):
        vector = b"\x00\x00\x00\x00" + blob[8:-4]
        deserialize_deletion_vector(
            struct.pack(">I", len(vector)) + vector + struct.pack(">I", zlib.crc32(vector))
        )
    with pytest.raises(NeveIOError, match="length"):
        deserialize_deletion_vector(blob + b"\0")
    with pytest.raises(NeveIOError, match="too short"):
        deserialize_deletion_vector(b"\0\0")


def test_dv_crc_mismatch_in_file_raises(tmp_path: Path) -> None:
    path = tmp_path / "dv.puffin"
    (entry,) = write_deletion_vector_puffin(IO, str(path), {"f": [4, 5]})
    raw = bytearray(path.read_bytes())
    assert entry.content_offset is not None
    raw[entry.content_offset + 10] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(NeveIOError, match="CRC"):
        read_deletion_vector(IO, entry)
    with pytest.raises(NeveIOError, match="content_offset"):
        read_deletion_vector(IO, entry.with_(content_offset=None))


@settings(max_examples=60)
@given(st.sets(st.one_of(st.integers(0, 70_000), st.integers(0, 2**40)), max_size=300))
def test_dv_round_trip_property(positions: set[int]) -> None:
    assert deserialize_deletion_vector(serialize_deletion_vector(positions)) == BitMap64(positions)


def test_dv_replaces_position_deletes(tmp_path: Path) -> None:
    f = data_file(tmp_path)
    pos = write_position_delete_file(IO, str(tmp_path / "pos.parquet"), {f.file_path: [0, 1, 2]})
    (dv,) = write_deletion_vector_puffin(
        IO, str(tmp_path / "dv.puffin"), {f.file_path: [10, 3001, N - 1]}
    )
    out = read_data_file(IO, f, SCHEMA.select(["id"]), delete_files=[pos, dv])
    assert ids(out) == [i for i in range(N) if i not in (10, 3001, N - 1)]


# -- equality deletes -------------------------------------------------------------------


def test_equality_keep_mask_null_and_nan_semantics() -> None:
    left = pa.table(
        {"a": pa.array([1, None, 3, None, 5]), "b": pa.array([1.0, float("nan"), None, 2.0, 0.0])}
    )
    right = pa.table({"a": pa.array([None, 3, 5]), "b": pa.array([float("nan"), None, -0.0])})
    mask = equality_keep_mask(left, right, ["a", "b"])
    assert mask is not None and mask.to_pylist() == [True, False, False, True, True]
    # nothing matches: no mask at all
    assert equality_keep_mask(left, right.slice(0, 0), ["a", "b"]) is None


def test_equality_deletes_applied_by_reader(tmp_path: Path) -> None:
    f = data_file(tmp_path, 600)
    by_name = write_equality_delete_file(
        IO, str(tmp_path / "eq1.parquet"), SCHEMA, [2], pa.table({"name": ["n1", None]})
    )
    assert by_name.content is DataFileContent.EQUALITY_DELETES and by_name.equality_ids == (2,)
    nested = write_equality_delete_file(
        IO,
        str(tmp_path / "eq2.parquet"),
        SCHEMA,
        [1, 5],
        pa.table({"id": [2, 3, 6], "s": [{"k": 2}, {"k": 2}, None]}),
    )
    assert [c.name for c in pq.read_schema(nested.file_path)] == ["id", "s"]
    rows = data(600).to_pylist()

    def survives(r: dict[str, object]) -> bool:
        if r["name"] in ("n1", None):
            return False
        k = None if r["s"] is None else r["s"]["k"]  # type: ignore[index]
        return (r["id"], k) not in {(2, 2), (3, 2), (6, None)}

    cache = DeleteCache()
    # the delete columns are not in the projection: they are read and dropped again
    out = read_data_file(
        IO,
        f,
        SCHEMA.select(["x"]),
        table_schema=SCHEMA,
        delete_files=[by_name, nested],
        cache=cache,
    )
    assert out.column_names == ["x"]
    assert out.num_rows == sum(1 for r in rows if survives(r))
    full = read_data_file(IO, f, SCHEMA, delete_files=[by_name, nested], cache=cache)
    assert ids(full) == [r["id"] for r in rows if survives(r)]
    assert set(cache.equality) == {by_name.file_path, nested.file_path}


def test_equality_delete_on_a_dropped_column_still_applies(tmp_path: Path) -> None:
    f = data_file(tmp_path, 100)
    eq = write_equality_delete_file(
        IO, str(tmp_path / "eq.parquet"), SCHEMA, [2], pa.table({"name": ["n2"]})
    )
    dropped = Schema(SCHEMA.find_field("id"), SCHEMA.find_field("x"), schema_id=1)
    out = read_data_file(IO, f, dropped, delete_files=[eq])
    assert ids(out) == [r["id"] for r in data(100).to_pylist() if r["name"] != "n2"]
    assert out.column_names == ["id", "x"]


def test_equality_delete_on_nan_and_promoted_types(tmp_path: Path) -> None:
    f = data_file(tmp_path, 50)
    eq = write_equality_delete_file(
        IO, str(tmp_path / "eq.parquet"), SCHEMA, [3], pa.table({"x": [float("nan")]})
    )
    out = read_data_file(IO, f, SCHEMA, delete_files=[eq])
    assert ids(out) == [i for i in range(50) if i % 5 != 0]


@pytest.mark.parametrize(
    ("column", "arrow_type", "values"),
    [
        (DATE, pa.date32(), [0, -1, None, 19_000]),
        (DecimalType(9, 2), pa.decimal128(9, 2), [Decimal("1.25"), Decimal("-3.10"), None, 0]),
    ],
    ids=["date", "decimal(9,2)"],
)
def test_equality_deletes_keyed_on_dates_and_decimals(
    tmp_path: Path, column: PrimitiveType, arrow_type: pa.DataType, values: list[object]
) -> None:
    schema = Schema(NestedField(1, "id", LONG, True), NestedField(2, "k", column))
    raw = pa.array(values, pa.int32()).cast(arrow_type) if column == DATE else values
    rows = pa.table({"id": pa.array(range(4), pa.int64()), "k": pa.array(raw, arrow_type)})
    (f,) = write_data_files(IO, schema, UNPARTITIONED, rows, LocationProvider(str(tmp_path)))
    keys = pa.table({"k": rows.column("k").take([0, 2])})  # a value and a null
    eq = write_equality_delete_file(IO, str(tmp_path / "eq.parquet"), schema, [2], keys)
    assert ids(read_data_file(IO, f, schema, delete_files=[eq])) == [1, 3]


def test_equality_delete_file_validation(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="primitive"):
        write_equality_delete_file(
            IO, str(tmp_path / "e.parquet"), SCHEMA, [4], pa.table({"s": [None]})
        )
    with pytest.raises(ValidationError, match="distinct"):
        write_equality_delete_file(
            IO, str(tmp_path / "e.parquet"), SCHEMA, [99], pa.table({"a": [1]})
        )
    assert not (tmp_path / "e.parquet").exists()


def test_position_deletes_in_a_later_split_use_file_positions(tmp_path: Path) -> None:
    f = data_file(tmp_path)
    offsets = list(f.split_offsets or ())
    first_rows = pq.read_metadata(f.file_path).row_group(0).num_rows
    pos = write_position_delete_file(
        IO, str(tmp_path / "pos.parquet"), {f.file_path: [0, first_rows, first_rows + 2]}
    )
    second = read_data_file(
        IO,
        f,
        SCHEMA.select(["id"]),
        delete_files=[pos],
        split=(offsets[1], offsets[2] - offsets[1]),
    )
    rows = pq.read_metadata(f.file_path).row_group(1).num_rows
    expected = [
        i for i in range(first_rows, first_rows + rows) if i not in (first_rows, first_rows + 2)
    ]
    assert ids(second) == expected
