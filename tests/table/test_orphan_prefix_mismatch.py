"""remove_orphan_files with locations that differ in scheme or authority: the table
lives on an object-store-style URI (``s3://bucket/...``) served by a local pyarrow
filesystem registered for the schemes ``s3``, ``s3a`` and ``s3n`` and the authorities
``bucket`` and ``alias`` (all one folder), so the listing really yields other prefixes
than the metadata holds. As in Iceberg-Java: ``s3a``/``s3n`` equal ``s3`` by default,
``equal_schemes``/``equal_authorities`` add equivalences, and a reachable file listed
under another prefix is refused (``error``), kept (``ignore``) or deleted (``delete``).
Local ``file:/x`` and ``file:///x`` are one file."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import neve
from neve.errors import ValidationError
from neve.io.fileio import FileIO
from neve.table.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])
_FOLDERS: dict[str, str] = {}  # authority -> local folder


class BucketIO(FileIO):
    """FileIO serving ``s3``/``s3a``/``s3n`` URIs from local folders by authority, with
    object-store semantics (no folders to create). The real S3 path is tested against
    the test server in tests/objectstore/test_maintenance_on_s3.py."""

    def is_object_store(self, path: str) -> bool:
        return False  # served by the local folders below, through pyarrow

    def filesystem(self, path: str) -> tuple[pafs.FileSystem, str]:
        parsed = urlparse(path)
        if parsed.scheme in ("s3", "s3a", "s3n"):
            local = pafs.SubTreeFileSystem(_FOLDERS[parsed.netloc], pafs.LocalFileSystem())
            return local, parsed.path.lstrip("/")
        return super().filesystem(path)

    def open_output(self, path: str) -> IO[bytes]:
        if not self.is_local(path):
            fs, inner = self.filesystem(path)
            fs.create_dir(inner.rsplit("/", 1)[0], recursive=True)
        return super().open_output(path)


@pytest.fixture
def bucket_table(tmp_path: Path) -> Iterator[tuple[Table, Path]]:
    folder = tmp_path / "bucket"
    folder.mkdir()
    _FOLDERS.update(bucket=str(folder), alias=str(folder))
    cat = neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse="s3://bucket/wh")
    cat.io = BucketIO(cat.properties)
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(pa.table({"id": [1, 2]}, schema=SCHEMA))
    t.append(pa.table({"id": [3]}, schema=SCHEMA))
    t = cat.load_table("db.t")
    assert t.location == "s3://bucket/wh/db/t"
    orphan = folder / "wh/db/t/data/crashed.parquet"
    pq.write_table(pa.table({"id": [9]}, schema=SCHEMA), orphan)
    old = time.time() - 4 * 24 * 3600
    os.utime(orphan, (old, old))
    yield t, folder
    _FOLDERS.clear()


def _files(folder: Path) -> set[str]:
    return {os.path.join(r, n) for r, _, ns in os.walk(folder) for n in ns}


def _old_everything() -> int:
    return int(time.time() * 1000) + 60_000  # every file counts as old enough


def test_default_scheme_equivalence_finds_only_the_orphan(bucket_table: tuple[Table, Path]) -> None:
    t, folder = bucket_table
    listing = _files(folder)
    for root in ("s3://bucket/wh/db/t", "s3a://bucket/wh/db/t", "s3n://bucket/wh/db/t"):
        found = t.maintenance.remove_orphan_files(location=root, dry_run=True)
        assert found.orphan_file_locations == (f"{root}/data/crashed.parquet",)
    assert _files(folder) == listing


def test_prefix_mismatch_modes(bucket_table: tuple[Table, Path]) -> None:
    t, folder = bucket_table
    listing = _files(folder)
    rows = t.scan().to_arrow().num_rows
    # s3a no longer equal to s3: every reachable file listed under s3a mismatches
    # (young files are never orphans: a cut-off in the future makes every file count)
    distinct = {"s3a": "s3a"}
    now = _old_everything()
    with pytest.raises(ValidationError, match=r"equal_schemes=.*prefix_mismatch_mode"):
        t.maintenance.remove_orphan_files(
            location="s3a://bucket/wh/db/t", equal_schemes=distinct, older_than=now
        )
    assert _files(folder) == listing
    kept = t.maintenance.remove_orphan_files(
        location="s3a://bucket/wh/db/t",
        equal_schemes=distinct,
        older_than=now,
        prefix_mismatch_mode="ignore",
        dry_run=True,
    )
    assert kept.orphan_file_locations == ("s3a://bucket/wh/db/t/data/crashed.parquet",)
    doomed = t.maintenance.remove_orphan_files(
        location="s3a://bucket/wh/db/t",
        equal_schemes=distinct,
        older_than=now,
        prefix_mismatch_mode="delete",
        dry_run=True,
    )
    reachable_data = {p for p in _files(folder) if p.endswith(".parquet")} - {
        str(folder / "wh/db/t/data/crashed.parquet")
    }
    listed = {p.removeprefix("s3a://bucket/") for p in doomed.orphan_file_locations}
    # the orphan, and every reachable data file and manifest (metadata JSON is kept)
    assert {str(folder / p) for p in listed} >= reachable_data | {
        str(folder / "wh/db/t/data/crashed.parquet")
    }
    assert not any(p.endswith(".metadata.json") for p in listed)
    assert _files(folder) == listing  # dry runs

    # another authority for the same folder: a mismatch until named equal
    with pytest.raises(ValidationError, match="reachable under another scheme or authority"):
        t.maintenance.remove_orphan_files(
            location="s3://alias/wh/db/t", older_than=now, dry_run=True
        )
    done = t.maintenance.remove_orphan_files(
        location="s3://alias/wh/db/t", equal_authorities={"alias": "bucket"}, older_than=now
    )
    assert done.orphan_file_locations == ("s3://alias/wh/db/t/data/crashed.parquet",)
    assert _files(folder) == listing - {str(folder / "wh/db/t/data/crashed.parquet")}
    assert t.scan().to_arrow().num_rows == rows == 3


def test_local_file_uri_forms_are_one_file(tmp_path: Path) -> None:
    cat = neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(pa.table({"id": [1, 2]}, schema=SCHEMA))
    t = cat.load_table("db.t")
    some_data = next(iter(t.scan().plan_files())).file.file_path
    assert some_data.startswith("file:///")  # what the metadata holds
    local = t.location.removeprefix("file://")
    orphan = Path(local) / "data" / "crashed.parquet"
    pq.write_table(pa.table({"id": [9]}, schema=SCHEMA), orphan)
    old = time.time() - 4 * 24 * 3600
    os.utime(orphan, (old, old))
    for root in (f"file:{local}", local, t.location):
        found = t.maintenance.remove_orphan_files(
            location=root, older_than=_old_everything(), dry_run=True
        )
        assert found.orphan_file_locations == (f"{root}/data/crashed.parquet",)
