"""The Parquet writer: field ids, metrics, partitions, rolling and cleanup."""

from __future__ import annotations

import datetime as dt
import math
import os
import struct
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neve.arrow.metrics import MetricsConfig, MetricsMode, parquet_column_paths
from neve.arrow.schema import field_id
from neve.arrow.writer import (
    ParquetWriteOptions,
    delete_written_files,
    write_data_files,
)
from neve.errors import DataSchemaMismatchError, NeveIOError, ValidationError
from neve.io.fileio import FileIO
from neve.io.locations import LocationProvider
from neve.spec.manifest import DataFile, FileFormat
from neve.spec.partition import UNPARTITIONED, PartitionField, PartitionSpec
from neve.spec.schema import Schema
from neve.spec.transforms import parse_transform
from neve.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    DecimalType,
    FixedType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)
from neve.spec.values import from_bytes, truncate_upper_bound

IO = FileIO()


def files_under(path: Path) -> list[str]:
    return sorted(str(p) for p in path.rglob("*") if p.is_file())


def write(
    tmp_path: Path,
    schema: Schema,
    data: pa.Table,
    spec: PartitionSpec = UNPARTITIONED,
    props: dict[str, str] | None = None,
) -> list[DataFile]:
    return write_data_files(IO, schema, spec, data, LocationProvider(str(tmp_path)), props or {})


def bounds(f: DataFile, schema: Schema, fid: int) -> tuple[Any, Any]:
    t = schema.find_type(fid)
    assert isinstance(t, PrimitiveType)
    lo = f.lower_bounds.get(fid) if f.lower_bounds else None
    hi = f.upper_bounds.get(fid) if f.upper_bounds else None
    return (
        None if lo is None else from_bytes(t, lo),
        None if hi is None else from_bytes(t, hi),
    )


PRIMITIVES = Schema(
    NestedField(1, "b", BOOLEAN),
    NestedField(2, "i", INT, True),
    NestedField(3, "l", LONG),
    NestedField(4, "dec9", DecimalType(9, 2)),
    NestedField(5, "dec30", DecimalType(30, 4)),
    NestedField(6, "d", DATE),
    NestedField(7, "ts", TIMESTAMP),
    NestedField(8, "tz", TIMESTAMPTZ),
    NestedField(9, "s", STRING),
    NestedField(10, "u", UUID),
    NestedField(11, "fx", FixedType(3)),
    NestedField(12, "bin", BINARY),
)


def primitive_data() -> pa.Table:
    return pa.table(
        {
            "b": [True, None, False],
            "i": pa.array([5, -3, 9], pa.int32()),
            "l": [None, 2**40, -(2**40)],
            "dec9": pa.array([Decimal("1.25"), Decimal("-7.50"), None], pa.decimal128(9, 2)),
            "dec30": pa.array(
                [Decimal("12345678901234567890.1234"), Decimal("-1.0000"), None],
                pa.decimal128(30, 4),
            ),
            "d": pa.array([dt.date(2020, 1, 1), dt.date(1960, 5, 6), None]),
            "ts": pa.array([dt.datetime(2024, 1, 1, 12), None, dt.datetime(1969, 12, 31, 23, 59)]),
            "tz": pa.array([0, 5, 1_000_000], pa.timestamp("us", tz="UTC")),
            "s": ["b", "a", "ä"],
            "u": pa.array([uuid.UUID(int=2).bytes, uuid.UUID(int=1).bytes, None], pa.binary(16)),
            "fx": pa.array([b"abc", b"abd", b"\x00\x00\x01"], pa.binary(3)),
            "bin": [b"\xff", b"", None],
        }
    )


def test_parquet_schema_carries_field_ids_and_spec_physical_types(tmp_path: Path) -> None:
    (f,) = write(tmp_path, PRIMITIVES, primitive_data())
    assert f.file_format is FileFormat.PARQUET and f.file_path.endswith(".parquet")
    pf = pq.ParquetFile(f.file_path)
    ids = {c.name: field_id(c) for c in pf.schema_arrow}
    assert ids == {fl.name: fl.field_id for fl in PRIMITIVES.fields}
    physical = {pf.schema.column(i).name: pf.schema.column(i).physical_type for i in range(12)}
    assert physical["dec9"] == "INT32"
    assert physical["dec30"] == "FIXED_LEN_BYTE_ARRAY"
    assert physical["u"] == "FIXED_LEN_BYTE_ARRAY"
    assert "UUID" not in str(pf.schema)  # Spark's native reader rejects the annotation
    assert pf.schema_arrow.field("i").nullable is False
    assert f.file_size_in_bytes == os.path.getsize(f.file_path)
    assert pf.metadata.row_group(0).column(0).compression == "ZSTD"


