"""rewrite_data_files racing other writers: a position delete (v2) or deletion vector
(v3) committed while the compaction runs is carried over to the files it wrote (rows
equal to the concurrent writer's result, one live row per key), a concurrent
copy-on-write rewrite of a file being compacted fails with a typed conflict, and either
way the table folder holds exactly what the table reaches.

The race is staged deterministically: the compaction's progress callback runs after a
file group was read and written, before the commit, and there the other writer commits
(in another process, or through a second table handle)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neve
from neve.arrow.deletes import write_equality_delete_file
from neve.catalog import SqlCatalog
from neve.errors import CommitConflictError
from neve.spec.snapshot import Operation
from neve.table.maintenance import reachable_files
from neve.table.table import Table
from reference_reader import live_entries, local_path

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("day", pa.int32()),
        pa.field("s", pa.string()),
    ]
)
LINEAGE = ["id", "day", "s", "_row_id", "_last_updated_sequence_number"]


def rows(ids: range | list[int], tag: str = "v") -> pa.Table:
    ids = list(ids)
    return pa.table(
        {"id": ids, "day": [i % 3 for i in ids], "s": [f"{tag}{i}" for i in ids]}, schema=SCHEMA
    )


def canon(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def files_under(location: str) -> set[str]:
    root = location.removeprefix("file://").removeprefix("file:")
    return {os.path.join(r, n) for r, _, ns in os.walk(root) for n in ns}


def assert_folder_is_reachable(t: Table) -> None:
    """Every file below the table location is one the table reaches, and back."""
    reached = {p.removeprefix("file://").removeprefix("file:") for p in reachable_files(t)}
    assert files_under(t.location) == reached


def small_files(catalog: neve.Catalog, version: int, mode: str = "merge-on-read") -> Table:
    props = {f"write.{op}.mode": mode for op in ("delete", "update", "merge")}
    t = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_by=["day"],
        primary_key=["id"],
        format_version=version,
        properties=props,
    )
    for i in range(6):
        t.append(rows(range(i * 30, i * 30 + 30)))
    t.delete("id in (1, 2, 40)")  # deletes the compaction applies while reading
    return catalog.load_table("db.t")


def live_state(t: Table, version: int) -> list[tuple[Any, ...]]:
    cols = LINEAGE if version >= 3 else ["id", "day", "s"]
    return canon(t.refresh().scan(columns=cols).to_arrow())


def one_row_per_key(t: Table) -> None:
    ids = t.refresh().scan(columns=["id"]).to_arrow().column("id").to_pylist()
    assert len(ids) == len(set(ids))


def check_no_dangling_deletes(t: Table) -> None:
    live = {task.file.file_path for task in t.refresh().scan().plan_files()}
    for task in t.scan().plan_files():
        for d in task.delete_files:
            assert d.referenced_data_file in (None, *live)


CONCURRENT = """
import sys, neve, pyarrow as pa
cat = neve.connect(sys.argv[1], warehouse=sys.argv[2])
t = cat.load_table("db.t")
t.delete("id in (5, 100, 101, 170)")
t.upsert(pa.table({"id": [7, 8], "day": [1, 2], "s": ["new7", "new8"]},
                  schema=pa.schema([pa.field("id", pa.int64(), nullable=False),
                                    pa.field("day", pa.int32()), pa.field("s", pa.string())])))
