"""The filesystem catalog: tables found by folder, no database needed, on a local
folder or on an object store with conditional puts (S3 and S3-compatible stores, GCS).

Layout under the warehouse folder (Iceberg's "Hadoop" table layout):

- a namespace is a folder, nested namespaces are nested folders; the folder holds a
  small JSON file ``.namespace.json`` with the namespace's properties, which marks it
  as a namespace (on an object store the "folder" is the key prefix, and the file is
  what makes it exist);
- a table is a folder ``<warehouse>/<ns...>/<table>`` holding
  ``metadata/v<N>.metadata.json`` (one per version) and ``metadata/version-hint.text``.

Commits create ``v<N+1>.metadata.json`` if absent (:mod:`neve.catalog.versions`): of
several writers starting from version N exactly one creates the file, the others get
:class:`CommitFailedError` and retry on the newer version. On a local folder the
create is exclusive (a hard link); version numbers restart at ``v1`` when a table is
dropped and re-created, so a commit also checks that version N belongs to its table
(same ``table-uuid``) and fails with :class:`CommitConflictError` otherwise (a drop and
re-create up to the same version in the instant between that check and the create is
not detected). On an object store the create is a conditional put (``If-None-Match:
*``), version numbers are never reused (a drop leaves a tombstone version), and the
catalog starts a commit from the version it last loaded or committed, so a commit's
metadata work is three requests and the hint (docs/OBJECT-STORES.md). A store that
ignores the condition (probed once per bucket, or ``s3.conditional-put=false``) is
refused in favour of the SQL catalog, which swaps a pointer in a database (Lance's
"external manifest store"). Writers other than neve that use the Hadoop scheme (which
renames into place) can still race with neve on the same table.

The version hint is a convenience written after the commit; a local folder's loading
reads it and then probes upward for newer versions, an object store's lists the
version files, so a lagging or missing hint is harmless. neve always writes plain JSON
here (``write.metadata.compression-codec`` is ignored), so that one name per version
can be created exclusively; it reads ``v<N>.gz.metadata.json`` written by others.

Semantics worth knowing:

- ``drop_table`` without purge removes the table's "catalog entry": on a local folder
  its version files and hint, on an object store the hint, with a tombstone version
  marking the table dropped (its version files stay, so that no version is created
  twice). Data files, manifests and manifest lists stay. With purge, the table's files
  are deleted (but a tombstone) and empty folders removed.
- ``rename_table`` is refused: every file of a table is addressed by an absolute path
  under its old folder, so moving the folder would break the table (Iceberg's Hadoop
  catalog refuses too). Register the current metadata file under the new name and drop
  the old name without purge instead, or use the SQL catalog.
- ``register_table`` copies the given metadata file to the first version file of the
  new table folder; the table's data ``location`` stays where it is.
- A table created with a custom ``location`` writes its data there; its version files
  still live in the table's folder, which is what identifies the table.
- A folder without ``.namespace.json`` (e.g. one written by Iceberg's Hadoop catalog) is
  not a namespace until ``create_namespace`` adopts it; its tables load regardless.
- Concurrent property updates of one namespace may lose one of the updates.
- On an object store, ``write.metadata.delete-after-commit.enabled`` is refused: a
  deleted version file could be created again by a writer that started before it.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import time
import uuid
from collections.abc import Mapping, Sequence

from neve.catalog.base import Catalog, Identifier, parse_identifier
from neve.catalog.commit_queue import TTL_SECONDS, queued_first
from neve.catalog.file_queue import FileCommitQueue
from neve.catalog.versions import LocalVersions, StoreVersions, VersionFiles
from neve.errors import (
    AlreadyExistsError,
    CommitConflictError,
    CommitFailedError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NeveIOError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
    ValidationError,
)
from neve.io.fileio import local_path
from neve.spec.metadata_json import metadata_to_bytes
from neve.spec.table_metadata import TableMetadata
from neve.table.maintenance import purge_reachable, purge_table_files

__all__ = ["FilesystemCatalog"]

NAMESPACE_FILE = ".namespace.json"
_DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"


def _check_levels(ident: Identifier) -> None:
    for level in ident:
        if level in (".", "..") or any(c in level for c in ("/", "\\", "\0", ".")):
            raise ValidationError(
                f"name {level!r} cannot be used by the filesystem catalog: names may not "
                "contain '.', '/', '\\\\' or NUL"
            )


class FilesystemCatalog(Catalog):
    """Tables as folders on a local filesystem or an object store with conditional
    puts; see the module docstring."""

    def __init__(
        self, name: str, warehouse: str, properties: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(name, warehouse, properties)
        self._remote = not self.io.is_local(self.warehouse)
        self._queue = FileCommitQueue(self.io)
        #: When this catalog last queued a writer of a table.
        self._contended: dict[Identifier, float] = {}
        if self._remote:
            if not self.io.supports_create_exclusive(self.warehouse):
                raise ValidationError(
                    f"the filesystem catalog cannot commit on {warehouse!r}: the store has no "
                    "conditional put (put-if-absent), so two writers could both win a "
                    "commit. Use the SQL catalog, which keeps the pointer to each table's "
                    "metadata in a database (an external manifest store), e.g. "
                    f"neve.connect('sqlite:////path/catalog.db', warehouse={warehouse!r})"
                )
            self._root = self.warehouse
            return
        self._root = os.path.abspath(local_path(self.warehouse))
        try:
            os.makedirs(self._root, exist_ok=True)
        except OSError as exc:
            raise NeveIOError(f"cannot create the warehouse folder {self._root}: {exc}") from exc

    # -- paths -----------------------------------------------------------------------

    def _path(self, ident: Identifier, *rest: str) -> str:
        """The path FileIO reads (an OS path locally, the URI on an object store)."""
        _check_levels(ident)
        if self._remote:
            return "/".join([self._root, *ident, *rest])
        return os.path.join(self._root, *ident, *rest)

    def _location(self, ident: Identifier, *rest: str) -> str:
        """The path as it goes into metadata (keeps the warehouse's style)."""
        return "/".join([self.warehouse, *ident, *rest])

    def _versions(self, ident: Identifier) -> VersionFiles:
        location = self._location(ident, "metadata")
        _check_levels(ident)
        if self._remote:
            return StoreVersions(self.io, location)
        return LocalVersions(self.io, location)

    def _is_namespace(self, ident: Identifier) -> bool:
        if self._remote:
            return self.io.exists(self._path(ident, NAMESPACE_FILE))
        return os.path.isfile(self._path(ident, NAMESPACE_FILE))

    def _current(self, ident: Identifier) -> tuple[int, str] | None:
        """The newest version of a table and its file name; None when there is none."""
        return self._versions(ident).current()

    def _write_hint(self, ident: Identifier, version: int) -> None:
        """Best effort: readers get past a stale hint."""
        self._versions(ident).write_hint(version)

    def _create_version(self, ident: Identifier, version: int, data: bytes) -> str:
        """Create ``v<version>.metadata.json`` if absent; AlreadyExistsError otherwise."""
        versions = self._versions(ident)
        location = versions.create(version, data)
        self._write_hint(ident, version)
        return location

    def immutable_location(self, location: str) -> bool:
        return self._remote or super().immutable_location(location)

    # -- the commit queue (neve.catalog.commit_queue, neve.catalog.file_queue) ---------

    @property
    def commit_queue_supported(self) -> bool:
        return True

    def _join_queue(self, ident: Identifier, since: float, ticket: str) -> str:
        self._contended[ident] = time.time()
        return self._queue.join(self._path(ident, "metadata"), since, ticket)

    def _queue_turn(self, ident: Identifier, ticket: str) -> bool:
        return self._queue.turn(self._path(ident, "metadata"), ticket)

    def _leave_queue(self, ident: Identifier, ticket: str) -> None:
        self._queue.leave(self._path(ident, "metadata"), ticket)

    def commit_metadata(
        self,
        ident: Identifier,
        base_location: str,
        metadata: TableMetadata,
        *,
        turn: str | None = None,
    ) -> str:
        # The queue is listed on local folders, and on a store by a queued writer or
        # after this catalog saw contention on the table (a listing costs a request).
        recent = time.time() - self._contended.get(ident, 0.0) < TTL_SECONDS
        if (not self._remote or turn is not None or recent) and self._queue.refuses(
            self._path(ident, "metadata"), turn
        ):
            raise queued_first(".".join(ident))
        location = self._commit(ident, base_location, metadata)
        if turn is not None:  # the turn ends with the swap: the next writer's begins
            self._queue.leave(self._path(ident, "metadata"), turn)
        return location

    def swap_checks_base(self) -> bool:
        """On an object store the first attempt starts from the version this catalog
        last loaded or committed, with no request: a stale one only makes the
        put-if-absent find its version taken."""
        return self._remote

    # -- namespaces ------------------------------------------------------------------

    def _create_namespace(self, namespace: Identifier, properties: Mapping[str, str]) -> None:
        name = ".".join(namespace)
        for i in range(1, len(namespace) + 1):
            if self._current(namespace[:i]) is not None:
                raise NamespaceAlreadyExistsError(
                    f"cannot create namespace {name}: {'.'.join(namespace[:i])} is a table"
                )
        for i in range(1, len(namespace)):  # parents exist implicitly: make them real
            if self._remote and self._is_namespace(namespace[:i]):
                continue
            with contextlib.suppress(AlreadyExistsError):
                self.io.create_exclusive(self._path(namespace[:i], NAMESPACE_FILE), b"{}")
        data = json.dumps(dict(properties), sort_keys=True).encode()
        try:
            self.io.create_exclusive(self._path(namespace, NAMESPACE_FILE), data)
        except AlreadyExistsError as exc:
            raise NamespaceAlreadyExistsError(
                f"namespace {name} exists already; use it, or pick another name"
            ) from exc

    def _namespace_bytes(self, namespace: Identifier) -> bytes | None:
        """The namespace file's bytes; None when there is none."""
        path = self._path(namespace, NAMESPACE_FILE)
        if self._remote:
            try:
                return self.io.read_bytes(path)
            except NeveIOError as exc:
                if str(exc).startswith("file not found"):
                    return None
                raise
        try:
            with open(path, "rb") as f:
                return f.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise NeveIOError(f"cannot read {path}: {exc}") from exc

    def _read_namespace(self, namespace: Identifier) -> dict[str, str]:
        raw = self._namespace_bytes(namespace)
        path = self._path(namespace, NAMESPACE_FILE)
        if raw is None:
            name = ".".join(namespace)
            raise NoSuchNamespaceError(
                f"namespace {name} does not exist; create it with "
                f"catalog.create_namespace({name!r})"
            )
        try:
            data = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            raise NeveIOError(
                f"namespace file {path} is not valid JSON ({exc}); fix or delete its content"
            ) from exc
        if not isinstance(data, dict):
            raise NeveIOError(f"namespace file {path} must hold a JSON object")
        return {str(k): str(v) for k, v in data.items()}

    def _namespace_properties(self, namespace: Identifier) -> dict[str, str]:
        return self._read_namespace(namespace)

    def _update_namespace_properties(
        self, namespace: Identifier, removals: set[str], updates: Mapping[str, str]
    ) -> None:
        both = removals & set(updates)
        if both:
            raise ValidationError(
                f"properties {sorted(both)} are both removed and updated; pick one for each"
            )
        props = self._read_namespace(namespace)
        for key in removals:
            props.pop(key, None)
        props.update(updates)
        path = self._path(namespace, NAMESPACE_FILE)
        data = json.dumps(props, sort_keys=True).encode()
        if self._remote:  # a put replaces an object atomically
            self.io.write_bytes(path, data)
            return
        tmp = f"{path}.{uuid.uuid4()}.tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise NeveIOError(f"cannot write {path}: {exc}") from exc

    def _children(self, parent: Identifier) -> list[str]:
        if self._remote:
            return self.io.list_dir(self._path(parent))[0]
        folder = self._path(parent)
        try:
            with os.scandir(folder) as entries:
                return [e.name for e in entries if e.is_dir() and not e.name.startswith(".")]
        except (FileNotFoundError, NotADirectoryError):
            return []

    def _drop_namespace(self, namespace: Identifier) -> None:
        self._read_namespace(namespace)  # NoSuchNamespaceError
        name = ".".join(namespace)
        tables = self._list_tables(namespace)
        if tables:
            raise NamespaceNotEmptyError(
                f"namespace {name} still holds {len(tables)} table(s) "
                f"({', '.join(sorted(t[-1] for t in tables)[:5])}); drop them first"
            )
        children = self._list_namespaces(namespace)
        if children:
            raise NamespaceNotEmptyError(
                f"namespace {name} still holds namespaces "
                f"({', '.join(sorted('.'.join(c) for c in children)[:5])}); drop them first"
            )
        if self._remote:
            self.io.delete(self._path(namespace, NAMESPACE_FILE))
            return
        try:
            os.remove(self._path(namespace, NAMESPACE_FILE))
        except FileNotFoundError:
            raise NoSuchNamespaceError(f"namespace {name} does not exist") from None
        except OSError as exc:
            raise NeveIOError(f"cannot drop namespace {name}: {exc}") from exc
        # Leftovers of tables dropped without purge keep the folder.
        with contextlib.suppress(OSError):
            os.rmdir(self._path(namespace))

    def _list_namespaces(self, parent: Identifier) -> list[Identifier]:
        if parent:
            self._read_namespace(parent)
        return [
            (*parent, child)
            for child in self._children(parent)
            if "." not in child and self._is_namespace((*parent, child))
        ]

    # -- tables ----------------------------------------------------------------------

    def _list_tables(self, namespace: Identifier) -> list[Identifier]:
        self._read_namespace(namespace)
        return [
            (*namespace, child)
            for child in self._children(namespace)
            if "." not in child and self._current((*namespace, child)) is not None
        ]

    def _metadata_location(self, ident: Identifier) -> str:
        current = self._current(ident)
        if current is None:
            raise NoSuchTableError(
                f"table {'.'.join(ident)} does not exist (no metadata under "
                f"{self._path(ident, 'metadata')})"
            )
        return self._location(ident, "metadata", current[1])

    def _check_new_table(self, ident: Identifier) -> None:
        if self._is_namespace(ident):
            raise TableAlreadyExistsError(
                f"cannot create table {'.'.join(ident)}: a namespace of that name uses its folder"
            )

    def _create_first(self, ident: Identifier, data: bytes, exists: str) -> str:
        self._check_new_table(ident)
        versions = self._versions(ident)
        try:
            return self._create_version(ident, versions.first_version(), data)
        except AlreadyExistsError as exc:
            raise TableAlreadyExistsError(
                f"table {'.'.join(ident)} exists already; {exists}"
            ) from exc

    def _create_table(self, ident: Identifier, metadata: TableMetadata) -> str:
        return self._create_first(ident, metadata_to_bytes(metadata), "load it, or drop it first")

    def _register_table(self, ident: Identifier, metadata_location: str) -> str:
        data = self.io.read_bytes(metadata_location)
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        return self._create_first(ident, data, "pick another name or drop it first")

    def _commit(self, ident: Identifier, base_location: str, metadata: TableMetadata) -> str:
        name = ".".join(ident)
        if self._remote:
            return self._commit_on_store(ident, base_location, metadata)
        current = self._current(ident)
        if current is None:
            raise NoSuchTableError(f"table {name} was dropped; nothing was committed")
        version, file_name = current
        current_location = self._location(ident, "metadata", file_name)
        if not _same_path(base_location, current_location):
            raise CommitFailedError(
                f"table {name} was changed by another writer (its metadata moved from "
                f"{base_location} to {current_location}); refresh the table and retry"
            )
        # Version numbers restart at v1 when a table is dropped and re-created, so the
        # same path may hold another table now: the current version must be ours.
        current_uuid = self._table_uuid(current_location)
        if current_uuid != metadata.table_uuid:
            raise CommitConflictError(
                f"table {name} was dropped and re-created (its current version "
                f"{current_location} belongs to table {current_uuid}, this change to table "
                f"{metadata.table_uuid}); nothing was committed. Load the new table and "
                "apply the change to it if it still makes sense there"
            )
        return self._create_next(ident, version, metadata)

    def _commit_on_store(
        self, ident: Identifier, base_location: str, metadata: TableMetadata
    ) -> str:
        """Put the version after ``base_location`` if absent: no version number is
        used twice on an object store, so the put alone decides (module doc)."""
        if str(metadata.properties.get(_DELETE_AFTER_COMMIT, "")).strip().lower() == "true":
            raise ValidationError(
                f"{_DELETE_AFTER_COMMIT}=true cannot be used with the filesystem catalog on "
                "an object store: a deleted version file could be created again by a writer "
                "that started before it. Unset it, or use the SQL catalog"
            )
        prefix = self._location(ident, "metadata") + "/v"
        name = base_location.rsplit("/", 1)[-1]
        if not base_location.startswith(prefix) or not name[1:].split(".", 1)[0].isdigit():
            raise CommitFailedError(
                f"{base_location} is not a version file of table {'.'.join(ident)}; reload it"
            )
        return self._create_next(ident, int(name[1:].split(".", 1)[0]), metadata)

    def _create_next(self, ident: Identifier, version: int, metadata: TableMetadata) -> str:
        try:
            return self._create_version(ident, version + 1, metadata_to_bytes(metadata))
        except AlreadyExistsError:
            raise CommitFailedError(
                f"table {'.'.join(ident)} was changed by another writer (version "
                f"{version + 1} was created first); refresh the table and retry"
            ) from None

    def _table_uuid(self, location: str) -> str:
        """The ``table-uuid`` of a metadata file ("" when it has none, as neve reads it)."""
        data = self.io.read_bytes(location)
        try:
            if data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
            raw = json.loads(data)
        except (OSError, ValueError) as exc:
            raise NeveIOError(
                f"metadata file {location} is damaged ({exc}); restore it, or register an "
                "earlier metadata file of the table"
            ) from exc
        found = raw.get("table-uuid") if isinstance(raw, dict) else None
        return str(found) if found is not None else ""

    def _drop_table(self, ident: Identifier) -> None:
        self._entomb(ident)

    def _entomb(self, ident: Identifier) -> list[str]:
        """Drop the catalog entry; returns the files a purge must leave."""
        current = self._current(ident)
        if current is None:
            raise NoSuchTableError(f"table {'.'.join(ident)} does not exist")
        table_uuid = ""
        if self._remote:
            table_uuid = self._table_uuid(self._location(ident, "metadata", current[1]))
        kept = self._versions(ident).drop(table_uuid)
        if not self._remote:
            _remove_empty_dirs(self._path(ident))
        self.forget(ident)
        return kept

    def drop_table(self, name: str | Sequence[str], purge: bool = False) -> None:
        """Remove a table; with ``purge`` also delete its files and empty folders (on an
        object store, all but the tombstone that keeps its version numbers used)."""
        if purge and self._remote:
            table = self.load_table(name)
            reachable = purge_reachable(table)
            kept = self._entomb(table.identifier)
            purge_table_files(table, reachable, keep=kept)
            return
        super().drop_table(name, purge=purge)
        if purge:
            _remove_empty_dirs(self._path(parse_identifier(name)))

    def _rename_table(self, src: Identifier, dst: Identifier) -> None:
        if self._current(src) is None:
            raise NoSuchTableError(f"table {'.'.join(src)} does not exist")
        raise ValidationError(
            f"the filesystem catalog cannot rename {'.'.join(src)}: its files are addressed "
            "by absolute paths under its folder, so moving the folder would break the table. "
            f"Register its current metadata under the new name (catalog.register_table("
            f"{'.'.join(dst)!r}, table.metadata_location)) and drop the old name without "
            "purge, or use the SQL catalog"
        )


def _same_path(a: str, b: str) -> bool:
    return os.path.abspath(local_path(a)) == os.path.abspath(local_path(b))


def _remove_empty_dirs(root: str) -> None:
    """Remove empty folders below and including ``root``, bottom-up."""
    if not os.path.isdir(root):
        return
    for folder, _dirs, _files in os.walk(root, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(folder)
