"""Reading data files by field id: schema evolution, partition values, name mapping
and row filters."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neve.arrow.reader import (
    _open,
    _row_groups,
    iter_data_file_batches,
    read_data_file,
)
from neve.arrow.schema import create_name_mapping, parse_name_mapping, to_arrow_schema
from neve.arrow.writer import write_data_files
from neve.errors import SchemaError
from neve.expressions.binding import bind
from neve.expressions.expressions import (
    BooleanExpression,
    and_,
    equal,
    greater_than,
    greater_than_or_equal,
    is_null,
    less_than,
    not_equal,
    or_,
)
from neve.expressions.visitors import rewrite_not
from neve.io.fileio import FileIO
from neve.io.locations import LocationProvider
from neve.spec.manifest import DataFile, FileFormat
from neve.spec.partition import UNPARTITIONED, PartitionField, PartitionSpec
from neve.spec.schema import Schema
from neve.spec.transforms import parse_transform
from neve.spec.types import (
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    UUID,
    DecimalType,
    FixedType,
    ListType,
    MapType,
    NestedField,
    StructType,
)

IO = FileIO()


def write_one(
    tmp_path: Path,
    schema: Schema,
    data: pa.Table,
    props: dict[str, str] | None = None,
    spec: PartitionSpec = UNPARTITIONED,
) -> DataFile:
    files = write_data_files(IO, schema, spec, data, LocationProvider(str(tmp_path)), props or {})
    assert len(files) == 1
    return files[0]


OLD = Schema(
    NestedField(1, "id", INT, True),
    NestedField(2, "name", STRING),
    NestedField(3, "score", FLOAT),
    NestedField(4, "price", DecimalType(5, 2)),
    NestedField(5, "gone", STRING),
    NestedField(
        6,
        "info",
        StructType(NestedField(7, "a", INT), NestedField(8, "b", STRING)),
    ),
    NestedField(9, "tags", ListType(10, INT, False)),
    NestedField(11, "attrs", MapType(12, STRING, 13, FLOAT, False)),
)

OLD_DATA = pa.table(
    {
        "id": pa.array([1, 2, 3], pa.int32()),
        "name": ["one", None, "three"],
        "score": pa.array([1.5, None, -2.25], pa.float32()),
        "price": pa.array([Decimal("1.25"), Decimal("-3.50"), None], pa.decimal128(5, 2)),
        "gone": ["x", "y", "z"],
        "info": [{"a": 1, "b": "p"}, None, {"a": None, "b": "r"}],
        "tags": [[1, 2], None, []],
        "attrs": pa.array([[("k", 0.5)], None, []], pa.map_(pa.string(), pa.float32())),
    }
)

# renamed name -> label, dropped gone and info.b, promoted id/score/price/tags/attrs,
# added columns with and without initial defaults (top-level and nested)
NEW = Schema(
    NestedField(1, "id", LONG, True),
    NestedField(2, "label", STRING),
    NestedField(3, "score", DOUBLE),
    NestedField(4, "price", DecimalType(12, 2)),
    NestedField(
        6,
        "details",
        StructType(
            NestedField(7, "alpha", LONG),
            NestedField(15, "c", STRING, initial_default="dflt"),
        ),
    ),
    NestedField(9, "tags", ListType(10, LONG, False)),
    NestedField(11, "attrs", MapType(12, STRING, 13, DOUBLE, False)),
    NestedField(14, "added", INT),
    NestedField(16, "level", INT, True, initial_default=7, write_default=7),
    schema_id=1,
)


def test_schema_evolution_by_field_id(tmp_path: Path) -> None:
    f = write_one(tmp_path, OLD, OLD_DATA)
    out = read_data_file(IO, f, NEW)
    assert out.schema == to_arrow_schema(NEW)
    assert out.to_pylist() == [
        {
            "id": 1,
            "label": "one",
            "score": 1.5,
            "price": Decimal("1.25"),
            "details": {"alpha": 1, "c": "dflt"},
            "tags": [1, 2],
            "attrs": [("k", 0.5)],
            "added": None,
            "level": 7,
        },
        {
            "id": 2,
            "label": None,
            "score": None,
            "price": Decimal("-3.50"),
            "details": None,
            "tags": None,
            "attrs": None,
            "added": None,
            "level": 7,
        },
        {
            "id": 3,
            "label": "three",
            "score": -2.25,
            "price": None,
            "details": {"alpha": None, "c": "dflt"},
            "tags": [],
            "attrs": [],
            "added": None,
            "level": 7,
        },
    ]


def test_projection_of_a_subset_in_any_order(tmp_path: Path) -> None:
    f = write_one(tmp_path, OLD, OLD_DATA)
    projected = Schema(NEW.find_field("label"), NEW.find_field("id"))
    out = read_data_file(IO, f, projected, table_schema=NEW)
    assert out.column_names == ["label", "id"]
    assert out.column("id").type == pa.int64()


def test_missing_required_field_without_default_is_an_error(tmp_path: Path) -> None:
    f = write_one(tmp_path, OLD, OLD_DATA)
    bad = Schema(NestedField(1, "id", LONG, True), NestedField(99, "must", INT, True))
    with pytest.raises(SchemaError, match="'must'"):
        read_data_file(IO, f, bad)


def test_incompatible_type_in_file_is_an_error(tmp_path: Path) -> None:
    f = write_one(tmp_path, OLD, OLD_DATA)
    bad = Schema(NestedField(2, "name", StructType(NestedField(50, "x", INT))))
    with pytest.raises(SchemaError, match="'name'"):
        read_data_file(IO, f, bad)


def test_identity_partition_values_fill_missing_columns(tmp_path: Path) -> None:
    table_schema = Schema(
        NestedField(1, "id", LONG, True),
        NestedField(2, "region", STRING),
        NestedField(3, "day", INT),
    )
    spec = PartitionSpec(
        0,
        (
            PartitionField(2, 1000, parse_transform("identity"), "region"),
            PartitionField(3, 1001, parse_transform("bucket[4]"), "day_bucket"),
        ),
    )
    # an imported file that holds only the id column
    file_schema = Schema(NestedField(1, "id", LONG, True))
    f = write_one(tmp_path, file_schema, pa.table({"id": [1, 2]}))
    f = f.with_(partition=("emea", 3))
    out = read_data_file(IO, f, table_schema, spec=spec)
    # identity values fill in; other transforms cannot be inverted, so stay null
    assert out.to_pylist() == [
        {"id": 1, "region": "emea", "day": None},
        {"id": 2, "region": "emea", "day": None},
    ]
    filtered = read_data_file(
        IO, f, table_schema, spec=spec, row_filter=bind(table_schema, equal("region", "apac"))
    )
    assert filtered.num_rows == 0


def test_files_without_field_ids_use_the_name_mapping(tmp_path: Path) -> None:
    path = str(tmp_path / "plain.parquet")
    pq.write_table(
        pa.table(
            {
                "record_id": pa.array([1, 2], pa.int32()),
                "loc": [{"lat": 1.5, "extra": 1}, None],
                "unknown": ["u", "v"],
            }
        ),
        path,
    )
    schema = Schema(
        NestedField(1, "id", LONG),
        NestedField(2, "location", StructType(NestedField(3, "latitude", DOUBLE))),
        NestedField(4, "note", STRING),
    )
    mapping = parse_name_mapping(
        '[{"field-id": 1, "names": ["id", "record_id"]},'
        ' {"field-id": 2, "names": ["loc"], "fields": [{"field-id": 3, "names": ["lat"]}]},'
        ' {"field-id": 4, "names": ["note"]}]'
    )
    f = DataFile(path, FileFormat.PARQUET, (), 2, Path(path).stat().st_size)
    out = read_data_file(IO, f, schema, name_mapping=mapping)
    assert out.to_pylist() == [
        {"id": 1, "location": {"latitude": 1.5}, "note": None},
        {"id": 2, "location": None, "note": None},
    ]
    with pytest.raises(SchemaError, match="name-mapping"):
        read_data_file(IO, f, schema)
    # a mapping made from the table schema finds only current names
    out = read_data_file(IO, f, schema, name_mapping=create_name_mapping(schema))
    assert out.column("id").to_pylist() == [None, None]


def test_reads_plain_string_and_uuid_extension_files(tmp_path: Path) -> None:
    path = str(tmp_path / "ext.parquet")
    meta = lambda i: {b"PARQUET:field_id": str(i).encode()}  # noqa: E731
    arrow = pa.schema(
        [
            pa.field("s", pa.string(), metadata=meta(1)),
            pa.field("u", pa.uuid(), metadata=meta(2)),
            pa.field("fx", pa.binary(4), metadata=meta(3)),
        ]
    )
    pq.write_table(
        pa.table(
            [
                pa.array(["a"]),
                pa.array([b"0123456789abcdef"], pa.uuid()),
                pa.array([b"wxyz"], pa.binary(4)),
            ],
            schema=arrow,
        ),
        path,
    )
    schema = Schema(
        NestedField(1, "s", STRING), NestedField(2, "u", UUID), NestedField(3, "fx", FixedType(4))
    )
    f = DataFile(path, FileFormat.PARQUET, (), 1, 0)
    out = read_data_file(IO, f, schema)
    assert out.schema == to_arrow_schema(schema)
    assert out.to_pylist() == [{"s": "a", "u": b"0123456789abcdef", "fx": b"wxyz"}]


SIMPLE = Schema(
    NestedField(1, "id", LONG, True),
    NestedField(2, "v", STRING),
    NestedField(3, "s", StructType(NestedField(4, "n", INT))),
)


def simple_data(n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "v": [None if i % 10 == 0 else f"v{i % 7}" for i in range(n)],
            "s": [{"n": i % 5} for i in range(n)],
        }
    )


def many_row_groups(tmp_path: Path, n: int = 10_000) -> DataFile:
    f = write_one(
        tmp_path, SIMPLE, simple_data(n), props={"write.parquet.row-group-size-bytes": "8000"}
    )
    assert pq.read_metadata(f.file_path).num_row_groups >= 3
    return f


def expected(n: int, expr: BooleanExpression) -> list[int]:
    from neve.expressions.evaluator import evaluator

    test = evaluator(SIMPLE, expr)
    rows = simple_data(n).to_pylist()
    return [r["id"] for r in rows if test((r["id"], r["v"], (r["s"]["n"],)))]


@pytest.mark.parametrize(
    "expr",
    [
        greater_than_or_equal("id", 9_000),
        and_(greater_than("id", 100), less_than("id", 120)),
        equal("v", "v3"),
        not_equal("v", "v3"),
        is_null("v"),
        or_(equal("s.n", 4), less_than("id", 3)),
        equal("id", -1),
    ],
)
def test_row_filter_is_exact(tmp_path: Path, expr: BooleanExpression) -> None:
    f = many_row_groups(tmp_path)
    bound = bind(SIMPLE, expr)
    out = read_data_file(IO, f, SIMPLE.select(["id"]), table_schema=SIMPLE, row_filter=bound)
    assert out.column_names == ["id"]
    assert out.column("id").to_pylist() == expected(10_000, expr)


def test_row_groups_are_pruned_by_statistics(tmp_path: Path) -> None:
    f = many_row_groups(tmp_path)
    fragment, file_schema = _open(IO, f.file_path, None)
    total = fragment.metadata.num_row_groups
    expr = rewrite_not(bind(SIMPLE, greater_than_or_equal("id", 9_990)))
    assert _row_groups(fragment, expr, file_schema, {}) == [total - 1]
    assert _row_groups(fragment, rewrite_not(bind(SIMPLE, equal("id", -5))), file_schema, {}) == []


def test_filter_on_renamed_column_is_pushed_by_id(tmp_path: Path) -> None:
    f = many_row_groups(tmp_path)
    renamed = Schema(
        NestedField(1, "key", LONG, True),
        NestedField(2, "value", STRING),
        NestedField(3, "s", StructType(NestedField(4, "num", INT))),
    )
    expr = bind(renamed, and_(greater_than_or_equal("key", 9_995), equal("s.num", 0)))
    fragment, file_schema = _open(IO, f.file_path, None)
    assert len(_row_groups(fragment, rewrite_not(expr), file_schema, {})) == 1
    out = read_data_file(IO, f, renamed.select(["value"]), table_schema=renamed, row_filter=expr)
    assert out.column_names == ["value"]
    assert out.num_rows == 1  # id 9995


def test_filter_on_column_added_later(tmp_path: Path) -> None:
    f = write_one(tmp_path, SIMPLE, simple_data(10))
    evolved = Schema(*SIMPLE.fields, NestedField(5, "w", INT, initial_default=5))
    hit = read_data_file(IO, f, evolved, row_filter=bind(evolved, equal("w", 5)))
    assert hit.num_rows == 10 and set(hit.column("w").to_pylist()) == {5}
    miss = read_data_file(IO, f, evolved, row_filter=bind(evolved, greater_than("w", 5)))
    assert miss.num_rows == 0
    nulls = Schema(*SIMPLE.fields, NestedField(5, "w", INT))
    assert read_data_file(IO, f, nulls, row_filter=bind(nulls, is_null("w"))).num_rows == 10


def test_batches_are_bounded_and_ordered(tmp_path: Path) -> None:
    f = many_row_groups(tmp_path, 5_000)
    batches = list(iter_data_file_batches(IO, f, SIMPLE, batch_size=700))
    assert all(b.num_rows <= 700 for b in batches)
    ids = [i for b in batches for i in b.column("id").to_pylist()]
    assert ids == list(range(5_000))


def test_projection_without_any_file_column(tmp_path: Path) -> None:
    f = write_one(tmp_path, SIMPLE, simple_data(4))
    only_new = Schema(NestedField(30, "fresh", STRING, initial_default="d"))
    out = read_data_file(IO, f, only_new)
    assert out.to_pylist() == [{"fresh": "d"}] * 4


def test_splits_at_split_offsets_read_each_row_once(tmp_path: Path) -> None:
    f = many_row_groups(tmp_path)
    offsets = list(f.split_offsets or ())
    assert len(offsets) >= 3
    ends = [*offsets[1:], f.file_size_in_bytes]
    parts = [
        read_data_file(IO, f, SIMPLE.select(["id"]), split=(start, end - start))
        for start, end in zip(offsets, ends, strict=True)
    ]
    assert all(p.num_rows > 0 for p in parts)
    assert [i for p in parts for i in p.column("id").to_pylist()] == list(range(10_000))
    # two splits covering two row groups, then nothing past the last row group
    both = read_data_file(IO, f, SIMPLE, split=(offsets[0], offsets[2] - offsets[0]))
    assert both.num_rows == parts[0].num_rows + parts[1].num_rows
    assert read_data_file(IO, f, SIMPLE, split=(f.file_size_in_bytes, 10)).num_rows == 0


def test_missing_data_file_is_an_io_error(tmp_path: Path) -> None:
    from neve.errors import NeveIOError

    f = DataFile(str(tmp_path / "nope.parquet"), FileFormat.PARQUET, (), 1, 1)
    with pytest.raises(NeveIOError, match=r"nope\.parquet"):
        read_data_file(IO, f, SIMPLE)