def test_primitive_metrics_match_pyarrow(tmp_path: Path) -> None:
    data = primitive_data()
    (f,) = write(tmp_path, PRIMITIVES, data)
    assert f.record_count == 3
    assert f.value_counts == {fid: 3 for fid in range(1, 13)}
    assert f.null_value_counts == {
        fl.field_id: data.column(fl.name).null_count for fl in PRIMITIVES.fields
    }
    assert f.nan_value_counts == {}
    for fl in PRIMITIVES.fields:
        col = data.column(fl.name)
        if fl.name in ("u", "fx"):  # min_max has no fixed_size_binary kernel
            values = sorted(v for v in col.to_pylist() if v is not None)
            expected: tuple[Any, Any] = (values[0], values[-1])
        else:
            mm = pc.min_max(col)
            expected = (mm["min"].as_py(), mm["max"].as_py())
        lo, hi = bounds(f, PRIMITIVES, fl.field_id)
        if fl.name == "d":
            expected = tuple((v - dt.date(1970, 1, 1)).days for v in expected)  # type: ignore[assignment]
        elif fl.name in ("ts", "tz"):
            expected = tuple(
                pa.scalar(v, pa.timestamp("us")).cast(pa.int64()).as_py()
                if not isinstance(v, int)
                else v
                for v in expected
            )  # type: ignore[assignment]
        elif fl.name == "u":
            expected = tuple(uuid.UUID(bytes=v) for v in expected)  # type: ignore[assignment]
        assert (lo, hi) == expected, fl.name
    pqmd = pq.read_metadata(f.file_path)
    assert f.column_sizes == {
        fid: pqmd.row_group(0).column(fid - 1).total_compressed_size for fid in range(1, 13)
    }


def test_metrics_agree_with_pyiceberg(tmp_path: Path) -> None:
    from pyiceberg.io.pyarrow import (
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
        pyarrow_to_schema,
    )

    schema = Schema(
        *PRIMITIVES.fields,
        NestedField(13, "st", StructType(NestedField(14, "x", INT), NestedField(15, "y", STRING))),
        NestedField(16, "lst", ListType(17, LONG, False)),
        NestedField(18, "m", MapType(19, STRING, 20, INT, False)),
    )
    data = primitive_data().append_column(
        "st", pa.array([{"x": 1, "y": "q"}, None, {"x": None, "y": "zz"}])
    )
    data = data.append_column("lst", pa.array([[1, None], None, []]))
    data = data.append_column(
        "m", pa.array([[("k", 1)], None, [("a", None)]], pa.map_(pa.string(), pa.int32()))
    )
    props = {"write.metadata.metrics.column.s": "full", "write.parquet.row-group-size-bytes": "1"}
    (f,) = write(tmp_path, schema, data, props=props)
    md = pq.read_metadata(f.file_path)
    assert md.num_row_groups == 3  # one row per row group: bounds merge across groups
    ice = pyarrow_to_schema(pq.read_schema(f.file_path))
    theirs = data_file_statistics_from_parquet_metadata(
        md, compute_statistics_plan(ice, props), parquet_path_to_id_mapping(ice)
    ).to_serialized_dict()
    assert f.record_count == theirs["record_count"]
    assert f.column_sizes == theirs["column_sizes"]
    assert f.value_counts == theirs["value_counts"]
    assert f.null_value_counts == theirs["null_value_counts"]
    # pyiceberg drops bounds of struct children; Iceberg-Java keeps them (it only skips
    # lists and maps), and so do we
    struct_children = {14, 15}
    assert {k: v for k, v in (f.lower_bounds or {}).items() if k not in struct_children} == theirs[
        "lower_bounds"
    ]
    assert {k: v for k, v in (f.upper_bounds or {}).items() if k not in struct_children} == theirs[
        "upper_bounds"
    ]
    assert list(f.split_offsets or ()) == list(theirs["split_offsets"])
    # lists and maps get counts but no bounds, as in Iceberg-Java
    assert 17 in f.value_counts and 17 not in f.lower_bounds  # type: ignore[operator]
    assert 19 in f.value_counts and 19 not in f.upper_bounds  # type: ignore[operator]
    assert bounds(f, schema, 15) == ("q", "zz")


