"""v3 row lineage through copy-on-write, as Iceberg-Java 1.10.2 does it.

What Java does (pinned by the first test): a copy-on-write ``DELETE FROM`` on a v3
table rewrites the affected data file with two extra Parquet columns, ``_row_id``
(field id 2147483540) and ``_last_updated_sequence_number`` (2147483539), both optional
int64, holding each surviving row's values from before: its ``_row_id`` (the old file's
``first_row_id`` + position) and its old sequence number, written out explicitly. The
new file still gets a ``first_row_id`` of its own (the table's ``next-row-id``), which the
explicit values override. ``SELECT _row_id, _last_updated_sequence_number`` returns the
same values before and after the delete for every surviving row. A copy-on-write
``UPDATE`` keeps the changed row's ``_row_id`` but writes a null
``_last_updated_sequence_number``, so the row reads as changed by the update's snapshot.

neve must read the same values on Java's table, and keep them the same way when it
rewrites a Java-written table.
"""

from __future__ import annotations

from typing import Any

import pyarrow.parquet as pq
import pytest

from javaengine import IcebergJava
from neve.catalog import SqlCatalog

pytestmark = pytest.mark.java

ROW_ID, LAST_UPDATED = 2147483540, 2147483539
Lineage = dict[int, tuple[Any, Any]]


def java_lineage(java: IcebergJava, table: str) -> Lineage:
    rows = java.sql(f"SELECT id, _row_id, _last_updated_sequence_number FROM {table}").rows
    return {r[0]: (r[1], r[2]) for r in rows}


def neve_lineage(catalog: SqlCatalog, ns: str) -> Lineage:
    t = catalog.load_table((ns, "t"))
    out = t.scan(columns=["id", "_row_id", "_last_updated_sequence_number"]).to_arrow()
    return {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in out.to_pylist()}


def data_files(java: IcebergJava, table: str) -> set[str]:
    return {r[0] for r in java.sql(f"SELECT file_path FROM {table}.files").rows}


def lineage_columns(path: str) -> dict[int, list[Any]]:
    """The reserved lineage columns of one Parquet file, by field id."""
    f = pq.ParquetFile(path)
    table = f.read()
    out = {}
    for i, field in enumerate(f.schema_arrow):
        fid = int((field.metadata or {}).get(b"PARQUET:field_id", b"0"))
        if fid in (ROW_ID, LAST_UPDATED):
            assert field.type == "int64" and field.nullable, field
            out[fid] = table.column(i).to_pylist()
    return out


def make_java_table(java: IcebergJava, table: str) -> None:
    java.sql(
        f"CREATE TABLE {table} (id int, v string) USING iceberg TBLPROPERTIES "
        "('format-version'='3', 'write.delete.mode'='copy-on-write', "
        "'write.update.mode'='copy-on-write')"
    )
    java.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")
    java.sql(f"INSERT INTO {table} VALUES (5, 'e'), (6, 'f')")


def test_java_keeps_lineage_and_neve_reads_it(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    table = f"neve.{java_ns}.t"
    make_java_table(iceberg_java, table)
    before = java_lineage(iceberg_java, table)
    assert sorted(before.values()) == [(0, 1), (1, 1), (2, 1), (3, 1), (4, 2), (5, 2)]
    files_before = data_files(iceberg_java, table)

    iceberg_java.sql(f"DELETE FROM {table} WHERE id = 2")
    after = java_lineage(iceberg_java, table)
    assert after == {k: v for k, v in before.items() if k != 2}
    added = data_files(iceberg_java, table) - files_before
    assert added
    for path in added:
        columns = lineage_columns(path)
        assert set(columns) == {ROW_ID, LAST_UPDATED}  # written explicitly, never null
        ids = pq.read_table(path, columns=["id"]).column("id").to_pylist()
        assert list(zip(columns[ROW_ID], columns[LAST_UPDATED], strict=True)) == [
            after[i] for i in ids
        ]
    first_ids = iceberg_java.sql(
        f"SELECT file_path, first_row_id FROM {table}.files WHERE first_row_id IS NOT NULL"
    ).rows
    assert {p for p, _ in first_ids} >= added  # the new file has a first_row_id too
    assert neve_lineage(java_catalog, java_ns) == after

    iceberg_java.sql(f"UPDATE {table} SET v = 'x' WHERE id = 5")
    updated = java_lineage(iceberg_java, table)
    last_seq = iceberg_java.sql(
        f"SELECT max(sequence_number) FROM {table}.entries WHERE status = 1"
    ).scalar()
    assert updated[5] == (before[5][0], last_seq)  # same row id, the update's sequence
    assert {k: v for k, v in updated.items() if k != 5} == {
        k: v for k, v in after.items() if k != 5
    }
    assert neve_lineage(java_catalog, java_ns) == updated


def test_neve_copy_on_write_keeps_javas_lineage(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    table = f"neve.{java_ns}.t"
    make_java_table(iceberg_java, table)
    before = java_lineage(iceberg_java, table)
    files_before = data_files(iceberg_java, table)

    java_catalog.load_table((java_ns, "t")).delete("id = 2 or id = 6")
    expected = {k: v for k, v in before.items() if k not in (2, 6)}
    assert java_lineage(iceberg_java, table) == expected
    assert neve_lineage(java_catalog, java_ns) == expected
    added = data_files(iceberg_java, table) - files_before
    assert added
    for path in added:  # neve writes the lineage columns out, as Java does
        columns = lineage_columns(path)
        ids = pq.read_table(path, columns=["id"]).column("id").to_pylist()
        assert set(columns) == {ROW_ID, LAST_UPDATED}
        assert list(zip(columns[ROW_ID], columns[LAST_UPDATED], strict=True)) == [
            expected[i] for i in ids
        ]
