"""The Spark write path: what write() commits reads back identically through neve and
pyiceberg, partition values and metrics equal the pyarrow writer's, every mode works,
and failures (validation, failed jobs, lost commits) leave neither commits nor files."""

from __future__ import annotations

import datetime as dt
import math
import os
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from neve.catalog import Catalog, SqlCatalog
from neve.errors import CommitConflictError, DataSchemaMismatchError, ValidationError
from neve.spark.commands import write, write_files
from neve.spec.values import from_bytes, unscaled_to_decimal
from neve.table.table import Table

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("cat", pa.string()),
        pa.field("d", pa.date32()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("ts_day", pa.timestamp("us")),
        pa.field("small", pa.int32()),
        pa.field("price", pa.decimal128(10, 2)),
        pa.field("score", pa.float64()),
    ]
)
PARTITIONS = [
    "cat",
    "bucket(8, id)",
    "truncate(3, name)",
    "year(d)",
    "hour(ts)",
    "day(ts_day)",
    "truncate(10, small)",
    "void(price)",
]
CATS = ["a", "b/c", "x=y", "sp ace", "中文😀", "", None, "%2F"]


def rows(start: int, n: int) -> pa.Table:
    ids = range(start, start + n)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": [None if i % 11 == 0 else f"nm{i % 13}-é" for i in ids],
            "cat": [CATS[i % len(CATS)] for i in ids],
            "d": [dt.date(1969 + i % 3, 1 + i % 12, 1 + i % 28) for i in ids],
            "ts": [dt.datetime(1969, 12, 31, 20, tzinfo=UTC) + dt.timedelta(hours=i) for i in ids],
            "ts_day": [dt.datetime(1969, 12, 30) + dt.timedelta(hours=7 * i) for i in ids],
            "small": pa.array([i % 100 - 50 for i in ids], pa.int32()),
            "price": [Decimal(i) / Decimal(4) for i in ids],
            "score": [float("nan") if i % 9 == 0 else (-0.0 if i % 9 == 1 else i / 3) for i in ids],
        },
        schema=SCHEMA,
    )


def canon(t: pa.Table) -> list[dict[str, Any]]:
    out = []
    for r in t.to_pylist():
        s = r.get("score")
        if isinstance(s, float) and math.isnan(s):
            r["score"] = "nan"
        out.append(r)
    return sorted(out, key=lambda r: r["id"])


@pytest.fixture
def env(sqlite_catalog: SqlCatalog) -> tuple[Catalog, Path, Path]:
    """The shared SQLite catalog, its database file and its warehouse folder."""
    db = Path(sqlite_catalog.uri.removeprefix("sqlite:///"))
    return sqlite_catalog, db, Path(sqlite_catalog.warehouse)


def files_under(path: str | Path) -> set[str]:
    out = set()
    for root, _dirs, names in os.walk(path):
        out.update(os.path.join(root, n) for n in names)
    return out


def data_files(t: Table) -> list[Any]:
    return [task.file for task in t.scan().plan_files()]


def to_df(spark: SparkSession, table: pa.Table) -> DataFrame:
    df = spark.createDataFrame(table)
    for f in table.schema:  # Spark reads zone-less Arrow timestamps as instants
        if pa.types.is_timestamp(f.type) and f.type.tz is None:
            df = df.withColumn(f.name, F.col(f.name).cast("timestamp_ntz"))
    return df


def partition_counts(t: Table) -> Counter[tuple[Any, ...]]:
    c: Counter[tuple[Any, ...]] = Counter()
    for f in data_files(t):
        c[f.partition] += f.record_count
    return c


# -- round trips ------------------------------------------------------------------------


