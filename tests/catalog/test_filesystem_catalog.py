"""What only the filesystem catalog does: the folder layout, the version hint, files
written by other engines, and its refusals."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from neve.catalog import FilesystemCatalog
from neve.errors import (
    CommitFailedError,
    NamespaceAlreadyExistsError,
    NeveIOError,
    NoSuchNamespaceError,
    TableAlreadyExistsError,
    ValidationError,
)
from neve.io.fileio import FileIO
from neve.spec.metadata_json import metadata_to_bytes


@pytest.fixture
def fs(tmp_path: Path) -> FilesystemCatalog:
    return FilesystemCatalog("neve", str(tmp_path / "wh"))


def _meta(fs: FilesystemCatalog, *parts: str) -> Path:
    return Path(fs.warehouse, *parts, "metadata")


def test_layout(fs: FilesystemCatalog, create_raw: Callable[..., Any]) -> None:
    ident, base, md = create_raw(fs, "db.sub.t")
    assert json.loads(Path(fs.warehouse, "db", ".namespace.json").read_text()) == {}
    assert Path(fs.warehouse, "db", "sub", ".namespace.json").is_file()
    meta = _meta(fs, "db", "sub", "t")
    assert base == str(meta / "v1.metadata.json")
    assert (meta / "version-hint.text").read_text() == "1"
    new = fs.commit_metadata(ident, base, md.with_(properties={"a": "b"}))
    assert new == str(meta / "v2.metadata.json")
    assert (meta / "version-hint.text").read_text() == "2"
    assert sorted(os.listdir(meta)) == ["v1.metadata.json", "v2.metadata.json", "version-hint.text"]


def test_namespace_properties_file(fs: FilesystemCatalog) -> None:
    fs.create_namespace("db", {"owner": "ana"})
    path = Path(fs.warehouse, "db", ".namespace.json")
    assert json.loads(path.read_text()) == {"owner": "ana"}
    fs.update_namespace_properties("db", updates={"k": "v"})
    assert json.loads(path.read_text()) == {"owner": "ana", "k": "v"}
    assert [p.name for p in path.parent.iterdir()] == [".namespace.json"]  # no temp files
    path.write_text("[1, 2]")
    with pytest.raises(NeveIOError, match="JSON object"):
        fs.namespace_properties("db")


def test_lagging_or_missing_hint(fs: FilesystemCatalog, create_raw: Callable[..., Any]) -> None:
    ident, base, md = create_raw(fs, "db.t")
    v2 = fs.commit_metadata(ident, base, md.with_(properties={"n": "2"}))
    v3 = fs.commit_metadata(ident, v2, md.with_(properties={"n": "3"}))
    hint = _meta(fs, "db", "t") / "version-hint.text"
    hint.write_text("1")  # a writer crashed before updating the hint
    assert fs._metadata_location(ident) == v3
    hint.unlink()
    assert fs._metadata_location(ident) == v3
    hint.write_text("garbage")
    assert fs._metadata_location(ident) == v3
    hint.write_text("9")  # points past the newest version
    assert fs._metadata_location(ident) == v3
    assert fs.read_metadata(fs._metadata_location(ident)).properties == {"n": "3"}


def test_commit_from_stale_base_writes_nothing(
    fs: FilesystemCatalog, create_raw: Callable[..., Any]
) -> None:
    ident, base, md = create_raw(fs, "db.t")
    fs.commit_metadata(ident, base, md.with_(properties={"n": "2"}))
    # Older versions were cleaned up, so v2 would be free again: still refused.
    (_meta(fs, "db", "t") / "v1.metadata.json").unlink()
    with pytest.raises(CommitFailedError, match="another writer"):
        fs.commit_metadata(ident, base, md.with_(properties={"n": "x"}))
    assert sorted(os.listdir(_meta(fs, "db", "t"))) == ["v2.metadata.json", "version-hint.text"]


def test_version_created_by_someone_else(
    fs: FilesystemCatalog, create_raw: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    ident, base, md = create_raw(fs, "db.t")
    original = fs._current

    def then_another_writer_commits(i: Any) -> Any:
        # Another writer's v2 lands right after we looked up the current version.
        result = original(i)
        (_meta(fs, "db", "t") / "v2.metadata.json").write_bytes(metadata_to_bytes(md))
        return result

    monkeypatch.setattr(fs, "_current", then_another_writer_commits)
    with pytest.raises(CommitFailedError, match="version 2 was created first"):
        fs.commit_metadata(ident, base, md.with_(properties={"mine": "1"}))
    monkeypatch.undo()
    assert fs.read_metadata(fs._metadata_location(ident)).properties == {}


def test_reads_gzip_versions_of_other_writers(
    fs: FilesystemCatalog, create_raw: Callable[..., Any]
) -> None:
    ident, _, md = create_raw(fs, "db.t")
    meta = _meta(fs, "db", "t")
    (meta / "v2.gz.metadata.json").write_bytes(
        gzip.compress(metadata_to_bytes(md.with_(properties={"n": "2"})))
    )
    (meta / "v3.metadata.json.gz").write_bytes(
        gzip.compress(metadata_to_bytes(md.with_(properties={"n": "3"})))
    )
    current = fs._metadata_location(ident)
    assert current.endswith("/v3.metadata.json.gz")
    assert fs.read_metadata(current).properties == {"n": "3"}
    new = fs.commit_metadata(
        ident, current, md.with_(properties={"write.metadata.compression-codec": "gzip"})
    )
    assert new.endswith("/v4.metadata.json")  # always plain: one name per version
    assert Path(new).read_bytes()[:1] == b"{"


def test_hadoop_folders_are_adopted(
    fs: FilesystemCatalog, make_metadata: Callable[..., Any]
) -> None:
    # A warehouse written by Iceberg's Hadoop catalog: plain folders, no .namespace.json.
    table_dir = Path(fs.warehouse, "hdb", "events")
    (table_dir / "metadata").mkdir(parents=True)
    md = make_metadata(str(table_dir))
    (table_dir / "metadata" / "v1.metadata.json").write_bytes(metadata_to_bytes(md))
    (table_dir / "metadata" / "version-hint.text").write_text("1")
    assert fs._metadata_location(("hdb", "events")).endswith("/v1.metadata.json")
    assert fs.list_namespaces() == []
    with pytest.raises(NoSuchNamespaceError):
        fs.list_tables("hdb")
    fs.create_namespace("hdb")
    assert fs.list_tables("hdb") == [("hdb", "events")]
    with pytest.raises(NamespaceAlreadyExistsError, match="is a table"):
        fs.create_namespace("hdb.events")


def test_table_and_namespace_cannot_share_a_folder(
    fs: FilesystemCatalog, make_metadata: Callable[..., Any]
) -> None:
    fs.create_namespace("db.x")
    with pytest.raises(TableAlreadyExistsError, match="namespace"):
        fs._create_table(("db", "x"), make_metadata(fs.default_table_location(("db", "x"))))
    assert fs.list_namespaces("db") == [("db", "x")]


def test_drop_without_purge_leaves_files(
    fs: FilesystemCatalog, create_raw: Callable[..., Any]
) -> None:
    ident, base, md = create_raw(fs, "db.t")
    v2 = fs.commit_metadata(ident, base, md.with_(properties={"n": "2"}))
    manifest = _meta(fs, "db", "t") / "snap-1.avro"
    manifest.write_bytes(b"avro")
    fs._drop_table(ident)
    assert not fs.table_exists("db.t")
    assert os.listdir(_meta(fs, "db", "t")) == ["snap-1.avro"]
    assert not Path(v2).exists()
    assert fs.list_tables("db") == []
    assert fs.list_namespaces("db") == []  # the leftover folder is no namespace
    again = fs._create_table(ident, md)  # the name is free again
    assert again.endswith("/v1.metadata.json")


def test_drop_namespace_keeps_folder_with_leftovers(
    fs: FilesystemCatalog, create_raw: Callable[..., Any]
) -> None:
    ident, _, _ = create_raw(fs, "db.t")
    (_meta(fs, "db", "t") / "snap-1.avro").write_bytes(b"avro")
    fs._drop_table(ident)
    fs.drop_namespace("db")
    assert not fs.namespace_exists("db")
    assert Path(fs.warehouse, "db", "t", "metadata", "snap-1.avro").exists()
    shutil.rmtree(Path(fs.warehouse, "db"))
    fs.create_namespace("db")
    fs.drop_namespace("db")
    assert not Path(fs.warehouse, "db").exists()


def test_rename_refused(fs: FilesystemCatalog, create_raw: Callable[..., Any]) -> None:
    ident, base, _ = create_raw(fs, "db.t")
    with pytest.raises(ValidationError, match="register_table"):
        fs._rename_table(ident, ("db", "u"))
    assert fs._metadata_location(ident) == base


@pytest.mark.parametrize("bad", ["a/b", "..", "a\\b"])
def test_path_like_names_rejected(fs: FilesystemCatalog, bad: str) -> None:
    with pytest.raises(ValidationError, match="cannot be used"):
        fs.create_namespace((bad,))
    assert not Path(fs.warehouse).parent.joinpath("b").exists()


@pytest.mark.parametrize("warehouse", ["hdfs://namenode/warehouse", "ftp://host/warehouse"])
def test_store_without_exclusive_create_refused(warehouse: str) -> None:
    # object stores without conditional puts: tests/catalog/test_object_store_catalog.py
    with pytest.raises(ValidationError, match="SQL catalog"):
        FilesystemCatalog("neve", warehouse)


def test_file_uri_warehouse(tmp_path: Path, create_raw: Callable[..., Any]) -> None:
    fs = FilesystemCatalog("neve", f"file://{tmp_path}/wh")
    ident, base, md = create_raw(fs, "db.t")
    assert base == f"file://{tmp_path}/wh/db/t/metadata/v1.metadata.json"
    assert md.location == f"file://{tmp_path}/wh/db/t"
    new = fs.commit_metadata(ident, base, md)
    assert new == f"file://{tmp_path}/wh/db/t/metadata/v2.metadata.json"
    assert Path(tmp_path, "wh", "db", "t", "metadata", "v2.metadata.json").is_file()


def test_exclusive_create_is_complete_when_visible(tmp_path: Path) -> None:
    io = FileIO()
    path = str(tmp_path / "m" / "v1.metadata.json")
    io.create_exclusive(path, b"x" * 100_000)
    with pytest.raises(Exception, match="exists already"):
        io.create_exclusive(path, b"y")
    assert Path(path).read_bytes() == b"x" * 100_000
    assert os.listdir(tmp_path / "m") == ["v1.metadata.json"]  # no temporary file left


def test_readers_never_see_partial_versions(
    fs: FilesystemCatalog, create_raw: Callable[..., Any]
) -> None:
    ident, base, md = create_raw(fs, "db.t")
    big = md.with_(properties={f"key-{i}": "x" * 200 for i in range(2000)})  # ~0.5 MB
    done = threading.Event()
    errors: list[BaseException] = []
    seen: set[str] = set()

    def reader() -> None:
        while not done.is_set():
            try:
                location = fs._metadata_location(ident)
                fs.read_metadata(location)
                seen.add(location)
            except BaseException as exc:
                errors.append(exc)
                return

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for _ in range(15):
            base = fs.commit_metadata(ident, base, big)
    finally:
        done.set()
        thread.join()
    assert errors == []
    assert len(seen) > 1
