"""Arrow arrays made straight from the values a take picked out of its pages (the page
reader's, :mod:`neve.arrow.pages`), without splicing a Parquet file for pyarrow to
decode.

Where every page a decode unit reads was rewritten to hold only the wanted rows
(:mod:`neve.arrow.page_pick`: parquet-java's 1 MiB pages, a few rows taken from each)
and its columns are top-level ones that Arrow holds as they are stored (longs, ints,
floats, doubles, byte arrays and strings without a logical type that changes them),
the picked definition levels and plain values already are the columns: nulls from the
levels, fixed-width values laid out in place, byte arrays from their length prefixes.
That saves writing the new pages, splicing them into a file and pyarrow's reading of
it, a sixth of a 100-row take of parquet-java's layout.
"""

from __future__ import annotations

import struct

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from neve.arrow.splice import DecodeUnit

__all__ = ["picked_table"]

Ints = npt.NDArray[np.int64]

_TYPES = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "binary": pa.binary(),
    "string": pa.string(),
}
_WIDTHS = {"int32": 4, "int64": 8, "float": 4, "double": 8}
_LENGTH = struct.Struct("<I")


def picked_table(unit: DecodeUnit) -> pa.Table:
    """The unit's rows, every group's in order (what pyarrow would decode from the
    spliced file), from ``unit.picked``, which holds every page of the unit
    (:func:`neve.arrow.page_pick.pick_pages` keeps them only then)."""
    arrays = []
    for n, leaf in enumerate(unit.leaves):
        assert leaf.plain is not None  # pick_pages keeps the values of such leaves only
        parts = [unit.picked[offset] for g in unit.groups for offset, _ in g.ranges[n]]
        arrays.append(_array(leaf.plain, leaf.max_definition_level, parts))
    return pa.Table.from_arrays(arrays, names=[leaf.top for leaf in unit.leaves])


def _array(plain: str, max_level: int, parts: list[tuple[Ints | None, bytes, int]]) -> pa.Array:
    """One column of the picked pages' values (levels, plain values, rows each)."""
    rows = sum(count for _, _, count in parts)
    data = b"".join(values for _, values, _ in parts)
    if max_level:
        levels = np.concatenate([lv for lv, _, _ in parts if lv is not None])
        defined = levels == max_level
    else:
        defined = np.ones(rows, dtype=np.bool_)
    nulls = rows - int(defined.sum())
    validity = None if not nulls else pa.array(defined).buffers()[1]
    width = _WIDTHS.get(plain)
    if width is not None:
        if nulls:  # plain pages hold the values of the rows that are not null
            full = np.zeros(rows * width, dtype=np.uint8).reshape(rows, width)
            full[defined] = np.frombuffer(data, dtype=np.uint8).reshape(-1, width)
            data = full.tobytes()
        return pa.Array.from_buffers(
            _TYPES[plain], rows, [validity, pa.py_buffer(data)], null_count=nulls
        )
    lengths = np.zeros(rows, dtype=np.int64)
    where = np.flatnonzero(defined).tolist()
    view = memoryview(data)
    pieces = []
    pos = 0
    unpack = _LENGTH.unpack_from
    for k in range(rows - nulls):  # a few values a page: one by one
        n = unpack(data, pos)[0]
        pieces.append(view[pos + 4 : pos + 4 + n])
        lengths[where[k]] = n
        pos += 4 + n
    offsets = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    kind = _TYPES[plain]
    if offsets[-1] >= 2**31:  # past 32-bit offsets: the large type, cast back by callers
        kind = pa.large_string() if plain == "string" else pa.large_binary()
    else:
        offsets = offsets.astype(np.int32)
    return pa.Array.from_buffers(
        kind,
        rows,
        [validity, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(pieces))],
        null_count=nulls,
    )