def test_split_offsets_are_row_group_starts(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "x", LONG))
    data = pa.table({"x": pa.array(range(30_000), pa.int64())})
    (f,) = write(tmp_path, schema, data, props={"write.parquet.row-group-size-bytes": "50000"})
    md = pq.read_metadata(f.file_path)
    assert md.num_row_groups > 1
    offsets = f.split_offsets or ()
    assert len(offsets) == md.num_row_groups and offsets[0] == 4
    assert list(offsets) == sorted(offsets)
    raw = Path(f.file_path).read_bytes()
    assert raw[:4] == b"PAR1"
    for rg, off in enumerate(offsets):
        col = md.row_group(rg).column(0)
        start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
        assert off == start


def test_float_metrics_nan_and_signed_zero(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "f", FLOAT),
        NestedField(2, "d", DOUBLE),
        NestedField(3, "z", DOUBLE),
        NestedField(4, "n", DOUBLE),
        NestedField(5, "lst", ListType(6, DOUBLE, False)),
    )
    nan = float("nan")
    data = pa.table(
        {
            "f": pa.array([nan, 1.5, None, -2.5, nan], pa.float32()),
            "d": [0.0, -0.0, 3.0, nan, None],
            "z": [0.0, 0.0, 0.0, None, 0.0],
            "n": [nan, nan, None, nan, nan],
            "lst": [[nan, 1.0], None, [], [nan], [2.0]],
        }
    )
    (f,) = write(tmp_path, schema, data)
    assert f.nan_value_counts == {1: 2, 2: 1, 3: 0, 4: 4, 6: 2}
    assert bounds(f, schema, 1) == (-2.5, 1.5)
    lo, hi = bounds(f, schema, 2)
    assert lo == 0.0 and math.copysign(1, lo) == -1 and hi == 3.0
    lo, hi = bounds(f, schema, 3)
    assert math.copysign(1, lo) == 1 and math.copysign(1, hi) == 1
    assert bounds(f, schema, 4) == (None, None)  # NaN is never a bound
    assert bounds(f, schema, 6) == (None, None)  # inside a list: counts only
    assert f.null_value_counts is not None and f.null_value_counts[2] == 1


def test_negative_zero_upper_bound(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "d", DOUBLE))
    (f,) = write(tmp_path, schema, pa.table({"d": [-0.0, -1.0]}))
    lo, hi = bounds(f, schema, 1)
    assert lo == -1.0 and hi == 0.0 and math.copysign(1, hi) == -1


@settings(max_examples=40)
@given(
    values=st.lists(
        st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True, width=64)),
        min_size=1,
        max_size=40,
    )
)
def test_double_bounds_property(
    tmp_path_factory: pytest.TempPathFactory, values: list[float | None]
) -> None:
    schema = Schema(NestedField(1, "d", DOUBLE))
    (f,) = write(
        tmp_path_factory.mktemp("h"), schema, pa.table({"d": pa.array(values, pa.float64())})
    )
    real = [v for v in values if v is not None and not math.isnan(v)]
    assert f.nan_value_counts == {1: sum(1 for v in values if v is not None and math.isnan(v))}
    assert f.null_value_counts == {1: sum(1 for v in values if v is None)}
    lo, hi = bounds(f, schema, 1)
    if not real:
        assert lo is None and hi is None
        return
    key = lambda v: (v, math.copysign(1, v))  # noqa: E731 - -0.0 before +0.0
    assert key(lo) == key(min(real, key=key))
    assert key(hi) == key(max(real, key=key))


LONG_TEXT = "äöü€𝄞" * 5 + "z"


