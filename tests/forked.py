"""Run a function in a child process forked from the test's process (the state a
forked worker inherits: thread pools, native libraries already used), and fail the test
when the child hangs."""

from __future__ import annotations

import multiprocessing
import warnings
from collections.abc import Callable
from typing import Any

import pytest


def run_forked(target: Callable[..., None], args: tuple[Any, ...], doing: str) -> int | None:
    """The exit code of ``target(*args)`` run in a forked child; the test fails (the child
    killed) if it has not ended within two minutes, saying it hung ``doing``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads, 3.12+
        child = multiprocessing.get_context("fork").Process(target=target, args=args)
        child.start()
    child.join(timeout=120)
    if child.is_alive():
        child.kill()
        pytest.fail(f"the forked child hung {doing}")
    return child.exitcode
