"""The neve data source on a REST catalog: ``.option("catalog", "http://...")`` (and
``warehouse``) reads and writes tables through ``neve serve``; the rows are those neve's
REST client sees."""

from __future__ import annotations

import uuid
from typing import Any

import pyarrow as pa
import pytest

import neve
from neve.spark import register_datasource
from restserver import NeveServer

pytestmark = [pytest.mark.spark, pytest.mark.rest]


def test_the_data_source_reads_and_writes_through_neve_serve(
    spark: Any, rest_server: NeveServer
) -> None:
    register_datasource(spark)
    warehouse = f"spark{uuid.uuid4().hex[:8]}"
    cat = neve.connect(rest_server.url, warehouse=warehouse)
    cat.create_namespace("db")
    t = cat.create_table(
        "db.t", pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
    )
    t.append(pa.table({"id": [1, 2], "s": ["a", "b"]}, schema=t.scan().arrow_schema()))
    df = spark.createDataFrame([(3, "c"), (4, "ü")], "id long, s string")
    (
        df.write.format("neve")
        .option("catalog", rest_server.url)
        .option("warehouse", warehouse)
        .mode("append")
        .save("db.t")
    )
    read = (
        spark.read.format("neve")
        .option("catalog", rest_server.url)
        .option("warehouse", warehouse)
        .load("db.t")
    )
    assert sorted((r.id, r.s) for r in read.collect()) == [(1, "a"), (2, "b"), (3, "c"), (4, "ü")]
    rows = cat.load_table("db.t").scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["s"]) for r in rows) == [(1, "a"), (2, "b"), (3, "c"), (4, "ü")]
    cat.dispose()
