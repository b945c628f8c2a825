"""Compaction on Spark racing other writers, as the pyarrow engine's
``tests/table/test_compaction_rebase.py``: the Spark writer tells where every row it
wrote came from, so a position delete (v2) or deletion vector (v3) committed while the
compaction runs is carried over to the new files, on bin-packed and sorted rewrites
alike; a concurrent copy-on-write rewrite of a file being compacted fails with a typed
conflict and the Spark-written files are gone.

The race is staged deterministically: the progress callback runs after the Spark job
wrote the groups and before the commit, and there another table handle commits."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import neve
from neve.planning.compaction import plan_compaction
from neve.spark import SparkEngine, maintenance
from neve.spec.snapshot import Operation
from neve.table.compaction import resolve_sort
from neve.table.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "table"))
from test_compaction_rebase import (
    assert_folder_is_reachable,
    canon,
    check_no_dangling_deletes,
    live_state,
    one_row_per_key,
    race_a_copy_on_write_rewrite,
    rows,
    small_files,
)

pytestmark = pytest.mark.spark


def history(t: Table) -> dict[int, list[tuple[Any, ...]]]:
    return {
        s.snapshot_id: canon(t.scan(snapshot_id=s.snapshot_id).to_arrow()) for s in t.snapshots()
    }


@pytest.mark.parametrize("version", [2, 3])
def test_a_delete_committed_during_a_spark_compaction_is_carried_over(
    spark: SparkSession, sqlite_catalog: neve.Catalog, version: int
) -> None:
    t = small_files(sqlite_catalog, version)
    other = sqlite_catalog.load_table("db.t")
    sources = {task.file.file_path for task in t.scan().plan_files()}
    seen: dict[str, Any] = {}

    def race(done: int, total: int) -> None:
        if done == 1:  # Spark wrote the groups; nothing committed yet
            other.delete("id in (5, 100, 101, 170)")
            other.refresh().upsert(rows([7, 8], tag="new"))
            theirs = sqlite_catalog.load_table("db.t")
            seen["rows"] = live_state(theirs, version)
            seen["head"] = theirs.current_snapshot()
            seen["history"] = history(theirs)

    result = maintenance.rewrite_data_files(spark, t, progress=race)
    assert result.rewritten_data_files_count == 18 and result.added_data_files_count == 3
    after = sqlite_catalog.load_table("db.t")
    head = after.current_snapshot()
    assert head is not None and head.operation is Operation.REPLACE
    assert head.parent_snapshot_id == seen["head"].snapshot_id  # landed after theirs
    assert live_state(after, version) == seen["rows"]  # their delete and upsert kept
    ids = {r["id"] for r in after.scan(columns=["id"]).to_arrow().to_pylist()}
    assert not ids & {1, 2, 40, 5, 100, 101, 170}
    got = {r["id"]: r["s"] for r in after.scan().to_arrow().to_pylist()}
    assert (got[7], got[8]) == ("new7", "new8")
    one_row_per_key(after)
    tasks = list(after.scan().plan_files())
    assert not {task.file.file_path for task in tasks} & sources  # all replaced
    marks = [d for task in tasks for d in task.delete_files]
    assert marks  # the carried-over deletes, on the Spark-written files
    if version >= 3:
        assert all(d.is_deletion_vector for d in marks)
    check_no_dangling_deletes(after)
    assert_folder_is_reachable(after)
    for sid, want in seen["history"].items():  # time travel to every kept snapshot
        assert canon(after.scan(snapshot_id=sid).to_arrow()) == want


def test_a_sorted_spark_compaction_rebases_too(
    spark: SparkSession, sqlite_catalog: neve.Catalog
) -> None:
    """Sorted by ``s desc``, each new file takes its rows from many places of many
    source files; a stale handle compacts over two later deletes."""
    t = small_files(sqlite_catalog, 3)
    stale = sqlite_catalog.load_table("db.t")
    t.delete("id = 100")
    t.delete("id in (103, 130, 11)")
    want = live_state(t, 3)
    maintenance.rewrite_data_files(spark, stale, strategy="sort", sort_order="s desc")
    after = sqlite_catalog.load_table("db.t")
    assert live_state(after, 3) == want
    one_row_per_key(after)
    check_no_dangling_deletes(after)
    assert_folder_is_reachable(after)
    for task in after.scan().plan_files():
        f = task.file.file_path.removeprefix("file://")
        values = pq.read_table(f).column("s").to_pylist()
        assert values == sorted(values, reverse=True)


@pytest.mark.parametrize("strategy", ["binpack", "sort"])
def test_spark_origins_name_each_written_row(
    spark: SparkSession, sqlite_catalog: neve.Catalog, strategy: str
) -> None:
    """The compactor's origins, read back: row k of every written file is the row at
    the recorded position of the recorded source file (deleted rows are in none)."""
    t = small_files(sqlite_catalog, 2)
    md = t.metadata
    sort = resolve_sort(md, strategy, "s desc" if strategy == "sort" else None)
    plan = plan_compaction(md, t.io, strategy=strategy, sort=sort)
    compacted = SparkEngine(spark).compact(t, plan, lambda _rows: None)
    try:
        raw = {p: pq.read_table(p.removeprefix("file://")) for p in compacted.sources}
        runs = 0
        copied = 0
        for f in compacted.files:
            origins = compacted.origins[f.file_path]
            assert origins.rows == f.record_count
            runs += len(origins.count)
            src, pos = origins.expand()
            got = pq.read_table(f.file_path.removeprefix("file://")).column("s").to_pylist()
            want = [
                raw[compacted.sources[i]].column("s")[p].as_py()
                for i, p in zip(src, pos, strict=True)
            ]
            assert got == want
            copied += f.record_count
        assert copied == sum(r.num_rows for r in raw.values()) - 3  # ids 1, 2, 40 deleted
        if strategy == "binpack":
            assert runs <= len(compacted.sources) + 3  # contiguous: about a run a source
        else:
            assert runs > 2 * len(compacted.sources)  # sorted: rows from all over
    finally:
        for f in compacted.files:
            t.io.delete(f.file_path)


def test_a_concurrent_copy_on_write_rewrite_conflicts_on_spark(
    spark: SparkSession, sqlite_catalog: neve.Catalog
) -> None:
    race_a_copy_on_write_rewrite(
        sqlite_catalog,
        lambda t, progress: maintenance.rewrite_data_files(spark, t, progress=progress),
    )
