"""Changelog reads on Spark: ``neve.spark.changes`` and the data source's
``changelog=true`` return the rows ``table.changes`` returns, on a table with many kinds
of values (timestamps to the microsecond, decimals, dates, nested structs and maps,
floats with -0.0 and NaN), over merge-on-read and copy-on-write changes; filters,
columns, net changes and the pairing error."""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import neve
import neve.spark as ns
from javaengine import canon
from neve.errors import ValidationError
from neve.spark.datasource import register_datasource

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("price", pa.decimal128(9, 2)),
        pa.field("d", pa.date32()),
        pa.field("f", pa.float64()),
        pa.field("s", pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.string())])),
        pa.field("m", pa.map_(pa.string(), pa.int64())),
    ]
)
T0 = dt.datetime(2024, 5, 1, tzinfo=UTC)


def rows(ids: list[int], k: int = 0) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "id": i,
                "ts": T0 + dt.timedelta(microseconds=i + k),
                "price": Decimal(i + k) / Decimal(4),
                "d": dt.date(2024, 1, 1) + dt.timedelta(days=i),
                "f": [0.0, -0.0, math.nan, 1.5][(i + k) % 4],
                "s": {"a": i, "b": None if i % 2 else f"s{k}"},
                "m": [("x", i + k)] if i % 3 else None,
            }
            for i in ids
        ],
        schema=SCHEMA,
    )


def naive_utc(v: Any) -> Any:
    """Spark returns timestamps as naive datetimes in the session's time zone (UTC)."""
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(UTC).replace(tzinfo=None)
    if isinstance(v, dict):
        return {k: naive_utc(x) for k, x in v.items()}
    return v


def multiset(records: list[dict[str, Any]]) -> Counter[Any]:
    return Counter(tuple(canon(naive_utc(v)) for v in r.values()) for r in records)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[neve.Table]]:
    base = Path(tmp_path_factory.mktemp("spark-changelog"))
    uri = f"sqlite:///{base}/c.db"
    cat = neve.connect(uri, warehouse=f"{base}/wh")
    cat.create_namespace("db")
    out = []
    for mode, version in (("merge-on-read", 3), ("copy-on-write", 2)):
        t = cat.create_table(
            f"db.{mode.replace('-', '_')}",
            SCHEMA,
            primary_key=["id"],
            format_version=version,
            properties={f"write.{op}.mode": mode for op in ("delete", "update", "merge")},
        )
        t.append(rows(list(range(12))))
        t.append(rows(list(range(12, 16))))
        t.delete("id IN (1, 13)")
        t.upsert(rows([2, 3, 4, 20], k=1))
        t.upsert(rows([5], k=0))  # the same row again: carry-over only
        t.overwrite(rows([6, 30], k=2), "id = 6")
        t.update({"f": -0.0}, "id = 8")  # 0.0 -> -0.0: a change
        out.append(t)
    return uri, out


@pytest.mark.parametrize("local_rows_max", [0, 10_000], ids=["spark-tasks", "driver"])
def test_spark_changes_equal_pyarrow(spark: SparkSession, tables: Any, local_rows_max: int) -> None:
    # 0: read and finished by Spark tasks; 10,000: these small changelogs are finished
    # by the pyarrow engine on the driver and handed to Spark
    _, ts = tables
    for t in ts:
        first = t.snapshots()[0].snapshot_id
        for kwargs in (
            {"start_snapshot_id": first},
            {"net_changes": True, "compute_updates": t.format_version == 3},
            {"start_snapshot_id": first, "filter": "id < 6", "columns": ["id", "f", "m"]},
        ):
            want = t.changes(**kwargs).to_pylist()
            df = ns.changes(spark, t, local_rows_max=local_rows_max, **kwargs)
            spark_tasks = ns.changes(spark, t, local_rows_max=0, **kwargs)
            assert df.schema.simpleString() == spark_tasks.schema.simpleString()
            got = [r.asDict(recursive=True) for r in df.collect()]
            # Spark gives maps as dicts and structs as dicts: compare canonical forms
            want = [
                {k: (dict(v) if k == "m" and v is not None else v) for k, v in r.items()}
                for r in want
            ]
            assert multiset(got) == multiset(want), (t.name, kwargs)
            assert want or kwargs.get("filter")


