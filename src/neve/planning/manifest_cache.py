"""A per-process cache of decoded manifests and manifest lists.

Manifests and manifest lists are immutable once written (new snapshots write new
files), so a decoded manifest stays valid for as long as its file exists. Manifests
are keyed by (path, length, the partition field ids their tuples are ordered by, the
``first_row_id`` the manifest list gives them) and kept as
:class:`~neve.spec.manifest_io.LazyManifest`, so an entry's full data file is
decoded once, on first use. The cache is bounded by the number of manifest entries it
holds (least recently used manifests go first) and is shared by all threads.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from neve.errors import ValidationError
from neve.io.fileio import FileIO
from neve.io.pools import ProcessPool
from neve.planning.manifest_columnar import columnar_enabled
from neve.planning.manifests import (
    LazyManifest,
    decode_manifest_lazy,
    decode_manifests_lazy,
    finish_manifest_reads,
    prepare_manifest_reads,
    read_manifest_list,
    run_manifest_reads,
)
from neve.spec.manifest import ManifestFile
from neve.spec.partition import PartitionSpec

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "PARALLEL_READS_FROM",
    "ManifestCache",
    "cached_manifest_list",
    "holds_one_partition",
    "load_manifests",
    "manifest_cache",
    "remember_manifest_list",
]

#: Default bound of the process-wide cache, in manifest entries; the environment
#: variable ``NEVE_MANIFEST_CACHE_ENTRIES`` overrides it (0 turns caching off). Measured
#: with 16 columns of metrics: at most 6 KB per entry read by the columnar decoder
#: (process growth over 10,000 entries, Arrow columns and heads; manifests read in one
#: call share their columns, freed when the last of them is evicted), 0.9 KB per entry
#: decoded for pruning by fastavro, 7 KB once decoded in full; so the default costs
#: 45-350 MB at most.
DEFAULT_MAX_ENTRIES = 50_000


def _max_entries_from_env() -> int:
    text = os.environ.get("NEVE_MANIFEST_CACHE_ENTRIES", "")
    try:
        return max(0, int(text)) if text.strip() else DEFAULT_MAX_ENTRIES
    except ValueError:
        return DEFAULT_MAX_ENTRIES


_LIST_CACHE_SIZE = 128

_Key = tuple[str, int, tuple[int, ...] | None, int | None]


class ManifestCache:
    """LRU cache of decoded manifests, bounded by their total number of entries."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._manifests: OrderedDict[_Key, LazyManifest] = OrderedDict()
        self._entries = 0
        self._lists: OrderedDict[str, list[ManifestFile]] = OrderedDict()
        self._lock = threading.Lock()

    # -- manifests ---------------------------------------------------------------------

    @staticmethod
    def key(manifest: ManifestFile, specs_by_id: Mapping[int, PartitionSpec] | None) -> _Key:
        spec = specs_by_id.get(manifest.partition_spec_id) if specs_by_id else None
        ids = None if spec is None else tuple(f.field_id for f in spec.fields)
        # entries inherit first_row_id from the manifest list entry, which can differ
        # between snapshots for one manifest file (none before a v3 upgrade, one after)
        return (manifest.manifest_path, manifest.manifest_length, ids, manifest.first_row_id)

    def lookup(self, key: _Key) -> LazyManifest | None:
        with self._lock:
            found = self._manifests.get(key)
            if found is not None:
                self._manifests.move_to_end(key)
            return found

    def store(self, key: _Key, manifest: LazyManifest) -> None:
        size = len(manifest)
        if size > self.max_entries:
            return
        with self._lock:
            old = self._manifests.pop(key, None)
            if old is not None:
                self._entries -= len(old)
            self._manifests[key] = manifest
            self._entries += size
            while self._entries > self.max_entries and self._manifests:
                _, evicted = self._manifests.popitem(last=False)
                self._entries -= len(evicted)

    def get(
        self,
        io: FileIO,
        manifest: ManifestFile,
        specs_by_id: Mapping[int, PartitionSpec] | None,
        *,
        eager: bool = False,
    ) -> LazyManifest:
        """The decoded manifest, read and decoded (see ``decode_manifest_lazy``) on a miss."""
        key = self.key(manifest, specs_by_id)
        found = self.lookup(key)
        if found is None:
            data = io.read_bytes(manifest.manifest_path)
            found = decode_manifest_lazy(data, manifest, specs_by_id=specs_by_id, eager=eager)
            self.store(key, found)
        return found

    # -- manifest lists ------------------------------------------------------------------

    def manifest_list(self, io: FileIO, path: str) -> list[ManifestFile]:
        with self._lock:
            found = self._lists.get(path)
            if found is not None:
                self._lists.move_to_end(path)
                return list(found)
        found = read_manifest_list(io, path)
        self.remember_list(path, found)
        return list(found)

    def remember_list(self, path: str, manifests: Sequence[ManifestFile]) -> None:
        """Keep the entries of the manifest list at ``path`` (a list is never rewritten)."""
        with self._lock:
            self._lists[path] = list(manifests)
            self._lists.move_to_end(path)
            while len(self._lists) > _LIST_CACHE_SIZE:
                self._lists.popitem(last=False)

    # -- housekeeping --------------------------------------------------------------------

    @property
    def entry_count(self) -> int:
        with self._lock:
            return self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._manifests)

    def clear(self) -> None:
        with self._lock:
            self._manifests.clear()
            self._lists.clear()
            self._entries = 0


_CACHE = ManifestCache(_max_entries_from_env())


