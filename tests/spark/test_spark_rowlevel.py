"""Merge-on-read row-level changes on Spark: the delete files the executors write are
the ones the pyarrow engine writes (v3: one DV per data file, merged and replaced; v2:
file-scoped position deletes), pyiceberg reads the same rows, and a refused MERGE leaves
nothing behind."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog
from pyspark.sql import SparkSession

import neve
import neve.spark as ns
from neve.catalog import SqlCatalog
from neve.errors import ValidationError

pytestmark = pytest.mark.spark

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
        pa.field("q", pa.int64()),
    ]
)


def rows(ids: range | list[int], tag: str = "r") -> pa.Table:
    return pa.table(
        {"id": list(ids), "v": [f"{tag}{i}" for i in ids], "q": [i % 7 for i in ids]},
        schema=SCHEMA,
    )


def files_under(path: Path) -> set[str]:
    return {os.path.join(r, n) for r, _, ns_ in os.walk(path) for n in ns_}


@pytest.fixture
def env(sqlite_catalog: SqlCatalog) -> tuple[neve.Catalog, str, Path]:
    return sqlite_catalog, sqlite_catalog.uri, Path(sqlite_catalog.warehouse)


def content(t: neve.Table) -> dict[int, tuple[str, int]]:
    return {r["id"]: (r["v"], r["q"]) for r in t.refresh().scan().to_arrow().to_pylist()}


@pytest.mark.parametrize("version", [2, 3])
def test_executors_write_merged_delete_files(
    spark: SparkSession, env: tuple[neve.Catalog, str, Path], version: int
) -> None:
    cat, uri, wh = env
    t = cat.create_table(
        "db.t", SCHEMA, partition_by=["bucket(2, id)"], format_version=version, primary_key=["id"]
    )
    t.append(rows(range(200)))
    expected = {i: (f"r{i}", i % 7) for i in range(200)}
    for lo in (0, 50, 100):  # three deletes hitting the same data files
        ns.delete(spark, t.refresh(), f"id >= {lo} AND id < {lo + 5}")
        for i in range(lo, lo + 5):
            expected.pop(i)
    assert ns.update(spark, t.refresh(), {"q": "q * 100", "v": "concat(v, '!')"}, "id >= 190") == 10
    for i in range(190, 200):
        expected[i] = (f"r{i}!", (i % 7) * 100)
    assert content(t) == expected

    tasks = t.refresh().scan().plan_files()
    for task in tasks:
        deletes = task.delete_files
        if version == 3:
            assert len(deletes) <= 1 and all(d.is_deletion_vector for d in deletes)
        else:
            assert all(d.referenced_data_file == task.file.file_path for d in deletes)
            assert len(deletes) <= 1  # earlier file-scoped deletes were merged and replaced
    assert any(task.delete_files for task in tasks)

    py = PyIcebergSqlCatalog("neve", uri=uri, warehouse=str(wh)).load_table("db.t")
    got = {r["id"]: (r["v"], r["q"]) for r in py.scan().to_arrow().to_pylist()}
    assert got == expected


def test_spark_merge_with_conditions_equals_the_pyarrow_merge(
    spark: SparkSession, env: tuple[neve.Catalog, str, Path]
) -> None:
    cat, _, _ = env
    tables = []
    for name in ("a", "b"):
        t = cat.create_table(f"db.{name}", SCHEMA, format_version=3, primary_key=["id"])
        t.append(rows(range(50)))
        tables.append(t)
    source = rows([3, 4, 5, 6, 70, 71], "s")

    def clauses(b: neve.table.merge.MergeBuilder) -> neve.table.merge.MergeBuilder:
        return (
            b.when_matched_delete("target.q = 3")
            .when_matched_update({"q": "target.q + source.q"}, "source.id > 4")
            .when_matched_update_all()
            .when_not_matched_insert_all("source.id < 71")
            .when_not_matched_by_source_delete("target.id >= 45")
        )

    r1 = clauses(tables[0].merge(source)).execute()
    r2 = clauses(ns.merge(spark, spark.createDataFrame(source), tables[1])).execute()
    assert content(tables[0]) == content(tables[1])
    for field in ("rows_inserted", "rows_updated", "rows_deleted"):
        assert getattr(r1, field) == getattr(r2, field), field
    assert (r1.rows_inserted, r1.rows_deleted) == (1, 6)


def test_refused_spark_merge_leaves_nothing(
    spark: SparkSession, env: tuple[neve.Catalog, str, Path]
) -> None:
    cat, _, wh = env
    t = cat.create_table("db.t", SCHEMA, format_version=3, primary_key=["id"])
    t.append(rows(range(20)))
    before, md = files_under(wh), t.metadata_location
    dup = spark.createDataFrame(rows([3, 3, 30], "d"))
    # an upsert on the primary key resolves repeated keys (tests/spark/test_spark_merge_engines.py)
    with pytest.raises(ValidationError, match="more than one source row"):
        ns.merge(spark, dup, t).when_matched_delete().execute()
    with pytest.raises(ValidationError, match="no key column"):
        ns.upsert(spark, spark.createDataFrame(pa.table({"v": ["x"]})), t)
    assert t.refresh().metadata_location == md
    assert files_under(wh) == before


@pytest.mark.parametrize("n_keys", [999, 1000, 1001, 2500])
def test_spark_merge_locates_keys_by_list_or_by_range(
    spark: SparkSession, env: tuple[neve.Catalog, str, Path], n_keys: int
) -> None:
    """Sources around the key-list limit (1,000 distinct keys), with a null key that
    matches nothing: the same rows as the pyarrow MERGE."""
    cat, _, _ = env
    props = {"write.merge.mode": "merge-on-read"}
    t = cat.create_table("db.k", SCHEMA, partition_by=["bucket(4, id)"], properties=props)
    twin = cat.create_table("db.ktwin", SCHEMA, partition_by=["bucket(4, id)"], properties=props)
    base = rows(range(0, 4000, 2))
    t.append(base)
    twin.append(base)
    ids = list(range(1000, 1000 + n_keys))  # half existing (even), half new (odd)
    source = [*rows(ids, tag="s").to_pylist(), {"id": None, "v": "null-key", "q": 1}]
    nullable = pa.schema(
        [SCHEMA.field("id").with_nullable(True), SCHEMA.field("v"), SCHEMA.field("q")]
    )
    insert_if = "source.id IS NOT NULL"

    df = spark.createDataFrame(source, "id long, v string, q long")
    ns.merge(spark, df, t, on=["id"]).when_matched_update_all().when_not_matched_insert_all(
        insert_if
    ).execute()
    twin.merge(
        pa.Table.from_pylist(source, nullable), on=["id"]
    ).when_matched_update_all().when_not_matched_insert_all(insert_if).execute()
    assert content(t) == content(twin)
    assert len(content(t)) == 2000 + n_keys // 2


def test_a_small_upsert_reads_its_source_once(
    spark: SparkSession, tmp_path: Path, sqlite_catalog: SqlCatalog
) -> None:
    """A small upsert's source (here a join over a Parquet file, as in `make demo`'s
    RF1) is computed by one Spark job and kept on the driver: its key filter, the
    merge and the commit use those rows. (It once took three jobs, each computing the
    source again: its key bounds, its distinct keys, its rows.)"""
    from neve.spark import SparkEngine

    t = sqlite_catalog.create_table("db.small", SCHEMA, primary_key=["id"], format_version=3)
    t.append(rows(range(100)))
    src = tmp_path / "src.parquet"
    pq.write_table(rows(range(80, 160), "u"), src)
    picked = spark.range(90, 140)
    source = spark.read.parquet(str(src)).join(picked, "id")
    engine = SparkEngine(spark, local_rows_max=10_000, local_bytes_max=1 << 30)
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("small-upsert", "a small upsert")
    try:
        with t.transaction(engine) as tx:
            done = tx.upsert(source.select("id", "v", "q"))
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    jobs = tracker.getJobIdsForGroup("small-upsert")
    assert done.executed_by == "spark-driver"
    assert (done.rows_updated, done.rows_inserted) == (10, 40)
    assert len(jobs) <= 2, f"{len(jobs)} Spark jobs for a 50-row upsert"
    got = t.refresh().scan().to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == list(range(140))
    assert got.column("v").to_pylist()[88:92] == ["r88", "r89", "u90", "u91"]
