"""Snapshot expiration: the retention rules of Iceberg-Java (refs, ages, minimum counts,
explicit ids), and the files it deletes: after it, the table folder holds exactly the
files the kept snapshots need (checked by listing the folder), rows read the same at
every kept snapshot, and a dry run changes nothing."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import neve
from neve.errors import ValidationError
from neve.planning.manifests import read_manifest, read_manifest_list
from neve.spec.manifest import ManifestEntryStatus
from neve.table.table import Table
from reference_reader import reached_files

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("cat", pa.string()),
        pa.field("v", pa.int32()),
    ]
)


def rows(ids: range | list[int], v: int = 0) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {"id": ids, "cat": [["a", "b", "c"][i % 3] for i in ids], "v": [v + i for i in ids]},
        schema=SCHEMA,
    )


def canon(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def on_disk(t: Table) -> set[str]:
    """Files below the table's location, metadata JSON files left out."""
    root = t.location.removeprefix("file://")
    out = set()
    for folder, _, names in os.walk(root):
        for n in names:
            if not n.endswith(".metadata.json"):
                out.add(os.path.join(folder, n))
    return out


def needed(t: Table) -> set[str]:
    """What the current metadata's snapshots need: their manifest lists, manifests and
    the files those manifests hold live."""
    out: set[str] = set()
    md = t.metadata
    for s in md.snapshots:
        out.add(s.manifest_list)
        for m in read_manifest_list(t.io, s.manifest_list):
            out.add(m.manifest_path)
            for e in read_manifest(t.io, m, specs_by_id=md.specs_by_id):
                if e.status is not ManifestEntryStatus.DELETED:
                    out.add(e.data_file.file_path)
    return {p.removeprefix("file://") for p in out}


def tick() -> None:
    time.sleep(0.005)  # distinct commit timestamps


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


def history_table(
    catalog: neve.Catalog, version: int, mode: str = "merge-on-read", name: str = "db.t"
) -> Table:
    """Appends, merge-on-read deletes that replace one file's deletes twice, an
    update, an upsert and a copy-on-write overwrite."""
    props = {f"write.{op}.mode": mode for op in ("delete", "update", "merge")}
    t = catalog.create_table(
        name,
        SCHEMA,
        partition_by=["cat"],
        primary_key=["id"],
        format_version=version,
        properties=props,
    )
    steps = [
        lambda: t.append(rows(range(0, 30))),
        lambda: t.append(rows(range(30, 45))),
        lambda: t.delete("id < 5"),
        lambda: t.delete("id in (6, 9, 12)"),
        lambda: t.update({"v": -1}, "id > 40"),
        lambda: t.upsert(rows([7, 8, 50, 51], v=1000)),
        lambda: t.delete("id = 21 or id = 24"),
        lambda: t.overwrite(rows(range(60, 63)), filter="cat = 'b'"),
    ]
    for step in steps:
        step()
        tick()
    return catalog.load_table(name)


