"""The body of a data page as the page rewrites read it (:mod:`neve.arrow.page_pick`):
its header's counts and encodings, its definition levels, and its values decompressed
only as far as a reader asks.

A take of a few rows from parquet-java's 1 MiB pages is bound by decompression: each
row costs a whole page of each column, and a page of 100-character strings takes some
450 µs to decompress. zstd (parquet-java's and neve's codec) decompresses a frame
block by block, blocks of at most 128 KiB, each in time about in proportion to its
output: stopping after the block that holds the last row wanted costs that share of
the page and no more. zstd pages are read here through the ``zstandard`` package's
stream reader, which costs no more than a whole decompression even read to the end
(measured on a 1 MiB page of strings: 66, 230, 481 and 442 µs read to 1%, 50%, 90% and
all of it, against 440 µs at once; pyarrow's stream took 73, 263, 1,300 and 1,368 µs).
gzip and brotli are read through pyarrow's stream, which pays only well short of the
page's end (:data:`STREAM_FROM`, :data:`STREAM_SHARE`); other codecs decompress the
page at once.

Version 1 pages hold their definition levels inside the compressed data, before the
values (read first, then the values as far as needed); version 2 pages hold them
uncompressed before the compressed values.
"""

from __future__ import annotations

import threading

import pyarrow as pa
import zstandard

from neve.arrow.thrift import Numbers, decode_numbers
from neve.errors import NeveIOError

__all__ = [
    "CODECS",
    "DATA_PAGE",
    "DATA_PAGE_V2",
    "DICTIONARY_PAGE",
    "PLAIN",
    "RLE",
    "STREAM_FROM",
    "STREAM_SHARE",
    "Values",
    "body_values",
    "codec_of",
    "decompressed",
    "page_parts",
]

DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 2, 3
PLAIN, RLE = 0, 3
#: Parquet's codecs (ColumnMetaData.codec) as pyarrow names them (LZ4 framed as
#: Hadoop wrote it, and LZO, are not read here).
CODECS = {1: "snappy", 2: "gzip", 4: "brotli", 6: "zstd", 7: "lz4_raw"}
_ZSTD = 6
#: Codecs read through pyarrow's stream: GZIP, BROTLI.
_PYARROW_STREAMED = {2: "gzip", 4: "brotli"}
#: gzip and brotli pages are read as a stream from this many bytes (uncompressed),
#: where the rows wanted end before this share of their rows: pyarrow's stream costs
#: more than decompressing at once (measured with zstd, before zstd pages were read
#: through ``zstandard``: a 1 MiB page of strings took 0.18x as long streamed to a
#: tenth as at once, 0.75x to its middle and 1.2x to its end).
STREAM_FROM = 256 * 1024
STREAM_SHARE = 0.7

_local = threading.local()


def codec_of(codec: int) -> pa.Codec | None:
    """Per thread: pyarrow's codec for a Parquet codec number (None: uncompressed)."""
    if codec == 0:
        return None
    found: dict[int, pa.Codec] | None = getattr(_local, "codecs", None)
    if found is None:
        found = _local.codecs = {}
    if codec not in found:
        found[codec] = pa.Codec(CODECS[codec])
    return found[codec]


def _zstd() -> zstandard.ZstdDecompressor:
    """Per thread: a zstd decompression context (one is used by one read at a time, and
    a page is read to its end, or given up, before the thread reads the next)."""
    found: zstandard.ZstdDecompressor | None = getattr(_local, "zstd", None)
    if found is None:
        found = _local.zstd = zstandard.ZstdDecompressor()
    return found


def decompressed(data: memoryview | bytes, codec: int, size: int) -> bytes | None:
    """A page body decompressed at once (``size`` bytes); None for a codec not read
    here."""
    if codec == 0:
        return bytes(data)
    if codec not in CODECS:
        return None
    c = codec_of(codec)
    assert c is not None
    try:
        out: bytes = c.decompress(data, decompressed_size=size, asbytes=True)
    except (OSError, pa.ArrowException) as exc:
        raise NeveIOError(f"decompressing a data page failed: {exc}") from exc
    return out


class _Stream:
    """A compressed page body read on demand, by ``zstandard`` for zstd and by pyarrow
    for the other codecs that stream."""

    def __init__(self, body: memoryview, codec: int) -> None:
        if codec == _ZSTD:
            # a page is one frame as writers make it; several are read on as one
            self.zstd: zstandard.ZstdDecompressionReader | None = _zstd().stream_reader(
                body, read_size=len(body), read_across_frames=True
            )
            self.arrow: pa.NativeFile | None = None
        else:
            self.zstd = None
            self.arrow = pa.CompressedInputStream(
                pa.BufferReader(pa.py_buffer(body)), _PYARROW_STREAMED[codec]
            )

    def read(self, n: int) -> bytes:
        """``n`` bytes more, fewer only where the data ends."""
        try:
            if self.arrow is not None:
                out: bytes = self.arrow.read(n)
                return out
            assert self.zstd is not None
            got = self.zstd.read(n)
            while len(got) < n:  # a read may stop short of ``n`` where a block ends
                more = self.zstd.read(n - len(got))
                if not more:
                    break
                got += more
            return got
        except (OSError, pa.ArrowException, zstandard.ZstdError) as exc:
            raise NeveIOError(f"decompressing a data page failed: {exc}") from exc


