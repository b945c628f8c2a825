"""DuckDB 1.5's iceberg extension reads what neve writes (``iceberg_scan`` of the
metadata file): every format version, a partitioned table, merge-on-read deletes
(position delete files in v2, deletion vectors in v3), a renamed column and edge
values. The rows must equal neve's own scan of the same snapshot."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import neve
from duckdbengine import DuckDBError, duckdb_query

UTC = dt.timezone.utc

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("x", pa.float64()),
        pa.field("s", pa.string()),
        pa.field("d", pa.date32()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("amount", pa.decimal128(12, 2)),
        pa.field("n", pa.int32()),
    ]
)


def _rows(ids: range) -> pa.Table:
    floats = [0.5, math.nan, -0.0, math.inf, -math.inf, None, 1e300]
    ints = [0, 2**31 - 1, -(2**31), None, 7]
    return pa.table(
        {
            "id": list(ids),
            "x": [floats[i % len(floats)] for i in ids],
            "s": [None if i % 11 == 0 else ("é" * (i % 5)) + "x" * (i % 300) for i in ids],
            "d": [dt.date(1960, 1, 1) + dt.timedelta(days=37 * i) for i in ids],
            "ts": [
                dt.datetime(1969, 12, 31, 23, 59, tzinfo=UTC) + dt.timedelta(hours=i) for i in ids
            ],
            "amount": [Decimal(i * 37 % 10_000) / 100 if i % 13 else None for i in ids],
            "n": [ints[i % len(ints)] for i in ids],
        },
        schema=SCHEMA,
    )


def _canon(v: Any) -> Any:
    """One form for a value from neve (Python objects) and from DuckDB (runner.py's
    JSON): floats compare bit-exactly (NaN equal to NaN, -0.0 apart from 0.0)."""
    if isinstance(v, float):
        return (
            "nan"
            if math.isnan(v)
            else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
        )
    if v in ("nan", "inf", "-inf"):
        return v
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, dt.datetime):
        return v.astimezone(UTC).replace(tzinfo=None).isoformat()
    if isinstance(v, dt.date):
        return v.isoformat()
    return v


def _duck_canon(column: str, v: Any) -> Any:
    if v is None:
        return None
    if column == "x":
        return _canon(float(v) if v not in ("nan", "inf", "-inf") else v)
    if column == "ts":  # DuckDB gives timestamptz in its session zone, ISO with offset
        return _canon(dt.datetime.fromisoformat(v))
    return v


# rows as tuples of their columns in name order (amount, d, id, ...): sorted by id


def _neve_rows(table: neve.Table) -> list[tuple[Any, ...]]:
    rows = table.scan().to_arrow().to_pylist()
    return sorted((tuple(_canon(r[c]) for c in sorted(r)) for r in rows), key=lambda r: r[1])


def _duck_rows(location: str) -> list[tuple[Any, ...]]:
    rows = duckdb_query(f"SELECT * FROM iceberg_scan('{location}')", setup=["SET TimeZone = 'UTC'"])
    return sorted(
        (tuple(_duck_canon(c, r[c]) for c in sorted(r)) for r in rows), key=lambda r: r[1]
    )


@pytest.mark.parametrize("version", [1, 2, 3])
def test_duckdb_reads_neve_tables(tmp_path: Path, version: int) -> None:
    catalog = neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        partition_by=["bucket(4, id)", "year(d)"],
        properties={"format-version": str(version), "write.delete.mode": "merge-on-read"},
    )
    table.append(_rows(range(0, 400)))
    table.append(_rows(range(400, 700)))
    table.delete(
        f"id in ({', '.join(str(i) for i in range(3, 500, 7))})"
    )  # v1: rewrites; v2: position deletes; v3: DVs
    with table.update_schema() as u:
        u.rename_column("s", "label")
    table.append(
        _rows(range(700, 750)).rename_columns([*SCHEMA.names[:2], "label", *SCHEMA.names[3:]])
    )
    table = catalog.load_table("db.t")
    assert _duck_rows(table.metadata_location) == _neve_rows(table)
    assert len(_neve_rows(table)) == 750 - len([i for i in range(500) if i % 7 == 3])


@pytest.mark.parametrize("codec", ["gzip", "snappy", "uncompressed", "zstd"])
def test_duckdb_reads_manifests_of_the_avro_codecs(tmp_path: Path, codec: str) -> None:
    """DuckDB 1.5 reads manifests in deflate, snappy and null (what
    ``write.avro.compression-codec`` gzip, snappy and uncompressed write), and refuses
    zstandard ones ("unknown codec"), which Iceberg-Java reads: a table meant for DuckDB
    keeps another codec (docs/GUARANTEES.md)."""
    catalog = neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        partition_by=["bucket(4, id)"],
        properties={"write.avro.compression-codec": codec, "write.delete.mode": "merge-on-read"},
    )
    table.append(_rows(range(0, 60)))
    table.delete("id in (5, 17)")
    table = catalog.load_table("db.t")
    if codec == "zstd":
        with pytest.raises(DuckDBError, match="unknown codec"):
            _duck_rows(table.metadata_location)
    else:
        assert _duck_rows(table.metadata_location) == _neve_rows(table)
        assert len(_neve_rows(table)) == 58