def test_truncated_string_and_binary_bounds(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "s", STRING), NestedField(2, "b", BINARY), NestedField(3, "top", STRING)
    )
    top = "\U0010ffff" * 20
    data = pa.table(
        {
            "s": [LONG_TEXT, "a" * 30, "short"],
            "b": [b"\x01" * 20, b"\xff" * 17 + b"\x00", b"\x02"],
            "top": [top, top, top],
        }
    )
    (f,) = write(tmp_path, schema, data)
    lo, hi = bounds(f, schema, 1)
    assert lo == "a" * 16
    assert hi == truncate_upper_bound(STRING, LONG_TEXT, 16)
    assert len(hi) == 16 and hi[:15] == LONG_TEXT[:15] and hi > LONG_TEXT
    lo, hi = bounds(f, schema, 2)
    assert lo == b"\x01" * 16
    assert hi is None or hi > b"\xff" * 17  # all-0xFF prefix: no upper bound possible
    assert hi is None
    assert bounds(f, schema, 3) == (top[:16], None)
    assert f.lower_bounds is not None and 3 in f.lower_bounds


@pytest.mark.parametrize(
    ("props", "expect_counts", "expect_bounds", "string_upper"),
    [
        ({"write.metadata.metrics.default": "none"}, False, False, None),
        ({"write.metadata.metrics.default": "counts"}, True, False, None),
        ({"write.metadata.metrics.default": "truncate(4)"}, True, True, "abce"),
        ({"write.metadata.metrics.default": "full"}, True, True, "abcdefghijklmnopqrstuvwxyz"),
        ({"write.metadata.metrics.column.s": "truncate(2)"}, True, True, "ac"),
    ],
)
def test_metrics_modes(
    tmp_path: Path,
    props: dict[str, str],
    expect_counts: bool,
    expect_bounds: bool,
    string_upper: str | None,
) -> None:
    schema = Schema(NestedField(1, "id", LONG), NestedField(2, "s", STRING))
    data = pa.table({"id": [1, 2], "s": ["abcdefghijklmnopqrstuvwxyz", "a"]})
    (f,) = write(tmp_path, schema, data, props=props)
    assert (1 in (f.value_counts or {})) is expect_counts
    assert (1 in (f.column_sizes or {})) is expect_counts
    assert (1 in (f.lower_bounds or {})) is expect_bounds
    assert bounds(f, schema, 2)[1] == string_upper


def test_only_first_columns_get_metrics_beyond_the_inferred_limit(tmp_path: Path) -> None:
    schema = Schema(*(NestedField(i, f"c{i}", INT) for i in range(1, 6)))
    data = pa.table({f"c{i}": pa.array([i], pa.int32()) for i in range(1, 6)})
    props = {"write.metadata.metrics.max-inferred-column-defaults": "3"}
    (f,) = write(tmp_path, schema, data, props=props)
    assert set(f.value_counts or {}) == {1, 2, 3}
    assert set(f.lower_bounds or {}) == {1, 2, 3}


def test_bad_metrics_mode_and_properties() -> None:
    with pytest.raises(ValidationError, match="truncate"):
        MetricsMode.parse("truncate(0)")
    assert str(MetricsMode.parse(" Truncate( 8 ) ")) == "truncate(8)"
    schema = Schema(NestedField(1, "a", INT))
    assert MetricsConfig.from_properties(schema, {}).mode(1) == MetricsMode("truncate", 16)
    # a stored value neve cannot use (set by another engine: set_properties refuses it)
    # reads as its default here as everywhere else (neve.spec.properties, rule 2)
    options = ParquetWriteOptions.from_properties(
        {"write.parquet.compression-codec": "zip", "write.target-file-size-bytes": "big"}
    )
    assert options.compression == "zstd"
    assert options.target_file_size == 512 * 1024 * 1024
    assert MetricsConfig.from_properties(schema, {"write.metadata.metrics.default": "some"}).mode(
        1
    ) == MetricsMode("truncate", 16)


