"""Commits that never land in the wrong table, never poison a catalog connection and do
not give up early, on real catalogs: a stale writer never commits into a re-created
table, appends keep rebasing while validating changes keep the retry count, and a busy
SQLite database is waited for, then retried cleanly."""

from __future__ import annotations

import pickle
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from neve.actions.commit import RetrySettings
from neve.catalog import Catalog, FilesystemCatalog, SqlCatalog
from neve.errors import (
    CatalogBusyError,
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
    NeveIOError,
)
from neve.table.table import Table

OLD = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("old", pa.string())])
NEW = pa.schema([pa.field("key", pa.string()), pa.field("amount", pa.float64())])


def old_rows(start: int, n: int = 3) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "old": [f"o{i}" for i in ids]}, schema=OLD)


def new_rows(n: int) -> pa.Table:
    return pa.table(
        {"key": [f"k{i}" for i in range(n)], "amount": [i / 2 for i in range(n)]}, schema=NEW
    )


def files_under(root: str | Path) -> set[str]:
    return {str(p) for p in Path(root).rglob("*") if p.is_file()}


def data_files(root: str | Path) -> set[str]:
    return {p for p in files_under(root) if p.endswith(".parquet")}


def twin(catalog: Catalog) -> Catalog:
    """A second catalog object on the same database or folder (another writer)."""
    copy = pickle.loads(pickle.dumps(catalog))
    assert isinstance(copy, Catalog)
    return copy


def ids(table: Table) -> list[int]:
    return sorted(table.refresh().scan().to_arrow().column("id").to_pylist())


# -- a stale writer never commits into a re-created table ----------------------------------


def test_stale_handle_cannot_commit_into_a_recreated_table(catalog: Catalog) -> None:
    """The stale handle's base is version 2 of the old table; the new table is at
    version 2 too (on the filesystem catalog the very same path)."""
    catalog.create_namespace("db")
    old = catalog.create_table("db.t", OLD)
    old.append(old_rows(0))
    stale = catalog.load_table("db.t")
    catalog.drop_table("db.t")
    new = catalog.create_table("db.t", NEW)
    new.append(new_rows(4))
    if isinstance(catalog, FilesystemCatalog):
        assert stale.metadata_location == new.metadata_location  # what made it dangerous
    before = files_under(catalog.warehouse)

    with pytest.raises(CommitConflictError, match="re-created"):
        stale.append(old_rows(100))

    now = catalog.load_table("db.t")
    assert now.metadata.table_uuid == new.metadata.table_uuid
    assert now.metadata_location == new.metadata_location
    assert now.schema().column_names == ["key", "amount"]
    assert now.scan().to_arrow().num_rows == 4
    assert files_under(catalog.warehouse) == before  # the stale writer's files are gone


@pytest.mark.primitives
def test_lost_swap_retry_notices_the_recreated_table(catalog: Catalog) -> None:
    """The drop and re-create happen while the writer commits: its compare-and-swap
    is lost, and the retry (which reloads the table by name) must not rebase onto the
    new table."""
    catalog.create_namespace("db")
    writer = catalog.create_table("db.t", OLD)
    writer.append(old_rows(0))
    other = twin(catalog)
    real_commit = catalog.commit_metadata
    replaced: list[str] = []

    def commit_after_recreate(
        ident: tuple[str, ...], base: str, md: object, turn: str | None = None
    ) -> str:
        if not replaced:
            other.drop_table("db.t")
            fresh = other.create_table("db.t", NEW)
            fresh.append(new_rows(2))
            fresh.append(new_rows(3))
            replaced.append(fresh.metadata.table_uuid)
        return real_commit(ident, base, md, turn=turn)  # type: ignore[arg-type]

    catalog.commit_metadata = commit_after_recreate  # type: ignore[method-assign]
    before = data_files(catalog.warehouse)
    with pytest.raises(CommitConflictError, match="re-created"):
        writer.append(old_rows(10))
    now = other.load_table("db.t")
    assert now.metadata.table_uuid == replaced[0]
    assert now.schema().column_names == ["key", "amount"]
    assert now.scan().to_arrow().num_rows == 5
    assert len(now.snapshots()) == 2
    # the data files added are the new table's; the stale writer's are gone
    assert data_files(catalog.warehouse) - before == {
        t.file.file_path.removeprefix("file:") for t in now.scan().plan_files()
    }


