"""Maintenance verbs through the command: --dry-run first (nothing changes and the
counts match the Python API's dry run), then for real."""

from __future__ import annotations

import os
import time
from pathlib import Path

from cli_support import Catalog, Runner, rows

import neve
from reference_reader import live_entries, manifest_list


def _files(root: str) -> set[str]:
    return {str(p) for p in Path(root).rglob("*") if p.is_file()}


def test_expire(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    t = events.refresh()
    now = str(int(time.time() * 1000) + 1)
    want = t.maintenance.expire_snapshots(older_than=int(now), retain_last=1, dry_run=True)
    before = _files(t.location)
    dry = run(
        *sqlite.flags,
        "expire",
        "db.events",
        "--older-than",
        now,
        "--retain-last",
        "1",
        "--dry-run",
        "--json",
    )
    assert dry.code == 0, dry.err
    doc = dry.json()
    assert doc["dry_run"] is True
    assert sorted(doc["expired_snapshot_ids"]) == sorted(want.expired_snapshot_ids)
    assert doc["deleted"] == dict(want.deleted)
    assert _files(t.location) == before
    assert len(t.refresh().snapshots()) == 4
    real = run(*sqlite.flags, "expire", "db.events", "--older-than", now, "--retain-last", "1")
    assert real.code == 0, real.err
    assert "expired snapshots" in real.out
    assert "done in" in real.err  # the progress line ends saying so
    kept = {s.snapshot_id for s in t.refresh().snapshots()}
    # the head, and the tag 'first' keeps its snapshot (expiry respects refs)
    assert kept == {t.current_snapshot().snapshot_id, t.refs()["first"].snapshot_id}  # type: ignore[union-attr]
    assert set(doc["files"]) == before - _files(t.location)


def test_remove_orphans(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    stray = Path(events.location) / "data" / "stray.parquet"
    stray.write_bytes(b"not reachable")
    old = time.time() - 5 * 24 * 3600
    os.utime(stray, (old, old))
    dry = run(*sqlite.flags, "remove-orphans", "db.events", "--dry-run", "--json").json()
    assert dry["orphan_file_locations"] == [str(stray)] and dry["dry_run"]
    assert stray.exists()
    r = run(*sqlite.flags, "remove-orphans", "db.events", "--json")
    assert r.code == 0, r.err
    assert r.json()["orphan_file_locations"] == [str(stray)]
    assert not stray.exists()
    assert sorted(events.scan().to_arrow().column("id").to_pylist()) == list(range(5, 120))


def test_compact_and_rewrite_manifests(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    t = events.refresh()
    for i in range(3):
        t.append(rows(1000 + i * 5, 5, 0))
    opts = ["--option", "min-input-files=2"]
    where = "ts < '2024-01-02T00:00:00+00:00'"
    want = t.maintenance.rewrite_data_files(
        where=where, options={"min-input-files": "2"}, dry_run=True
    )
    dry = run(*sqlite.flags, "compact", "db.events", "-w", where, *opts, "--dry-run", "--json")
    assert dry.code == 0, dry.err
    assert dry.json()["rewritten_data_files_count"] == want.rewritten_data_files_count >= 4
    assert t.refresh().current_snapshot().snapshot_id == t.snapshots()[-1].snapshot_id  # type: ignore[union-attr]
    head = t.current_snapshot().snapshot_id  # type: ignore[union-attr]
    before = sorted(t.scan().to_arrow().column("id").to_pylist())
    done = run(*sqlite.flags, "compact", "db.events", "-w", where, *opts, "--json")
    assert done.code == 0, done.err
    assert done.json()["added_data_files_count"] == 1
    t.refresh()
    assert t.current_snapshot().operation.value == "replace"  # type: ignore[union-attr]
    assert t.current_snapshot().parent_snapshot_id == head  # type: ignore[union-attr]
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == before
    bad = run(*sqlite.flags, "compact", "db.events", "--option", "min-input-files=-3")
    assert bad.code == 1 and bad.err.startswith("error: ")
    manifests = len(t.inspect.manifests())
    data_manifests = [m for m in manifest_list(t.metadata_location) if m["content"] == 0]
    r = run(*sqlite.flags, "rewrite-manifests", "db.events", "--json")
    assert r.code == 0, r.err
    assert r.json()["rewritten_manifests_count"] == len(data_manifests)
    assert len(t.refresh().inspect.manifests()) <= manifests
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == before


def test_compact_sorted(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    import pyarrow.parquet as pq  # only this test reads the written files directly

    t = events.refresh()
    before = sorted(t.scan().to_arrow().column("id").to_pylist())
    # rewrite-all: the rows of each partition (a day) become one small sorted file
    days = {e.partition for e in live_entries(t.metadata_location) if e.content == 0}
    refused = run(*sqlite.flags, "compact", "db.events", "--strategy", "sort")
    assert refused.code == 1 and "needs a sort order" in refused.err
    opts = ["--option", "rewrite-all=true"]
    done = run(
        *sqlite.flags, "compact", "db.events", "--strategy", "sort", "--sort-order", "id desc",
        *opts, "--json",
    )  # fmt: skip
    assert done.code == 0, done.err
    assert done.json()["added_data_files_count"] == len(days)
    t.refresh()
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == before
    for task in t.scan().plan_files():
        ids = pq.read_table(task.file.file_path.removeprefix("file://")).column("id").to_pylist()
        assert ids == sorted(ids, reverse=True)
