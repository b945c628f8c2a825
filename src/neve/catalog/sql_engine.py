"""Connections of the SQL catalog: one SQLAlchemy engine per database URI and process,
and how SQLite is driven so that threads and processes share one database file.

SQLite runs in WAL mode where the file system supports it: readers and one writer then
proceed together, so a reader holding a transaction (a CLI listing, a notebook,
Iceberg-Java's JDBC catalog between two statements) no longer blocks a commit. On a
network file system (NFS, SMB/CIFS, sshfs and the like) WAL's shared memory does not
work, so neve keeps the rollback journal there; the catalog property
``sqlite.journal-mode`` (``wal``, ``delete`` or ``auto``, the default) decides
explicitly. Writing transactions run as ``BEGIN IMMEDIATE`` with a busy timeout
(``sqlite.busy-timeout-ms``, default 60000): writers queue for the lock instead of
failing, and a wait that runs out ends in a typed, retryable error
(:class:`~neve.errors.CatalogBusyError`, or :class:`~neve.errors.CommitFailedError`
for a commit, which the commit loop retries) after everything was rolled back.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError
from sqlalchemy.pool import StaticPool

from neve.errors import ValidationError

__all__ = [
    "SQLITE_BUSY_TIMEOUT",
    "SQLITE_JOURNAL_MODE",
    "WRITE_OPTION",
    "busy_timeout_ms",
    "engine_for",
    "forget_engine",
    "is_busy",
    "journal_mode",
    "network_file_system",
]

#: Catalog property: milliseconds SQLite waits for a lock before giving up.
SQLITE_BUSY_TIMEOUT = "sqlite.busy-timeout-ms"
#: Catalog property: ``auto`` (WAL unless on a network file system), ``wal`` or ``delete``.
SQLITE_JOURNAL_MODE = "sqlite.journal-mode"
_SQLITE_BUSY_TIMEOUT_MS = 60_000
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6  # primary result codes
#: Execution option marking a writing transaction (begun as BEGIN IMMEDIATE on SQLite).
WRITE_OPTION = "neve_writes"
#: File system types on which SQLite's WAL mode is unsafe (its shared memory index
#: needs a local file system; the SQLite documentation says so for network ones).
_NETWORK_FS = frozenset(
    {"nfs", "nfs4", "cifs", "smb", "smb2", "smbfs", "9p", "afs", "ncpfs", "glusterfs", "lustre"}
)

_engines: dict[tuple[str, float, str], Engine] = {}
_engines_lock = threading.Lock()


def _forget_engines_after_fork() -> None:
    # A forked child must not reuse the parent's pooled connections (SQLAlchemy's rule).
    global _engines_lock
    _engines_lock = threading.Lock()
    for engine in _engines.values():
        engine.dispose(close=False)
    _engines.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_engines_after_fork)


def busy_timeout_ms(properties: Mapping[str, str]) -> int:
    """The ``sqlite.busy-timeout-ms`` property (checked)."""
    raw = properties.get(SQLITE_BUSY_TIMEOUT)
    if raw is None:
        return _SQLITE_BUSY_TIMEOUT_MS
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = -1
    if value < 0:
        raise ValidationError(
            f"catalog property {SQLITE_BUSY_TIMEOUT}={raw!r} is not valid: it takes the "
            "milliseconds to wait for a locked SQLite database, an integer >= 0"
        )
    return value


def journal_mode(properties: Mapping[str, str]) -> str:
    """The ``sqlite.journal-mode`` property (checked): ``auto``, ``wal`` or ``delete``."""
    raw = str(properties.get(SQLITE_JOURNAL_MODE, "auto")).strip().lower()
    if raw not in ("auto", "wal", "delete"):
        raise ValidationError(
            f"catalog property {SQLITE_JOURNAL_MODE}={raw!r} is not valid: use 'auto' (WAL "
            "unless the database is on a network file system), 'wal' or 'delete'"
        )
    return raw


def network_file_system(path: str) -> str | None:
    """The type of the network file system ``path`` is on (``nfs4``, ``cifs`` ...), or
    None for a local one (read from ``/proc/self/mounts``; None where it is missing)."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return None
    real = os.path.realpath(path)
    best, best_type = "", None
    for parts in mounts:
        if len(parts) < 3:
            continue
        point = parts[1].replace("\\040", " ")
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, best_type = point, parts[2]
    if best_type is None:
        return None
    kind = best_type.lower()
    if kind in _NETWORK_FS or kind.startswith("fuse.sshfs"):
        return kind
    return None


