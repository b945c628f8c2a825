"""The ``neve`` PySpark data source: reads equal neve's own scans (filters, columns, time
travel), Spark-side filters never leak between scans of one DataFrame, writes read back
identically through neve and pyiceberg, and failed writes leave neither commits nor
files behind."""

from __future__ import annotations

import datetime as dt
import os
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import neve
from neve.errors import DataSchemaMismatchError, ValidationError
from neve.planning.tasks import group_tasks
from neve.spark.datasource import (
    WRITE_ID_PROPERTY,
    NeveCommitMessage,
    NeveDataSource,
    check_write_schema,
    register_datasource,
)
from neve.table.table import Table

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("x", pa.int32()),
        pa.field("cat", pa.string()),
        pa.field("price", pa.decimal128(9, 2)),
        pa.field("d", pa.date32()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
    ]
)


def rows(start: int, n: int) -> pa.Table:
    ids = range(start, start + n)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "x": pa.array([None if i % 7 == 3 else i % 10 for i in ids], pa.int32()),
            "cat": [["a", "b", "c"][i % 3] for i in ids],
            "price": [Decimal(i) / Decimal(4) for i in ids],
            "d": [dt.date(2024, 1, 1) + dt.timedelta(days=i % 40) for i in ids],
            "ts": [dt.datetime(2024, 5, 1, tzinfo=UTC) + dt.timedelta(hours=5 * i) for i in ids],
        },
        schema=SCHEMA,
    )


class Env:
    def __init__(self, spark: SparkSession, tmp_path: Path) -> None:
        self.spark = spark
        self.db = tmp_path / "catalog.db"
        self.wh = tmp_path / "wh"
        self.uri = f"sqlite:///{self.db}"
        self.catalog = neve.connect(self.uri, self.wh)
        self.catalog.create_namespace("db")

    @property
    def options(self) -> dict[str, str]:
        return {"uri": self.uri, "warehouse": str(self.wh)}

    def table(self, name: str = "db.events", partition_by: list[str] | None = None) -> Table:
        return self.catalog.create_table(name, SCHEMA, partition_by=partition_by or ["cat"])

    def read(self, name: str = "db.events", **options: Any) -> DataFrame:
        return (
            self.spark.read.format("neve")
            .options(**self.options)
            .options(**{k: str(v) for k, v in options.items()})
            .load(name)
        )

    def write(self, df: DataFrame, mode: str, name: str = "db.events", **options: str) -> None:
        df.write.format("neve").options(**self.options).options(**options).mode(mode).save(name)

    def data_files(self, name: str = "db.events") -> list[str]:
        data = self.wh / Path(*name.split(".")) / "data"
        return sorted(str(p) for p in data.rglob("*.parquet")) if data.exists() else []


@pytest.fixture
def env(spark: SparkSession, tmp_path: Path) -> Env:
    register_datasource(spark)
    return Env(spark, tmp_path)


def spark_rows(df: DataFrame) -> list[dict[str, Any]]:
    return sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"])


def neve_rows(t: pa.Table) -> list[dict[str, Any]]:
    """neve's rows as Spark returns them: timestamptz as naive UTC datetimes."""
    out = []
    for r in t.to_pylist():
        out.append(
            {
                k: v.astimezone(UTC).replace(tzinfo=None) if isinstance(v, dt.datetime) else v
                for k, v in r.items()
            }
        )
    return sorted(out, key=lambda r: r["id"])


def pyiceberg_rows(env: Env, name: str = "db.events") -> list[dict[str, Any]]:
    cat = PyIcebergSqlCatalog("neve", uri=env.uri, warehouse=f"file://{env.wh}")
    return neve_rows(cat.load_table(name).scan().to_arrow())


# -- reading -------------------------------------------------------------------------------


