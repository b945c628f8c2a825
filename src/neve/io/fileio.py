"""FileIO over pyarrow.fs: plain paths, file://, s3://, gs://, hdfs:// and whatever else
``pyarrow.fs.FileSystem.from_uri`` resolves. Paths stay as the caller wrote them (they
are what goes into metadata); only the filesystem lookup strips the scheme.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any
from urllib.parse import urlparse

import pyarrow.fs as pafs

from neve.errors import AlreadyExistsError, NeveIOError

__all__ = ["FileIO", "InputFile"]

_LOCAL_SCHEMES = ("", "file")


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
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"properties": self.properties}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["properties"])  # type: ignore[misc]

    # -- resolution ------------------------------------------------------------------

    def filesystem(self, path: str) -> tuple[pafs.FileSystem, str]:
        """The pyarrow filesystem for a path and the path inside it."""
        scheme = _scheme(path)
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

    def open_input(self, path: str) -> IO[bytes]:
        fs, inner = self.filesystem(path)
        try:
            return fs.open_input_file(inner)  # type: ignore[no-any-return]
        except FileNotFoundError as exc:
            raise NeveIOError(f"file not found: {path}") from exc
        except OSError as exc:
            raise NeveIOError(f"cannot read {path}: {exc}") from exc

    def read_bytes(self, path: str) -> bytes:
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
        with self.open_output(path) as f:
            f.write(data)

    def create_exclusive(self, path: str, data: bytes) -> None:
        """Write a new file only if none exists at ``path`` (atomic create-if-absent).

        Only local filesystems offer this; object stores have no such primitive, which
        is why their tables need the SQL catalog.
        """
        if not self.is_local(path):
            raise NeveIOError(
                f"{path!r} is not on a local filesystem, which has no atomic create-if-absent; "
                "use the SQL catalog for tables on object stores"
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

    def exists(self, path: str) -> bool:
        fs, inner = self.filesystem(path)
        return bool(fs.get_file_info(inner).type != pafs.FileType.NotFound)

    def file_size(self, path: str) -> int:
        fs, inner = self.filesystem(path)
        info = fs.get_file_info(inner)
        if info.type == pafs.FileType.NotFound:
            raise NeveIOError(f"file not found: {path}")
        return int(info.size)

    def delete(self, path: str, missing_ok: bool = True) -> None:
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

    def delete_many(self, paths: Sequence[str], workers: int) -> tuple[str, ...]:
        """Delete ``paths`` with ``workers`` threads; returns those that could not be
        deleted (missing files count as deleted)."""

        def one(path: str) -> str | None:
            try:
                self.delete(path)
            except NeveIOError:
                return path
            return None

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            return tuple(p for p in pool.map(one, paths) if p is not None)

    def delete_dir(self, path: str) -> None:
        fs, inner = self.filesystem(path)
        try:
            if fs.get_file_info(inner).type != pafs.FileType.NotFound:
                fs.delete_dir(inner)
        except OSError as exc:
            raise NeveIOError(f"cannot delete {path}: {exc}") from exc

    def list_file_infos(self, path: str) -> list[tuple[str, int]]:
        """All files below a directory, recursively, with their modification times in
        milliseconds (paths as :meth:`list_files` gives them)."""
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
        fs, inner = self.filesystem(path)
        info = fs.get_file_info(pafs.FileSelector(inner, recursive=True, allow_not_found=True))
        prefix = path.rstrip("/")
        base = inner.rstrip("/")
        return [prefix + i.path[len(base) :] for i in info if i.type == pafs.FileType.File]
