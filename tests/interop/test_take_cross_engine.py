"""Random access and page skipping on files other writers made (issue 26): Parquet
written by arrow-rs (through arro3-io), by neve's Spark writer (parquet-java) and by
Iceberg-Java 1.10.2. Each carries a page index of its own making (parquet-java
truncates string bounds in the column index to 64 bytes); ``take``, ``take_rows`` and
filtered scans return what a full scan holds."""

from __future__ import annotations

import math
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from arro3.io import write_parquet

from javaengine import IcebergJava
from neve.arrow.pages import describe_pages
from neve.arrow.schema import to_arrow_schema
from neve.catalog import SqlCatalog
from neve.io.fileio import FileIO
from neve.table.table import Table

LONG = "é" * 40  # 80 bytes: beyond parquet-java's 64-byte column index bounds


def _rows(n: int) -> pa.Table:
    ids = list(range(n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "x": pa.array(
                [math.nan if i % 17 == 0 else (-0.0 if i % 19 == 0 else i / 4) for i in ids],
                pa.float64(),
            ),
            "s": pa.array([None if i % 13 == 0 else f"{LONG}{i:06d}" for i in ids], pa.string()),
        }
    )


def _canon(v: Any) -> Any:
    if isinstance(v, float):
        return ("nan",) if math.isnan(v) else (v, math.copysign(1.0, v))
    return v


