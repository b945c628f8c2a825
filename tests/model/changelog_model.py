"""The expected changelog of a keyed table, computed from the model's states (dicts of
key -> row) after each snapshot; shared by the pyarrow and Spark changelog model tests.

Per snapshot: a key that disappears is a DELETE of its old row, a new key an INSERT, a
key whose row changed an UPDATE_BEFORE / UPDATE_AFTER pair (a DELETE and an INSERT
without ``compute_updates``). A row filter keeps the rows it matches, each image on its
own; an update keeps its pairing only when both images match. Net changes compare the
first state with the last: the before image carries the ordinal of the key's first
change in the range, the after image that of its last.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

Row = dict[str, Any]
State = dict[int, Row]
Change = tuple[str, int, int, tuple[Any, ...]]  # type, ordinal, snapshot id, row


def canon_value(v: Any) -> Any:
    if isinstance(v, float):
        return ("nan",) if math.isnan(v) else (v, math.copysign(1.0, v))
    return v


def canon_row(r: Row, names: Sequence[str]) -> tuple[Any, ...]:
    return tuple(canon_value(r[n]) for n in names)


def _emit(
    old: Row | None,
    new: Row | None,
    ordinal_old: int,
    sid_old: int,
    ordinal_new: int,
    sid_new: int,
    names: Sequence[str],
    keep: Callable[[Row], bool],
    compute_updates: bool,
) -> list[Change]:
    if old is not None and new is not None and canon_row(old, names) == canon_row(new, names):
        return []
    o = old if old is not None and keep(old) else None
    n = new if new is not None and keep(new) else None
    pair = compute_updates and o is not None and n is not None
    out: list[Change] = []
    if o is not None:
        out.append(
            ("UPDATE_BEFORE" if pair else "DELETE", ordinal_old, sid_old, canon_row(o, names))
        )
    if n is not None:
        out.append(
            ("UPDATE_AFTER" if pair else "INSERT", ordinal_new, sid_new, canon_row(n, names))
        )
    return out


def expected_changes(
    history: Sequence[tuple[int, State]],
    names: Sequence[str],
    *,
    keep: Callable[[Row], bool] = lambda _r: True,
    compute_updates: bool = True,
    net_changes: bool = False,
) -> list[Change]:
    """``history``: (snapshot id, state) for the start snapshot (or (0, {}) for an empty
    table) and each snapshot of the range, oldest first; sorted changes."""
    out: list[Change] = []
    if not net_changes:
        for ordinal, ((_, before), (sid, after)) in enumerate(itertools.pairwise(history)):
            for k in sorted(set(before) | set(after)):
                out += _emit(
                    before.get(k),
                    after.get(k),
                    ordinal,
                    sid,
                    ordinal,
                    sid,
                    names,
                    keep,
                    compute_updates,
                )
        return sorted(out, key=repr)
    first = history[0][1]
    last = history[-1][1]
    for k in sorted(set(first) | set(last)):
        changed = [
            (ordinal, sid)
            for ordinal, ((_, b), (sid, a)) in enumerate(itertools.pairwise(history))
            if _differs(b.get(k), a.get(k), names)
        ]
        if not changed:
            continue
        (o_first, s_first), (o_last, s_last) = changed[0], changed[-1]
        out += _emit(
            first.get(k),
            last.get(k),
            o_first,
            s_first,
            o_last,
            s_last,
            names,
            keep,
            compute_updates,
        )
    return sorted(out, key=repr)


def _differs(a: Row | None, b: Row | None, names: Sequence[str]) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    return canon_row(a, names) != canon_row(b, names)


def actual_changes(rows: list[Row], names: Sequence[str]) -> list[Change]:
    return sorted(
        (
            (r["_change_type"], r["_change_ordinal"], r["_commit_snapshot_id"], canon_row(r, names))
            for r in rows
        ),
        key=repr,
    )