def test_driver_handover_leaves_the_session_settings_as_they_were(
    spark: SparkSession, tables: Any
) -> None:
    # the hand-over sets two Arrow settings for its own call; the user's stay
    _, ts = tables
    threshold = "spark.sql.execution.arrow.localRelationThreshold"
    batch = "spark.sql.execution.arrow.maxRecordsPerBatch"
    spark.conf.set(threshold, "12345")
    spark.conf.unset(batch)
    try:
        rows = ns.changes(spark, ts[0], local_rows_max=10_000).collect()
        assert rows and spark.conf.get(threshold) == "12345"
        assert spark.conf.get(batch, None) in (None, "10000")  # unset: Spark's default
    finally:
        spark.conf.unset(threshold)


def test_changes_see_sign_of_zero_and_pair_updates(tables: Any) -> None:
    _, ts = tables
    for t in ts:
        upsert = t.snapshots()[3].snapshot_id
        got = t.changes(start_snapshot_id=t.snapshots()[2].snapshot_id, end_snapshot_id=upsert)
        kinds = sorted((r["id"], r["_change_type"]) for r in got.to_pylist())
        assert kinds == [
            (2, "UPDATE_AFTER"),
            (2, "UPDATE_BEFORE"),
            (3, "UPDATE_AFTER"),
            (3, "UPDATE_BEFORE"),
            (4, "UPDATE_AFTER"),
            (4, "UPDATE_BEFORE"),
            (20, "INSERT"),
        ]
        last = t.changes(start_snapshot_id=t.current_snapshot().parent_snapshot_id).to_pylist()
        assert [(r["id"], r["_change_type"], math.copysign(1, r["f"])) for r in last] in (
            [(8, "UPDATE_BEFORE", 1.0), (8, "UPDATE_AFTER", -1.0)],
            [(8, "UPDATE_AFTER", -1.0), (8, "UPDATE_BEFORE", 1.0)],
        )


def test_datasource_changelog_option(spark: SparkSession, tables: Any) -> None:
    uri, ts = tables
    register_datasource(spark)
    warehouse = uri.removeprefix("sqlite:///").removesuffix("/c.db") + "/wh"
    for t in ts:
        first = t.snapshots()[0].snapshot_id
        reader = (
            spark.read.format("neve")
            .option("uri", uri)
            .option("warehouse", warehouse)
            .option("changelog", "true")
            .option("start-snapshot-id", str(first))
        )
        df = reader.load(t.name)
        assert df.columns[-3:] == ["_change_type", "_change_ordinal", "_commit_snapshot_id"]
        want = [
            {k: (dict(v) if k == "m" and v is not None else v) for k, v in r.items()}
            for r in t.changes(start_snapshot_id=first).to_pylist()
        ]
        got = [r.asDict(recursive=True) for r in df.collect()]
        assert multiset(got) == multiset(want)
        net = reader.option("net-changes", "true").option("columns", "id,f").load(t.name)
        want_net = t.changes(start_snapshot_id=first, net_changes=True, columns=["id", "f"])
        assert multiset([r.asDict() for r in net.collect()]) == multiset(want_net.to_pylist())


def test_spark_pairing_error_says_what_to_do(spark: SparkSession, tmp_path: Path) -> None:
    cat = neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse=f"{tmp_path}/wh")
    cat.create_namespace("db")
    t = cat.create_table("db.dup", SCHEMA, format_version=2)
    t.append(rows([1, 2]))
    t.append(rows([1]))
    t.update({"price": Decimal(1)}, "id = 1")
    with pytest.raises(Exception, match="identifier_columns"):
        ns.changes(spark, t, identifier_columns=["id"], local_rows_max=0).collect()
    with pytest.raises(ValidationError, match="identifier_columns"):  # on the driver
        ns.changes(spark, t, identifier_columns=["id"]).collect()
    # without pairing the changes are there
    for local in (0, 100):
        kwargs: dict[str, Any] = {"compute_updates": False, "local_rows_max": local}
        assert ns.changes(spark, t, identifier_columns=["id"], **kwargs).count() == 7