def test_reads_equal_neve_scans_with_filters_columns_and_time_travel(env: Env) -> None:
    t = env.table()
    t.append(rows(0, 30))
    first = t.current_snapshot()
    assert first is not None
    t.create_tag("v1", first.snapshot_id)
    time.sleep(0.01)
    t.append(rows(30, 25))
    t.delete("id < 5")
    assert t.scan().count() == 50

    # the rows each read must return, worked out from the data written
    now = [r for r in rows(0, 55).to_pylist() if r["id"] >= 5]
    then = rows(0, 30).to_pylist()
    cases: list[tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]] = [
        ({}, {}, now),
        (
            {"filter": "x > 5 and cat <> 'b'"},
            {"filter": "x > 5 and cat <> 'b'"},
            [r for r in now if r["x"] is not None and r["x"] > 5 and r["cat"] != "b"],
        ),
        ({"columns": "cat, id"}, {"columns": ["cat", "id"]}, now),
        (
            {"filter": "price >= 7", "columns": "id"},
            {"filter": "price >= 7", "columns": ["id"]},
            [r for r in now if r["price"] >= 7],
        ),
        ({"snapshot-id": first.snapshot_id}, {"snapshot_id": first.snapshot_id}, then),
        ({"as-of": first.timestamp_ms}, {"as_of": first.timestamp_ms}, then),
        (
            {"ref": "v1", "filter": "cat = 'a'"},
            {"ref": "v1", "filter": "cat = 'a'"},
            [r for r in then if r["cat"] == "a"],
        ),
    ]
    for options, scan_kwargs, source in cases:
        df = env.read(**options)
        expected = t.scan(**scan_kwargs)
        assert df.columns == expected.projected_schema().column_names, options
        got = spark_rows(df)
        want = neve_rows(expected.to_arrow())
        assert got == want, options
        assert [r["id"] for r in want] == sorted(r["id"] for r in source), options


def test_one_dataframe_scanned_again_with_other_spark_filters_sees_all_rows(env: Env) -> None:
    t = env.table()
    t.append(rows(0, 40))
    all_rows = neve_rows(t.scan().to_arrow())
    df = env.read()
    assert df.filter("x > 5").count() == sum(1 for r in all_rows if (r["x"] or -1) > 5)
    assert df.filter("x <= 2").count() == sum(
        1 for r in all_rows if r["x"] is not None and r["x"] <= 2
    )
    assert df.filter(F.col("cat") == "a").count() == sum(1 for r in all_rows if r["cat"] == "a")
    assert df.count() == 40
    assert spark_rows(df) == all_rows

    # the filter option and Spark filters combine; the option is not lost either
    filtered = env.read(filter="cat = 'b'")
    assert filtered.filter("x > 4").count() == sum(
        1 for r in all_rows if r["cat"] == "b" and (r["x"] or -1) > 4
    )
    assert filtered.count() == sum(1 for r in all_rows if r["cat"] == "b")


def test_a_loaded_dataframe_keeps_reading_the_version_it_was_loaded_at(env: Env) -> None:
    t = env.table()
    t.append(rows(0, 10))
    df = env.read()
    assert df.count() == 10
    t.append(rows(10, 5))
    assert df.count() == 10
    assert env.read().count() == 15


def test_files_and_splits_are_spread_over_read_partitions(env: Env) -> None:
    t = env.table(partition_by=["cat"])
    t.append(rows(0, 30))  # three partitions: three files
    assert env.read().rdd.getNumPartitions() == 3
    one = env.read(partitions=1)
    assert one.rdd.getNumPartitions() == 1
    assert spark_rows(one) == neve_rows(t.scan().to_arrow())

    # one file of many row groups, planned as many splits: each row read once
    split = env.catalog.create_table(
        "db.split",
        SCHEMA,
        properties={
            "write.parquet.row-group-size-bytes": "2000",
            "read.split.target-size": "1",
        },
    )
    split.append(rows(0, 400))
    tasks = split.scan().plan_files()
    assert len({x.file.file_path for x in tasks}) == 1 and len(tasks) >= 4
    groups = group_tasks(tasks, 3)
    assert len(groups) == 3
    assert sorted(x.start for g in groups for x in g) == sorted(x.start for x in tasks)
    df = env.read("db.split", partitions=3)
    assert df.rdd.getNumPartitions() == 3
    assert spark_rows(df) == neve_rows(split.scan().to_arrow())


def test_empty_table_reads_as_no_rows(env: Env) -> None:
    env.table()
    df = env.read()
    assert df.count() == 0
    assert df.columns == SCHEMA.names


def test_bad_read_options_fail_with_neve_messages(env: Env) -> None:
    env.table().append(rows(0, 3))
    with pytest.raises(Exception, match=r"ExpressionError|nope"):
        env.read(filter="nope > 1").count()
    with pytest.raises(Exception, match="unknown option 'snapshot'"):
        env.read(snapshot="1").count()
    with pytest.raises(Exception, match="NoSuchTableError"):
        env.read("db.missing").count()
    opts = {**env.options, "path": "db.events", "sanpshot-id": "1"}
    with pytest.raises(ValidationError, match="unknown option"):
        NeveDataSource(opts).schema()


# -- writing -------------------------------------------------------------------------------


