"""Python values out of Arrow arrays, read from their buffers with numpy.

The columnar manifest decoder (:mod:`neve.planning.manifest_columnar`) turns a few
entries of a manifest into Python objects at a time: the entries that survive
partition pruning, often one or two per manifest. pyarrow's own conversions of a
short slice of a struct with map columns cost about 0.25 ms an entry here (a scalar
object per map item), and its take and cast kernels cost milliseconds on their first
use in a process. The functions here read the Arrow buffers as the Arrow format lays
them out, with a few numpy calls per column whatever the number of rows, and build
only the Python objects asked for.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = ["LazyMap", "binaries", "gather", "ints", "lazy_maps", "spans", "valid"]


def ints(arr: pa.Array) -> npt.NDArray[Any]:
    """An integer Arrow array as a numpy view of its value buffer (values under null
    slots are whatever the buffer holds)."""
    width = arr.type.bit_width // 8
    return np.frombuffer(
        arr.buffers()[1], dtype=np.dtype(f"i{width}"), count=len(arr), offset=arr.offset * width
    )


def binaries(arr: pa.Array, positions: npt.NDArray[np.int64]) -> list[bytes] | None:
    """The values at ``positions`` (which must not be null) of a binary or string array
    (offsets, large offsets or views), as bytes; None for another type."""
    t = arr.type
    if pa.types.is_binary(t) or pa.types.is_string(t):
        return _by_offsets(arr, positions, np.int32)
    if pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        return _by_offsets(arr, positions, np.int64)
    if not (pa.types.is_binary_view(t) or pa.types.is_string_view(t)):
        return None
    buffers = arr.buffers()
    views = np.frombuffer(buffers[1], dtype=np.uint8, count=16 * len(arr), offset=16 * arr.offset)
    # 16 bytes a value, read as four native int32s: its length, then the value itself
    # when it takes at most 12 bytes, else a 4-byte prefix, the index of a data buffer
    # and an offset in it
    chosen = views.reshape(-1, 16)[positions]
    words = chosen.view(np.int32)
    lengths = words[:, 0].tolist()
    raw = chosen.tobytes()
    out = [raw[at + 4 : at + 4 + n] for at, n in zip(range(0, len(raw), 16), lengths, strict=True)]
    if lengths and max(lengths) > 12:
        long = np.flatnonzero(words[:, 0] > 12)
        for k, n, index, offset in zip(
            long.tolist(),
            words[long, 0].tolist(),
            words[long, 2].tolist(),
            words[long, 3].tolist(),
            strict=True,
        ):
            out[k] = memoryview(buffers[2 + index])[offset : offset + n].tobytes()
    return out


def _by_offsets(
    arr: pa.Array, positions: npt.NDArray[np.int64], offset_type: type[np.integer[Any]]
) -> list[bytes]:
    """The values at ``positions`` of a binary or string array laid out as offsets
    (one more than values) into one data buffer."""
    buffers = arr.buffers()
    width = np.dtype(offset_type).itemsize
    offsets = np.frombuffer(
        buffers[1], dtype=offset_type, count=len(arr) + 1, offset=arr.offset * width
    )
    data = memoryview(buffers[2] if buffers[2] is not None else b"")
    return [
        data[start:end].tobytes()
        for start, end in zip(
            offsets[positions].tolist(), offsets[positions + 1].tolist(), strict=True
        )
    ]


def valid(arr: pa.Array, rows: npt.NDArray[np.int64]) -> list[bool] | None:
    """Whether each of ``rows`` holds a value; None when the array has no nulls."""
    if arr.null_count == 0:
        return None
    bitmap = arr.buffers()[0]
    if bitmap is None:  # nulls without a bitmap: a null-typed array
        return [False] * len(rows)
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    found: list[bool] = bits[rows + arr.offset].astype(np.bool_).tolist()
    return found


def _run(positions: npt.NDArray[np.int64]) -> int | None:
    """The first of ``positions`` when they are consecutive and ascending, else None."""
    n = len(positions)
    if n == 0 or int(positions[-1]) - int(positions[0]) != n - 1:
        return None
    if n > 2 and not bool(np.all(np.diff(positions) == 1)):
        return None
    return int(positions[0])


def _flat(arr: pa.Array, rows: npt.NDArray[np.int64]) -> list[Any] | None:
    """The values at ``rows`` of an array of integers, strings or binaries without
    nulls (positions must be valid); None for another type."""
    t = arr.type
    if pa.types.is_signed_integer(t):
        found: list[Any] = ints(arr)[rows].tolist()
        return found
    text = pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
    binary = pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
    if not (text or binary):
        return None
    start = _run(rows)
    if start is not None:  # pyarrow converts a slice faster than Python
        found = arr.slice(start, len(rows)).to_pylist()
        return found
    data = binaries(arr, rows)
    if data is None or not text:
        return data
    return [b.decode() for b in data]


def spans(
    arr: pa.Array, rows: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], list[int]] | None:
    """For a list array: the positions in its (unsliced) child array of the items of
    ``rows``, concatenated in order, and each row's number of items; None for another
    type."""
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        return None
    offsets = ints(arr.offsets).astype(np.int64, copy=False)  # absolute, into arr.values
    starts = offsets[rows]
    lengths = offsets[rows + 1] - starts
    total = int(lengths.sum())
    # item k of row r sits at starts[r] + k: one arange shifted per row
    shift = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return np.arange(total, dtype=np.int64) + shift, lengths.tolist()


def _lists(arr: pa.Array, rows: npt.NDArray[np.int64], as_map: bool) -> list[Any] | None:
    """The values at ``rows`` of a list array: lists of integers, strings or binaries,
    or (``as_map``) dicts from a list of key/value records (the last of repeated keys
    wins); None for another layout."""
    found_spans = spans(arr, rows)
    if found_spans is None:
        return None
    positions, lengths = found_spans
    items = arr.values
    keys: list[Any] | None = []
    if as_map:
        if not pa.types.is_struct(items.type) or items.type.num_fields != 2:
            return None
        key_array, value_array = items.field(0), items.field(1)
        if key_array.null_count or value_array.null_count:
            return None
        keys, values = _flat(key_array, positions), _flat(value_array, positions)
    else:
        values = None if items.null_count else _flat(items, positions)
    if keys is None or values is None:
        return None
    if as_map and _same_keys(items.field(0), positions, lengths):
        # every row holds the same keys in the same order (writers give each file the
        # metrics of the same columns): rows are consecutive runs of the values
        first = keys[: lengths[0]]
        runs = zip(*[iter(values)] * len(first), strict=False)  # whole runs only
        return [dict(zip(first, run, strict=True)) for run in runs]
    out: list[Any] = []
    at = 0
    for n in lengths:
        end = at + n
        out.append(
            dict(zip(keys[at:end], values[at:end], strict=True)) if as_map else values[at:end]
        )
        at = end
    return out


def _same_keys(keys: pa.Array, positions: npt.NDArray[np.int64], lengths: list[int]) -> bool:
    """Whether the rows of ``lengths`` items each hold the same non-empty sequence of
    integer keys (at ``positions`` of ``keys``)."""
    n = lengths[0] if lengths else 0
    if n == 0 or lengths.count(n) != len(lengths) or not pa.types.is_signed_integer(keys.type):
        return False
    found = ints(keys)[positions].reshape(-1, n)
    return bool((found == found[0]).all())


def gather(arr: pa.Array, rows: npt.NDArray[np.int64], as_map: bool = False) -> list[Any]:
    """The values at ``rows`` of ``arr`` as Python objects, None for nulls: integers,
    strings and binaries, lists of them, and (``as_map``) lists of key/value records as
    dicts, read from the buffers; any other type through pyarrow, row by row."""
    known = valid(arr, rows)
    present = rows if known is None else rows[np.asarray(known, dtype=np.bool_)]
    found = _lists(arr, present, as_map)
    if found is None and not as_map:
        found = _flat(arr, present)
    if found is None:
        # (maps as pyarrow gives them: lists of key/value records, which readers take)
        found = [arr.slice(int(r), 1).to_pylist()[0] for r in present]
    if known is None:
        return found
    values = iter(found)
    return [next(values) if v else None for v in known]


class _MapBatch:
    """One map column's maps at some rows (all present), converted together on the
    first read of any of them (a few numpy calls for all rows, see :func:`gather`)."""

    __slots__ = ("_maps", "_source")

    def __init__(self, arr: pa.Array, rows: npt.NDArray[np.int64]) -> None:
        self._source: tuple[pa.Array, npt.NDArray[np.int64]] | None = (arr, rows)
        self._maps: list[dict[Any, Any]] | None = None

    def get(self, k: int) -> dict[Any, Any]:
        # the source is read before the maps and dropped after they are set, so a
        # thread that finds no source finds the maps (two threads may both convert)
        source = self._source
        maps = self._maps
        if maps is None:
            assert source is not None
            arr, rows = source
            maps = self._maps = [_as_dict(m) for m in gather(arr, rows, as_map=True)]
            self._source = None  # the Arrow arrays are not needed any more
        return maps[k]


def _as_dict(found: Any) -> dict[Any, Any]:
    """A map as :func:`gather` gives it: a dict, or key/value records (pyarrow's)."""
    if isinstance(found, dict):
        return found
    return {kv["key"]: kv["value"] for kv in found}


class LazyMap(Mapping[Any, Any]):
    """A read-only map (a data file's metrics) converted from Arrow on first read,
    with the other maps of its column (see :func:`lazy_maps`). It equals any mapping
    with the same items, and pickles and copies as a plain dict; planning that prunes
    on Arrow arrays never builds it."""

    __slots__ = ("_batch", "_dict", "_k")

    def __init__(self, batch: _MapBatch, k: int) -> None:
        self._batch: _MapBatch | None = batch
        self._k = k
        self._dict: dict[Any, Any] | None = None

    def _items(self) -> dict[Any, Any]:
        found = self._dict
        if found is not None:
            return found
        batch = self._batch  # read before the dict: see _MapBatch.get
        found = self._dict
        if found is None:
            assert batch is not None
            found = self._dict = batch.get(self._k)
            self._batch = None
        return found

    def __getitem__(self, key: Any) -> Any:
        return self._items()[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def __contains__(self, key: object) -> bool:
        return key in self._items()

    def get(self, key: Any, default: Any = None) -> Any:
        return self._items().get(key, default)

    def keys(self) -> KeysView[Any]:
        return self._items().keys()

    def values(self) -> ValuesView[Any]:
        return self._items().values()

    def items(self) -> ItemsView[Any, Any]:
        return self._items().items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyMap):
            other = other._items()
        elif isinstance(other, Mapping) and not isinstance(other, dict):
            other = dict(other.items())
        elif not isinstance(other, dict):
            return NotImplemented
        return self._items() == other

    __hash__ = None  # type: ignore[assignment]  # as dict: mutable elsewhere, not hashed

    def __repr__(self) -> str:
        return repr(self._items())

    def __reduce__(self) -> tuple[type[dict[Any, Any]], tuple[dict[Any, Any]]]:
        return dict, (self._items(),)


def lazy_maps(arr: pa.Array, rows: npt.NDArray[np.int64]) -> list[LazyMap | None]:
    """The values at ``rows`` of a map column (lists of key/value records, as in
    :func:`gather` with ``as_map``): a :class:`LazyMap` per row holding a map, None for
    a null."""
    known = valid(arr, rows)
    present = rows if known is None else rows[np.asarray(known, dtype=np.bool_)]
    batch = _MapBatch(arr, present)
    maps: list[LazyMap | None] = [LazyMap(batch, k) for k in range(len(present))]
    if known is None:
        return maps
    found = iter(maps)
    return [next(found) if v else None for v in known]
