"""Row orders for the sort strategy of compaction: a table sort order (spec "Sorting":
transformed columns, each with a direction and a null order) and z-order.

Z-order sorts by one key made of the columns' order-preserving byte forms with their
bits interleaved (the first bit of every column, then the second of every column, ...),
so rows close in all the columns at once land in the same file. The byte forms follow
Iceberg-Java's z-order: 8 bytes for numbers, dates, times and timestamps (two's
complement with the sign bit flipped; IEEE floats with negative values inverted), the
first ``var-length-contribution`` bytes of strings and binaries padded with zeros; a
null is all zero bits (it sorts first). A column whose bytes run out stops contributing
bits; the key is cut at ``max-output-size`` bytes.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from neve.arrow.partitioning import source_array
from neve.arrow.transforms import transform_array
from neve.errors import ValidationError
from neve.planning.compaction import ZOrder
from neve.spec.schema import Schema
from neve.spec.sort_order import NullOrder, SortDirection, SortOrder

__all__ = ["sort_indices", "zorder_key"]

_SIGN = np.uint64(1 << 63)
Words = npt.NDArray[np.uint64]


def sort_indices(table: pa.Table, schema: Schema, order: SortOrder | ZOrder) -> pa.Array:
    """The row indices that put ``table`` (columns named as ``schema``'s) in
    ``order``; rows that tie keep their order (the sort is stable)."""
    if isinstance(order, ZOrder):
        words = zorder_key(table, schema, order)
        if words.shape[1] == 0:
            return pa.array(np.arange(table.num_rows, dtype=np.int64))
        ordered = np.lexsort([words[:, j] for j in reversed(range(words.shape[1]))])
        return pa.array(ordered.astype(np.int64))
    keys: dict[str, pa.ChunkedArray] = {}
    sort_keys: list[tuple[str, str]] = []
    for i, sf in enumerate(order.fields):
        source_type = schema.find_type(sf.source_id)
        src = source_array(table, schema, sf.source_id)
        chunks = [transform_array(sf.transform, source_type, c) for c in src.chunks]
        values = pa.chunked_array(chunks) if chunks else pa.chunked_array([], pa.null())
        # one null order per key: a leading key that puts the nulls where asked
        nulls_first = sf.null_order is NullOrder.NULLS_FIRST
        keys[f"n{i}"] = pc.is_valid(values) if nulls_first else pc.is_null(values)
        keys[f"v{i}"] = values
        sort_keys.append((f"n{i}", "ascending"))
        direction = "descending" if sf.direction is SortDirection.DESC else "ascending"
        sort_keys.append((f"v{i}", direction))
    if not keys:
        return pa.array(np.arange(table.num_rows, dtype=np.int64))
    return pc.sort_indices(pa.table(keys), sort_keys=sort_keys)


def _column_words(arr: pa.Array, width: int) -> tuple[Words, int]:
    """The order-preserving byte form of ``arr`` as big-endian 64-bit words (rows x
    words), and how many of its bits count."""
    t = arr.type
    n = len(arr)
    valid = np.asarray(pc.is_valid(arr).to_numpy(zero_copy_only=False), dtype=bool)
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or (pa.types.is_large_binary(t))
    ):
        return _bytes_words(arr.cast(pa.large_binary()), width, valid), width * 8
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        f = np.asarray(arr.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False))
        bits = f.astype(np.float64).view(np.uint64)
        negative = (bits & _SIGN) != 0
        key = np.where(negative, ~bits, bits | _SIGN)
    elif (
        pa.types.is_integer(t)
        or pa.types.is_boolean(t)
        or (pa.types.is_temporal(t) and not pa.types.is_duration(t))
    ):
        as_int = arr.cast(pa.int64()) if not pa.types.is_temporal(t) else _temporal_int(arr)
        ints = np.asarray(as_int.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        key = ints.view(np.uint64) ^ _SIGN
    else:
        raise ValidationError(
            f"z-order takes numbers, strings, binaries, booleans, dates, times and "
            f"timestamps, not {t}; sort by that column with a sort order instead"
        )
    key = np.where(valid, key, np.uint64(0))
    return key.reshape(n, 1).astype(np.uint64), 64


def _temporal_int(arr: pa.Array) -> pa.Array:
    t = arr.type
    if pa.types.is_date32(t):
        return arr.cast(pa.int32()).cast(pa.int64())
    if pa.types.is_date64(t) or pa.types.is_timestamp(t) or pa.types.is_time64(t):
        return arr.view(pa.int64())
    return arr.cast(pa.int32()).cast(pa.int64()) if pa.types.is_time32(t) else arr.view(pa.int64())


def _bytes_words(arr: pa.Array, width: int, valid: npt.NDArray[np.bool_]) -> Words:
    """The first ``width`` bytes of each value, zero-padded, as big-endian words."""
    n = len(arr)
    words = (width + 7) // 8
    matrix = np.zeros((n, words * 8), dtype=np.uint8)
    if n:
        sliced = pc.binary_slice(arr, 0, width).fill_null(b"")
        sliced = sliced.combine_chunks() if isinstance(sliced, pa.ChunkedArray) else sliced
        offsets = np.frombuffer(sliced.buffers()[1], dtype=np.int64)[
            sliced.offset : sliced.offset + n + 1
        ]
        data = np.frombuffer(sliced.buffers()[2], dtype=np.uint8)
        lengths = np.diff(offsets)
        total = int(lengths.sum())
        if total:
            rows = np.repeat(np.arange(n), lengths)
            cols = np.arange(total) - np.repeat(offsets[:-1] - offsets[0], lengths)
            matrix[rows, cols] = data[offsets[0] : offsets[0] + total]
    matrix[~valid] = 0
    return matrix.view(">u8").astype(np.uint64).reshape(n, words)


def zorder_key(table: pa.Table, schema: Schema, order: ZOrder) -> Words:
    """Each row's z-order key as big-endian 64-bit words (rows x words)."""
    columns: list[tuple[Words, int]] = []
    for source_id in order.source_ids:
        arr = source_array(table, schema, source_id).combine_chunks()
        columns.append(_column_words(arr, order.var_length_contribution))
    n = table.num_rows
    total = min(sum(bits for _, bits in columns), order.max_output_size * 8)
    out = np.zeros((n, (total + 63) // 64), dtype=np.uint64)
    k = 0
    b = 0
    while k < total:
        for words, bits in columns:
            if b >= bits or k >= total:
                continue
            bit = (words[:, b // 64] >> np.uint64(63 - b % 64)) & np.uint64(1)
            out[:, k // 64] |= bit << np.uint64(63 - k % 64)
            k += 1
        b += 1
    return out
