"""``drop_table(purge=True)`` removes everything of the table, and nothing else."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from neve.arrow.writer import write_parquet_file
from neve.catalog import Catalog, FilesystemCatalog
from neve.io.fileio import FileIO

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])


def rows(start: int, n: int = 3) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [str(i) for i in ids]}, schema=SCHEMA)


def files_under(root: str | Path) -> set[str]:
    return {str(p) for p in Path(root).rglob("*") if p.is_file()}


def test_purge_removes_what_no_current_metadata_reaches(catalog: Catalog, tmp_path: Path) -> None:
    catalog.create_namespace("db")
    t = catalog.create_table(
        "db.t",
        SCHEMA,
        properties={
            # old metadata files fall out of the log, so no metadata reaches them
            "write.metadata.previous-versions-max": "1",
            "commit.manifest.min-count-to-merge": "2",
        },
    )
    for i in range(4):
        t.append(rows(10 * i))
    t.delete("id < 10")
    location = t.location
    metadata_dir = os.path.join(location, "metadata")
    # what a writer killed mid-commit leaves: a data file, a manifest, a temporary file
    pq.write_table(rows(99), os.path.join(location, "data", "00000-0-crashed-00001.parquet"))
    Path(metadata_dir, "crashed-m1.avro").write_bytes(b"partial manifest")
    Path(metadata_dir, ".v9.metadata.json.0123.tmp").write_bytes(b"{")
    # another table's files inside this table's location stay (a nested custom location)
    nested = catalog.create_table("db.nested", SCHEMA, location=os.path.join(location, "sub"))
    nested.append(rows(500))
    nested_files = files_under(nested.location)
    # a file outside the location that the table references stays (added from elsewhere)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    added = write_parquet_file(FileIO(), str(outside / "added.parquet"), t.schema(), rows(700))
    with t.transaction() as tx:
        tx.add_files([added])
    unrelated = tmp_path / "unrelated.txt"
    unrelated.write_text("not the table's")
    reachable_by_log = len(t.metadata.metadata_log)
    assert reachable_by_log == 1
    # one metadata file per commit: the create, four appends, the delete, the add_files
    versions = [n for n in os.listdir(metadata_dir) if n.endswith(".metadata.json")]
    assert len(versions) == 1 + 4 + 1 + 1

    catalog.drop_table("db.t", purge=True)

    assert not catalog.table_exists("db.t")
    assert files_under(location) == nested_files
    assert (outside / "added.parquet").exists()
    assert unrelated.exists()
    assert catalog.load_table("db.nested").scan().to_arrow().num_rows == 3
    if isinstance(catalog, FilesystemCatalog):
        assert set(os.listdir(location)) == {"sub"}


def test_purge_follows_configured_paths_but_only_for_the_tables_files(
    catalog: Catalog, tmp_path: Path
) -> None:
    """``write.data.path`` outside the location: the table's files there go, others stay
    (the folder may be shared)."""
    shared = tmp_path / "shared-data"
    shared.mkdir()
    (shared / "someone-else.parquet").write_bytes(b"PAR1")
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA, properties={"write.data.path": str(shared)})
    t.append(rows(0))
    t.append(rows(10))
    t.delete("id < 10")  # the first file is no longer live, but older metadata reaches it
    ours = files_under(shared) - {str(shared / "someone-else.parquet")}
    assert len(ours) == 2
    catalog.drop_table("db.t", purge=True)
    assert files_under(shared) == {str(shared / "someone-else.parquet")}
    assert not Path(t.location).exists() or files_under(t.location) == set()


def test_drop_without_purge_keeps_every_file(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows(0))
    data = {p for p in files_under(t.location) if p.endswith(".parquet")}
    catalog.drop_table("db.t")
    assert {p for p in files_under(t.location) if p.endswith(".parquet")} == data
