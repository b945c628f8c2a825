"""Round trips with pyiceberg through a shared SQL catalog and bare metadata files."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable

import neve

UTC = dt.timezone.utc

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("cat", pa.string()),
        pa.field("d", pa.date32()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("ts_day", pa.timestamp("us")),
        pa.field("ts_hour", pa.timestamp("us", tz="UTC")),
        pa.field("small", pa.int32()),
        pa.field("price", pa.decimal128(10, 2)),
    ]
)
ALL_TRANSFORMS = [
    "cat",
    "bucket(8, id)",
    "truncate(3, name)",
    "year(d)",
    "month(ts)",
    "day(ts_day)",
    "hour(ts_hour)",
    "truncate(10, small)",
    "void(price)",
]


def make_rows(start: int, n: int) -> pa.Table:
    from decimal import Decimal

    t0 = dt.datetime(2023, 12, 30, 22, tzinfo=UTC)
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "name": [None if i % 11 == 0 else f"nm{i % 13}-x" for i in range(start, start + n)],
            "cat": [["a", "b", "c"][i % 3] for i in range(start, start + n)],
            "d": [dt.date(2022 + i % 3, 1 + i % 12, 1 + i % 28) for i in range(start, start + n)],
            "ts": [t0 + dt.timedelta(hours=7 * i) for i in range(start, start + n)],
            "ts_day": [
                dt.datetime(2024, 2, 1) + dt.timedelta(hours=5 * i) for i in range(start, start + n)
            ],
            "ts_hour": [t0 + dt.timedelta(minutes=37 * i) for i in range(start, start + n)],
            "small": pa.array([i % 100 - 50 for i in range(start, start + n)], pa.int32()),
            "price": [Decimal(i) / Decimal(4) for i in range(start, start + n)],
        },
        schema=SCHEMA,
    )


def canon(t: pa.Table) -> list[dict[str, Any]]:
    out = []
    for r in t.to_pylist():
        out.append({k: v for k, v in r.items()})
    return sorted(out, key=lambda r: r["id"])


def pyiceberg_catalog(db: Path, wh: Path) -> SqlCatalog:
    return SqlCatalog("neve", uri=f"sqlite:///{db}", warehouse=f"file://{wh}")


def test_neve_writes_pyiceberg_reads(tmp_path: Path) -> None:
    db, wh = tmp_path / "cat.db", tmp_path / "wh"
    cat = neve.connect(f"sqlite:///{db}", warehouse=str(wh))
    cat.create_namespace("db")
    t = cat.create_table("db.all", SCHEMA, partition_by=ALL_TRANSFORMS)
    t.append(make_rows(0, 300))
    t.append(make_rows(300, 100))
    t.delete("id >= 10 and id < 20")  # partial delete: rewrites files
    t.delete("cat = 'c' and id > 350")  # another partial delete
    t.overwrite(make_rows(1000, 30), filter="cat = 'b'")
    with t.update_schema() as u:
        u.rename_column("name", "label")
        u.add_column("extra", "long")
    expected = canon(t.scan().to_arrow())
    cat_of = {r["id"]: r["cat"] for r in make_rows(0, 400).to_pylist()}
    kept = {
        i for i, c in cat_of.items() if not 10 <= i < 20 and not (c == "c" and i > 350) and c != "b"
    }
    assert sorted(r["id"] for r in expected) == sorted(kept | set(range(1000, 1030)))
    ids = {r["id"] for r in expected}
    assert not any(10 <= i < 20 for i in ids)
    assert all(r["cat"] != "b" or r["id"] >= 1000 for r in expected)

    pcat = pyiceberg_catalog(db, wh)
    ptable = pcat.load_table("db.all")
    assert canon(ptable.scan().to_arrow()) == expected
    static = StaticTable.from_metadata(t.metadata_location)
    assert canon(static.scan().to_arrow()) == expected
    # pyiceberg sees the same history
    assert [s.snapshot_id for s in ptable.snapshots()] == [s.snapshot_id for s in t.snapshots()]
    # filtered scans that rely on partition pruning agree
    for flt in ["cat = 'a'", "id = 42", "ts_day >= '2024-02-03T00:00:00'", "label = 'nm3-x'"]:
        ours = canon(t.scan(filter=flt).to_arrow())
        theirs = canon(ptable.scan(row_filter=flt).to_arrow())
        assert ours == theirs, flt


def test_pyiceberg_writes_neve_extends(tmp_path: Path) -> None:
    db, wh = tmp_path / "cat.db", tmp_path / "wh"
    pcat = pyiceberg_catalog(db, wh)
    pcat.create_namespace("db")
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import BucketTransform, DayTransform

    arrow_schema = pa.schema([f for f in SCHEMA if f.name in ("id", "name", "ts_day")])
    ptable = pcat.create_table("db.theirs", schema=arrow_schema)
    with ptable.update_spec() as us:
        us.add_field("ts_day", DayTransform(), "ts_day_day")
        us.add_field("id", BucketTransform(4), "id_bucket")
    data = make_rows(0, 50).select(["id", "name", "ts_day"])
    ptable.append(data)
    ptable.append(make_rows(50, 50).select(["id", "name", "ts_day"]))
    del PartitionField, PartitionSpec

    cat = neve.connect(f"sqlite:///{db}", warehouse=str(wh))
    t = cat.load_table("db.theirs")
    assert canon(t.scan().to_arrow()) == canon(ptable.refresh().scan().to_arrow())
    t.append(make_rows(100, 25).select(["id", "name", "ts_day"]))
    t.delete("id < 5")
    with t.update_schema() as u:
        u.add_column("note", "string")

    ptable = pcat.load_table("db.theirs")
    theirs = canon(ptable.scan().to_arrow())
    ours = canon(t.scan().to_arrow())
    assert ours == theirs
    assert [r["id"] for r in ours] == list(range(5, 125))
    # and pyiceberg can keep writing on top of neve's commits
    extra = pa.table(
        {
            "id": pa.array([999], pa.int64()),
            "name": ["p"],
            "ts_day": pa.array([dt.datetime(2024, 3, 1)], pa.timestamp("us")),
            "note": ["from pyiceberg"],
        },
        schema=pa.schema(
            [
                pa.field("id", pa.int64(), nullable=False),
                pa.field("name", pa.string()),
                pa.field("ts_day", pa.timestamp("us")),
                pa.field("note", pa.string()),
            ]
        ),
    )
    ptable.append(extra)
    t.refresh()
    assert 999 in {r["id"] for r in canon(t.scan().to_arrow())}


@pytest.mark.parametrize("version", [1, 2])
def test_format_versions_read_by_pyiceberg(tmp_path: Path, version: int) -> None:
    cat = neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.v", SCHEMA, partition_by=["bucket(4, id)"], format_version=version)
    t.append(make_rows(0, 40))
    t.delete("id < 7")
    static = StaticTable.from_metadata(t.metadata_location)
    assert static.metadata.format_version == version
    assert canon(static.scan().to_arrow()) == canon(t.scan().to_arrow())
