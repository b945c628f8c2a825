"""Storage credentials a REST catalog server hands out with each table.

A ``load table`` answer may carry ``config`` and ``storage-credentials`` (a list of
``{prefix, config}``): the client takes the credential with the longest prefix that
the table's location starts with, over ``config``, over the catalog's own properties
(the spec's order), and reads and writes the table's files with them. Short-lived
credentials carry ``s3.session-token-expires-at-ms``; a :class:`VendedFileIO` fetches
new ones from the server's ``credentials`` endpoint (or loads the table again, when
the server does not offer that endpoint) before they expire.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from neve.io.fileio import FileIO
from neve.io.objectstore import ObjectStore

__all__ = [
    "EXPIRES_AT_KEY",
    "VENDED_KEYS",
    "VendedFileIO",
    "best_credential",
    "table_properties",
]

#: The expiry of vended credentials, milliseconds since the epoch (Iceberg's name).
EXPIRES_AT_KEY = "s3.session-token-expires-at-ms"
#: The properties that make up vended credentials (dropped before new ones are merged).
VENDED_KEYS = frozenset(
    {"s3.access-key-id", "s3.secret-access-key", "s3.session-token", EXPIRES_AT_KEY}
)
#: Fetch new credentials this long before they expire (at most half their lifetime).
_REFRESH_MARGIN_MS = 300_000


def best_credential(credentials: Any, location: str) -> dict[str, str]:
    """The ``config`` of the credential whose prefix is the longest that ``location``
    starts with ({} when none is)."""
    best: Mapping[str, Any] | None = None
    if isinstance(credentials, Sequence):
        for cred in credentials:
            if not isinstance(cred, Mapping) or not isinstance(cred.get("prefix"), str):
                continue
            if location.startswith(cred["prefix"]) and (
                best is None or len(cred["prefix"]) > len(best["prefix"])
            ):
                best = cred
    config = best.get("config") if best is not None else None
    return {str(k): str(v) for k, v in config.items()} if isinstance(config, Mapping) else {}


def table_properties(
    base: Mapping[str, str], location: str, body: Mapping[str, Any]
) -> dict[str, str]:
    """The file IO properties of a table from a ``load table`` answer: the catalog's,
    then the answer's ``config``, then its best storage credential."""
    config = body.get("config")
    extra = {str(k): str(v) for k, v in config.items()} if isinstance(config, Mapping) else {}
    return {**base, **extra, **best_credential(body.get("storage-credentials"), location)}


def _expiry(properties: Mapping[str, str]) -> int | None:
    raw = properties.get(EXPIRES_AT_KEY)
    try:
        return int(raw) if raw else None
    except ValueError:
        return None


class VendedFileIO(FileIO):
    """A table's file IO with the credentials its catalog server vended; ``refresh``
    gives new properties before the old ones expire. Pickles as a plain FileIO with the
    credentials of the moment (a worker process cannot ask the server)."""

    def __init__(
        self,
        properties: dict[str, str],
        refresh: Callable[[], dict[str, str]] | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(properties)
        self._refresh = refresh
        self._clock = clock
        self._refresh_lock = threading.Lock()
        #: when the credentials expire (ms since the epoch; None: they do not)
        self.expires_at_ms = _expiry(self.properties)
        self._refresh_at_ms = self._due(self.expires_at_ms)
        #: how often new credentials were fetched
        self.refreshes = 0

    def __reduce__(self) -> tuple[Any, ...]:
        return (FileIO, (dict(self.properties),))

    def _due(self, expires_at_ms: int | None) -> float:
        if expires_at_ms is None:
            return float("inf")
        left = expires_at_ms - self._clock() * 1000
        return expires_at_ms - min(_REFRESH_MARGIN_MS, max(left, 0) / 2)

    def expire_now(self) -> None:
        """Treat the credentials as expired: the next object-store access fetches new
        ones (after the server refused the old ones, say)."""
        self._refresh_at_ms = 0

    def store(self, path: str) -> tuple[ObjectStore, str]:
        if self._refresh is not None and self._clock() * 1000 >= self._refresh_at_ms:
            with self._refresh_lock:
                if self._clock() * 1000 >= self._refresh_at_ms:
                    fresh = self._refresh()
                    self.replace_properties(fresh)
                    self.expires_at_ms = _expiry(fresh)
                    self._refresh_at_ms = self._due(self.expires_at_ms)
                    self.refreshes += 1
        return super().store(path)