@pytest.mark.primitives
def test_a_lost_swap_reads_the_pointer_once_before_trying_again(catalog: Catalog) -> None:
    """After losing the swap, the catalog's commit reads where the pointer went once (to
    tell a lost swap from a failed one, and to say where in the error) and starts its
    next attempt from there, without asking the catalog again."""
    catalog.create_namespace("db")
    writer = catalog.create_table("db.t", OLD)
    writer.append(old_rows(0))
    other = twin(catalog)
    real_swap, real_pointer, real_commit = (
        catalog.commit_metadata,
        catalog._metadata_location,
        catalog.commit,
    )
    reads: list[list[str]] = []  # per call of the catalog's commit, its pointer reads
    swaps: list[str] = []
    inside: list[bool] = [False]

    def swap_after_another(
        ident: tuple[str, ...], base: str, md: object, turn: str | None = None
    ) -> str:
        if not swaps:
            other.load_table("db.t").append(old_rows(100))  # wins the swap first
            reads[-1].clear()  # the reads of the commit's first attempt are not counted
        swaps.append(base)
        return real_swap(ident, base, md, turn=turn)  # type: ignore[arg-type]

    def pointer(ident: tuple[str, ...]) -> str:
        if inside[0]:
            reads[-1].append(ident[-1])
        return real_pointer(ident)

    def commit(*args: Any, **kwargs: Any) -> Any:
        reads.append([])
        inside[0] = True
        try:
            return real_commit(*args, **kwargs)
        finally:
            inside[0] = False

    catalog.commit_metadata = swap_after_another  # type: ignore[method-assign]
    catalog._metadata_location = pointer  # type: ignore[method-assign]
    catalog.commit = commit  # type: ignore[method-assign]
    writer.append(old_rows(10))
    assert len(swaps) == 2 and swaps[1] != swaps[0]  # lost once, then landed
    # the lost commit read the pointer once (the append then rebased on a fresh load)
    assert reads[0] == ["t"]
    assert catalog.load_table("db.t").scan().to_arrow().num_rows == 9


# -- appends keep rebasing; validating changes keep the retry count --------------------------


@pytest.fixture
def contended(catalog: Catalog) -> Iterator[tuple[Catalog, Table, Callable[[int], None]]]:
    """A table with one retry allowed, and ``interfere(n)``: before each of the next
    ``n`` swaps of ``catalog``, another writer (a second catalog object) really commits
    an append, so the swap is lost."""
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t",
        OLD,
        properties={
            "commit.retry.num-retries": "1",
            "commit.retry.min-wait-ms": "1",
            "commit.retry.max-wait-ms": "5",
        },
    )
    table.append(old_rows(0))
    other = twin(catalog).load_table("db.t")
    real_commit = catalog.commit_metadata
    left = [0]
    next_id = [1000]

    def commit(ident: tuple[str, ...], base: str, md: object, turn: str | None = None) -> str:
        if left[0] > 0:
            left[0] -= 1
            other.append(old_rows(next_id[0], 1))
            next_id[0] += 1
        return real_commit(ident, base, md, turn=turn)  # type: ignore[arg-type]

    def interfere(n: int) -> None:
        left[0] = n

    catalog.commit_metadata = commit  # type: ignore[method-assign]

    def no_queue(name: object, since: float) -> str:
        raise CatalogBusyError("no commit queue in these tests")

    # These tests count retries and timeouts. The interfering append runs inside this
    # writer's swap, so were this writer queued the append would wait behind its ticket
    # until the ticket expired; a writer that cannot queue backs off instead (the queue
    # has tests of its own, tests/catalog/test_commit_queue.py).
    catalog.join_commit_queue = no_queue  # type: ignore[method-assign]
    yield catalog, table, interfere


@pytest.mark.primitives
def test_append_keeps_rebasing_past_the_retry_count(
    contended: tuple[Catalog, Table, Callable[[int], None]],
) -> None:
    _catalog, table, interfere = contended
    interfere(6)  # six lost swaps against num-retries = 1
    table.append(old_rows(500))
    assert ids(table) == [0, 1, 2, 500, 501, 502, *range(1000, 1006)]


