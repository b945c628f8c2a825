"""Maintenance on Spark: ``neve.spark.maintenance`` plans and commits as
``table.maintenance`` does and deletes the files in Spark tasks; the table folder ends
holding exactly what the kept snapshots need, rows read the same, dry runs change
nothing."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import neve
from neve.spark import maintenance
from reference_reader import local_path, reached_files

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "table"))
from test_expire_snapshots import canon, history_table, needed, on_disk, rows

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("version", [2, 3])
def test_spark_expire_matches_the_pyarrow_plan(
    spark: SparkSession, sqlite_catalog: neve.Catalog, version: int
) -> None:
    t = history_table(sqlite_catalog, version)
    snaps = t.snapshots()
    before = {s.snapshot_id: canon(t.scan(snapshot_id=s.snapshot_id).to_arrow()) for s in snaps}
    cutoff = snaps[4].timestamp_ms
    # the files only the four snapshots older than the cut-off reach, read from the
    # metadata apart from neve
    only_expired = reached_files(t.metadata_location, [s.snapshot_id for s in snaps[:4]])
    still_kept = reached_files(t.metadata_location, [s.snapshot_id for s in snaps[4:]])
    doomed = set().union(*(only_expired[k] - still_kept[k] for k in only_expired))
    plan = t.maintenance.expire_snapshots(older_than=cutoff, dry_run=True)
    listing = on_disk(t)
    dry = maintenance.expire_snapshots(spark, t, older_than=cutoff, dry_run=True)
    assert (dry.expired_snapshot_ids, dry.files) == (plan.expired_snapshot_ids, plan.files)
    assert on_disk(t) == listing

    done = maintenance.expire_snapshots(spark, t, older_than=cutoff)
    assert done.files == plan.files and not done.failed
    assert done.expired_snapshot_ids == tuple(sorted(s.snapshot_id for s in snaps[:4]))
    assert {local_path(p) for p in done.files} == {local_path(p) for p in doomed}
    t = sqlite_catalog.load_table("db.t")
    assert on_disk(t) == needed(t)
    for s in t.snapshots():
        assert canon(t.scan(snapshot_id=s.snapshot_id).to_arrow()) == before[s.snapshot_id]


def test_spark_removes_orphans(spark: SparkSession, sqlite_catalog: neve.Catalog) -> None:
    t = history_table(sqlite_catalog, 3)
    root = Path(t.location.removeprefix("file://"))
    stray = []
    for i in range(5):
        p = root / "data" / f"crashed-{i}.parquet"
        pq.write_table(rows(range(3)), p)
        old = time.time() - 4 * 24 * 3600
        os.utime(p, (old, old))
        stray.append(str(p))
    want = canon(t.scan().to_arrow())
    dry = maintenance.remove_orphan_files(spark, t, dry_run=True)
    assert sorted(p.removeprefix("file://") for p in dry.orphan_file_locations) == sorted(stray)
    assert all(os.path.exists(p) for p in stray)
    done = maintenance.remove_orphan_files(spark, t)
    assert done.orphan_file_locations == dry.orphan_file_locations and not done.failed
    assert not any(os.path.exists(p) for p in stray)
    assert canon(sqlite_catalog.load_table("db.t").scan().to_arrow()) == want