def test_compression_codec_property(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "a", INT))
    (f,) = write(
        tmp_path,
        schema,
        pa.table({"a": [1, 2]}),
        props={"write.parquet.compression-codec": "snappy"},
    )
    assert pq.read_metadata(f.file_path).row_group(0).column(0).compression == "SNAPPY"
    (g,) = write(
        tmp_path,
        schema,
        pa.table({"a": [1, 2]}),
        props={"write.parquet.compression-codec": "uncompressed"},
    )
    assert pq.read_metadata(g.file_path).row_group(0).column(0).compression == "UNCOMPRESSED"


def test_parquet_leaf_paths_match_what_pyarrow_writes(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "st", StructType(NestedField(2, "x", INT))),
        NestedField(3, "lst", ListType(4, StructType(NestedField(5, "y", LONG)), False)),
        NestedField(6, "m", MapType(7, STRING, 8, DOUBLE, False)),
    )
    data = pa.table(
        {
            "st": [{"x": 1}],
            "lst": [[{"y": 2}]],
            "m": pa.array([[("a", 1.0)]], pa.map_(pa.string(), pa.float64())),
        }
    )
    (f,) = write(tmp_path, schema, data)
    md = pq.read_metadata(f.file_path)
    written = {md.row_group(0).column(i).path_in_schema for i in range(md.num_columns)}
    assert written == set(parquet_column_paths(schema))
    assert set(f.value_counts or {}) == {2, 5, 7, 8}


def test_validation_failure_writes_nothing(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LONG, True))
    with pytest.raises(DataSchemaMismatchError):
        write(tmp_path, schema, pa.table({"id": [1, None]}))
    with pytest.raises(DataSchemaMismatchError):
        write(tmp_path, schema, pa.table({"id": ["x"]}))
    assert files_under(tmp_path) == []


def test_failure_mid_write_deletes_every_file(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "p", INT), NestedField(2, "v", STRING))
    spec = PartitionSpec(0, (PartitionField(1, 1000, parse_transform("identity"), "p"),))
    data = pa.table({"p": pa.array([1, 2, 3], pa.int32()), "v": ["a", "b", "c"]})
    provider = LocationProvider(str(tmp_path))
    calls = []

    def paths(partition: tuple[Any, ...], partition_path: str) -> str:
        calls.append(partition)
        if len(calls) == 3:
            raise NeveIOError("disk full (simulated)")
        return provider(partition, partition_path)

    with pytest.raises(NeveIOError, match="simulated"):
        write_data_files(IO, schema, spec, data, paths, {})
    assert len(calls) == 3
    assert files_under(tmp_path) == []


class QuotaFileIO(FileIO):
    """A real local FileIO whose output streams fail once a byte quota is used up."""

    def __init__(self, quota: int) -> None:
        super().__init__()
        self.quota = quota
        self.opened: list[str] = []

    def open_output(self, path: str) -> Any:
        io = self
        self.opened.append(path)

        class Sink:
            def __init__(self) -> None:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                self.f = open(path, "wb")  # noqa: SIM115 - closed by close()
                self.closed = False

            def write(self, data: bytes) -> int:
                if len(data) > io.quota:
                    raise OSError("quota exceeded (simulated)")
                io.quota -= len(data)
                return self.f.write(data)

            def tell(self) -> int:
                return self.f.tell()

            def flush(self) -> None:
                self.f.flush()

            def close(self) -> None:
                self.closed = True
                self.f.close()

        return pa.PythonFile(Sink(), mode="w")


def test_failure_inside_parquet_writer_cleans_partial_files(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "v", LONG))
    data = pa.table({"v": pa.array(range(20_000), pa.int64())})
    props = {"write.target-file-size-bytes": "20000", "write.parquet.compression-codec": "none"}
    quota = QuotaFileIO(70_000)
    with pytest.raises(NeveIOError, match="quota exceeded"):
        write_data_files(quota, schema, UNPARTITIONED, data, LocationProvider(str(tmp_path)), props)
    assert len(quota.opened) >= 3  # complete files were written before the failure
    assert files_under(tmp_path) == []


def test_delete_written_files(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "v", LONG))
    files = write(tmp_path, schema, pa.table({"v": [1]}))
    assert delete_written_files(IO, [*files, str(tmp_path / "missing.parquet")]) == []
    assert files_under(tmp_path) == []


