"""Z-order rewrites on Spark: ``strategy="sort"`` with ``zorder(...)`` computes each
row's z-value in Spark tasks with the pyarrow engine's function
(:func:`neve.arrow.sorting.zorder_key`), ranges and sorts by it and drops it. Checked
against the keys computed independently from the written files, and against the pyarrow
engine's z-order of the same table; bad input is refused before any job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import neve
from neve.arrow.sorting import zorder_key
from neve.errors import ValidationError
from neve.planning.compaction import ZOrder
from neve.spark import maintenance
from neve.table.table import Table

pytestmark = pytest.mark.spark

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("day", pa.int32()),
        pa.field("x", pa.float64()),
        pa.field("s", pa.string()),
        pa.field("tags", pa.list_(pa.int32())),
    ]
)


def data(lo: int, hi: int) -> pa.Table:
    rng = np.random.default_rng(lo)
    ids = list(range(lo, hi))
    return pa.table(
        {
            "id": ids,
            "day": [i % 2 for i in ids],
            "x": [
                None if i % 11 == 0 else float(v)
                for i, v in zip(ids, rng.normal(size=len(ids)), strict=True)
            ],
            "s": [f"{'ab'[i % 2]}{(i * 7919) % 97:03d}" for i in ids],
            "tags": [[i % 5] for i in ids],
        },
        schema=SCHEMA,
    )


def canon(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["day"], r["x"], r["s"], tuple(r["tags"])) for r in t.to_pylist())


def make(catalog: neve.Catalog, name: str) -> Table:
    t = catalog.create_table(name, SCHEMA, partition_by=["day"], format_version=2)
    for i in range(5):
        t.append(data(i * 40, i * 40 + 40))
    t.delete("id in (3, 77, 150)")
    return catalog.load_table(name)


def keys_of(t: Table, path: str, order: ZOrder) -> list[bytes]:
    """The z-values of a written file's rows, in file order, computed from the file."""
    rows = pq.read_table(path.removeprefix("file://"))
    words = zorder_key(rows, t.schema(), order)
    return [w.astype(">u8").tobytes() for w in words]


def zorder_files(t: Table, order: ZOrder) -> dict[Any, list[bytes]]:
    out: dict[Any, list[bytes]] = {}
    for task in t.scan().plan_files():
        f = task.file
        assert f.sort_order_id is None  # z-order is no table sort order
        keys = keys_of(t, f.file_path, order)
        assert keys == sorted(keys)  # rows in z-value order
        out.setdefault(f.partition, []).extend(keys)
    return out


@pytest.mark.parametrize("options", [{}, {"var-length-contribution": "1", "max-output-size": "3"}])
def test_spark_zorder_matches_the_pyarrow_engine(
    spark: SparkSession, sqlite_catalog: neve.Catalog, options: dict[str, str]
) -> None:
    on_spark = make(sqlite_catalog, "db.spark")
    on_arrow = make(sqlite_catalog, "db.arrow")
    want = canon(on_spark.scan().to_arrow())
    opts = {"rewrite-all": "true", **options}
    sort = "zorder(x, s, id)"
    done = maintenance.rewrite_data_files(
        spark, on_spark, options=opts, strategy="sort", sort_order=sort
    )
    assert done.rewritten_data_files_count == 10 and done.added_data_files_count == 2
    on_arrow.maintenance.rewrite_data_files(options=opts, strategy="sort", sort_order=sort)
    on_spark, on_arrow = (
        sqlite_catalog.load_table("db.spark"),
        sqlite_catalog.load_table("db.arrow"),
    )
    assert canon(on_spark.scan().to_arrow()) == want == canon(on_arrow.scan().to_arrow())
    ids = tuple(on_spark.schema().find_field(n).field_id for n in ("x", "s", "id"))
    var = int(options.get("var-length-contribution", "8"))
    order = ZOrder(ids, var, int(options.get("max-output-size", str(2**31 - 1))))
    spark_keys = zorder_files(on_spark, order)
    arrow_keys = zorder_files(on_arrow, order)
    # per partition the same keys in the same order (ties aside, the same rows)
    assert spark_keys == arrow_keys
    if options:  # 3 bytes: the keys are cut short, so some rows tie
        assert any(len(set(k)) < len(k) for k in spark_keys.values())


def test_spark_zorder_refuses_a_column_it_cannot_order(
    spark: SparkSession, sqlite_catalog: neve.Catalog
) -> None:
    t = make(sqlite_catalog, "db.t")
    before = t.metadata_location
    files = {p for p in Path(t.location.removeprefix("file://")).rglob("*") if p.is_file()}
    with pytest.raises(ValidationError, match="z-order takes numbers"):
        maintenance.rewrite_data_files(
            spark,
            t,
            options={"rewrite-all": "true"},
            strategy="sort",
            sort_order="zorder(id, tags)",
        )
    with pytest.raises(ValidationError, match="identity partition column"):
        maintenance.rewrite_data_files(spark, t, strategy="sort", sort_order="zorder(day, id)")
    after = sqlite_catalog.load_table("db.t")
    assert after.metadata_location == before
    assert {p for p in Path(t.location.removeprefix("file://")).rglob("*") if p.is_file()} == files
