"""Merge engines on Spark (docs/MERGE-ENGINES.md): the random batches of
tests/table/test_merge_engines.py upserted through ``neve.spark.upsert`` give, after
every commit, the rows of the reference model (tests/merge_engine_model.py) and of the
pyarrow engine fed the same batches; a batch the model refuses is refused with a typed
error on both, leaving the tables as they were."""

from __future__ import annotations

import shutil
import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import neve
import neve.spark as ns
from budget import examples
from merge_engine_model import SCHEMA, Refused, apply_batch, batches, configs, to_arrow
from neve import MergeEngineError, SqlCatalog, ValidationError

pytestmark = [pytest.mark.spark, pytest.mark.property]


def sorted_rows(table: neve.Table) -> list[dict[str, object]]:
    return sorted(table.refresh().scan().to_arrow().to_pylist(), key=lambda r: r["k"])


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregation", "first-row"])
def test_spark_equals_pyarrow_and_the_model(spark: SparkSession, engine: str) -> None:
    @settings(
        max_examples=examples(3, 40),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data(), version=st.sampled_from([2, 3]))
    def check(data: st.DataObject, version: int) -> None:
        config = data.draw(configs(engine), label="config")
        drawn = data.draw(batches(config), label="batches")
        where = tempfile.mkdtemp()
        try:
            cat = SqlCatalog("m", f"sqlite:///{where}/c.db", f"{where}/wh")
            cat.create_namespace("db")
            tables = [
                cat.create_table(
                    f"db.{name}",
                    SCHEMA,
                    primary_key=["k"],
                    format_version=version,
                    properties=config.properties(),
                )
                for name in ("arrow", "spark")
            ]
            state: dict[int, dict[str, object]] = {}
            for i, batch in enumerate(drawn):
                note(f"batch {i}: {batch}")
                source = to_arrow(batch, config)
                frame = spark.createDataFrame(source) if source.num_rows else None
                try:
                    expected = apply_batch(config, state, batch)
                except Refused:
                    before = [t.refresh().metadata_location for t in tables]
                    with pytest.raises(MergeEngineError):
                        tables[0].upsert(source)
                    with pytest.raises(MergeEngineError):
                        assert frame is not None
                        ns.upsert(spark, frame, tables[1])
                    assert [t.refresh().metadata_location for t in tables] == before
                    continue
                tables[0].upsert(source)
                if frame is not None:
                    ns.upsert(spark, frame, tables[1])
                state = expected
                want = [state[k] for k in sorted(state)]
                assert sorted_rows(tables[0]) == want
                assert sorted_rows(tables[1]) == want
            cat.dispose()
        finally:
            shutil.rmtree(where, ignore_errors=True)

    check()


def test_spark_merge_engine_paths(spark: SparkSession, tmp_path: object) -> None:
    """Each Spark path on fixed rows: the deduplicate window (last row per key), a
    sequence that makes a later batch lose, first-row, and when_matched_update_all
    alone (no new key)."""
    cat = SqlCatalog("m", f"sqlite:///{tmp_path}/c.db", f"{tmp_path}/wh")
    cat.create_namespace("db")

    def batch(k: list[int], s: list[int | None], n: list[int | None]) -> pa.Table:
        return pa.table(
            {"k": k, "s": s, "n": n, "t": [None] * len(k), "b": [None] * len(k)}, schema=SCHEMA
        )

    def kn(t: neve.Table) -> list[tuple[object, object]]:
        return [(r["k"], r["n"]) for r in sorted_rows(t)]

    dedup = cat.create_table("db.d", SCHEMA, primary_key=["k"])
    ns.upsert(spark, spark.createDataFrame(batch([1, 1, 2], [0, 0, 0], [1, 2, 3])), dedup)
    assert kn(dedup) == [(1, 2), (2, 3)]
    seq = cat.create_table("db.s", SCHEMA, primary_key=["k"], properties={"sequence.field": "s"})
    ns.upsert(spark, spark.createDataFrame(batch([1, 2], [5, 5], [1, 1])), seq)
    ns.upsert(spark, spark.createDataFrame(batch([1, 2, 2], [4, 6, 7], [9, 8, 7])), seq)
    assert kn(seq) == [(1, 1), (2, 7)]
    first = cat.create_table(
        "db.f", SCHEMA, primary_key=["k"], properties={"merge-engine": "first-row"}
    )
    ns.upsert(spark, spark.createDataFrame(batch([1, 1], [0, 0], [1, 2])), first)
    ns.upsert(spark, spark.createDataFrame(batch([1, 2, 2], [0, 0, 0], [3, 4, 5])), first)
    assert kn(first) == [(1, 1), (2, 4)]
    agg = cat.create_table(
        "db.a",
        SCHEMA,
        primary_key=["k"],
        properties={"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
    )
    ns.upsert(spark, spark.createDataFrame(batch([1], [0], [1])), agg)
    frame = spark.createDataFrame(batch([1, 1, 2], [0, 0, 0], [2, 3, 4]))
    # a MERGE keeps SQL's rules on a key table too: two source rows for one target row
    # are refused, and update_all replaces the row; the engine decides upserts
    with pytest.raises(ValidationError, match="more than one source row"):
        ns.merge(spark, frame, agg).when_matched_update_all().execute()
    assert kn(agg) == [(1, 1)]
    once = spark.createDataFrame(batch([1, 2], [0, 0], [5, 4]))
    ns.merge(spark, once, agg).when_matched_update_all().execute()
    assert kn(agg) == [(1, 5)]
    ns.upsert(spark, frame, agg)
    assert kn(agg) == [(1, 10), (2, 4)]
    # an error resolve raises on an executor reaches the caller typed, nothing written
    product = cat.create_table(
        "db.p",
        SCHEMA,
        primary_key=["k"],
        properties={
            "merge-engine": "aggregation",
            "fields.n.aggregate-function": "product",
            "rowkind.field": "op",
        },
    )
    ns.upsert(spark, spark.createDataFrame(batch([1], [0], [3])), product)
    before = product.refresh().metadata_location
    zero = batch([1], [0], [0]).append_column("op", pa.array(["-U"]))
    with pytest.raises(MergeEngineError, match="divided by zero"):
        ns.upsert(spark, spark.createDataFrame(zero), product)
    assert product.refresh().metadata_location == before
