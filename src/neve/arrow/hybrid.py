"""Parquet's RLE/bit-packed hybrid encoding (definition levels and dictionary indexes),
read as far as a page reader needs and written for the pages it makes
(:mod:`neve.arrow.page_pick`).

A run's header is a varint: its low bit set, a bit-packed run of (header >> 1) groups
of 8 values, least significant bit first; clear, (header >> 1) repetitions of one
value stored in as many bytes as the width takes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from neve.arrow.thrift import read_varint, write_varint

__all__ = ["Runs", "encoded_levels", "few_at", "one_run", "runs"]

Ints = npt.NDArray[np.int64]


def one_run(data: bytes | memoryview, max_level: int, count: int) -> int | None:
    """The level of the first ``count`` rows where the levels begin with an RLE run
    of them all (a page without nulls): read without :func:`runs`' arrays, which cost
    about a fifth of a page's picking, decompression aside; else None."""
    try:
        header, pos = read_varint(data, 0)
    except IndexError:
        return None
    end = pos + (max_level.bit_length() + 7) // 8
    if header & 1 or header >> 1 < count or end > len(data):
        return None
    return int.from_bytes(data[pos:end], "little")


@dataclass(frozen=True)
class Runs:
    """The runs of Parquet's RLE/bit-packed hybrid encoding of ``width``-bit values
    (as far as a reader needs): each run's first value's number, its length, whether
    it is bit-packed, and its value (RLE) or where its bytes begin (bit-packed)."""

    data: bytes | memoryview
    width: int
    first: Ints
    lengths: Ints
    packed: npt.NDArray[np.bool_]
    where: Ints

    def at(self, positions: Ints) -> Ints:
        """The values at ``positions`` (each below the runs' end)."""
        r = np.searchsorted(self.first, positions, side="right") - 1
        packed = self.packed[r]
        out: Ints = np.where(packed, 0, self.where[r])
        if packed.any() and self.width:
            bit = (positions[packed] - self.first[r[packed]]) * self.width
            byte = self.where[r[packed]] + bit // 8
            buf = np.frombuffer(self.data, dtype=np.uint8)
            # eight bytes from each value's first: those past the data's end, read as
            # its last, land above the value's bits (a value's own bytes lie in its
            # run, inside the data), which spares copying the data to pad it
            spans = byte[:, None] + np.arange(8)
            np.minimum(spans, len(buf) - 1, out=spans)
            words = buf[spans].view("<u8").ravel()
            mask = np.uint64((1 << self.width) - 1)
            shifted = words >> (bit % 8).astype(np.uint64)
            out[packed] = (shifted & mask).astype(np.int64)
        return out

    def all(self, count: int) -> Ints:
        """The first ``count`` values."""
        lengths = np.minimum(self.lengths, np.maximum(count - self.first, 0))
        out: Ints = np.repeat(np.where(self.packed, 0, self.where), lengths)
        if self.packed.any() and self.width:
            runs = np.flatnonzero(self.packed & (lengths > 0))
            sizes = (self.lengths[runs] // 8) * self.width
            joined = b"".join(
                self.data[int(w) : int(w) + int(n)]
                for w, n in zip(self.where[runs], sizes, strict=True)
            )
            bits = np.unpackbits(np.frombuffer(joined, dtype=np.uint8), bitorder="little")
            powers = np.left_shift(np.int64(1), np.arange(self.width, dtype=np.int64))
            values = bits.reshape(-1, self.width).astype(np.int64) @ powers
            full = np.repeat(self.packed, lengths)
            starts = np.zeros(len(runs), dtype=np.int64)
            np.cumsum(self.lengths[runs][:-1], out=starts[1:])
            # each packed run's values, cut at the run's length kept
            keep = np.concatenate(
                [
                    np.arange(int(a), int(a) + int(n))
                    for a, n in zip(starts, lengths[runs], strict=True)
                ]
            )
            out[full] = values[keep]
        return out


#: Runs found by their stride (:func:`_alike`) from this many on; fewer are walked.
_ALIKE_FROM = 4


def _alike(data: bytes | memoryview, width: int, count: int) -> Runs | None:
    """The runs holding the first ``count`` values where they are bit-packed runs of
    one length (a header of one byte): found by their stride, not walked one by one.
    Writers cut bit-packed runs at 63 groups of 8 values (a header of a byte), so the
    dictionary indexes of a page of many distinct values are such runs: some 20 to the
    middle of a page of 20,000 rows (walked, 12 us a page of bench_take's; found so,
    8). None where the runs are of another kind."""
    header = data[0]
    groups = header >> 1
    if not header & 1 or header >= 0x80 or not groups:
        return None
    n = groups * 8
    stride = 1 + groups * width
    k = -(-count // n)
    if k < _ALIKE_FROM or k * stride > len(data):
        return None
    heads = np.frombuffer(data, dtype=np.uint8, count=(k - 1) * stride + 1)[::stride]
    if not (heads == header).all():
        return None
    places = np.arange(k, dtype=np.int64)
    return Runs(
        data,
        width,
        places * n,
        np.full(k, n, dtype=np.int64),
        np.ones(k, dtype=np.bool_),
        places * stride + 1,
    )


def few_at(data: bytes | memoryview, width: int, wanted: list[int]) -> list[int] | None:
    """The values at ``wanted`` (sorted positions; ``width`` at most 32 bits) read one
    by one, for a few positions: :class:`Runs`' arrays cost more than such a read
    (a take of 100 rows from 20,000-row pages wants one or two values a page). Bit-packed
    runs all of one header of a byte (:func:`_alike`) are skipped to by their stride;
    others are walked. None where the data ends first."""
    if not wanted:
        return []
    size = len(data)
    mask = (1 << width) - 1
    out: list[int] = []
    header = data[0] if size else 0
    groups = header >> 1
    if header & 1 and header < 0x80 and groups:
        n, stride = groups * 8, 1 + groups * width
        last = wanted[-1] // n
        heads = data[: last * stride + 1 : stride]
        if (last + 1) * stride <= size and heads == bytes((header,)) * (last + 1):
            for p in wanted:
                bit = (p % n) * width
                b = (p // n) * stride + 1 + (bit >> 3)
                out.append(int.from_bytes(data[b : b + 5], "little") >> (bit & 7) & mask)
            return out
    value_bytes = (width + 7) // 8
    at = pos = i = 0
    while i < len(wanted):
        if pos >= size:
            return None
        header = data[pos]
        if header < 0x80:
            pos += 1
        else:
            try:
                header, pos = read_varint(data, pos)
            except IndexError:
                return None
        n = (header >> 1) * 8 if header & 1 else header >> 1
        end = pos + ((header >> 1) * width if header & 1 else value_bytes)
        if end > size or not n:
            return None
        if header & 1:
            while i < len(wanted) and wanted[i] < at + n:
                bit = (wanted[i] - at) * width
                b = pos + (bit >> 3)
                out.append(int.from_bytes(data[b : b + 5], "little") >> (bit & 7) & mask)
                i += 1
        else:
            value = int.from_bytes(data[pos:end], "little")
            while i < len(wanted) and wanted[i] < at + n:
                out.append(value)
                i += 1
        at += n
        pos = end
    return out


def runs(data: bytes | memoryview, width: int, count: int) -> Runs | None:
    """The runs holding the first ``count`` values (None where the data runs out
    first)."""
    if len(data) and count > 0:
        alike = _alike(data, width, count)
        if alike is not None:
            return alike
    lengths: list[int] = []
    packed: list[bool] = []
    where: list[int] = []
    at = pos = 0
    value_bytes = (width + 7) // 8
    size = len(data)
    while at < count:
        if pos >= size:
            return None
        header = data[pos]  # a run's header of one byte is read in place, not called
        if header < 0x80:
            pos += 1
        else:
            try:
                header, pos = read_varint(data, pos)
            except IndexError:
                return None
        if header & 1:  # bit-packed: groups of 8 values, least significant bit first
            n = (header >> 1) * 8
            packed.append(True)
            where.append(pos)
            pos += (header >> 1) * width
            if pos > size or not n:
                return None
        else:
            n = header >> 1
            if not n:
                return None
            packed.append(False)
            where.append(int.from_bytes(data[pos : pos + value_bytes], "little"))
            pos += value_bytes
            if pos > size:
                return None
        lengths.append(n)
        at += n
    ends = np.array(lengths, dtype=np.int64)
    np.cumsum(ends, out=ends)
    runs = np.array(lengths, dtype=np.int64)
    return Runs(
        data,
        width,
        ends - runs,
        runs,
        np.array(packed, dtype=np.bool_),
        np.array(where, dtype=np.int64),
    )


def encoded_levels(levels: Ints, width: int) -> bytes:
    """Definition levels in the RLE/bit-packed hybrid: one RLE run where they are all
    one value, else one bit-packed run."""
    out = bytearray()
    if (levels == levels[0]).all():
        write_varint(out, len(levels) << 1)
        out += int(levels[0]).to_bytes((width + 7) // 8, "little")
    else:
        groups = (len(levels) + 7) // 8
        padded = np.zeros(groups * 8, dtype=np.int64)
        padded[: len(levels)] = levels
        bits = (padded[:, None] >> np.arange(width, dtype=np.int64)) & 1
        write_varint(out, (groups << 1) | 1)
        out += np.packbits(bits.astype(np.uint8).ravel(), bitorder="little").tobytes()
    return bytes(out)
