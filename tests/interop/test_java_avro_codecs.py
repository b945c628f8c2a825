"""``write.avro.compression-codec`` (gzip, zstd, snappy, uncompressed) on manifests and
manifest lists, against Iceberg-Java 1.10.2.

neve compresses the manifests and manifest lists of a commit with the codec the table's
properties name, as Iceberg-Java does from 1.11 on (apache/iceberg#15652). Iceberg-Java
1.10.2 writes them with deflate whatever the property says (apache/iceberg#14231): the
first test pins that, so that the difference stays documented and is noticed should a
newer Java be used. Java 1.10.2 reads every codec: the second test has neve change the
codec between commits, so that one scan reads manifests of all four codecs under a
manifest list of the last, and Java and neve read the same rows. Each commit adds 20
files to one manifest, more than neve's columnar manifest reader needs to take a
manifest (it reads deflate, snappy and null; fastavro decodes zstandard).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from javaengine import IcebergJava
from manifest_codecs import CODECS, manifest_codecs
from neve.catalog import SqlCatalog

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("part", pa.int32())])
DELETED = (3, 41, 77, 150)


def commit_rows(k: int) -> list[dict[str, int]]:
    """The rows of commit ``k``: two per partition, 20 files."""
    return [{"id": 40 * k + i, "part": i % 20} for i in range(40)]


def avro_codecs(catalog: SqlCatalog, ns: str, name: str) -> dict[str, str]:
    return manifest_codecs(catalog.load_table((ns, name)))


def test_java_1_10_writes_deflate_whatever_the_property(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    table = f"neve.{java_ns}.t"
    iceberg_java.sql(
        f"CREATE TABLE {table} (id bigint NOT NULL, part int) USING iceberg PARTITIONED BY "
        "(part) TBLPROPERTIES ('write.delete.mode'='merge-on-read')"
    )
    rows: list[dict[str, int]] = []
    for k, codec in enumerate(CODECS):
        iceberg_java.sql(
            f"ALTER TABLE {table} SET TBLPROPERTIES ('write.avro.compression-codec'='{codec}')"
        )
        rows += commit_rows(k)
        values = ", ".join(f"({r['id']}, {r['part']})" for r in commit_rows(k))
        iceberg_java.sql(f"INSERT INTO {table} VALUES {values}")
    iceberg_java.sql(f"DELETE FROM {table} WHERE id IN {DELETED}")
    assert set(avro_codecs(java_catalog, java_ns, "t").values()) == {"deflate"}
    t = java_catalog.load_table((java_ns, "t"))
    assert any(task.delete_files for task in t.scan().plan_files())
    expected = sorted(r["id"] for r in rows if r["id"] not in DELETED)
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == expected


def test_java_reads_neve_manifests_of_every_codec(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    t = java_catalog.create_table(
        (java_ns, "t"),
        SCHEMA,
        partition_by=["part"],
        properties={"write.delete.mode": "merge-on-read"},
    )
    rows: list[dict[str, int]] = []
    seen = set(avro_codecs(java_catalog, java_ns, "t"))
    for k, (codec, avro) in enumerate(CODECS.items()):
        t.set_properties({"write.avro.compression-codec": codec})
        rows += commit_rows(k)
        t.append(pa.Table.from_pylist(commit_rows(k), schema=SCHEMA))
        t = t.refresh()
        written = avro_codecs(java_catalog, java_ns, "t")
        assert {written[name] for name in set(written) - seen} == {avro}, codec
        seen = set(written)
    t.delete(f"id in {DELETED}")  # a delete manifest and a list in the last codec
    written = avro_codecs(java_catalog, java_ns, "t")
    assert {written[name] for name in set(written) - seen} == {"null"}
    assert any(task.delete_files for task in t.refresh().scan().plan_files())
    expected = sorted(r["id"] for r in rows if r["id"] not in DELETED)
    table = f"neve.{java_ns}.t"
    java_ids = sorted(r[0] for r in iceberg_java.sql(f"SELECT id FROM {table}").rows)
    assert java_ids == expected
    assert sorted(t.refresh().scan().to_arrow().column("id").to_pylist()) == expected
    part = sorted(r[0] for r in iceberg_java.sql(f"SELECT id FROM {table} WHERE part = 1").rows)
    assert part == [r["id"] for r in rows if r["part"] == 1 and r["id"] not in DELETED]
    ours = t.refresh().scan(filter="part = 1").to_arrow().column("id").to_pylist()
    assert sorted(ours) == part
