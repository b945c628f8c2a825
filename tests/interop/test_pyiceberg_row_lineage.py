"""v3 row lineage as pyiceberg 0.12 sees neve's tables.

What pyiceberg 0.12 can do: it has no ``_row_id`` / ``_last_updated_sequence_number``
metadata columns (its scans return the table's columns only), and its manifest and
manifest-list readers decode with the v2 read schema, so they drop ``first_row_id``.
Its Avro layer with its own v3 schemas does decode the metadata lineage is built
from: each manifest's ``first_row_id`` and sequence number, and the entries' status,
record counts and stored ``first_row_id``. From those, following the spec's
inheritance rules, and from the lineage columns stored in the data files (read by
field id), this test derives every row's ``_row_id`` and sequence number apart from
neve's decoder and reader, and compares them with what neve returns after
copy-on-write deletes and an overwrite rewrote files. pyiceberg's own scan must read
the rewritten files (which carry the two extra columns) as plain rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.avro.file import AvroFile
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import (
    DATA_FILE_TYPE,
    MANIFEST_ENTRY_SCHEMAS,
    MANIFEST_LIST_FILE_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
)

import neve
from neve.arrow.schema import field_id

ROW_ID_FIELD = 2147483540
SEQ_FIELD = 2147483539
# positions of first_row_id in pyiceberg's v3 manifest-list and data_file structs
LIST_FIRST_ROW_ID = [f.name for f in MANIFEST_LIST_FILE_SCHEMAS[3].fields].index("first_row_id")
DATA_FILE_FIRST_ROW_ID = [f.name for f in DATA_FILE_TYPE[3].fields].index("first_row_id")

Lineage = dict[int, tuple[int | None, int | None]]


def rows(start: int, n: int) -> pa.Table:
    ids = range(start, start + n)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "grp": pa.array([i % 3 for i in ids], pa.int32()),
            "payload": pa.array([f"p{i}" for i in ids]),
        }
    )


def neve_lineage(t: neve.Table) -> Lineage:
    out = t.scan(columns=["id", "_row_id", "_last_updated_sequence_number"]).to_arrow()
    ids, rids, seqs = (out.column(i).to_pylist() for i in range(3))
    return dict(zip(ids, zip(rids, seqs, strict=True), strict=True))


def manifest_list_v3(table: object, path: str) -> list[ManifestFile]:
    io = table.io  # type: ignore[attr-defined]
    with AvroFile[ManifestFile](
        io.new_input(path),
        MANIFEST_LIST_FILE_SCHEMAS[3],
        read_types={-1: ManifestFile, 508: PartitionFieldSummary},
        read_enums={517: ManifestContent},
    ) as reader:
        return list(reader)


def manifest_entries_v3(table: object, path: str) -> list[ManifestEntry]:
    io = table.io  # type: ignore[attr-defined]
    with AvroFile[ManifestEntry](
        io.new_input(path),
        MANIFEST_ENTRY_SCHEMAS[3],
        read_types={-1: ManifestEntry, 2: DataFile},
        read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent},
    ) as reader:
        return list(reader)


def pyiceberg_lineage(catalog: SqlCatalog, name: str) -> Lineage:
    """Lineage derived from pyiceberg's decoding of the table's metadata (spec "First
    Row ID Inheritance", "Row lineage assignment") and the data files' stored columns."""
    table = catalog.load_table(name)
    snapshot = table.current_snapshot()
    assert snapshot is not None
    found: Lineage = {}
    for manifest in manifest_list_v3(table, snapshot.manifest_list):
        if manifest.content != ManifestContent.DATA:
            continue
        next_id = manifest[LIST_FIRST_ROW_ID]
        assert next_id is not None  # every data manifest of a v3 snapshot has one
        for entry in manifest_entries_v3(table, manifest.manifest_path):
            if entry.status == ManifestEntryStatus.DELETED:
                continue
            f = entry.data_file
            first = f[DATA_FILE_FIRST_ROW_ID]
            if first is None:
                first, next_id = next_id, next_id + f.record_count
            data_seq = entry.sequence_number
            if data_seq is None:  # inherited by ADDED entries
                data_seq = manifest.sequence_number
            data = pq.read_table(f.file_path)
            by_id = {field_id(c): c.name for c in data.schema}
            n = data.num_rows
            none: list[int | None] = [None] * n
            ids = data.column(by_id[ROW_ID_FIELD]).to_pylist() if ROW_ID_FIELD in by_id else none
            seqs = data.column(by_id[SEQ_FIELD]).to_pylist() if SEQ_FIELD in by_id else none
            for pos, key in enumerate(data.column("id").to_pylist()):
                assert key not in found
                found[key] = (
                    ids[pos] if ids[pos] is not None else first + pos,
                    seqs[pos] if seqs[pos] is not None else data_seq,
                )
    return found


def test_pyiceberg_metadata_gives_the_lineage_neve_reads(tmp_path: Path) -> None:
    db, wh = tmp_path / "cat.db", tmp_path / "wh"
    cat = neve.connect(f"sqlite:///{db}", warehouse=str(wh))
    cat.create_namespace("db")
    t = cat.create_table(
        "db.t",
        rows(0, 1).schema,
        partition_by=["grp"],
        properties={
            "write.parquet.row-group-size-bytes": "2048",
            "read.split.target-size": "1",
            "write.delete.mode": "copy-on-write",
        },
        format_version=3,
    )
    t.append(rows(0, 600))
    t.append(rows(600, 90))
    original = neve_lineage(t.refresh())
    t.delete("id < 20 or (id > 300 and id < 320)")
    t.overwrite(rows(5000, 12), filter="id >= 650")
    t = t.refresh()
    ours = neve_lineage(t)
    survivors = {k for k in original if not (k < 20 or 300 < k < 320 or k >= 650)}
    assert {k: ours[k] for k in survivors} == {k: original[k] for k in survivors}

    pcat = SqlCatalog("neve", uri=f"sqlite:///{db}", warehouse=f"file://{wh}")
    assert pyiceberg_lineage(pcat, "db.t") == ours
    # pyiceberg reads the rewritten files (with their lineage columns) as plain rows
    theirs = pcat.load_table("db.t").scan().to_arrow()
    assert theirs.column_names == ["id", "grp", "payload"]
    assert sorted(theirs.column("id").to_pylist()) == sorted(ours)
