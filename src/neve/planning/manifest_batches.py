"""Work on the entries of many manifests at once, for planning.

The columnar decoder reads the manifests of a plan in a few calls of its reader, each
manifest's columns a slice of one call's arrays. After partition pruning a selective
filter keeps a few entries of each manifest (a one-day filter over manifests that
each cover every day: one or two), and a pass over Arrow columns costs a few numpy
calls a column whatever the number of rows; so the survivors of all manifests of one
call are judged by their metrics, and then decoded, in one pass each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from neve.expressions.metric_arrays import MetricArrays
from neve.planning.manifest_columnar import (
    ManifestColumns,
    data_files_together,
    metric_arrays_together,
)
from neve.planning.manifests import DECODE_ERRORS, LazyManifest

__all__ = ["METRICS_FIRST_FROM", "decode_entries_together", "judge_together"]

#: Below this many entries to judge (in one pass), decoding them is cheaper than
#: reading their metrics apart first (a fixed cost of some Arrow calls; measured).
METRICS_FIRST_FROM = 16


def _columnar(
    requests: Sequence[tuple[LazyManifest, Sequence[int]]],
) -> tuple[list[int], list[tuple[ManifestColumns, list[int]]]]:
    """The positions in ``requests`` of the manifests the columnar decoder read, with
    their indices of entries not decoded in full yet (those that have any)."""
    positions: list[int] = []
    parts: list[tuple[ManifestColumns, list[int]]] = []
    for k, (lazy, indices) in enumerate(requests):
        columns = lazy.columns
        missing = [i for i in indices if not lazy.is_decoded(i)]
        if columns is not None and missing:
            positions.append(k)
            parts.append((columns, missing))
    return positions, parts


def decode_entries_together(requests: Sequence[tuple[LazyManifest, Sequence[int]]]) -> None:
    """Decode in full the entries at the given indices of several manifests, as
    :meth:`LazyManifest.entries_at` would, converting the entries of manifests the
    reader read in one call together (``data_files_together``)."""
    positions, parts = _columnar(requests)
    if not parts:
        return
    try:
        found = data_files_together(parts)
    except DECODE_ERRORS:
        return  # entries_at decodes each manifest apart and names the damaged one
    for k, (_, missing), files in zip(positions, parts, found, strict=True):
        requests[k][0].store_files(missing, files)


def judge_together(
    requests: Sequence[tuple[LazyManifest, Sequence[int]]],
    fields: Callable[[int], frozenset[int]],
    judge: Callable[[MetricArrays], list[bool] | None],
) -> list[dict[int, bool] | None]:
    """Per request, ``judge``'s verdict on each of its entries not decoded in full yet
    (entry index -> may match), from the metric arrays of all such entries of the
    manifests the reader read in one call, built and judged in one pass; None for a
    manifest the columnar decoder did not read, a group of fewer than
    :data:`METRICS_FIRST_FROM` entries, or metrics ``judge`` cannot take as arrays. The
    arrays hold the metrics of the fields ``fields`` gives for a request (by its
    position), those of the group's requests together; the others are unknown, which
    ``judge`` must take as "may match"."""
    out: list[dict[int, bool] | None] = [None] * len(requests)
    positions, parts = _columnar(requests)
    if not parts:
        return out
    try:
        groups = metric_arrays_together(parts, [fields(k) for k in positions])
    except DECODE_ERRORS:
        return out  # the manifest-by-manifest path names the damaged one
    for members, arrays in groups:
        if arrays is None or arrays.length < METRICS_FIRST_FROM:
            continue
        verdicts = judge(arrays)
        if verdicts is None:
            continue
        at = 0
        for m in members:
            indices = parts[m][1]
            out[positions[m]] = dict(zip(indices, verdicts[at : at + len(indices)], strict=True))
            at += len(indices)
    return out
