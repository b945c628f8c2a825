"""The catalog contract. A catalog maps table names to the location of their current
metadata file and swaps that location atomically on commit; everything else (building
metadata, writing data and manifests) happens in the table layer.

Subclasses implement the primitives marked abstract. The public methods here turn them
into the user-facing API shared by every catalog.
"""

from __future__ import annotations

import contextlib
import re
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from neve.catalog.commit_queue import new_ticket
from neve.catalog.views import ViewCatalog
from neve.errors import (
    CommitFailedError,
    NamespaceAlreadyExistsError,
    NeveError,
    NeveIOError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
    UnsupportedFormatVersionError,
    ValidationError,
)
from neve.io.fileio import FileIO
from neve.io.locations import metadata_file_path
from neve.spec.metadata_builder import apply_updates, next_metadata
from neve.spec.metadata_json import metadata_from_bytes, metadata_to_bytes
from neve.spec.requirements import TableRequirement
from neve.spec.schema import Schema
from neve.spec.table_metadata import TableMetadata
from neve.spec.updates import TableUpdate
from neve.table.create import new_table_metadata
from neve.table.maintenance import purge_reachable, purge_table_files
from neve.table.table import Table

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Catalog", "CommitResult", "Identifier", "parse_identifier"]

#: How often :meth:`Catalog.commit` applies a change again after losing the swap.
_SWAP_ATTEMPTS = 4
#: Parsed metadata files kept per catalog (only files that never change, see
#: :meth:`Catalog.immutable_location`).
_METADATA_CACHE_SIZE = 32
#: Iceberg-Java's metadata file names carry a UUID, so none is ever written twice.
_UUID_NAME = re.compile(
    r"^\d+-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}(?:\.gz)?\.metadata\.json"
)


@dataclass(frozen=True)
class CommitResult:
    """What a commit made: the new metadata and the location of its file."""

    metadata: TableMetadata
    metadata_location: str


Identifier = tuple[str, ...]


def parse_identifier(name: str | Sequence[str]) -> Identifier:
    """``"db.events"`` or ``("db", "events")`` -> ``("db", "events")``."""
    if isinstance(name, str):
        parts = tuple(name.split("."))
    elif isinstance(name, (tuple, list)) and all(isinstance(p, str) for p in name):
        parts = tuple(name)
    else:
        raise ValidationError(
            f"invalid name {name!r}: give a string such as 'db.events' or a tuple of strings"
        )
    if not parts or any(not p for p in parts):
        raise ValidationError(
            f"invalid name {name!r}: use 'namespace.table' (dots separate levels)"
        )
    return parts


def _table_ident(name: str | Sequence[str]) -> Identifier:
    ident = parse_identifier(name)
    if len(ident) < 2:
        raise ValidationError(
            f"table name {name!r} needs a namespace: use 'namespace.table', e.g. 'db.events'"
        )
    return ident


