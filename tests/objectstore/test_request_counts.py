"""How many requests neve makes of an object store, counted by the test server's log, so
that a regression in request count fails here: a commit on both catalog kinds, a cold
plan of a 1,000-manifest table, and a filtered scan. Each count is what the protocol
needs (docs/OBJECT-STORES.md says why), not what neve happened to do."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pyarrow as pa
import pytest

import neve
from neve.planning.manifest_cache import manifest_cache
from s3server import S3Warehouse, op_counts
from s3server.tables import table_with_manifests

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.float64()),
        pa.field("s", pa.string()),
    ]
)


def _rows(lo: int, hi: int) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table(
        {"id": ids, "v": [i * 0.5 for i in ids], "s": [f"s{i}" for i in ids]}, schema=SCHEMA
    )


def _kinds(log: list[dict[str, object]]) -> list[tuple[str, str]]:
    """(operation, kind of file) per request, in order."""

    def kind(key: str) -> str:
        name = key.rsplit("/", 1)[-1]
        if name.endswith(".parquet"):
            return "data"
        if name.startswith("snap-"):
            return "manifest-list"
        if name.endswith(".avro"):
            return "manifest"
        if name.endswith(".metadata.json"):
            return "metadata"
        return name or "listing"

    return [(str(e["op"]), kind(str(e["key"]))) for e in log]


@pytest.fixture
def cold_cache() -> Iterator[None]:
    """Planning starts with nothing decoded in this process."""
    manifest_cache().clear()
    yield
    manifest_cache().clear()


def test_commit_on_the_object_store_filesystem_catalog(s3_warehouse: S3Warehouse) -> None:
    cat = neve.connect(s3_warehouse.uri, **s3_warehouse.properties)
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    for i in range(3):
        with s3_warehouse.counting() as log:
            t.append(_rows(10 * i, 10 * i + 10))
        # the data file, then the commit's metadata work: the manifest, the manifest
        # list, the put-if-absent of the next version and the hint; no read at all
        assert _kinds(log) == [
            ("PUT", "data"),
            ("PUT", "manifest"),
            ("PUT", "manifest-list"),
            ("PUT", "metadata"),
            ("PUT", "version-hint.text"),
        ]
        assert [e["if_none_match"] for e in log] == [False, False, False, True, False]
    # a writer that just loaded the table: the load is a LIST and a GET, and its first
    # commit reads the parent's manifest list once (a fresh process: no list kept yet;
    # this process keeps the lists its commits wrote)
    manifest_cache().clear()
    other = neve.connect(s3_warehouse.uri, **s3_warehouse.properties)
    with s3_warehouse.counting() as log:
        fresh = other.load_table("db.t")
    assert _kinds(log) == [("LIST", "listing"), ("GET", "metadata")]
    with s3_warehouse.counting() as log:
        fresh.append(_rows(100, 110))
    assert op_counts(log) == Counter({"PUT": 5, "GET": 1})
    assert ("GET", "manifest-list") in _kinds(log)
    assert sorted(cat.load_table("db.t").scan().to_arrow().column("id").to_pylist()) == [
        *range(30),
        *range(100, 110),
    ]


def test_commit_on_the_sql_catalog(s3_warehouse: S3Warehouse, tmp_path: object) -> None:
    cat = neve.connect(
        f"sqlite:///{tmp_path}/c.db", warehouse=s3_warehouse.uri, **s3_warehouse.properties
    )
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    for i in range(2):
        with s3_warehouse.counting() as log:
            t.append(_rows(10 * i, 10 * i + 10))
        # the pointer swap is in the database: three metadata PUTs, no read
        assert _kinds(log) == [
            ("PUT", "data"),
            ("PUT", "manifest"),
            ("PUT", "manifest-list"),
            ("PUT", "metadata"),
        ]


def test_cold_plan_of_a_thousand_manifests(s3_warehouse: S3Warehouse, cold_cache: None) -> None:
    cat = neve.connect(s3_warehouse.uri, **s3_warehouse.properties)
    cat.create_namespace("db")
    table_with_manifests(cat, "db.m", 1000)
    manifest_cache().clear()
    cold = neve.connect(s3_warehouse.uri, **s3_warehouse.properties)
    with s3_warehouse.counting() as log:
        tasks = list(cold.load_table("db.m").scan().plan_files())
    assert len(tasks) == 1000
    # one listing for the current version, its metadata, the manifest list, and one
    # GET per manifest: no HEAD before a read, nothing read twice
    assert op_counts(log) == Counter({"LIST": 1, "GET": 1002})
    assert len({e["key"] for e in log if e["op"] == "GET"}) == 1002
    # warm: the same plan again reads nothing
    with s3_warehouse.counting() as log:
        again = list(cold.load_table("db.m").scan("id < 25").plan_files())
    assert len(again) == 3
    assert op_counts(log) == Counter({"LIST": 1})


def test_filtered_scan(s3_warehouse: S3Warehouse, cold_cache: None) -> None:
    cat = neve.connect(s3_warehouse.uri, **s3_warehouse.properties)
    cat.create_namespace("db")
    # four files of 10,000 rows, each in row groups of about 20 kB
    t = cat.create_table("db.s", SCHEMA, properties={"write.parquet.row-group-size-bytes": "20000"})
    for f in range(4):
        t.append(_rows(f * 10_000, (f + 1) * 10_000))
    files = [task.file for task in t.scan().plan_files()]
    assert all(len(f.split_offsets or ()) > 2 for f in files)
    manifest_cache().clear()
    cold = neve.connect(s3_warehouse.uri, **s3_warehouse.properties)
    with s3_warehouse.counting() as log:
        rows = cold.load_table("db.s").scan("id >= 12000 and id < 12100", columns=["id", "v"])
        got = rows.to_arrow()
    assert sorted(got.column("id").to_pylist()) == list(range(12000, 12100))
    # planning: the listing, metadata, manifest list and the four manifests; the scan
    # reads one file of four (metrics), and in it the footer and then one row group of
    # several (statistics), its two columns in one coalesced request
    assert _kinds(log) == [
        ("LIST", "listing"),
        ("GET", "metadata"),
        ("GET", "manifest-list"),
        *[("GET", "manifest")] * 4,
        ("GET", "data"),
        ("GET", "data"),
    ]
    footer, chunk = [e for e in log if e["op"] == "GET"][-2:]
    assert footer["key"] == chunk["key"]
