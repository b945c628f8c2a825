"""Thread pools kept for the life of a process (manifest fetches, page reads and
decodes, a take's file reads), and guards of native libraries' own pools.

A pool is started on first use and its threads idle between uses (starting and joining
threads on every call costs every call, and a loaded machine makes the join wait). A
process forked after a pool started has none of its threads, and the pool's copy would
take tasks and run none: the child starts its own pools on first use.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from neve.errors import EngineSetupError

__all__ = ["POLARS", "ForkGuard", "ProcessPool"]


class ProcessPool:
    """A thread pool of this process, started on first :meth:`get`, with ``workers``
    threads (a number, or a function giving it then) named after ``name``."""

    def __init__(self, workers: int | Callable[[], int], name: str) -> None:
        self._workers = workers
        self._name = name
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        _pools.add(self)

    def get(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                n = self._workers if isinstance(self._workers, int) else self._workers()
                self._pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix=self._name)
            return self._pool

    @property
    def started(self) -> bool:
        """Whether this process has started the pool."""
        return self._pool is not None

    def _forget(self) -> None:
        self._pool, self._lock = None, threading.Lock()


_pools: weakref.WeakSet[ProcessPool] = weakref.WeakSet()


def _forget_pools_in_child() -> None:
    for pool in list(_pools):
        pool._forget()


os.register_at_fork(after_in_child=_forget_pools_in_child)


class ForkGuard:
    """Whether a native library that runs thread pools of its own (polars, polars-avro)
    may run in this process: not in a process forked after it ran here or in an
    ancestor, whose copy of its pool has no threads and hangs the first call."""

    def __init__(self, library: str = "a native library") -> None:
        self.library = library
        self._used = False
        self._forked_after_use = False
        _guards.add(self)

    def use(self) -> None:
        """Note that the library runs in this process."""
        self._used = True

    @property
    def forked_after_use(self) -> bool:
        return self._forked_after_use

    def require(self, what: str) -> None:
        """Note that ``what`` runs the library here, or raise
        :class:`~neve.errors.EngineSetupError` where it must not run (it would wait
        forever on threads this process does not have); for callers with no other way
        of doing ``what``."""
        if self._forked_after_use:
            library = self.library
            raise EngineSetupError(
                f"{what} runs {library}, whose thread pool does not survive fork(): this "
                f"process was forked after {library} ran in it or in its parent, and "
                f"{library} would wait forever here. Start worker processes with "
                "multiprocessing's 'spawn' or 'forkserver' start method, or do this in "
                "the parent; the table is unchanged"
            )
        self.use()

    def _forked(self) -> None:
        self._forked_after_use = self._forked_after_use or self._used


_guards: weakref.WeakSet[ForkGuard] = weakref.WeakSet()

#: polars' thread pool: one per process, whichever module ran polars first (merge
#: engines, MERGE and upsert, key lookups, changelogs, a take's gathers), so one guard.
POLARS = ForkGuard("polars")


def _forked_guards_in_child() -> None:
    for guard in list(_guards):
        guard._forked()


os.register_at_fork(after_in_child=_forked_guards_in_child)