def test_append_reads_back_through_neve_and_pyiceberg(
    spark: SparkSession, env: tuple[Catalog, Path, Path]
) -> None:
    cat, db, wh = env
    t = cat.create_table("db.sp", SCHEMA, partition_by=PARTITIONS)
    twin = cat.create_table("db.twin", SCHEMA, partition_by=PARTITIONS)
    data = rows(0, 40)
    write(to_df(spark, data), t)
    twin.append(data)

    assert canon(t.scan().to_arrow()) == canon(data)
    # partition values equal what neve's pyarrow writer computes for the same rows
    assert partition_counts(t) == partition_counts(twin)
    assert t.current_snapshot().operation.value == "append"  # type: ignore[union-attr]

    ptable = PyIcebergSqlCatalog("neve", uri=f"sqlite:///{db}", warehouse=f"file://{wh}")
    theirs = ptable.load_table("db.sp")
    assert canon(theirs.scan().to_arrow()) == canon(data)
    # pruning by bucket, truncate, day, hour and identity partitions keeps exactly the
    # files whose partition can match, in both engines
    for flt, key in [
        ("id = 17", lambda r: r["id"] == 17),
        ("name = 'nm3-é'", lambda r: r["name"] == "nm3-é"),
        ("ts_day >= '1970-01-05T00:00:00'", lambda r: r["ts_day"] >= dt.datetime(1970, 1, 5)),
        ("cat = 'b/c'", lambda r: r["cat"] == "b/c"),
        (
            "ts < '1970-01-01T00:00:00+00:00'",
            lambda r: r["ts"] < dt.datetime(1970, 1, 1, tzinfo=UTC),
        ),
    ]:
        expected = [r for r in canon(data) if key(r)]
        assert canon(t.scan(filter=flt).to_arrow()) == expected, flt
        assert canon(theirs.scan(row_filter=flt).to_arrow()) == expected, flt
        ours = {task.file.file_path for task in t.scan(filter=flt).plan_files()}
        pyice = {task.file.file_path for task in theirs.scan(row_filter=flt).plan_files()}
        assert ours == pyice, flt
        twin_files = twin.scan(filter=flt).plan_files()
        assert Counter(f.file.partition for f in t.scan(filter=flt).plan_files()) == Counter(
            f.file.partition for f in twin_files
        ), flt
        assert len(ours) < len(data_files(t))


def test_metrics_equal_the_data(spark: SparkSession, env: tuple[Catalog, Path, Path]) -> None:
    cat, _, _ = env
    t = cat.create_table("db.m", SCHEMA, partition_by=["bucket(2, id)"])
    data = rows(0, 60)
    write(to_df(spark, data), t)
    schema = t.schema()
    for f in data_files(t):
        got = pq.read_table(f.file_path)
        assert f.record_count == got.num_rows
        assert f.file_size_in_bytes == os.path.getsize(f.file_path)
        ids = got.column("id").to_pylist()
        id_field = schema.find_field("id").field_id
        assert from_bytes(schema.find_type("id"), f.lower_bounds[id_field]) == min(ids)  # type: ignore[arg-type,index]
        assert from_bytes(schema.find_type("id"), f.upper_bounds[id_field]) == max(ids)  # type: ignore[arg-type,index]
        sid = schema.find_field("score").field_id
        scores = got.column("score").to_pylist()
        assert f.nan_value_counts[sid] == sum(1 for s in scores if math.isnan(s))  # type: ignore[index]
        lower = from_bytes(schema.find_type("score"), f.lower_bounds[sid])  # type: ignore[arg-type,index]
        assert lower == min(s for s in scores if not math.isnan(s))
        if any(s == 0.0 and math.copysign(1, s) < 0 for s in scores) and lower == 0:
            assert math.copysign(1, lower) < 0  # -0.0 is the lower bound, not +0.0
        nid = schema.find_field("name").field_id
        assert f.null_value_counts[nid] == got.column("name").null_count  # type: ignore[index]
        assert f.split_offsets


