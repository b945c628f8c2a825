"""The column metrics of many data files at once, as arrays: what the vectorized
inclusive metrics evaluator reads (``neve.expressions.metrics_vectorized``).

One array item per data file (manifest entry), for a chosen set of field ids. A
metric is *known* for a file when its map holds the field's key; a field missing
from a mapping here is unknown for every file. Bounds stay serialized (Appendix D):
their decoding depends on the field's type, which the evaluator knows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Bounds", "Counts", "MetricArrays"]

#: Per file: whether the count is known, and the count (0 where unknown).
Counts = tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]

#: Per file whether the bound is known, and the known bounds in file order.
Bounds = tuple[npt.NDArray[np.bool_], list[bytes]]


@dataclass(frozen=True)
class MetricArrays:
    """Record counts, value/null/NaN counts and lower/upper bounds of ``length`` files,
    keyed by field id."""

    record_counts: npt.NDArray[np.int64]
    value_counts: Mapping[int, Counts]
    null_value_counts: Mapping[int, Counts]
    nan_value_counts: Mapping[int, Counts]
    lower_bounds: Mapping[int, Bounds]
    upper_bounds: Mapping[int, Bounds]

    @property
    def length(self) -> int:
        return len(self.record_counts)
