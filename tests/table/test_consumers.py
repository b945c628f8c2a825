"""Streaming consumers at the table level: a consumer is a tag ``neve-consumer-<name>``;
neve's expiration keeps its snapshot and every snapshot after it on the branch (what it
still has to read), forgets it once its expiration time has passed, and ``consumers()``
/ ``remove_consumer()`` list and reset consumers."""

from __future__ import annotations

import time
from collections.abc import Callable

import pyarrow as pa
import pytest

from neve.catalog.base import Catalog
from neve.errors import NoSuchSnapshotError, ValidationError
from neve.table.consumers import Consumer, parse_duration_ms
from neve.table.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int32())])


def rows(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "v": [i % 7 for i in ids]}, schema=SCHEMA)


@pytest.fixture(params=["sqlite", "filesystem"])
def table(request: pytest.FixtureRequest, catalog_factory: Callable[[str], Catalog]) -> Table:
    cat = catalog_factory(request.param)
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    for i in range(6):
        t.append(rows(range(10 * i, 10 * i + 10)))
    return t


def ids(t: Table) -> list[int]:
    return [s.snapshot_id for s in t.snapshots()]


def test_record_list_move_and_remove(table: Table) -> None:
    snaps = ids(table)
    table.record_consumer("job-1", snaps[1], expiration="7d")
    table.record_consumer("job.2", snaps[3])
    assert table.consumers() == [
        Consumer("job-1", snaps[1], 7 * 86_400_000),
        Consumer("job.2", snaps[3], None),
    ]
    assert table.refs()["neve-consumer-job-1"].ref_type.value == "tag"
    table.record_consumer("job-1", snaps[2])  # moves; keeps its expiration
    assert table.consumers()[0] == Consumer("job-1", snaps[2], 7 * 86_400_000)
    table.remove_consumer("job-1")
    assert [c.name for c in table.refresh().consumers()] == ["job.2"]
    with pytest.raises(NoSuchSnapshotError, match="consumers\\(\\) lists them"):
        table.remove_consumer("job-1")
    with pytest.raises(ValidationError, match="consumer id"):
        table.record_consumer("no spaces", snaps[0])
    with pytest.raises(ValidationError, match="not a duration"):
        table.record_consumer("x", snaps[0], expiration="soon")


def test_durations() -> None:
    assert parse_duration_ms("7d") == 7 * 86_400_000
    assert parse_duration_ms("12 h") == 12 * 3_600_000
    assert parse_duration_ms("30min") == 1_800_000
    assert parse_duration_ms("45s") == 45_000
    assert parse_duration_ms("500") == 500
    with pytest.raises(ValidationError):
        parse_duration_ms("0s")


def test_expire_keeps_what_a_consumer_still_reads(table: Table) -> None:
    snaps = ids(table)
    table.record_consumer("reader", snaps[2])
    now = int(time.time() * 1000) + 1
    table.maintenance.expire_snapshots(older_than=now, retain_last=1)
    # the consumer's snapshot and every one after it on main stay; those before go
    assert ids(table.refresh()) == snaps[2:]
    assert table.scan(start_snapshot_id=snaps[2]).count() == 30
    with pytest.raises(ValidationError, match=r"consumers \['reader'\]"):
        table.maintenance.expire_snapshots(snapshot_ids=[snaps[3]])
    assert ids(table.refresh()) == snaps[2:]
    # once reset, the consumer holds nothing back
    table.remove_consumer("reader")
    table.maintenance.expire_snapshots(older_than=now, retain_last=1)
    assert ids(table.refresh()) == snaps[-1:]


def test_a_stopped_consumer_expires(table: Table) -> None:
    snaps = ids(table)
    table.record_consumer("stopped", snaps[1], expiration="1ms")
    table.record_consumer("live", snaps[4], expiration="7d")
    time.sleep(0.01)  # the stopped consumer's snapshot is now older than 1 ms
    now = int(time.time() * 1000) + 1
    table.maintenance.expire_snapshots(older_than=now, retain_last=1)
    table.refresh()
    assert [c.name for c in table.consumers()] == ["live"]
    assert ids(table) == snaps[4:]
