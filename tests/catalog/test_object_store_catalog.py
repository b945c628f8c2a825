"""The filesystem catalog on an object store (the S3-protocol test server): namespaces and
tables on a store without folders, commits by put-if-absent of the next version, the
refusal of stores without conditional puts, drops that leave a tombstone, and answers
lost on the network."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import neve
from neve.catalog import FilesystemCatalog
from neve.errors import (
    CommitConflictError,
    CommitFailedError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
    ValidationError,
)
from neve.io.fileio import FileIO
from s3server import S3Warehouse

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])


def _rows(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids), "s": [f"r{i}" for i in ids]}, schema=SCHEMA)


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def _keys(wh: S3Warehouse, prefix: str) -> list[str]:
    io = FileIO(wh.properties)
    return sorted(p.removeprefix(f"{wh.uri}/") for p in io.list_files(f"{wh.uri}/{prefix}"))


@pytest.fixture
def cat(s3_warehouse: S3Warehouse) -> FilesystemCatalog:
    made = neve.connect(s3_warehouse.uri, **s3_warehouse.properties)
    assert isinstance(made, FilesystemCatalog)
    return made


def test_namespaces_and_tables_on_a_store_without_folders(
    cat: FilesystemCatalog, s3_warehouse: S3Warehouse
) -> None:
    cat.create_namespace("db", {"owner": "ana"})
    cat.create_namespace(("db", "sub"))
    cat.create_namespace("other")
    with pytest.raises(NamespaceAlreadyExistsError):
        cat.create_namespace("db")
    assert cat.list_namespaces() == [("db",), ("other",)]
    assert cat.list_namespaces("db") == [("db", "sub")]
    cat.update_namespace_properties("db", removals=["owner"], updates={"k": "v"})
    assert cat.namespace_properties("db") == {"k": "v"}
    with pytest.raises(NoSuchNamespaceError):
        cat.list_tables("nope")

    t = cat.create_table("db.t", SCHEMA)
    cat.create_table("db.u", SCHEMA)
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table("db.t", SCHEMA)
    assert t.metadata_location == f"{s3_warehouse.uri}/db/t/metadata/v1.metadata.json"
    assert cat.list_tables("db") == [("db", "t"), ("db", "u")]
    assert cat.list_tables("db.sub") == []
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("db")
    with pytest.raises(ValidationError, match="cannot rename"):
        cat.rename_table("db.t", "db.v")

    t.append(_rows(1, 2))
    assert _keys(s3_warehouse, "db/t/metadata")[-2:] == [
        "db/t/metadata/v2.metadata.json",
        "db/t/metadata/version-hint.text",
    ]
    reg = cat.register_table("other.copy", t.metadata_location)
    assert _ids(reg.scan().to_arrow()) == [1, 2]

    # paged listings: two keys per page
    s3_warehouse.settings(max_keys=2)
    for i in range(5):
        cat.create_table(f"db.p{i}", SCHEMA)
    pages = sum(1 for e in s3_warehouse.log() if e["op"] == "LIST")
    s3_warehouse.clear_log()
    assert len(cat.list_tables("db")) == 7
    assert sum(1 for e in s3_warehouse.log() if e["op"] == "LIST") > 7  # pages seen
    assert pages > 0
    s3_warehouse.settings(max_keys=None)
    cat.drop_namespace("db.sub")
    assert cat.list_namespaces("db") == []


def test_store_without_conditional_puts_is_refused(s3_warehouse: S3Warehouse) -> None:
    s3_warehouse.settings(ignore_if_none_match=True)
    with pytest.raises(ValidationError, match="SQL catalog") as err:
        neve.connect(s3_warehouse.uri, **s3_warehouse.properties)
    assert "conditional put" in str(err.value)
    assert _keys(s3_warehouse, "") == []  # the probe leaves nothing behind
    # declared: no probe at all
    s3_warehouse.clear_log()
    with pytest.raises(ValidationError, match="SQL catalog"):
        neve.connect(s3_warehouse.uri, **{**s3_warehouse.properties, "s3.conditional-put": "false"})
    assert s3_warehouse.log() == []


def test_two_writers_never_both_win(cat: FilesystemCatalog, s3_warehouse: S3Warehouse) -> None:
    cat.create_namespace("db")
    cat.create_table("db.t", SCHEMA)
    other = neve.connect(s3_warehouse.uri, **s3_warehouse.properties)
    a, b = cat.load_table("db.t"), other.load_table("db.t")
    base = a.metadata_location
    a.append(_rows(1))
    # b starts from the version a replaced: its put of v2 finds v2 taken, then it
    # rebases onto v2 and lands as v3
    with s3_warehouse.counting() as log:
        b.append(_rows(2))
    puts = [e for e in log if e["op"] == "PUT" and e["key"].endswith(".metadata.json")]
    assert [(p["key"].rsplit("/", 1)[-1], p["status"]) for p in puts] == [
        ("v2.metadata.json", 412),
        ("v3.metadata.json", 200),
    ]
    final = cat.load_table("db.t")
    assert _ids(final.scan().to_arrow()) == [1, 2]
    assert [e.metadata_file for e in final.metadata.metadata_log] == [
        base,
        base.replace("v1.", "v2."),
    ]
    # the catalog primitive: a stale base is a lost swap, nothing written
    with pytest.raises(CommitFailedError):
        cat.commit_metadata(("db", "t"), base, final.metadata)


def test_answer_lost_after_the_put_landed(
    cat: FilesystemCatalog, s3_warehouse: S3Warehouse
) -> None:
    """The server takes the conditional put, then resets the connection: the client
    retries, finds the version taken, reads it back and knows it won."""
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    with (
        s3_warehouse.faults(1.0, ["reset-after"], ops=["PUT"], match="v2.metadata", limit=1),
        s3_warehouse.counting() as log,
    ):
        t.append(_rows(7))
    versions = [e for e in log if e["key"].endswith("v2.metadata.json")]
    assert versions[0]["status"] == "reset"
    assert any(e["status"] == 412 for e in versions)  # the retry found it taken
    fresh = cat.load_table("db.t")
    assert fresh.metadata_location.endswith("v2.metadata.json")
    assert _ids(fresh.scan().to_arrow()) == [7]
    assert len(fresh.metadata.snapshots) == 1


def test_drop_leaves_a_tombstone_and_stale_writers_fail(
    cat: FilesystemCatalog, s3_warehouse: S3Warehouse
) -> None:
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(_rows(1))
    stale = cat.load_table("db.t")
    cat.drop_table("db.t")
    assert not cat.table_exists("db.t")
    assert cat.list_tables("db") == []
    with pytest.raises(NoSuchTableError):
        cat.load_table("db.t")
    keys = _keys(s3_warehouse, "db/t/metadata")
    assert "db/t/metadata/v3.dropped" in keys
    assert "db/t/metadata/version-hint.text" not in keys
    tomb = json.loads(
        FileIO(s3_warehouse.properties).read_bytes(
            f"{s3_warehouse.uri}/db/t/metadata/v3.metadata.json"
        )
    )
    assert tomb["neve-dropped-table"] == t.metadata.table_uuid
    # a writer that loaded the table before the drop cannot commit into it
    with pytest.raises((NoSuchTableError, CommitFailedError)):
        stale.append(_rows(2))
    # a re-created table goes on above the tombstone; the old handle conflicts
    again = cat.create_table("db.t", SCHEMA)
    assert again.metadata_location.endswith("/v4.metadata.json")
    with pytest.raises(CommitConflictError):
        stale.append(_rows(3))
    again.append(_rows(4))
    assert _ids(cat.load_table("db.t").scan().to_arrow()) == [4]
    # purge: the data goes, the tombstone stays
    cat.drop_table("db.t", purge=True)
    left = _keys(s3_warehouse, "db/t")
    assert left == ["db/t/metadata/v6.dropped", "db/t/metadata/v6.metadata.json"]
    assert cat.create_table("db.t", SCHEMA).metadata_location.endswith("/v7.metadata.json")


def test_crash_between_tombstone_and_marker(
    cat: FilesystemCatalog, s3_warehouse: S3Warehouse
) -> None:
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    io = FileIO(s3_warehouse.properties)
    stone = json.dumps({"neve-dropped-table": t.metadata.table_uuid}).encode()
    io.create_exclusive(f"{s3_warehouse.uri}/db/t/metadata/v2.metadata.json", stone)
    assert not cat.table_exists("db.t")  # and the marker is written now
    assert "db/t/metadata/v2.dropped" in _keys(s3_warehouse, "db/t/metadata")


def test_delete_after_commit_refused(cat: FilesystemCatalog) -> None:
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    with pytest.raises(ValidationError, match="delete-after-commit"):
        t.set_properties({"write.metadata.delete-after-commit.enabled": "true"})
    assert cat.load_table("db.t").metadata_location.endswith("/v1.metadata.json")
