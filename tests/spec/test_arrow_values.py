"""neve.planning.arrow_values reads values out of Arrow buffers with numpy; it must give
what pyarrow's own conversion gives, for every layout an Avro reader hands the columnar
manifest decoder (integers, strings and binaries as offsets, large offsets and views
short and long, lists, key/value maps, nulls, sliced arrays) and, through its fallback,
for any other type."""

from __future__ import annotations

import copy
import pickle
import threading
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from budget import examples
from neve.planning.arrow_values import LazyMap, gather, lazy_maps

_MAP_ITEM = pa.struct([("key", pa.int32()), ("value", pa.binary_view())])

#: (Arrow type, a strategy for one value, whether gather reads it as a map)
_LAYOUTS: list[tuple[pa.DataType, st.SearchStrategy[Any], bool]] = [
    (pa.int32(), st.integers(-(2**31), 2**31 - 1), False),
    (pa.int64(), st.integers(-(2**63), 2**63 - 1), False),
    # a view keeps values up to 12 bytes inline, longer ones in a data buffer
    (pa.string_view(), st.text(max_size=20), False),
    (pa.binary_view(), st.binary(max_size=20), False),
    # offsets into one data buffer (polars-avro's layout), 32- and 64-bit
    (pa.string(), st.text(max_size=20), False),
    (pa.binary(), st.binary(max_size=20), False),
    (pa.large_string(), st.text(max_size=20), False),
    (pa.large_binary(), st.binary(max_size=20), False),
    (pa.large_list(pa.int64()), st.lists(st.integers(-(2**63), 2**63 - 1), max_size=4), False),
    (pa.list_(pa.int32()), st.lists(st.integers(-(2**31), 2**31 - 1), max_size=4), False),
    (
        pa.large_list(_MAP_ITEM),
        st.lists(
            st.fixed_dictionaries({"key": st.integers(0, 5), "value": st.binary(max_size=16)}),
            max_size=5,
        ),
        True,
    ),
    (
        pa.list_(pa.struct([("key", pa.int32()), ("value", pa.binary())])),
        st.lists(
            st.fixed_dictionaries({"key": st.integers(0, 5), "value": st.binary(max_size=16)}),
            max_size=5,
        ),
        True,
    ),
    # every row the same keys (as writers give metrics): read as runs of values
    (
        pa.large_list(pa.struct([("key", pa.int32()), ("value", pa.int64())])),
        st.tuples(st.integers(0, 9), st.integers(0, 9)).map(
            lambda v: [{"key": 7, "value": v[0]}, {"key": 3, "value": v[1]}]
        ),
        True,
    ),
    # others go through pyarrow
    (pa.bool_(), st.booleans(), False),
    (pa.float64(), st.floats(allow_nan=False), False),
]


def _expected(value: Any, as_map: bool) -> Any:
    if value is None or not as_map:
        return value
    return {kv["key"]: kv["value"] for kv in value}  # the last of repeated keys wins


def _sliced(
    data: st.DataObject, arrow_type: pa.DataType, values: st.SearchStrategy[Any]
) -> tuple[pa.Array, list[Any], list[int]]:
    """A random array of the layout, sliced (so offsets do not start at 0), its values,
    and rows asked of it (repeats and any order)."""
    items = data.draw(st.lists(st.none() | values, min_size=1, max_size=30))
    arr = pa.array(items, type=arrow_type)
    start = data.draw(st.integers(0, len(items) - 1))
    arr = arr.slice(start, data.draw(st.integers(1, len(items) - start)))
    rows = data.draw(st.lists(st.integers(0, len(arr) - 1), max_size=40))
    return arr, arr.to_pylist(), rows


@settings(max_examples=examples(60, 1000))
@given(data=st.data(), layout=st.sampled_from(range(len(_LAYOUTS))))
def test_gather_equals_pyarrow(data: st.DataObject, layout: int) -> None:
    arrow_type, values, as_map = _LAYOUTS[layout]
    arr, whole, rows = _sliced(data, arrow_type, values)
    if data.draw(st.booleans()):
        rows = list(range(data.draw(st.integers(0, len(arr) - 1)), len(arr)))  # one run
    got = gather(arr, np.asarray(rows, dtype=np.int64), as_map)
    assert got == [_expected(whole[r], as_map) for r in rows]


#: Map layouts: key/value records, in any keys (records of other value types go
#: through pyarrow's conversion) or the same keys in every row.
_MAP_LAYOUTS = [k for k, (_, _, as_map) in enumerate(_LAYOUTS) if as_map] + [len(_LAYOUTS)]
_LAYOUTS_WITH_FALLBACK = [
    *_LAYOUTS,
    (
        pa.large_list(pa.struct([("key", pa.int32()), ("value", pa.float64())])),
        st.lists(
            st.fixed_dictionaries({"key": st.integers(0, 3), "value": st.floats(allow_nan=False)}),
            max_size=3,
        ),
        True,
    ),
]


@settings(max_examples=examples(60, 1000))
@given(data=st.data(), layout=st.sampled_from(_MAP_LAYOUTS))
def test_lazy_maps_equal_the_maps_gather_builds(data: st.DataObject, layout: int) -> None:
    """Each row's LazyMap holds nothing until read, then the row's map as a dict (the
    last of repeated keys winning), whichever row of the batch is read first; null
    rows are None; the map equals a dict of its items from either side, and pickles
    and copies as that dict."""
    arrow_type, values, _ = _LAYOUTS_WITH_FALLBACK[layout]
    arr, whole, rows = _sliced(data, arrow_type, values)
    got = lazy_maps(arr, np.asarray(rows, dtype=np.int64))
    expected = [_expected(whole[r], True) for r in rows]
    assert [m is None for m in got] == [e is None for e in expected]
    maps = [m for m in got if m is not None]
    assert all(isinstance(m, LazyMap) and m._dict is None for m in maps)  # not built yet
    order = data.draw(st.permutations(range(len(got))))
    for k in order:
        m, e = got[k], expected[k]
        if m is None:
            continue
        assert m == e and e == m and (m != e) is False
        assert dict(m) == e and dict(m.items()) == e and len(m) == len(e)
        assert (
            list(m) == list(e)
            and list(m.keys()) == list(e)
            and list(m.values()) == list(e.values())
        )
        assert repr(m) == repr(e)
        for key in [*e, -1]:
            assert (key in m) == (key in e) and m.get(key) == e.get(key)
        assert m != {**e, -1: None}
        for clone in (pickle.loads(pickle.dumps(m)), copy.copy(m), copy.deepcopy(m)):
            assert type(clone) is dict and clone == e
    assert all(m._dict is not None for m in maps)


def test_lazy_maps_read_on_threads_at_once() -> None:
    """Threads reading the maps of one batch at once all get the right maps."""
    arr = pa.array(
        [[{"key": k, "value": r * 10 + k} for k in range(3)] for r in range(200)],
        type=pa.large_list(pa.struct([("key", pa.int32()), ("value", pa.int64())])),
    )
    for _ in range(20):
        maps = lazy_maps(arr, np.arange(200, dtype=np.int64))
        seen: list[list[Any]] = [[] for _ in range(4)]
        go = threading.Barrier(4)

        def read(
            t: int,
            maps: list[LazyMap | None] = maps,
            seen: list[list[Any]] = seen,
            go: threading.Barrier = go,
        ) -> None:
            go.wait()
            seen[t] = [dict(m) if m is not None else None for m in maps[t::2]]

        threads = [threading.Thread(target=read, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for t in range(4):
            rows = range(200)[t::2]
            assert seen[t] == [{k: r * 10 + k for k in range(3)} for r in rows]
