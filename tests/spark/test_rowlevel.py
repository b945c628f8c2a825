"""Copy-on-write delete, overwrite and dynamic partition overwrite with Spark give the
rows the pyarrow operations give, keep merge-on-read deletes, and leave no files
behind when the commit conflicts."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from neve.arrow.deletes import write_position_delete_file
from neve.catalog import Catalog
from neve.errors import CommitConflictError, ExpressionError
from neve.spark import delete
from neve.spark.commands import overwrite, overwrite_partitions

sys.path.insert(0, os.path.dirname(__file__))
from test_write import SCHEMA, canon, data_files, files_under, rows, to_df

pytestmark = pytest.mark.spark

PARTITIONS = ["cat", "bucket(2, id)"]


def test_deletes_match_pyarrow(spark: SparkSession, sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA, partition_by=PARTITIONS)
    twin = sqlite_catalog.create_table("db.twin", SCHEMA, partition_by=PARTITIONS)
    t.append(rows(0, 60))
    twin.append(rows(0, 60))
    for flt in [
        "id < 10",  # parts of files: rewritten
        "cat = 'a'",  # whole partitions: dropped from metadata alone
        "name is null",
        "score > 5",  # NaN is not > 5: NaN rows stay
        "not (id > 50)",
        "id = 1000",  # nothing
    ]:
        delete(spark, t, flt)
        twin.delete(flt)
        assert canon(t.scan().to_arrow()) == canon(twin.scan().to_arrow()), flt
    assert t.current_snapshot().operation.value in ("delete", "overwrite")  # type: ignore[union-attr]
    # what no filter matched, worked out row by row (NaN > 5 and a null cat = 'a' are
    # false): id 54, whose score is NaN and whose cat is null
    left = [
        r
        for r in rows(0, 60).to_pylist()
        if r["id"] >= 10
        and r["cat"] != "a"
        and r["name"] is not None
        and not r["score"] > 5
        and r["id"] > 50
    ]
    assert canon(t.scan().to_arrow()) == canon(pa.Table.from_pylist(left, schema=SCHEMA))


def test_overwrites_match_pyarrow(spark: SparkSession, sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.o", SCHEMA, partition_by=PARTITIONS)
    twin = sqlite_catalog.create_table("db.otwin", SCHEMA, partition_by=PARTITIONS)
    t.append(rows(0, 40))
    twin.append(rows(0, 40))

    overwrite(to_df(spark, rows(100, 8)), t, "id >= 30 or small < -45")
    twin.overwrite(rows(100, 8), filter="id >= 30 or small < -45")
    assert canon(t.scan().to_arrow()) == canon(twin.scan().to_arrow())

    overwrite_partitions(to_df(spark, rows(200, 5)), t)
    twin.dynamic_partition_overwrite(rows(200, 5))
    assert canon(t.scan().to_arrow()) == canon(twin.scan().to_arrow())

    overwrite(to_df(spark, rows(300, 3)), t)
    assert canon(t.scan().to_arrow()) == canon(rows(300, 3))


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_rewrite_keeps_merge_on_read_deletes(
    spark: SparkSession, sqlite_catalog: Catalog, mode: str
) -> None:
    t = sqlite_catalog.create_table("db.mor", SCHEMA, properties={"write.delete.mode": mode})
    t.append(rows(0, 20))
    (f,) = data_files(t)
    dels = write_position_delete_file(
        t.io, f"{t.location}/data/pos-deletes.parquet", {f.file_path: [0, 1, 2, 15]}
    )
    t.row_delta(delete_files=[dels])
    expected = [r for r in canon(rows(0, 20)) if r["id"] not in (0, 1, 2, 15)]
    assert canon(t.scan().to_arrow()) == expected

    delete(spark, t, "id > 16")  # deleted rows must stay deleted either way
    assert canon(t.scan().to_arrow()) == [r for r in expected if r["id"] <= 16]
    tasks = t.scan().plan_files()
    if mode == "copy-on-write":  # the file was rewritten without its deleted rows
        assert all(not task.delete_files for task in tasks)
    else:  # the old position deletes were merged into one file-scoped delete file
        assert [len(task.delete_files) for task in tasks] == [1]
        (merged,) = tasks[0].delete_files
        assert merged.file_path != dels.file_path
        assert merged.record_count == 4 + 3


def test_delete_on_a_branch_leaves_main(spark: SparkSession, sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.br", SCHEMA, partition_by=["cat"])
    t.append(rows(0, 24))
    t.create_branch("dev")
    delete(spark, t, "id < 12", branch="dev")
    assert canon(t.scan().to_arrow()) == canon(rows(0, 24))
    assert canon(t.scan(ref="dev").to_arrow()) == canon(rows(12, 12))


def test_conflict_after_rewrite_leaves_no_files(
    spark: SparkSession, sqlite_catalog: Catalog
) -> None:
    t = sqlite_catalog.create_table(
        "db.c", SCHEMA, partition_by=["cat"], properties={"write.delete.mode": "copy-on-write"}
    )
    t.append(rows(0, 32))
    stale = sqlite_catalog.load_table("db.c")
    t.append(rows(100, 16))  # a concurrent writer adds rows the delete's filter matches
    before, md = files_under(Path(sqlite_catalog.warehouse)), t.metadata_location
    with pytest.raises(CommitConflictError):
        delete(spark, stale, "id < 5 or id > 110")  # rewrites files, then loses the commit
    with pytest.raises(CommitConflictError):
        overwrite(to_df(spark, rows(500, 4)), stale, "id > 110")
    assert t.refresh().metadata_location == md
    assert files_under(Path(sqlite_catalog.warehouse)) == before


def test_a_merge_on_read_delete_on_spark_rebases_over_a_concurrent_append(
    spark: SparkSession, sqlite_catalog: Catalog
) -> None:
    """The same race in merge-on-read mode: the delete applies its filter to the rows
    the concurrent append added too (docs/ROW-LEVEL.md, the rebase matrix)."""
    t = sqlite_catalog.create_table(
        "db.m", SCHEMA, partition_by=["cat"], properties={"write.delete.mode": "merge-on-read"}
    )
    t.append(rows(0, 32))
    stale = sqlite_catalog.load_table("db.m")
    t.append(rows(100, 16))
    delete(spark, stale, "id < 5 or id > 110")
    left = sorted(t.refresh().scan().to_arrow().column("id").to_pylist())
    assert left == [*range(5, 32), *range(100, 111)]


def test_bad_filter_writes_nothing(spark: SparkSession, sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.bad", SCHEMA)
    t.append(rows(0, 4))
    before = files_under(Path(sqlite_catalog.warehouse))
    with pytest.raises(ExpressionError):
        overwrite(to_df(spark, rows(10, 2)), t, "nope = 1")
    with pytest.raises(ExpressionError):
        delete(spark, t, "nope = 1")
    assert files_under(Path(sqlite_catalog.warehouse)) == before
