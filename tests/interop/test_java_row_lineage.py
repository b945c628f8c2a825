"""v3 row lineage against Iceberg-Java 1.10.2: after neve's copy-on-write delete and
overwrite, Iceberg-Java reads the ``_row_id`` and ``_last_updated_sequence_number`` neve
reads; after Iceberg-Java's own copy-on-write delete, neve reads the values Iceberg-Java
reads."""

from __future__ import annotations

import pyarrow as pa
import pytest

from javaengine import IcebergJava
from neve.catalog import SqlCatalog

pytestmark = pytest.mark.java

Lineage = dict[int, tuple[int | None, int | None]]


def rows(start: int, n: int) -> pa.Table:
    ids = range(start, start + n)
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "grp": pa.array([i % 3 for i in ids], pa.int32())}
    )


def neve_lineage(catalog: SqlCatalog, ns: str) -> Lineage:
    t = catalog.load_table((ns, "t"))
    out = t.scan(columns=["id", "_row_id", "_last_updated_sequence_number"]).to_arrow()
    ids, rids, seqs = (out.column(i).to_pylist() for i in range(3))
    return dict(zip(ids, zip(rids, seqs, strict=True), strict=True))


def java_lineage(java: IcebergJava, ns: str) -> Lineage:
    found = java.sql(f"SELECT id, _row_id, _last_updated_sequence_number FROM neve.{ns}.t").rows
    return {r[0]: (r[1], r[2]) for r in found}


def test_java_reads_the_lineage_neve_keeps(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    t = java_catalog.create_table(
        (java_ns, "t"),
        rows(0, 1).schema,
        partition_by=["grp"],
        properties={"write.parquet.row-group-size-bytes": "1024", "read.split.target-size": "1"},
        format_version=3,
    )
    t.append(rows(0, 400))
    t.append(rows(400, 50))
    before = java_lineage(iceberg_java, java_ns)
    assert before == neve_lineage(java_catalog, java_ns)
    t.refresh().delete("id < 10 or (id > 200 and id < 215)")
    t.refresh().overwrite(rows(9000, 4), filter="id >= 440")
    ours = neve_lineage(java_catalog, java_ns)
    assert len(ours) == 450 - 10 - 14 - 10 + 4
    theirs = java_lineage(iceberg_java, java_ns)
    assert theirs == ours
    # the rows neve copied kept the ids and sequence numbers Java saw before
    assert {k: theirs[k] for k in before if k in theirs} == {
        k: v for k, v in before.items() if k in theirs
    }


def test_neve_reads_the_lineage_java_keeps(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    name = f"neve.{java_ns}.t"
    iceberg_java.sql(
        f"CREATE TABLE {name} (id BIGINT, grp INT) USING iceberg PARTITIONED BY (grp) "
        "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='copy-on-write', "
        "'write.update.mode'='copy-on-write')"
    )
    values = ", ".join(f"({i}, {i % 3})" for i in range(60))
    iceberg_java.sql(f"INSERT INTO {name} VALUES {values}")
    iceberg_java.sql(f"INSERT INTO {name} VALUES (100, 1), (101, 2)")
    before = java_lineage(iceberg_java, java_ns)
    iceberg_java.sql(f"DELETE FROM {name} WHERE id < 5 OR id = 30")
    theirs = java_lineage(iceberg_java, java_ns)
    assert len(theirs) == 62 - 6
    assert theirs == {k: v for k, v in before.items() if k in theirs}  # stored by Java
    assert neve_lineage(java_catalog, java_ns) == theirs
