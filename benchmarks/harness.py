"""How every benchmark in this folder takes its numbers (benchmarks/README.md says it in
prose).

A step runs neve and its reference alternately, ``--runs`` times each (5 by default):
round i runs neve's run i and the reference's run i back to back, neve first in even
rounds and the reference first in odd ones, so that a change of the machine's speed
during the step falls on both sides alike and neither side always runs second. Per
step the scripts print each side's median, the median of the per-round ratios (round
i's neve time against round i's reference time), their spread (the lowest and highest
ratio, and from 5 runs on the interquartile range), and the 1-minute load average when
the step started and when it ended. :func:`session` prints the load average (from
``/proc/loadavg``) when the script starts and ends, so every number carries the load
it was taken under.

A side is a function that makes one run and returns its measured value, usually the
seconds of its timed part (:func:`timed`), so that setup, checks and rollbacks around
that part stay out of the number.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import mmap
import os
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "RUNS",
    "Ratio",
    "Runs",
    "add_runs_argument",
    "alternate",
    "kept_in_memory",
    "load_average",
    "ratio_of",
    "report",
    "session",
    "timed",
]

T = TypeVar("T")

#: Runs per side unless ``--runs`` says otherwise.
RUNS = 5
#: From this many pairs on, the interquartile range of the ratios is printed.
IQR_FROM = 5


def add_runs_argument(parser: argparse.ArgumentParser, default: int = RUNS) -> None:
    """Add ``--runs``: how many times each side runs, alternating."""
    parser.add_argument(
        "--runs",
        type=int,
        default=default,
        help=f"runs per side, alternating (default {default}; fewer than {RUNS} is a smoke run)",
    )


def load_average() -> tuple[float, float, float] | None:
    """The 1-, 5- and 15-minute load averages from /proc/loadavg (None elsewhere)."""
    try:
        with open("/proc/loadavg") as f:
            one, five, fifteen = f.read().split()[:3]
        return float(one), float(five), float(fifteen)
    except (OSError, ValueError):
        return None


def _load_text() -> str:
    avg = load_average()
    if avg is None:
        return "load average unknown (no /proc/loadavg)"
    cores = os.cpu_count() or 1
    text = f"load average {avg[0]:.2f} {avg[1]:.2f} {avg[2]:.2f} (1, 5, 15 min; {cores} cores)"
    if avg[0] > cores:
        text += ": busier than its cores, so other work shared the machine"
    return text


@contextlib.contextmanager
def session(title: str, runs: int) -> Iterator[None]:
    """Print ``title``, how the runs alternate and the load average, run the body, then
    print the load average again (also when the body fails)."""
    print(title, flush=True)
    note = "" if runs >= RUNS else f"; fewer than {RUNS}: a smoke run, not a measurement"
    print(
        f"runs: {runs} per side, alternating (medians; ratios per round, with their spread){note}",
        flush=True,
    )
    print(f"at start: {_load_text()}", flush=True)
    try:
        yield
    finally:
        print(f"at end: {_load_text()}", flush=True)


def timed(fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[float, T]:
    """Seconds ``fn(*args, **kwargs)`` took, and what it returned."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


@dataclass(frozen=True)
class Runs:
    """The values each side measured, in run order, and the 1-minute load average when
    the runs started and ended."""

    values: Mapping[str, Sequence[float]]
    load_start: float | None
    load_end: float | None

    def median(self, side: str) -> float:
        return statistics.median(self.values[side])


def _load1() -> float | None:
    avg = load_average()
    return None if avg is None else avg[0]


def alternate(sides: Mapping[str, Callable[[], float]], runs: int, *, warmup: bool = False) -> Runs:
    """Run every side ``runs`` times, round by round, the order of the sides reversed in
    every other round. Each side returns the value of its run (seconds, as a rule).
    With ``warmup`` every side runs once, unmeasured, before the first round."""
    if runs < 1:
        raise ValueError(f"runs must be at least 1, not {runs}")
    if warmup:
        for fn in sides.values():
            fn()
    names = list(sides)
    values: dict[str, list[float]] = {n: [] for n in names}
    start = _load1()
    for i in range(runs):
        for name in names if i % 2 == 0 else reversed(names):
            values[name].append(float(sides[name]()))
    return Runs(values, start, _load1())


