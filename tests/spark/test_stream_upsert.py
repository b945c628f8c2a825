"""``neve.spark.upsert_batches``: a ``foreachBatch`` function that upserts each
micro-batch with Spark jobs (the sink merges on the driver). A changelog stream copies
a primary-key table exactly, across runs of the query from its checkpoint; each batch
commits one snapshot carrying the query and batch ids; a replayed batch is skipped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import neve
import neve.spark as ns
from neve.spark.datasource import register_datasource
from neve.spark.streaming import BATCH_ID_PROPERTY, QUERY_ID_PROPERTY

pytestmark = pytest.mark.spark

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.int32()),
        pa.field("s", pa.string()),
    ]
)


def rows(ids: list[int], v: int = 0) -> pa.Table:
    return pa.table(
        {"id": ids, "v": [v + i % 5 for i in ids], "s": [f"r{i}" for i in ids]}, schema=SCHEMA
    )


def canon(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["v"], r["s"]) for r in t.to_pylist())


def test_a_changelog_stream_upserted_by_spark_copies_the_table(
    spark: SparkSession, tmp_path: Path
) -> None:
    register_datasource(spark)
    uri, wh = f"sqlite:///{tmp_path / 'c.db'}", str(tmp_path / "wh")
    cat = neve.connect(uri, wh)
    cat.create_namespace("db")
    src = cat.create_table("db.src", SCHEMA, primary_key=["id"])
    dst = cat.create_table(
        "db.dst", SCHEMA, primary_key=["id"], properties={"rowkind.field": "_row_kind"}
    )
    src.append(rows(list(range(0, 40))))
    src.upsert(rows([3, 4, 52], v=50))
    src.delete("id in (5, 6)")
    stream = (
        spark.readStream.format("neve")
        .options(uri=uri, warehouse=wh, mode="changelog")
        .load("db.src")
    )
    upsert = ns.upsert_batches("db.dst", query_id="copy", catalog=uri, warehouse=wh)

    def run() -> None:
        q = (
            stream.writeStream.foreachBatch(upsert)
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()

    run()
    assert canon(dst.refresh().scan().to_arrow()) == canon(src.refresh().scan().to_arrow())
    src.update({"v": 7}, "id < 3")
    src.delete("id = 52")
    src.append(rows([60, 61]))
    run()  # from the checkpoint: only the new changes
    assert canon(dst.refresh().scan().to_arrow()) == canon(src.refresh().scan().to_arrow())
    commits = [s for s in dst.refresh().snapshots() if s.summary.get(QUERY_ID_PROPERTY) == "copy"]
    assert len(commits) >= 2
    last = max(int(s.summary[BATCH_ID_PROPERTY]) for s in commits)

    # a replay of the last batch (a restart before the checkpoint recorded it): skipped
    before = dst.refresh().metadata.current_snapshot_id
    again = spark.createDataFrame(rows([1], v=99))
    upsert(again, last)
    assert dst.refresh().metadata.current_snapshot_id == before
    upsert(again, last + 1)  # the next batch commits
    assert dst.refresh().metadata.current_snapshot_id != before
    got = {r["id"]: r["v"] for r in dst.scan().to_arrow().to_pylist()}
    assert got[1] == 100