def test_append_and_overwrite_read_back_through_neve_and_pyiceberg(env: Env) -> None:
    t = env.table(partition_by=["cat", "day(ts)"])
    first = env.spark.createDataFrame(rows(0, 20).to_pylist(), schema=env.read().schema)
    env.write(first, "append")
    expected = neve_rows(rows(0, 20))
    assert neve_rows(t.refresh().scan().to_arrow()) == expected
    assert pyiceberg_rows(env) == expected
    snap = t.current_snapshot()
    assert snap is not None and snap.operation.value == "append"
    assert WRITE_ID_PROPERTY in snap.summary

    env.write(env.spark.createDataFrame(rows(20, 10).to_pylist(), env.read().schema), "append")
    expected = neve_rows(rows(0, 30))
    assert neve_rows(t.refresh().scan().to_arrow()) == expected
    assert spark_rows(env.read()) == expected

    replacement = env.spark.createDataFrame(rows(100, 7).to_pylist(), env.read().schema)
    env.write(replacement, "overwrite")
    expected = neve_rows(rows(100, 7))
    assert neve_rows(t.refresh().scan().to_arrow()) == expected
    assert pyiceberg_rows(env) == expected
    assert spark_rows(env.read()) == expected
    assert len(t.snapshots()) == 3


def test_dynamic_overwrite_replaces_only_touched_partitions(env: Env) -> None:
    t = env.table(partition_by=["cat"])
    t.append(rows(0, 9))  # cats a, b, c
    new = env.read().filter("cat = 'a'").withColumn("id", F.col("id") + 1000)
    env.write(new, "overwrite", **{"overwrite-mode": "dynamic"})
    got = neve_rows(t.refresh().scan().to_arrow())
    assert sorted(r["id"] for r in got) == [1, 2, 4, 5, 7, 8, 1000, 1003, 1006]
    assert pyiceberg_rows(env) == got


def test_narrower_types_are_widened_and_missing_optional_columns_are_null(env: Env) -> None:
    t = env.table()
    df = env.spark.createDataFrame(
        [(1, 2, "a"), (2, None, "b")],
        T.StructType(
            [
                T.StructField("id", T.IntegerType()),  # int into long
                T.StructField("x", T.ShortType()),  # short into int
                T.StructField("cat", T.StringType()),
            ]
        ),
    )
    env.write(df, "append")
    got = t.refresh().scan().to_arrow()
    assert got.schema.field("id").type == pa.int64()
    assert [(r["id"], r["x"], r["cat"], r["ts"]) for r in neve_rows(got)] == [
        (1, 2, "a", None),
        (2, None, "b", None),
    ]


def test_a_dataframe_that_does_not_fit_fails_with_a_typed_error_and_changes_nothing(
    env: Env,
) -> None:
    t = env.table()
    t.append(rows(0, 5))
    before = t.metadata_location
    files = env.data_files()
    bad = env.spark.createDataFrame([(1, "x", 2.5)], "id long, cat string, x double")
    # typed, in-process: what the data source raises while planning the write
    with pytest.raises(DataSchemaMismatchError, match=r"'x' is double, which cannot be written"):
        check_write_schema(bad.schema, t.schema())
    with pytest.raises(DataSchemaMismatchError, match="'extra' is not a column of the table"):
        NeveDataSource({**env.options, "path": "db.events"}).writer(
            env.spark.createDataFrame([(1, 2)], "id long, extra int").schema, False
        )
    with pytest.raises(DataSchemaMismatchError, match="required column 'id' is missing"):
        check_write_schema(T.StructType([T.StructField("x", T.IntegerType())]), t.schema())
    # through Spark: the same error class and message, and nothing was written
    with pytest.raises(Exception, match="DataSchemaMismatchError") as info:
        env.write(bad, "append")
    assert "'x' is double, which cannot be written to the table's int" in str(info.value)
    with pytest.raises(Exception, match="DataSchemaMismatchError"):
        env.write(bad, "overwrite")
    assert t.refresh().metadata_location == before
    assert env.data_files() == files


def _slow_null_after(seconds: float) -> Any:
    """A UDF giving ``None`` for id 0 after a pause, ``id`` otherwise."""

    @F.udf("long", useArrow=False)
    def f(i: int) -> int | None:
        if i == 0:
            time.sleep(seconds)  # let the other write task finish first
            return None
        return i

    return f


