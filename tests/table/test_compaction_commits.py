"""How rewrite_data_files commits: partial progress (groups in several ``replace``
commits; a failed one removes only its own files), the data sequence number of the new
files (use-starting-sequence-number), remove-dangling-deletes, automatic compaction
after appends and upserts, and the progress callback."""

from __future__ import annotations

import logging
import os
from typing import Any

import pyarrow as pa
import pytest

import neve
from neve.arrow.deletes import write_equality_delete_file
from neve.errors import CommitError, NeveIOError
from neve.spec.snapshot import Operation
from neve.table.maintenance import reachable_files
from neve.table.table import Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("day", pa.int32()),
        pa.field("s", pa.string()),
    ]
)


def rows(ids: range | list[int], tag: str = "v") -> pa.Table:
    ids = list(ids)
    return pa.table(
        {"id": ids, "day": [i % 3 for i in ids], "s": [f"{tag}{i}" for i in ids]}, schema=SCHEMA
    )


def canon(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def assert_folder_is_reachable(t: Table) -> None:
    root = t.location.removeprefix("file://").removeprefix("file:")
    listed = {os.path.join(r, n) for r, _, ns in os.walk(root) for n in ns}
    reached = {p.removeprefix("file://").removeprefix("file:") for p in reachable_files(t)}
    assert listed == reached


def files_per_day(t: Table) -> dict[int, int]:
    out: dict[int, int] = {}
    for task in t.refresh().scan().plan_files():
        out[task.file.partition[0]] = out.get(task.file.partition[0], 0) + 1
    return out


def small_files(catalog: neve.Catalog, version: int, **props: str) -> Table:
    props = {"write.delete.mode": "copy-on-write", **props}
    t = catalog.create_table(
        "db.t", SCHEMA, partition_by=["day"], format_version=version, properties=props
    )
    for i in range(6):
        t.append(rows(range(i * 30, i * 30 + 30)))
    return catalog.load_table("db.t")


def test_partial_progress_keeps_the_commits_before_a_failed_group(
    sqlite_catalog: neve.Catalog,
) -> None:
    t = small_files(sqlite_catalog, 3)
    seen: dict[str, Any] = {}
    calls: list[tuple[int, int]] = []

    def race(done: int, total: int) -> None:
        calls.append((done, total))
        if done == 2:  # group 1 (day 0) committed, group 2 (day 1) written
            seen["first"] = sqlite_catalog.load_table("db.t").current_snapshot()
            # copy-on-write: another writer replaces a file of group 2
            sqlite_catalog.load_table("db.t").delete("day = 1 and id = 4")
            seen["rows"] = canon(sqlite_catalog.load_table("db.t").scan().to_arrow())

    options = {"partial-progress.enabled": "true", "partial-progress.max-commits": "3"}
    result = t.maintenance.rewrite_data_files(options=options, progress=race)
    assert calls == [(1, 3), (2, 3), (3, 3)]
    assert seen["first"].operation is Operation.REPLACE  # group 1 landed before group 2
    assert (result.commits, result.file_groups) == (2, 3)
    assert result.rewritten_data_files_count == 12 and result.failed_data_files_count == 6
    assert "data files in failed groups" in str(result)
    after = sqlite_catalog.load_table("db.t")
    assert canon(after.scan().to_arrow()) == seen["rows"]
    assert files_per_day(after) == {0: 1, 1: 6, 2: 1}
    ops = [s.operation for s in after.snapshots()][-4:]
    assert ops == [Operation.APPEND, Operation.REPLACE, Operation.OVERWRITE, Operation.REPLACE]
    assert_folder_is_reachable(after)  # the failed group's files are gone


def test_too_many_failed_commits_stop_the_rewrite(sqlite_catalog: neve.Catalog) -> None:
    t = small_files(sqlite_catalog, 2)

    def race(done: int, total: int) -> None:
        if done == 2:
            sqlite_catalog.load_table("db.t").delete("day = 1 and id = 4")

    options = {
        "partial-progress.enabled": "true",
        "partial-progress.max-commits": "3",
        "partial-progress.max-failed-commits": "0",
    }
    with pytest.raises(CommitError, match="max-failed-commits=0"):
        t.maintenance.rewrite_data_files(options=options, progress=race)
    after = sqlite_catalog.load_table("db.t")
    assert files_per_day(after) == {0: 1, 1: 6, 2: 6}  # the first commit stays
    assert_folder_is_reachable(after)


def test_groups_share_commits_up_to_max_commits(sqlite_catalog: neve.Catalog) -> None:
    t = small_files(sqlite_catalog, 2)
    before = canon(t.scan().to_arrow())
    first = len(t.snapshots())
    options = {"partial-progress.enabled": "true", "partial-progress.max-commits": "2"}
    result = t.maintenance.rewrite_data_files(options=options)
    assert (result.commits, result.file_groups) == (2, 3)  # 2 groups, then 1
    after = sqlite_catalog.load_table("db.t")
    assert len(after.snapshots()) == first + 2
    assert canon(after.scan().to_arrow()) == before


@pytest.mark.parametrize("starting", [True, False])
def test_new_files_keep_the_starting_sequence_number(
    sqlite_catalog: neve.Catalog, starting: bool
) -> None:
    t = small_files(sqlite_catalog, 3)
    start = t.current_snapshot()
    assert start is not None
    t.maintenance.rewrite_data_files(
        options={"use-starting-sequence-number": str(starting).lower()}
    )
    after = sqlite_catalog.load_table("db.t")
    head = after.current_snapshot()
    assert head is not None
    want = start.sequence_number if starting else head.sequence_number
    assert {task.data_sequence_number for task in after.scan().plan_files()} == {want}
    # v3 rows keep the sequence number they were last updated at either way
    seqs = after.scan(columns=["_last_updated_sequence_number"]).to_arrow()
    assert max(seqs.column(0).to_pylist()) <= start.sequence_number


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


def delete_file_names(t: Table) -> set[str]:
    paths = t.refresh().inspect.delete_files().column("file_path").to_pylist()
    return {p.rsplit("/", 1)[-1] for p in paths}


def test_remove_dangling_deletes(sqlite_catalog: neve.Catalog) -> None:
    t = small_files(sqlite_catalog, 2, **{"write.delete.mode": "merge-on-read"})
    for s, day in (("v3", 0), ("v4", 1), ("v5", 2)):
        eq_delete(t, s, day)
    t.delete("id in (9, 10)")  # a file-scoped position delete file for day 0 and day 1
    before = canon(t.scan().to_arrow())
    assert not {3, 4, 5, 9, 10} & {r[0] for r in before}
    # without the option, the equality delete of a compacted partition stays behind
    plain = t.maintenance.rewrite_data_files(where="day = 0")
    assert plain.removed_delete_files_count == 1  # the rewritten file's own
    assert "eq-v3.parquet" in delete_file_names(t)
    # with it, whatever applies to no live file goes, in a commit of its own; day 2's
    # equality delete still applies to day 2's files and stays
    done = t.maintenance.rewrite_data_files(
        where="day = 1", options={"remove-dangling-deletes": "true"}
    )
    assert done.removed_delete_files_count == 1 + 2  # day 1's position deletes, eq-v3/v4
    names = delete_file_names(t)
    assert "eq-v5.parquet" in names and not {"eq-v3.parquet", "eq-v4.parquet"} & names
    after = sqlite_catalog.load_table("db.t")
    ops = [s.operation for s in after.snapshots()][-2:]
    assert ops == [Operation.REPLACE, Operation.REPLACE]
    assert canon(after.scan().to_arrow()) == before
    assert_folder_is_reachable(after)


def test_auto_compaction_after_appends(sqlite_catalog: neve.Catalog, caplog: Any) -> None:
    props = {"write.auto-compact.enabled": "true", "write.auto-compact.min-input-files": "3"}
    t = sqlite_catalog.create_table(
        "db.t", SCHEMA, partition_by=["day"], primary_key=["id"], properties=props
    )
    t.append(rows(range(0, 9)))
    t.append(rows(range(9, 18)))
    assert files_per_day(t) == {0: 2, 1: 2, 2: 2}
    t.append(rows([18, 21]))  # day 0 only: it reaches 3 files and is compacted
    assert files_per_day(t) == {0: 1, 1: 2, 2: 2}
    ops = [s.operation for s in t.snapshots()][-2:]
    assert ops == [Operation.APPEND, Operation.REPLACE]
    t.upsert(rows([1, 4, 100], tag="u"))  # day 1 gets a third file
    assert files_per_day(t)[1] == 1
    got = {r["id"]: r["s"] for r in t.scan().to_arrow().to_pylist()}
    assert len(got) == 21 and got[1] == "u1" and got[100] == "u100"
    ids = t.scan(columns=["id"]).to_arrow().column("id").to_pylist()
    assert len(ids) == len(set(ids))
    assert_folder_is_reachable(t)

    # a compaction that fails does not fail the write: it is logged (an engine whose
    # compaction fails to write, as a full disk would make it)
    class FullDisk(neve.ArrowEngine):
        def compact(self, table: Any, plan: Any, on_group: Any) -> Any:
            raise NeveIOError("no space left on device")

    t.set_properties({"write.auto-compact.min-input-files": "2"})
    with (
        caplog.at_level(logging.WARNING, logger="neve.compaction"),
        t.transaction(FullDisk()) as tx,
    ):
        tx.append(rows([200, 203, 206]))
    assert "automatic compaction" in caplog.text and "no space left" in caplog.text
    assert t.refresh().current_snapshot().operation is Operation.APPEND
    assert 206 in t.scan(columns=["id"]).to_arrow().column("id").to_pylist()


def test_no_auto_compaction_by_default(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA, partition_by=["day"])
    for i in range(7):
        t.append(rows([i * 3]))
    assert files_per_day(t) == {0: 7}
