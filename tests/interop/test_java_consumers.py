"""Streaming consumers and Iceberg-Java 1.10.2: a consumer is a tag, so Java's
``expire_snapshots`` procedure keeps the snapshot a live consumer has read up to and, by
the tag's ``max-ref-age-ms`` (the consumer's expiration time), forgets a consumer that
stopped, as neve's expiration does. neve also keeps the snapshots after a consumer's
tag; Java keeps only the tagged one (docs/STREAMING.md)."""

from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pytest

from javaengine import IcebergJava
from neve.catalog import SqlCatalog

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int32())])


def java_timestamp(ms: int) -> str:
    when = dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)
    return f"TIMESTAMP '{when.strftime('%Y-%m-%d %H:%M:%S.%f')[:-3]}'"


def test_java_and_neve_keep_a_live_consumers_snapshot(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    names = {}
    for name in ("by_java", "by_neve"):
        t = java_catalog.create_table(f"{java_ns}.{name}", SCHEMA)
        for i in range(6):
            t.append(pa.table({"id": [i], "v": [i]}, schema=SCHEMA))
        snaps = [s.snapshot_id for s in t.snapshots()]
        t.record_consumer("live", snaps[2], expiration="7d")
        t.record_consumer("stopped", snaps[1], expiration="1ms")
        names[name] = (t, snaps)
    time.sleep(0.01)  # the stopped consumer's snapshot is older than its 1 ms now
    now = int(time.time() * 1000) + 1

    t, snaps = names["by_java"]
    iceberg_java.sql(
        f"CALL neve.system.expire_snapshots(table => '{java_ns}.by_java', "
        f"older_than => {java_timestamp(now)}, retain_last => 1)"
    )
    t = java_catalog.load_table((java_ns, "by_java"))
    assert [(c.name, c.snapshot_id) for c in t.consumers()] == [("live", snaps[2])]
    kept = [s.snapshot_id for s in t.snapshots()]
    assert snaps[2] in kept and snaps[1] not in kept
    assert sorted(kept) == sorted([snaps[2], snaps[5]])  # Java keeps the tag's snapshot only

    t, snaps = names["by_neve"]
    t.maintenance.expire_snapshots(older_than=now, retain_last=1)
    t = java_catalog.load_table((java_ns, "by_neve"))
    assert [(c.name, c.snapshot_id) for c in t.consumers()] == [("live", snaps[2])]
    assert [s.snapshot_id for s in t.snapshots()] == snaps[2:]
    # what the live consumer reads next is still there, and Java reads the table
    assert sorted(t.scan(start_snapshot_id=snaps[2]).to_arrow().column("id").to_pylist()) == [
        3,
        4,
        5,
    ]
    got = iceberg_java.sql(f"SELECT id FROM neve.{java_ns}.by_neve ORDER BY id").dicts()
    assert [int(r["id"]) for r in got] == [0, 1, 2, 3, 4, 5]
