"""Encoded forms of frozen spec objects, kept by object identity.

A commit writes its parent's snapshots again into the new metadata file and its
parent's manifests again into the new manifest list; the objects are the same frozen
ones from commit to commit, so each is encoded once. Entries are keyed by ``id`` and
hold the object, so an id cannot be reused by another object while its entry lives;
objects decoded afresh (another process, a reload) are simply encoded again."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["EncodedCache"]

_V = TypeVar("_V")


class EncodedCache(Generic[_V]):
    """Encodings of objects by (identity, variant); emptied when it reaches ``limit``
    entries (commits re-fill it with what they use)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._entries: dict[tuple[int, int], tuple[object, _V]] = {}
        self._lock = threading.Lock()

    def get(self, obj: object, variant: int, encode: Callable[[], _V]) -> _V:
        """The encoding of ``obj`` in ``variant`` (a format version), made by
        ``encode`` the first time."""
        key = (id(obj), variant)
        hit = self._entries.get(key)
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = encode()
        with self._lock:
            if len(self._entries) >= self.limit:
                self._entries.clear()
            self._entries[key] = (obj, value)
        return value
