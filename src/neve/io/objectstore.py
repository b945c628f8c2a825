"""One bucket of an object store, reached through two well-kept libraries.

``obstore`` (the Python binding of the Rust ``object_store`` crate) makes the requests
whose count matters: whole-object reads and writes (one GET, one PUT), conditional
puts (``If-None-Match: *``, the put-if-absent that commits rely on), listings (paged by
the store: S3 returns at most 1,000 keys per request) and bulk deletes (S3's
``DeleteObjects``, 1,000 keys per request). pyarrow's filesystem serves the streams that
Parquet reading and writing need (range reads with coalescing and concurrency, and
multipart uploads for large files). Both retry throttling (503 SlowDown), other 5xx
answers and dropped connections with exponential backoff, up to ``s3.max-attempts``
attempts.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import obstore
import pyarrow.fs as pafs
from obstore.exceptions import AlreadyExistsError as _StoreExists
from obstore.exceptions import NotFoundError as _StoreNotFound
from obstore.store import S3Store, from_url

from neve.errors import AlreadyExistsError, NeveIOError, ValidationError
from neve.io.s3 import S3Settings, s3_settings

__all__ = ["OBJECT_SCHEMES", "S3_SCHEMES", "ObjectInfo", "ObjectStore", "split_uri"]

#: Schemes that name an S3 bucket (Hadoop's ``s3a``/``s3n`` included).
S3_SCHEMES = ("s3", "s3a", "s3n")
#: Schemes served here: S3's, and Google Cloud Storage's (untested here: no server).
OBJECT_SCHEMES = (*S3_SCHEMES, "gs", "gcs")
#: Keys per bulk delete request (S3's limit).
DELETE_BATCH = 1000

#: Whether a bucket has conditional puts, probed once per process per endpoint.
_PROBED: dict[tuple[str, str | None, str], bool] = {}
_PROBED_LOCK = threading.Lock()


@dataclass(frozen=True)
class ObjectInfo:
    """An object as a listing gives it: its key in the bucket, size and modification
    time in milliseconds."""

    key: str
    size: int
    mtime_ms: int


def split_uri(uri: str) -> tuple[str, str, str]:
    """``(scheme, bucket, key)`` of ``scheme://bucket/key``."""
    scheme, _, rest = uri.partition("://")
    bucket, _, key = rest.partition("/")
    return scheme.lower(), bucket, key


def _translate(exc: Exception, what: str) -> NeveIOError:
    text = " ".join(str(exc).split("Debug source:")[0].split())
    return NeveIOError(
        f"{what} failed: {text[:500]}; check the endpoint, the credentials and that the "
        "bucket exists (retries on throttling and server errors were used up, if any)"
    )


