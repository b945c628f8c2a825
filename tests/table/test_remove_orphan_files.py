"""Orphan file removal: files below the table's location that nothing of the table
reaches and that are older than the cut-off go; everything reachable, everything
younger, another table nested below, and the filesystem catalog's version files stay; a
dry run deletes nothing; a writer in another process commits while removal runs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neve
from neve.catalog import SqlCatalog
from neve.errors import ValidationError
from neve.table.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def rows(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"r{i}" for i in ids]}, schema=SCHEMA)


def files(root: str | Path) -> set[str]:
    return {
        os.path.join(r, n) for r, _, ns in os.walk(str(root).removeprefix("file://")) for n in ns
    }


def orphan(path: Path, age_s: float = 4 * 24 * 3600) -> str:
    """A stray file (a crashed writer's), last modified ``age_s`` ago."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows(range(3)), path)
    old = time.time() - age_s
    os.utime(path, (old, old))
    return str(path)


def age_everything(root: str, age_s: float = 5 * 24 * 3600) -> None:
    old = time.time() - age_s
    for p in files(root):
        os.utime(p, (old, old))


# A variant of the root ``catalog`` fixture: the filesystem catalog's own files under
# the table location (``v<N>.metadata.json``, ``version-hint.text``) are reachable though
# no snapshot lists them, so these tests run on it as well as on SQLite (which stands
# for the SQL catalogs: PostgreSQL keeps the same files).
@pytest.fixture(params=["sqlite", "filesystem"])
def sqlite_or_filesystem_catalog(
    request: pytest.FixtureRequest, catalog_factory: Callable[[str], neve.Catalog]
) -> neve.Catalog:
    cat = catalog_factory(request.param)
    cat.create_namespace("db")
    return cat


def make(catalog: neve.Catalog) -> Table:
    t = catalog.create_table("db.t", SCHEMA, primary_key=["id"], format_version=3)
    t.append(rows(range(0, 20)))
    t.delete("id < 3")
    t.upsert(rows(range(18, 25)))
    return catalog.load_table("db.t")


def test_removes_only_old_unreachable_files(sqlite_or_filesystem_catalog: neve.Catalog) -> None:
    t = make(sqlite_or_filesystem_catalog)
    root = Path(t.location.removeprefix("file://"))
    want = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    age_everything(str(root))  # the table's own files are old too: age alone is no reason
    stray = {
        orphan(root / "data" / "crashed-1.parquet"),
        orphan(root / "data" / "id_bucket=3" / "crashed-2.parquet"),
        orphan(root / "metadata" / "snap-123-1-crashed.avro"),
    }
    young = orphan(root / "data" / "in-flight.parquet", age_s=60)
    listing = files(root)

    dry = t.maintenance.remove_orphan_files(dry_run=True)
    assert {p.removeprefix("file://") for p in dry.orphan_file_locations} == stray
    assert files(root) == listing

    done = t.maintenance.remove_orphan_files()
    assert done.orphan_file_locations == dry.orphan_file_locations and not done.failed
    assert files(root) == listing - stray
    assert young in files(root)  # younger than the 3-day default cut-off
    t = sqlite_or_filesystem_catalog.load_table("db.t")
    assert sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == want
    for s in t.snapshots():
        t.scan(snapshot_id=s.snapshot_id).to_arrow()  # every snapshot still reads

    # With a cut-off of now, the young stray goes too, and still nothing reachable.
    gone = t.maintenance.remove_orphan_files(older_than=int(time.time() * 1000) + 1000)
    assert {p.removeprefix("file://") for p in gone.orphan_file_locations} == {young}
    t = sqlite_or_filesystem_catalog.load_table("db.t")
    assert sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == want
    t.append(rows(range(100, 101)))  # the table still commits (version files intact)
    assert "deleted orphan files" in str(gone)


def test_a_nested_table_is_left_alone(sqlite_catalog: neve.Catalog) -> None:
    outer = make(sqlite_catalog)
    inner = sqlite_catalog.create_table(
        "db.inner", SCHEMA, location=outer.location.rstrip("/") + "/nested"
    )
    inner.append(rows(range(5)))
    age_everything(outer.location.removeprefix("file://"))
    result = sqlite_catalog.load_table("db.t").maintenance.remove_orphan_files()
    assert result.orphan_file_locations == ()
    assert sqlite_catalog.load_table("db.inner").scan().to_arrow().num_rows == 5


def test_bad_options_are_refused(sqlite_or_filesystem_catalog: neve.Catalog) -> None:
    t = make(sqlite_or_filesystem_catalog)
    with pytest.raises(ValidationError, match="prefix_mismatch_mode"):
        t.maintenance.remove_orphan_files(prefix_mismatch_mode="maybe")


WRITER = textwrap.dedent(
    """
    import sys, pyarrow as pa, neve
    uri, wh, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    t = neve.connect(uri, warehouse=wh).load_table("db.t")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    for i in range(n):
        t.append(pa.table({"id": [1000 + i], "v": ["w"]}, schema=schema))
    print("ok")
    """
)


def test_a_concurrent_writer_commits_while_removal_runs(sqlite_catalog: SqlCatalog) -> None:
    uri, wh = sqlite_catalog.uri, sqlite_catalog.warehouse
    t = make(sqlite_catalog)
    root = Path(t.location.removeprefix("file://"))
    age_everything(str(root))
    stray = orphan(root / "data" / "crashed.parquet")
    start_ms = int(time.time() * 1000) - 1000  # every file the writer writes is younger
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, uri, wh, "25"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    removed: set[str] = set()
    while writer.poll() is None:
        got = sqlite_catalog.load_table("db.t").maintenance.remove_orphan_files(older_than=start_ms)
        removed |= {p.removeprefix("file://") for p in got.orphan_file_locations}
    out, err = writer.communicate()
    assert writer.returncode == 0 and out.strip() == "ok", err
    assert removed == {stray}
    t = sqlite_catalog.load_table("db.t")
    ids = sorted(r["id"] for r in t.scan(filter="id >= 1000").to_arrow().to_pylist())
    assert ids == list(range(1000, 1025))
