"""Model-based test of changelog reads: the row-level machine's random sequences of
appends, merge-on-read and copy-on-write deletes, updates, merges and upserts, plus
overwrites by filter and compactions (``replace`` snapshots), on a merge-on-read and a
copy-on-write table; after each step the changelog between two random snapshots of the
history equals the difference of the model's states there (updates paired by the primary
key; with and without ``compute_updates``, ``net_changes`` and a row filter)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from budget import LONG, examples
from model.changelog_model import Row, State, actual_changes, expected_changes
from model.test_rowlevel_model import SCHEMA, RowLevelMachine, filters, ids, rows_for, to_arrow

pytestmark = pytest.mark.property

NAMES = SCHEMA.names


class ChangelogMachine(RowLevelMachine):
    def __init__(self) -> None:
        super().__init__()
        # per table: (snapshot id or None, operation, model state) after each step
        self.history: dict[str, list[tuple[int | None, str, State]]] = {}

    @rule(data=st.data(), f=filters())
    def overwrite(self, data: st.DataObject, f: tuple[str, Callable[[Row], bool]]) -> None:
        text, p = f
        kept = {k: r for k, r in self.model.items() if not p(r)}
        keys = data.draw(st.lists(ids.filter(lambda k: k not in kept), max_size=10, unique=True))
        rows = data.draw(rows_for(keys))
        note(f"overwrite {keys} where {text}")
        self.each(lambda t: t.overwrite(to_arrow(rows), text))
        self.model = kept | {r["id"]: r for r in rows}

    @rule()
    def compact(self) -> None:
        note("compact")
        self.each(
            lambda t: t.maintenance.rewrite_data_files(
                options={"min-input-files": "2", "rewrite-all": "true"}
            )
        )

    @invariant()
    def record(self) -> None:
        for mode, t in self.tables.items():
            hist = self.history.setdefault(mode, [(None, "", {})])
            snap = t.refresh().current_snapshot()
            sid = snap.snapshot_id if snap is not None else None
            if sid == hist[-1][0]:
                assert hist[-1][2] == self.model or sid is None
                continue
            assert snap is not None
            assert snap.parent_snapshot_id == hist[-1][0], "one snapshot per step"
            hist.append((sid, snap.operation.value, dict(self.model)))

    @rule(data=st.data())
    def changelog_equals_model_difference(self, data: st.DataObject) -> None:
        for mode, t in self.tables.items():
            hist = self.history.get(mode, [])
            if len(hist) < 2:
                continue
            i = data.draw(st.integers(0, len(hist) - 2), label="start")
            j = data.draw(st.integers(i + 1, len(hist) - 1), label="end")
            compute = data.draw(st.booleans(), label="compute_updates")
            net = data.draw(st.booleans(), label="net_changes")
            filtered = data.draw(st.booleans(), label="filtered")
            text, keep = data.draw(filters()) if filtered else (None, lambda _r: True)
            self.check(mode, t, i, j, compute=compute, net=net, text=text, keep=keep)

    #: How many start snapshots the final check reads the changelog from (to the end).
    final_starts = 3

    def teardown(self) -> None:
        # every run ends with one more upsert (so even a run of no steps has changes)
        # and changelogs up to the last snapshot, paired and net
        try:
            if self.tables:
                rows = [
                    {"id": k, "grp": 1, "qty": k, "name": "end", "f": -0.0} for k in (1, 2, 500)
                ]
                self.each(lambda t: t.upsert(to_arrow(rows)))
                self.model |= {r["id"]: r for r in rows}
                self.record()
            for mode, t in self.tables.items():
                hist = self.history.get(mode, [])
                last = len(hist) - 1
                for i in sorted({0, last // 2, last - 1})[: self.final_starts]:
                    if 0 <= i < last:
                        for net in (False, True):
                            self.check(mode, t, i, last, compute=True, net=net)
        finally:
            super().teardown()

    def check(
        self,
        mode: str,
        t: Any,
        i: int,
        j: int,
        *,
        compute: bool,
        net: bool,
        text: str | None = None,
        keep: Callable[[Row], bool] = lambda _r: True,
    ) -> None:
        hist = self.history[mode]
        start = hist[i][0]
        rng = [hist[i]] + [h for h in hist[i + 1 : j + 1] if h[1] != "replace"]
        expected = expected_changes(
            [(sid or 0, state) for sid, _, state in rng],
            NAMES,
            keep=keep,
            compute_updates=compute,
            net_changes=net,
        )
        got = self.read_changes(
            t,
            start_snapshot_id=start,
            end_snapshot_id=hist[j][0],
            filter=text,
            compute_updates=compute,
            net_changes=net,
        )
        actual = actual_changes(got, NAMES)
        assert actual == expected, (
            f"{mode} ({start}, {hist[j][0]}] filter={text} compute={compute} net={net}: "
            f"extra {[c for c in actual if c not in expected]} "
            f"missing {[c for c in expected if c not in actual]}"
        )

    def read_changes(self, t: Any, **kwargs: Any) -> list[Row]:
        table: pa.Table = t.changes(**kwargs)
        return table.to_pylist()


ChangelogMachine.TestCase.settings = settings(
    max_examples=examples(5, 150),
    stateful_step_count=30 if LONG else 12,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_changelog_model = ChangelogMachine.TestCase
