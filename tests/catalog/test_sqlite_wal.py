"""SQLite catalogs in WAL mode (issue 27, item 2): a reader holding a transaction no
longer blocks writers, and a lock held past the busy timeout ends in a typed, retryable
error that changed nothing."""

from __future__ import annotations

import multiprocessing
import sqlite3
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest

from neve.catalog import SqlCatalog
from neve.catalog.sql_engine import network_file_system
from neve.errors import CatalogBusyError, ValidationError

SCHEMA = pa.schema([pa.field("w", pa.int32(), nullable=False), pa.field("i", pa.int32())])
WRITERS, APPENDS = 3, 4
#: Short enough that a writer blocked by the reader (the rollback journal) fails the
#: test quickly instead of hanging it.
PROPS = {"sqlite.busy-timeout-ms": "1500"}
TABLE_PROPS = {"commit.retry.num-retries": "2", "commit.retry.total-timeout-ms": "5000"}


def _append(db: str, wh: str, writer: int) -> int:
    cat = SqlCatalog("neve", f"sqlite:///{db}", wh, PROPS)
    for i in range(APPENDS):
        table = cat.load_table("db.t")
        table.append(pa.table({"w": [writer], "i": [i]}, schema=SCHEMA))
    cat.dispose()
    return writer


def test_a_reader_in_a_transaction_does_not_block_appends_from_other_processes(
    tmp_path: Path,
) -> None:
    db, wh = str(tmp_path / "c.db"), str(tmp_path / "wh")
    cat = SqlCatalog("neve", f"sqlite:///{db}", wh, PROPS)
    cat.create_namespace("db")
    cat.create_table("db.t", SCHEMA, properties=TABLE_PROPS)
    reader = sqlite3.connect(db, isolation_level=None)
    assert reader.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    reader.execute("BEGIN")
    seen = reader.execute("SELECT metadata_location FROM iceberg_tables").fetchall()
    try:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["neve.catalog", "neve.arrow.write"])
        with ProcessPoolExecutor(WRITERS, mp_context=ctx) as pool:
            done = list(pool.map(_append, [db] * WRITERS, [wh] * WRITERS, range(WRITERS)))
        assert done == list(range(WRITERS))
        # the reader's snapshot is unchanged inside its transaction
        assert reader.execute("SELECT metadata_location FROM iceberg_tables").fetchall() == seen
    finally:
        reader.execute("COMMIT")
        reader.close()
    rows = cat.load_table("db.t").scan().to_arrow()
    got = sorted(zip(rows["w"].to_pylist(), rows["i"].to_pylist(), strict=True))
    assert got == [(w, i) for w in range(WRITERS) for i in range(APPENDS)]
    assert len(cat.load_table("db.t").snapshots()) == WRITERS * APPENDS
    cat.dispose()


def test_a_lock_held_past_the_busy_timeout_is_a_retryable_typed_error(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    cat = SqlCatalog("neve", f"sqlite:///{db}", str(tmp_path), {"sqlite.busy-timeout-ms": "100"})
    cat.create_namespace("a")
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(CatalogBusyError, match="busy timeout") as info:
            cat.create_namespace("b")
        assert info.value.retryable
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert cat.list_namespaces() == [("a",)]
    cat.create_namespace("b")  # the retry goes through
    assert cat.list_namespaces() == [("a",), ("b",)]
    cat.dispose()


def test_journal_mode_property(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    cat = SqlCatalog("neve", f"sqlite:///{db}", str(tmp_path), {"sqlite.journal-mode": "delete"})
    cat.create_namespace("a")
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    cat.dispose()
    with pytest.raises(ValidationError, match=r"sqlite\.journal-mode"):
        SqlCatalog("neve", f"sqlite:///{db}", str(tmp_path), {"sqlite.journal-mode": "fast"})


def test_network_file_system_detection_reads_the_mount_table(tmp_path: Path) -> None:
    # the test's own folder is on a local file system; /proc is not a network one
    assert network_file_system(str(tmp_path)) is None
    assert network_file_system("/proc/self") is None
