"""A commit keeps the manifest list it wrote (``remember_manifest_list``), so the next
commit on top of it does not read it back. What it keeps must be what a read of the
file gives: every snapshot a sequence of changes made in this process, v2 and v3,
partitioned, with deletes, overwrites, compaction and manifest merges."""

from __future__ import annotations

import pyarrow as pa
import pytest

import neve
from neve.planning.manifest_cache import manifest_cache
from neve.planning.manifests import read_manifest_list

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("g", pa.string())])


def rows(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "g": [f"g{i % 3}" for i in ids]}, schema=SCHEMA)


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_kept_manifest_lists_equal_the_files(
    sqlite_catalog: neve.Catalog, version: int, mode: str
) -> None:
    props = {
        "write.delete.mode": mode,
        "write.update.mode": mode,
        "commit.manifest.min-count-to-merge": "3",
    }
    t = sqlite_catalog.create_table(
        "db.t", SCHEMA, partition_by=["g"], format_version=version, properties=props
    )
    for k in range(5):
        t.append(rows(range(k * 10, k * 10 + 10)))
    t.delete("id < 5")
    t.delete("id in (12, 33)")
    t.overwrite(rows(range(100, 104)), "g = 'g1'")
    t.update({"g": "g0"}, "id = 101")
    t.maintenance.rewrite_data_files()
    t.maintenance.rewrite_manifests()
    t.append(rows(range(200, 203)))
    t = t.refresh()
    cache = manifest_cache()
    kept = 0
    for snap in t.metadata.snapshots:
        with cache._lock:  # what the cache holds, without reading on a miss
            held = cache._lists.get(snap.manifest_list)
        if held is None:
            continue
        kept += 1
        assert held == read_manifest_list(t.io, snap.manifest_list), snap.snapshot_id
    assert kept >= len(t.metadata.snapshots) - 1  # every commit's list (not evicted)
    # and the table reads as the changes say
    ids = sorted(t.scan().to_arrow().column("id").to_pylist())
    assert ids == sorted(
        [i for i in range(5, 50) if i not in (12, 33) and i % 3 != 1]
        + [100, 101, 102, 103]
        + [200, 201, 202]
    )
