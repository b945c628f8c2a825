"""The looking verbs through the installed command, their --json checked against what
neve's Python API says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cli_support import NEVE, SCHEMA, Catalog, Runner, fill

import neve


def test_the_entry_point_is_installed_and_helps(run: Runner) -> None:
    assert NEVE.is_file()
    r = run("--help")
    assert r.code == 0
    for verb in (
        "namespaces",
        "tables",
        "describe",
        "snapshots",
        "scan",
        "sql",
        "compact",
        "changes",
    ):
        assert verb in r.out
    module = subprocess.run(
        [sys.executable, "-m", "neve.cli", "--help"], capture_output=True, text=True, check=True
    )
    assert module.stdout.startswith("Usage: neve [OPTIONS] COMMAND")
    assert all(verb in module.stdout for verb in ("describe", "sql", "rewrite-manifests"))


def test_namespaces_and_tables(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    cat = sqlite.catalog
    cat.create_namespace("db.inner")
    fill(cat, "db.inner.more")
    cat.create_namespace("empty")
    r = run(*sqlite.flags, "namespaces", "--json")
    assert r.code == 0, r.err
    assert r.json() == ["db", "db.inner", "empty"]
    assert run(*sqlite.flags, "namespaces", "db", "--json").json() == ["db.inner"]
    assert run(*sqlite.flags, "tables", "--json").json() == ["db.events", "db.inner.more"]
    assert run(*sqlite.flags, "tables", "db", "--json").json() == [
        ".".join(i) for i in cat.list_tables("db")
    ]
    plain = run(*sqlite.flags, "tables")
    assert plain.out.split() == ["db.events", "db.inner.more"]


def test_describe(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    doc = run(*sqlite.flags, "describe", "db.events", "--json").json()
    t = events.refresh()
    assert doc["name"] == "db.events"
    assert doc["uuid"] == t.metadata.table_uuid
    assert doc["format_version"] == t.format_version == 2
    assert doc["current_snapshot_id"] == t.current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert [(f["id"], f["name"], f["type"], f["required"]) for f in doc["schema"]] == [
        (f.field_id, f.name, str(f.field_type), f.required) for f in t.schema().fields
    ]
    assert doc["primary_key"] == ["id"]
    assert doc["merge_engine"] == "deduplicate"
    assert doc["partition_spec"]["fields"] == [
        {"field_id": 1000, "name": "ts_day", "transform": "day", "source_id": 3, "source": "ts"}
    ]
    assert doc["sort_order"]["fields"] == []
    assert doc["properties"] == dict(t.properties)
    assert doc["rows"] == 120
    text = run(*sqlite.flags, "describe", "db.events").out
    for piece in ("primary key", "deduplicate", "day(ts) as ts_day", "owner", "required"):
        assert piece in text


def test_merge_engine_and_no_key(run: Runner, sqlite: Catalog) -> None:
    """describe shows the merge engine the table's properties configure (deduplicate
    unless set), as neve.spec.merge_engine reads them; none without a primary key."""
    cat = sqlite.catalog
    cat.create_namespace("db")
    keyed = cat.create_table("db.keyed", SCHEMA, primary_key=["id"])
    keyed.set_properties({"merge-engine": "partial-update", "sequence.field": "ts"})
    cat.create_table("db.plain", SCHEMA)
    doc = run(*sqlite.flags, "describe", "db.keyed", "--json").json()
    assert doc["merge_engine"] == "partial-update"
    settings = doc["merge_engine_settings"]
    assert (settings["sequence_fields"], settings["descending"]) == (["ts"], False)
    text = run(*sqlite.flags, "describe", "db.keyed").out
    assert "partial-update (sequence ts)" in text
    plain = run(*sqlite.flags, "describe", "db.plain", "--json").json()
    assert (plain["primary_key"], plain["merge_engine"]) == ([], None)
    assert "none (no primary key)" in run(*sqlite.flags, "describe", "db.plain").out


def test_history_snapshots_refs(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    t = events.refresh()
    hist = run(*sqlite.flags, "history", "db.events", "--json").json()
    assert [h["snapshot_id"] for h in hist] == [e.snapshot_id for e in t.history()]
    assert all(h["is_current_ancestor"] for h in hist)
    snaps = run(*sqlite.flags, "snapshots", "db.events", "--json").json()
    assert [s["snapshot_id"] for s in snaps] == [s.snapshot_id for s in t.snapshots()]
    assert [s["operation"] for s in snaps] == ["append", "append", "append", "delete"]
    assert [s["rows"] for s in snaps] == [int(s.summary["total-records"]) for s in t.snapshots()]
    assert [s["bytes"] for s in snaps] == [
        int(s.summary["total-files-size"]) for s in t.snapshots()
    ]
    assert snaps[-1]["delete_files"] == int(t.snapshots()[-1].summary["total-delete-files"]) > 0
    refs = run(*sqlite.flags, "refs", "db.events", "--json").json()
    assert {(r["name"], r["type"], r["snapshot_id"]) for r in refs} == {
        (name, ref.ref_type.value.upper(), ref.snapshot_id) for name, ref in t.refs().items()
    }


def test_files_and_partitions(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    t = events.refresh()
    files = run(*sqlite.flags, "files", "db.events", "--json").json()
    api = t.inspect.files().to_pylist()
    assert sorted(f["file_path"] for f in files) == sorted(f["file_path"] for f in api)
    assert sum(f["record_count"] for f in files if f["content"] == 0) == 120
    assert {f["content"] for f in files} == {0, 1}  # data and position delete files
    first = t.snapshots()[0].snapshot_id
    old = run(*sqlite.flags, "files", "db.events", "--snapshot", str(first), "--json").json()
    assert len(old) == len(t.inspect.files(first))
    parts = run(*sqlite.flags, "partitions", "db.events", "--json").json()
    api_parts = t.inspect.partitions().to_pylist()
    assert sorted(p["partition"]["ts_day"] for p in parts) == sorted(
        p["partition"]["ts_day"].isoformat() for p in api_parts
    )
    assert sum(p["record_count"] for p in parts) == 120


def test_plain_output_of_listings(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    for verb in ("history", "snapshots", "files", "partitions", "refs"):
        r = run(*sqlite.flags, verb, "db.events")
        assert r.code == 0, (verb, r.err)
        assert "db.events" in r.out
    sqlite.catalog.create_table("db.fresh", SCHEMA)
    fresh = run(*sqlite.flags, "snapshots", "db.fresh", "--plot")
    assert (fresh.code, fresh.out) == (0, "db.fresh has no snapshots yet\n")
    assert run(*sqlite.flags, "snapshots", "db.fresh", "--json").json() == []
    plot = run(*sqlite.flags, "snapshots", "db.events", "--plot").out
    assert "rows, data files and bytes per snapshot over time" in plot
    assert plot.count("█") > 10


def test_filesystem_catalog(run: Runner, tmp_path: Path) -> None:
    folder = tmp_path / "fs"
    cat = neve.connect(str(folder))
    t = fill(cat)
    doc = run("--uri", str(folder), "describe", "db.events", "--json").json()
    assert doc["uuid"] == t.metadata.table_uuid
    assert run("--uri", str(folder), "tables", "--json").json() == ["db.events"]
    rows = run("--uri", str(folder), "scan", "db.events", "--where", "id < 10", "--json").json()
    assert sorted(r["id"] for r in rows) == list(range(5, 10))
