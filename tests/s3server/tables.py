"""Tables the object-store tests and ``benchmarks/bench_object_store.py`` share.

:func:`table_with_manifests` makes a table whose current snapshot has ``n`` manifests of
one data file each, written straight with neve's manifest writer and committed through
the catalog's ``commit`` seam (what a planner reads, without writing ``n`` data files or
making ``n`` commits: the data files are never opened by planning and do not exist).
"""

from __future__ import annotations

import random
import struct
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from neve.catalog import Catalog
from neve.spec.manifest import (
    DataFile,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from neve.spec.manifest_writer import write_manifest, write_manifest_list
from neve.spec.refs import SnapshotRef
from neve.spec.requirements import AssertRefSnapshotId, AssertTableUUID
from neve.spec.snapshot import Operation, Snapshot
from neve.spec.updates import AddSnapshot, SetSnapshotRef
from neve.table.table import Table

__all__ = ["MANIFEST_SCHEMA", "table_with_manifests"]

MANIFEST_SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.float64())]
)


def table_with_manifests(cat: Catalog, name: str, n: int, workers: int = 16) -> Table:
    """A new v2 table ``name`` (id long, v double) whose main branch has one snapshot of
    ``n`` manifests; manifest ``i`` holds one data file of ids ``[10 i, 10 i + 9]``."""
    table = cat.create_table(name, MANIFEST_SCHEMA)
    md = table.metadata
    schema, spec = md.schema(), md.spec()
    snapshot_id = random.randrange(1, 2**62)
    folder = f"{md.location}/metadata"
    commit_id = uuid.uuid4()

    def one(i: int) -> ManifestFile:
        data = DataFile(
            file_path=f"{md.location}/data/never-written-{i:05d}.parquet",
            file_format=FileFormat.PARQUET,
            partition=(),
            record_count=10,
            file_size_in_bytes=4096,
            value_counts={1: 10, 2: 10},
            null_value_counts={1: 0, 2: 0},
            lower_bounds={1: struct.pack("<q", 10 * i)},  # single-value form
            upper_bounds={1: struct.pack("<q", 10 * i + 9)},
        )
        return write_manifest(
            table.io,
            f"{folder}/{commit_id}-m{i}.avro",
            format_version=md.format_version,
            spec=spec,
            schema=schema,
            content=ManifestContent.DATA,
            snapshot_id=snapshot_id,
            entries=[ManifestEntry(ManifestEntryStatus.ADDED, snapshot_id, None, None, data)],
        )

    with ThreadPoolExecutor(workers) as pool:
        manifests = list(pool.map(one, range(n)))
    sequence = md.last_sequence_number + 1
    list_path = f"{folder}/snap-{snapshot_id}-1-{commit_id}.avro"
    write_manifest_list(
        table.io,
        list_path,
        format_version=md.format_version,
        snapshot_id=snapshot_id,
        parent_snapshot_id=None,
        sequence_number=sequence,
        manifests=manifests,
    )
    snapshot = Snapshot(
        snapshot_id=snapshot_id,
        sequence_number=sequence,
        timestamp_ms=int(time.time() * 1000),
        manifest_list=list_path,
        operation=Operation.APPEND,
        summary={"operation": "append", "added-data-files": str(n), "added-records": str(10 * n)},
        schema_id=schema.schema_id,
    )
    cat.commit(
        table.identifier,
        [AssertTableUUID(md.table_uuid), AssertRefSnapshotId("main", None)],
        [AddSnapshot(snapshot), SetSnapshotRef("main", SnapshotRef(snapshot_id))],
    )
    return cat.load_table(name)