def test_files_carry_field_ids_codec_and_all_columns(
    spark: SparkSession, env: tuple[Catalog, Path, Path]
) -> None:
    cat, _, _ = env
    t = cat.create_table(
        "db.c",
        SCHEMA,
        partition_by=["cat"],
        properties={"write.parquet.compression-codec": "snappy"},
    )
    write(to_df(spark, rows(0, 20)), t)
    for f in data_files(t):
        meta = pq.read_metadata(f.file_path)
        arrow_schema = meta.schema.to_arrow_schema()
        assert arrow_schema.names == SCHEMA.names  # the partition source stays in the file
        ids = [int(fl.metadata[b"PARQUET:field_id"]) for fl in arrow_schema]
        assert ids == [t.schema().find_field(n).field_id for n in SCHEMA.names]
        assert meta.row_group(0).column(0).compression == "SNAPPY"
        assert "/data/" in f.file_path


@pytest.mark.parametrize("path", ["jvm", "public"])
def test_columns_written_as_they_are_keep_their_field_ids(
    spark: SparkSession,
    env: tuple[Catalog, Path, Path],
    tmp_path: Path,
    path: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An unpartitioned table written from a Parquet read whose columns are exactly the
    table's: fitting changes nothing but the field ids, so Spark could drop the
    projection; the files still carry every id. ``jvm`` is the classic sessions' path
    (columns built with Py4J calls alone), ``public`` the one Spark Connect takes."""
    import neve.spark.conform as conform_module

    if path == "public":
        monkeypatch.setattr(conform_module, "_classic_column", lambda: None)
    cat, _, _ = env
    data = rows(0, 30).drop_columns(["ts_day"])
    src = tmp_path / "src.parquet"
    pq.write_table(data, src)
    df = spark.read.parquet(str(src))
    t = cat.create_table(f"db.plain_{path}", data.schema)
    ids = [t.schema().find_field(n).field_id for n in data.schema.names]
    write(df, t)
    t = t.refresh()
    for f in data_files(t):
        arrow_schema = pq.read_metadata(f.file_path).schema.to_arrow_schema()
        assert [int(fl.metadata[b"PARQUET:field_id"]) for fl in arrow_schema] == ids
    assert canon(t.scan().to_arrow().sort_by("id")) == canon(data.sort_by("id"))


def test_nested_and_collection_columns(
    spark: SparkSession, env: tuple[Catalog, Path, Path]
) -> None:
    cat, _, _ = env
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field(
                "s",
                pa.struct([pa.field("a", pa.int64()), pa.field("b", pa.string(), nullable=False)]),
            ),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("m", pa.map_(pa.string(), pa.float64())),
        ]
    )
    t = cat.create_table("db.nested", schema, partition_by=["truncate(2, s.b)"])
    df = spark.createDataFrame(
        [
            (1, (5, "xyz"), ["p", None], {"k": 1.5}),
            (2, None, None, None),
            (3, (None, "ab"), [], {}),
        ],
        # a is int in the DataFrame: widened to long
        "id long, s struct<a:int, b:string>, tags array<string>, m map<string,double>",
    )
    write(df, t)
    got = {r["id"]: r for r in t.scan().to_arrow().to_pylist()}
    assert got[1]["s"] == {"a": 5, "b": "xyz"} and got[1]["tags"] == ["p", None]
    assert got[1]["m"] == [("k", 1.5)]
    assert got[2]["s"] is None and got[2]["tags"] is None
    assert got[3]["s"] == {"a": None, "b": "ab"} and got[3]["tags"] == []
    assert Counter(f.partition for f in data_files(t)) == Counter([("ab",), ("xy",), (None,)])
    # nested field ids are written too
    meta = pq.read_metadata(data_files(t)[0].file_path).schema.to_arrow_schema()
    s_type = meta.field("s").type
    assert [int(s_type.field(i).metadata[b"PARQUET:field_id"]) for i in range(2)] == [
        t.schema().find_field("s.a").field_id,
        t.schema().find_field("s.b").field_id,
    ]


# -- fitting the DataFrame ----------------------------------------------------------------


def test_safe_widening_and_missing_optional_columns(
    spark: SparkSession, env: tuple[Catalog, Path, Path]
) -> None:
    cat, _, _ = env
    t = cat.create_table("db.w", SCHEMA, partition_by=["day(ts_day)"])
    df = spark.createDataFrame(
        [(1, 3, 2.5, Decimal("1.25"), dt.date(2024, 1, 2))],
        "id int, small short, score float, price decimal(5,2), ts_day date",
    )
    write(df, t)
    (r,) = t.scan().to_arrow().to_pylist()
    assert r["id"] == 1 and r["small"] == 3 and r["score"] == 2.5
    assert r["price"] == Decimal("1.25") and r["ts_day"] == dt.datetime(2024, 1, 2)
    assert r["name"] is None and r["ts"] is None
    assert data_files(t)[0].partition == ((dt.date(2024, 1, 2) - dt.date(1970, 1, 1)).days,)


@pytest.mark.parametrize(
    ("ddl", "values", "message"),
    [
        ("id long, nope string", (1, "x"), "'nope' is not a column"),
        ("name string", ("x",), "required column 'id' is missing"),
        ("id long, small long", (1, 2), "'small' is bigint"),
        ("id long, name int", (1, 2), "'name' is int"),
        ("id long, ts timestamp_ntz", (1, dt.datetime(2024, 1, 1)), "cast('timestamp')"),
        ("id long, price decimal(12,2)", (1, Decimal(1)), "'price' is decimal(12,2)"),
        ("id long, ID long", (1, 2), "differ only in case"),
    ],
)
def test_validation_errors_change_nothing(
    spark: SparkSession,
    env: tuple[Catalog, Path, Path],
    ddl: str,
    values: tuple[Any, ...],
    message: str,
) -> None:
    cat, _, wh = env
    t = cat.create_table("db.v", SCHEMA)
    t.append(rows(0, 5))
    before_files, before_md = files_under(wh), t.metadata_location
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        df = spark.createDataFrame([values], ddl)
        with pytest.raises(
            DataSchemaMismatchError, match=message.replace("(", r"\(").replace(")", r"\)")
        ):
            write(df, t)
    finally:
        spark.conf.set("spark.sql.caseSensitive", "false")
    assert t.refresh().metadata_location == before_md
    assert files_under(wh) == before_files


def test_bad_mode_and_filter_rejected(spark: SparkSession, env: tuple[Catalog, Path, Path]) -> None:
    cat, _, _ = env
    t = cat.create_table("db.bad", SCHEMA)
    df = to_df(spark, rows(0, 2))
    with pytest.raises(ValidationError, match="unknown write mode"):
        write(df, t, mode="upsert")
    with pytest.raises(ValidationError, match="only applies"):
        write(df, t, mode="append", filter="id = 1")


# -- failures leave nothing behind ------------------------------------------------------


def _assert_untouched(t: Table, wh: Path, before: set[str], md: str) -> None:
    assert t.refresh().metadata_location == md
    assert files_under(wh) == before
    # and no empty write directories are left either
    for root, dirs, names in os.walk(wh / "db" / t.identifier[-1] / "data"):
        assert names or dirs or root.endswith("data"), root


def test_null_in_required_column_fails_and_leaves_no_files(
    spark: SparkSession, env: tuple[Catalog, Path, Path]
) -> None:
    cat, _, wh = env
    t = cat.create_table("db.nn", SCHEMA, partition_by=["bucket(4, id)"])
    t.append(rows(0, 5))
    before, md = files_under(wh), t.metadata_location
    df = spark.createDataFrame([(1, "a"), (None, "b"), (3, "c")], "id long, name string")
    with pytest.raises(DataSchemaMismatchError, match="'id' is required"):
        write(df, t)
    _assert_untouched(t, wh, before, md)
    assert canon(t.scan().to_arrow()) == canon(rows(0, 5))


def test_null_in_required_nested_field_fails(
    spark: SparkSession, env: tuple[Catalog, Path, Path]
) -> None:
    cat, _, wh = env
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("s", pa.struct([pa.field("b", pa.string(), nullable=False)])),
        ]
    )
    t = cat.create_table("db.nn2", schema)
    ok = spark.createDataFrame([(1, None), (2, ("x",))], "id long, s struct<b:string>")
    write(ok, t)  # a null struct may hide its required field
    before, md = files_under(wh), t.metadata_location
    bad = spark.createDataFrame([(3, (None,))], "id long, s struct<b:string>")
    with pytest.raises(DataSchemaMismatchError, match=r"'s\.b' is required"):
        write(bad, t)
    _assert_untouched(t, wh, before, md)


@pytest.mark.parametrize(("precision", "scale"), [(9, 2), (38, 10)])
def test_decimal_truncated_below_its_type_is_refused_as_on_pyarrow(
    spark: SparkSession, env: tuple[Catalog, Path, Path], precision: int, scale: int
) -> None:
    """truncate[5] rounds decimal(p, s)'s smallest value below it: the Spark write
    refuses it with the pyarrow engine's ValidationError, leaving nothing behind; 38
    digits (beyond Python's default decimal context) round-trip exactly."""
    cat, _, wh = env
    arrow_type = pa.decimal128(precision, scale)
    t = cat.create_table(
        f"db.dec{precision}",
        pa.schema([pa.field("d", arrow_type)]),
        partition_by=["truncate(5, d)"],
    )
    lowest = -((10**precision - 1) // 5) * 5
    kept = [unscaled_to_decimal(u, scale) for u in (lowest, lowest + 1, 17, 10**precision - 1)]
    write(spark.createDataFrame(pa.table({"d": pa.array(kept, arrow_type)})), t)
    before, md = files_under(wh), t.metadata_location
    smallest = pa.table(
        {"d": pa.array([unscaled_to_decimal(-(10**precision - 1), scale)], arrow_type)}
    )
    with pytest.raises(ValidationError, match="rounds a value below the smallest") as on_spark:
        write(spark.createDataFrame(smallest), t)
    with pytest.raises(ValidationError) as on_arrow:
        t.append(smallest)
    assert str(on_spark.value).startswith(str(on_arrow.value))
    _assert_untouched(t, wh, before, md)
    assert sorted(t.scan().to_arrow().column("d").to_pylist()) == sorted(kept)
    for v in kept:
        assert t.scan(filter=f"d = {v}").to_arrow().column("d").to_pylist() == [v]


def test_failing_job_leaves_no_files(spark: SparkSession, env: tuple[Catalog, Path, Path]) -> None:
    cat, _, wh = env
    t = cat.create_table("db.fail", SCHEMA, partition_by=["cat"])
    before, md = files_under(wh), t.metadata_location

    @F.udf(T.StringType(), useArrow=False)
    def boom(v: str) -> str:
        if v == "b/c":
            raise RuntimeError("boom from a UDF")
        return v

    df = to_df(spark, rows(0, 40)).withColumn("cat", boom(F.col("cat")))
    with pytest.raises(Exception, match="boom from a UDF"):
        write(df, t)
    _assert_untouched(t, wh, before, md)
    assert t.current_snapshot() is None


def test_commit_conflict_leaves_no_files(
    spark: SparkSession, env: tuple[Catalog, Path, Path]
) -> None:
    cat, _, wh = env
    t = cat.create_table("db.conf", SCHEMA, partition_by=["cat"])
    t.append(rows(0, 16))
    stale = cat.load_table("db.conf")
    t.append(rows(100, 8))  # a concurrent writer adds rows to every partition
    before, md = files_under(wh), t.metadata_location
    with pytest.raises(CommitConflictError):
        write(to_df(spark, rows(200, 8)), stale, mode="overwrite-partitions")
    _assert_untouched(t, wh, before, md)
    with pytest.raises(CommitConflictError):
        write(to_df(spark, rows(300, 8)), stale, mode="overwrite", filter="cat = 'a'")
    _assert_untouched(t, wh, before, md)


# -- modes, layout ----------------------------------------------------------------------


def test_modes_match_the_pyarrow_operations(
    spark: SparkSession, env: tuple[Catalog, Path, Path]
) -> None:
    cat, _, _ = env
    t = cat.create_table("db.modes", SCHEMA, partition_by=["cat", "bucket(2, id)"])
    twin = cat.create_table("db.modes_twin", SCHEMA, partition_by=["cat", "bucket(2, id)"])
    write(to_df(spark, rows(0, 40)), t)
    twin.append(rows(0, 40))

    write(to_df(spark, rows(100, 10)), t, mode="overwrite-partitions")
    twin.dynamic_partition_overwrite(rows(100, 10))
    assert canon(t.scan().to_arrow()) == canon(twin.scan().to_arrow())

    write(to_df(spark, rows(200, 6)), t, mode="overwrite", filter="id < 20")  # rewrites files
    twin.overwrite(rows(200, 6), filter="id < 20")
    assert canon(t.scan().to_arrow()) == canon(twin.scan().to_arrow())

    write(to_df(spark, rows(300, 5)), t, mode="overwrite", snapshot_properties={"k": "v"})
    assert canon(t.scan().to_arrow()) == canon(rows(300, 5))
    assert t.current_snapshot().summary["k"] == "v"  # type: ignore[union-attr]


def test_target_file_size_and_distribution(
    spark: SparkSession, env: tuple[Catalog, Path, Path]
) -> None:
    cat, _, _ = env
    t = cat.create_table(
        "db.size",
        SCHEMA,
        partition_by=["bucket(2, id)"],
        properties={"write.target-file-size-bytes": "600"},
    )
    write(to_df(spark, rows(0, 200)).repartition(3), t)
    files = data_files(t)
    assert len(files) > 4  # rolled by the estimated row count
    assert sum(f.record_count for f in files) == 200
    assert max(f.record_count for f in files) < 200

    h = cat.create_table("db.hash", SCHEMA, partition_by=["cat"])
    write(to_df(spark, rows(0, 64)).repartition(4), h)  # hash: one task per partition
    assert Counter(f.partition for f in data_files(h)) == Counter({(c,): 1 for c in CATS})

    n = cat.create_table(
        "db.none", SCHEMA, partition_by=["cat"], properties={"write.distribution-mode": "none"}
    )
    write(to_df(spark, rows(0, 64)).repartition(4), n)
    assert len(data_files(n)) > len(CATS)  # every task writes every partition
    assert canon(n.scan().to_arrow()) == canon(rows(0, 64))


def test_sort_order_sorts_within_files(
    spark: SparkSession, env: tuple[Catalog, Path, Path]
) -> None:
    cat, _, _ = env
    t = cat.create_table("db.sorted", SCHEMA, sort_by=["small DESC NULLS LAST", "id"])
    write(to_df(spark, rows(0, 50)).repartition(2), t)
    for f in data_files(t):
        got = pq.read_table(f.file_path).to_pylist()
        keys = [(-r["small"], r["id"]) for r in got]
        assert keys == sorted(keys)
        assert f.sort_order_id == t.metadata.default_sort_order_id


def test_write_files_does_not_commit(spark: SparkSession, env: tuple[Catalog, Path, Path]) -> None:
    cat, _, _ = env
    t = cat.create_table("db.wf", SCHEMA, partition_by=["cat"])
    files = write_files(to_df(spark, rows(0, 16)), t)
    assert t.refresh().current_snapshot() is None
    assert all(os.path.exists(f.file_path) for f in files)
    txn = t.transaction()
    txn.add_files(files)
    txn.commit()
    assert canon(t.scan().to_arrow()) == canon(rows(0, 16))