def test_rolling_by_target_file_size(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LONG, True), NestedField(2, "s", STRING))
    n = 20_000
    data = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "s": [f"value-{i * 7919 % 100_003}" for i in range(n)],
        }
    )
    target = 40_000
    files = write(tmp_path, schema, data, props={"write.target-file-size-bytes": str(target)})
    assert len(files) >= 4
    assert sum(f.record_count for f in files) == n
    for f in files[:-1]:
        assert f.file_size_in_bytes >= target
        assert f.file_size_in_bytes < 3 * target
    ids = pa.concat_tables([pq.read_table(f.file_path) for f in files]).column("id")
    assert ids.to_pylist() == list(range(n))
    for f in files:  # per-file metrics, not the whole table's
        lo, hi = bounds(f, schema, 1)
        assert hi - lo + 1 == f.record_count


def test_row_group_size_property(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LONG))
    data = pa.table({"id": pa.array(range(50_000), pa.int64())})
    (f,) = write(tmp_path, schema, data, props={"write.parquet.row-group-size-bytes": "100000"})
    md = pq.read_metadata(f.file_path)
    assert md.num_row_groups >= 3
    sizes = [md.row_group(i).total_byte_size for i in range(md.num_row_groups - 1)]
    assert max(sizes) < 400_000


def test_partitioned_write(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "id", LONG, True),
        NestedField(2, "ts", TIMESTAMP),
        NestedField(3, "cat", STRING),
    )
    spec = PartitionSpec(
        0,
        (
            PartitionField(2, 1000, parse_transform("day"), "ts_day"),
            PartitionField(3, 1001, parse_transform("identity"), "cat"),
            PartitionField(1, 1002, parse_transform("bucket[2]"), "id_bucket"),
        ),
    )
    base = dt.datetime(2024, 1, 5, 10)
    data = pa.table(
        {
            "id": pa.array(range(12), pa.int64()),
            "ts": [base + dt.timedelta(days=i % 2) if i != 11 else None for i in range(12)],
            "cat": ["a b/c" if i % 3 else "x=y%" for i in range(12)],
        }
    )
    files = write(tmp_path, schema, data, spec=spec)
    assert sum(f.record_count for f in files) == 12
    seen = set()
    for f in files:
        day, cat, bucket = f.partition
        table = pq.read_table(f.file_path)
        ts = table.column("ts").to_pylist()
        expected_day = None if ts[0] is None else (ts[0].date() - dt.date(1970, 1, 1)).days
        assert day == expected_day
        assert all(
            (None if t is None else (t.date() - dt.date(1970, 1, 1)).days) == day for t in ts
        )
        assert set(table.column("cat").to_pylist()) == {cat}
        human_day = (
            "null" if day is None else (dt.date(1970, 1, 1) + dt.timedelta(days=day)).isoformat()
        )
        enc = "a+b%2Fc" if cat == "a b/c" else "x%3Dy%25"
        assert f"/data/ts_day={human_day}/cat={enc}/id_bucket={bucket}/" in f.file_path
        seen.add(f.partition)
    assert len(seen) == len(files)


def test_fixed_width_ids_match_writer_metadata(tmp_path: Path) -> None:
    # a nested schema whose leaf ids do not follow column order
    schema = Schema(
        NestedField(10, "b", StructType(NestedField(3, "y", STRING), NestedField(2, "x", INT))),
        NestedField(1, "a", LONG),
    )
    data = pa.table({"b": [{"y": "q", "x": 5}], "a": [7]})
    (f,) = write(tmp_path, schema, data)
    assert bounds(f, schema, 2) == (5, 5)
    assert bounds(f, schema, 3) == ("q", "q")
    assert bounds(f, schema, 1) == (7, 7)
    assert struct.unpack("<q", (f.lower_bounds or {})[1])[0] == 7


def test_empty_table_writes_no_file(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "a", LONG))
    assert write(tmp_path, schema, pa.table({"a": pa.array([], pa.int64())})) == []
    spec = PartitionSpec(0, (PartitionField(1, 1000, parse_transform("identity"), "a"),))
    assert write(tmp_path, schema, pa.table({"a": pa.array([], pa.int64())}), spec=spec) == []
    assert files_under(tmp_path) == []
