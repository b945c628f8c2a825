"""Model-based test of row-level changes on primary-key tables: random sequences of
append, delete, update, merge and upsert run on two tables at once, one merge-on-read
and one copy-on-write, checked after every step against a Python model keyed by the
primary key. Every run draws its format version (2 or 3), partition layout, split size
and row-group size, so rows spread over many files, row groups and splits, and deletion
vectors / position delete files are merged and replaced again and again.

The model's semantics are written independently of neve: a comparison is false for a
null, also under ``NOT`` (Iceberg rewrites ``NOT a < k`` to ``a >= k``); SQL conditions of a merge are false when they
evaluate to null; arithmetic with a null gives null.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import neve
from budget import LONG, examples

pytestmark = pytest.mark.property

Row = dict[str, Any]
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("grp", pa.int32()),
        pa.field("qty", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("f", pa.float64()),
    ]
)
MODES = ("merge-on-read", "copy-on-write")

ids = st.integers(0, 60)
qtys = st.one_of(st.none(), st.integers(-5, 5), st.sampled_from([-(2**63), 2**63 - 1]))
names = st.one_of(st.none(), st.sampled_from(["", "a", "b", "é", "x" * 40]))
floats = st.one_of(st.none(), st.sampled_from([math.nan, -0.0, 0.0, math.inf, 1.5]))
grps = st.one_of(st.none(), st.integers(0, 3))


@st.composite
def rows_for(draw: st.DrawFn, keys: list[int]) -> list[Row]:
    return [
        {"id": k, "grp": draw(grps), "qty": draw(qtys), "name": draw(names), "f": draw(floats)}
        for k in keys
    ]


def to_arrow(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


# -- filters: (neve text, model predicate) ------------------------------------------------


def _lt(k: int) -> tuple[str, Callable[[Row], bool]]:
    return f"qty < {k}", lambda r: r["qty"] is not None and r["qty"] < k


@st.composite
def filters(draw: st.DrawFn) -> tuple[str, Callable[[Row], bool]]:
    kind = draw(st.sampled_from(["lt", "not_lt", "grp", "in", "null", "nan", "and"]))
    if kind == "lt":
        return _lt(draw(st.integers(-4, 4)))
    if kind == "not_lt":
        # Iceberg rewrites NOT away (NOT qty < k is qty >= k): false for a null
        k = draw(st.integers(-4, 4))
        return f"NOT (qty < {k})", lambda r: r["qty"] is not None and not r["qty"] < k
    if kind == "grp":
        g = draw(st.integers(0, 3))
        return f"grp = {g}", lambda r: r["grp"] == g
    if kind == "in":
        keys = draw(st.lists(ids, min_size=1, max_size=8))
        return f"id IN ({', '.join(map(str, keys))})", lambda r: r["id"] in keys
    if kind == "null":
        return "name IS NULL", lambda r: r["name"] is None
    if kind == "nan":
        return "f IS NaN", lambda r: r["f"] is not None and math.isnan(r["f"])
    a_text, a = draw(filters())
    b_text, b = draw(filters())
    return f"({a_text}) AND ({b_text})", lambda r: a(r) and b(r)


def canon(rows: list[Row]) -> dict[int, tuple[Any, ...]]:
    def c(v: Any) -> Any:
        if isinstance(v, float):
            return ("nan",) if math.isnan(v) else (v, math.copysign(1.0, v))
        return v

    out = {}
    for r in rows:
        assert r["id"] not in out, f"key {r['id']} twice"
        out[r["id"]] = tuple(c(r[n]) for n in SCHEMA.names)
    return out


class RowLevelMachine(RuleBasedStateMachine):
    #: How the machine reaches a table (the Spark machine wraps it in neve.spark's verbs).
    @staticmethod
    def wrap(t: neve.Table) -> Any:
        return t

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="neve-rowlevel-")
        self.cat = neve.connect(f"sqlite:///{self.dir}/c.db", warehouse=f"{self.dir}/wh")
        self.cat.create_namespace("db")
        self.model: dict[int, Row] = {}
        self.tables: dict[str, Any] = {}

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    @initialize(
        version=st.sampled_from([2, 3]),
        layout=st.sampled_from([[], ["bucket(4, id)"], ["grp"]]),
        split=st.sampled_from(["1", "2048", "134217728"]),
        row_group=st.sampled_from(["1024", "134217728"]),
    )
    def create(self, version: int, layout: list[str], split: str, row_group: str) -> None:
        note(f"v{version} {layout} split={split} row_group={row_group}")
        for mode in MODES:
            props = {f"write.{op}.mode": mode for op in ("delete", "update", "merge")}
            props |= {
                "read.split.target-size": split,
                "write.parquet.row-group-size-bytes": row_group,
            }
            self.tables[mode] = self.wrap(
                self.cat.create_table(
                    f"db.{mode.replace('-', '_')}",
                    SCHEMA,
                    partition_by=layout,
                    format_version=version,
                    primary_key=["id"],
                    properties=props,
                )
            )

    def each(self, op: Callable[[Any], Any]) -> list[Any]:
        return [op(t) for t in self.tables.values()]

    @rule(data=st.data())
    def append(self, data: st.DataObject) -> None:
        new = data.draw(
            st.lists(
                st.integers(61, 400).filter(lambda k: k not in self.model), max_size=30, unique=True
            )
        )
        rows = data.draw(rows_for(new))
        note(f"append {len(rows)}")
        self.each(lambda t: t.append(to_arrow(rows)))  # appends are not under test here
        self.model |= {r["id"]: r for r in rows}

    @rule(f=filters())
    def delete(self, f: tuple[str, Callable[[Row], bool]]) -> None:
        text, p = f
        note(f"delete {text}")
        self.each(lambda t: t.delete(text))
        self.model = {k: r for k, r in self.model.items() if not p(r)}

    @rule(f=filters(), qty=qtys, name=names)
    def update(
        self, f: tuple[str, Callable[[Row], bool]], qty: int | None, name: str | None
    ) -> None:
        text, p = f
        note(f"update qty={qty} name={name!r} where {text}")
        counts = self.each(lambda t: t.update({"qty": qty, "name": name}, text))
        expected = [k for k, r in self.model.items() if p(r)]
        assert counts == [len(expected)] * len(counts)
        for k in expected:
            self.model[k] = {**self.model[k], "qty": qty, "name": name}

    @rule(data=st.data())
    def upsert(self, data: st.DataObject) -> None:
        keys = data.draw(st.lists(ids, max_size=15, unique=True))
        rows = data.draw(rows_for(keys))
        note(f"upsert {keys}")
        results = self.each(lambda t: t.upsert(to_arrow(rows)))
        updated = sum(1 for k in keys if k in self.model)
        for r in results:
            assert (r.rows_updated, r.rows_inserted) == (updated, len(keys) - updated)
        self.model |= {r["id"]: r for r in rows}

    @rule(data=st.data(), by_source=st.booleans())
    def merge(self, data: st.DataObject, by_source: bool) -> None:
        keys = data.draw(st.lists(ids, max_size=15, unique=True))
        rows = data.draw(rows_for(keys))
        note(f"merge {keys} by_source={by_source}")

        def run(t: Any) -> Any:
            b = (
                t.merge(to_arrow(rows))
                .when_matched_delete("target.qty > source.qty")
                .when_matched_update({"qty": "source.qty", "name": "target.name"}, "target.grp = 1")
                .when_matched_update_all()
                .when_not_matched_insert_all("source.grp IS NOT NULL")
            )
            if by_source:
                b = b.when_not_matched_by_source_delete("target.qty = 0")
            return b.execute()

        self.each(run)
        source = {r["id"]: r for r in rows}
        out: dict[int, Row] = {}
        for k, r in self.model.items():
            s = source.get(k)
            if s is None:
                if by_source and r["qty"] == 0:
                    continue
                out[k] = r
            elif r["qty"] is not None and s["qty"] is not None and r["qty"] > s["qty"]:
                continue
            elif r["grp"] == 1:
                out[k] = {**r, "qty": s["qty"]}
            else:
                out[k] = s
        for k, s in source.items():
            if k not in self.model and s["grp"] is not None:
                out[k] = s
        self.model = out

    @invariant()
    def scans_equal_the_model(self) -> None:
        if not self.tables:
            return
        want = canon(list(self.model.values()))
        for mode, t in self.tables.items():
            got = canon(t.refresh().scan().to_arrow().to_pylist())
            assert got == want, (
                f"{mode}: extra {set(got) - set(want)} missing {set(want) - set(got)} differ {[k for k in got if k in want and got[k] != want[k]]}"
            )

    @invariant()
    def at_most_one_dv_per_data_file(self) -> None:
        t = self.tables.get("merge-on-read")
        if t is None:
            return
        for task in t.scan().plan_files():
            dvs = [d for d in task.delete_files if d.is_deletion_vector]
            assert len(dvs) <= 1, task.file.file_path


RowLevelMachine.TestCase.settings = settings(
    max_examples=examples(6, 200),
    stateful_step_count=30 if LONG else 10,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_rowlevel_model = RowLevelMachine.TestCase
