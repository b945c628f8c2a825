"""Rewrites on Spark: ``neve.spark.maintenance.rewrite_data_files``,
``rewrite_position_delete_files`` and ``rewrite_manifests`` plan what the pyarrow
actions plan, read and write the rows with Spark, and commit one ``replace`` snapshot.
Rows read the same at every snapshot, v3 rows keep their row ids, a primary-key table
keeps one live row per key, nothing a kept snapshot needs is touched (the table folder
listed against what the metadata reaches), the rewritten files go only when expiration
removes the snapshots that need them, and dry runs change nothing."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import neve
from neve.spark import maintenance
from neve.spark.reader import read as spark_read
from neve.spec.manifest import DataFileContent
from neve.spec.snapshot import Operation
from neve.table.maintenance import reachable_files
from neve.table.table import Table
from reference_reader import live_entries, manifest_list

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "table"))
from test_expire_snapshots import canon, history_table, needed, on_disk
from test_rewrite_position_deletes import scattered

pytestmark = pytest.mark.spark

LINEAGE = ["id", "_row_id", "_last_updated_sequence_number"]


def every_snapshot(t: Table) -> dict[int, list[tuple[Any, ...]]]:
    return {
        s.snapshot_id: canon(t.scan(snapshot_id=s.snapshot_id).to_arrow()) for s in t.snapshots()
    }


def reached(t: Table) -> set[str]:
    return {p.removeprefix("file://") for p in reachable_files(t)}


def delete_files_of(t: Table) -> list[Any]:
    return [d for task in t.scan().plan_files() for d in task.delete_files]


@pytest.mark.parametrize("version", [2, 3])
def test_spark_compaction_then_expiration(
    spark: SparkSession, sqlite_catalog: neve.Catalog, version: int
) -> None:
    """A merge-on-read history (position deletes on v2, DVs on v3; an upsert into the
    primary key) compacted on Spark, then expired on Spark."""
    t = history_table(sqlite_catalog, version)
    assert delete_files_of(t)
    before = every_snapshot(t)
    lineage = canon(t.scan(columns=LINEAGE).to_arrow()) if version >= 3 else None
    opts = {"min-input-files": "2"}
    plan = t.maintenance.rewrite_data_files(options=opts, dry_run=True)
    # min-input-files=2: the data files of every partition holding two or more go
    per_partition = Counter(
        e.partition for e in live_entries(t.metadata_location) if e.content == 0
    )
    assert plan.rewritten_data_files_count == sum(n for n in per_partition.values() if n >= 2)
    listing = on_disk(t)

    dry = maintenance.rewrite_data_files(spark, t, options=opts, dry_run=True)
    assert dry == plan
    assert sqlite_catalog.load_table("db.t").metadata_location == t.metadata_location
    assert on_disk(t) == listing

    done = maintenance.rewrite_data_files(spark, t, options=opts)
    assert done.rewritten_data_files_count == plan.rewritten_data_files_count
    assert done.file_groups == plan.file_groups
    assert done.added_data_files_count == plan.file_groups  # one target-size file each
    t = sqlite_catalog.load_table("db.t")
    head = t.current_snapshot()
    assert head is not None and head.operation is Operation.REPLACE
    assert not delete_files_of(t)  # every file was rewritten with its deletes applied
    for sid, want in before.items():  # time travel to every snapshot still works
        assert canon(t.scan(snapshot_id=sid).to_arrow()) == want
    now = canon(t.scan().to_arrow())
    assert now == before[next(reversed(before))]
    assert canon(spark_read(spark, t).toArrow()) == now
    if lineage is not None:
        assert canon(t.scan(columns=LINEAGE).to_arrow()) == lineage
    ids = [r[0] for r in now]
    assert len(ids) == len(set(ids))  # one live row per key
    # nothing was deleted: the old snapshots still need the rewritten files
    after = on_disk(t)
    assert listing <= after
    assert after == reached(t) - {t.metadata_location.removeprefix("file://")} - {
        e.metadata_file.removeprefix("file://") for e in t.metadata.metadata_log
    }

    # expire everything but the head: the rewritten files go, nothing the head needs
    gone = maintenance.expire_snapshots(spark, t, retain_last=1, older_than=head.timestamp_ms + 1)
    assert not gone.failed and gone.deleted["data_files"] >= done.rewritten_data_files_count
    t = sqlite_catalog.load_table("db.t")
    assert [s.snapshot_id for s in t.snapshots()] == [head.snapshot_id]
    assert on_disk(t) == needed(t)
    assert listing - on_disk(t)  # the rewritten files are gone now
    assert canon(t.scan().to_arrow()) == now
    if lineage is not None:
        assert canon(t.scan(columns=LINEAGE).to_arrow()) == lineage
    assert maintenance.rewrite_data_files(spark, t, options=opts).rewritten_data_files_count == 0


def test_spark_compaction_of_an_unpartitioned_table_writes_target_size_files(
    spark: SparkSession, sqlite_catalog: neve.Catalog
) -> None:
    t = history_table(sqlite_catalog, 3)
    with t.update_spec() as spec:
        spec.remove_field("cat")
    t = sqlite_catalog.load_table("db.t")
    want = canon(t.scan().to_arrow())
    done = maintenance.rewrite_data_files(spark, t, options={"rewrite-all": "true"})
    t = sqlite_catalog.load_table("db.t")
    files = [task.file for task in t.scan().plan_files()]
    assert done.added_data_files_count == len(files) == 1  # unpartitioned now: one file
    assert files[0].spec_id == t.metadata.default_spec_id
    assert canon(t.scan().to_arrow()) == want


def test_spark_compaction_of_a_stale_handle_rebases(
    spark: SparkSession, sqlite_catalog: neve.Catalog
) -> None:
    """The Spark engine records where every row went, so a delete that landed on a
    file being compacted is carried over to the new files (the races themselves are in
    test_spark_compaction_rebase.py)."""
    t = history_table(sqlite_catalog, 3)
    stale = sqlite_catalog.load_table("db.t")
    t.delete("id = 15")
    want = canon(sqlite_catalog.load_table("db.t").scan().to_arrow())
    maintenance.rewrite_data_files(spark, stale, options={"min-input-files": "2"})
    after = sqlite_catalog.load_table("db.t")
    assert after.current_snapshot().operation is Operation.REPLACE  # type: ignore[union-attr]
    assert canon(after.scan().to_arrow()) == want
    assert 15 not in {r["id"] for r in after.scan().to_arrow().to_pylist()}


def test_spark_position_delete_rewrite(spark: SparkSession, sqlite_catalog: neve.Catalog) -> None:
    """v2 position deletes covering several data files each become one file-scoped
    delete file per data file; dangling ones go; then on v3 they become DVs."""
    t = scattered(sqlite_catalog)
    before = every_snapshot(t)
    plan = t.maintenance.rewrite_position_delete_files(dry_run=True)
    listing = on_disk(t)
    dry = maintenance.rewrite_position_delete_files(spark, t, dry_run=True)
    # four data files have position deletes; those of the dropped z file dangle
    assert dry == plan and plan.data_files == 4 and plan.dangling_delete_files == 1
    assert on_disk(t) == listing
    assert sqlite_catalog.load_table("db.t").metadata_location == t.metadata_location

    done = maintenance.rewrite_position_delete_files(spark, t)
    assert (done.data_files, done.removed_delete_files) == (
        plan.data_files,
        plan.removed_delete_files,
    )
    t = sqlite_catalog.load_table("db.t")
    assert t.current_snapshot().operation is Operation.REPLACE  # type: ignore[union-attr]
    for task in t.scan().plan_files():
        assert len(task.delete_files) <= 1
        assert all(d.referenced_data_file == task.file.file_path for d in task.delete_files)
    for sid, want in before.items():
        assert canon(t.scan(snapshot_id=sid).to_arrow()) == want
    assert listing <= on_disk(t)

    t.upgrade_format_version(3)
    t = sqlite_catalog.load_table("db.t")
    maintenance.rewrite_position_delete_files(spark, t)
    t = sqlite_catalog.load_table("db.t")
    deletes = delete_files_of(t)
    assert deletes and all(d.is_deletion_vector for d in deletes)
    assert all(d.content is DataFileContent.POSITION_DELETES for d in deletes)
    assert canon(t.scan().to_arrow()) == before[next(reversed(before))]


def test_spark_rewrite_manifests(spark: SparkSession, sqlite_catalog: neve.Catalog) -> None:
    t = history_table(sqlite_catalog, 3)
    before = every_snapshot(t)
    lineage = canon(t.scan(columns=LINEAGE).to_arrow())
    listing = on_disk(t)
    data_manifests = [m for m in manifest_list(t.metadata_location) if m["content"] == 0]
    done = maintenance.rewrite_manifests(spark, t)
    t = sqlite_catalog.load_table("db.t")
    # every data manifest is rewritten into the new snapshot's own data manifests
    head = t.current_snapshot()
    assert head is not None
    added = [
        m
        for m in manifest_list(t.metadata_location)
        if m["content"] == 0 and m["added_snapshot_id"] == head.snapshot_id
    ]
    assert done.rewritten_manifests_count == len(data_manifests)
    assert done.added_manifests_count == len(added) < len(data_manifests)
    assert t.current_snapshot().operation is Operation.REPLACE  # type: ignore[union-attr]
    for sid, want in before.items():
        assert canon(t.scan(snapshot_id=sid).to_arrow()) == want
    assert canon(t.scan(columns=LINEAGE).to_arrow()) == lineage
    assert listing <= on_disk(t)


def test_spark_sort_strategy(spark: SparkSession, sqlite_catalog: neve.Catalog) -> None:
    """The sort strategy on Spark writes each partition's rows in the order given; an
    order that is not the table's is recorded by no file (z-order:
    test_spark_zorder.py)."""
    t = history_table(sqlite_catalog, 3)
    want = canon(t.scan().to_arrow())
    live = [e for e in live_entries(t.metadata_location) if e.content == 0]
    done = maintenance.rewrite_data_files(
        spark, t, options={"rewrite-all": "true"}, strategy="sort", sort_order="v desc"
    )
    assert done.rewritten_data_files_count == len(live)  # rewrite-all: every data file
    t = sqlite_catalog.load_table("db.t")
    assert canon(t.scan().to_arrow()) == want
    for task in t.scan().plan_files():
        assert task.file.sort_order_id is None
        values = pq.read_table(task.file.file_path.removeprefix("file://")).column("v").to_pylist()
        assert values == sorted(values, reverse=True)
