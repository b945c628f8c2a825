"""rewrite_position_delete_files: every data file ends with at most one position delete
file of its own (a DV in v3, a file-scoped Parquet file in v2), Parquet position deletes
of a table upgraded to v3 become DVs, dangling position deletes go, rows are the same at
every snapshot, the commit is a ``replace``, and a concurrent delete on a merged file
makes it fail with nothing left behind."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pytest

import neve
from neve.arrow.deletes import write_position_delete_file
from neve.errors import CommitConflictError
from neve.spec.manifest import DataFileContent
from neve.spec.snapshot import Operation
from neve.table.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string())])


def rows(ids: range | list[int]) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "cat": [["a", "b"][i % 2] for i in ids]}, schema=SCHEMA)


def canon(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def files_under(path: str) -> set[str]:
    root = path.removeprefix("file://")
    return {os.path.join(r, n) for r, _, ns in os.walk(root) for n in ns}


def scattered(catalog: neve.Catalog) -> Table:
    """A v2 table, partitioned by cat, four data files; position delete files that each
    cover several data files of a partition, several per data file, and one for a
    partition whose data files are later dropped whole (dangling)."""
    t = catalog.create_table("db.t", SCHEMA, partition_by=["cat"], format_version=2)
    t.append(rows(range(0, 20)))
    t.append(rows(range(20, 40)))
    t.append(pa.table({"id": [100, 101], "cat": ["z", "z"]}, schema=SCHEMA))
    t = catalog.load_table("db.t")
    by_cat: dict[str, list[Any]] = {}
    for task in t.scan().plan_files():
        by_cat.setdefault(task.file.partition[0], []).append(task.file)
    deletes = []
    for n, positions in enumerate(([0, 3], [5], [1, 2])):
        for cat in ("a", "b"):
            files = by_cat[cat]
            deletes.append(
                write_position_delete_file(
                    t.io,
                    f"{t.location}/data/pos-{cat}-{n}.parquet",
                    {f.file_path: positions for f in files},
                    partition=(cat,),
                )
            )
    (z,) = by_cat["z"]
    deletes.append(
        write_position_delete_file(
            t.io,
            f"{t.location}/data/pos-z.parquet",
            {z.file_path: [0], f"{t.location}/data/long-gone.parquet": [4]},  # partition-scoped
            partition=("z",),
        )
    )
    t.row_delta(delete_files=deletes)
    t = catalog.load_table("db.t")
    t.delete("cat = 'z'")  # drops the z file whole; its position deletes dangle
    return catalog.load_table("db.t")


def position_deletes_per_file(t: Table) -> dict[str, list[Any]]:
    return {
        task.file.file_path: [
            d for d in task.delete_files if d.content is DataFileContent.POSITION_DELETES
        ]
        for task in t.scan().plan_files()
    }


def live_delete_paths(t: Table) -> set[str]:
    return set(t.inspect.delete_files().column("file_path").to_pylist())


def test_v2_merges_per_data_file_and_drops_dangling(sqlite_catalog: neve.Catalog) -> None:
    t = scattered(sqlite_catalog)
    before = {
        s.snapshot_id: canon(t.scan(snapshot_id=s.snapshot_id).to_arrow()) for s in t.snapshots()
    }
    assert any(len(ds) > 1 for ds in position_deletes_per_file(t).values())
    assert any(p.endswith("pos-z.parquet") for p in live_delete_paths(t))
    listing = files_under(t.location)

    dry = t.maintenance.rewrite_position_delete_files(dry_run=True)
    assert dry.dry_run and dry.data_files == 4 and dry.dangling_delete_files == 1
    assert files_under(t.location) == listing

    done = t.maintenance.rewrite_position_delete_files()
    assert (done.data_files, done.added_delete_files) == (4, 4)
    assert done.removed_delete_files == 7 and done.dangling_delete_files == 1
    t = sqlite_catalog.load_table("db.t")
    head = t.current_snapshot()
    assert head is not None and head.operation is Operation.REPLACE
    for path, deletes in position_deletes_per_file(t).items():
        assert len(deletes) == 1 and deletes[0].referenced_data_file == path
        assert not deletes[0].is_deletion_vector
    assert len(live_delete_paths(t)) == 4  # nothing else is live, the dangling file neither
    for sid, want in before.items():
        assert canon(t.scan(snapshot_id=sid).to_arrow()) == want
    assert (
        canon(t.scan().to_arrow())
        == before[max(before, key=lambda s: t.snapshot_by_id(s).sequence_number)]
    )
    # a second run finds nothing to do
    again = t.maintenance.rewrite_position_delete_files()
    assert (again.data_files, again.removed_delete_files) == (0, 0)
    assert sqlite_catalog.load_table("db.t").current_snapshot() == head


def test_upgraded_to_v3_position_deletes_become_deletion_vectors(
    sqlite_catalog: neve.Catalog,
) -> None:
    t = scattered(sqlite_catalog)
    want = canon(t.scan().to_arrow())
    t.upgrade_format_version(3)
    t = sqlite_catalog.load_table("db.t")
    t.maintenance.rewrite_position_delete_files()
    t = sqlite_catalog.load_table("db.t")
    for path, deletes in position_deletes_per_file(t).items():
        assert len(deletes) == 1 and deletes[0].is_deletion_vector
        assert deletes[0].referenced_data_file == path
    assert canon(t.scan().to_arrow()) == want
    assert t.maintenance.rewrite_position_delete_files().data_files == 0


def test_a_concurrent_delete_on_a_merged_file_conflicts(sqlite_catalog: neve.Catalog) -> None:
    t = scattered(sqlite_catalog)
    stale = sqlite_catalog.load_table("db.t")
    t.delete("id = 7 or id = 8")  # merge-on-read: new deletes for files `stale` merges
    after_delete = sqlite_catalog.load_table("db.t")
    listing = files_under(t.location)
    with pytest.raises(CommitConflictError):
        stale.maintenance.rewrite_position_delete_files()
    assert files_under(t.location) == listing  # the merged files it wrote are gone
    assert sqlite_catalog.load_table("db.t").metadata_location == after_delete.metadata_location