class ObjectStore:
    """The objects of one bucket; thread-safe. ``scheme`` is the URI's (``s3a`` and
    ``s3n`` are ``s3``)."""

    def __init__(self, scheme: str, bucket: str, properties: dict[str, str]) -> None:
        self.scheme = "s3" if scheme in S3_SCHEMES else scheme
        self.bucket = bucket
        self.settings: S3Settings | None = None
        self._lock = threading.Lock()
        self._fs: pafs.FileSystem | None = None
        attempts = 10
        if self.scheme == "s3":
            self.settings = s3_settings(properties)
            attempts = self.settings.max_attempts
        retry: Any = {
            "max_retries": attempts - 1,
            "backoff": {
                "init_backoff": timedelta(milliseconds=50),
                "max_backoff": timedelta(seconds=5),
                "base": 2,
            },
            "retry_timeout": timedelta(minutes=2),
        }
        try:
            if self.settings is not None:
                client: Any = {"allow_http": self.settings.allow_http}
                if self.settings.connect_timeout is not None:
                    client["connect_timeout"] = timedelta(seconds=self.settings.connect_timeout)
                if self.settings.request_timeout is not None:
                    client["timeout"] = timedelta(seconds=self.settings.request_timeout)
                self._store: Any = S3Store(
                    bucket,
                    config=self.settings.obstore_config(),  # type: ignore[arg-type]
                    client_options=client,
                    retry_config=retry,
                )
            else:
                self._store = from_url(f"{scheme}://{bucket}", retry_config=retry)
        except Exception as exc:
            raise ValidationError(
                f"cannot configure the object store for {scheme}://{bucket}: {exc}"
            ) from exc

    def uri(self, key: str) -> str:
        return f"{self.scheme}://{self.bucket}/{key}"

    # -- pyarrow's side ------------------------------------------------------------------

    @property
    def filesystem(self) -> pafs.FileSystem:
        """pyarrow's filesystem for this store (paths inside it are ``bucket/key``)."""
        with self._lock:
            if self._fs is None:
                self._fs = self._new_filesystem()
            return self._fs

    def _new_filesystem(self) -> pafs.FileSystem:
        try:
            if self.settings is None:
                fs, _ = pafs.FileSystem.from_uri(f"{self.scheme}://{self.bucket}/")
                return fs
            return pafs.S3FileSystem(
                **self.settings.pyarrow_options(),
                # the legacy strategy has no retry quota, which the standard one runs
                # out of under sustained throttling
                retry_strategy=pafs.AwsDefaultS3RetryStrategy(
                    max_attempts=self.settings.max_attempts
                ),
                # small files in one PUT, not a multipart upload of three requests
                allow_delayed_open=True,
            )
        except Exception as exc:
            raise ValidationError(
                f"cannot open pyarrow's filesystem for {self.scheme}://{self.bucket}: {exc}"
            ) from exc

    # -- obstore's side ------------------------------------------------------------------

    def get(self, key: str) -> bytes:
        try:
            return bytes(obstore.get(self._store, key).bytes())
        except (_StoreNotFound, FileNotFoundError) as exc:
            raise NeveIOError(f"file not found: {self.uri(key)}") from exc
        except Exception as exc:
            raise _translate(exc, f"reading {self.uri(key)}") from exc

    def get_range(self, key: str, offset: int, length: int) -> bytes:
        try:
            return bytes(obstore.get_range(self._store, key, start=offset, length=length))
        except (_StoreNotFound, FileNotFoundError) as exc:
            raise NeveIOError(f"file not found: {self.uri(key)}") from exc
        except Exception as exc:
            raise _translate(exc, f"reading {self.uri(key)}") from exc

    def put(self, key: str, data: bytes, *, create: bool = False) -> None:
        """Write an object in one request; with ``create``, only if none exists at
        ``key`` (:class:`AlreadyExistsError` otherwise)."""
        try:
            obstore.put(
                self._store,
                key,
                data,
                mode="create" if create else "overwrite",
                use_multipart=len(data) > 64 * 1024 * 1024,
            )
        except _StoreExists as exc:
            raise AlreadyExistsError(f"{self.uri(key)} exists already") from exc
        except Exception as exc:
            raise _translate(exc, f"writing {self.uri(key)}") from exc

    def head(self, key: str) -> ObjectInfo | None:
        try:
            meta = obstore.head(self._store, key)
        except (_StoreNotFound, FileNotFoundError):
            return None
        except Exception as exc:
            raise _translate(exc, f"looking up {self.uri(key)}") from exc
        return _info(meta)

    def objects(self, prefix: str, offset: str | None = None) -> list[ObjectInfo]:
        """Every object below the folder ``prefix`` (recursively), in key order; with
        ``offset``, only keys after it. The store pages the listing."""
        folder = prefix.rstrip("/")
        out: list[ObjectInfo] = []
        try:
            stream = obstore.list(
                self._store, folder + "/" if folder else None, offset=offset, chunk_size=1000
            )
            for chunk in stream:
                out.extend(_info(m) for m in chunk)
        except (_StoreNotFound, FileNotFoundError):
            return []
        except Exception as exc:
            raise _translate(exc, f"listing {self.uri(folder)}") from exc
        return out

    def children(self, prefix: str) -> tuple[list[str], list[ObjectInfo]]:
        """The names of the "folders" directly below ``prefix`` (common prefixes) and
        the objects directly in it."""
        folder = prefix.rstrip("/")
        try:
            found = obstore.list_with_delimiter(self._store, folder + "/" if folder else None)
        except (_StoreNotFound, FileNotFoundError):
            return [], []
        except Exception as exc:
            raise _translate(exc, f"listing {self.uri(folder)}") from exc
        names = [p.rstrip("/").rsplit("/", 1)[-1] for p in found["common_prefixes"]]
        return names, [_info(m) for m in found["objects"]]

    def delete(self, keys: Sequence[str], workers: int = 8) -> list[str]:
        """Delete objects in bulk requests of up to 1,000 keys, ``workers`` requests at
        a time; returns the keys that could not be deleted (missing keys count as
        deleted)."""
        batches = [list(keys[i : i + DELETE_BATCH]) for i in range(0, len(keys), DELETE_BATCH)]

        def one(batch: list[str]) -> list[str]:
            try:
                obstore.delete(self._store, batch)
                return []
            except Exception:
                pass
            failed = []  # find out which ones: one by one
            for key in batch:
                try:
                    obstore.delete(self._store, key)
                except (_StoreNotFound, FileNotFoundError):
                    continue
                except Exception:
                    failed.append(key)
            return failed

        if len(batches) <= 1:
            return one(batches[0]) if batches else []
        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(batches)))) as pool:
            return [k for failed in pool.map(one, batches) for k in failed]

    def supports_conditional_put(self, probe_prefix: str) -> bool:
        """Whether the store refuses a second put-if-absent of one key (probed once
        per process and bucket; ``s3.conditional-put`` true/false skips the probe). The
        probe writes and removes one small object below ``probe_prefix``."""
        declared = self.settings.conditional_put if self.settings is not None else "auto"
        if declared != "auto":
            return declared == "true"
        endpoint = self.settings.endpoint if self.settings is not None else None
        probe_key = (self.scheme, endpoint, self.bucket)
        with _PROBED_LOCK:
            if probe_key in _PROBED:
                return _PROBED[probe_key]
        key = f"{probe_prefix.rstrip('/')}/.neve-conditional-put-probe-{uuid.uuid4().hex}"
        self.put(key, b"probe", create=True)
        try:
            self.put(key, b"probe", create=True)
            found = False
        except AlreadyExistsError:
            found = True
        finally:
            self.delete([key])
        with _PROBED_LOCK:
            _PROBED[probe_key] = found
        return found


def _info(meta: Any) -> ObjectInfo:
    modified = meta.get("last_modified")
    mtime_ms = int(modified.timestamp() * 1000) if modified is not None else 0
    return ObjectInfo(str(meta["path"]), int(meta["size"]), mtime_ms)