def live_data_files(table: Table) -> set[str]:
    return {t.file.file_path.removeprefix("file:") for t in table.refresh().scan().plan_files()}


@pytest.mark.primitives
def test_overwrite_keeps_the_retry_count(
    contended: tuple[Catalog, Table, Callable[[int], None]],
) -> None:
    catalog, table, interfere = contended
    interfere(6)
    with pytest.raises(CommitFailedError):
        table.overwrite(old_rows(0), "id < 3")
    interfere(0)
    # the two concurrent appends landed; the overwrite left no data file behind
    assert ids(table) == [0, 1, 2, 1000, 1001]
    assert data_files(catalog.warehouse) == live_data_files(table)


@pytest.mark.primitives
def test_append_gives_up_at_the_total_timeout(
    contended: tuple[Catalog, Table, Callable[[int], None]],
) -> None:
    catalog, table, interfere = contended
    table.set_properties({"commit.retry.total-timeout-ms": "0"})
    interfere(3)
    with pytest.raises(CommitFailedError):
        table.append(old_rows(500))
    interfere(0)
    assert ids(table) == [0, 1, 2, 1000]  # the other writer's one append, not ours
    assert data_files(catalog.warehouse) == live_data_files(table)


# -- a busy SQLite database is waited for, then retried cleanly ----------------------------


@pytest.fixture
def busy_sqlite(tmp_path: Path) -> Iterator[tuple[SqlCatalog, Table, str]]:
    db = str(tmp_path / "catalog.db")
    # The rollback journal, where a reader blocks a writer's COMMIT (WAL lets them pass:
    # tests/catalog/test_sqlite_wal.py).
    cat = SqlCatalog(
        "neve",
        f"sqlite:///{db}",
        str(tmp_path / "wh"),
        {"sqlite.busy-timeout-ms": "150", "sqlite.journal-mode": "delete"},
    )
    cat.create_namespace("db")
    table = cat.create_table(
        "db.t",
        OLD,
        properties={
            "commit.retry.num-retries": "2",
            "commit.retry.min-wait-ms": "1",
            "commit.retry.max-wait-ms": "5",
            "commit.retry.total-timeout-ms": "800",
        },
    )
    table.append(old_rows(0))
    yield cat, table, db
    cat.dispose()


def _reader_in_transaction(db: str, lock: str = "read") -> sqlite3.Connection:
    """A second connection holding a read transaction (a shared lock), as Iceberg-Java's
    JDBC catalog does while it reads, which in rollback-journal mode blocks COMMIT; or
    (``lock="write"``) a write transaction, which blocks BEGIN IMMEDIATE."""
    reader = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    assert reader.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    reader.execute("BEGIN IMMEDIATE" if lock == "write" else "BEGIN")
    reader.execute("SELECT count(*) FROM iceberg_tables").fetchall()
    return reader


@pytest.mark.parametrize("lock", ["read", "write"])
def test_busy_commit_is_retried_rolled_back_and_cleaned_up(
    busy_sqlite: tuple[SqlCatalog, Table, str], lock: str
) -> None:
    cat, table, db = busy_sqlite
    location = table.metadata_location
    before = files_under(cat.warehouse)
    reader = _reader_in_transaction(db, lock)
    try:
        with pytest.raises(CommitFailedError, match="locked") as info:
            table.set_properties({"k": "v"})
        assert info.value.retryable
        with pytest.raises(CommitFailedError, match="locked"):
            table.append(old_rows(10))
        with pytest.raises(NeveIOError, match="busy timeout"):
            cat.create_namespace("other")
    finally:
        reader.execute("COMMIT")
        reader.close()
    # nothing was committed, and every file the failed commits wrote is gone
    assert files_under(cat.warehouse) == before
    assert cat.load_table("db.t").metadata_location == location
    # no pooled connection was left inside a transaction: everything works again
    cat.create_namespace("other")
    assert cat.list_tables("db") == [("db", "t")]
    table.set_properties({"k": "v"})
    table.append(old_rows(10))
    assert ids(table) == [0, 1, 2, 10, 11, 12]
    assert cat.load_table("db.t").properties["k"] == "v"