def _check(t: Table, filters: list[tuple[str, Any]]) -> None:
    """take, take_rows and filtered scans against the full scan."""
    full = t.scan(columns=["id", "x", "s", "_row_id"]).to_arrow()
    rows = [{k: _canon(v) for k, v in r.items()} for r in full.to_pylist()]
    by_row_id = {r["_row_id"]: r for r in rows}
    asked = sorted(by_row_id)[:: max(1, len(by_row_id) // 37)][::-1]
    got = t.take(asked, columns=["id", "x", "s", "_row_id"]).to_pylist()
    assert [{k: _canon(v) for k, v in r.items()} for r in got] == [by_row_id[i] for i in asked]
    places = list(range(0, len(rows), max(1, len(rows) // 29)))
    taken = t.take_rows(places, columns=["id", "x", "s", "_row_id"]).to_pylist()
    assert [{k: _canon(v) for k, v in r.items()} for r in taken] == [rows[p] for p in places]
    assert t.live_row_count() == len(rows)
    for where, match in filters:
        ids = sorted(t.scan(filter=where, columns=["id"]).to_arrow().column("id").to_pylist())
        assert ids == sorted(r["id"] for r in rows if match(r)), where


FILTERS: list[tuple[str, Any]] = [
    ("id >= 500 and id < 520", lambda r: 500 <= r["id"] < 520),
    ("x < 3", lambda r: r["x"] != ("nan",) and r["x"][0] < 3),
    ("x = 0", lambda r: r["x"] not in (("nan",),) and r["x"][0] == 0),
    (f"s = '{LONG}000777'", lambda r: r["s"] == f"{LONG}000777"),
    (f"s >= '{LONG}001990'", lambda r: r["s"] is not None and r["s"] >= f"{LONG}001990"),
    ("s is null", lambda r: r["s"] is None),
]


def test_files_written_by_arrow_rs(tmp_path: Path) -> None:
    catalog = SqlCatalog("neve", f"sqlite:///{tmp_path}/c.db", str(tmp_path / "wh"))
    catalog.create_namespace("db")
    data = _rows(2000)
    t = catalog.create_table("db.rs", data.schema, format_version=3)
    # arrow-rs writes the page index and keeps the field ids of the Arrow schema
    body = data.cast(to_arrow_schema(t.schema()))
    path = str(tmp_path / "wh" / f"{uuid.uuid4()}.parquet")
    write_parquet(body, path, data_page_row_count_limit=64, max_row_group_size=700)
    # neve describes it as it describes the files Spark writes
    from neve.spark.job import describe_parquet_file  # the Spark room's file describer

    described = describe_parquet_file(FileIO(), path, t.schema(), {}, (), 0, None)
    with t.transaction() as tx:
        tx.add_files([described])
    pages = describe_pages(FileIO(), path)
    assert all(p["offset_index"] and p["column_index"] for p in pages)
    assert max(p["pages"] for p in pages) > 5  # type: ignore[type-var]
    _check(t.refresh(), FILTERS)


@pytest.mark.spark
def test_files_written_by_neves_spark_writer(tmp_path: Path, spark: Any) -> None:
    from neve.spark import write  # Spark is only for this test

    catalog = SqlCatalog("neve", f"sqlite:///{tmp_path}/c.db", str(tmp_path / "wh"))
    catalog.create_namespace("db")
    data = _rows(3000)
    t = catalog.create_table(
        "db.sp",
        data.schema,
        format_version=3,
        properties={
            "write.parquet.layout": "random-access",
            "write.parquet.bloom-filter-enabled.column.id": "true",
        },
    )
    df = spark.createDataFrame(data.to_pylist(), "id long, x double, s string")
    write(df.repartition(2), t)
    t = t.refresh()
    for task in t.scan().plan_files():
        pages = describe_pages(FileIO(), task.file.file_path)
        assert all(p["offset_index"] for p in pages)
        assert not any(p["dictionary"] for p in pages)
        assert all(p["page_bytes_max"] <= 64 * 1024 for p in pages)  # type: ignore[operator]
    _check(t, FILTERS)


@pytest.mark.java
def test_files_written_by_iceberg_java(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    name = f"neve.{java_ns}.t"
    iceberg_java.sql(
        f"CREATE TABLE {name} (id BIGINT, x DOUBLE, s STRING) USING iceberg "
        "TBLPROPERTIES ('format-version'='3', 'write.parquet.page-row-limit'='50', "
        "'write.delete.mode'='merge-on-read', 'write.update.mode'='copy-on-write')"
    )
    data = _rows(1500).to_pylist()
    for lo in (0, 700):

        def sql(v: Any) -> str:
            if v is None:
                return "NULL"
            if isinstance(v, float):
                return (
                    "double('NaN')" if math.isnan(v) else ("-0.0D" if str(v) == "-0.0" else repr(v))
                )
            return repr(v) if isinstance(v, str) else str(v)

        values = ", ".join(
            "(" + ", ".join(sql(r[k]) for k in ("id", "x", "s")) + ")" for r in data[lo : lo + 800]
        )
        iceberg_java.sql(f"INSERT INTO {name} VALUES {values}")
    iceberg_java.sql(f"DELETE FROM {name} WHERE id IN (3, 701, 702)")
    iceberg_java.sql(f"UPDATE {name} SET x = 1.5 WHERE id BETWEEN 100 AND 110")
    t = java_catalog.load_table((java_ns, "t"))
    _check(t, FILTERS)


@pytest.mark.java
def test_files_in_parquet_javas_default_layout(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    """Iceberg-Java's defaults (parquet-java: dictionaries, zstd; pages of 2,000 rows
    here, so that a chunk has several): pages of thousands of rows, cut short by takes,
    and zstd dictionary pages, kept across takes; a deletion vector; takes of single
    rows and the checks against the full scan, three times."""
    from neve.arrow.page_dictionaries import dictionary_cache  # what takes keep

    name = f"neve.{java_ns}.d"
    iceberg_java.sql(
        f"CREATE TABLE {name} (id BIGINT, x DOUBLE, s STRING) USING iceberg "
        "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read', "
        "'write.parquet.page-row-limit'='2000')"
    )
    for lo in (0, 6000):  # few distinct values: parquet-java keeps its dictionaries
        values = ", ".join(
            f"({i}, {i % 40 / 4}D, " + ("NULL" if i % 13 == 0 else f"'{LONG}{i % 300}'") + ")"
            for i in range(lo, lo + 6000)
        )
        iceberg_java.sql(f"INSERT INTO {name} VALUES {values}")
    iceberg_java.sql(f"DELETE FROM {name} WHERE id IN (5, 1999, 6500)")
    t = java_catalog.load_table((java_ns, "d"))
    paths = [task.file.file_path for task in t.scan().plan_files()]
    for path in paths:
        pages = describe_pages(FileIO(), path)
        strings = next(p for p in pages if p["column"] == "s")
        assert strings["dictionary"] and strings["offset_index"]
        assert strings["pages"] > 1  # type: ignore[operator]
    full = t.scan(columns=["id", "x", "s", "_row_id"]).to_arrow().to_pylist()
    by_row_id = {r["_row_id"]: r for r in full}
    dictionary_cache.clear()
    for _ in range(3):  # the third time with the dictionary pages kept
        for row_id in sorted(by_row_id)[1000::2500]:  # one row a page: read by pages
            got = t.take([row_id], columns=["id", "x", "s", "_row_id"]).to_pylist()
            assert got == [by_row_id[row_id]]
        _check(t, [("id >= 500 and id < 520", lambda r: 500 <= r["id"] < 520)])
    assert dictionary_cache.size > 0
