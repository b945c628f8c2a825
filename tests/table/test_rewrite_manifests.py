"""rewrite_manifests: many small data manifests become few, clustered by partition;
rows, time travel, data sequence numbers and row ids read exactly as before; the commit
is a ``replace``; a concurrent append during the rewrite is kept."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import neve
from neve.planning.manifests import read_manifest_list
from neve.spec.manifest import ManifestContent
from neve.spec.snapshot import Operation
from neve.table.table import Table
from reference_reader import manifest_list

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("day", pa.int32())])
NO_MERGE = {"commit.manifest-merge.enabled": "false"}


def rows(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "day": [i % 5 for i in ids]}, schema=SCHEMA)


def data_manifests(t: Table) -> list[Any]:
    s = t.current_snapshot()
    assert s is not None
    return [
        m for m in read_manifest_list(t.io, s.manifest_list) if m.content is ManifestContent.DATA
    ]


def fingerprint(t: Table) -> list[tuple[Any, ...]]:
    """Each data file with its data sequence number and its rows' ids and row ids."""
    out = []
    for task in t.scan().plan_files():
        out.append((task.file.file_path, task.data_sequence_number, task.file.first_row_id))
    return sorted(out)


@pytest.mark.parametrize("version", [2, 3])
def test_many_small_manifests_become_few(sqlite_catalog: neve.Catalog, version: int) -> None:
    t = sqlite_catalog.create_table(
        "db.t", SCHEMA, partition_by=["day"], format_version=version, properties=NO_MERGE
    )
    for i in range(12):
        t.append(rows(range(i * 10, i * 10 + 10)))
    t.delete("id < 15")
    t = sqlite_catalog.load_table("db.t")
    before = {
        s.snapshot_id: sorted(t.scan(snapshot_id=s.snapshot_id).to_arrow().to_pylist(), key=str)
        for s in t.snapshots()
    }
    lineage = (
        sorted(
            t.scan(columns=["id", "_row_id", "_last_updated_sequence_number"])
            .to_arrow()
            .to_pylist(),
            key=str,
        )
        if version >= 3
        else None
    )
    files = fingerprint(t)
    # merging off: a data manifest per append (the delete rewrote the first, whose files
    # it dropped whole), counted in the manifest list read apart from neve
    listed = [m for m in manifest_list(t.metadata_location) if m["content"] == 0]
    assert len(data_manifests(t)) == len(listed) >= 12

    result = t.maintenance.rewrite_manifests()
    t = sqlite_catalog.load_table("db.t")
    assert result.rewritten_manifests_count == len(listed) and result.added_manifests_count == 1
    assert len(data_manifests(t)) == 1
    head = t.current_snapshot()
    assert head is not None and head.operation is Operation.REPLACE
    assert fingerprint(t) == files
    for sid, want in before.items():
        assert sorted(t.scan(snapshot_id=sid).to_arrow().to_pylist(), key=str) == want
    if lineage is not None:
        got = t.scan(columns=["id", "_row_id", "_last_updated_sequence_number"]).to_arrow()
        assert sorted(got.to_pylist(), key=str) == lineage
    # a filter on the partition still finds its rows, from the one manifest
    assert len(t.scan(filter="day = 3").to_arrow()) == len(
        [i for i in range(15, 120) if i % 5 == 3]
    )


def test_small_target_clusters_by_partition(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA, partition_by=["day"], properties=NO_MERGE)
    for i in range(10):
        t.append(rows(range(i * 10, i * 10 + 10)))
    t.set_properties({"commit.manifest.target-size-bytes": "1"})  # one entry per manifest
    t = sqlite_catalog.load_table("db.t")
    t.maintenance.rewrite_manifests()
    t = sqlite_catalog.load_table("db.t")
    manifests = data_manifests(t)
    assert len(manifests) == 50  # 10 appends x 5 days, one file each
    for m in manifests:
        summary = m.partitions[0]
        assert summary.lower_bound == summary.upper_bound  # one partition per manifest


def test_a_concurrent_append_is_kept(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA, partition_by=["day"], properties=NO_MERGE)
    for i in range(4):
        t.append(rows(range(i * 10, i * 10 + 10)))
    stale = sqlite_catalog.load_table("db.t")
    t.append(rows(range(100, 103)))
    stale.maintenance.rewrite_manifests()
    t = sqlite_catalog.load_table("db.t")
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [*range(40), 100, 101, 102]
    assert len(data_manifests(t)) == 1
