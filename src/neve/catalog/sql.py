"""The SQL catalog: table pointers in a relational database through SQLAlchemy Core.

It uses the same two tables as Iceberg-Java's JDBC catalog and pyiceberg's SqlCatalog
(:mod:`neve.catalog.sql_tables`), so one database can be shared by all three. neve
creates the ``iceberg_type`` column of Java's "V1" layout, works without it on
databases made by older clients, and keeps views (rows of type ``VIEW``) apart from
tables. Every namespace neve creates gets the ``exists`` = ``true`` row Java writes, so
it exists without other properties; the row is hidden from :meth:`namespace_properties`.
A namespace exists when it has a property row, holds a table, or has a child namespace
(Java's and pyiceberg's rule). Creating ``a.b`` also creates ``a`` when missing.

A commit writes the new metadata file, then swaps the pointer with one conditional
``UPDATE ... WHERE metadata_location = <base>`` and checks that exactly one row changed.
How SQLite is driven (WAL, ``BEGIN IMMEDIATE``, the busy timeout) is in
:mod:`neve.catalog.sql_engine`. When SQLite's busy timeout runs out, nothing was
committed: neve rolls the transaction back, removes the metadata file it wrote and
raises :class:`CommitFailedError` for a commit (the commit loop retries it like a lost
swap) and :class:`CatalogBusyError` (retryable) otherwise. On PostgreSQL a failed
``COMMIT`` may have been applied, so it stays :class:`CommitStateUnknownError`. No
connection ever goes back to the pool inside a transaction.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cached_property
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Select,
    Table,
    Update,
    and_,
    bindparam,
    delete,
    insert,
    inspect,
    or_,
    select,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from neve.catalog.base import Catalog, Identifier
from neve.catalog.commit_queue import queued_first
from neve.catalog.sql_engine import (
    SQLITE_BUSY_TIMEOUT,
    WRITE_OPTION,
    busy_timeout_ms,
    engine_for,
    forget_engine,
    is_busy,
    journal_mode,
)
from neve.catalog.sql_namespaces import SqlNamespaces
from neve.catalog.sql_queue import SqlCommitQueue
from neve.catalog.sql_tables import (
    ICEBERG_TABLES,
    NAMESPACE_PROPERTIES,
    SCHEMA,
    TABLE_TYPE,
    check_name,
    dotted_name,
    parse_version,
    table_key,
    table_match,
)
from neve.catalog.sql_views import SqlViews
from neve.errors import (
    CatalogBusyError,
    CommitFailedError,
    CommitStateUnknownError,
    NeveError,
    NeveIOError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from neve.spec.table_metadata import TableMetadata

__all__ = ["SQLITE_BUSY_TIMEOUT", "SqlCatalog"]

_T = ICEBERG_TABLES.c
_P = NAMESPACE_PROPERTIES.c


class SqlCatalog(SqlNamespaces, SqlViews, Catalog):
    """A catalog in a SQL database (SQLite, PostgreSQL), shared with Iceberg-Java's
    JDBC catalog and pyiceberg's SqlCatalog of the same ``name``."""

    def __init__(
        self,
        name: str,
        uri: str,
        warehouse: str,
        properties: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(name, warehouse, properties)
        self.uri = uri
        self._busy_timeout_s = busy_timeout_ms(self.properties) / 1000.0
        self._journal = journal_mode(self.properties)
        self._typed = self._ensure_tables()
        self._queue = SqlCommitQueue(self)
        self._queued = self._queue.create()

    def __getstate__(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "uri": self.uri,
            "warehouse": self.warehouse,
            "properties": self.properties,
            "typed": self._typed,
            "queued": self._queued,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        Catalog.__init__(self, state["name"], state["warehouse"], state["properties"])
        self.uri = state["uri"]
        self._busy_timeout_s = busy_timeout_ms(self.properties) / 1000.0
        self._journal = journal_mode(self.properties)
        self._typed = state["typed"]
        self._queue = SqlCommitQueue(self)
        self._queued = state.get("queued", False)

    def __repr__(self) -> str:
        return f"SqlCatalog(name={self.name!r}, uri={self._safe_uri()!r}, warehouse={self.warehouse!r})"

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (shared in a process by the catalogs on the same URI with
        the same busy timeout)."""
        return engine_for(self.uri, self._busy_timeout_s, self._journal)

    def dispose(self) -> None:
        """Close the pooled connections of this catalog's database; later calls reconnect."""
        forget_engine(self.uri, self._busy_timeout_s, self._journal)

    def _safe_uri(self) -> str:
        try:
            return make_url(self.uri).render_as_string(hide_password=True)
        except ArgumentError:
            return "<invalid URI>"

    # -- database plumbing -----------------------------------------------------------

    @contextmanager
    def _db(self, action: str) -> Iterator[None]:
        """Translate SQLAlchemy errors that escape ``action`` into neve errors.

        IntegrityError passes through: the callers that insert turn it into the right
        "already exists" error."""
        try:
            yield
        except (NeveError, IntegrityError):
            raise
        except SQLAlchemyError as exc:
            raise self._db_error(action, exc) from exc

    def _db_error(self, action: str, exc: SQLAlchemyError) -> NeveIOError:
        cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
        if self._sqlite and is_busy(exc):
            return CatalogBusyError(
                f"catalog database {self._safe_uri()} was locked while {action}: another "
                "connection held a lock for longer than the busy timeout "
                f"({SQLITE_BUSY_TIMEOUT}={int(self._busy_timeout_s * 1000)}); nothing was "
                "changed. Retry, end the other connection's transaction, or raise the timeout"
            )
        hint = "check that the database is reachable and that the URI and credentials are right"
        return NeveIOError(
            f"catalog database {self._safe_uri()} failed while {action}: "
            f"{type(cause).__name__}: {cause}; {hint}"
        )

    @property
    def _sqlite(self) -> bool:
        return self.uri.startswith("sqlite")

    def _discard_transaction(self, conn: Connection) -> None:
        """End the transaction of a connection whose COMMIT failed.

        SQLAlchemy counts a transaction as over once COMMIT was sent, so neither it nor
        the pool rolls it back, yet SQLite keeps it open after SQLITE_BUSY: the next
        user of the pooled connection would fail with "cannot start a transaction
        within a transaction". Roll back on SQLite; elsewhere (where the connection's
        state is unknown) drop the connection."""
        if self._sqlite:
            try:
                dbapi = conn.connection.dbapi_connection
                if dbapi is not None:
                    dbapi.rollback()
                return
            except Exception:
                pass  # drop the connection instead
        with contextlib.suppress(Exception):
            conn.invalidate()

    @contextmanager
    def reading(self, action: str) -> Iterator[Connection]:
        """A connection for reading; database errors become neve's, naming ``action``."""
        with self._db(action), self.engine.connect() as conn:
            yield conn

    @contextmanager
    def writing(self, action: str) -> Iterator[Connection]:
        """A connection in a writing transaction, committed when the block ends (rolled
        back when the block or the COMMIT fails)."""
        with self._db(action), self.engine.connect() as conn:
            conn.execution_options(**{WRITE_OPTION: True})
            trans = conn.begin()
            try:
                yield conn
            except BaseException:
                if trans.is_active:
                    trans.rollback()
                raise
            try:
                trans.commit()
            except SQLAlchemyError:
                self._discard_transaction(conn)
                raise

    def insert_if_absent(self, conn: Connection, table: Table, row: dict[str, Any]) -> bool:
        """Insert a row unless its key exists (a savepoint keeps the transaction alive
        when a concurrent writer inserted it first). True when inserted."""
        try:
            with conn.begin_nested():
                conn.execute(insert(table).values(row))
        except IntegrityError:
            return False
        return True

    def _ensure_tables(self) -> bool:
        """Create the catalog tables when missing; True when ``iceberg_type`` exists."""
        with self._db("creating the catalog tables"):
            engine = self.engine
            if not self._tables_present(engine):
                try:
                    SCHEMA.create_all(engine, checkfirst=True)
                except DBAPIError:
                    # A failed COMMIT may leave a pooled connection mid-transaction: drop
                    # them (an in-memory SQLite database lives in its one connection).
                    if not (self._sqlite and isinstance(engine.pool, StaticPool)):
                        engine.dispose()
                    # Another process may have created them at the same moment.
                    if not self._tables_present(engine):
                        raise
            with engine.connect() as conn:
                columns = {c["name"] for c in inspect(conn).get_columns("iceberg_tables")}
            return "iceberg_type" in columns

    @staticmethod
    def _tables_present(engine: Engine) -> bool:
        with engine.connect() as conn:
            names = set(inspect(conn).get_table_names())
        return {"iceberg_tables", "iceberg_namespace_properties"} <= names

    @property
    def typed(self) -> bool:
        """Whether the database has Java's ``iceberg_type`` column (views need it)."""
        return self._typed

    def _type_filter(self) -> ColumnElement[bool] | None:
        # Rows of views (iceberg_type 'VIEW', written by Java or Rust) are not tables.
        if not self._typed:
            return None
        return or_(_T.iceberg_type == TABLE_TYPE, _T.iceberg_type.is_(None))

    @cached_property
    def _table_where(self) -> ColumnElement[bool]:
        """The row of one table (not a view), built once per catalog; its name is
        bound when the statement runs (:meth:`_table_key`)."""
        cond = table_match(ICEBERG_TABLES)
        type_filter = self._type_filter()
        return cond if type_filter is None else and_(cond, type_filter)

    def _table_key(self, ident: Identifier) -> dict[str, str]:
        return table_key(self.name, ident)

    @cached_property
    def _location_query(self) -> Select[tuple[str]]:
        return select(_T.metadata_location).where(self._table_where)

    @cached_property
    def _swap_statement(self) -> Update:
        """The compare-and-swap: move the pointer from ``base`` to ``new``."""
        return (
            update(ICEBERG_TABLES)
            .where(self._table_where, _T.metadata_location == bindparam("base"))
            .values(
                metadata_location=bindparam("new"), previous_metadata_location=bindparam("base")
            )
        )

    def _table_row(self, ident: Identifier, metadata_location: str) -> dict[str, Any]:
        row: dict[str, Any] = {
            "catalog_name": self.name,
            "table_namespace": dotted_name(ident[:-1]),
            "table_name": check_name(ident[-1]),
            "metadata_location": metadata_location,
            "previous_metadata_location": None,
        }
        if self._typed:
            row["iceberg_type"] = TABLE_TYPE
        return row

    def _list_tables(self, namespace: Identifier) -> list[Identifier]:
        dotted = dotted_name(namespace)
        with self.reading(f"listing tables of {dotted}") as conn:
            exists = self._namespace_exists(conn, dotted)
        if not exists:
            others = self._other_catalog_names(
                and_(_T.table_namespace == dotted, _T.catalog_name != self.name), _T.catalog_name
            )
            raise NoSuchNamespaceError(
                f"namespace {dotted} does not exist in catalog {self.name!r}"
                + (
                    self._elsewhere_hint(others)
                    if others
                    else "; list_namespaces() shows those that do"
                )
            )
        with self.reading(f"listing tables of {dotted}") as conn:
            cond = and_(_T.catalog_name == self.name, _T.table_namespace == dotted)
            type_filter = self._type_filter()
            if type_filter is not None:
                cond = and_(cond, type_filter)
            names = conn.execute(select(_T.table_name).where(cond)).scalars().all()
        return [(*namespace, n) for n in names]

    def _metadata_location(self, ident: Identifier) -> str:
        with self.reading(f"loading table {'.'.join(ident)}") as conn:
            loc = conn.execute(self._location_query, self._table_key(ident)).scalar_one_or_none()
        if not loc:
            others = self._other_catalog_names(
                and_(
                    _T.table_namespace == dotted_name(ident[:-1]),
                    _T.table_name == ident[-1],
                    _T.catalog_name != self.name,
                ),
                _T.catalog_name,
            )
            raise NoSuchTableError(
                f"table {'.'.join(ident)} does not exist in catalog {self.name!r}"
                + (
                    self._elsewhere_hint(others)
                    if others
                    else f"; list_tables({'.'.join(ident[:-1])!r}) shows the tables there"
                )
            )
        return str(loc)

    def _other_catalog_names(self, where: Any, column: Any) -> list[str]:
        """Catalog names other than this one with rows matching ``where`` (tables
        written by another tool under its own catalog name, e.g. pyiceberg's
        ``default``)."""
        with self.reading("looking for other catalog names") as conn:
            found = conn.execute(select(column).where(where).distinct()).scalars().all()
        return sorted(str(n) for n in found)

    def _elsewhere_hint(self, names: list[str]) -> str:
        listed = ", ".join(repr(n) for n in names)
        return (
            f"; this database holds it under catalog name {listed} (pyiceberg's SqlCatalog "
            f"stores rows under the name it was given). Connect with "
            f"neve.connect(uri, warehouse, name={names[0]!r})"
        )

    def _insert_table(self, ident: Identifier, metadata_location: str) -> None:
        try:
            with self.writing(f"registering table {'.'.join(ident)}") as conn:
                conn.execute(
                    insert(ICEBERG_TABLES).values(self._table_row(ident, metadata_location))
                )
        except IntegrityError as exc:
            raise TableAlreadyExistsError(
                f"table {'.'.join(ident)} exists already; load it, or drop it first"
            ) from exc

    def _create_table(self, ident: Identifier, metadata: TableMetadata) -> str:
        location = self.new_metadata_location(metadata, 0)
        try:
            self.write_metadata(metadata, location)
        except BaseException:
            with contextlib.suppress(Exception):
                self.io.delete(location)  # a partly written file
            raise
        try:
            self._insert_table(ident, location)
        except TableAlreadyExistsError:
            self.io.delete(location)
            raise
        # On other errors the file stays: the insert may have committed, and an unused
        # file is harmless where a row pointing at a deleted one is not.
        return location

    def _register_table(self, ident: Identifier, metadata_location: str) -> str:
        self._insert_table(ident, metadata_location)
        return metadata_location

    def swap_checks_base(self) -> bool:
        return True  # the conditional UPDATE

    def _commit(self, ident: Identifier, base_location: str, metadata: TableMetadata) -> str:
        return self._commit_many([(ident, base_location, metadata)])[0]

    def commit_metadata(
        self,
        ident: Identifier,
        base_location: str,
        metadata: TableMetadata,
        *,
        turn: str | None = None,
    ) -> str:
        return self._commit_many([(ident, base_location, metadata)], turn)[0]

    # -- the commit queue (neve.catalog.commit_queue) --------------------------------

    @property
    def commit_queue_supported(self) -> bool:
        return self._queued

    def queued_ahead(self, ident: Identifier, turn: str | None) -> bool:
        """Whether an older writer than ``turn`` (None: a committer without a ticket) is
        queued for ``ident``, so that a swap made now would be refused."""
        return self._queued and self._queue.ahead(ident, turn)

    def _join_queue(self, ident: Identifier, since: float, ticket: str) -> str:
        return self._queue.join(ident, since, ticket)

    def _queue_turn(self, ident: Identifier, ticket: str) -> bool:
        return self._queue.turn(ident, ticket)

    def _leave_queue(self, ident: Identifier, ticket: str) -> None:
        self._queue.leave(ident, ticket)

    def _write_new_metadata(
        self, changes: Sequence[tuple[Identifier, str, TableMetadata]]
    ) -> list[str]:
        written: list[str] = []
        try:
            for _ident, base_location, metadata in changes:
                location = self.new_metadata_location(metadata, parse_version(base_location) + 1)
                written.append(location)
                self.write_metadata(metadata, location)
        except BaseException:
            for location in written:
                with contextlib.suppress(Exception):
                    self.io.delete(location)  # a partly written file, or one not needed
            raise
        return written

    def _commit_many(
        self, changes: Sequence[tuple[Identifier, str, TableMetadata]], turn: str | None = None
    ) -> list[str]:
        """Write each new metadata file, then move every pointer in one database
        transaction; any pointer that moved meanwhile aborts them all, and so does an
        older writer than ``turn`` (the committer's ticket) queued for one of the tables
        (:mod:`neve.catalog.commit_queue`)."""
        name = ", ".join(".".join(ident) for ident, _b, _m in changes)
        new_locations = self._write_new_metadata(changes)

        def forget() -> None:
            for location in new_locations:
                self.io.delete(location)

        try:
            conn = self.engine.connect().execution_options(**{WRITE_OPTION: True})
        except SQLAlchemyError as exc:
            forget()
            raise self._db_error(f"committing to {name} (nothing was changed)", exc) from exc
        with conn:
            try:
                trans = conn.begin()
                lost = None
                queued = next(
                    (
                        ident
                        for ident, _b, _m in changes
                        if self._queued and self._queue.refuses(conn, ident, turn)
                    ),
                    None,
                )
                for (ident, base_location, _md), new_location in zip(
                    changes if queued is None else [], new_locations, strict=False
                ):
                    swap = {**self._table_key(ident), "base": base_location, "new": new_location}
                    if conn.execute(self._swap_statement, swap).rowcount != 1:
                        lost = (ident, base_location)
                        break
            except SQLAlchemyError as exc:
                # Nothing was committed; closing the connection rolls back what began.
                forget()
                if self._sqlite and is_busy(exc):
                    raise self._busy(name, exc) from exc
                raise self._db_error(f"committing to {name} (nothing was changed)", exc) from exc
            if queued is not None:
                trans.rollback()
                forget()
                raise queued_first(".".join(queued))
            if lost is not None:
                trans.rollback()
                forget()
                self._raise_lost_swap(*lost)
            try:
                if self._queued and turn is not None:  # the turn ends with the swap
                    for ident, _b, _m in changes:
                        self._queue.remove(conn, ident, turn)
                trans.commit()
            except SQLAlchemyError as exc:
                self._discard_transaction(conn)
                if self._sqlite and is_busy(exc):
                    # SQLite answers SQLITE_BUSY before anything is written: the
                    # transaction was rolled back above and the swap did not happen.
                    forget()
                    raise self._busy(name, exc) from exc
                raise CommitStateUnknownError(
                    f"the commit to {name} was sent but its outcome is unknown ({exc}); "
                    f"the new metadata {', '.join(new_locations)} was kept. Load the table to "
                    "see whether it points there before retrying"
                ) from exc
        return new_locations

    def _busy(self, name: str, exc: SQLAlchemyError) -> CommitFailedError:
        return CommitFailedError(
            f"the catalog database was locked by another connection for longer than the "
            f"busy timeout ({SQLITE_BUSY_TIMEOUT}={int(self._busy_timeout_s * 1000)}) while "
            f"committing to {name} ({exc.orig if isinstance(exc, DBAPIError) else exc}); "
            "nothing was committed. Retry (commits retry this on their own), or end the "
            "other connection's transaction"
        )

    def _raise_lost_swap(self, ident: Identifier, base_location: str) -> None:
        name = ".".join(ident)
        try:
            current = self._metadata_location(ident)
        except NoSuchTableError:
            raise NoSuchTableError(
                f"table {name} was dropped while committing to it; nothing was changed"
            ) from None
        raise CommitFailedError(
            f"table {name} was changed by another writer (its metadata moved from "
            f"{base_location} to {current}); refresh the table and retry",
            moved_to=current,
        )

    def _drop_table(self, ident: Identifier) -> None:
        with self.writing(f"dropping table {'.'.join(ident)}") as conn:
            dropped = conn.execute(
                delete(ICEBERG_TABLES).where(self._table_where), self._table_key(ident)
            ).rowcount
        if dropped != 1:
            raise NoSuchTableError(f"table {'.'.join(ident)} does not exist")

    def _rename_table(self, src: Identifier, dst: Identifier) -> None:
        try:
            with self.writing(f"renaming table {'.'.join(src)}") as conn:
                moved = conn.execute(
                    update(ICEBERG_TABLES)
                    .where(self._table_where)
                    .values(
                        table_namespace=dotted_name(dst[:-1]),
                        table_name=check_name(dst[-1]),
                    ),
                    self._table_key(src),
                ).rowcount
        except IntegrityError as exc:
            raise TableAlreadyExistsError(
                f"cannot rename to {'.'.join(dst)}: a table of that name exists"
            ) from exc
        if moved != 1:
            raise NoSuchTableError(f"table {'.'.join(src)} does not exist")
