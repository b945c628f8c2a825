"""The command against tables on s3 (the test server): ``tables``, ``scan``, ``sql`` and
``compact`` on the filesystem catalog on s3, its settings given by ``--property``."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from cli_support import Runner

import neve
from s3server import S3Warehouse

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("g", pa.string())])


def test_tables_scan_sql_compact_on_s3(run: Runner, s3_warehouse: S3Warehouse, home: Path) -> None:
    cat = neve.connect(s3_warehouse.uri, **s3_warehouse.properties)
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    for i in range(4):
        t.append(
            pa.table({"id": list(range(10 * i, 10 * i + 10)), "g": ["a", "b"] * 5}, schema=SCHEMA)
        )
    flags = [
        "--uri",
        s3_warehouse.uri,
        *(f"--property={k}={v}" for k, v in s3_warehouse.properties.items()),
    ]

    listed = run(*flags, "tables", "db", "--json")
    assert listed.code == 0, listed.err
    assert "db.t" in listed.out

    scanned = run(*flags, "scan", "db.t", "--where", "id >= 35", "--json")
    assert scanned.code == 0, scanned.err
    assert sorted(r["id"] for r in json.loads(scanned.out)) == list(range(35, 40))

    counted = run(
        *flags, "sql", "SELECT g, count(*) AS n FROM db.t GROUP BY g ORDER BY g", "--json"
    )
    assert counted.code == 0, counted.err
    assert json.loads(counted.out) == [{"g": "a", "n": 20}, {"g": "b", "n": 20}]

    compacted = run(*flags, "compact", "db.t", "--option", "min-input-files=2", "--json")
    assert compacted.code == 0, compacted.err
    after = cat.load_table("db.t")
    assert len(list(after.scan().plan_files())) == 1
    assert sorted(after.scan().to_arrow().column("id").to_pylist()) == list(range(40))
