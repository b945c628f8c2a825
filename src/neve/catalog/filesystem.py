"""The filesystem catalog: tables found by folder, no database needed.

Layout under the warehouse folder (Iceberg's "Hadoop" table layout):

- a namespace is a folder, nested namespaces are nested folders; the folder holds a
  small JSON file ``.namespace.json`` with the namespace's properties, which marks it
  as a namespace;
- a table is a folder ``<warehouse>/<ns...>/<table>`` holding
  ``metadata/v<N>.metadata.json`` (one per version) and ``metadata/version-hint.text``.

Commits create ``v<N+1>.metadata.json`` with a true create-if-absent
(:meth:`FileIO.create_exclusive`): of several writers starting from version N exactly
one creates the file, the others get :class:`CommitFailedError`. Version numbers
restart at ``v1`` when a table is dropped and re-created, so a commit also checks that
version N belongs to its table (same ``table-uuid``) and fails with
:class:`CommitConflictError` otherwise; a drop and re-create up to the same version in
the instant between that check and the create is not detected. The spec deprecates
this layout because Hadoop's check-then-rename is racy; an atomic exclusive create is
not, but only local (POSIX) filesystems offer it. **Object stores (s3://, gs://) are not
supported**: put those tables in the SQL catalog (SQLite or PostgreSQL), which swaps a
pointer in a database instead. Writers other than neve that use the Hadoop scheme (which
renames into place) can still race with neve on the same table.

The version hint is a convenience written after the commit (to a temporary file, then
renamed); loading reads it and then probes upward for newer versions, so a lagging or
missing hint is harmless. neve always writes plain JSON here (``write.metadata.
compression-codec`` is ignored), so that one name per version can be created
exclusively; it reads ``v<N>.gz.metadata.json`` written by others.

Semantics worth knowing:

- ``drop_table`` without purge removes the table's version files and hint (the
  "catalog entry"); data files, manifests and manifest lists stay. With purge, the
  table's files are deleted and empty folders removed.
- ``rename_table`` is refused: every file of a table is addressed by an absolute path
  under its old folder, so moving the folder would break the table (Iceberg's Hadoop
  catalog refuses too). Register the current metadata file under the new name and drop
  the old name without purge instead, or use the SQL catalog.
- ``register_table`` copies the given metadata file to ``metadata/v1.metadata.json`` of
  the new table folder; the table's data ``location`` stays where it is.
- A table created with a custom ``location`` writes its data there; its version files
  still live in the table's folder, which is what identifies the table.
- A folder without ``.namespace.json`` (e.g. one written by Iceberg's Hadoop catalog) is
  not a namespace until ``create_namespace`` adopts it; its tables load regardless.
- Concurrent property updates of one namespace may lose one of the updates.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import uuid
from collections.abc import Mapping, Sequence

from neve.catalog.base import Catalog, Identifier, parse_identifier
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

__all__ = ["FilesystemCatalog"]

NAMESPACE_FILE = ".namespace.json"
VERSION_HINT = "version-hint.text"
_VERSION_FILE = re.compile(r"^v(\d+)(?:\.gz\.metadata\.json|\.metadata\.json(?:\.gz)?)$")


def _version_names(version: int) -> tuple[str, ...]:
    # Iceberg-Java's current name, its gzip name, and the old gzip name.
    return (
        f"v{version}.metadata.json",
        f"v{version}.gz.metadata.json",
        f"v{version}.metadata.json.gz",
    )


def _check_levels(ident: Identifier) -> None:
    for level in ident:
        if level in (".", "..") or any(c in level for c in ("/", "\\", "\0", ".")):
            raise ValidationError(
                f"name {level!r} cannot be used by the filesystem catalog: names may not "
                "contain '.', '/', '\\\\' or NUL"
            )


class FilesystemCatalog(Catalog):
    """Tables as folders on a local filesystem; see the module docstring."""

    def __init__(
        self, name: str, warehouse: str, properties: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(name, warehouse, properties)
        if not self.io.is_local(self.warehouse):
            raise ValidationError(
                f"the filesystem catalog needs a local folder, not {warehouse!r}: object "
                "stores have no atomic create-if-absent for commits. Use the SQL catalog, "
                "e.g. neve.connect('sqlite:////path/catalog.db', warehouse="
                f"{warehouse!r})"
            )
        self._root = os.path.abspath(local_path(self.warehouse))
        try:
            os.makedirs(self._root, exist_ok=True)
        except OSError as exc:
            raise NeveIOError(f"cannot create the warehouse folder {self._root}: {exc}") from exc

    # -- paths -----------------------------------------------------------------------

    def _path(self, ident: Identifier, *rest: str) -> str:
        _check_levels(ident)
        return os.path.join(self._root, *ident, *rest)

    def _location(self, ident: Identifier, *rest: str) -> str:
        """The path as it goes into metadata (keeps the warehouse's style)."""
        return "/".join([self.warehouse, *ident, *rest])

    def _is_namespace(self, ident: Identifier) -> bool:
        return os.path.isfile(self._path(ident, NAMESPACE_FILE))

    # -- versions --------------------------------------------------------------------

    @staticmethod
    def _version_file(metadata_dir: str, version: int) -> str | None:
        for name in _version_names(version):
            if os.path.isfile(os.path.join(metadata_dir, name)):
                return name
        return None

    @staticmethod
    def _listed_versions(metadata_dir: str) -> list[int]:
        try:
            names = os.listdir(metadata_dir)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [int(m.group(1)) for n in names if (m := _VERSION_FILE.match(n))]

    def _current(self, ident: Identifier) -> tuple[int, str] | None:
        """The newest version of a table and its file name; None when there is none."""
        metadata_dir = self._path(ident, "metadata")
        version: int | None = None
        try:
            with open(os.path.join(metadata_dir, VERSION_HINT), encoding="utf-8") as f:
                version = int(f.read().strip())
        except (OSError, ValueError):
            pass
        if version is None or self._version_file(metadata_dir, version) is None:
            version = max(self._listed_versions(metadata_dir), default=None)
            if version is None:
                return None
        # The hint is written after the commit, so newer versions may exist.
        while self._version_file(metadata_dir, version + 1) is not None:
            version += 1
        name = self._version_file(metadata_dir, version)
        if name is None:  # dropped while we looked
            return None
        return version, name

    def _write_hint(self, ident: Identifier, version: int) -> None:
        """Best effort: readers probe past a stale hint."""
        metadata_dir = self._path(ident, "metadata")
        tmp = os.path.join(metadata_dir, f".{uuid.uuid4()}-{VERSION_HINT}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(str(version))
            os.replace(tmp, os.path.join(metadata_dir, VERSION_HINT))
        except OSError:
            with contextlib.suppress(OSError):
                os.remove(tmp)

    def _create_version(self, ident: Identifier, version: int, data: bytes) -> str:
        """Create ``v<version>.metadata.json`` if absent; AlreadyExistsError otherwise."""
        location = self._location(ident, "metadata", f"v{version}.metadata.json")
        try:
            self.io.create_exclusive(location, data)
        except OSError as exc:
            if isinstance(exc, NeveIOError):
                raise
            raise NeveIOError(f"cannot write {location}: {exc}") from exc
        self._write_hint(ident, version)
        return location

    # -- namespaces ------------------------------------------------------------------

    def _create_namespace(self, namespace: Identifier, properties: Mapping[str, str]) -> None:
        name = ".".join(namespace)
        for i in range(1, len(namespace) + 1):
            if self._current(namespace[:i]) is not None:
                raise NamespaceAlreadyExistsError(
                    f"cannot create namespace {name}: {'.'.join(namespace[:i])} is a table"
                )
        for i in range(1, len(namespace)):  # parents exist implicitly: make them real
            with contextlib.suppress(AlreadyExistsError):
                self.io.create_exclusive(self._path(namespace[:i], NAMESPACE_FILE), b"{}")
        data = json.dumps(dict(properties), sort_keys=True).encode()
        try:
            self.io.create_exclusive(self._path(namespace, NAMESPACE_FILE), data)
        except AlreadyExistsError as exc:
            raise NamespaceAlreadyExistsError(
                f"namespace {name} exists already; use it, or pick another name"
            ) from exc

    def _read_namespace(self, namespace: Identifier) -> dict[str, str]:
        path = self._path(namespace, NAMESPACE_FILE)
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except (FileNotFoundError, NotADirectoryError):
            name = ".".join(namespace)
            raise NoSuchNamespaceError(
                f"namespace {name} does not exist; create it with "
                f"catalog.create_namespace({name!r})"
            ) from None
        except OSError as exc:
            raise NeveIOError(f"cannot read {path}: {exc}") from exc
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
        tmp = f"{path}.{uuid.uuid4()}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(props, f, sort_keys=True)
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise NeveIOError(f"cannot write {path}: {exc}") from exc

    def _children(self, parent: Identifier) -> list[str]:
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

    def _create_table(self, ident: Identifier, metadata: TableMetadata) -> str:
        self._check_new_table(ident)
        try:
            return self._create_version(ident, 1, metadata_to_bytes(metadata))
        except AlreadyExistsError as exc:
            raise TableAlreadyExistsError(
                f"table {'.'.join(ident)} exists already; load it, or drop it first"
            ) from exc

    def _register_table(self, ident: Identifier, metadata_location: str) -> str:
        self._check_new_table(ident)
        data = self.io.read_bytes(metadata_location)
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        try:
            return self._create_version(ident, 1, data)
        except AlreadyExistsError as exc:
            raise TableAlreadyExistsError(
                f"table {'.'.join(ident)} exists already; pick another name or drop it first"
            ) from exc

    def _commit(self, ident: Identifier, base_location: str, metadata: TableMetadata) -> str:
        name = ".".join(ident)
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
        try:
            return self._create_version(ident, version + 1, metadata_to_bytes(metadata))
        except AlreadyExistsError:
            raise CommitFailedError(
                f"table {name} was changed by another writer (version {version + 1} was "
                f"created first); refresh the table and retry"
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
        if self._current(ident) is None:
            raise NoSuchTableError(f"table {'.'.join(ident)} does not exist")
        metadata_dir = self._path(ident, "metadata")
        try:
            os.remove(os.path.join(metadata_dir, VERSION_HINT))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise NeveIOError(f"cannot drop table {'.'.join(ident)}: {exc}") from exc
        for n in os.listdir(metadata_dir):
            if _VERSION_FILE.match(n):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(metadata_dir, n))
        _remove_empty_dirs(self._path(ident))

    def drop_table(self, name: str | Sequence[str], purge: bool = False) -> None:
        """Remove a table; with ``purge`` also delete its files and empty folders."""
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
