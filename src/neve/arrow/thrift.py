"""Thrift's compact protocol, the encoding of Parquet's footer, page headers and page
index, read into and written from plain Python values.

A struct is a ``dict`` of field id to :class:`Field` (its wire type and value), kept
whole, unknown fields included, so that a footer read and written back loses nothing.
Lists are :class:`TList` (element type and values); binaries are ``bytes``. Only what
Parquet's metadata uses is supported: no maps, no sets.

No Python library exposes Parquet's page index (pyarrow writes it but reads only
whether it is there), so neve decodes these few structures itself; the rows are
always decoded by pyarrow (docs/RANDOM-ACCESS.md).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from neve.errors import NeveIOError

__all__ = [
    "BINARY",
    "BOOL",
    "BYTE",
    "DOUBLE",
    "I16",
    "I32",
    "I64",
    "LIST",
    "STRUCT",
    "Encoded",
    "Field",
    "Numbers",
    "Struct",
    "TList",
    "decode_numbers",
    "decode_struct",
    "encode_struct",
    "encode_value",
    "read_varint",
    "write_varint",
]

# compact protocol wire types (a boolean field carries its value in the type: 1 true,
# 2 false; inside a list a boolean is a byte of 1 or 2 and its element type is 1)
BOOL = 1
BYTE = 3
I16 = 4
I32 = 5
I64 = 6
DOUBLE = 7
BINARY = 8
LIST = 9
STRUCT = 12
_FALSE = 2
_SET = 10
_MAP = 11


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a struct: its wire type and its value."""

    type: int
    value: Any


