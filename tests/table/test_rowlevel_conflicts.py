"""Concurrent row-level changes: each validation rule of a merge-on-read change, under
both isolation levels, with a typed error and the table exactly as the winning commit
left it (no files of the losing change left behind); and bad MERGE input refused before
anything is written."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import neve
from neve.errors import CommitConflictError, ValidationError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def rows(ids: range | list[int], tag: str = "r") -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def files_under(path: Path) -> set[str]:
    return {os.path.join(r, n) for r, _, ns in os.walk(path) for n in ns}


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


def make(
    catalog: neve.Catalog, version: int, isolation: str, mode: str = "merge-on-read"
) -> neve.Table:
    props = {f"write.{op}.mode": mode for op in ("delete", "update", "merge")}
    props |= {f"write.{op}.isolation-level": isolation for op in ("delete", "update", "merge")}
    t = catalog.create_table(
        "db.t", SCHEMA, format_version=version, primary_key=["id"], properties=props
    )
    t.append(rows(range(100)))
    return t


def ids(t: neve.Table) -> list[int]:
    return sorted(t.refresh().scan().to_arrow().column("id").to_pylist())


def assert_loses(catalog: neve.Catalog, stale: neve.Table, change: object, match: str) -> None:
    """``change(stale)`` fails with a conflict; the table and its files stay as the
    concurrent winner left them."""
    fresh = catalog.load_table("db.t")
    before_files, before_md = files_under(Path(catalog.warehouse)), fresh.metadata_location
    with pytest.raises(CommitConflictError, match=match):
        change(stale)  # type: ignore[operator]
    assert catalog.load_table("db.t").metadata_location == before_md
    assert files_under(Path(catalog.warehouse)) == before_files


def live_delete_files(t: neve.Table) -> list[tuple[str, str | None]]:
    return sorted(
        {
            (d.file_path, d.referenced_data_file)
            for task in t.refresh().scan().plan_files()
            for d in task.delete_files
        },
        key=str,
    )


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("isolation", ["serializable", "snapshot"])
def test_deletes_of_the_same_file_rebase(
    catalog: neve.Catalog, version: int, isolation: str
) -> None:
    """A concurrent delete file for a data file this change marks: the two are unioned
    into one that replaces the concurrent one (Iceberg-Java fails here), under both
    isolation levels; the losing attempt's own delete file is not left behind."""
    t = make(catalog, version, isolation)
    stale = catalog.load_table("db.t")
    t.delete("id < 10")
    winner = live_delete_files(t)
    stale.delete("id >= 90")  # planned on the old version; rebased, not refused
    assert ids(t) == list(range(10, 90))
    after = live_delete_files(t)
    assert len(after) == 1 and after != winner  # one file per data file, the winner's replaced
    referenced = {p for p, _ in after} | {
        f.file_path for task in t.scan().plan_files() for f in [task.file]
    }
    deletes_on_disk = {p for p in files_under(Path(catalog.warehouse)) if "-deletes." in p}
    # the winner's file is kept for time travel; the loser's first attempt is gone
    assert deletes_on_disk == {p for p, _ in winner} | {p for p, _ in after}
    assert {p for p, _ in after} <= referenced
    # deleting rows another commit deleted too is no conflict either
    stale2 = catalog.load_table("db.t")
    t.delete("id < 20")
    stale2.delete("id < 15")
    assert ids(t) == list(range(20, 90))


@pytest.mark.parametrize("version", [2, 3])
def test_updates_of_the_same_rows_conflict_and_of_other_rows_rebase(
    catalog: neve.Catalog, version: int
) -> None:
    t = make(catalog, version, "snapshot")
    stale = catalog.load_table("db.t")
    t.update({"v": "first"}, "id < 10")
    assert_loses(
        catalog,
        stale,
        lambda s: s.update({"v": "second"}, "id >= 5 and id < 15"),
        "changed 5 of the rows",
    )
    stale.refresh()
    other = catalog.load_table("db.t")
    t.update({"v": "third"}, "id >= 50 and id < 60")
    other.update({"v": "fourth"}, "id >= 60 and id < 70")  # same file, other rows
    got = {r["id"]: r["v"] for r in t.refresh().scan().to_arrow().to_pylist()}
    assert len(got) == 100 and t.scan().to_arrow().num_rows == 100
    assert {got[i] for i in range(10)} == {"first"}
    assert {got[i] for i in range(50, 60)} == {"third"}
    assert {got[i] for i in range(60, 70)} == {"fourth"}


@pytest.mark.parametrize("version", [2, 3])
def test_a_data_file_deleted_whole_concurrently(
    catalog: neve.Catalog, tmp_path: Path, version: int
) -> None:
    """The data file this change marks rows in is gone (a concurrent delete of all of
    it): a delete of its rows has nothing left to do and goes through; an update of them
    would bring an updated version of a deleted row back, so it conflicts."""
    t = make(catalog, version, "snapshot")
    deleting, updating = catalog.load_table("db.t"), catalog.load_table("db.t")
    t.delete("true")
    deleting.delete("id = 5")
    assert ids(t) == []
    assert not [p for p in files_under(Path(catalog.warehouse)) if "-deletes." in p]
    assert_loses(
        catalog,
        updating,
        lambda s: s.update({"v": "u"}, "id = 5"),
        "removed by a concurrent commit",
    )
    assert ids(t) == []


