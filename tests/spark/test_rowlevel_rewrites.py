"""Copy-on-write rewrites with Spark copy each surviving row once, also from files that
planning splits into several tasks, and keep v3 row lineage: ``_row_id`` and
``_last_updated_sequence_number`` read the same through Spark and pyarrow, and survive
Spark's deletes and overwrites. ``read(columns=[])`` gives the rows with no columns."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

import neve
from neve.errors import SchemaError
from neve.spark import SparkEngine, delete, read
from neve.spark.commands import overwrite, overwrite_partitions
from neve.spark.job import write_data

pytestmark = pytest.mark.spark

ROW_ID = "_row_id"
SEQ = "_last_updated_sequence_number"
# copy-on-write: these tests are about rewrites (tables neve creates default to
# merge-on-read from v2)
COPY_ON_WRITE = {f"write.{op}.mode": "copy-on-write" for op in ("delete", "update", "merge")}
SPLIT_PROPS = {
    "write.parquet.row-group-size-bytes": "4096",
    "read.split.target-size": "1",
    **COPY_ON_WRITE,
}
ROWS = 3000

Row = tuple[int, int, str]


def rows(start: int, n: int) -> list[Row]:
    return [(i, i % 4, f"value-{i:08d}-{i * 7919 % 10007}") for i in range(start, start + n)]


def arrow(data: list[Row]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([r[0] for r in data], pa.int64()),
            "grp": pa.array([r[1] for r in data], pa.int32()),
            "payload": pa.array([r[2] for r in data], pa.string()),
        }
    )


def to_df(spark: SparkSession, data: list[Row]) -> DataFrame:
    return spark.createDataFrame(arrow(data))


def content(t: neve.Table) -> Counter[Row]:
    out = t.refresh().scan().to_arrow()
    return Counter(zip(*(out.column(c).to_pylist() for c in ("id", "grp", "payload")), strict=True))


def spark_content(spark: SparkSession, t: neve.Table) -> Counter[Row]:
    return Counter((r[0], r[1], r[2]) for r in read(spark, t.refresh()).collect())


def without(data: list[Row], drop: object) -> Counter[Row]:
    return Counter(r for r in data if not drop(r))  # type: ignore[operator]


def split_table(catalog: neve.Catalog, version: int = 2, **kwargs: object) -> neve.Table:
    t = catalog.create_table(
        "db.t",
        arrow(rows(0, 1)).schema,
        properties=SPLIT_PROPS,
        format_version=version,
        **kwargs,  # type: ignore[arg-type]
    )
    t.append(arrow(rows(0, ROWS)))
    per_file = Counter(task.file.file_path for task in t.scan().plan_files())
    assert min(per_file.values()) >= 2  # the premise: files planned as many tasks
    return t


# -- each row copied once ----------------------------------------------------------------


@pytest.mark.parametrize("version", [2, 3])
def test_spark_delete_and_overwrite_of_split_files(
    spark: SparkSession, sqlite_catalog: neve.Catalog, version: int
) -> None:
    t = split_table(sqlite_catalog, version)
    delete(spark, t, "id = 5 or (id > 1000 and id < 1010)")
    model = without(rows(0, ROWS), lambda r: r[0] == 5 or 1000 < r[0] < 1010)
    assert content(t) == model

    new = rows(10_000, 6)
    overwrite(to_df(spark, new), t.refresh(), "id >= 2900")
    model = without(list(model.elements()), lambda r: r[0] >= 2900) + Counter(new)
    assert content(t) == model
    assert spark_content(spark, t) == model


def test_spark_overwrite_partitions_of_split_files(
    spark: SparkSession, sqlite_catalog: neve.Catalog
) -> None:
    t = split_table(sqlite_catalog, partition_by=["grp"])
    new = [r for r in rows(20_000, 12) if r[1] == 2]
    overwrite_partitions(to_df(spark, new), t)
    assert content(t) == without(rows(0, ROWS), lambda r: r[1] == 2) + Counter(new)


def test_spark_rewrites_in_a_transaction(spark: SparkSession, sqlite_catalog: neve.Catalog) -> None:
    t = split_table(sqlite_catalog, 3)
    before = lineage(t)
    appended = rows(30_000, 20)
    with t.transaction(SparkEngine(spark)) as tx:
        tx.append(to_df(spark, appended))
        # the Spark engine reads and writes as the transaction's staged changes leave it
        tx.overwrite_files([], "id = 7 or id = 30005")
    gone = {7, 30005}
    assert content(t) == without(rows(0, ROWS) + appended, lambda r: r[0] in gone)
    after = lineage(t.refresh())
    assert {k: after[k] for k in before if k not in gone} == {
        k: v for k, v in before.items() if k not in gone
    }


def test_spark_rewriter_reads_with_the_current_schema(
    spark: SparkSession, sqlite_catalog: neve.Catalog
) -> None:
    t = split_table(sqlite_catalog)
    with t.update_schema() as u:
        u.add_column("extra", "long")
    t = t.refresh()
    delete(spark, t, "id < 2990")
    out = t.refresh().scan().to_arrow().sort_by("id")
    assert out.column_names == ["id", "grp", "payload", "extra"]
    assert out.column("id").to_pylist() == list(range(2990, ROWS))
    assert out.column("extra").null_count == 10


def test_spark_writes_files_of_many_row_groups_that_rewrite_once(
    spark: SparkSession, sqlite_catalog: neve.Catalog
) -> None:
    # files as Spark writes them: parquet.block.size from the table's row-group size
    t = sqlite_catalog.create_table(
        "db.s", arrow(rows(0, 1)).schema, properties=SPLIT_PROPS, format_version=3
    )
    data = rows(0, 4000)
    result = write_data(to_df(spark, data).coalesce(1), t)
    with t.transaction() as tx:
        tx.add_files(result.files)
    per_file = Counter(task.file.file_path for task in t.refresh().scan().plan_files())
    assert max(per_file.values()) >= 2
    delete(spark, t.refresh(), "id = 5")
    assert content(t) == without(data, lambda r: r[0] == 5)
    t.refresh().delete("id = 6")
    assert content(t) == without(data, lambda r: r[0] in (5, 6))


# -- row lineage ---------------------------------------------------------------------------


def lineage(t: neve.Table) -> dict[int, tuple[int, int]]:
    out = t.refresh().scan(columns=["id", ROW_ID, SEQ]).to_arrow()
    return dict(
        zip(
            out.column("id").to_pylist(),
            zip(out.column(ROW_ID).to_pylist(), out.column(SEQ).to_pylist(), strict=True),
            strict=True,
        )
    )


def spark_lineage(spark: SparkSession, t: neve.Table) -> dict[int, tuple[int, int]]:
    df = read(spark, t.refresh(), columns=["id", ROW_ID, SEQ])
    assert df.columns == ["id", ROW_ID, SEQ]
    found = [(r[0], (r[1], r[2])) for r in df.collect()]
    assert len({k for k, _ in found}) == len(found)
    return dict(found)


def unique_ids(found: dict[int, tuple[int, int]]) -> bool:
    ids = [r for r, _ in found.values()]
    return None not in ids and len(set(ids)) == len(ids)


def test_spark_reads_the_lineage_pyarrow_reads(
    spark: SparkSession, sqlite_catalog: neve.Catalog
) -> None:
    t = split_table(sqlite_catalog, 3, partition_by=["grp"])
    t.append(arrow(rows(ROWS, 40)))
    t.refresh().delete("id < 30")  # pyarrow copy-on-write: stored lineage in new files
    found = lineage(t)
    assert unique_ids(found) and len(found) == ROWS + 40 - 30
    assert spark_lineage(spark, t) == found
    # with deletes to apply, a filter and lineage columns only
    df = read(spark, t.refresh(), filter="grp = 1", columns=[SEQ, ROW_ID])
    assert sorted((r[1], r[0]) for r in df.collect()) == sorted(
        v for k, v in found.items() if k % 4 == 1
    )
    assert read(spark, t).columns == ["id", "grp", "payload"]


def test_spark_copy_on_write_keeps_lineage(
    spark: SparkSession, sqlite_catalog: neve.Catalog
) -> None:
    t = split_table(sqlite_catalog, 3)
    before = lineage(t)
    next_id = t.refresh().metadata.next_row_id
    assert next_id is not None

    delete(spark, t, "id < 50 or grp = 3")
    after = lineage(t)
    assert after == {k: v for k, v in before.items() if not (k < 50 or k % 4 == 3)}
    assert spark_lineage(spark, t) == after

    new = rows(70_000, 9)
    overwrite(to_df(spark, new), t.refresh(), "id >= 2000")
    final = lineage(t)
    assert {k: v for k, v in final.items() if k < 70_000} == {
        k: v for k, v in after.items() if k < 2000
    }
    snap = t.refresh().current_snapshot()
    assert snap is not None
    fresh = [final[r[0]] for r in new]
    assert all(rid >= next_id for rid, _ in fresh)
    assert {s for _, s in fresh} == {snap.sequence_number}
    assert unique_ids(final)
    assert spark_lineage(spark, t) == final


def test_spark_lineage_on_a_v2_table_is_a_schema_error(
    spark: SparkSession, sqlite_catalog: neve.Catalog
) -> None:
    t = sqlite_catalog.create_table("db.v2", arrow(rows(0, 1)).schema)
    t.append(arrow(rows(0, 3)))
    with pytest.raises(SchemaError, match="v3"):
        read(spark, t, columns=["id", ROW_ID])


# -- no columns ----------------------------------------------------------------------------


def test_spark_read_with_no_columns_keeps_the_rows(
    spark: SparkSession, sqlite_catalog: neve.Catalog
) -> None:
    t = split_table(sqlite_catalog, partition_by=["grp"])
    df = read(spark, t, columns=[])
    assert df.columns == []
    assert df.count() == ROWS
    assert read(spark, t, columns=[], filter="id < 10 or grp = 1").count() == sum(
        1 for i in range(ROWS) if i < 10 or i % 4 == 1
    )
    t.delete("id < 100")
    assert read(spark, t.refresh(), columns=[]).count() == ROWS - 100
