"""Bin-pack compaction, rewrite_data_files: small files and files with many deleted rows
are rewritten per partition into target-size files with their deletes applied, as one
``replace`` snapshot; rows read the same at every snapshot, row ids stay (v3),
Iceberg-Java's options decide what qualifies, and a concurrent delete on a file being
compacted is carried over to the new files (more in test_compaction_rebase.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import neve
from neve.errors import ValidationError
from neve.spec.snapshot import Operation
from neve.table.table import Table
from reference_reader import live_entries

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("day", pa.int32()),
        pa.field("s", pa.string()),
    ]
)


def rows(ids: range | list[int]) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {"id": ids, "day": [i % 3 for i in ids], "s": [f"v{i}" for i in ids]}, schema=SCHEMA
    )


def canon(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def files_under(path: str) -> set[str]:
    root = path.removeprefix("file://")
    return {os.path.join(r, n) for r, _, ns in os.walk(root) for n in ns}


def data_files_per_partition(t: Table) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for task in t.scan().plan_files():
        out[task.file.partition] = out.get(task.file.partition, 0) + 1
    return out


@pytest.fixture(params=["sqlite", pytest.param("rest", marks=pytest.mark.rest)])
def catalog(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    catalog_factory: Callable[[str], neve.Catalog],
) -> neve.Catalog:
    """A SQLite catalog, and neve's REST client against ``neve serve``."""
    cat = (
        catalog_factory("rest")
        if request.param == "rest"
        else neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    )
    cat.create_namespace("db")
    return cat


def small_files(catalog: neve.Catalog, version: int) -> Table:
    t = catalog.create_table(
        "db.t", SCHEMA, partition_by=["day"], primary_key=["id"], format_version=version
    )
    for i in range(8):
        t.append(rows(range(i * 30, i * 30 + 30)))
    t.delete("id in (1, 2, 3, 40, 41, 200)")  # merge-on-read deletes on several files
    return catalog.load_table("db.t")


@pytest.mark.parametrize("version", [2, 3])
def test_small_files_become_one_per_partition(catalog: neve.Catalog, version: int) -> None:
    t = small_files(catalog, version)
    before = {
        s.snapshot_id: canon(t.scan(snapshot_id=s.snapshot_id).to_arrow()) for s in t.snapshots()
    }
    lineage_cols = ["id", "_row_id", "_last_updated_sequence_number"]
    lineage = canon(t.scan(columns=lineage_cols).to_arrow()) if version >= 3 else None
    assert set(data_files_per_partition(t).values()) == {8}
    # every data file is rewritten, so every live delete entry (a DV per data file in
    # v3, read from the manifests apart from neve) goes with it
    delete_entries = [e for e in live_entries(t.metadata_location) if e.content != 0]

    dry = t.maintenance.rewrite_data_files(dry_run=True)
    assert dry.dry_run and dry.rewritten_data_files_count == 24 and dry.file_groups == 3
    assert catalog.load_table("db.t").metadata_location == t.metadata_location

    done = t.maintenance.rewrite_data_files()
    assert (done.rewritten_data_files_count, done.added_data_files_count) == (24, 3)
    assert done.removed_delete_files_count == len(delete_entries) > 0
    t = catalog.load_table("db.t")
    head = t.current_snapshot()
    assert head is not None and head.operation is Operation.REPLACE
    assert set(data_files_per_partition(t).values()) == {1}
    assert all(not task.delete_files for task in t.scan().plan_files())  # deletes applied
    for sid, want in before.items():
        assert canon(t.scan(snapshot_id=sid).to_arrow()) == want
    if lineage is not None:
        assert canon(t.scan(columns=lineage_cols).to_arrow()) == lineage
    assert "rewrote data files" in str(done)
    # nothing left to do
    assert t.maintenance.rewrite_data_files().rewritten_data_files_count == 0


def test_options_decide_what_is_rewritten(catalog: neve.Catalog) -> None:
    t = small_files(catalog, 2)
    few = t.maintenance.rewrite_data_files(options={"min-input-files": "9"}, dry_run=True)
    assert few.rewritten_data_files_count == 0  # 8 files per partition are not enough
    one = t.maintenance.rewrite_data_files(where="day = 1", dry_run=True)
    assert (one.rewritten_data_files_count, one.file_groups) == (8, 1)
    # a large target: every file is "small"; a tiny maximum: every file is "large"
    tiny = {"target-file-size-bytes": "10", "min-file-size-bytes": "1", "max-file-size-bytes": "20"}
    packed = t.maintenance.rewrite_data_files(options=tiny, dry_run=True)
    assert (packed.rewritten_data_files_count, packed.file_groups) == (24, 3)
    alone = {**tiny, "max-file-group-size-bytes": "1"}  # one file per group
    assert t.maintenance.rewrite_data_files(options=alone, dry_run=True).file_groups == 24
    with pytest.raises(ValidationError, match="unknown rewrite_data_files options"):
        t.maintenance.rewrite_data_files(options={"target-size": "1"})
    with pytest.raises(ValidationError, match="min-file-size-bytes <= target"):
        t.maintenance.rewrite_data_files(options={"min-file-size-bytes": str(1 << 40)})


def test_a_file_with_many_deleted_rows_is_rewritten_alone(catalog: neve.Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, format_version=3)
    t.append(rows(range(100)))
    t.delete("id < 40")  # 40% of the one file
    t = catalog.load_table("db.t")
    # the file is within the size limits: only its deleted rows make it qualify
    big = {"min-file-size-bytes": "1", "max-file-size-bytes": str(1 << 40)}
    assert t.maintenance.rewrite_data_files(options=big, dry_run=True).file_groups == 1
    lenient = {**big, "delete-ratio-threshold": "0.5"}
    assert t.maintenance.rewrite_data_files(options=lenient, dry_run=True).file_groups == 0
    t.maintenance.rewrite_data_files(options=big)
    t = catalog.load_table("db.t")
    (task,) = t.scan().plan_files()
    assert task.file.record_count == 60 and not task.delete_files


def test_a_concurrent_delete_on_a_compacted_file_is_carried_over(
    catalog: neve.Catalog,
) -> None:
    t = small_files(catalog, 3)
    stale = catalog.load_table("db.t")
    t.delete("id = 100")
    after = catalog.load_table("db.t")
    want = canon(after.scan().to_arrow())
    stale.maintenance.rewrite_data_files()
    done = catalog.load_table("db.t")
    assert done.current_snapshot().parent_snapshot_id == after.current_snapshot().snapshot_id
    assert canon(done.scan().to_arrow()) == want
    assert 100 not in {r["id"] for r in done.scan().to_arrow().to_pylist()}
