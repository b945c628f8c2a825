"""Spark appends to a primary-key table keep keys unique, as pyarrow appends do: keys
the batch holds twice, the table holds, or a concurrent commit added are refused with
DuplicateKeyError naming them, and nothing is written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import neve
import neve.spark
from neve.errors import DuplicateKeyError

pytestmark = pytest.mark.spark

SCHEMA = pa.schema(
    [
        pa.field("region", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.float64()),
    ]
)


def files_under(path: Path) -> set[str]:
    return {os.path.join(r, n) for r, _, ns in os.walk(path) for n in ns}


@pytest.fixture
def table(sqlite_catalog: neve.Catalog) -> neve.Table:
    t = sqlite_catalog.create_table(
        "db.t", SCHEMA, primary_key=["region", "id"], partition_by=["region"]
    )
    keys = [(r, i) for r in ("eu", "us") for i in range(40)]
    t.append(
        pa.table(
            {"region": [k[0] for k in keys], "id": [k[1] for k in keys], "v": [0.0] * 80},
            schema=SCHEMA,
        )
    )
    return t


def frame(spark: Any, keys: list[tuple[str, int]]) -> Any:
    return spark.createDataFrame([(r, i, 1.0) for r, i in keys], "region string, id long, v double")


def test_existing_and_repeated_keys_are_refused_on_spark_as_on_pyarrow(
    spark: Any, table: neve.Table, sqlite_catalog: neve.Catalog
) -> None:
    before = (table.refresh().metadata_location, files_under(Path(sqlite_catalog.warehouse)))
    batch = [("eu", 3), ("us", 39), ("eu", 40)]
    with pytest.raises(DuplicateKeyError, match="exist in the table already") as on_spark:
        neve.spark.write(frame(spark, batch), table)
    with pytest.raises(DuplicateKeyError, match="exist in the table already") as on_arrow:
        table.append(
            pa.table(
                {"region": [k[0] for k in batch], "id": [k[1] for k in batch], "v": [1.0] * 3},
                schema=SCHEMA,
            )
        )
    for err in (on_spark, on_arrow):
        assert "(eu, 3)" in str(err.value) and "(us, 39)" in str(err.value)
    with pytest.raises(DuplicateKeyError, match="more than once"):
        neve.spark.write(frame(spark, [("ap", 1), ("ap", 1)]), table)
    assert (
        table.refresh().metadata_location,
        files_under(Path(sqlite_catalog.warehouse)),
    ) == before
    neve.spark.write(frame(spark, [("eu", 40), ("ap", 1)]), table)
    assert table.refresh().scan().to_arrow().num_rows == 82


def test_a_key_a_concurrent_commit_added_is_refused_on_spark(
    spark: Any, table: neve.Table, sqlite_catalog: neve.Catalog
) -> None:
    stale = table.catalog.load_table("db.t")
    neve.spark.write(frame(spark, [("ap", 7)]), table)
    before = (table.refresh().metadata_location, files_under(Path(sqlite_catalog.warehouse)))
    with pytest.raises(DuplicateKeyError, match="added by a concurrent commit"):
        neve.spark.write(frame(spark, [("ap", 7), ("ap", 8)]), stale)
    assert (
        table.refresh().metadata_location,
        files_under(Path(sqlite_catalog.warehouse)),
    ) == before


def test_the_check_can_be_turned_off_on_spark(spark: Any, table: neve.Table) -> None:
    table.set_properties({"write.primary-key.check": "false"})
    neve.spark.write(frame(spark, [("eu", 3)]), table)
    assert table.refresh().scan(filter="region = 'eu' and id = 3").to_arrow().num_rows == 2
