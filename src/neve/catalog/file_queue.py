"""The filesystem catalog's commit queue (:mod:`neve.catalog.commit_queue`): one empty
file per queued writer in the table's ``metadata/commit-queue/`` folder, named
``<since>-<ticket>-<heartbeat>`` (microseconds since the epoch), so one listing tells
the whole queue; a heartbeat is refreshed by writing the file under its new name and
deleting the old one. Works on local folders and on object stores (no rename needed)."""

from __future__ import annotations

import contextlib
import time

import neve.catalog.commit_queue as commit_queue
from neve.catalog.commit_queue import QueueEntry, head
from neve.errors import NeveIOError
from neve.io.fileio import FileIO

__all__ = ["FileCommitQueue"]

FOLDER = "commit-queue"


def _name(entry: QueueEntry) -> str:
    return f"{int(entry.since * 1e6):020d}-{entry.ticket}-{int(entry.heartbeat * 1e6):020d}"


def _parse(name: str) -> QueueEntry | None:
    parts = name.split("-")
    if len(parts) != 3 or not (parts[0].isdigit() and parts[2].isdigit()):
        return None
    return QueueEntry(int(parts[0]) / 1e6, parts[1], int(parts[2]) / 1e6)


class FileCommitQueue:
    """The queue of the tables of one filesystem catalog; ``folder`` is a table's
    ``metadata`` folder (a path FileIO takes)."""

    def __init__(self, io: FileIO) -> None:
        self.io = io

    def _entries(self, folder: str) -> dict[str, QueueEntry]:
        where = f"{folder}/{FOLDER}"
        try:
            paths = self.io.list_files(where)
        except NeveIOError:
            return {}
        out: dict[str, QueueEntry] = {}
        for path in paths:
            entry = _parse(path.rsplit("/", 1)[-1])
            if entry is not None:
                out[path] = entry
        return out

    def join(self, folder: str, since: float, ticket: str) -> str:
        # No listing first (a request on a store): a second file of one ticket, which
        # only a repeated join could write, orders the same and goes with its leave.
        entry = QueueEntry(since, ticket, time.time())
        self.io.write_bytes(f"{folder}/{FOLDER}/{_name(entry)}", b"")
        return ticket

    def turn(self, folder: str, ticket: str) -> bool:
        now = time.time()
        entries = self._entries(folder)
        mine = [(p, e) for p, e in entries.items() if e.ticket == ticket]
        if mine and now - mine[0][1].heartbeat > commit_queue.TTL_SECONDS / 4:
            path, entry = mine[0]
            fresh = QueueEntry(entry.since, ticket, now)
            self.io.write_bytes(f"{folder}/{FOLDER}/{_name(fresh)}", b"")
            with contextlib.suppress(NeveIOError):
                self.io.delete(path)
            entries = {p: e for p, e in entries.items() if p != path}
            entries[f"{folder}/{FOLDER}/{_name(fresh)}"] = fresh
        first = head(entries.values(), now)
        return first is None or first.ticket == ticket

    def leave(self, folder: str, ticket: str) -> None:
        for path, entry in self._entries(folder).items():
            if entry.ticket == ticket:
                with contextlib.suppress(NeveIOError):
                    self.io.delete(path)

    def refuses(self, folder: str, turn: str | None) -> bool:
        """Whether an older live ticket than ``turn`` is queued."""
        first = head(self._entries(folder).values(), time.time())
        return first is not None and first.ticket != turn