def test_a_failed_write_job_leaves_no_files_and_no_commit(env: Env) -> None:
    t = env.table(partition_by=["cat"])
    t.append(rows(0, 6))
    before = t.metadata_location
    files = env.data_files()
    # two tasks: the second feeds a null into the required column "id" and fails,
    # after the first one wrote its files; the job's abort must remove them
    data = rows(1, 5).to_pylist() + rows(0, 1).to_pylist()  # id 0 in the second slice
    df = env.spark.createDataFrame(data, env.read().schema)
    assert df.rdd.getNumPartitions() == 2
    df = df.withColumn("id", _slow_null_after(3.0)(F.col("id")))
    with pytest.raises(Exception, match=r"DataSchemaMismatchError|required"):
        env.write(df, "append")
    assert t.refresh().metadata_location == before
    assert env.data_files() == files


def test_a_failing_write_task_deletes_what_it_wrote(env: Env) -> None:
    """Executor side, in-process: files written before the failure are removed."""
    import neve.spark.datasource as ds

    t = env.table(partition_by=["cat"])
    source = NeveDataSource({**env.options, "path": "db.events"})
    writer = source.writer(env.read().schema, False)
    good = rows(0, 6).to_batches()[0]
    bad = rows(6, 3).set_column(0, "id", pa.array([None, 7, 8], pa.int64())).to_batches()[0]
    old = ds.WRITE_BUFFER_BYTES
    ds.WRITE_BUFFER_BYTES = 1  # write each batch out at once
    try:
        with pytest.raises(DataSchemaMismatchError):
            writer.write(iter([good, bad]))
        assert env.data_files() == []
        message = writer.write(iter([good]))
    finally:
        ds.WRITE_BUFFER_BYTES = old
    assert isinstance(message, NeveCommitMessage) and len(message.files) == 3
    assert len(env.data_files()) == 3
    writer.abort([message, None])  # never committed: its files go
    assert env.data_files() == []
    message = writer.write(iter([good]))
    writer.commit([message])
    writer.abort([message])  # the commit landed: abort must keep the files
    assert len(env.data_files()) == 3
    assert t.refresh().scan().count() == 6


def test_options_may_be_camel_or_kebab_case_and_the_table_an_option(env: Env) -> None:
    t = env.table()
    t.append(rows(0, 10))
    t.create_branch("dev")
    df = (
        env.spark.read.format("neve")
        .option("URI", env.uri)
        .option("Warehouse", str(env.wh))
        .option("table", "db.events")
        .option("caseSensitive", "false")
        .option("FILTER", "X >= 8")
        .load()
    )
    assert sorted(r.id for r in df.collect()) == [8, 9]
    env.write(env.read(), "append", branch="dev")
    assert t.refresh().scan().count() == 10
    assert t.scan(ref="dev").count() == 20
    assert os.path.exists(env.db)


NESTED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
        pa.field("l", pa.list_(pa.int64())),
        pa.field("m", pa.map_(pa.string(), pa.float64())),
        pa.field("f", pa.binary(3)),
    ]
)


def _plain(value: Any) -> Any:
    """Spark Rows and pyarrow map lists as plain dicts, for comparing."""
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        return dict(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return value


def test_nested_and_fixed_columns_read_and_write(env: Env) -> None:
    t = env.catalog.create_table("db.nested", NESTED)
    data = pa.table(
        {
            "id": [1, 2, 3],
            "s": [{"a": 1, "b": "x"}, None, {"a": None, "b": "z"}],
            "l": [[1, 2], [], None],
            "m": [[("k", 1.5)], None, [("a", 0.0), ("b", -1.0)]],
            "f": [b"abc", None, b"xyz"],
        },
        schema=NESTED,
    )
    t.append(data)
    want = [{k: _plain(v) for k, v in r.items()} for r in data.to_pylist()]
    df = env.read("db.nested")
    got = sorted(({k: _plain(v) for k, v in r.asDict().items()} for r in df.collect()), key=str)
    assert got == sorted(want, key=str)
    env.write(df, "append", name="db.nested")
    back = t.refresh().scan().to_arrow()
    assert back.num_rows == 6
    assert sorted(map(str, back.to_pylist())) == sorted(map(str, data.to_pylist() * 2))


def test_a_commit_that_fails_leaves_no_files(env: Env) -> None:
    t = env.table()
    t.append(rows(0, 4))
    t.create_tag("release")
    before, files = t.metadata_location, env.data_files()
    # the tasks write their files; the commit to a tag is refused; Spark then aborts
    with pytest.raises(Exception, match="release"):
        env.write(env.read(), "append", branch="release")
    assert t.refresh().metadata_location == before
    assert env.data_files() == files