class Catalog(ViewCatalog, ABC):
    """Base of all catalogs (tables here; views in :class:`ViewCatalog`)."""

    def __init__(self, name: str, warehouse: str, properties: Mapping[str, str] | None = None):
        self.name = name
        self.warehouse = warehouse.rstrip("/")
        self.properties = dict(properties or {})
        self.io = FileIO(self.properties)
        self._init_caches()

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        for key in ("_cache_lock", "_metadata_cache", "_latest"):
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._init_caches()

    def dispose(self) -> None:
        """Close what the catalog holds open (pooled database connections, HTTP
        connections); later calls open them again. A filesystem catalog holds nothing."""

    def _init_caches(self) -> None:
        """The caches a catalog keeps (also after unpickling): parsed metadata by
        location, and per table the version this catalog last loaded or committed."""
        self._cache_lock = threading.Lock()
        self._metadata_cache: OrderedDict[str, TableMetadata] = OrderedDict()
        self._latest: dict[Identifier, tuple[str, TableMetadata]] = {}

    # -- primitives for subclasses ----------------------------------------------------

    @abstractmethod
    def _create_namespace(self, namespace: Identifier, properties: Mapping[str, str]) -> None:
        """Create a namespace; raise NamespaceAlreadyExistsError if it exists."""

    @abstractmethod
    def _namespace_properties(self, namespace: Identifier) -> dict[str, str]:
        """Properties of a namespace; raise NoSuchNamespaceError when absent."""

    @abstractmethod
    def _update_namespace_properties(
        self, namespace: Identifier, removals: set[str], updates: Mapping[str, str]
    ) -> None: ...

    @abstractmethod
    def _drop_namespace(self, namespace: Identifier) -> None:
        """Drop an empty namespace; NoSuchNamespaceError / NamespaceNotEmptyError."""

    @abstractmethod
    def _list_namespaces(self, parent: Identifier) -> list[Identifier]: ...

    @abstractmethod
    def _list_tables(self, namespace: Identifier) -> list[Identifier]: ...

    @abstractmethod
    def _metadata_location(self, ident: Identifier) -> str:
        """Location of the table's current metadata file; NoSuchTableError when absent."""

    @abstractmethod
    def _create_table(self, ident: Identifier, metadata: TableMetadata) -> str:
        """Write the first metadata file and register the table atomically.

        Raises TableAlreadyExistsError (after removing the file it wrote) when the name
        is taken. Returns the metadata location."""

    @abstractmethod
    def _register_table(self, ident: Identifier, metadata_location: str) -> str:
        """Register an existing metadata file; returns the location the catalog tracks."""

    @abstractmethod
    def _commit(self, ident: Identifier, base_location: str, metadata: TableMetadata) -> str:
        """Write ``metadata`` as a new version and swap the pointer from
        ``base_location`` to it atomically. Raise CommitFailedError (after removing the
        new file) when the pointer moved, CommitStateUnknownError when the outcome is
        unknown. Returns the new metadata location."""

    @abstractmethod
    def _drop_table(self, ident: Identifier) -> None:
        """Remove the catalog entry; NoSuchTableError when absent."""

    @abstractmethod
    def _rename_table(self, src: Identifier, dst: Identifier) -> None: ...

    def _check_namespace(self, namespace: Identifier) -> None:
        self._namespace_properties(namespace)

    def default_table_location(self, ident: Identifier) -> str:
        return "/".join([self.warehouse, *ident[:-1]]) + f"/{ident[-1]}"

    # -- helpers for subclasses --------------------------------------------------------

    def new_metadata_location(self, metadata: TableMetadata, version: int) -> str:
        """``<location>/metadata/<version:05d>-<uuid>.metadata.json`` (Iceberg-Java's)."""
        return metadata_file_path(metadata.location, metadata.properties, version)

    def write_metadata(
        self, metadata: TableMetadata, location: str, exclusive: bool = False
    ) -> None:
        compress = location.endswith(".gz.metadata.json")
        data = metadata_to_bytes(metadata, compress=compress)
        if exclusive:
            self.io.create_exclusive(location, data)
        else:
            self.io.write_bytes(location, data)

    def immutable_location(self, location: str) -> bool:
        """Whether the metadata file at ``location`` never changes once written, so a
        parsed copy may be kept: names with a UUID (Iceberg-Java's), and every version
        file of a catalog that never writes a version twice."""
        return _UUID_NAME.match(location.rsplit("/", 1)[-1]) is not None

    def _remember(self, ident: Identifier, location: str, metadata: TableMetadata) -> None:
        # kept parsed: a commit's next attempt and the next load start from it (parsing
        # a long history costs milliseconds even where reading the file is cheap)
        keep = self.immutable_location(location)
        with self._cache_lock:
            self._latest[ident] = (location, metadata)
            if keep:
                self._metadata_cache[location] = metadata
                self._metadata_cache.move_to_end(location)
                while len(self._metadata_cache) > _METADATA_CACHE_SIZE:
                    self._metadata_cache.popitem(last=False)

    def forget(self, ident: Identifier) -> None:
        """Drop what this catalog remembers of a table's latest version."""
        with self._cache_lock:
            self._latest.pop(ident, None)

    def latest_known(self, ident: Identifier) -> tuple[str, TableMetadata] | None:
        """The version of a table this catalog last loaded or committed (location and
        metadata), if any; it may be stale."""
        with self._cache_lock:
            return self._latest.get(ident)

    def read_metadata(self, location: str) -> TableMetadata:
        """Read and parse a metadata file; a damaged or foreign file is a
        :class:`NeveIOError` naming it (the caller's request was fine, the file is not).
        Files that never change are kept parsed (a few dozen per catalog)."""
        with self._cache_lock:
            cached = self._metadata_cache.get(location)
        if cached is not None:
            return cached
        data = self.io.read_bytes(location)
        try:
            return metadata_from_bytes(data)
        except UnsupportedFormatVersionError:
            raise  # a newer table, not a damaged one
        except ValidationError as exc:
            raise NeveIOError(
                f"metadata file {location} is damaged or not Iceberg table metadata: {exc}; "
                "restore the file, or register an earlier metadata file of the table"
            ) from exc

    # -- namespaces -------------------------------------------------------------------

    def create_namespace(
        self, namespace: str | Sequence[str], properties: Mapping[str, str] | None = None
    ) -> None:
        self._create_namespace(parse_identifier(namespace), dict(properties or {}))

    def create_namespace_if_not_exists(
        self, namespace: str | Sequence[str], properties: Mapping[str, str] | None = None
    ) -> None:
        with contextlib.suppress(NamespaceAlreadyExistsError):
            self.create_namespace(namespace, properties)

    def namespace_exists(self, namespace: str | Sequence[str]) -> bool:
        try:
            self._namespace_properties(parse_identifier(namespace))
            return True
        except NoSuchNamespaceError:
            return False

    def list_namespaces(self, parent: str | Sequence[str] = ()) -> list[Identifier]:
        p = parse_identifier(parent) if parent else ()
        return sorted(self._list_namespaces(p))

    def namespace_properties(self, namespace: str | Sequence[str]) -> dict[str, str]:
        return self._namespace_properties(parse_identifier(namespace))

    def update_namespace_properties(
        self,
        namespace: str | Sequence[str],
        removals: Iterable[str] = (),
        updates: Mapping[str, str] | None = None,
    ) -> None:
        self._update_namespace_properties(
            parse_identifier(namespace), set(removals), dict(updates or {})
        )

    def drop_namespace(self, namespace: str | Sequence[str]) -> None:
        self._drop_namespace(parse_identifier(namespace))

    # -- tables ------------------------------------------------------------------------

    def list_tables(self, namespace: str | Sequence[str]) -> list[Identifier]:
        return sorted(self._list_tables(parse_identifier(namespace)))

    def table_exists(self, name: str | Sequence[str]) -> bool:
        try:
            self._metadata_location(_table_ident(name))
            return True
        except NoSuchTableError:
            return False

    def create_table(
        self,
        name: str | Sequence[str],
        schema: Schema | pa.Schema,
        partition_by: Sequence[str] | None = None,
        *,
        sort_by: Sequence[str] | None = None,
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
        format_version: int | None = None,
        primary_key: Sequence[str] = (),
    ) -> Table:
        """Create a table. ``partition_by`` takes terms such as ``"day(ts)"``,
        ``"bucket(16, id)"``, ``"truncate(4, name)"`` or a column name.

        ``primary_key`` names the key columns (the schema's identifier fields; made
        required) that ``merge`` and ``upsert`` match rows on; for large key tables
        partition by a bucket of the key, e.g. ``partition_by=["bucket(16, id)"]``.
        Tables of format version 2 and later change rows merge-on-read (deletion
        vectors in v3, position delete files in v2) unless ``write.delete.mode``,
        ``write.update.mode`` or ``write.merge.mode`` say ``copy-on-write``.

        The format version is ``format_version``, else the reserved property
        ``format-version`` (not stored, as in Iceberg-Java), else 2; the two must agree
        when both are given. Properties neve reads are checked (a
        :class:`ValidationError` names a bad one)."""
        ident = _table_ident(name)
        self._namespace_properties(ident[:-1])  # NoSuchNamespaceError when missing
        if self.table_exists(ident):
            raise TableAlreadyExistsError(
                f"table {'.'.join(ident)} exists already; load it, or drop it first"
            )
        md = new_table_metadata(
            schema,
            partition_by=partition_by or (),
            sort_by=sort_by or (),
            location=(location or self.default_table_location(ident)).rstrip("/"),
            properties=properties or {},
            format_version=format_version,
            primary_key=primary_key,
        )
        loc = self._create_table(ident, md)
        self._remember(ident, loc, md)
        return Table(ident, md, loc, self)

    def create_table_metadata(self, name: str | Sequence[str], metadata: TableMetadata) -> str:
        """Create a table from metadata made elsewhere (a REST server's create request,
        a staged create); returns its metadata location."""
        ident = _table_ident(name)
        self._namespace_properties(ident[:-1])
        if self.table_exists(ident):
            raise TableAlreadyExistsError(
                f"table {'.'.join(ident)} exists already; load it, or drop it first"
            )
        return self._create_table(ident, metadata)

    def load_table(self, name: str | Sequence[str]) -> Table:
        ident = _table_ident(name)
        loc = self._metadata_location(ident)
        md = self.read_metadata(loc)
        self._remember(ident, loc, md)
        return Table(ident, md, loc, self)

    def register_table(self, name: str | Sequence[str], metadata_location: str) -> Table:
        """Track a table written by anyone, given its current metadata file."""
        ident = _table_ident(name)
        self._namespace_properties(ident[:-1])
        try:
            md = self.read_metadata(metadata_location)
        except NeveIOError as exc:
            raise NeveIOError(
                f"cannot read metadata {metadata_location!r} to register {'.'.join(ident)}: {exc}"
            ) from exc
        if self.table_exists(ident):
            raise TableAlreadyExistsError(
                f"table {'.'.join(ident)} exists already; pick another name or drop it first"
            )
        loc = self._register_table(ident, metadata_location)
        self._remember(ident, loc, md)
        return Table(ident, md, loc, self)

    def drop_table(self, name: str | Sequence[str], purge: bool = False) -> None:
        """Remove a table from the catalog; with ``purge`` also delete its files.

        Purge deletes everything below the table's location that belongs to it (data,
        manifests, every metadata file, and what crashed or failed writers left), but
        not a folder below it that holds another table; outside the location it deletes
        only files the table's metadata reaches inside ``write.data.path`` /
        ``write.metadata.path``, never files added from elsewhere
        (:func:`neve.table.maintenance.purge_table_files` states the rule)."""
        ident = _table_ident(name)
        self.forget(ident)
        if not purge:
            self._drop_table(ident)
            return
        table = self.load_table(ident)
        reachable = purge_reachable(table)
        self._drop_table(ident)
        self.forget(ident)
        purge_table_files(table, reachable)

    def rename_table(self, src: str | Sequence[str], dst: str | Sequence[str]) -> None:
        s, d = _table_ident(src), _table_ident(dst)
        self._namespace_properties(d[:-1])
        if self.table_exists(d):
            raise TableAlreadyExistsError(
                f"cannot rename to {'.'.join(d)}: a table of that name exists"
            )
        self.forget(s)
        self._rename_table(s, d)

    def commit(
        self,
        name: str | Sequence[str],
        requirements: Sequence[TableRequirement],
        updates: Sequence[TableUpdate],
        *,
        turn: str | None = None,
    ) -> CommitResult:
        """Commit a change as the Iceberg REST protocol does: check ``requirements``
        against the table's current metadata, apply ``updates`` to it, write the new
        metadata file and swap the catalog's pointer to it atomically.

        A requirement that does not hold, or updates that no longer apply to the
        current metadata, raise :class:`CommitFailedError` and change nothing: reload
        the table, plan the change again and retry (``neve.actions.commit`` does).
        When the swap loses to a concurrent commit, the requirements are checked and
        the updates applied again on the newer version, a few times. ``turn``: the
        committer's ticket in the table's commit queue, when it has one
        (:mod:`neve.catalog.commit_queue`)."""
        ident = _table_ident(name)
        now: str | None = None  # where the pointer moved to, after a lost swap
        for attempt in range(_SWAP_ATTEMPTS):
            base_location, new = self.prepare_commit(ident, requirements, updates, attempt, now)
            try:
                location = self.commit_metadata(ident, base_location, new, turn=turn)
            except CommitFailedError as exc:
                self.forget(ident)
                moved, now = self._moved(ident, base_location, exc.moved_to)
                if attempt + 1 < _SWAP_ATTEMPTS and moved:
                    continue  # another commit won the swap: check again on its version
                raise  # the pointer did not move (a busy database ...), or too many tries
            self._remember(ident, location, new)
            return CommitResult(new, location)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def swap_checks_base(self) -> bool:
        """Whether this catalog's swap alone refuses a stale base (a conditional
        ``UPDATE``, a put-if-absent), so a commit's first attempt may start from
        :meth:`latest_known` without asking the catalog for the current version."""
        return False

    def commit_base(
        self, ident: Identifier, attempt: int, now: str | None = None
    ) -> tuple[str, TableMetadata]:
        """The version a commit attempt starts from: the first attempt, where
        :meth:`swap_checks_base`, from the version this catalog last loaded or
        committed (a stale one only loses the swap); otherwise the table's current
        one: at ``now`` where the caller has just read the pointer there (after a lost
        swap), else read from the catalog."""
        if attempt == 0 and self.swap_checks_base():
            known = self.latest_known(ident)
            if known is not None:
                return known
        location = self._metadata_location(ident) if now is None else now
        return location, self.read_metadata(location)

    def prepare_commit(
        self,
        ident: Identifier,
        requirements: Sequence[TableRequirement],
        updates: Sequence[TableUpdate],
        attempt: int = 0,
        now: str | None = None,
    ) -> tuple[str, TableMetadata]:
        """The metadata location commit attempt ``attempt`` of ``ident`` starts from
        (:meth:`commit_base`, ``now`` as it takes it) and the metadata ``updates`` make
        of it, after checking ``requirements`` (:class:`CommitFailedError` when one does
        not hold or the updates do not apply). Writes nothing."""
        base_location, base = self.commit_base(ident, attempt, now)
        try:
            return base_location, _apply(ident, base_location, base, requirements, updates)
        except CommitFailedError:
            if attempt > 0 or not self.swap_checks_base():
                raise
            # started from the version last seen here, which another writer may have
            # replaced since: only the current version can say the change does not apply
            self.forget(ident)
            current = self.commit_base(ident, attempt + 1)
            if current[0] == base_location:
                raise
        return current[0], _apply(ident, *current, requirements, updates)

    def commit_transaction(
        self,
        changes: Sequence[
            tuple[str | Sequence[str], Sequence[TableRequirement], Sequence[TableUpdate]]
        ],
    ) -> list[CommitResult]:
        """Commit changes to several tables atomically: every table's requirements are
        checked and its updates applied, then all pointers move together or none does
        (:class:`CommitFailedError`, nothing changed). Each change is ``(name,
        requirements, updates)``."""
        idents = [_table_ident(name) for name, _r, _u in changes]
        if len(set(idents)) != len(idents):
            raise ValidationError("a transaction names a table twice; give each table once")
        prepared = [
            (ident, *self.prepare_commit(ident, reqs, ups))
            for ident, (_n, reqs, ups) in zip(idents, changes, strict=True)
        ]
        locations = self._commit_many(prepared)
        for (ident, _b, md), location in zip(prepared, locations, strict=True):
            self._remember(ident, location, md)
        return [
            CommitResult(md, loc) for (_i, _b, md), loc in zip(prepared, locations, strict=True)
        ]

    def _commit_many(self, changes: Sequence[tuple[Identifier, str, TableMetadata]]) -> list[str]:
        """Swap several pointers atomically (``(ident, base_location, metadata)``);
        catalogs that cannot say so."""
        raise ValidationError(
            f"{type(self).__name__} cannot commit several tables atomically; use a SQL "
            "catalog or a REST catalog"
        )

    def _moved(self, ident: Identifier, location: str, seen: str | None) -> tuple[bool, str | None]:
        """Whether the table's pointer is no longer at ``location`` (or the table is
        gone), and where it is now (None where the table is gone: the next attempt
        then says so); ``seen``: where the lost swap found it, if it read it."""
        if seen is not None:
            return seen != location, seen
        try:
            now = self._metadata_location(ident)
        except NoSuchTableError:
            return True, None
        return now != location, now

    def commit_metadata(
        self,
        ident: Identifier,
        base_location: str,
        metadata: TableMetadata,
        *,
        turn: str | None = None,
    ) -> str:
        """The catalog's compare-and-swap under :meth:`commit`: write ``metadata`` as
        the next version and move the pointer from ``base_location`` to it atomically
        (:class:`CommitFailedError` when the pointer moved, or when a catalog with a
        commit queue has an older writer than ``turn`` queued). Returns the new
        location."""
        return self._commit(ident, base_location, metadata)

    # -- the commit queue (neve.catalog.commit_queue) ------------------------------------

    @property
    def commit_queue_supported(self) -> bool:
        """Whether this catalog orders the writers of a contended table."""
        return False

    @property
    def commit_queue_after_losses(self) -> int:
        """How many lost swaps a change takes before it queues (before that it backs
        off and races the others again)."""
        return 1

    def join_commit_queue(
        self, name: str | Sequence[str], since: float, ticket: str | None = None
    ) -> str:
        """Queue a writer whose change first tried to commit at ``since``; its ticket.
        ``ticket``: the one to queue under (a new one when None); joining again with a
        ticket that is queued already changes nothing, so a retried join is harmless."""
        return self._join_queue(_table_ident(name), since, ticket or new_ticket())

    def commit_turn(self, name: str | Sequence[str], ticket: str) -> bool:
        """Whether ``ticket`` is the oldest live one (and say it is alive)."""
        return self._queue_turn(_table_ident(name), ticket)

    def leave_commit_queue(self, name: str | Sequence[str], ticket: str) -> None:
        self._leave_queue(_table_ident(name), ticket)

    def _join_queue(self, ident: Identifier, since: float, ticket: str) -> str:
        raise NotImplementedError(f"{type(self).__name__} has no commit queue")

    def _queue_turn(self, ident: Identifier, ticket: str) -> bool:
        raise NotImplementedError(f"{type(self).__name__} has no commit queue")

    def _leave_queue(self, ident: Identifier, ticket: str) -> None:
        raise NotImplementedError(f"{type(self).__name__} has no commit queue")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, warehouse={self.warehouse!r})"


def _apply(
    ident: Identifier,
    base_location: str,
    base: TableMetadata,
    requirements: Sequence[TableRequirement],
    updates: Sequence[TableUpdate],
) -> TableMetadata:
    """The metadata ``updates`` make of ``base`` once ``requirements`` hold there."""
    for r in requirements:
        r.check(base)
    try:
        new = apply_updates(base, updates)
    except NeveError as exc:
        raise CommitFailedError(
            f"the updates do not apply to the current metadata of {'.'.join(ident)} "
            f"({exc}); reload the table and make the change again"
        ) from exc
    return next_metadata(new, base, base_location)
