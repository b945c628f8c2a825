"""Positioned reads of data files for the page reader (:mod:`neve.arrow.pages`):
local files mapped into memory (a read is a slice), files in object stores read through
pyarrow's filesystem with neighbouring ranges coalesced and several requests at once;
every read counted for benchmarks (:func:`counting_reads`); a file's layout (footer,
page index) from the process-wide cache or parsed once; and its description for
``neve files --pages`` (:func:`describe_pages`)."""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from neve.arrow.fragments import retrying
from neve.arrow.parquet_layout import ParquetLayout, layout_cache, parse_layout, tail_size
from neve.errors import NeveIOError
from neve.io.fileio import FileIO
from neve.io.pools import ProcessPool

__all__ = [
    "PageFile",
    "ReadStats",
    "counting_reads",
    "decoders",
    "describe_pages",
    "executor",
    "open_page_file",
]

#: Holes up to this size between two wanted byte ranges of a file in an object store
#: are read along with them: a request costs more than that many bytes transferred.
_GAP_REMOTE = 512 * 1024


_reads = ProcessPool(8, "neve-pages")
_decoders = ProcessPool(lambda: os.cpu_count() or 2, "neve-decode")


def executor() -> ThreadPoolExecutor:
    """A pool shared by all page reads (positioned reads release the GIL)."""
    return _reads.get()


def decoders() -> ThreadPoolExecutor:
    """A pool shared by all decoding of pages, a thread per core: decoding is work for
    a core (and between pyarrow's calls, for the GIL), and more threads than cores
    only wait on each other (a 10-row take of parquet-java's layout, six decode units
    on two cores, took about 7% longer on the reads' eight threads)."""
    return _decoders.get()


@dataclass
class ReadStats:
    """What reads cost: bytes read from files and the number of reads (thread-safe)."""

    bytes: int = 0
    reads: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, nbytes: int, reads: int = 1) -> None:
        with self._lock:
            self.bytes += nbytes
            self.reads += reads


_counters: list[ReadStats] = []
_counters_lock = threading.Lock()


@contextlib.contextmanager
def counting_reads() -> Iterator[ReadStats]:
    """Count every read the page reader makes, in any thread, while the block runs
    (benchmarks print bytes read per row taken with it)."""
    stats = ReadStats()
    with _counters_lock:
        _counters.append(stats)
    try:
        yield stats
    finally:
        with _counters_lock:
            _counters.remove(stats)


class _Mapped:
    """Local data files mapped into memory, the most recently used kept open: a
    positioned read is then a slice, not a system call and a copy (a take reads
    thousands of pages). A file is mapped anew when its identity or size changed."""

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self._items: OrderedDict[str, tuple[tuple[int, int, int], memoryview]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str) -> memoryview:
        st = os.stat(path)
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            found = self._items.get(path)
            if found is not None and found[0] == stamp:
                self._items.move_to_end(path)
                return found[1]
        with open(path, "rb") as f:  # the map outlives the descriptor
            view = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
        with self._lock:
            self._items[path] = (stamp, view)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return view


_mapped = _Mapped()


