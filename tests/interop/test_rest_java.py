"""Iceberg-Java 1.10.2 on Spark 3.5 with ``type=rest`` against ``neve serve`` (client
id and secret): CREATE, INSERT, MERGE INTO, DELETE, ALTER, views, time travel and the
``snapshots`` and ``files`` metadata tables, each checked against neve's REST client
on the same server. A namespace property and a column doc outside Latin-1 survive the
Java client's round trip (the relocated HttpClient's UTF-8 fix, tests/javaengine)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import neve
from javaengine import IcebergJava, JavaEngineError, RestCatalogConf
from restserver import NeveServer

pytestmark = pytest.mark.java

NOTE = "日本語のメモ 🚀 ñ"
DOC = "列の説明 ✓ 🦆"


@pytest.fixture(scope="module")
def java(secured: NeveServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IcebergJava]:
    try:
        engine = IcebergJava.start(
            tmp_path_factory.mktemp("java-rest"),
            [RestCatalogConf("rest", secured.url, credential="admin:admin-secret")],
        )
    except JavaEngineError as exc:
        pytest.fail(f"the Iceberg-Java test engine did not start: {exc}", pytrace=False)
    yield engine
    engine.close()


def _neve(server: NeveServer) -> neve.Catalog:
    return neve.connect(server.url, credential="admin:admin-secret")


def _rows(table: neve.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist())


def test_spark_with_iceberg_java_through_neve_serve(java: IcebergJava, secured: NeveServer) -> None:
    nv = _neve(secured)
    java.sql(f"CREATE NAMESPACE rest.jx WITH DBPROPERTIES ('note' = '{NOTE}')")
    assert nv.namespace_properties("jx")["note"] == NOTE
    java.sql(
        f"CREATE TABLE rest.jx.t (id bigint COMMENT '{DOC}', s string, amount double) "
        "USING iceberg PARTITIONED BY (bucket(4, id)) TBLPROPERTIES ('format-version' = '2')"
    )
    t = nv.load_table("jx.t")
    assert t.schema().find_field("id").doc == DOC
    assert str(t.spec().fields[0].transform) == "bucket[4]"
    java.sql("INSERT INTO rest.jx.t VALUES (1, 'a', 1.5), (2, 'b', 2.5), (3, 'c', 3.5)")
    first = nv.load_table("jx.t").metadata.current_snapshot_id
    java.sql(
        "MERGE INTO rest.jx.t t USING (SELECT 2L AS id, 'B' AS s, 20.0D AS amount UNION ALL "
        "SELECT 4L, 'd', 4.5D) src ON t.id = src.id "
        "WHEN MATCHED THEN UPDATE SET t.s = src.s, t.amount = src.amount "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    java.sql("DELETE FROM rest.jx.t WHERE id = 1")
    expected = [(2, "B", 20.0), (3, "c", 3.5), (4, "d", 4.5)]
    assert _rows(nv.load_table("jx.t")) == expected
    java.sql("ALTER TABLE rest.jx.t ADD COLUMN note string")
    java.sql("ALTER TABLE rest.jx.t RENAME COLUMN amount TO total")
    t = nv.load_table("jx.t")
    assert t.schema().column_names == ["id", "s", "total", "note"]
    # neve appends through the same server; Java reads neve's rows
    t.append(
        pa.table(
            {"id": [5], "s": ["e"], "total": [5.5], "note": [NOTE]},
            schema=t.scan().arrow_schema(),
        )
    )
    got = java.sql("SELECT id, s, total, note FROM rest.jx.t ORDER BY id").rows
    assert got == [
        (2, "B", 20.0, None),
        (3, "c", 3.5, None),
        (4, "d", 4.5, None),
        (5, "e", 5.5, NOTE),
    ]
    # time travel to the first INSERT
    old = java.sql(f"SELECT id, s FROM rest.jx.t VERSION AS OF {first} ORDER BY id").rows
    assert old == [(1, "a"), (2, "b"), (3, "c")]
    # metadata tables agree with neve's view of the table
    t = nv.load_table("jx.t")
    snaps = java.sql("SELECT snapshot_id FROM rest.jx.t.snapshots").rows
    assert sorted(s for (s,) in snaps) == sorted(s.snapshot_id for s in t.snapshots())
    files = java.sql("SELECT file_path FROM rest.jx.t.files WHERE content = 0").rows
    assert {f for (f,) in files} == {task.file.file_path for task in t.scan().plan_files()}
    # CREATE TABLE AS SELECT: a staged create, committed with assert-create
    java.sql("CREATE TABLE rest.jx.ctas USING iceberg AS SELECT id, s FROM rest.jx.t WHERE id > 2")
    assert _rows(nv.load_table("jx.ctas")) == [(3, "c"), (4, "d"), (5, "e")]


def test_views_through_neve_serve(java: IcebergJava, secured: NeveServer) -> None:
    nv = _neve(secured)
    nv.create_namespace_if_not_exists("jv")
    t = nv.create_table("jv.t", pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())]))
    t.append(pa.table({"id": [1, 2, 3], "s": ["x", "y", "z"]}, schema=t.scan().arrow_schema()))
    java.sql("CREATE VIEW rest.jv.big AS SELECT id, s FROM rest.jv.t WHERE id >= 2")
    view = nv.load_view("jv.big")
    assert "id >= 2" in view.sql("spark")
    assert view.schema().column_names == ["id", "s"]
    assert java.sql("SELECT * FROM rest.jv.big ORDER BY id").rows == [(2, "y"), (3, "z")]
    java.sql("CREATE OR REPLACE VIEW rest.jv.big AS SELECT id FROM rest.jv.t WHERE id = 3")
    assert nv.load_view("jv.big").metadata.current_version_id == 2
    assert java.sql("SELECT * FROM rest.jv.big").rows == [(3,)]
    # a view neve creates is one Spark reads
    nv.create_view(
        "jv.small",
        pa.schema([pa.field("id", pa.int64())]),
        "SELECT id FROM rest.jv.t WHERE id < 2",
    )
    assert java.sql("SELECT * FROM rest.jv.small").rows == [(1,)]
    assert sorted(r[1] for r in java.sql("SHOW VIEWS IN rest.jv").rows) == ["big", "small"]
    java.sql("DROP VIEW rest.jv.small")
    assert nv.list_views("jv") == [("jv", "big")]


def test_repo_has_the_java_sources() -> None:
    """The two classes build.py compiles are ours (tests/javaengine/java)."""
    base = Path(__file__).resolve().parents[1] / "javaengine" / "java" / "org" / "apache" / "hc"
    assert (base / "core5" / "http" / "io" / "entity" / "StringEntity.java").is_file()
    assert (base / "client5" / "http" / "ssl" / "TlsSocketStrategy.java").is_file()