def rows_at_every_snapshot(t: Table) -> dict[int, list[tuple[Any, ...]]]:
    return {
        s.snapshot_id: canon(t.scan(snapshot_id=s.snapshot_id).to_arrow()) for s in t.snapshots()
    }


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_expire_deletes_exactly_what_kept_snapshots_do_not_need(
    catalog: neve.Catalog, version: int, mode: str
) -> None:
    t = history_table(catalog, version, mode)
    before = rows_at_every_snapshot(t)
    snaps = t.snapshots()
    assert len(snaps) == 8
    cutoff = snaps[5].timestamp_ms  # keep the last three

    listing, location = on_disk(t), t.metadata_location
    dry = t.maintenance.expire_snapshots(older_than=cutoff, dry_run=True)
    assert on_disk(t) == listing and catalog.load_table("db.t").metadata_location == location
    assert dry.dry_run and dry.expired_snapshot_ids == tuple(
        sorted(s.snapshot_id for s in snaps[:5])
    )

    # by kind, the files only the five expired snapshots reach (read from the metadata
    # by tests/reference_reader.py, apart from neve)
    only_expired = reached_files(location, [s.snapshot_id for s in snaps[:5]])
    still_kept = reached_files(location, [s.snapshot_id for s in snaps[5:]])
    result = t.maintenance.expire_snapshots(older_than=cutoff)
    assert (result.expired_snapshot_ids, result.deleted, result.files) == (
        dry.expired_snapshot_ids,
        dry.deleted,
        dry.files,
    )
    assert not result.failed
    t = catalog.load_table("db.t")
    assert [s.snapshot_id for s in t.snapshots()] == [s.snapshot_id for s in snaps[5:]]
    for s in t.snapshots():  # time travel to every kept snapshot reads as before
        assert canon(t.scan(snapshot_id=s.snapshot_id).to_arrow()) == before[s.snapshot_id]
    # Nothing a kept snapshot needs is gone, nothing only expired ones needed is left.
    assert on_disk(t) == needed(t)
    assert {p.removeprefix("file://") for p in result.files} == listing - on_disk(t)
    assert result.deleted["manifest_lists"] == 5
    for kind, paths in only_expired.items():
        assert result.deleted[kind] == len(paths - still_kept[kind]), kind
    assert result.deleted["manifest_files"] > 0
    if mode == "merge-on-read":  # replaced deletion vectors / position deletes went
        assert result.deleted["position_delete_files"] > 0
    else:  # files rewritten by the copy-on-write deletes went
        assert result.deleted["data_files"] > 0
    assert "expired snapshots" in str(result) and "deleted data files" in str(result)
    # expiring again finds nothing
    again = t.maintenance.expire_snapshots(older_than=cutoff)
    assert again.expired_snapshot_ids == () and sum(again.deleted.values()) == 0


def test_refs_keep_their_snapshots_and_expire_by_age(catalog: neve.Catalog) -> None:
    t = history_table(catalog, 3)
    snaps = t.snapshots()
    t.create_tag("first", snaps[0].snapshot_id)
    t.create_tag("old", snaps[1].snapshot_id, max_ref_age_ms=1)
    t.create_branch("dev", snaps[3].snapshot_id, min_snapshots_to_keep=2)
    tagged = canon(t.scan(ref="first").to_arrow())
    dev = canon(t.scan(ref="dev").to_arrow())
    time.sleep(0.01)
    t = catalog.load_table("db.t")
    result = t.maintenance.expire_snapshots(older_than=int(time.time() * 1000))
    assert result.removed_refs == ("old",)  # older than its max-ref-age
    t = catalog.load_table("db.t")
    kept = {s.snapshot_id for s in t.snapshots()}
    # main keeps its head (min-snapshots-to-keep 1), the tag its snapshot, dev two
    expected = {
        snaps[-1].snapshot_id,
        snaps[0].snapshot_id,
        snaps[3].snapshot_id,
        snaps[2].snapshot_id,
    }
    assert kept == expected
    assert set(t.refs()) == {"main", "first", "dev"}
    assert canon(t.scan(ref="first").to_arrow()) == tagged
    assert canon(t.scan(ref="dev").to_arrow()) == dev
    assert on_disk(t) == needed(t)


def test_retain_last_explicit_ids_and_table_defaults(catalog: neve.Catalog) -> None:
    t = history_table(catalog, 2)
    snaps = [s.snapshot_id for s in t.snapshots()]
    # default cut-off is 5 days: nothing is old enough; explicit ids still expire
    result = t.maintenance.expire_snapshots(snapshot_ids=[snaps[1], snaps[2]])
    assert result.expired_snapshot_ids == (min(snaps[1], snaps[2]), max(snaps[1], snaps[2]))
    t = catalog.load_table("db.t")
    assert len(t.snapshots()) == 6
    # retain_last keeps that many ancestors of main, whatever their age
    now = int(time.time() * 1000) + 1
    t.maintenance.expire_snapshots(older_than=now, retain_last=3)
    t = catalog.load_table("db.t")
    assert [s.snapshot_id for s in t.snapshots()] == snaps[-3:]
    # the table's history.expire.* properties are the defaults
    t.set_properties({"history.expire.max-snapshot-age-ms": "0"})
    t = catalog.load_table("db.t")
    t.maintenance.expire_snapshots()
    t = catalog.load_table("db.t")
    assert [s.snapshot_id for s in t.snapshots()] == snaps[-1:]
    assert on_disk(t) == needed(t)


