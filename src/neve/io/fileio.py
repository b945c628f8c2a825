"""FileIO: plain paths and file:// on the local filesystem; object stores (s3://, and
Hadoop's s3a:// and s3n://, gs://) through :class:`~neve.io.objectstore.ObjectStore`
(one request per whole-object read or write, conditional puts, paged listings, bulk
deletes, retries); hdfs:// and whatever else ``pyarrow.fs.FileSystem.from_uri``
resolves through pyarrow. Paths stay as the caller wrote them (they are what goes into
metadata); only the filesystem lookup strips the scheme.
"""

from __future__ import annotations

import errno
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs

from neve.errors import AlreadyExistsError, NeveIOError
from neve.io.objectstore import OBJECT_SCHEMES, S3_SCHEMES, ObjectStore, split_uri

__all__ = ["FileIO", "InputFile"]

_LOCAL_SCHEMES = ("", "file")
#: On object stores, the bytes of the Avro files this FileIO wrote (manifests and
#: manifest lists: never rewritten, uniquely named) are kept up to this size, so the
#: commit that follows reads its parent's manifest list without a request.
_WRITTEN_CACHE_BYTES = 16 << 20
#: On object stores, files of known size up to this are read in one request.
_WHOLE_READ_BYTES = 8 << 20


@dataclass(frozen=True)
class InputFile:
    path: str
    size: int


def _scheme(path: str) -> str:
    if len(path) > 1 and path[1] == ":":  # a Windows drive letter is not a scheme
        return ""
    return urlparse(path).scheme


def local_path(path: str) -> str:
    """The OS path of a local path or file:// URI."""
    if path.startswith("file://"):
        return urlparse(path).path
    if path.startswith("file:"):
        return path[5:]
    return path


# errno values of link() on filesystems without hard links (FAT, some FUSE and SMB mounts)
_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV}


