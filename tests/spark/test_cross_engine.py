"""Cross-engine reads: a table written by neve's Spark writer reads the same through
neve's pyarrow scan, neve's Spark reader, the ``neve`` DataSource and pyiceberg, with
filters whose pruning depends on bucket, day and truncate partitions; a table written
and evolved by pyiceberg reads the same through neve's Spark reader."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema as PySchema
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.types import (
    DecimalType,
    DoubleType,
    LongType,
    NestedField,
    StringType,
    TimestamptzType,
)
from pyspark.sql import DataFrame, SparkSession

import neve
from neve.spark import read, register_datasource, write

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("amount", pa.decimal128(10, 2)),
        pa.field("score", pa.float64()),
    ]
)


def rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": ids,
            "name": [None if i % 7 == 0 else f"{'abcde'[i % 5]}{i % 3}-name" for i in ids],
            "ts": [
                dt.datetime(1969, 12, 29, 22, tzinfo=UTC) + dt.timedelta(hours=5 * i) for i in ids
            ],
            "amount": [Decimal(i * 7 % 1000) / 4 for i in ids],
            "score": [math.nan if i % 10 == 3 else i / 2 for i in ids],
        },
        schema=SCHEMA,
    )


def canon(t: pa.Table | DataFrame) -> list[tuple[Any, ...]]:
    table = t.toArrow() if isinstance(t, DataFrame) else t
    out = []
    for r in table.to_pylist():
        out.append(
            tuple(
                "nan" if isinstance(v, float) and math.isnan(v) else v for _, v in sorted(r.items())
            )
        )
    return sorted(out, key=repr)


FILTERS = [
    None,
    "id = 17",  # bucket(4, id)
    "id in (3, 40, 77)",
    "ts >= '1970-01-02T00:00:00+00:00' and ts < '1970-01-04T00:00:00+00:00'",  # day(ts)
    "ts < '1970-01-01T00:00:00+00:00'",  # pre-epoch days
    "name = 'b1-name'",  # truncate(2, name)
    "name like 'c%'",
    "name is null or score is nan",
]


@pytest.fixture
def env(tmp_path: Path) -> tuple[str, Path]:
    return f"sqlite:///{tmp_path / 'cat.db'}", tmp_path / "wh"


def test_spark_written_table_reads_the_same_through_every_engine(
    spark: SparkSession, env: tuple[str, Path]
) -> None:
    uri, wh = env
    cat = neve.connect(uri, warehouse=str(wh))
    cat.create_namespace("db")
    t = cat.create_table(
        "db.events", SCHEMA, partition_by=["bucket(4, id)", "day(ts)", "truncate(2, name)"]
    )
    data = rows(0, 120)
    write(spark.createDataFrame(data), t)
    write(spark.createDataFrame(rows(120, 30)), t)
    register_datasource(spark)
    theirs = PyIcebergSqlCatalog("neve", uri=uri, warehouse=f"file://{wh}").load_table("db.events")
    all_files = len(t.scan().plan_files())

    for flt in FILTERS:
        expected = canon(t.scan(filter=flt).to_arrow())
        assert canon(read(spark, t, filter=flt)) == expected, flt
        reader = spark.read.format("neve").option("uri", uri).option("warehouse", str(wh))
        if flt is not None:
            reader = reader.option("filter", flt)
        assert canon(reader.load("db.events")) == expected, flt
        assert canon(theirs.scan(row_filter=flt or "true").to_arrow()) == expected, flt
        if flt is not None and not flt.startswith("name is null"):
            ours = {task.file.file_path for task in t.scan(filter=flt).plan_files()}
            pyice = {task.file.file_path for task in theirs.scan(row_filter=flt).plan_files()}
            assert ours == pyice, flt  # both engines prune to the same files
            assert len(ours) < all_files, flt

    # the whole table, and its first snapshot by time travel, hold exactly the rows written
    assert canon(read(spark, t)) == canon(pa.concat_tables([data, rows(120, 30)]))
    first = t.snapshots()[0].snapshot_id
    assert canon(read(spark, t, snapshot_id=first)) == canon(data)


def test_pyiceberg_written_and_evolved_table_reads_the_same_through_neve_spark(
    spark: SparkSession, env: tuple[str, Path]
) -> None:
    uri, wh = env
    pcat = PyIcebergSqlCatalog("neve", uri=uri, warehouse=f"file://{wh}")
    pcat.create_namespace("db")
    schema = PySchema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType()),
        NestedField(3, "ts", TimestamptzType()),
        NestedField(4, "amount", DecimalType(10, 2)),
        NestedField(5, "score", DoubleType()),
    )
    spec = PartitionSpec(
        PartitionField(source_id=3, field_id=1000, transform=DayTransform(), name="ts_day"),
        PartitionField(source_id=2, field_id=1001, transform=IdentityTransform(), name="name"),
    )
    ptable = pcat.create_table("db.theirs", schema=schema, partition_spec=spec)
    ptable.append(rows(0, 60))
    ptable.append(rows(60, 40))
    ptable.delete("id < 10")
    with ptable.update_schema() as u:
        u.rename_column("score", "points")
        u.add_column("note", StringType())
    evolved = rows(100, 20).rename_columns(["id", "name", "ts", "amount", "points"])
    evolved = evolved.append_column("note", pa.array([f"n{i}" for i in range(20)]))
    ptable.append(evolved)
    ptable = pcat.load_table("db.theirs")

    t = neve.connect(uri, warehouse=str(wh)).load_table("db.theirs")
    snapshots = [s.snapshot_id for s in ptable.snapshots()]
    assert len(snapshots) == len(t.snapshots())
    for flt in [*FILTERS[:6], "points > 20 and note is null", "note = 'n3'"]:
        pyflt = (flt or "true").replace("score", "points")
        expected = canon(ptable.scan(row_filter=pyflt).to_arrow())
        assert canon(read(spark, t, filter=pyflt)) == expected, flt
        assert canon(t.scan(filter=pyflt).to_arrow()) == expected, flt
    for sid in snapshots:
        expected = canon(ptable.scan(snapshot_id=sid).to_arrow())
        assert canon(read(spark, t, snapshot_id=sid)) == expected, sid