@dataclass(frozen=True)
class Ratio:
    """The per-round ratios of one step: median, lowest, highest, and the quartiles
    when there are at least :data:`IQR_FROM` of them."""

    median: float
    low: float
    high: float
    q1: float | None
    q3: float | None
    n: int

    def spread(self) -> str:
        text = f"range {_fmt(self.low)}-{_fmt(self.high)}"
        if self.q1 is not None and self.q3 is not None:
            text += f", IQR {_fmt(self.q1)}-{_fmt(self.q3)}"
        return text


def ratio_of(numerator: Sequence[float], denominator: Sequence[float]) -> Ratio:
    """The ratios ``numerator[i] / denominator[i]`` of paired runs, summarised."""
    if len(numerator) != len(denominator) or not numerator:
        raise ValueError("ratios need the same, non-zero number of runs on both sides")
    ratios = sorted(
        n / d if d else float("inf") for n, d in zip(numerator, denominator, strict=True)
    )
    q1 = q3 = None
    if len(ratios) >= IQR_FROM:
        q1, _, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return Ratio(statistics.median(ratios), ratios[0], ratios[-1], q1, q3, len(ratios))


def _fmt(x: float) -> str:
    """Three significant digits, give or take (0.943, 12.2, 515)."""
    if x != x or x in (float("inf"), float("-inf")):
        return str(x)
    a = abs(x)
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def _value(x: float, unit: str) -> str:
    if unit == "s" and abs(x) < 1:
        return f"{_fmt(x * 1000)} ms"
    return f"{_fmt(x)} {unit}"


def report(
    label: str,
    runs: Runs,
    subject: str,
    reference: str,
    *,
    invert: bool = False,
    unit: str = "s",
    width: int = 0,
) -> Ratio:
    """Print one line for a step: both sides' medians, the ratio ``subject/reference``
    (``reference/subject`` with ``invert``, for "how many times faster"), its spread,
    the number of runs and the load at the step's start and end; returns the ratio."""
    num, den = (reference, subject) if invert else (subject, reference)
    r = ratio_of(runs.values[num], runs.values[den])

    def load(x: float | None) -> str:
        return "?" if x is None else f"{x:.1f}"

    print(
        f"  {label:<{width}}  {subject} {_value(runs.median(subject), unit)}, {reference} "
        f"{_value(runs.median(reference), unit)}  {num}/{den} {_fmt(r.median)} "
        f"({r.spread()}; {r.n} run{'s' if r.n != 1 else ''}; load {load(runs.load_start)}->{load(runs.load_end)})",
        flush=True,
    )
    return r


@contextlib.contextmanager
def kept_in_memory(paths: Sequence[str]) -> Iterator[int]:
    """Keep the files at ``paths`` in the page cache while the body runs: each is mapped
    and locked (``mlock``), so that "warm" stays warm. Some machines page out page-cache
    pages left alone for a while (this project's does, through DAMON: pages idle for a
    minute), and then a warm read of a few rows reads the disk, for neve and the
    reference alike. Gives the bytes locked; 0 where locking is refused (no
    CAP_IPC_LOCK and a small ``ulimit -l``): the body runs all the same."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.mlock.argtypes = libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    failed = ctypes.c_void_p(-1).value
    maps: list[tuple[int, int]] = []
    locked = 0
    try:
        for path in paths:
            size = os.path.getsize(path)
            if not size:
                continue
            fd = os.open(path, os.O_RDONLY)
            try:  # shared and read-only: the page cache's own pages, not copies
                addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            finally:
                os.close(fd)
            if addr is None or addr == failed:
                break
            maps.append((addr, size))
            if libc.mlock(ctypes.c_void_p(addr), size) != 0:
                break
            locked += size
        yield locked
    finally:
        for addr, size in maps:
            libc.munmap(ctypes.c_void_p(addr), size)  # unlocks too
