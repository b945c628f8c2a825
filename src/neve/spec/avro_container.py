"""The header of an Avro object container file, read and rewritten with fastavro.

An Avro file starts with a header (the magic bytes ``Obj\\x01``, a metadata map holding
``avro.schema`` and ``avro.codec``, a 16-byte sync marker) and continues with data
blocks. Reading the header alone is much cheaper than opening a fastavro reader, which
also parses the writer schema. Rewriting it with another writer schema of the same
encoding (for example without ``default`` attributes, which change nothing in the
bytes) lets a reader with a narrower schema parser read the same blocks.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import fastavro
import fastavro.read

__all__ = ["AvroHeader", "read_header"]

_HEADER_SCHEMA = fastavro.parse_schema(fastavro.read.HEADER_SCHEMA)
_MAGIC = b"Obj\x01"


@dataclass(frozen=True)
class AvroHeader:
    meta: dict[str, bytes]
    sync: bytes
    end: int  #: offset of the first data block

    @property
    def schema_text(self) -> str:
        return self.meta["avro.schema"].decode("utf-8")

    @property
    def codec(self) -> str:
        return self.meta.get("avro.codec", b"null").decode("utf-8", "replace")

    def metadata(self) -> dict[str, str]:
        """The metadata map with values as text (what fastavro's readers give)."""
        return {k: v.decode("utf-8", "replace") for k, v in self.meta.items()}

    def with_schema(self, data: bytes, schema_text: str) -> bytes:
        """The file ``data`` (whose header this is) with ``schema_text`` as its writer
        schema; the caller guarantees that it encodes the blocks the same way."""
        meta = dict(self.meta)
        meta["avro.schema"] = schema_text.encode("utf-8")
        out = io.BytesIO()
        fastavro.schemaless_writer(
            out, _HEADER_SCHEMA, {"magic": _MAGIC, "meta": meta, "sync": self.sync}
        )
        out.write(memoryview(data)[self.end :])
        return out.getvalue()


def read_header(data: bytes) -> AvroHeader:
    """The header of the Avro file ``data``; ValueError if it is not one (EOFError if
    it ends inside the header). Read here rather than by fastavro, whose reader costs
    ~40 µs a header in set-up: planning reads the header of every manifest."""
    if data[:4] != _MAGIC:
        raise ValueError("not an Avro object container file (bad magic bytes)")
    meta: dict[str, bytes] = {}
    pos = 4
    while True:
        count, pos = _long(data, pos)
        if count == 0:
            break
        if count < 0:  # a block that gives its size in bytes too
            count = -count
            _, pos = _long(data, pos)
        for _ in range(count):
            key, pos = _bytes(data, pos)
            value, pos = _bytes(data, pos)
            meta[key.decode("utf-8")] = value
    sync = data[pos : pos + 16]
    if len(sync) != 16:
        raise EOFError("the Avro header ends before its sync marker")
    return AvroHeader(meta, bytes(sync), pos + 16)


def _long(data: bytes, pos: int) -> tuple[int, int]:
    """The zigzag varint long at ``pos``, and the position after it."""
    result = shift = 0
    while True:
        if pos >= len(data):
            raise EOFError("the Avro header ends inside a number")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("an Avro long of more than 10 bytes in the header")


def _bytes(data: bytes, pos: int) -> tuple[bytes, int]:
    """The length-prefixed bytes at ``pos``, and the position after them."""
    n, pos = _long(data, pos)
    if n < 0 or pos + n > len(data):
        raise EOFError("the Avro header ends inside a value")
    return data[pos : pos + n], pos + n