class PageFile:
    """Positioned reads of one file (mapped into memory when local, else through
    pyarrow's filesystem), counted in ``stats``."""

    def __init__(self, io: FileIO, path: str, stats: ReadStats | None = None) -> None:
        fs, inner = io.filesystem(path)
        self.path = path
        self.local = isinstance(fs, pafs.LocalFileSystem)
        self.stats = stats
        self._file: pa.NativeFile | None = None
        try:
            if self.local:
                self._map = _mapped.get(inner)
                self.size = len(self._map)
            else:
                self._file = retrying(lambda: fs.open_input_file(inner))
                self.size = int(self._file.size())
        except FileNotFoundError as exc:
            raise NeveIOError(f"data file not found: {path}") from exc
        except (OSError, ValueError, pa.ArrowException) as exc:  # ValueError: an empty file
            raise NeveIOError(f"cannot read {path}: {exc}") from exc

    def _count(self, length: int, reads: int = 1) -> None:
        if self.stats is not None:
            self.stats.add(length, reads)
        for counter in _counters:
            counter.add(length, reads)

    def read_range(self, offset: int, length: int) -> memoryview:
        if self._file is None:
            if offset < 0 or offset + length > self.size:
                raise NeveIOError(f"{self.path} ends before byte {offset + length}")
            self._count(length)
            return self._map[offset : offset + length]
        file = self._file
        try:
            data = retrying(lambda: file.read_at(length, offset))
        except (OSError, pa.ArrowException) as exc:
            raise NeveIOError(f"reading {self.path} failed: {exc}") from exc
        if len(data) != length:
            raise NeveIOError(f"{self.path} ends before byte {offset + length}")
        self._count(length)
        return memoryview(data)

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> dict[int, memoryview]:
        """The bytes of each ``(offset, length)`` range, by offset: from an object
        store, neighbouring ranges are read as one and several reads run at once."""
        if self._file is None:  # mapped: slices, counted at once
            view, size = self._map, self.size
            sliced: dict[int, memoryview] = {}
            total = 0
            for offset, length in ranges:
                if offset < 0 or offset + length > size:
                    raise NeveIOError(f"{self.path} ends before byte {offset + length}")
                sliced[offset] = view[offset : offset + length]
                total += length
            self._count(total, len(ranges))
            return sliced
        gap = _GAP_REMOTE
        spans: list[list[int]] = []
        for offset, length in sorted(set(ranges)):
            end = offset + length
            if spans and offset - spans[-1][1] <= gap:
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([offset, end])
        if len(spans) > 1:
            blobs = list(executor().map(lambda s: self.read_range(s[0], s[1] - s[0]), spans))
        else:
            blobs = [self.read_range(s[0], s[1] - s[0]) for s in spans]
        starts = np.array([s[0] for s in spans], dtype=np.int64)
        offsets = [r[0] for r in ranges]
        which = (np.searchsorted(starts, offsets, side="right") - 1).tolist()
        out: dict[int, memoryview] = {}
        for (offset, length), i in zip(ranges, which, strict=True):
            at = offset - spans[i][0]
            out[offset] = blobs[i][at : at + length]
        return out

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def open_page_file(
    io: FileIO, path: str, stats: ReadStats | None = None
) -> tuple[ParquetLayout, PageFile]:
    """The layout of the Parquet file at ``path`` (cached) and a reader of its bytes."""
    f = PageFile(io, path, stats)
    try:
        layout = layout_cache.get(path, f.size)
        if layout is None:
            n = tail_size(f.size)
            layout = parse_layout(path, f.size, f.read_range(f.size - n, n), f)
            layout_cache.put(layout)
    except BaseException:
        f.close()
        raise
    return layout, f


def describe_pages(io: FileIO, path: str) -> list[dict[str, object]]:
    """The physical layout of a Parquet file, one entry per column chunk: its row
    group, column, rows, compressed bytes, whether it has a dictionary page, an offset
    index and a column index, and its data pages' count and sizes (when the offset
    index tells them)."""
    layout, reader = open_page_file(io, path)
    try:
        wanted = [
            (g, leaf.index)
            for g in range(len(layout.chunks))
            for leaf in layout.leaves
            if layout.chunks[g][leaf.index].offset_index is not None
        ]
        layout.load_page_indexes(reader, wanted)
    finally:
        reader.close()
    out: list[dict[str, object]] = []
    for g, chunks in enumerate(layout.chunks):
        for leaf, chunk in zip(layout.leaves, chunks, strict=True):
            sizes = chunk.pages.sizes if chunk.pages is not None else None
            out.append(
                {
                    "row_group": g,
                    "column": ".".join(leaf.path),
                    "rows": layout.group_rows[g],
                    "bytes": chunk.length,
                    "dictionary": chunk.dictionary is not None,
                    "offset_index": chunk.offset_index is not None,
                    "column_index": chunk.column_index is not None,
                    "pages": None if sizes is None else len(sizes),
                    "page_bytes_min": None if sizes is None else int(sizes.min()),
                    "page_bytes_median": None if sizes is None else int(np.median(sizes)),
                    "page_bytes_max": None if sizes is None else int(sizes.max()),
                }
            )
    return out
