"""The version files of one table of the filesystem catalog (``metadata/v<N>.metadata.json``
and ``metadata/version-hint.text``): which version is current, and creating the next
one so that of several writers exactly one wins.

Two kinds of storage, one contract (:class:`VersionFiles`):

- :class:`LocalVersions`, a local folder: the current version is the hint's, then
  probed upward; a version is created with an exclusive create (a hard link of a
  complete temporary file); dropping a table removes its version files, so numbers
  restart at ``v1`` (the catalog checks the table UUID before a commit).
- :class:`StoreVersions`, an object store with conditional puts: the current version is
  the highest listed (one LIST request: S3's listings are strongly consistent); a
  version is created with a put-if-absent (``If-None-Match: *``). Version numbers are
  never used twice: a drop does not delete version files but puts a *tombstone* as the
  next version (and a ``v<N>.dropped`` marker beside it), and a re-created table goes
  on above it. So a writer that starts from version N and puts N+1 either lands right
  after the version it read, or finds N+1 taken; no other check is needed, which keeps
  a commit's metadata work at three requests plus the hint.

An answer lost on the network (the put landed, the client saw a reset) makes the
library retry, and the retry finds the key taken: the put is then read back, and
equal bytes mean this writer won. A put whose outcome stays unknown after retries
raises :class:`CommitStateUnknownError` (its files are kept).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import uuid
from abc import ABC, abstractmethod

from neve.errors import AlreadyExistsError, CommitStateUnknownError, NeveIOError
from neve.io.fileio import FileIO, local_path

__all__ = [
    "VERSION_HINT",
    "LocalVersions",
    "StoreVersions",
    "VersionFiles",
    "is_version_file",
    "version_names",
]

VERSION_HINT = "version-hint.text"
_VERSION_FILE = re.compile(r"^v(\d+)(?:\.gz\.metadata\.json|\.metadata\.json(?:\.gz)?)$")
_DROPPED = re.compile(r"^v(\d+)\.dropped$")
#: A tombstone is a few dozen bytes; real metadata is hundreds at least, so a listed
#: current version this small is read to see which it is (see StoreVersions.current).
_TOMBSTONE_MAX_SIZE = 200
#: How often a put whose answer was lost is tried again before its outcome is unknown.
_PUT_ATTEMPTS = 4


def version_names(version: int) -> tuple[str, ...]:
    """Iceberg-Java's current name of a version file, its gzip name, and the old gzip
    name."""
    return (
        f"v{version}.metadata.json",
        f"v{version}.gz.metadata.json",
        f"v{version}.metadata.json.gz",
    )


def is_version_file(name: str) -> bool:
    return _VERSION_FILE.match(name) is not None


class VersionFiles(ABC):
    """The version files of one table; ``location`` is the table's metadata folder as
    it goes into metadata (the warehouse's style)."""

    def __init__(self, io: FileIO, location: str) -> None:
        self.io = io
        self.location = location.rstrip("/")

    def file(self, name: str) -> str:
        return f"{self.location}/{name}"

    @abstractmethod
    def current(self) -> tuple[int, str] | None:
        """The newest version and its file name; None when the table does not exist
        (no version, or dropped)."""

    @abstractmethod
    def first_version(self) -> int:
        """The version number a new table in this folder starts at."""

    @abstractmethod
    def create(self, version: int, data: bytes) -> str:
        """Create ``v<version>.metadata.json`` holding ``data`` and return its location;
        :class:`AlreadyExistsError` when another writer created that version first."""

    @abstractmethod
    def write_hint(self, version: int) -> None:
        """Best effort: readers get past a stale hint."""

    @abstractmethod
    def drop(self, table_uuid: str) -> list[str]:
        """Remove the table from the catalog (its data stays); returns the files that
        must stay even when the table's files are purged."""

    @property
    @abstractmethod
    def immutable(self) -> bool:
        """Whether a version file, once written, never changes (names never reused)."""


class LocalVersions(VersionFiles):
    """A table's versions in a local folder (see the module doc)."""

    def __init__(self, io: FileIO, location: str) -> None:
        super().__init__(io, location)
        self.folder = os.path.abspath(local_path(self.location))

    @property
    def immutable(self) -> bool:
        return False  # v1 is written again when a dropped table is re-created

    def _version_file(self, version: int) -> str | None:
        for name in version_names(version):
            if os.path.isfile(os.path.join(self.folder, name)):
                return name
        return None

    def _listed(self) -> list[int]:
        try:
            names = os.listdir(self.folder)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [int(m.group(1)) for n in names if (m := _VERSION_FILE.match(n))]

    def current(self) -> tuple[int, str] | None:
        version: int | None = None
        try:
            with open(os.path.join(self.folder, VERSION_HINT), encoding="utf-8") as f:
                version = int(f.read().strip())
        except (OSError, ValueError):
            pass
        if version is None or self._version_file(version) is None:
            version = max(self._listed(), default=None)
            if version is None:
                return None
        # The hint is written after the commit, so newer versions may exist.
        while self._version_file(version + 1) is not None:
            version += 1
        name = self._version_file(version)
        if name is None:  # dropped while we looked
            return None
        return version, name

    def first_version(self) -> int:
        return 1

    def create(self, version: int, data: bytes) -> str:
        location = self.file(f"v{version}.metadata.json")
        try:
            self.io.create_exclusive(location, data)
        except OSError as exc:
            if isinstance(exc, NeveIOError):
                raise
            raise NeveIOError(f"cannot write {location}: {exc}") from exc
        return location

    def write_hint(self, version: int) -> None:
        tmp = os.path.join(self.folder, f".{uuid.uuid4()}-{VERSION_HINT}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(str(version))
            os.replace(tmp, os.path.join(self.folder, VERSION_HINT))
        except OSError:
            with contextlib.suppress(OSError):
                os.remove(tmp)

    def drop(self, table_uuid: str) -> list[str]:
        try:
            os.remove(os.path.join(self.folder, VERSION_HINT))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise NeveIOError(f"cannot drop the table at {self.location}: {exc}") from exc
        for n in os.listdir(self.folder):
            if _VERSION_FILE.match(n):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(self.folder, n))
        return []


class StoreVersions(VersionFiles):
    """A table's versions in an object store with conditional puts (see the module
    doc)."""

    @property
    def immutable(self) -> bool:
        return True

    def _listing(self) -> tuple[dict[int, str], set[int], dict[int, int]]:
        """Version numbers -> file names, dropped versions, version -> size: one LIST
        of the keys after ``metadata/v`` (manifests and manifest lists sort before)."""
        store, key = self.io.store(self.location)
        folder = key.rstrip("/")
        versions: dict[int, str] = {}
        sizes: dict[int, int] = {}
        dropped: set[int] = set()
        for info in store.objects(folder, offset=f"{folder}/v"):
            name = info.key.rsplit("/", 1)[-1]
            if m := _VERSION_FILE.match(name):
                n = int(m.group(1))
                if n not in versions or name.endswith(".metadata.json"):
                    versions[n] = name
                    sizes[n] = info.size
            elif m := _DROPPED.match(name):
                dropped.add(int(m.group(1)))
        return versions, dropped, sizes

    def current(self) -> tuple[int, str] | None:
        versions, dropped, sizes = self._listing()
        if not versions:
            return None
        top = max(versions)
        if top in dropped:
            return None
        if sizes[top] <= _TOMBSTONE_MAX_SIZE and self._is_tombstone(versions[top]):
            # a drop that stopped between its tombstone and its marker: finish it
            with contextlib.suppress(NeveIOError):
                self.io.write_bytes(self.file(f"v{top}.dropped"), b"")
            return None
        return top, versions[top]

    def _is_tombstone(self, name: str) -> bool:
        try:
            raw = json.loads(self.io.read_bytes(self.file(name)))
        except (NeveIOError, ValueError):
            return False
        return isinstance(raw, dict) and "neve-dropped-table" in raw

    def first_version(self) -> int:
        versions, _, _ = self._listing()
        return max(versions, default=0) + 1

    def create(self, version: int, data: bytes) -> str:
        location = self.file(f"v{version}.metadata.json")
        last: Exception | None = None
        for attempt in range(_PUT_ATTEMPTS):
            if attempt:
                time.sleep(0.2 * 2**attempt)
            try:
                self.io.create_exclusive(location, data)
                return location
            except AlreadyExistsError:
                try:
                    existing = self.io.read_bytes(location)
                except NeveIOError as exc:
                    last = exc
                    continue
                if existing == data:
                    return location  # ours: the answer to an earlier try was lost
                raise
            except NeveIOError as exc:
                last = exc
        raise CommitStateUnknownError(
            f"creating {location} failed and its outcome is unknown ({last}); the files "
            "written for it were kept. Load the table to see whether it points there"
        ) from last

    def write_hint(self, version: int) -> None:
        with contextlib.suppress(NeveIOError):
            self.io.write_bytes(self.file(VERSION_HINT), str(version).encode())

    def drop(self, table_uuid: str) -> list[str]:
        stone = json.dumps(
            {"neve-dropped-table": table_uuid, "dropped-at-ms": int(time.time() * 1000)}
        ).encode()
        while True:
            version = self.first_version()
            try:
                self.create(version, stone)
                break
            except AlreadyExistsError:
                continue  # a commit landed meanwhile: entomb above it
        marker = self.file(f"v{version}.dropped")
        self.io.write_bytes(marker, b"")
        self.io.delete(self.file(VERSION_HINT))
        return [self.file(f"v{version}.metadata.json"), marker]