def test_bad_requests_change_nothing(catalog: neve.Catalog) -> None:
    t = history_table(catalog, 2)
    head = t.current_snapshot()
    assert head is not None
    listing, location = on_disk(t), t.metadata_location
    with pytest.raises(ValidationError, match="point at them"):
        t.maintenance.expire_snapshots(snapshot_ids=[head.snapshot_id])
    with pytest.raises(ValidationError, match="not in the table"):
        t.maintenance.expire_snapshots(snapshot_ids=[12345])
    with pytest.raises(ValidationError, match="at least 1"):
        t.maintenance.expire_snapshots(retain_last=0)
    with pytest.raises(ValidationError):
        t.set_properties({"history.expire.min-snapshots-to-keep": "0"})
    assert on_disk(t) == listing
    assert catalog.load_table("db.t").metadata_location == location


def test_expire_rebases_over_a_concurrent_append(catalog: neve.Catalog) -> None:
    t = history_table(catalog, 3)
    stale = catalog.load_table("db.t")
    t.append(rows(range(100, 103)))  # lands after `stale` was loaded
    now = int(time.time() * 1000) + 1
    stale.maintenance.expire_snapshots(older_than=now)
    t = catalog.load_table("db.t")
    assert len(t.snapshots()) == 1  # the concurrent append is the head and stays
    assert sorted(r["id"] for r in t.scan(filter="id >= 100").to_arrow().to_pylist()) == [
        100,
        101,
        102,
    ]
    assert on_disk(t) == needed(t)


def test_clean_expired_metadata_removes_specs_and_schemas_only_expired_snapshots_used(
    catalog: neve.Catalog,
) -> None:
    t = catalog.create_table("db.t", SCHEMA, partition_by=["cat"], format_version=2)
    t.append(rows(range(0, 12)))
    with t.update_spec() as u:
        u.add_field("bucket(2, id)")
    with t.update_schema() as s:
        s.add_column("extra", "long")
    t = catalog.load_table("db.t")
    t.overwrite(rows(range(20, 26)))  # every old file replaced under the new spec
    t.append(rows(range(30, 33)))
    t = catalog.load_table("db.t")
    assert sorted(t.specs()) == [0, 1] and sorted(t.schemas()) == [0, 1]
    want = canon(t.scan().to_arrow())
    now = int(time.time() * 1000) + 1

    kept_all = t.maintenance.expire_snapshots(older_than=now, retain_last=2, dry_run=True)
    assert kept_all.removed_spec_ids == () and kept_all.removed_schema_ids == ()

    dry = t.maintenance.expire_snapshots(
        older_than=now, retain_last=1, clean_expired_metadata=True, dry_run=True
    )
    assert (dry.removed_spec_ids, dry.removed_schema_ids) == ((0,), (0,))
    assert sorted(catalog.load_table("db.t").specs()) == [0, 1]  # a dry run changes nothing

    done = t.maintenance.expire_snapshots(
        older_than=now, retain_last=1, clean_expired_metadata=True
    )
    assert (done.removed_spec_ids, done.removed_schema_ids) == ((0,), (0,))
    assert "removed specs" in str(done)
    t = catalog.load_table("db.t")
    assert sorted(t.specs()) == [1] and sorted(t.schemas()) == [1]
    assert canon(t.scan().to_arrow()) == want
    assert on_disk(t) == needed(t)
    t.append(rows(range(40, 41)))  # the table still takes writes
    assert len(t.scan().to_arrow()) == len(want) + 1
