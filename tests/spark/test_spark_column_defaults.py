"""v3 column defaults on the Spark engine (spec "Default values").

The same history as ``tests/table/test_column_defaults.py`` (``tests/default_values.py``)
written through ``neve.spark.write`` and the ``neve`` DataSource, read back through
``neve.spark.read`` (native Parquet: initial defaults are filled per file) and the
DataSource, and compared with the pyarrow scan.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import neve
from default_values import (
    BEFORE,
    CASES,
    LATER,
    NULLS,
    OMITTED,
    add_columns,
    build,
    column_names,
    expected,
    full_table,
    ids_table,
)
from javaengine import canon_rows
from neve.catalog import SqlCatalog
from neve.errors import DataSchemaMismatchError, ValidationError
from neve.spark import merge, read, register_datasource, upsert, write

pytestmark = pytest.mark.spark

ID_ONLY = pa.schema([pa.field("id", pa.int64(), nullable=False)])
NAME = "db.t"


def to_df(spark: SparkSession, table: pa.Table) -> DataFrame:
    df = spark.createDataFrame(table)
    for f in table.schema:  # Spark reads zone-less Arrow timestamps as instants
        if pa.types.is_timestamp(f.type) and f.type.tz is None:
            df = df.withColumn(f.name, F.col(f.name).cast("timestamp_ntz"))
    return df


def spark_rows(df: DataFrame) -> Any:
    return canon_rows(df.select(*column_names()).toArrow().to_pylist())


def arrow_rows(table: neve.Table) -> Any:
    return canon_rows(table.scan().to_arrow().select(column_names()).to_pylist())


def test_spark_write_and_read(spark: SparkSession, sqlite_catalog: neve.Catalog) -> None:
    sqlite_catalog.create_table(NAME, ID_ONLY, format_version=3, primary_key=["id"])

    def append(data: pa.Table) -> None:
        write(to_df(spark, data), sqlite_catalog.load_table(NAME))

    build(lambda: sqlite_catalog.load_table(NAME), append)
    t = sqlite_catalog.load_table(NAME)
    assert arrow_rows(t) == expected()
    assert spark_rows(read(spark, t)) == expected()
    # filters on defaulted columns, applied after the fill
    assert spark_rows(read(spark, t, filter="i = -2147483648 and s = ''")) == expected(BEFORE)
    assert spark_rows(read(spark, t, filter="l = 1099511627776")) == expected(OMITTED)
    assert spark_rows(read(spark, t, filter="b is null")) == expected(NULLS)
    assert spark_rows(read(spark, t, filter="s = 'later'")) == expected(LATER)
    # a projection of one defaulted column
    got = read(spark, t, columns=["id", "d"]).toArrow().to_pylist()
    assert {r["id"]: r["d"] for r in got}[0] == CASES[4].initial


def test_datasource_write_and_read(spark: SparkSession, sqlite_catalog: SqlCatalog) -> None:
    register_datasource(spark)
    sqlite_catalog.create_table(NAME, ID_ONLY, format_version=3)
    options = {"uri": sqlite_catalog.uri, "warehouse": sqlite_catalog.warehouse}

    def append(data: pa.Table) -> None:
        to_df(spark, data).write.format("neve").options(**options).mode("append").save(NAME)

    build(lambda: sqlite_catalog.load_table(NAME), append)
    assert arrow_rows(sqlite_catalog.load_table(NAME)) == expected()
    df = spark.read.format("neve").options(**options).load(NAME)
    assert spark_rows(df) == expected()


def test_spark_upsert_and_merge_use_the_write_default(
    spark: SparkSession, sqlite_catalog: neve.Catalog
) -> None:
    t = sqlite_catalog.create_table(NAME, ID_ONLY, format_version=3, primary_key=["id"])
    t.append(ids_table([1, 2]))
    add_columns(sqlite_catalog.load_table(NAME))
    upsert(spark, to_df(spark, ids_table([2, 3])), sqlite_catalog.load_table(NAME))
    (
        merge(spark, to_df(spark, full_table([4], nulls=True)), sqlite_catalog.load_table(NAME))
        .when_not_matched_insert_all()
        .execute()
    )
    got = {r["id"]: r for r in read(spark, sqlite_catalog.load_table(NAME)).toArrow().to_pylist()}
    assert canon_rows([[got[1][c.name] for c in CASES]]) == canon_rows([[c.initial for c in CASES]])
    for i in (2, 3):
        assert canon_rows([[got[i][c.name] for c in CASES]]) == canon_rows(
            [[c.write for c in CASES]]
        )
    assert all(got[4][c.name] is None for c in CASES)


def test_spark_write_omitting_a_required_column(
    spark: SparkSession, sqlite_catalog: neve.Catalog
) -> None:
    t = sqlite_catalog.create_table(NAME, ID_ONLY, format_version=3, primary_key=["id"])
    t.append(ids_table([1]))
    with t.update_schema() as u:
        u.add_column(
            "r",
            "decimal(5, 1)",
            required=True,
            initial_default=Decimal("-1.5"),
            write_default=Decimal("2.0"),
        )
    write(to_df(spark, ids_table([2])), sqlite_catalog.load_table(NAME))
    with sqlite_catalog.load_table(NAME).update_schema() as u:
        u.update_column_default("r", None)
    location = sqlite_catalog.load_table(NAME).metadata_location
    with pytest.raises(DataSchemaMismatchError, match="required column 'r'"):
        write(to_df(spark, ids_table([3])), sqlite_catalog.load_table(NAME))
    with pytest.raises(ValidationError, match="no write default"):
        upsert(spark, to_df(spark, ids_table([3])), sqlite_catalog.load_table(NAME))
    assert sqlite_catalog.load_table(NAME).metadata_location == location
    got = {
        r["id"]: str(r["r"])
        for r in read(spark, sqlite_catalog.load_table(NAME)).toArrow().to_pylist()
    }
    assert got == {1: "-1.5", 2: "2.0"}


def test_nested_struct_field_defaults(spark: SparkSession, sqlite_catalog: neve.Catalog) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("p", pa.struct([pa.field("x", pa.int32())])),
        ]
    )
    t = sqlite_catalog.create_table(NAME, schema, format_version=3)
    write(to_df(spark, pa.table({"id": [1, 2], "p": [{"x": 1}, None]}, schema=schema)), t)
    with sqlite_catalog.load_table(NAME).update_schema() as u:
        u.add_column("p.y", "int", initial_default=-3, write_default=4)
    more = pa.table({"id": [3, 4], "p": [{"x": 3}, None]}, schema=schema)
    write(to_df(spark, more), sqlite_catalog.load_table(NAME))
    want = {1: {"x": 1, "y": -3}, 2: None, 3: {"x": 3, "y": 4}, 4: None}
    got = read(spark, sqlite_catalog.load_table(NAME)).toArrow().to_pylist()
    assert {r["id"]: r["p"] for r in got} == want
    ours = sqlite_catalog.load_table(NAME).scan().to_arrow().to_pylist()
    assert {r["id"]: r["p"] for r in ours} == want


def test_defaults_inside_lists_and_maps(spark: SparkSession, sqlite_catalog: neve.Catalog) -> None:
    point = pa.struct([pa.field("x", pa.int32())])
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("pts", pa.list_(point)),
            pa.field("named", pa.map_(pa.string(), point)),
        ]
    )
    old = pa.table(
        {
            "id": [1, 2],
            "pts": [[{"x": 1}, None], None],
            "named": [[("a", {"x": 1})], None],
        },
        schema=schema,
    )
    t = sqlite_catalog.create_table(NAME, schema, format_version=3)
    write(to_df(spark, old), t)
    with sqlite_catalog.load_table(NAME).update_schema() as u:
        u.add_column("pts.y", "int", initial_default=-3, write_default=4)
        u.add_column("named.y", "long", initial_default=-5, write_default=6)
    new = pa.table({"id": [3], "pts": [[{"x": 3}]], "named": [[("b", {"x": 3})]]}, schema=schema)
    write(to_df(spark, new), sqlite_catalog.load_table(NAME))
    want = {
        1: ([{"x": 1, "y": -3}, None], [("a", {"x": 1, "y": -5})]),
        2: (None, None),
        3: ([{"x": 3, "y": 4}], [("b", {"x": 3, "y": 6})]),
    }
    got = read(spark, sqlite_catalog.load_table(NAME)).toArrow().to_pylist()
    assert {r["id"]: (r["pts"], r["named"]) for r in got} == want
    ours = sqlite_catalog.load_table(NAME).scan().to_arrow().to_pylist()
    assert {r["id"]: (r["pts"], r["named"]) for r in ours} == want


def test_files_without_metrics_keep_their_nulls(
    spark: SparkSession, sqlite_catalog: neve.Catalog
) -> None:
    """Without column metrics a file's footer tells whether it holds the column: a
    file written after the column was added keeps its nulls."""
    props = {"write.metadata.metrics.default": "none"}
    t = sqlite_catalog.create_table(NAME, ID_ONLY, format_version=3, properties=props)
    t.append(ids_table([1]))
    with t.update_schema() as u:
        u.add_column("n", "int", initial_default=-1, write_default=2)
    t.append(pa.table({"id": pa.array([2], pa.int64()), "n": pa.array([None], pa.int32())}))
    t.append(ids_table([3]))
    t = sqlite_catalog.load_table(NAME)
    assert all(not task.file.value_counts for task in t.scan().plan_files())
    want = {1: -1, 2: None, 3: 2}
    assert {r["id"]: r["n"] for r in read(spark, t).toArrow().to_pylist()} == want
    assert {r["id"]: r["n"] for r in t.scan().to_arrow().to_pylist()} == want