def _wanted_journal(database: str | None, mode: str) -> str | None:
    """The journal mode to set on a SQLite file: None for in-memory databases."""
    if database in (None, "", ":memory:") or str(database).startswith("file:"):
        return None
    if mode != "auto":
        return mode
    folder = os.path.dirname(os.path.abspath(str(database))) or "."
    return "delete" if network_file_system(folder) else "wal"


def _new_engine(uri: str, busy_timeout_s: float, mode: str) -> Engine:
    try:
        url = make_url(uri)
    except ArgumentError as exc:
        raise ValidationError(
            f"cannot parse catalog URI {uri!r}: {exc}; use e.g. 'sqlite:////abs/path.db' or "
            "'postgresql+psycopg://user:password@host:5432/db'"
        ) from exc
    kwargs: dict[str, Any] = {}
    sqlite = url.get_backend_name() == "sqlite"
    if sqlite:
        connect_args: dict[str, Any] = {"timeout": busy_timeout_s}
        if url.database in (None, "", ":memory:"):
            # One shared connection, or every checkout would see a different empty database.
            kwargs["poolclass"] = StaticPool
            connect_args["check_same_thread"] = False
        kwargs["connect_args"] = connect_args
    else:
        kwargs["pool_pre_ping"] = True
    try:
        engine = create_engine(url, **kwargs)
    except (NoSuchModuleError, ImportError) as exc:
        hint = (
            "install the PostgreSQL driver: pip install 'neve[postgres]'"
            if url.get_backend_name() == "postgresql"
            else "install the SQLAlchemy driver for this database"
        )
        raise ValidationError(f"no database driver for {url.drivername!r}: {exc}; {hint}") from exc
    if sqlite:
        _serialize_sqlite_transactions(engine, _wanted_journal(url.database, mode))
    return engine


def _serialize_sqlite_transactions(engine: Engine, journal: str | None) -> None:
    """Begin SQLite transactions ourselves (SQLAlchemy's pysqlite recipe), writing ones
    as ``BEGIN IMMEDIATE``, and put the database in ``journal`` mode.

    Python's sqlite3 module otherwise starts transactions lazily before the first write,
    so a read-then-write transaction can hit SQLITE_BUSY without waiting, and its reads
    are not isolated from other writers. An immediate transaction takes the write lock
    up front (waiting for it with the busy timeout), so writers simply queue.
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        if journal is not None:
            # Persistent in the file; switching needs a moment without other
            # connections' transactions (the busy timeout waits for one), and a database
            # another process keeps in the other mode is used as it is.
            try:
                dbapi_connection.execute(f"PRAGMA journal_mode={journal}").fetchall()
            except Exception as exc:
                if not is_busy(exc):
                    raise

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        writes = conn.get_execution_options().get(WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if writes else "BEGIN")


def engine_for(uri: str, busy_timeout_s: float, mode: str = "auto") -> Engine:
    """The process's engine for ``uri`` (made on first use)."""
    with _engines_lock:
        engine = _engines.get((uri, busy_timeout_s, mode))
        if engine is None:
            engine = _engines[(uri, busy_timeout_s, mode)] = _new_engine(uri, busy_timeout_s, mode)
        return engine


def forget_engine(uri: str, busy_timeout_s: float, mode: str = "auto") -> None:
    """Close and forget the process's engine for ``uri`` (later calls reconnect)."""
    with _engines_lock:
        engine = _engines.pop((uri, busy_timeout_s, mode), None)
    if engine is not None:
        engine.dispose()


def is_busy(exc: BaseException) -> bool:
    """True for SQLite's "database is locked" (SQLITE_BUSY / SQLITE_LOCKED): the
    statement did nothing and may be repeated."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
    text = str(orig).lower()
    return type(orig).__name__ == "OperationalError" and "is locked" in text