@pytest.mark.parametrize("isolation", ["serializable", "snapshot"])
def test_data_added_in_the_range_conflicts_only_when_serializable(
    catalog: neve.Catalog, isolation: str
) -> None:
    t = make(catalog, 3, isolation)
    stale = catalog.load_table("db.t")
    t.append(rows([500, 501], "new"))  # inside the range the update reads

    def change(s: neve.Table) -> int:
        return s.update({"v": "u"}, "id >= 50")

    if isolation == "serializable":
        assert_loses(catalog, stale, change, "serializable")
        assert ids(t) == [*range(100), 500, 501]
    else:
        change(stale)
        got = {r["id"]: r["v"] for r in t.refresh().scan().to_arrow().to_pylist()}
        assert got[500] == "new500" and got[60] == "u" and got[10] == "r10"


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("isolation", ["serializable", "snapshot"])
def test_upsert_against_a_concurrent_insert_or_update_of_its_keys_rebases(
    catalog: neve.Catalog, version: int, isolation: str
) -> None:
    """The later committer re-locates its keys in the rows the concurrent commit added
    and marks them too: each key keeps one live row, the later committer's."""
    t = make(catalog, version, isolation)
    stale = catalog.load_table("db.t")
    t.append(rows([300], "other"))  # a key the upsert below also inserts
    t.upsert(rows([5, 6], "winner"))  # keys the upsert below also updates
    stale.upsert(rows([5, 300, 301], "up"))
    got = t.refresh().scan().to_arrow().to_pylist()
    keys = [r["id"] for r in got]
    assert len(keys) == len(set(keys)) == 102
    values = {r["id"]: r["v"] for r in got}
    assert values[5] == "up5" and values[300] == "up300" and values[301] == "up301"
    assert values[6] == "winner6" and values[7] == "r7"


def test_copy_on_write_rewrite_refuses_a_concurrent_merge_on_read_delete(
    catalog: neve.Catalog, tmp_path: Path
) -> None:
    """Rewriting a file whose rows a concurrent DV deleted would bring them back."""
    t = make(catalog, 3, "serializable")
    other = catalog.load_table("db.t")  # still merge-on-read
    t.set_properties({"write.delete.mode": "copy-on-write"})
    stale = catalog.load_table("db.t")
    other.delete("id < 3")  # a DV for the file the stale handle rewrites
    assert_loses(catalog, stale, lambda s: s.delete("id = 50"), "delete file")
    assert ids(t) == list(range(3, 100))


def test_two_source_rows_for_one_target_row_are_refused(
    catalog: neve.Catalog, tmp_path: Path
) -> None:
    t = make(catalog, 3, "serializable")
    before_files, before_md = files_under(Path(catalog.warehouse)), t.metadata_location
    # an upsert on the primary key resolves repeated keys by the merge engine
    # (tests/table/test_merge_engines.py); other merges refuse them
    with pytest.raises(ValidationError, match="more than one source row"):
        t.merge(rows([7, 7, 8], "dup")).when_matched_delete().execute()
    assert t.refresh().metadata_location == before_md
    assert files_under(Path(catalog.warehouse)) == before_files


def test_bad_merge_input_is_refused_before_writing(catalog: neve.Catalog, tmp_path: Path) -> None:
    t = make(catalog, 2, "serializable")
    before = files_under(Path(catalog.warehouse))
    with pytest.raises(ValidationError, match="no clause"):
        t.merge(rows([1])).execute()
    with pytest.raises(ValidationError, match="no key column"):
        t.upsert(pa.table({"v": ["x"]}))
    with pytest.raises(ValidationError, match="pyarrow Table"):
        t.upsert({"id": [1]})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="cannot parse"):
        t.merge(rows([1])).when_matched_delete("target.id = = 1").execute()
    with pytest.raises(ValidationError, match="required"):
        t.update({"id": None}, "id = 1")
    with pytest.raises(ValidationError, match="isolation"):
        t.set_properties({"write.merge.isolation-level": "strict"})
    assert files_under(Path(catalog.warehouse)) == before
    assert ids(t) == list(range(100))


def test_primary_key_rules(catalog: neve.Catalog) -> None:
    with pytest.raises(neve.errors.SchemaError, match="float or double"):
        catalog.create_table("db.f", pa.schema([("x", pa.float64())]), primary_key=["x"])
    with pytest.raises(neve.errors.SchemaError, match="not in the schema"):
        catalog.create_table("db.g", SCHEMA, primary_key=["nope"])
    t = catalog.create_table(
        "db.k", pa.schema([("k", pa.int32()), ("v", pa.string())]), primary_key=["k"]
    )
    assert t.schema().identifier_field_ids == (1,)
    assert t.schema().find_field("k").required  # made required, as Paimon does


@pytest.mark.parametrize("late_sequence", [3, 30])
def test_with_a_sequence_field_the_higher_sequence_wins_whichever_commits_last(
    catalog: neve.Catalog, late_sequence: int
) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("v", pa.string()),
            ("seq", pa.int64()),
        ]
    )
    t = catalog.create_table(
        "db.s",
        schema,
        format_version=3,
        primary_key=["id"],
        properties={"write.merge.mode": "merge-on-read", "sequence.field": "seq"},
    )
    t.append(pa.table({"id": [1, 2], "v": ["a", "b"], "seq": [1, 1]}, schema=schema))
    stale = catalog.load_table("db.s")
    t.upsert(pa.table({"id": [1, 5], "v": ["early", "early"], "seq": [10, 10]}, schema=schema))
    stale.upsert(
        pa.table({"id": [1, 5], "v": ["late", "late"], "seq": [late_sequence] * 2}, schema=schema)
    )
    got = {r["id"]: (r["v"], r["seq"]) for r in t.refresh().scan().to_arrow().to_pylist()}
    winner = ("late", late_sequence) if late_sequence > 10 else ("early", 10)
    assert got == {1: winner, 2: ("b", 1), 5: winner}
