"""Dictionary pages kept across takes in a form that decompresses at memory speed (the
page reader's, :mod:`neve.arrow.pages`).

In parquet-java's layout a column chunk's dictionary page is about 2 MiB, and every
take that touches a dictionary-encoded page of the chunk decompresses it again: at
100 random rows of 10,000,000 a third of what a take decompresses. A zstd dictionary
page is decompressed once and compressed again by the same codec at its fastest level,
which stores the bytes nearly as they are (decompressing 2 MiB of sequential longs
fell from about 4.7 ms to 0.2 ms); the page, its header saying its new size, is kept
for later takes of the file (:data:`CAPACITY` bytes, least recently used dropped
first) and spliced in place of the original, from the second take that uses it on.
Pages of other codecs, and pages zstd stored nearly as they are (random values),
are left as they are.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import pyarrow as pa

from neve.arrow.parquet_layout import ParquetLayout
from neve.arrow.splice import DecodeUnit
from neve.arrow.thrift import I32, Field, decode_struct, encode_struct
from neve.errors import NeveIOError

__all__ = ["CAPACITY", "Pages", "dictionary_cache", "fast_dictionaries"]

#: Bytes of dictionary pages kept (as stored: about their decompressed size).
CAPACITY = 256 * 1024 * 1024

#: The keys of this many dictionary pages asked for are remembered: a page is kept from
#: its second use on (making the kept form costs more than a decompression: a page
#: used once, as in a table far larger than the cache, is not worth it).
_SEEN = 16_384
#: A page compressed to at least this share of its size is left as it is.
_STORED = 0.9

_ZSTD = 6  # CompressionCodec.ZSTD
_DICTIONARY_PAGE = 2


class Pages:
    """Pages in some kept form by (file path, file size, page offset), least recently
    used dropped first past ``capacity`` bytes."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.size = 0
        self._items: OrderedDict[tuple[str, int, int], bytes] = OrderedDict()
        self._seen: OrderedDict[tuple[str, int, int], None] = OrderedDict()
        self._lock = threading.Lock()

    def seen_before(self, key: tuple[str, int, int]) -> bool:
        """Whether ``key`` was asked for before (the last :data:`_SEEN` keys are
        remembered); remembers it."""
        with self._lock:
            if key in self._seen:
                self._seen.move_to_end(key)
                return True
            self._seen[key] = None
            if len(self._seen) > _SEEN:
                self._seen.popitem(last=False)
            return False

    def get(self, key: tuple[str, int, int]) -> bytes | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[str, int, int], page: bytes) -> None:
        with self._lock:
            if key in self._items or len(page) > self.capacity:
                return
            self._items[key] = page
            self.size += len(page)
            while self.size > self.capacity:
                _, dropped = self._items.popitem(last=False)
                self.size -= len(dropped)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._seen.clear()
            self.size = 0


dictionary_cache = Pages(CAPACITY)

_codecs = threading.local()


def _zstd() -> tuple[pa.Codec, pa.Codec]:
    """Per thread: the zstd codec, and the same at its fastest level."""
    found: tuple[pa.Codec, pa.Codec] | None = getattr(_codecs, "zstd", None)
    if found is None:
        fastest = pa.Codec.minimum_compression_level("zstd")
        found = (pa.Codec("zstd"), pa.Codec("zstd", compression_level=fastest))
        _codecs.zstd = found
    return found


def fast_dictionaries(
    layout: ParquetLayout, unit: DecodeUnit, blobs: dict[int, memoryview]
) -> None:
    """Set ``unit.replaced`` to the kept form of each zstd dictionary page the unit
    splices, made now where it is not kept yet."""
    for g in unit.groups:
        for leaf, dictionary in zip(unit.leaves, g.dictionaries, strict=True):
            if dictionary is None or dictionary[0] in unit.replaced:
                continue
            chunk = layout.chunks[g.number][leaf.index]
            if int(chunk.meta[4].value) != _ZSTD:
                continue
            key = (layout.path, layout.size, dictionary[0])
            page = dictionary_cache.get(key)
            if page is None:
                if not dictionary_cache.seen_before(key):
                    continue  # kept from its second use on: making it costs a use
                page = _recompressed(blobs[dictionary[0]])
                if page is None:
                    continue
                dictionary_cache.put(key, page)
            unit.replaced[dictionary[0]] = page


def _recompressed(page: memoryview) -> bytes | None:
    """The dictionary page with its body compressed again at zstd's fastest level and
    its header saying so (its checksum, of the old body, left out); None where it is
    not a dictionary page, or one that zstd stored nearly as it is."""
    try:
        header, used = decode_struct(page)
    except NeveIOError:
        return None
    kind, size = header.get(1), header.get(2)
    if kind is None or kind.value != _DICTIONARY_PAGE or size is None:
        return None
    if len(page) - used >= _STORED * int(size.value):
        return None  # stored nearly as it is already: decompressed at memory speed
    codec, fastest = _zstd()
    try:
        raw = codec.decompress(page[used:], decompressed_size=int(size.value))
        body: bytes = fastest.compress(raw, asbytes=True)
    except (OSError, pa.ArrowException) as exc:
        raise NeveIOError(f"decompressing a dictionary page failed: {exc}") from exc
    out = dict(header)
    out[3] = Field(I32, len(body))
    out.pop(4, None)  # the CRC of the old body
    return encode_struct(out) + body