def test_a_lock_released_within_the_busy_timeout_is_waited_for(tmp_path: Path) -> None:
    db = str(tmp_path / "catalog.db")
    cat = SqlCatalog(
        "neve",
        f"sqlite:///{db}",
        str(tmp_path / "wh"),
        {"sqlite.busy-timeout-ms": "20000", "sqlite.journal-mode": "delete"},
    )
    try:
        cat.create_namespace("db")
        table = cat.create_table(
            "db.t",
            OLD,
            properties={
                "commit.retry.num-retries": "0",
                "commit.retry.total-timeout-ms": "1",
            },
        )
        reader = _reader_in_transaction(db)
        release = threading.Timer(0.4, lambda: reader.execute("COMMIT"))
        release.start()
        started = time.monotonic()
        table.append(old_rows(0))  # no retry allowed: it must wait, not fail and retry
        assert time.monotonic() - started >= 0.3
        release.join()
        reader.close()
        assert ids(table) == [0, 1, 2]
    finally:
        cat.dispose()


def test_busy_timeout_property_is_checked(tmp_path: Path) -> None:
    from neve.errors import ValidationError

    with pytest.raises(ValidationError, match=r"sqlite\.busy-timeout-ms"):
        SqlCatalog(
            "neve", f"sqlite:///{tmp_path}/c.db", str(tmp_path), {"sqlite.busy-timeout-ms": "x"}
        )


@pytest.mark.postgres
def test_failed_postgres_commit_stays_unknown_and_keeps_the_connection_usable(
    catalog_factory: Callable[[str], Catalog],
) -> None:
    """On PostgreSQL a failed COMMIT may have been applied: the error stays
    CommitStateUnknownError and the new metadata file is kept. A deferred constraint
    trigger makes the server refuse the COMMIT itself."""
    cat = catalog_factory("postgres")
    assert isinstance(cat, SqlCatalog)
    cat.create_namespace("db")
    table = cat.create_table("db.t", OLD)
    fn, trigger = f"neve_fail_{cat.name}", f"neve_fail_{cat.name}"
    with cat.engine.begin() as conn:
        conn.exec_driver_sql(
            f"CREATE FUNCTION {fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            f"IF NEW.catalog_name = '{cat.name}' THEN RAISE EXCEPTION 'refused at commit'; "
            "END IF; RETURN NEW; END $$"
        )
        conn.exec_driver_sql(
            f"CREATE CONSTRAINT TRIGGER {trigger} AFTER UPDATE ON iceberg_tables "
            f"DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {fn}()"
        )
    try:
        with pytest.raises(CommitStateUnknownError, match="unknown"):
            table.set_properties({"k": "v"})
        kept = [p for p in files_under(table.location) if p.endswith(".metadata.json")]
        assert len(kept) == 2  # the new metadata file is kept: it may be referenced
    finally:
        with cat.engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TRIGGER {trigger} ON iceberg_tables")
            conn.exec_driver_sql(f"DROP FUNCTION {fn}()")
    # the connection that failed was dropped, not pooled mid-transaction
    fresh = cat.load_table("db.t")
    assert "k" not in fresh.properties
    fresh.set_properties({"k": "w"})
    assert cat.load_table("db.t").properties["k"] == "w"


def test_a_rebasing_commit_waits_at_most_what_the_retry_count_reaches() -> None:
    """Rebasing changes retry until the total timeout; their waits stop growing at
    min-wait * 2**num-retries (else a writer that keeps losing sleeps for minutes while
    another wins every race), while counted retries grow up to max-wait."""
    s = RetrySettings(num_retries=4, min_wait=0.1, max_wait=60.0, total_timeout=1800.0)
    rebasing = [s.backoff(n, rebases=True) for n in range(1, 40)]
    assert max(rebasing) <= 0.1 * 2**4 and max(rebasing[6:]) >= 0.1 * 2**4 / 2
    assert max(s.backoff(n) for n in range(12, 40)) > 0.1 * 2**4  # counted ones keep growing
    assert all(s.backoff(n) <= 60.0 for n in range(1, 200))
