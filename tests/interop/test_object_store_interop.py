"""Other engines on the same S3-protocol server: pyiceberg 0.12 (its pyarrow FileIO
pointed at the server) reads what neve wrote on s3 through both catalog kinds, neve
reads what pyiceberg wrote there, and DuckDB 1.5 reads neve's s3 table by metadata
location (and by folder, through the version hint)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog
from pyiceberg.table import StaticTable

import neve
from duckdbengine import duckdb_query
from s3server import ACCESS_KEY, REGION, SECRET_KEY, S3Warehouse

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
        {
            "id": ids,
            "v": [None if i % 7 == 0 else i * 0.25 for i in ids],
            "s": [None if i % 5 == 0 else "é" * (i % 4) + f"s{i}" for i in ids],
        },
        schema=SCHEMA,
    )


def _sorted(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["v"], r["s"]) for r in rows)


def _pyiceberg_props(wh: S3Warehouse) -> dict[str, str]:
    return {**wh.properties, "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"}


def _fill(table: neve.Table) -> None:
    table.append(_rows(0, 300))
    table.append(_rows(300, 500))
    table.delete("id >= 100 and id < 150")  # v2: a position delete file
    table.update({"s": "changed"}, "id < 20")


def test_pyiceberg_reads_neve_on_s3(s3_warehouse: S3Warehouse, tmp_path: Path) -> None:
    # the filesystem catalog on s3: pyiceberg reads the metadata file
    fs_cat = neve.connect(s3_warehouse.uri, **s3_warehouse.properties)
    fs_cat.create_namespace("db")
    t = fs_cat.create_table("db.t", SCHEMA, format_version=2)
    _fill(t)
    t = fs_cat.load_table("db.t")
    expected = _sorted(t.scan().to_arrow().to_pylist())
    assert len(expected) == 450
    static = StaticTable.from_metadata(
        t.metadata_location, properties=_pyiceberg_props(s3_warehouse)
    )
    assert _sorted(static.scan().to_arrow().to_pylist()) == expected

    # the SQL catalog with an s3 warehouse: pyiceberg opens the same database
    db = f"sqlite:///{tmp_path}/shared.db"
    sql = neve.connect(db, warehouse=f"s3://{s3_warehouse.bucket}/sqlwh", **s3_warehouse.properties)
    sql.create_namespace("db")
    u = sql.create_table("db.u", SCHEMA, format_version=2)
    _fill(u)
    theirs = PySqlCatalog(
        "neve",
        uri=db,
        warehouse=f"s3://{s3_warehouse.bucket}/sqlwh",
        **_pyiceberg_props(s3_warehouse),
    )
    assert _sorted(theirs.load_table("db.u").scan().to_arrow().to_pylist()) == expected


def test_neve_reads_pyiceberg_on_s3(s3_warehouse: S3Warehouse, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/py.db"
    warehouse = f"s3://{s3_warehouse.bucket}/pywh"
    theirs = PySqlCatalog("py", uri=db, warehouse=warehouse, **_pyiceberg_props(s3_warehouse))
    theirs.create_namespace("db")
    pt = theirs.create_table("db.t", schema=SCHEMA)
    pt.append(_rows(0, 200))
    pt.append(_rows(200, 260))
    pt.delete("id < 30")
    pt = theirs.load_table("db.t")
    expected = _sorted(pt.scan().to_arrow().to_pylist())
    assert len(expected) == 230

    mine = neve.connect(db, warehouse=warehouse, name="py", **s3_warehouse.properties)
    assert _sorted(mine.load_table("db.t").scan().to_arrow().to_pylist()) == expected
    # registered in the filesystem catalog on s3, then changed by neve
    fs_cat = neve.connect(s3_warehouse.uri, **s3_warehouse.properties)
    fs_cat.create_namespace("db")
    reg = fs_cat.register_table("db.copy", pt.metadata_location)
    assert _sorted(reg.scan().to_arrow().to_pylist()) == expected
    reg.append(_rows(1000, 1010))
    assert len(fs_cat.load_table("db.copy").scan().to_arrow()) == 240


def _duckdb_secret(wh: S3Warehouse) -> list[str]:
    host = wh.server.endpoint.removeprefix("http://")
    return [
        "SET TimeZone = 'UTC'",
        f"CREATE SECRET s3test (TYPE S3, KEY_ID '{ACCESS_KEY}', SECRET '{SECRET_KEY}', "
        f"REGION '{REGION}', ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false)",
    ]


@pytest.mark.parametrize("version", [2, 3])
def test_duckdb_reads_neve_on_s3(s3_warehouse: S3Warehouse, version: int) -> None:
    cat = neve.connect(s3_warehouse.uri, **s3_warehouse.properties)
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, format_version=version)
    _fill(t)
    t = cat.load_table("db.t")
    expected = _sorted(t.scan().to_arrow().to_pylist())
    rows = duckdb_query(
        f"SELECT id, v, s FROM iceberg_scan('{t.metadata_location}')",
        setup=_duckdb_secret(s3_warehouse),
    )
    assert _sorted(rows) == expected
    # by folder: DuckDB follows the version hint the catalog keeps
    rows = duckdb_query(
        f"SELECT count(*) AS n FROM iceberg_scan('{t.location}')",
        setup=_duckdb_secret(s3_warehouse),
    )
    assert rows == [{"n": len(expected)}]
