"""Which deletes apply to which data file, at table level (SPEC-NOTES "Delete files"):

- position deletes (and DVs) apply to data with data seq <= their seq, so a position
  delete committed with its data file applies to it;
- equality deletes apply only to data with a strictly lower seq, so one committed
  with data does not apply to that data, nor to data added later;
- a deletion vector for a data file replaces every position delete file for it;
- equality deletes in an unpartitioned spec are global; otherwise deletes apply only
  within their spec and partition; ``referenced_data_file`` pins a delete to one file.

Rows are checked through ``scan().to_arrow()`` and the delete assignment through
``plan_files()``. Positions of rows are read from the data files themselves.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neve.arrow.deletes import (
    write_deletion_vector_puffin,
    write_equality_delete_file,
    write_position_delete_file,
)
from neve.arrow.write import write_table_files
from neve.catalog import Catalog
from neve.errors import CommitConflictError, ValidationError
from neve.io.fileio import local_path
from neve.planning.manifests import read_manifest, read_manifest_list
from neve.spec.manifest import DataFile, DataFileContent, ManifestContent
from neve.spec.snapshot import Operation
from neve.table.table import Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("cat", pa.string()),
        pa.field("v", pa.string()),
    ]
)


def rows(ids: Iterable[int], cat: str = "a", tag: str = "v") -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "cat": [cat] * len(ids),
            "v": [f"{tag}{i}" for i in ids],
        },
        schema=SCHEMA,
    )


def write(table: Table, data: pa.Table) -> DataFile:
    (f,) = write_table_files(table, data)
    return f


def positions(f: DataFile, ids: Iterable[int]) -> list[int]:
    """Row positions of ``ids`` in the data file, read from the file itself."""
    col = pq.read_table(local_path(f.file_path), columns=["id"]).column("id").to_pylist()
    return [col.index(i) for i in ids]


def pos_delete(table: Table, deletes: dict[DataFile, Sequence[int]]) -> DataFile:
    """A Parquet position delete file deleting ``ids`` of each data file."""
    some = next(iter(deletes))
    return write_position_delete_file(
        table.io,
        f"{table.location}/data/pos-{uuid.uuid4().hex}.parquet",
        {f.file_path: positions(f, ids) for f, ids in deletes.items()},
        partition=some.partition,
        spec_id=some.spec_id,
    )


def dv(table: Table, f: DataFile, ids: Iterable[int]) -> DataFile:
    (out,) = write_deletion_vector_puffin(
        table.io,
        f"{table.location}/data/dv-{uuid.uuid4().hex}.puffin",
        {f.file_path: positions(f, ids)},
        data_files={f.file_path: f},
    )
    return out


def eq_delete(
    table: Table, ids: Iterable[int], *, partition: tuple[object, ...] = (), spec_id: int = 0
) -> DataFile:
    schema = table.schema()
    key = schema.find_field("id")
    return write_equality_delete_file(
        table.io,
        f"{table.location}/data/eq-{uuid.uuid4().hex}.parquet",
        schema,
        [key.field_id],
        pa.table({"id": pa.array(list(ids), pa.int64())}),
        partition=partition,
        spec_id=spec_id,
    )


def live(table: Table, **scan: object) -> list[tuple[int, str]]:
    got = table.scan(**scan).to_arrow()  # type: ignore[arg-type]
    return sorted(zip(got.column("id").to_pylist(), got.column("v").to_pylist(), strict=True))


def expect(ids: Iterable[int], tag: str = "v") -> list[tuple[int, str]]:
    return sorted((i, f"{tag}{i}") for i in ids)


def assigned(table: Table, **scan: object) -> dict[str, set[str]]:
    """Data file path -> paths (with DV offsets) of the deletes planned for it."""
    out: dict[str, set[str]] = {}
    for task in table.scan(**scan).plan_files():  # type: ignore[arg-type]
        out.setdefault(task.file.file_path, set()).update(_key(d) for d in task.delete_files)
    return out


def _key(d: DataFile) -> str:
    return d.file_path if d.content_offset is None else f"{d.file_path}@{d.content_offset}"


# -- (a) same commit ---------------------------------------------------------------------


def test_position_delete_in_same_commit_as_its_data_applies(sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA)
    f = write(t, rows(range(10)))
    pos = pos_delete(t, {f: [2, 5]})
    assert pos.referenced_data_file == f.file_path
    t.row_delta([f], [pos])
    snap = t.current_snapshot()
    assert snap is not None and snap.operation is Operation.OVERWRITE
    assert live(t) == expect(i for i in range(10) if i not in (2, 5))
    assert assigned(t) == {f.file_path: {pos.file_path}}
    # both files carry the same data sequence number
    entries = [
        e
        for m in read_manifest_list(t.io, snap.manifest_list)
        for e in read_manifest(t.io, m, specs_by_id=t.metadata.specs_by_id)
    ]
    assert {e.sequence_number for e in entries} == {snap.sequence_number}
    contents = {m.content for m in read_manifest_list(t.io, snap.manifest_list)}
    assert contents == {ManifestContent.DATA, ManifestContent.DELETES}
    assert snap.summary["added-position-deletes"] == "2"
    assert snap.summary["added-delete-files"] == "1"
    assert snap.summary["total-delete-files"] == "1"


def test_partition_position_delete_in_same_commit_applies(sqlite_catalog: Catalog) -> None:
    """Without referenced_data_file the delete is found by partition, same rule."""
    t = sqlite_catalog.create_table("db.t", SCHEMA, partition_by=["cat"])
    f, g = write(t, rows(range(4), "a")), write(t, rows(range(4, 8), "a"))
    pos = pos_delete(t, {f: [1], g: [6]})
    assert pos.referenced_data_file is None
    t.row_delta([f, g], [pos])
    assert live(t) == expect([0, 2, 3, 4, 5, 7])
    assert assigned(t) == {f.file_path: {pos.file_path}, g.file_path: {pos.file_path}}


def test_partitioned_equality_delete_in_same_commit_does_not_apply(sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA, partition_by=["cat"])
    t.append(rows(range(4), "a", tag="old"))
    new = write(t, rows([1, 9], "a", tag="new"))
    eq = eq_delete(t, [1, 9], partition=("a",), spec_id=t.spec().spec_id)
    t.row_delta([new], [eq])
    assert live(t) == sorted(expect([0, 2, 3], "old") + expect([1, 9], "new"))
    assert assigned(t)[new.file_path] == set()


def test_equality_delete_in_same_commit_as_data_does_not_apply(sqlite_catalog: Catalog) -> None:
    """The upsert shape: old rows of a key go, the new rows of the key stay."""
    t = sqlite_catalog.create_table("db.t", SCHEMA)
    t.append(rows(range(10), tag="old"))
    new = write(t, rows([3, 4, 20], tag="new"))
    eq = eq_delete(t, [3, 4, 20])
    t.row_delta([new], [eq])
    assert live(t) == sorted(
        expect((i for i in range(10) if i not in (3, 4)), "old") + expect([3, 4, 20], "new")
    )
    plan = assigned(t)
    assert plan[new.file_path] == set()
    (old_path,) = set(plan) - {new.file_path}
    assert plan[old_path] == {eq.file_path}
    assert t.current_snapshot().summary["added-equality-deletes"] == "3"  # type: ignore[union-attr]


def test_dv_in_same_commit_as_its_data_applies(sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA, format_version=3)
    f = write(t, rows(range(8)))
    d = dv(t, f, [0, 7])
    t.row_delta([f], [d])
    assert live(t) == expect(range(1, 7))
    assert assigned(t) == {f.file_path: {_key(d)}}
    summary = t.current_snapshot().summary  # type: ignore[union-attr]
    assert summary["added-dvs"] == "1" and summary["added-position-deletes"] == "2"
    # as in Iceberg-Java: a DV is not a position delete file, and its size is the blob's
    assert "added-position-delete-files" not in summary
    assert d.content_size_in_bytes is not None
    data_size = f.file_size_in_bytes
    assert int(summary["added-files-size"]) == data_size + d.content_size_in_bytes


# -- (b) deletes vs data added later -----------------------------------------------------


def test_equality_delete_does_not_apply_to_later_data(sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA)
    t.append(rows(range(6), tag="first"))
    eq = eq_delete(t, [1, 2])
    t.row_delta([], [eq])
    after_delete = t.current_snapshot()
    assert after_delete is not None and after_delete.operation is Operation.DELETE
    t.append(rows([1, 2], tag="later"))
    assert live(t) == sorted(expect([0, 3, 4, 5], "first") + expect([1, 2], "later"))
    plan = assigned(t)
    assert sorted(len(v) for v in plan.values()) == [0, 1]
    # time travel: before the delete, at the delete, and now
    first = t.snapshots()[0].snapshot_id
    assert live(t, snapshot_id=first) == expect(range(6), "first")
    assert live(t, snapshot_id=after_delete.snapshot_id) == expect([0, 3, 4, 5], "first")


def test_partition_position_delete_does_not_apply_to_later_data(sqlite_catalog: Catalog) -> None:
    """A position delete file for two data files (no referenced_data_file) applies
    to data of its partition with seq <= its own, never to a file added later."""
    t = sqlite_catalog.create_table("db.t", SCHEMA, partition_by=["cat"])
    f1, f2 = write(t, rows(range(5), "a")), write(t, rows(range(5, 10), "a"))
    t.row_delta([f1, f2], [])
    pos = pos_delete(t, {f1: [0], f2: [9]})
    assert pos.referenced_data_file is None and pos.partition == ("a",)
    t.row_delta([], [pos])
    f3 = write(t, rows(range(10, 15), "a"))
    t.row_delta([f3], [])
    assert live(t) == expect(range(1, 9)) + expect(range(10, 15))
    assert assigned(t) == {
        f1.file_path: {pos.file_path},
        f2.file_path: {pos.file_path},
        f3.file_path: set(),
    }


# -- (c) deletion vectors replace position deletes ---------------------------------------


def test_dv_replaces_position_deletes_of_its_file(sqlite_catalog: Catalog) -> None:
    """v2 position deletes, then an upgrade to v3 and a DV for one file: that file
    reads through the DV alone, the other file keeps its position deletes."""
    t = sqlite_catalog.create_table("db.t", SCHEMA)
    f, g = write(t, rows(range(10))), write(t, rows(range(10, 20)))
    t.row_delta([f, g], [])
    shared = pos_delete(t, {f: [1, 2], g: [11]})  # partition-scoped, covers both files
    only_f = pos_delete(t, {f: [4]})  # pinned to f by referenced_data_file
    t.row_delta([], [shared, only_f])
    v2_snapshot = t.current_snapshot()
    assert v2_snapshot is not None
    assert live(t) == expect(i for i in range(20) if i not in (1, 2, 4, 11))

    t.upgrade_format_version(3)
    with pytest.raises(ValidationError, match="deletion vectors"):
        t.row_delta([], [pos_delete(t, {f: [5]})])  # v3 takes no new Parquet deletes
    # This DV deliberately leaves out positions 1 and 4, which the older files delete:
    # readers must ignore the older files for f, so those rows come back.
    d = dv(t, f, [2, 3])
    t.row_delta([], [d])
    assert live(t) == expect(i for i in range(20) if i not in (2, 3, 11))
    assert assigned(t) == {f.file_path: {_key(d)}, g.file_path: {shared.file_path}}
    # the snapshot before the DV still reads through the position deletes
    assert live(t, snapshot_id=v2_snapshot.snapshot_id) == expect(
        i for i in range(20) if i not in (1, 2, 4, 11)
    )


def test_dv_rules_are_checked(sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA, format_version=3)
    f = write(t, rows(range(4)))
    t.row_delta([f], [])
    with pytest.raises(ValidationError, match="one DV per data file"):
        t.row_delta([], [dv(t, f, [0]), dv(t, f, [1])])
    t.row_delta([], [dv(t, f, [0])])
    with pytest.raises(ValidationError, match="has a deletion vector already"):
        t.row_delta([], [dv(t, f, [1])])
    assert live(t) == expect([1, 2, 3])
    other = write(t, rows([9]))  # never committed
    with pytest.raises(ValidationError, match="not a live data file"):
        t.row_delta([], [dv(t, other, [9])])
    v2 = sqlite_catalog.create_table("db.v2", SCHEMA)
    g = write(v2, rows(range(3)))
    with pytest.raises(ValidationError, match="need format version 3"):
        v2.row_delta([g], [dv(v2, g, [0])])
    with pytest.raises(ValidationError, match="add_rows"):
        v2.row_delta([], [g])


# -- global equality deletes, partition scoping, referenced_data_file --------------------


def _evolve_to_partitioned(t: Table) -> None:
    with t.update_spec() as u:
        u.add_field("cat")


def test_unpartitioned_equality_delete_is_global(sqlite_catalog: Catalog) -> None:
    """An equality delete in the table's old unpartitioned spec applies to data of
    every partition of the new spec (with lower seq)."""
    t = sqlite_catalog.create_table("db.t", SCHEMA)
    _evolve_to_partitioned(t)
    assert t.spec().spec_id == 1
    fa, fb = write(t, rows(range(5), "a")), write(t, rows(range(5, 10), "b"))
    assert fa.spec_id == fb.spec_id == 1 and fa.partition == ("a",)
    t.row_delta([fa, fb], [])
    eq = eq_delete(t, [1, 7], spec_id=0)
    t.row_delta([], [eq])
    assert live(t) == expect(i for i in range(10) if i not in (1, 7))
    assert assigned(t) == {fa.file_path: {eq.file_path}, fb.file_path: {eq.file_path}}
    # filtered scans still see the global delete
    assert live(t, filter="cat = 'b'") == expect([5, 6, 8, 9])


def test_partitioned_equality_delete_stays_in_its_partition(sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA, partition_by=["cat"])
    fa, fb = write(t, rows(range(5), "a")), write(t, rows(range(5), "b", tag="w"))
    t.row_delta([fa, fb], [])
    eq = eq_delete(t, [0, 1], partition=("a",), spec_id=t.spec().spec_id)
    t.row_delta([], [eq])
    got = t.scan().to_arrow()
    pairs = sorted(zip(got.column("cat").to_pylist(), got.column("id").to_pylist(), strict=True))
    assert pairs == [("a", 2), ("a", 3), ("a", 4)] + [("b", i) for i in range(5)]
    assert assigned(t) == {fa.file_path: {eq.file_path}, fb.file_path: set()}


def test_equality_delete_of_another_spec_does_not_apply(sqlite_catalog: Catalog) -> None:
    """Same partition values, different partitioned spec: not the same partition."""
    t = sqlite_catalog.create_table("db.t", SCHEMA, partition_by=["cat"])
    old = write(t, rows(range(4), "a"))
    t.row_delta([old], [])
    with t.update_spec() as u:
        u.rename_field("cat", "category")  # spec 1: the same field under a new name
    spec_id = t.spec().spec_id
    assert spec_id != old.spec_id and len(t.spec().fields) == 1
    eq = eq_delete(t, [0], partition=("a",), spec_id=spec_id)
    t.row_delta([], [eq])
    assert live(t) == expect(range(4))
    assert assigned(t) == {old.file_path: set()}


def test_referenced_data_file_pins_position_deletes(sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA, partition_by=["cat"])
    f, g = write(t, rows(range(5), "a")), write(t, rows(range(5, 10), "a"))
    t.row_delta([f, g], [])
    pin = pos_delete(t, {f: [3]})
    assert pin.referenced_data_file == f.file_path
    t.row_delta([], [pin])
    assert live(t) == expect(i for i in range(10) if i != 3)
    assert assigned(t) == {f.file_path: {pin.file_path}, g.file_path: set()}


def test_position_delete_of_another_partition_does_not_apply(sqlite_catalog: Catalog) -> None:
    """A position delete file in partition a lists a row of a file in partition b:
    position deletes apply only within their partition."""
    t = sqlite_catalog.create_table("db.t", SCHEMA, partition_by=["cat"])
    fa, fb = write(t, rows(range(3), "a")), write(t, rows(range(3, 6), "b"))
    t.row_delta([fa, fb], [])
    stray = pos_delete(t, {fa: [0], fb: [4]})
    assert stray.partition == ("a",) and stray.referenced_data_file is None
    t.row_delta([], [stray])
    assert live(t) == expect([1, 2, 3, 4, 5])
    assert assigned(t) == {fa.file_path: {stray.file_path}, fb.file_path: set()}


def test_row_delta_rejects_deletes_on_v1(sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA, format_version=1)
    f = write(t, rows(range(3)))
    t.row_delta([f], [])
    with pytest.raises(ValidationError, match="format version 1"):
        t.row_delta([], [eq_delete(t, [0])])
    assert live(t) == expect(range(3))
    # a delete file is never a data file
    assert f.content is DataFileContent.DATA


# -- commits: manifest merging and concurrency -------------------------------------------


def test_sequence_numbers_survive_manifest_merging(sqlite_catalog: Catalog) -> None:
    """Merged delete and data manifests keep each file's data sequence number, so
    which deletes apply does not change when manifests are merged."""
    t = sqlite_catalog.create_table(
        "db.t", SCHEMA, properties={"commit.manifest.min-count-to-merge": "2"}
    )
    seen: dict[int, list[tuple[int, str]]] = {}

    def remember() -> None:
        s = t.current_snapshot()
        assert s is not None
        seen[s.snapshot_id] = live(t)

    t.append(rows(range(5), tag="s1"))
    remember()
    t.row_delta([], [eq_delete(t, [1])])
    remember()
    t.append(rows([1, 2, 3], tag="s3"))  # id 1 again: the earlier delete does not apply
    remember()
    t.row_delta([], [eq_delete(t, [2])])  # applies to both earlier files
    remember()
    f = write(t, rows([2, 7], tag="s5"))
    t.row_delta([f], [pos_delete(t, {f: [7]}), eq_delete(t, [3])])
    snap = t.current_snapshot()
    assert snap is not None
    manifests = read_manifest_list(t.io, snap.manifest_list)
    deletes = [m for m in manifests if m.content is ManifestContent.DELETES]
    assert len(deletes) == 1 and deletes[0].existing_files_count == 2  # merged
    want = expect([0, 4], "s1") + expect([1], "s3") + expect([2], "s5")
    assert live(t) == sorted(want)
    assert seen[t.snapshots()[1].snapshot_id] == expect([0, 2, 3, 4], "s1")
    for sid, before in seen.items():  # history reads as it did when it was current
        assert live(t, snapshot_id=sid) == before
    seqs = {
        e.data_file.file_path: e.sequence_number
        for m in manifests
        for e in read_manifest(t.io, m, specs_by_id=t.metadata.specs_by_id)
    }
    assert seqs[f.file_path] == snap.sequence_number
    assert sorted({s or 0 for s in seqs.values()}) == [1, 2, 3, 4, 5]


def test_deletes_for_a_concurrently_removed_file_conflict(sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA)
    t.append(rows(range(5)))
    (task,) = t.scan().plan_files()
    stale = sqlite_catalog.load_table("db.t")
    t.delete("id >= 0")  # removes the data file
    with pytest.raises(CommitConflictError, match="removed by a concurrent commit"):
        stale.row_delta([], [pos_delete(stale, {task.file: [1]})])
    assert live(t) == []


def test_deletes_rebase_onto_a_concurrent_append(sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA)
    t.append(rows(range(5)))
    (task,) = t.scan().plan_files()
    stale = sqlite_catalog.load_table("db.t")
    t.append(rows(range(5, 8)))
    stale.row_delta([], [pos_delete(stale, {task.file: [0, 4]})])
    assert live(t.refresh()) == expect([1, 2, 3, 5, 6, 7])