@dataclass(frozen=True, slots=True)
class Encoded:
    """A value already in its compact encoding, written as it is (a part of a struct
    that many structs share, encoded once)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class TList:
    """A list: the type of its elements and the elements."""

    type: int
    values: list[Any]


Struct = dict[int, Field]


def _corrupt(what: str) -> NeveIOError:
    return NeveIOError(f"the Parquet metadata is corrupt ({what}); the file cannot be read")


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes | memoryview, pos: int) -> None:
        self.buf = buf
        self.pos = pos

    def varint(self) -> int:
        buf = self.buf
        pos = self.pos
        result = 0
        shift = 0
        while True:
            try:
                b = buf[pos]
            except IndexError:
                raise _corrupt("a number runs past the end") from None
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                self.pos = pos
                return result
            shift += 7
            if shift > 70:
                raise _corrupt("a number is too long")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def binary(self) -> bytes:
        n = self.varint()
        end = self.pos + n
        if end > len(self.buf):
            raise _corrupt("a binary runs past the end")
        out = bytes(self.buf[self.pos : end])
        self.pos = end
        return out

    def value(self, t: int) -> Any:
        if t in (I16, I32, I64):
            return self.zigzag()
        if t == BINARY:
            return self.binary()
        if t == STRUCT:
            return self.struct()
        if t in (LIST, _SET):
            return self.list()
        if t in (BOOL, _FALSE):
            b = self.buf[self.pos]
            self.pos += 1
            return b == BOOL
        if t == BYTE:
            b = self.buf[self.pos]
            self.pos += 1
            return b - 256 if b > 127 else b
        if t == DOUBLE:
            (d,) = struct.unpack_from("<d", self.buf, self.pos)
            self.pos += 8
            return d
        if t == _MAP:
            raise _corrupt("a map, which Parquet metadata does not use")
        raise _corrupt(f"unknown wire type {t}")

    def list(self) -> TList:
        head = self.buf[self.pos]
        self.pos += 1
        size = head >> 4
        t = head & 0x0F
        if size == 15:
            size = self.varint()
        if t == _FALSE:
            t = BOOL
        return TList(t, [self.value(t) for _ in range(size)])

    def struct(self) -> Struct:
        out: Struct = {}
        last = 0
        buf = self.buf
        while True:
            try:
                head = buf[self.pos]
            except IndexError:
                raise _corrupt("a struct runs past the end") from None
            self.pos += 1
            if head == 0:
                return out
            t = head & 0x0F
            delta = head >> 4
            fid = last + delta if delta else self.zigzag()
            last = fid
            if t in (BOOL, _FALSE):
                out[fid] = Field(BOOL, t == BOOL)
            else:
                out[fid] = Field(t, self.value(t))


def decode_struct(buf: bytes | memoryview, pos: int = 0) -> tuple[Struct, int]:
    """The struct encoded at ``buf[pos:]`` and the position after it."""
    reader = _Reader(buf, pos)
    try:
        return reader.struct(), reader.pos
    except (IndexError, struct.error):
        raise _corrupt("a value runs past the end") from None


#: A struct's numbers and booleans by field id, and its structs as the same
#: (:func:`decode_numbers`).
Numbers = dict[int, "int | bool | Numbers"]


def decode_numbers(data: bytes | memoryview, pos: int) -> tuple[Numbers, int]:
    """The struct at ``pos`` as its numbers and booleans, and its structs as the same,
    by field id (strings, doubles and lists skipped); and where it ends. For the hot
    paths that read page headers for their counts and sizes only: about a fifth of
    :func:`decode_struct`'s cost, which keeps every field whole. Raises IndexError or
    ValueError where the bytes are not such a struct."""
    out: Numbers = {}
    fid = 0
    while True:
        b = data[pos]
        pos += 1
        if not b:
            return out, pos
        kind = b & 0x0F
        if b >> 4:
            fid += b >> 4
        else:
            n, pos = read_varint(data, pos)
            fid = (n >> 1) ^ -(n & 1)
        if I16 <= kind <= I64:  # I16, I32, I64
            # a number of one byte (an encoding, a type, a small count) is read in
            # place: a call for each cost a quarter of a page header's decoding
            n = data[pos]
            if n < 0x80:
                pos += 1
            else:
                n, pos = read_varint(data, pos)
            out[fid] = (n >> 1) ^ -(n & 1)
        elif kind == STRUCT:
            out[fid], pos = decode_numbers(data, pos)
        elif BOOL <= kind <= _FALSE:  # true or false
            out[fid] = kind == BOOL
        else:
            pos = _skip(data, pos, kind)


def _skip(data: bytes | memoryview, pos: int, kind: int) -> int:
    """Where a value of wire type ``kind`` at ``pos`` ends."""
    if kind in (BOOL, _FALSE, BYTE):  # booleans (in a list, a byte) and bytes
        return pos + 1
    if kind in (I16, I32, I64):
        return read_varint(data, pos)[1]
    if kind == DOUBLE:
        return pos + 8
    if kind == BINARY:
        n, pos = read_varint(data, pos)
        return pos + n
    if kind == STRUCT:
        return decode_numbers(data, pos)[1]
    if kind in (LIST, _SET):  # size and element type in a byte
        head = data[pos]
        pos += 1
        n = head >> 4
        if n == 15:
            n, pos = read_varint(data, pos)
        for _ in range(n):
            pos = _skip(data, pos, head & 0x0F)
        return pos
    if kind == _MAP:  # size, then key and value types in a byte
        n, pos = read_varint(data, pos)
        if n:
            types = data[pos]
            pos += 1
            for _ in range(n):
                pos = _skip(data, _skip(data, pos, types >> 4), types & 0x0F)
        return pos
    raise ValueError(f"a Thrift value of unknown type {kind}")


def read_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and where it ends (IndexError past the end)."""
    out = shift = 0
    while True:
        b = data[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        if b < 0x80:
            return out, pos
        shift += 7


def write_varint(out: bytearray, n: int) -> None:
    """Append the unsigned varint ``n`` (a zigzag number's encoding, a length)."""
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _zigzag(out: bytearray, n: int) -> None:
    write_varint(out, (n << 1) ^ (n >> 63) if n < 0 else n << 1)


def _value(out: bytearray, t: int, v: Any) -> None:
    if isinstance(v, Encoded):
        out += v.data
    elif t in (I16, I32, I64):
        _zigzag(out, int(v))
    elif t == BINARY:
        data = v.encode() if isinstance(v, str) else bytes(v)
        write_varint(out, len(data))
        out += data
    elif t == STRUCT:
        _struct(out, v)
    elif t == LIST:
        _list(out, v)
    elif t == BOOL:
        out.append(BOOL if v else _FALSE)
    elif t == BYTE:
        out.append(int(v) & 0xFF)
    elif t == DOUBLE:
        out += struct.pack("<d", v)
    else:
        raise ValueError(f"cannot encode wire type {t}")


def _list(out: bytearray, v: TList) -> None:
    n = len(v.values)
    if n < 15:
        out.append((n << 4) | v.type)
    else:
        out.append(0xF0 | v.type)
        write_varint(out, n)
    for x in v.values:
        _value(out, v.type, x)


def _struct(out: bytearray, s: Struct) -> None:
    last = 0
    for fid in sorted(s):
        f = s[fid]
        t = (BOOL if f.value else _FALSE) if f.type == BOOL else f.type
        delta = fid - last
        if 0 < delta <= 15:
            out.append((delta << 4) | t)
        else:
            out.append(t)
            _zigzag(out, fid)
        last = fid
        if f.type != BOOL:
            _value(out, f.type, f.value)
    out.append(0)


def encode_value(t: int, v: Any) -> Encoded:
    """The compact encoding of value ``v`` of wire type ``t``."""
    out = bytearray()
    _value(out, t, v)
    return Encoded(bytes(out))


def encode_struct(s: Struct) -> bytes:
    """The compact encoding of struct ``s``."""
    out = bytearray()
    _struct(out, s)
    return bytes(out)
