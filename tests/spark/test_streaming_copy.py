"""The streaming copy test: a writer process commits appends, upserts and deletes to a
primary-key table in a loop while a streaming query reads its changelog (with a consumer
id) and upserts the changes into a copy through the neve sink. The query is stopped
mid-stream, restarted from its checkpoint in a process of its own, which is killed
(SIGKILL, Spark JVM and all) mid-stream, and restarted again from the checkpoint to read
the rest. At the end the copy equals the source (no change lost or applied twice), each
sink commit is one micro-batch, and the consumer's tag sits on the source's head."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

import neve
from budget import LONG
from neve.spark.datasource import register_datasource
from neve.spark.streaming import BATCH_ID_PROPERTY, QUERY_ID_PROPERTY

pytestmark = pytest.mark.spark

WRITER = Path(__file__).with_name("stream_writer.py")
QUERY = Path(__file__).with_name("stream_query.py")
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.int32()),
        pa.field("s", pa.string()),
    ]
)
#: The writer's operations (more in make test-long).
OPERATIONS = 60 if LONG else 30
#: Upper bound on any wait below (a hung query fails the test instead of hanging it).
PATIENCE_S = 600


def canon(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["v"], r["s"]) for r in t.to_pylist())


def test_changelog_stream_copies_a_changing_table_across_restarts(
    spark: SparkSession, tmp_path: Path
) -> None:
    register_datasource(spark)
    uri, wh = f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "wh")
    cat = neve.connect(uri, wh)
    cat.create_namespace("db")
    src = cat.create_table("db.src", SCHEMA, primary_key=["id"])
    dst = cat.create_table(
        "db.copy", SCHEMA, primary_key=["id"], properties={"rowkind.field": "_kind"}
    )
    src.append(
        pa.table(
            {"id": range(1000), "v": [i % 9 for i in range(1000)], "s": ["init"] * 1000},
            schema=SCHEMA,
        )
    )
    options = {"uri": uri, "warehouse": wh}
    checkpoint = str(tmp_path / "checkpoint")

    def start(**trigger: Any) -> StreamingQuery:
        changes = (
            spark.readStream.format("neve")
            .options(**options)
            .option("mode", "changelog")
            .option("consumer-id", "copier")
            .option("max-files-per-trigger", "6")
            .load("db.src")
        )
        return (
            changes.writeStream.format("neve")
            .options(**options)
            .option("upsert", "true")
            .option("checkpointLocation", checkpoint)
            .trigger(**trigger)
            .start("db.copy")
        )

    def batches_done(q: StreamingQuery) -> int:
        return sum(1 for p in q.recentProgress if p["numInputRows"] > 0)

    def wait_for(cond: Any, what: str) -> None:
        deadline = time.monotonic() + PATIENCE_S
        while not cond():
            assert time.monotonic() < deadline, f"gave up waiting for {what}"
            time.sleep(0.5)

    writer = subprocess.Popen(
        [sys.executable, str(WRITER), uri, wh, "db.src", str(OPERATIONS), "7"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    query: subprocess.Popen[str] | None = None
    try:
        # run a while in this process, then stop the query mid-stream
        q = start(processingTime="1 second")
        wait_for(lambda: batches_done(q) >= 2 or q.exception(), "two micro-batches")
        assert q.exception() is None, q.exception()
        q.stop()
        # go on from the checkpoint in a process of its own, and kill it (and its
        # Spark JVM, in its process group) when it has committed two more batches
        committed = len(dst.refresh().snapshots())
        query = subprocess.Popen(
            [sys.executable, str(QUERY), uri, wh, checkpoint],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

        def caught_up() -> bool:  # nothing left to read: the writer is done, all read
            head = src.refresh().current_snapshot()
            return writer.poll() is not None and [c.snapshot_id for c in src.consumers()] == [
                head.snapshot_id if head else None
            ]

        wait_for(
            lambda: (
                len(dst.refresh().snapshots()) >= committed + 2
                or query.poll() is not None
                or caught_up()
            ),
            "the query process to commit two micro-batches",
        )
        assert query.poll() is None, query.communicate()[1][-3000:]
        os.killpg(query.pid, signal.SIGKILL)
        query.wait(timeout=PATIENCE_S)
        out, err = writer.communicate(timeout=PATIENCE_S)
        assert writer.returncode == 0, err
        assert "done" in out
        # the writer is done: read the rest and stop
        q = start(availableNow=True)
        q.awaitTermination(PATIENCE_S)
        assert q.exception() is None, q.exception()
    finally:
        if writer.poll() is None:
            writer.kill()
        if query is not None and query.poll() is None:
            os.killpg(query.pid, signal.SIGKILL)
    src.refresh()
    dst.refresh()
    assert len(src.snapshots()) > OPERATIONS // 2  # the writer did change the table
    assert canon(dst.scan().to_arrow()) == canon(src.scan().to_arrow())
    # one sink commit per micro-batch of the one query
    marks = [
        (s.summary[QUERY_ID_PROPERTY], int(s.summary[BATCH_ID_PROPERTY])) for s in dst.snapshots()
    ]
    assert len({m[0] for m in marks}) == 1
    ids = [m[1] for m in marks]
    assert ids == sorted(set(ids))
    head = src.current_snapshot()
    assert head is not None
    assert [(c.name, c.snapshot_id) for c in src.consumers()] == [("copier", head.snapshot_id)]