def _write_new(path: str, data: bytes) -> None:
    """Create ``path`` (FileExistsError if present), write ``data`` and fsync."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)


class FileIO:
    """Reads, writes and deletes files by path. Thread-safe; picklable."""

    def __init__(self, properties: dict[str, str] | None = None) -> None:
        self.properties = dict(properties or {})
        self._cache: dict[str, pafs.FileSystem] = {}
        self._stores: dict[tuple[str, str], ObjectStore] = {}
        self._written: OrderedDict[str, bytes] = OrderedDict()
        self._written_bytes = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        # clients are not picklable and not fork-safe: each process makes its own
        return {"properties": self.properties}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["properties"])  # type: ignore[misc]

    def replace_properties(self, properties: dict[str, str]) -> None:
        """Use ``properties`` from now on (fresh credentials, say): the clients made
        with the old ones are dropped, and new ones are made on next use. Reads and
        writes already under way finish with the old clients."""
        with self._lock:
            self.properties = dict(properties)
            self._stores.clear()
            self._cache.clear()

    # -- resolution ------------------------------------------------------------------

    def is_object_store(self, path: str) -> bool:
        """Whether ``path`` is in an object store neve reaches through
        :class:`~neve.io.objectstore.ObjectStore` (s3, s3a, s3n, gs)."""
        return _scheme(path) in OBJECT_SCHEMES

    def store(self, path: str) -> tuple[ObjectStore, str]:
        """The object store holding ``path`` and the key inside it (one store per
        bucket, shared by ``s3``, ``s3a`` and ``s3n``)."""
        scheme, bucket, key = split_uri(path)
        if scheme not in OBJECT_SCHEMES:
            raise NeveIOError(f"{path!r} is not in an object store (s3://, gs://)")
        family = "s3" if scheme in S3_SCHEMES else "gs"
        with self._lock:
            found = self._stores.get((family, bucket))
        if found is None:
            made = ObjectStore(scheme, bucket, self.properties)
            with self._lock:
                found = self._stores.setdefault((family, bucket), made)
        return found, key

    def filesystem(self, path: str) -> tuple[pafs.FileSystem, str]:
        """The pyarrow filesystem for a path and the path inside it."""
        scheme = _scheme(path)
        if scheme in OBJECT_SCHEMES:
            store, key = self.store(path)
            return store.filesystem, f"{store.bucket}/{key}"
        if scheme in _LOCAL_SCHEMES:
            with self._lock:
                fs = self._cache.get("")
                if fs is None:
                    fs = self._cache[""] = pafs.LocalFileSystem()
            return fs, os.path.abspath(local_path(path))
        parsed = urlparse(path)
        key = f"{scheme}://{parsed.netloc}"
        with self._lock:
            fs = self._cache.get(key)
        if fs is None:
            try:
                fs, inner = pafs.FileSystem.from_uri(path)
            except Exception as exc:
                raise NeveIOError(
                    f"cannot open a filesystem for {path!r}: {exc}; check the URI scheme and "
                    "the credentials in the environment"
                ) from exc
            with self._lock:
                self._cache[key] = fs
            return fs, inner
        return fs, f"{parsed.netloc}{parsed.path}" if scheme in ("s3", "gs", "gcs") else parsed.path

    def is_local(self, path: str) -> bool:
        return _scheme(path) in _LOCAL_SCHEMES

    # -- operations ------------------------------------------------------------------

    def open_input(self, path: str, size: int | None = None) -> IO[bytes]:
        """A random-access file. On an object store, a file whose ``size`` is known
        (from a manifest) and small is fetched whole in one request; otherwise the size
        is looked up first and parts are fetched as they are read."""
        if size is not None and size <= _WHOLE_READ_BYTES and self.is_object_store(path):
            return pa.BufferReader(self.read_bytes(path))  # type: ignore[no-any-return]
        fs, inner = self.filesystem(path)
        try:
            return fs.open_input_file(inner)  # type: ignore[no-any-return]
        except FileNotFoundError as exc:
            raise NeveIOError(f"file not found: {path}") from exc
        except OSError as exc:
            raise NeveIOError(f"cannot read {path}: {exc}") from exc

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """``length`` bytes of a file from ``offset`` (one request on object stores)."""
        if self.is_object_store(path):
            store, key = self.store(path)
            return store.get_range(key, offset, length)
        with self.open_input(path) as f:
            f.seek(offset)
            return f.read(length)

    def _keep_written(self, path: str, data: bytes) -> None:
        if not path.endswith(".avro") or len(data) > _WRITTEN_CACHE_BYTES // 4:
            return
        with self._lock:
            self._written[path] = data
            self._written_bytes += len(data)
            while self._written_bytes > _WRITTEN_CACHE_BYTES:
                _, dropped = self._written.popitem(last=False)
                self._written_bytes -= len(dropped)

    def _forget_written(self, path: str) -> None:
        with self._lock:
            dropped = self._written.pop(path, None)
            if dropped is not None:
                self._written_bytes -= len(dropped)

    def read_bytes(self, path: str) -> bytes:
        if self.is_object_store(path):
            with self._lock:
                kept = self._written.get(path)
            if kept is not None:
                return kept
            store, key = self.store(path)
            return store.get(key)
        if self.is_local(path):
            # Python's own file: pyarrow's costs ~0.2 ms on first use in a process and
            # ~30 us after, against ~15 us (planning reads a manifest list and manifests)
            try:
                with open(local_path(path), "rb") as f:
                    return f.read()
            except FileNotFoundError as exc:
                raise NeveIOError(f"file not found: {path}") from exc
            except OSError as exc:
                raise NeveIOError(f"cannot read {path}: {exc}") from exc
        with self.open_input(path) as f:
            return f.read()

    def open_output(self, path: str) -> IO[bytes]:
        fs, inner = self.filesystem(path)
        try:
            parent = inner.rsplit("/", 1)[0]
            if parent and self.is_local(path):
                os.makedirs(parent, exist_ok=True)
            return fs.open_output_stream(inner)  # type: ignore[no-any-return]
        except OSError as exc:
            raise NeveIOError(f"cannot write {path}: {exc}") from exc

    def write_bytes(self, path: str, data: bytes) -> None:
        if self.is_object_store(path):
            store, key = self.store(path)
            store.put(key, data)
            self._keep_written(path, data)
            return
        if self.is_local(path):  # Python's own file: a tenth of pyarrow's stream setup
            p = local_path(path)
            try:
                os.makedirs(os.path.dirname(p) or ".", exist_ok=True)
                with open(p, "wb") as f:
                    f.write(data)
            except OSError as exc:
                raise NeveIOError(f"cannot write {path}: {exc}") from exc
            return
        with self.open_output(path) as f:
            f.write(data)

    def create_exclusive(self, path: str, data: bytes) -> None:
        """Write a new file only if none exists at ``path`` (atomic create-if-absent;
        :class:`AlreadyExistsError` otherwise): ``O_EXCL``-style on local filesystems, a
        conditional put (``If-None-Match: *``) on object stores. Stores that ignore the
        condition are found by :meth:`supports_create_exclusive`."""
        if self.is_object_store(path):
            store, key = self.store(path)
            store.put(key, data, create=True)
            return
        if not self.is_local(path):
            raise NeveIOError(
                f"{path!r} is on a filesystem without an atomic create-if-absent in neve "
                "(local folders and object stores with conditional puts have one); use the "
                "SQL catalog for tables there"
            )
        p = os.path.abspath(local_path(path))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        # Write a private temporary file, then hard-link it into place: link() fails when
        # the name exists, and readers never see the file half written (as they would
        # with O_EXCL on the final name). Filesystems without hard links fall back to it.
        tmp = os.path.join(os.path.dirname(p), f".{os.path.basename(p)}.{os.urandom(8).hex()}.tmp")
        _write_new(tmp, data)
        try:
            os.link(tmp, p)
        except FileExistsError as exc:
            raise AlreadyExistsError(f"{path} exists already") from exc
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            try:
                _write_new(p, data)
            except FileExistsError as exc2:
                raise AlreadyExistsError(f"{path} exists already") from exc2
        finally:
            os.remove(tmp)

    def supports_create_exclusive(self, path: str) -> bool:
        """Whether :meth:`create_exclusive` is atomic below the folder ``path``: always
        on local folders; on an object store when it refuses a second conditional put
        of one key (probed once per bucket)."""
        if self.is_local(path):
            return True
        if not self.is_object_store(path):
            return False
        store, key = self.store(path)
        return store.supports_conditional_put(key)

    def exists(self, path: str) -> bool:
        if self.is_object_store(path):
            store, key = self.store(path)
            return store.head(key) is not None
        fs, inner = self.filesystem(path)
        return bool(fs.get_file_info(inner).type != pafs.FileType.NotFound)

    def file_size(self, path: str) -> int:
        if self.is_object_store(path):
            store, key = self.store(path)
            found = store.head(key)
            if found is None:
                raise NeveIOError(f"file not found: {path}")
            return found.size
        fs, inner = self.filesystem(path)
        info = fs.get_file_info(inner)
        if info.type == pafs.FileType.NotFound:
            raise NeveIOError(f"file not found: {path}")
        return int(info.size)

    def remove_empty_parents(self, path: str, stop_at: str = "data") -> None:
        """After deleting the file at ``path``: remove its folder and then the folders
        above it while they are empty, up to (not including) a folder named
        ``stop_at`` (where a table's data files go), so that a failed write leaves no
        empty folders behind. Only local files have folders of their own."""
        if not self.is_local(path):
            return
        folder = os.path.dirname(local_path(path))
        while folder and os.path.basename(folder) != stop_at:
            try:
                os.rmdir(folder)  # only an empty folder goes
            except OSError:
                return
            folder = os.path.dirname(folder)

    def delete(self, path: str, missing_ok: bool = True) -> None:
        if self.is_object_store(path):
            self._forget_written(path)
            store, key = self.store(path)
            if not missing_ok and store.head(key) is None:
                raise NeveIOError(f"file not found: {path}")
            if store.delete([key]):
                raise NeveIOError(f"cannot delete {path}")
            return
        fs, inner = self.filesystem(path)
        try:
            fs.delete_file(inner)
        except FileNotFoundError:
            if not missing_ok:
                raise NeveIOError(f"file not found: {path}") from None
        except OSError as exc:
            if "not found" in str(exc).lower() or "no such file" in str(exc).lower():
                if not missing_ok:
                    raise NeveIOError(f"file not found: {path}") from exc
                return
            raise NeveIOError(f"cannot delete {path}: {exc}") from exc

    def delete_many(self, paths: Sequence[str], workers: int = 8) -> tuple[str, ...]:
        """Delete ``paths`` and return those that could not be deleted (missing files
        count as deleted): on object stores in bulk requests (S3's ``DeleteObjects``,
        1,000 keys each), ``workers`` at a time; elsewhere one by one on ``workers``
        threads."""
        failed: list[str] = []
        by_store: dict[int, tuple[ObjectStore, list[tuple[str, str]]]] = {}
        others: list[str] = []
        for p in paths:
            if self.is_object_store(p):
                self._forget_written(p)
                store, key = self.store(p)
                by_store.setdefault(id(store), (store, []))[1].append((key, p))
            else:
                others.append(p)
        for store, pairs in by_store.values():
            back = {key: p for key, p in pairs}
            failed += [back[k] for k in store.delete([k for k, _ in pairs], workers)]

        def one(path: str) -> str | None:
            try:
                self.delete(path)
            except NeveIOError:
                return path
            return None

        if others:
            with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
                failed += [p for p in pool.map(one, others) if p is not None]
        return tuple(failed)

    def delete_dir(self, path: str) -> None:
        if self.is_object_store(path):
            store, key = self.store(path)
            failed = store.delete([i.key for i in store.objects(key)])
            if failed:
                raise NeveIOError(f"cannot delete {len(failed)} files below {path}")
            return
        fs, inner = self.filesystem(path)
        try:
            if fs.get_file_info(inner).type != pafs.FileType.NotFound:
                fs.delete_dir(inner)
        except OSError as exc:
            raise NeveIOError(f"cannot delete {path}: {exc}") from exc

    def list_dir(self, path: str) -> tuple[list[str], list[str]]:
        """The names of the folders and of the files directly in the folder ``path``
        (on object stores: the common prefixes and objects of a delimited listing);
        names starting with ``.`` are left out of the folders."""
        if self.is_object_store(path):
            store, key = self.store(path)
            folders, objects = store.children(key)
            return (
                [f for f in folders if not f.startswith(".")],
                [o.key.rsplit("/", 1)[-1] for o in objects],
            )
        folder = os.path.abspath(local_path(path))
        try:
            with os.scandir(folder) as entries:
                listed = list(entries)
        except (FileNotFoundError, NotADirectoryError):
            return [], []
        except OSError as exc:
            raise NeveIOError(f"cannot list {path}: {exc}") from exc
        return (
            [e.name for e in listed if e.is_dir() and not e.name.startswith(".")],
            [e.name for e in listed if e.is_file()],
        )

    def list_file_infos(self, path: str) -> list[tuple[str, int]]:
        """All files below a directory, recursively, with their modification times in
        milliseconds (paths as :meth:`list_files` gives them). Object stores list in
        pages (S3: 1,000 keys per request)."""
        if self.is_object_store(path):
            store, key = self.store(path)
            prefix = path.rstrip("/")
            base = key.rstrip("/")
            return [(prefix + i.key[len(base) :], i.mtime_ms) for i in store.objects(key)]
        fs, inner = self.filesystem(path)
        info = fs.get_file_info(pafs.FileSelector(inner, recursive=True, allow_not_found=True))
        prefix = path.rstrip("/")
        base = inner.rstrip("/")
        return [
            (prefix + i.path[len(base) :], (i.mtime_ns or 0) // 1_000_000)
            for i in info
            if i.type == pafs.FileType.File
        ]

    def list_files(self, path: str) -> list[str]:
        """All files below a directory, recursively, as paths with the same prefix style."""
        if self.is_object_store(path):
            return [p for p, _ in self.list_file_infos(path)]
        fs, inner = self.filesystem(path)
        info = fs.get_file_info(pafs.FileSelector(inner, recursive=True, allow_not_found=True))
        prefix = path.rstrip("/")
        base = inner.rstrip("/")
        return [prefix + i.path[len(base) :] for i in info if i.type == pafs.FileType.File]
