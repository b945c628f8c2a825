"""neve.planning.arrow_values reads values out of Arrow buffers with numpy; it must give
what pyarrow's own conversion gives, for every layout polars hands the columnar
manifest decoder (integers, string and binary views short and long, lists, key/value
maps, nulls, sliced arrays) and, through its fallback, for any other type."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budget import examples
from neve.planning.arrow_values import gather

_MAP_ITEM = pa.struct([("key", pa.int32()), ("value", pa.binary_view())])

#: (Arrow type, a strategy for one value, whether gather reads it as a map)
_LAYOUTS: list[tuple[pa.DataType, st.SearchStrategy[Any], bool]] = [
    (pa.int32(), st.integers(-(2**31), 2**31 - 1), False),
    (pa.int64(), st.integers(-(2**63), 2**63 - 1), False),
    # a view keeps values up to 12 bytes inline, longer ones in a data buffer
    (pa.string_view(), st.text(max_size=20), False),
    (pa.binary_view(), st.binary(max_size=20), False),
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
    (pa.large_string(), st.text(max_size=5), False),
    (pa.float64(), st.floats(allow_nan=False), False),
]


def _expected(value: Any, as_map: bool) -> Any:
    if value is None or not as_map:
        return value
    return {kv["key"]: kv["value"] for kv in value}  # the last of repeated keys wins


@settings(
    max_examples=examples(60, 1000), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data(), layout=st.sampled_from(range(len(_LAYOUTS))))
def test_gather_equals_pyarrow(data: st.DataObject, layout: int) -> None:
    arrow_type, values, as_map = _LAYOUTS[layout]
    items = data.draw(st.lists(st.none() | values, min_size=1, max_size=30))
    arr = pa.array(items, type=arrow_type)
    start = data.draw(st.integers(0, len(items) - 1))
    arr = arr.slice(start, data.draw(st.integers(1, len(items) - start)))
    whole = arr.to_pylist()
    rows = data.draw(st.lists(st.integers(0, len(arr) - 1), max_size=40))
    if data.draw(st.booleans()):
        rows = list(range(data.draw(st.integers(0, len(arr) - 1)), len(arr)))  # one run
    got = gather(arr, np.asarray(rows, dtype=np.int64), as_map)
    assert got == [_expected(whole[r], as_map) for r in rows]