#: Below this many bytes of manifests to read, the columnar reader reads them all on the
#: planning thread: a read of a share on another thread costs a hand-over and, on a busy
#: machine, a wait for the GIL (up to the 5 ms switch interval) when it is done. Set when
#: polars' reader decoded about 10 KB (100 entries with metrics of 16 columns) a
#: millisecond; polars-avro's decodes about 25 KB, so a hand-over pays off later still.
PARALLEL_READS_FROM = 128 * 1024

#: The threads that fetch manifests and run columnar reads for this process.
_POOL = ProcessPool(8, "neve-manifests")


def _shared_pool() -> ThreadPoolExecutor:
    return _POOL.get()


def manifest_cache() -> ManifestCache:
    """The process-wide cache."""
    return _CACHE


def cached_manifest_list(io: FileIO, path: str) -> list[ManifestFile]:
    return _CACHE.manifest_list(io, path)


def remember_manifest_list(path: str, manifests: Sequence[ManifestFile]) -> None:
    """Keep a manifest list this process wrote, as a read of it would return it, so the
    next commit on top of it does not read it back."""
    _CACHE.remember_list(path, manifests)


def holds_one_partition(manifest: ManifestFile) -> bool:
    """Whether the manifest's partition summaries show a single partition tuple (every
    field has equal bounds and no nulls or NaNs; an unpartitioned manifest too). Then a
    partition filter keeps all of its entries or none, and when the manifest list
    filter kept it, all of them will be needed in full: decode it eagerly."""
    summaries = manifest.partitions
    if summaries is None:
        return False
    return all(
        s.lower_bound is not None
        and s.lower_bound == s.upper_bound
        and not s.contains_null
        and not s.contains_nan
        for s in summaries
    )


def load_manifests(
    io: FileIO,
    manifests: Sequence[ManifestFile],
    specs_by_id: Mapping[int, PartitionSpec] | None,
    *,
    eager: bool | Sequence[bool] = False,
    cache: ManifestCache | None = None,
    workers: int | None = None,
) -> list[LazyManifest]:
    """The decoded manifests, in order. ``eager`` (for all manifests, or one flag per
    manifest) decodes entries in full at once instead of on first use, which is cheaper
    when most entries will be needed (see ``decode_manifest_lazy``). Files missing from
    the cache are fetched in parallel threads (remote reads overlap) and decoded on this
    thread as they arrive: fastavro holds the GIL while decoding, so more decoding
    threads would only contend for it."""
    flags = [eager] * len(manifests) if isinstance(eager, bool) else list(eager)
    if len(flags) != len(manifests):
        raise ValidationError(
            f"got {len(flags)} eager flags for {len(manifests)} manifests; pass one per "
            "manifest or a single bool"
        )
    cache = _CACHE if cache is None else cache
    keys = [cache.key(m, specs_by_id) for m in manifests]
    out: list[LazyManifest | None] = [cache.lookup(k) for k in keys]
    missing = [i for i, found in enumerate(out) if found is None]
    if not missing:
        return [m for m in out if m is not None]

    def fetch(i: int) -> bytes:
        return io.read_bytes(manifests[i].manifest_path)

    def decode(i: int, data: bytes) -> None:
        lazy = decode_manifest_lazy(data, manifests[i], specs_by_id=specs_by_id, eager=flags[i])
        cache.store(keys[i], lazy)
        out[i] = lazy

    cpus = os.cpu_count() or 2  # (reads /sys: once a call)
    n = workers or min(8, cpus * 2, len(missing))
    if len(missing) == 1:
        decode(missing[0], fetch(missing[0]))
    elif columnar_enabled():
        # the reader runs without the GIL, files of one schema together: fetch the files (on
        # threads when remote), prepare here a read of one share of them per core, run
        # the reads in parallel, then build the entries' Python objects here. Only
        # the reader runs on the pool: Python there would contend for the GIL, and a thread
        # waiting for it can wait the interpreter's whole switch interval (5 ms).
        shares = min(cpus, len(missing))
        if sum(manifests[i].manifest_length for i in missing) < PARALLEL_READS_FROM:
            shares = 1  # too little to decode for a thread to pay off
        size = -(-len(missing) // shares)
        chunks = [missing[k : k + size] for k in range(0, len(missing), size)]
        # local files are read here: handing them to threads costs more than reading them
        local = all(io.is_local(manifests[i].manifest_path) for i in missing)
        # the process's pool unless a number of workers was asked for: starting and
        # joining threads costs every plan, and a loaded machine makes the join wait
        own = ThreadPoolExecutor(max_workers=n) if workers else None
        ex = own or _shared_pool()
        try:
            fetched = map(fetch, missing) if local else ex.map(fetch, missing)
            datas = dict(zip(missing, fetched, strict=True))
            reads = [prepare_manifest_reads([datas[i] for i in c]) for c in chunks]
            # this thread runs the first share itself while the pool runs the others
            others = [ex.submit(run_manifest_reads, r) for r in reads[1:]]
            tables = [run_manifest_reads(reads[0]), *(f.result() for f in others)]
        finally:
            if own is not None:
                own.shutdown()
        for chunk, chunk_reads, chunk_tables in zip(chunks, reads, tables, strict=True):
            prepared = finish_manifest_reads(chunk_reads, chunk_tables)
            decoded = decode_manifests_lazy(
                [datas[i] for i in chunk],
                [manifests[i] for i in chunk],
                specs_by_id=specs_by_id,
                eager=[flags[i] for i in chunk],
                columnar=True,
                prepared=prepared,
            )
            for i, lazy in zip(chunk, decoded, strict=True):
                cache.store(keys[i], lazy)
                out[i] = lazy
    else:
        with ThreadPoolExecutor(max_workers=n) as ex:
            for i, data in zip(missing, ex.map(fetch, missing), strict=True):
                decode(i, data)
    return [m for m in out if m is not None]
