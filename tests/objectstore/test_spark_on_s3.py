"""Spark on an object store with no Hadoop S3 jars: PySpark from pip has no filesystem
for ``s3://``, so neve's Spark reads and writes go through neve's FileIO in Spark's
Python tasks (``spark.neve.io=auto``), on both catalog kinds (a SQL catalog with an s3
warehouse, the filesystem catalog on s3):

- the row-level suite of tests/engine (append, delete, update, merge, upsert,
  overwrites, compaction, delete-file merges, expiration with file deletion) through
  the Spark engine, against its model;
- ``neve.spark.read`` / ``write`` equal to the pyarrow engine on the same table, the
  choice visible in the read's plan;
- the changelog on Spark equal to the pyarrow changelog, maintenance on Spark;
- streaming: the source and the sink, and ``upsert_batches``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import neve
import neve.spark as ns
from engine.test_engine_suite import Runner, run_suite
from neve.spark.datasource import register_datasource
from neve.spark.io_mode import io_mode
from s3server import S3Warehouse

pytestmark = pytest.mark.spark

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("grp", pa.int32()),
        pa.field("qty", pa.int64()),
        pa.field("name", pa.string()),
    ]
)


def rows(ids: list[int], qty: int = 0, tag: str = "r") -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "grp": [i % 3 for i in ids],
            "qty": [qty + i % 10 for i in ids],
            "name": [f"{tag}{i}" for i in ids],
        },
        schema=SCHEMA,
    )


def canon(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in t.select(list(SCHEMA.names)).to_pylist())


def _catalog(kind: str, wh: S3Warehouse, tmp_path: Path) -> neve.Catalog:
    if kind == "sql":
        cat = neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse=wh.uri, **wh.properties)
    else:
        cat = neve.connect(wh.uri, **wh.properties)
    cat.create_namespace("db")
    return cat


KINDS = ["sql", "filesystem"]


# The suite over a SQL catalog with an s3 warehouse runs in ``make test-long`` (make
# test's time budget); make test runs it on the filesystem catalog, whose commits are
# the object store's own, and the SQL catalog's s3 reads and writes just below.
@pytest.mark.parametrize("kind", [pytest.param("sql", marks=pytest.mark.long), "filesystem"])
def test_the_row_level_suite_on_s3_through_spark(
    spark: SparkSession, s3_environ: S3Warehouse, tmp_path: Path, kind: str
) -> None:
    cat = _catalog(kind, s3_environ, tmp_path)
    runner = Runner(
        ns.SparkEngine(spark), spark.createDataFrame, literal=False, upsert_path="spark"
    )
    run_suite(cat, runner, 3, "merge-on-read")


@pytest.mark.parametrize("kind", KINDS)
def test_spark_reads_and_writes_s3_tables_with_no_hadoop_jars(
    spark: SparkSession, s3_environ: S3Warehouse, tmp_path: Path, kind: str, caplog: Any
) -> None:
    cat = _catalog(kind, s3_environ, tmp_path)
    t = cat.create_table(
        "db.t",
        SCHEMA,
        partition_by=["grp"],
        format_version=2,
        properties={"write.delete.mode": "merge-on-read"},
    )
    with caplog.at_level(logging.INFO, logger="neve.spark"):
        assert io_mode(spark, t.location) == "arrow"  # pip's PySpark cannot open s3://
    ns.write(spark.createDataFrame(rows(list(range(300)))), t)
    ns.write(spark.createDataFrame(rows(list(range(300, 350)))), t.refresh())
    ns.delete(spark, t.refresh(), "qty = 3")
    ns.write(spark.createDataFrame(rows([400, 401])), t.refresh(), "overwrite", "grp = 0")
    ns.write(spark.createDataFrame(rows([502], 7)), t.refresh(), "overwrite-partitions")
    expected = canon(t.refresh().scan().to_arrow())
    ids = {i for i in range(350) if i % 10 != 3}  # appended, less the delete
    ids = {i for i in ids if i % 3 != 0} | {400, 401}  # overwrite of grp = 0
    ids = {i for i in ids if i % 3 != 502 % 3} | {502}  # the partition 502 falls in
    assert sorted(r[0] for r in expected) == sorted(ids)
    df = ns.read(spark, t.refresh())
    assert canon(pa.Table.from_pylist([r.asDict() for r in df.collect()], schema=SCHEMA)) == (
        expected
    )
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "neve-file-tasks" in plan.lower() and "FileScan parquet" not in plan
    filtered = ns.read(spark, t.refresh(), filter="id < 100 and qty > 4")
    assert sorted(r.id for r in filtered.collect()) == [
        r[0] for r in expected if r[0] < 100 and r[2] > 4
    ]


def test_changelog_maintenance_and_streaming_on_s3(
    spark: SparkSession, s3_environ: S3Warehouse, tmp_path: Path
) -> None:
    register_datasource(spark)
    cat = _catalog("sql", s3_environ, tmp_path)
    src = cat.create_table("db.src", SCHEMA, primary_key=["id"], format_version=3)
    ns.write(spark.createDataFrame(rows(list(range(100)))), src)
    first = src.refresh().metadata.current_snapshot_id
    ns.upsert(spark, spark.createDataFrame(rows([3, 4, 150], 50, "u")), src.refresh())
    ns.delete(spark, src.refresh(), "id in (5, 6)")
    pyarrow_changes = src.refresh().changes(start_snapshot_id=first)
    spark_changes = ns.changes(spark, src.refresh(), start_snapshot_id=first, local_rows_max=0)
    got = sorted((r["id"], r["_change_type"]) for r in spark_changes.collect())
    assert got == sorted((r["id"], r["_change_type"]) for r in pyarrow_changes.to_pylist())
    done = ns.maintenance.rewrite_data_files(
        spark, src.refresh(), options={"min-input-files": "1", "delete-file-threshold": "1"}
    )
    assert done.rewritten_data_files_count > 0
    ns.maintenance.expire_snapshots(spark, src.refresh(), retain_last=1, older_than=2**62)
    assert len(src.refresh().snapshots()) == 1

    # streaming: the source (changelog mode) into the sink, and upsert_batches
    uri, wh = f"sqlite:///{tmp_path}/c.db", s3_environ.uri
    dst = cat.create_table(
        "db.dst", SCHEMA, primary_key=["id"], properties={"rowkind.field": "_row_kind"}
    )
    copy = cat.create_table(
        "db.copy", SCHEMA, primary_key=["id"], properties={"rowkind.field": "_row_kind"}
    )
    # the Spark session's Python workers started before this test's environment: the
    # store's settings travel as catalog properties
    props = s3_environ.properties
    options = {"uri": uri, "warehouse": wh, **{f"catalog.{k}": v for k, v in props.items()}}
    stream = spark.readStream.format("neve").options(**options, mode="changelog").load("db.src")
    q = (
        stream.writeStream.format("neve")
        .options(**options, upsert="true")
        .option("checkpointLocation", str(tmp_path / "ck1"))
        .trigger(availableNow=True)
        .start("db.dst")
    )
    q.awaitTermination()
    upsert = ns.upsert_batches(
        "db.copy", query_id="copy", catalog=uri, warehouse=wh, properties=props
    )
    q = (
        stream.writeStream.foreachBatch(upsert)
        .option("checkpointLocation", str(tmp_path / "ck2"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    want = canon(src.refresh().scan().to_arrow())
    assert canon(dst.refresh().scan().to_arrow()) == want
    assert canon(copy.refresh().scan().to_arrow()) == want