"""


@pytest.mark.parametrize("version", [2, 3])
def test_deletes_committed_by_another_process_are_carried_over(
    sqlite_catalog: SqlCatalog, version: int
) -> None:
    t = small_files(sqlite_catalog, version)
    sources = {task.file.file_path for task in t.scan().plan_files()}
    seen: dict[str, Any] = {}

    def race(done: int, total: int) -> None:
        if done == 1:  # the first group is written; nothing committed yet
            uri, wh = sqlite_catalog.uri, sqlite_catalog.warehouse
            subprocess.run([sys.executable, "-c", CONCURRENT, uri, wh], check=True)
            theirs = sqlite_catalog.load_table("db.t")
            seen["rows"] = live_state(theirs, version)
            seen["head"] = theirs.current_snapshot()
            seen["history"] = {
                snap.snapshot_id: canon(theirs.scan(snapshot_id=snap.snapshot_id).to_arrow())
                for snap in theirs.snapshots()
            }

    result = t.maintenance.rewrite_data_files(progress=race)
    assert result.rewritten_data_files_count == 18 and result.added_data_files_count == 3
    after = sqlite_catalog.load_table("db.t")
    head = after.current_snapshot()
    assert head is not None and head.operation is Operation.REPLACE
    assert head.parent_snapshot_id == seen["head"].snapshot_id  # landed after theirs
    # the concurrent delete and upsert are kept, on the new files
    assert live_state(after, version) == seen["rows"]
    ids = {r["id"] for r in after.scan(columns=["id"]).to_arrow().to_pylist()}
    assert not ids & {1, 2, 40, 5, 100, 101, 170}
    got = {r["id"]: r["s"] for r in after.scan().to_arrow().to_pylist()}
    assert (got[7], got[8]) == ("new7", "new8")
    one_row_per_key(after)
    live = {task.file.file_path for task in after.scan().plan_files()}
    assert not live & sources  # every source file was replaced
    assert any(task.delete_files for task in after.scan().plan_files())  # carried-over marks
    check_no_dangling_deletes(after)
    assert_folder_is_reachable(after)
    # every earlier snapshot still reads as it did
    for sid, want in seen["history"].items():
        assert canon(after.scan(snapshot_id=sid).to_arrow()) == want


@pytest.mark.parametrize("version", [2, 3])
def test_a_stale_handle_compacts_over_later_deletes(
    sqlite_catalog: neve.Catalog, version: int
) -> None:
    """The compaction planned and read before two later deletes (one replacing the
    other's deletion vector in v3) landed: both are carried over, once."""
    t = small_files(sqlite_catalog, version)
    stale = sqlite_catalog.load_table("db.t")
    t.delete("id = 100")
    t.delete("id in (103, 130)")
    want = live_state(t, version)
    stale.maintenance.rewrite_data_files()
    after = sqlite_catalog.load_table("db.t")
    assert live_state(after, version) == want
    one_row_per_key(after)
    check_no_dangling_deletes(after)
    assert_folder_is_reachable(after)


def race_a_copy_on_write_rewrite(
    catalog: neve.Catalog, rewrite: Callable[[Table, Callable[[int, int], None]], object]
) -> None:
    """``rewrite(table, progress)`` compacts while another handle replaces one of the
    files by a copy-on-write delete: a typed conflict, the other commit kept, and the
    compaction's files gone (for both engines)."""
    t = small_files(catalog, 3, mode="copy-on-write")
    other = catalog.load_table("db.t")
    seen: dict[str, Any] = {}

    def race(done: int, total: int) -> None:
        if done == 1:
            other.delete("id = 100")  # copy-on-write: the file holding 100 is replaced
            fresh = catalog.load_table("db.t")
            seen["md"] = fresh.metadata_location
            seen["rows"] = live_state(fresh, 3)

    with pytest.raises(CommitConflictError, match="no longer in the table"):
        rewrite(t, race)
    after = catalog.load_table("db.t")
    assert after.metadata_location == seen["md"]
    assert live_state(after, 3) == seen["rows"]
    assert_folder_is_reachable(after)  # the compaction's files are gone


def test_a_concurrent_copy_on_write_rewrite_conflicts(sqlite_catalog: neve.Catalog) -> None:
    race_a_copy_on_write_rewrite(
        sqlite_catalog, lambda t, progress: t.maintenance.rewrite_data_files(progress=progress)
    )


def test_concurrent_equality_deletes_and_the_starting_sequence_number(
    sqlite_catalog: neve.Catalog,
) -> None:
    """With the starting snapshot's sequence number (the default) an equality delete
    committed meanwhile still applies to the new files; with a new sequence number it
    would not, so that compaction refuses (Iceberg-Java's rule)."""

    def eq_delete(t: Table, s: str, day: int) -> None:
        schema = t.schema()
        f = write_equality_delete_file(
            t.io,
            f"{t.location}/data/eq-{s}.parquet",
            schema,
            [schema.find_field("s").field_id],
            pa.table({"s": [s]}),
            partition=(day,),
            spec_id=t.spec().spec_id,
        )
        t.row_delta([], [f])

    t = small_files(sqlite_catalog, 2)
    stale = sqlite_catalog.load_table("db.t")
    eq_delete(t, "v31", 1)
    want = live_state(t, 2)
    assert 31 not in {r[0] for r in want}
    listing = files_under(t.location)
    with pytest.raises(CommitConflictError, match="concurrent commit"):
        stale.maintenance.rewrite_data_files(options={"use-starting-sequence-number": "false"})
    assert files_under(t.location) == listing
    start = stale.current_snapshot()
    assert start is not None
    stale.maintenance.rewrite_data_files()
    after = sqlite_catalog.load_table("db.t")
    assert live_state(after, 2) == want
    new = [task for task in after.scan().plan_files()]
    assert {task.data_sequence_number for task in new} == {start.sequence_number}
    assert_folder_is_reachable(after)


def test_a_concurrent_rewrite_of_the_delete_files_is_carried_over(
    sqlite_catalog: neve.Catalog,
) -> None:
    """Another maintenance job turned the position deletes of files being compacted
    into deletion vectors (a ``replace`` snapshot): the compaction removes those."""
    t = small_files(sqlite_catalog, 2)
    t.upgrade_format_version(3)  # its Parquet position deletes now qualify
    stale = sqlite_catalog.load_table("db.t")
    # the live data files that a Parquet position delete file names, read apart from neve
    entries = live_entries(t.metadata_location)
    named = {
        path
        for e in entries
        if e.content == 1 and e.file_format.upper() == "PARQUET"
        for path in pq.read_table(local_path(e.path), columns=["file_path"])[
            "file_path"
        ].to_pylist()
    }
    with_deletes = named & {e.path for e in entries if e.content == 0}
    merged = t.maintenance.rewrite_position_delete_files()
    assert merged.data_files == len(with_deletes) > 0
    want = live_state(t, 2)
    stale.maintenance.rewrite_data_files()
    after = sqlite_catalog.load_table("db.t")
    assert live_state(after, 2) == want
    assert not any(task.delete_files for task in after.scan().plan_files())
    assert_folder_is_reachable(after)


@pytest.mark.parametrize("version", [2, 3])
def test_compactions_in_a_loop_while_a_writer_upserts_and_deletes(
    sqlite_catalog: SqlCatalog, version: int
) -> None:
    """A thread compacts over and over while the test upserts and deletes keys: however
    the commits interleave, the table ends equal to the writer's model with one row per
    key and nothing left behind (a writer change that a compaction moved rows from is
    refused as a conflict and made again; the compactions carry the writer's deletes)."""
    t = small_files(sqlite_catalog, version)
    model = {r["id"]: r["s"] for r in t.scan().to_arrow().to_pylist()}
    rng = random.Random(version)
    stop = threading.Event()
    failures: list[BaseException] = []
    landed: list[int] = []

    def compact_forever() -> None:
        own = neve.connect(sqlite_catalog.uri, warehouse=sqlite_catalog.warehouse)
        c = own.load_table("db.t")
        while not stop.is_set() or not landed:  # at least one lands
            try:
                result = c.refresh().maintenance.rewrite_data_files(
                    options={"min-input-files": "2", "delete-ratio-threshold": "0.01"}
                )
                landed.append(result.commits)
            except CommitConflictError:
                continue
            except BaseException as exc:
                failures.append(exc)
                return

    thread = threading.Thread(target=compact_forever)
    thread.start()
    try:
        w = sqlite_catalog.load_table("db.t")
        for i in range(16):
            keys = rng.sample(range(200), 5)
            for _attempt in range(50):
                try:
                    if i % 2 == 0:
                        w.refresh().upsert(rows(keys, tag=f"u{i}-"))
                    else:
                        w.refresh().delete(f"id in ({', '.join(map(str, keys))})")
                    break
                except CommitConflictError:
                    continue
            else:
                pytest.fail("the writer lost 50 times in a row")
            for k in keys:
                if i % 2 == 0:
                    model[k] = f"u{i}-{k}"
                else:
                    model.pop(k, None)
    finally:
        stop.set()
        thread.join()
    assert not failures, failures
    assert sum(landed) > 0  # compactions did land in between
    after = sqlite_catalog.load_table("db.t")
    got = after.scan(columns=["id", "s"]).to_arrow().to_pylist()
    assert len(got) == len(model)
    assert {r["id"]: r["s"] for r in got} == model
    assert_folder_is_reachable(after)
