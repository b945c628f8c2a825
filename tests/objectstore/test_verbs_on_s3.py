"""Every row-level verb, maintenance and the changelog of the pyarrow engine on an object
store, on both catalog kinds (a SQL catalog with an s3 warehouse, the filesystem
catalog on s3), against a Python model of the table: a random sequence of appends,
deletes, updates, merges, upserts and overwrites, with compaction, delete-file merges
and manifest rewrites in between; then the changelog, snapshot expiration (files gone
from the bucket) and orphan removal (paged listings, ``s3a``/``s3n`` locations)."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pyarrow as pa
import pytest

import neve
from budget import examples
from neve.io.fileio import FileIO
from s3server import S3Warehouse

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("grp", pa.int32(), nullable=False),
        pa.field("v", pa.float64()),
        pa.field("s", pa.string()),
    ]
)
Row = tuple[int, int, float | None, str | None]


def _table(rows: dict[int, Row]) -> pa.Table:
    ordered = [rows[k] for k in sorted(rows)]
    cols = list(zip(*ordered, strict=True)) if ordered else [[], [], [], []]
    return pa.table([list(c) for c in cols], schema=SCHEMA)


def _state(t: neve.Table) -> dict[int, Row]:
    got = t.scan().to_arrow().select(["id", "grp", "v", "s"]).to_pylist()
    out = {r["id"]: (r["id"], r["grp"], r["v"], r["s"]) for r in got}
    assert len(out) == len(got), "a key appears twice"
    return out


def _catalog(kind: str, wh: S3Warehouse, tmp_path: Path) -> neve.Catalog:
    if kind == "sql":
        return neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse=wh.uri, **wh.properties)
    return neve.connect(wh.uri, **wh.properties)


def _new_rows(rnd: random.Random, keys: range) -> dict[int, Row]:
    return {
        k: (
            k,
            k % 4,
            rnd.choice([None, -0.0, float("inf"), rnd.uniform(-1e6, 1e6)]),
            rnd.choice([None, "", "é" * rnd.randint(1, 5), "x" * rnd.randint(0, 300)]),
        )
        for k in keys
    }


def _step(t: neve.Table, model: dict[int, Row], rnd: random.Random, n: int) -> str:
    """One random operation on the table and on the model; returns its name."""
    kind = rnd.choice(["append", "delete", "update", "merge", "upsert", "overwrite"])
    keys = sorted(model)
    base = 1000 * (n + 1)
    if kind == "append" or not keys:
        new = _new_rows(rnd, range(base, base + rnd.randint(1, 40)))
        t.append(_table(new))
        model.update(new)
        return "append"
    if kind == "delete":
        lo = rnd.choice(keys)
        t.delete(f"id >= {lo} and id < {lo + 15}")
        for k in [k for k in model if lo <= k < lo + 15]:
            del model[k]
    elif kind == "update":
        g = rnd.randrange(4)
        t.update({"s": f"upd{n}"}, f"grp = {g}")
        for k, r in model.items():
            if r[1] == g:
                model[k] = (r[0], r[1], r[2], f"upd{n}")
    elif kind in ("merge", "upsert"):
        chosen = rnd.sample(keys, min(len(keys), 5))
        source = {k: (k, model[k][1], float(n), f"m{n}") for k in chosen}
        source.update(_new_rows(rnd, range(base, base + 5)))
        src = _table(source)
        if kind == "upsert":
            t.upsert(src)
        else:
            t.merge(src).when_matched_update_all().when_not_matched_insert_all().execute()
        model.update(source)
    else:
        g = rnd.randrange(4)
        new: dict[int, Row] = {k: (k, g, 1.5, "ow") for k in range(base, base + 6)}
        t.overwrite(_table(new), f"grp = {g}")
        for k in [k for k, r in model.items() if r[1] == g]:
            del model[k]
        model.update(new)
    return kind


@pytest.mark.parametrize(("kind", "version"), [("sql", 3), ("filesystem", 2), ("filesystem", 3)])
def test_verbs_maintenance_and_changelog(
    kind: str, version: int, s3_warehouse: S3Warehouse, tmp_path: Path
) -> None:
    cat = _catalog(kind, s3_warehouse, tmp_path)
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, format_version=version, primary_key=["id"])
    rnd = random.Random(version * 10 + len(kind))
    model = _new_rows(rnd, range(0, 60))
    t.append(_table(model))
    assert _state(t) == model
    first = t.current_snapshot().snapshot_id  # type: ignore[union-attr]
    before = dict(model)
    done = []
    for n in range(examples(10, 30)):
        done.append(_step(t, model, rnd, n))
        t = cat.load_table("db.t")
        assert _state(t) == model, f"after {done}"
        if n % 4 == 3:
            t.maintenance.rewrite_position_delete_files()
            t.maintenance.rewrite_data_files(options={"min-input-files": "2"})
            t.maintenance.rewrite_manifests()
            t = cat.load_table("db.t")
            assert _state(t) == model, f"after maintenance following {done}"

    # the net changelog from the first snapshot is the model's difference
    net = t.changes(start_snapshot_id=first, net_changes=True).to_pylist()
    inserted = {r["id"] for r in net if r["_change_type"] == "INSERT"}
    deleted = {r["id"] for r in net if r["_change_type"] == "DELETE"}
    updated = {r["id"] for r in net if r["_change_type"] == "UPDATE_AFTER"}
    assert inserted == set(model) - set(before)
    assert deleted == set(before) - set(model)
    assert updated == {k for k in set(model) & set(before) if model[k] != before[k]}

    # expiration deletes what only old snapshots reached, from the bucket
    io = FileIO(s3_warehouse.properties)
    listed_before = set(io.list_files(t.location))
    result = t.maintenance.expire_snapshots(older_than=int(time.time() * 1000) + 1, retain_last=1)
    assert result.expired_snapshot_ids and not result.failed
    listed_after = set(io.list_files(t.location))
    assert set(result.files) <= listed_before
    assert not set(result.files) & listed_after
    t = cat.load_table("db.t")
    assert _state(t) == model

    # orphans: a crashed writer's file, found through paged listings under s3a:// too
    orphan = f"{t.location}/data/crashed-writer.parquet"
    io.write_bytes(orphan, b"not parquet")
    s3_warehouse.settings(max_keys=7)
    s3_warehouse.clear_log()
    future = int(time.time() * 1000) + 60_000
    for scheme in ("s3a", "s3n", "s3"):
        root = t.location.replace("s3://", f"{scheme}://", 1)
        found = t.maintenance.remove_orphan_files(older_than=future, location=root, dry_run=True)
        assert found.orphan_file_locations == (orphan.replace("s3://", f"{scheme}://", 1),)
    pages = [e for e in s3_warehouse.log() if e["op"] == "LIST"]
    assert len(pages) > 3 * len(listed_after) // 7  # every page was asked for
    done_orphans = t.maintenance.remove_orphan_files(older_than=future)
    assert done_orphans.orphan_file_locations == (orphan,)
    assert not io.exists(orphan)
    s3_warehouse.settings(max_keys=None)
    assert _state(cat.load_table("db.t")) == model
