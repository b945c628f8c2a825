"""Spark Structured Streaming through the ``neve`` data source: batch incremental reads,
the streaming source in append and changelog mode, its start positions, skip-or-fail on
overwrite and delete snapshots, admission control, the sink's exactly-once commits (a
replayed batch is skipped), the upsert sink applying a changelog, and consumers moved by
the stream."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

import neve
from neve.planning.changelog import CHANGE_ORDINAL, CHANGE_TYPE, COMMIT_SNAPSHOT_ID
from neve.spark.datasource import NeveDataSource, register_datasource
from neve.spark.schema import to_spark_schema
from neve.spark.streaming import (
    BATCH_ID_PROPERTY,
    QUERY_ID_PROPERTY,
    changelog_to_row_kinds,
    last_committed_batch,
)
from neve.table.table import Table

pytestmark = pytest.mark.spark

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.int32()),
        pa.field("s", pa.string()),
    ]
)


def rows(ids: range | list[int], v: int = 0) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {"id": ids, "v": [v + i % 5 for i in ids], "s": [f"r{i}" for i in ids]}, schema=SCHEMA
    )


def canon(t: pa.Table | list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    items = t.to_pylist() if isinstance(t, pa.Table) else t
    return sorted((r["id"], r["v"], r["s"]) for r in items)


class Env:
    def __init__(self, spark: SparkSession, tmp_path: Path) -> None:
        self.spark = spark
        self.tmp = tmp_path
        self.uri = f"sqlite:///{tmp_path / 'catalog.db'}"
        self.wh = tmp_path / "wh"
        self.catalog = neve.connect(self.uri, self.wh)
        self.catalog.create_namespace("db")

    @property
    def options(self) -> dict[str, str]:
        return {"uri": self.uri, "warehouse": str(self.wh)}

    def stream(self, name: str, **options: Any) -> DataFrame:
        return (
            self.spark.readStream.format("neve")
            .options(**self.options)
            .options(**{k: str(v) for k, v in options.items()})
            .load(name)
        )

    def run_to_table(
        self, df: DataFrame, target: str, checkpoint: str, **options: Any
    ) -> list[dict[str, Any]]:
        """Run the stream into ``target`` until it has read all there is; returns the
        query's progress reports."""
        q = (
            df.writeStream.format("neve")
            .options(**self.options)
            .options(**{k: str(v) for k, v in options.items()})
            .option("checkpointLocation", str(self.tmp / checkpoint))
            .trigger(availableNow=True)
            .start(target)
        )
        q.awaitTermination()
        return [p for p in q.recentProgress]

    def run_to_memory(self, df: DataFrame, name: str, checkpoint: str) -> list[dict[str, Any]]:
        q = (
            df.writeStream.format("memory")
            .queryName(name)
            .option("checkpointLocation", str(self.tmp / checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
        return [r.asDict() for r in self.spark.table(name).collect()]


@pytest.fixture
def env(spark: SparkSession, tmp_path: Path) -> Env:
    register_datasource(spark)
    return Env(spark, tmp_path)


def head(t: Table) -> int:
    s = t.refresh().current_snapshot()
    assert s is not None
    return s.snapshot_id


def test_batch_incremental_read_options(env: Env) -> None:
    t = env.catalog.create_table("db.src", SCHEMA)
    t.append(rows(range(0, 5)))
    s1 = head(t)
    t.append(rows(range(5, 9)))
    s2 = head(t)
    t.delete("id = 6")
    t.append(rows(range(9, 12)))

    def read() -> Any:  # a fresh reader each time (options accumulate on one)
        return env.spark.read.format("neve").options(**env.options)

    got = read().option("start-snapshot-id", s1).option("end-snapshot-id", s2).load("db.src")
    assert canon([r.asDict() for r in got.collect()]) == canon(rows(range(5, 9)))
    with pytest.raises(Exception, match="NonAppendSnapshotError"):
        read().option("start-snapshot-id", s1).load("db.src").collect()
    skipping = (
        read().option("start-snapshot-id", s1).option("streaming-skip-delete-snapshots", "true")
    )
    assert canon([r.asDict() for r in skipping.load("db.src").collect()]) == canon(
        rows(range(5, 12))
    )
    first = t.snapshot_by_id(s1).timestamp_ms
    by_time = read().option("end-timestamp", first).load("db.src")
    assert canon([r.asDict() for r in by_time.collect()]) == canon(rows(range(0, 5)))


def test_append_stream_into_the_sink_restarts_exactly_once(env: Env) -> None:
    src = env.catalog.create_table("db.src", SCHEMA)
    dst = env.catalog.create_table("db.dst", SCHEMA)
    src.append(rows(range(0, 10)))
    src.append(rows(range(10, 20)))
    env.run_to_table(env.stream("db.src"), "db.dst", "ck")
    assert canon(dst.refresh().scan().to_arrow()) == canon(rows(range(0, 20)))
    # restarted from its checkpoint: only what came since
    src.append(rows(range(20, 25)))
    src.maintenance.rewrite_data_files(options={"rewrite-all": "true"})  # skipped silently
    src.append(rows(range(25, 27)))
    env.run_to_table(env.stream("db.src"), "db.dst", "ck")
    assert canon(dst.refresh().scan().to_arrow()) == canon(rows(range(0, 27)))
    # every commit of the sink names its query and batch; batches count up
    marks = [
        (s.summary[QUERY_ID_PROPERTY], int(s.summary[BATCH_ID_PROPERTY])) for s in dst.snapshots()
    ]
    assert len({q for q, _ in marks}) == 1
    assert [b for _, b in marks] == sorted({b for _, b in marks})
    # a run with nothing new commits nothing
    before = len(dst.snapshots())
    env.run_to_table(env.stream("db.src"), "db.dst", "ck")
    assert len(dst.refresh().snapshots()) == before


def test_start_positions(env: Env) -> None:
    src = env.catalog.create_table("db.src", SCHEMA)
    src.append(rows(range(0, 3)))
    s1 = head(src)
    time.sleep(0.01)
    src.append(rows(range(3, 6)))
    s2 = src.snapshot_by_id(head(src))
    src.append(rows(range(6, 8)))
    earliest = env.run_to_memory(env.stream("db.src"), "m_earliest", "ck1")
    assert canon(earliest) == canon(rows(range(0, 8)))
    latest_q = env.stream("db.src", **{"starting-position": "latest"})
    assert env.run_to_memory(latest_q, "m_latest", "ck2") == []
    after = env.stream("db.src", **{"start-snapshot-id": s1})
    assert canon(env.run_to_memory(after, "m_after", "ck3")) == canon(rows(range(3, 8)))
    at_time = env.stream("db.src", **{"start-timestamp": s2.timestamp_ms})
    assert canon(env.run_to_memory(at_time, "m_time", "ck4")) == canon(rows(range(3, 8)))


def test_overwrite_and_delete_snapshots_fail_or_are_skipped(env: Env) -> None:
    src = env.catalog.create_table("db.src", SCHEMA)
    src.append(rows(range(0, 6)))
    src.delete("id = 1")
    src.update({"v": 100}, "id = 2")
    src.append(rows(range(6, 8)))
    with pytest.raises(StreamingQueryException, match="streaming-skip-delete-snapshots"):
        env.run_to_memory(env.stream("db.src"), "m_fail", "ck1")
    skipping = env.stream(
        "db.src",
        **{"streaming-skip-delete-snapshots": "true", "streaming-skip-overwrite-snapshots": 1},
    )
    assert canon(env.run_to_memory(skipping, "m_skip", "ck2")) == canon(rows(range(0, 8)))


def test_admission_control(env: Env) -> None:
    src = env.catalog.create_table("db.src", SCHEMA)
    for i in range(4):
        src.append(rows(range(10 * i, 10 * i + 10)))
    dst = env.catalog.create_table("db.dst", SCHEMA)
    env.run_to_table(env.stream("db.src", **{"max-files-per-trigger": 1}), "db.dst", "ck1")
    # one snapshot (one file each) per micro-batch: one sink commit per snapshot
    assert len(dst.refresh().snapshots()) == 4
    assert canon(dst.scan().to_arrow()) == canon(rows(range(0, 40)))
    dst2 = env.catalog.create_table("db.dst2", SCHEMA)
    env.run_to_table(env.stream("db.src", **{"max-rows-per-trigger": 25}), "db.dst2", "ck2")
    assert len(dst2.refresh().snapshots()) == 2
    assert canon(dst2.scan().to_arrow()) == canon(rows(range(0, 40)))


def test_sink_skips_a_replayed_batch(env: Env) -> None:
    dst = env.catalog.create_table("db.dst", SCHEMA)
    source = NeveDataSource({**env.options, "path": "db.dst", "query-id": "q-1"})
    writer = source.streamWriter(to_spark_schema(dst.schema()), False)
    batch = rows(range(0, 4)).to_batches()
    first = writer.write(iter(batch))
    writer.commit([first], 0)
    assert last_committed_batch(dst.refresh().metadata, "main", "q-1") == 0
    replay = writer.write(iter(batch))  # the same batch again, as after a crash
    assert replay.files and all(
        Path(f.file_path.removeprefix("file://")).exists() for f in replay.files
    )
    writer.commit([replay], 0)
    assert canon(dst.refresh().scan().to_arrow()) == canon(rows(range(0, 4)))
    assert len(dst.snapshots()) == 1
    # the replay's files are gone, the next batch commits
    assert not any(Path(f.file_path.removeprefix("file://")).exists() for f in replay.files)
    writer.commit([writer.write(iter(rows(range(4, 6)).to_batches()))], 1)
    assert canon(dst.refresh().scan().to_arrow()) == canon(rows(range(0, 6)))


def test_changelog_stream_upserts_into_a_copy_and_moves_its_consumer(env: Env) -> None:
    src = env.catalog.create_table("db.src", SCHEMA, primary_key=["id"])
    dst = env.catalog.create_table(
        "db.dst", SCHEMA, primary_key=["id"], properties={"rowkind.field": "_row_kind"}
    )
    src.append(rows(range(0, 10)))
    src.upsert(rows([3, 4, 12], v=50))
    src.delete("id in (5, 6)")
    changes = env.stream(
        "db.src",
        mode="changelog",
        **{"consumer-id": "copier", "consumer.expiration-time": "2d"},
    )
    env.run_to_table(changes, "db.dst", "ck", upsert="true")
    assert canon(dst.refresh().scan().to_arrow()) == canon(src.refresh().scan().to_arrow())
    assert [(c.name, c.snapshot_id) for c in src.refresh().consumers()] == [("copier", head(src))]
    src.update({"v": 7}, "id < 3")
    src.delete("id = 12")
    env.run_to_table(changes, "db.dst", "ck", upsert="true")
    assert canon(dst.refresh().scan().to_arrow()) == canon(src.refresh().scan().to_arrow())
    assert src.refresh().consumers()[0].snapshot_id == head(src)
    assert src.consumers()[0].expiration_ms == 2 * 86_400_000


def test_a_new_query_with_a_consumer_id_starts_after_its_tag(env: Env) -> None:
    src = env.catalog.create_table("db.src", SCHEMA)
    src.append(rows(range(0, 4)))
    src.append(rows(range(4, 6)))
    src.record_consumer("job", head(src))
    src.append(rows(range(6, 9)))
    # a fresh checkpoint, starting options saying "earliest": the consumer decides
    fresh = env.stream("db.src", **{"consumer-id": "job", "starting-position": "earliest"})
    assert canon(env.run_to_memory(fresh, "m_consumer", "ck")) == canon(rows(range(6, 9)))
    assert src.refresh().consumers()[0].snapshot_id == head(src)


def test_changelog_rows_become_row_kinds_in_apply_order() -> None:
    changes = pa.table(
        {
            "id": [1, 1, 2, 3, 3],
            "v": [5, 6, 7, 8, 9],
            CHANGE_TYPE: ["UPDATE_AFTER", "UPDATE_BEFORE", "DELETE", "INSERT", "DELETE"],
            CHANGE_ORDINAL: [0, 0, 0, 1, 0],
            COMMIT_SNAPSHOT_ID: [10, 10, 10, 11, 10],
        }
    )
    out = changelog_to_row_kinds(changes, "_kind")
    assert out.column_names == ["id", "v", "_kind"]
    assert out.to_pylist() == [
        {"id": 1, "v": 6, "_kind": "-U"},
        {"id": 2, "v": 7, "_kind": "-D"},
        {"id": 3, "v": 9, "_kind": "-D"},
        {"id": 1, "v": 5, "_kind": "+U"},
        {"id": 3, "v": 8, "_kind": "+I"},
    ]
    with pytest.raises(neve.ValidationError, match=r"rowkind\.field"):
        changelog_to_row_kinds(changes, None)
    plain = changes.drop_columns([CHANGE_TYPE])
    assert changelog_to_row_kinds(plain, None).column_names == ["id", "v"]


@pytest.mark.parametrize("mode", ["append", "changelog"])
def test_earliest_reads_a_first_snapshot_whose_history_expired_in_full(env: Env, mode: str) -> None:
    src = env.catalog.create_table("db.src", SCHEMA, primary_key=["id"])
    src.append(rows(range(0, 5)))
    src.append(rows(range(5, 10)))
    src.delete("id in (1, 2)")  # a delete before the kept history: its rows stay gone
    src.append(rows(range(10, 12)))
    keep = head(src)
    src.maintenance.expire_snapshots(older_than=int(time.time() * 1000) + 1, retain_last=1)
    assert [s.snapshot_id for s in src.refresh().snapshots()] == [keep]
    src.append(rows(range(12, 14)))
    got = env.run_to_memory(env.stream("db.src", mode=mode), f"m_expired_{mode}", "ck")
    assert canon(got) == canon(src.refresh().scan().to_arrow())
    if mode == "changelog":
        assert {r["_change_type"] for r in got} == {"INSERT"}
        first = {r["id"]: r["_commit_snapshot_id"] for r in got}
        assert {first[i] for i in range(12, 14)} == {head(src)}
        assert {first[i] for i in (0, 3, 11)} == {keep}
