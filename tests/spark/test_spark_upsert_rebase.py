"""A Spark upsert that lost the commit race rebases as the pyarrow engine's does: with
the deduplicate engine it re-locates its keys in the rows the winner added and marks
them too (each key keeps one live row, the later committer's), under both isolation
levels; with a sequence field it merges again at the new head, so the higher sequence
wins whichever commits last. Before the engines shared one orchestration, a Spark
upsert under ``serializable`` failed on a concurrent insert of one of its keys."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import neve
import neve.spark as ns

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def rows(ids: list[int], tag: str = "r") -> pa.Table:
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture
def catalog(tmp_path: Path) -> neve.Catalog:
    cat = neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("isolation", ["serializable", "snapshot"])
def test_spark_upsert_relocates_its_keys_in_rows_a_winner_added(
    spark: SparkSession, catalog: neve.Catalog, version: int, isolation: str
) -> None:
    props = {f"write.{op}.mode": "merge-on-read" for op in ("delete", "update", "merge")}
    props |= {f"write.{op}.isolation-level": isolation for op in ("delete", "update", "merge")}
    t = catalog.create_table(
        "db.t", SCHEMA, format_version=version, primary_key=["id"], properties=props
    )
    t.append(rows(list(range(100))))
    stale = catalog.load_table("db.t")
    t.append(rows([300], "other"))  # a key the Spark upsert below also inserts
    t.upsert(rows([5, 6], "winner"))  # keys the Spark upsert below also updates
    result = ns.upsert(spark, spark.createDataFrame(rows([5, 300, 301], "up")), stale)
    assert result.executed_by == "spark"
    got = t.refresh().scan().to_arrow().to_pylist()
    keys = [r["id"] for r in got]
    assert len(keys) == len(set(keys)) == 102
    values = {r["id"]: r["v"] for r in got}
    assert values[5] == "up5" and values[300] == "up300" and values[301] == "up301"
    assert values[6] == "winner6" and values[7] == "r7"


@pytest.mark.parametrize("late_sequence", [3, 30])
def test_spark_upsert_with_a_sequence_field_merges_again_at_the_head(
    spark: SparkSession, catalog: neve.Catalog, late_sequence: int
) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("v", pa.string()),
            ("seq", pa.int64()),
        ]
    )
    t = catalog.create_table(
        "db.s",
        schema,
        format_version=3,
        primary_key=["id"],
        properties={"write.merge.mode": "merge-on-read", "sequence.field": "seq"},
    )
    t.append(pa.table({"id": [1, 2], "v": ["a", "b"], "seq": [1, 1]}, schema=schema))
    stale = catalog.load_table("db.s")
    t.upsert(pa.table({"id": [1, 5], "v": ["early", "early"], "seq": [10, 10]}, schema=schema))
    late = pa.table(
        {"id": [1, 5], "v": ["late", "late"], "seq": [late_sequence] * 2}, schema=schema
    )
    ns.upsert(spark, spark.createDataFrame(late), stale)
    got = {r["id"]: (r["v"], r["seq"]) for r in t.refresh().scan().to_arrow().to_pylist()}
    winner = ("late", late_sequence) if late_sequence > 10 else ("early", 10)
    assert got == {1: winner, 2: ("b", 1), 5: winner}