class Values:
    """The values of a data page (after its levels), decompressed as far as asked: all
    at once, or, for a codec that streams, in steps."""

    def __init__(self, data: bytes | memoryview, stream: _Stream | None, size: int) -> None:
        self.data, self.stream, self.size = data, stream, size

    def more(self, nbytes: int) -> bool:
        """Decompress ``nbytes`` more (all that is left where ``nbytes`` < 0); False
        where nothing was left."""
        if self.stream is None:
            return False
        left = self.size - len(self.data)
        want = left if nbytes < 0 else min(nbytes, left)
        if want <= 0:
            return False
        got = self.stream.read(want)
        if len(got) < want:
            raise NeveIOError("a data page holds fewer bytes than its header says")
        if want == left:
            self.stream = None
        self.data = bytes(self.data) + got if len(self.data) else got
        return True

    def reach(self, nbytes: int) -> None:
        """Decompress as far as the first ``nbytes`` (or all, if fewer)."""
        if nbytes > len(self.data):
            self.more(nbytes - len(self.data))


def _int(fields: Numbers, fid: int) -> int:
    value = fields[fid]
    if not isinstance(value, int):
        raise ValueError(f"field {fid} of a page header is not a number")
    return value


def body_values(body: memoryview, codec: int, size: int, streamed: bool) -> Values | None:
    """A compressed body's values: read on demand where ``streamed``, else at once."""
    if streamed:
        return Values(b"", _Stream(body, codec), size)
    raw = decompressed(body, codec, size)
    if raw is None:
        return None
    return Values(memoryview(raw), None, len(raw))


#: The bytes a version 1 page's definition levels are first read as: those of a page
#: without nulls, one run (its length and value), fit.
_LEVELS = 8


def page_parts(
    page: memoryview, codec: int, max_level: int, rows: int, width: int = -1
) -> tuple[int, int, bytes | memoryview, Values] | None:
    """A data page's value count, value encoding, definition levels (hybrid encoded,
    without a length) and values: of zstd, read on demand; of gzip and brotli, read on
    demand where the page is large and its first ``rows`` rows (those wanted) well
    short of its end; else decompressed at once. None where the page is of another
    kind or layout. A page read on demand is first read as far as its values of those
    rows where plain, of ``width`` bytes each (0: byte arrays, of the page's mean
    size; -1: not read ahead)."""
    header, used = decode_numbers(page, 0)
    kind, size = header.get(1), header.get(2)
    if not isinstance(kind, int) or not isinstance(size, int):
        return None
    fields = header.get(5 if kind == DATA_PAGE else 8)
    if not isinstance(fields, dict):
        return None
    body = page[used:]
    count = _int(fields, 1)
    streamed = codec == _ZSTD or (
        codec in _PYARROW_STREAMED and size >= STREAM_FROM and rows < STREAM_SHARE * count
    )
    if kind == DATA_PAGE:
        if max_level and fields.get(3) != RLE:
            return None
        encoding = _int(fields, 2)
        values = body_values(body, codec, size, streamed)
        if values is None:
            return None
        levels: bytes | memoryview = b""
        # one read where it can: the levels' length, levels and the values wanted
        # (of byte arrays, as far as values of the page's mean size: exactly for
        # values of one length; a second read copies the first)
        ahead = 0
        if width >= 0 and encoding == PLAIN:
            ahead = rows * width if width else rows * size // max(count, 1) + 64
        if max_level:
            values.reach(4 + _LEVELS + ahead)
            length = int.from_bytes(values.data[:4], "little")
            values.reach(4 + length)
            view = memoryview(values.data)
            if len(view) < 4 + length:
                raise NeveIOError("a data page's levels run past its end")
            levels = bytes(view[4 : 4 + length])
            values.data, values.size = view[4 + length :], size - 4 - length
        elif ahead:
            values.reach(ahead)
        return count, encoding, levels, values
    if kind == DATA_PAGE_V2:
        level_size = _int(fields, 5)
        if _int(fields, 6) or (not max_level and level_size):
            return None
        rest = body[level_size:]
        if fields.get(7, True) and codec:  # is_compressed
            values = body_values(rest, codec, size - level_size, streamed)
            if values is None:
                return None
        else:
            values = Values(rest, None, len(rest))
        return count, _int(fields, 4), body[:level_size], values
    return None
