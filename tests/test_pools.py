"""Thread pools kept per process (neve.io.pools): started once, and started anew in a
child forked after them, whose copy of the parent's pool has no threads."""

from __future__ import annotations

import os

from forked import run_forked
from neve.io.pools import ForkGuard, ProcessPool

_POOLS = [ProcessPool(2, "test-pool"), ProcessPool(lambda: 3, "test-pool-by-call")]


def test_a_pool_starts_once_with_its_workers() -> None:
    fixed, by_call = _POOLS
    assert fixed.get() is fixed.get()
    assert fixed.get()._max_workers == 2
    assert by_call.get()._max_workers == 3
    assert fixed.started and by_call.started


def _use_in_child() -> None:
    ok = all(p.get().submit(len, "abc").result(timeout=30) == 3 for p in _POOLS)
    os._exit(0 if ok else 3)


def test_a_child_forked_after_a_pool_ran_runs_its_own() -> None:
    for p in _POOLS:
        assert p.get().submit(len, "ab").result() == 2  # the parent's threads exist now
    assert run_forked(_use_in_child, (), "on a pool copied from its parent") == 0
    assert _POOLS[0].get().submit(len, "a").result() == 1  # the parent's pool still runs


_USED, _UNUSED = ForkGuard(), ForkGuard()


def _guards_in_child() -> None:
    os._exit(0 if _USED.forked_after_use and not _UNUSED.forked_after_use else 3)


def test_a_guard_tells_a_child_forked_after_its_library_ran() -> None:
    _USED.use()
    assert not _USED.forked_after_use  # this process may go on using it
    assert run_forked(_guards_in_child, (), "reading its guards") == 0
