"""Model-based table tests: random sequences of appends, deletes, overwrites, dynamic
partition overwrites, schema and partition evolution, branches, rollbacks and
transactions, checked after every step against a plain Python model of the table's rows.

The model knows nothing of files, manifests or snapshots' layout: it is a list of row
dicts per branch, and a record of the rows each snapshot held. Filters are evaluated
row by row with Iceberg's semantics, written here independently of neve's evaluators:
a comparison (``=``, ``<`` ...) is false for null and NaN; ``!=`` and ``NOT IN`` are
true for them (their negations); ``NOT`` is the plain complement; ``IS NaN`` holds only
for NaN.

Every run draws its own table properties (format version 1/2/3, split size, row-group
size, target file size, manifest merging), catalog kind and initial partition spec, so
rows are spread over many files, row groups, splits and manifests.
"""

from __future__ import annotations

import datetime as dt
import math
import shutil
import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mmh3
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

import neve
from budget import LONG, examples

pytestmark = pytest.mark.property

Row = dict[str, Any]
Pred = Callable[[Row], bool]

US_PER_DAY = 86_400_000_000
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)

# -- value strategies --------------------------------------------------------------------

ks = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([-(2**31), 2**31 - 1]))
vs = st.one_of(
    st.none(),
    st.sampled_from([float("nan"), -0.0, 0.0, float("inf"), float("-inf"), 2.5, -1.0]),
    st.floats(-10, 10, allow_nan=False),
)
ss = st.one_of(st.none(), st.sampled_from(["", "a", "ab", "b", "ba", "z" * 40, "é"]))
tss = st.one_of(
    st.none(),
    st.integers(-3 * US_PER_DAY, 3 * US_PER_DAY),
    st.sampled_from([-1, 0, 1, -US_PER_DAY, US_PER_DAY - 1, -(10**15), 10**15]),
)
cs = st.one_of(st.none(), st.integers(-5, 5))

#: value strategy by column kind
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "int": ks,
    "int-as-long": ks,
    "double": vs,
    "string": ss,
    "ts": tss,
    "long": cs,
}
ARROW: dict[str, pa.DataType] = {
    "id": pa.int64(),
    "int": pa.int32(),
    "int-as-long": pa.int64(),
    "double": pa.float64(),
    "string": pa.string(),
    "ts": pa.timestamp("us", tz="UTC"),
    "long": pa.int64(),
}

PARTITIONINGS = [
    [],
    ["k"],
    ["bucket(4, id)"],
    ["truncate(10, id)"],
    ["day(ts)"],
    ["k", "bucket(2, id)"],
    ["truncate(3, s)"],
]

# -- the model -----------------------------------------------------------------------------


@dataclass
class Column:
    label: str  # stable identity (never changes)
    name: str  # current name
    kind: str  # int, int-as-long (promoted), double, string, ts, long


@dataclass
class Model:
    columns: list[Column]
    branches: dict[str, list[Row]] = field(default_factory=lambda: {"main": []})
    #: snapshot id -> (rows, {label: name} at that time)
    snapshots: dict[int, tuple[list[Row], dict[str, str]]] = field(default_factory=dict)
    #: main's snapshot ids, oldest first (its ancestry)
    lineage: list[int] = field(default_factory=list)

    def names(self) -> dict[str, str]:
        return {c.label: c.name for c in self.columns}

    def label_of(self, name: str) -> str:
        return next(c.label for c in self.columns if c.name == name)

    def kind(self, label: str) -> str:
        return next(c.kind for c in self.columns if c.label == label)

    def project(self, rows: list[Row]) -> list[Row]:
        """Rows of an older state seen with today's columns."""
        labels = ["id", *(c.label for c in self.columns)]
        return [{lab: r.get(lab) for lab in labels} for r in rows]


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


def assert_rows_equal(got: list[Row], want: list[Row], what: str) -> None:
    g = {r["id"]: r for r in got}
    w = {r["id"]: r for r in want}
    assert len(g) == len(got), f"{what}: duplicate ids in the scan"
    missing = sorted(set(w) - set(g))
    extra = sorted(set(g) - set(w))
    assert not missing and not extra, f"{what}: missing ids {missing[:10]}, extra ids {extra[:10]}"
    for i, wr in w.items():
        gr = g[i]
        assert set(gr) == set(wr), f"{what}: columns {sorted(gr)} != {sorted(wr)}"
        for k, v in wr.items():
            assert same_value(gr[k], v), f"{what}: row {i} column {k}: {gr[k]!r} != {v!r}"


# -- filters: text for neve, a predicate for the model ---------------------------------


def _ts_text(micros: int) -> str:
    return (EPOCH + dt.timedelta(microseconds=micros)).isoformat()


def _num_text(v: float) -> str:
    return "-0.0" if v == 0 and math.copysign(1, v) < 0 else repr(float(v))


def _cmp(op: str, a: Any, b: Any) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return False
    return {
        "=": a == b,
        "<": a < b,
        "<=": a <= b,
        ">": a > b,
        ">=": a >= b,
    }[op]


#: literals filters compare with, per column kind, and how to write them
POOLS: dict[str, list[Any]] = {
    "string": ["", "a", "ab", "b", "zz"],
    "ts": [-US_PER_DAY, -1, 0, 1, US_PER_DAY, 2 * US_PER_DAY],
    "double": [-1.0, -0.0, 0.0, 2.5, 7.25],
    "int": [-(2**31), -3, -1, 0, 1, 2, 2**31 - 1],
    "long": [-5, -1, 0, 1, 3, 10, 25, 60],
}
LITERAL_TEXT: dict[str, Callable[[Any], str]] = {
    "string": lambda v: f"'{v}'",
    "ts": lambda v: f"'{_ts_text(v)}'",
    "double": _num_text,
    "int": str,
    "long": str,
}


@dataclass(frozen=True)
class Filter:
    """A filter's text for neve, and the model's test of it and of its negation.

    Iceberg negates a predicate by its opposite operator (``NOT (x < 1)`` is
    ``x >= 1``, false for null and NaN, while ``NOT (x = 1)`` is ``x != 1``, true for
    them), so the negation is not always the complement of ``holds``."""

    text: str
    holds: Pred
    negated: Pred

    def __call__(self, r: Row) -> bool:
        return self.holds(r)


def _complementary(text: str, holds: Pred) -> Filter:
    return Filter(text, holds, lambda r: not holds(r))


_OPPOSITE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}


@st.composite
def predicates(draw: st.DrawFn, model: Model) -> Filter:
    col = draw(st.sampled_from([Column("id", "id", "id"), *model.columns]))
    label, name, kind = col.label, f'"{col.name}"', col.kind
    if label == "id":
        kind = "long"

    def get(r: Row) -> Any:
        return r.get(label)

    if draw(st.integers(0, 5)) == 0:
        neg = draw(st.booleans())
        return _complementary(
            f"{name} IS {'NOT ' if neg else ''}NULL",
            lambda r: (get(r) is not None) if neg else (get(r) is None),
        )
    if kind == "double" and draw(st.booleans()):
        neg = draw(st.booleans())

        def is_nan(r: Row) -> bool:
            v = get(r)
            return isinstance(v, float) and math.isnan(v)

        return _complementary(
            f"{name} IS {'NOT ' if neg else ''}NaN",
            (lambda r: not is_nan(r)) if neg else is_nan,
        )
    if kind == "int-as-long":
        kind = "int"
    if kind == "string" and draw(st.booleans()):
        prefix = draw(st.sampled_from(["a", "b", "z", "é"]))
        neg = draw(st.booleans())

        def starts(r: Row) -> bool:
            v = get(r)
            return v is not None and v.startswith(prefix)

        if neg:  # not_starts_with holds for null
            return _complementary(f"{name} NOT LIKE '{prefix}%'", lambda r: not starts(r))
        return _complementary(f"{name} LIKE '{prefix}%'", starts)
    lit = draw(st.sampled_from(POOLS[kind]))
    text = LITERAL_TEXT[kind](lit)
    if draw(st.integers(0, 4)) == 0 and kind != "double":
        pool = POOLS[kind]
        values = [lit, *draw(st.lists(st.sampled_from(pool), max_size=3))]
        neg = draw(st.booleans())
        listed = ", ".join(LITERAL_TEXT[kind](v) for v in values)

        def within(r: Row) -> bool:
            return any(_cmp("=", get(r), v) for v in values)

        if neg:
            return _complementary(f"{name} NOT IN ({listed})", lambda r: not within(r))
        return _complementary(f"{name} IN ({listed})", within)
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
    if op == "=":
        return _complementary(f"{name} = {text}", lambda r: _cmp("=", get(r), lit))
    if op == "!=":
        return _complementary(f"{name} != {text}", lambda r: not _cmp("=", get(r), lit))
    other = _OPPOSITE[op]
    return Filter(
        f"{name} {op} {text}",
        lambda r: _cmp(op, get(r), lit),
        lambda r: _cmp(other, get(r), lit),
    )


@st.composite
def filters(draw: st.DrawFn, model: Model, depth: int = 2) -> Filter:
    shape = draw(st.integers(0, 5)) if depth > 0 else 0
    if shape <= 2:
        return draw(predicates(model))
    if shape == 3:
        f = draw(filters(model, depth - 1))
        return Filter(f"NOT ({f.text})", f.negated, f.holds)
    a, b = draw(filters(model, depth - 1)), draw(filters(model, depth - 1))
    if shape == 4:
        return Filter(
            f"({a.text}) AND ({b.text})",
            lambda r: a.holds(r) and b.holds(r),
            lambda r: a.negated(r) or b.negated(r),
        )
    return Filter(
        f"({a.text}) OR ({b.text})",
        lambda r: a.holds(r) or b.holds(r),
        lambda r: a.negated(r) and b.negated(r),
    )


# -- partitions of the model's rows (for dynamic partition overwrite) -------------------


def _bucket_long(n: int, v: int | None) -> int | None:
    if v is None:
        return None
    return (mmh3.hash(struct.pack("<q", v)) & 0x7FFFFFFF) % n


def partition_key(terms: list[str], row: Row) -> tuple[Any, ...]:
    out: list[Any] = []
    for t in terms:
        if t == "k":
            out.append(row.get("k"))
        elif t.startswith("bucket("):
            out.append(_bucket_long(int(t[7:].split(",")[0]), row["id"]))
        elif t.startswith("truncate(10, id)"):
            out.append(row["id"] - row["id"] % 10)
        elif t.startswith("truncate(3, s)"):
            s = row.get("s")
            out.append(None if s is None else s[:3])
        elif t == "day(ts)":
            ts = row.get("ts")
            out.append(None if ts is None else ts // US_PER_DAY)
        else:
            raise AssertionError(f"no model for partition term {t}")
    return tuple(out)


# -- the machine ---------------------------------------------------------------------------


class TableMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="neve-model-")
        self.next_id = 0
        self.branch_names: list[str] = []
        self.spec_evolved = False
        self.added = 0
        self.table: neve.Table | None = None
        self.catalog: neve.Catalog | None = None
        self.model = Model(
            [
                Column("k", "k", "int"),
                Column("v", "v", "double"),
                Column("s", "s", "string"),
                Column("ts", "ts", "ts"),
            ]
        )

    def teardown(self) -> None:
        if isinstance(self.catalog, neve.SqlCatalog):
            self.catalog.dispose()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- set-up ------------------------------------------------------------------------

    @initialize(
        kind=st.sampled_from(["sqlite", "filesystem"]),
        version=st.sampled_from([1, 2, 3]),
        partitioning=st.sampled_from(PARTITIONINGS),
        split=st.sampled_from([None, "64", "400"]),
        row_group=st.sampled_from([None, "48", "200"]),
        file_size=st.sampled_from([None, "1500", "6000"]),
        merge=st.sampled_from([None, "2", "3"]),
    )
    def create(
        self,
        kind: str,
        version: int,
        partitioning: list[str],
        split: str | None,
        row_group: str | None,
        file_size: str | None,
        merge: str | None,
    ) -> None:
        props = {
            k: v
            for k, v in {
                "read.split.target-size": split,
                "write.parquet.row-group-size-bytes": row_group,
                "write.target-file-size-bytes": file_size,
                "commit.manifest.min-count-to-merge": merge,
            }.items()
            if v is not None
        }
        if kind == "sqlite":
            self.catalog = neve.connect(
                f"sqlite:///{self.tmp}/catalog.db", warehouse=f"{self.tmp}/wh"
            )
        else:
            self.catalog = neve.connect(f"{self.tmp}/wh")
        self.catalog.create_namespace("db")
        schema = pa.schema(
            [
                pa.field("id", pa.int64(), nullable=False),
                pa.field("k", pa.int32()),
                pa.field("v", pa.float64()),
                pa.field("s", pa.string()),
                pa.field("ts", pa.timestamp("us", tz="UTC")),
            ]
        )
        self.table = self.catalog.create_table(
            "db.t", schema, partition_by=partitioning, properties=props, format_version=version
        )
        self.terms = list(partitioning)
        self.terms_ever = list(partitioning)
        note(f"table v{version} {partitioning} {props} on {kind}")

    def has_table(self) -> bool:
        return self.table is not None

    @property
    def t(self) -> neve.Table:
        assert self.table is not None
        return self.table

    # -- helpers ------------------------------------------------------------------------

    def new_rows(self, data: st.DataObject, n: int) -> list[Row]:
        out = []
        for _ in range(n):
            r: Row = {"id": self.next_id}
            self.next_id += 1
            for c in self.model.columns:
                r[c.label] = data.draw(VALUES[c.kind])
            out.append(r)
        return out

    def arrow(self, rows: list[Row]) -> pa.Table:
        arrays = {"id": pa.array([r["id"] for r in rows], pa.int64())}
        for c in self.model.columns:
            vals = [r[c.label] for r in rows]
            if c.kind == "ts":
                vals = [None if v is None else EPOCH + dt.timedelta(microseconds=v) for v in vals]
            arrays[c.name] = pa.array(vals, ARROW[c.kind])
        return pa.table(arrays)

    def scan_rows(self, scan: neve.TableScan, names: dict[str, str]) -> list[Row]:
        labels = {name: label for label, name in names.items()}
        labels["id"] = "id"
        got = scan.to_arrow()
        out = []
        for r in got.to_pylist():
            row = {}
            for name, v in r.items():
                if isinstance(v, dt.datetime):
                    v = (v - EPOCH) // dt.timedelta(microseconds=1)
                row[labels[name]] = v
            out.append(row)
        return out

    def record(self) -> None:
        """Map main's new head (if the change made one) to the model's state."""
        head = self.t.current_snapshot()
        if head is None or (self.model.lineage and head.snapshot_id == self.model.lineage[-1]):
            return
        self.model.snapshots[head.snapshot_id] = (
            [dict(r) for r in self.model.branches["main"]],
            self.model.names(),
        )
        self.model.lineage.append(head.snapshot_id)

    def branch_for(self, data: st.DataObject) -> str:
        if self.branch_names and data.draw(st.integers(0, 3)) == 0:
            return data.draw(st.sampled_from(self.branch_names))
        return "main"

    # -- data changes ----------------------------------------------------------------------

    @rule(data=st.data(), n=st.integers(0, 12))
    @precondition(has_table)
    def append(self, data: st.DataObject, n: int) -> None:
        branch = self.branch_for(data)
        new = self.new_rows(data, n)
        note(f"append {len(new)} rows to {branch}")
        self.t.append(self.arrow(new), branch=branch)
        self.model.branches[branch] = [*self.model.branches[branch], *new]
        self.record()

    @rule(data=st.data())
    @precondition(has_table)
    def delete(self, data: st.DataObject) -> None:
        branch = self.branch_for(data)
        f = data.draw(filters(self.model))
        text, pred = f.text, f.holds
        note(f"delete where {text} on {branch}")
        self.t.delete(text, branch=branch)
        self.model.branches[branch] = [r for r in self.model.branches[branch] if not pred(r)]
        self.record()

    @rule(data=st.data(), n=st.integers(0, 6))
    @precondition(has_table)
    def overwrite(self, data: st.DataObject, n: int) -> None:
        branch = self.branch_for(data)
        everything = data.draw(st.integers(0, 5)) == 0
        f = None if everything else data.draw(filters(self.model))
        text, pred = ("", lambda r: True) if f is None else (f.text, f.holds)
        new = self.new_rows(data, n)
        note(f"overwrite {len(new)} rows where {text or '<all>'} on {branch}")
        self.t.overwrite(self.arrow(new), filter=text or None, branch=branch)
        kept = [r for r in self.model.branches[branch] if not pred(r)]
        self.model.branches[branch] = [*kept, *new]
        self.record()

    @rule(data=st.data(), n=st.integers(1, 6))
    @precondition(lambda self: self.has_table() and not self.spec_evolved)
    def dynamic_overwrite(self, data: st.DataObject, n: int) -> None:
        # Files of older specs are not replaced by a dynamic overwrite (Iceberg's
        # ReplacePartitions), so this rule runs only while the table has one spec.
        new = self.new_rows(data, n)
        note(f"dynamic overwrite with {len(new)} rows")
        self.t.dynamic_partition_overwrite(self.arrow(new))
        if not self.terms:
            self.model.branches["main"] = new
        else:
            touched = {partition_key(self.terms, r) for r in new}
            kept = [
                r
                for r in self.model.branches["main"]
                if partition_key(self.terms, r) not in touched
            ]
            self.model.branches["main"] = [*kept, *new]
        self.record()

    @rule(data=st.data())
    @precondition(has_table)
    def transaction(self, data: st.DataObject) -> None:
        steps = data.draw(
            st.lists(
                st.sampled_from(["append", "delete", "overwrite", "prop"]), min_size=2, max_size=3
            )
        )
        before = len(self.t.snapshots())
        states: list[list[Row]] = []
        rows = self.model.branches["main"]
        with self.t.transaction() as tx:
            for step in steps:
                if step == "append":
                    new = self.new_rows(data, data.draw(st.integers(1, 6)))
                    tx.append(self.arrow(new))
                    rows = [*rows, *new]
                elif step == "delete":
                    f = data.draw(filters(self.model))
                    text, pred = f.text, f.holds
                    tx.delete(text)
                    rows = [r for r in rows if not pred(r)]
                elif step == "overwrite":
                    f = data.draw(filters(self.model))
                    text, pred = f.text, f.holds
                    new = self.new_rows(data, data.draw(st.integers(0, 4)))
                    tx.overwrite(self.arrow(new), filter=text)
                    rows = [*(r for r in rows if not pred(r)), *new]
                else:
                    tx.set_properties({"model.step": str(len(states))})
                    note("  set a property")
                    continue
                note(f"  tx {step}")
                states.append(rows)
        self.model.branches["main"] = rows
        added = self.t.snapshots()[before:]
        assert len(added) == len(states), "one snapshot per staged data change"
        names = self.model.names()
        for snap, state in zip(added, states, strict=True):
            self.model.snapshots[snap.snapshot_id] = ([dict(r) for r in state], names)
            self.model.lineage.append(snap.snapshot_id)

    # -- schema and spec evolution ------------------------------------------------------

    @rule()
    @precondition(lambda self: self.has_table() and self.added < 3)
    def add_column(self) -> None:
        self.added += 1
        label = f"c{self.added}"
        note(f"add column {label}")
        with self.t.update_schema() as u:
            u.add_column(label, "long")
        self.model.columns.append(Column(label, label, "long"))
        for rows in self.model.branches.values():
            for r in rows:
                r[label] = None

    @rule(data=st.data())
    @precondition(lambda self: self.has_table() and len(self.model.columns) > 0)
    def rename_column(self, data: st.DataObject) -> None:
        col = data.draw(st.sampled_from(self.model.columns))
        new_name = f"{col.label}_r{data.draw(st.integers(0, 99))}"
        if any(c.name == new_name for c in self.model.columns):
            return
        note(f"rename {col.name} -> {new_name}")
        with self.t.update_schema() as u:
            u.rename_column(col.name, new_name)
        col.name = new_name

    @rule(data=st.data())
    @precondition(lambda self: self.has_table() and len(self.model.columns) > 1)
    def drop_column(self, data: st.DataObject) -> None:
        # partition sources of every spec the table has had
        sources = {t.split("(")[-1].rstrip(")").split(",")[-1].strip() for t in self.terms_ever}
        candidates = [c for c in self.model.columns if c.label not in sources]
        if not candidates:
            return
        col = data.draw(st.sampled_from(candidates))
        note(f"drop column {col.name}")
        with self.t.update_schema() as u:
            u.delete_column(col.name)
        self.model.columns.remove(col)
        for rows in self.model.branches.values():
            for r in rows:
                r.pop(col.label, None)

    @rule()
    @precondition(
        lambda self: (
            self.has_table() and any(c.label == "k" and c.kind == "int" for c in self.model.columns)
        )
    )
    def promote_k(self) -> None:
        col = next(c for c in self.model.columns if c.label == "k")
        note("promote k to long")
        with self.t.update_schema() as u:
            u.update_column(col.name, "long")
        col.kind = "int-as-long"  # values keep the int range the strategy draws

    @rule(data=st.data())
    @precondition(lambda self: self.has_table() and not self.spec_evolved)
    def evolve_spec(self, data: st.DataObject) -> None:
        current = {c.label for c in self.model.columns}
        kinds = {t.split("(")[0] for t in self.terms}  # a column takes one of each kind
        options = [t for t in ("bucket(3, id)", "truncate(7, id)") if t.split("(")[0] not in kinds]
        if "ts" in current and "day" not in kinds:
            options.append("month(ts)")
        if not options:
            return
        term = data.draw(st.sampled_from(options))
        note(f"partition spec: add {term}")
        source = self.model.names()["ts"] if "ts" in term else "id"
        with self.t.update_spec() as u:
            u.add_field(term.replace("ts", source) if "ts" in term else term)
        self.spec_evolved = True
        self.terms_ever.append(term)

    # -- refs ------------------------------------------------------------------------------

    @rule(data=st.data())
    @precondition(lambda self: self.has_table() and len(self.branch_names) < 2)
    def create_branch(self, data: st.DataObject) -> None:
        if self.t.current_snapshot() is None:
            return
        name = f"b{len(self.branch_names)}"
        note(f"create branch {name}")
        self.t.create_branch(name)
        self.branch_names.append(name)
        self.model.branches[name] = [dict(r) for r in self.model.branches["main"]]

    @rule(data=st.data())
    @precondition(lambda self: self.has_table() and len(self.model.lineage) > 1)
    def rollback(self, data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(self.model.lineage) - 2))
        sid = self.model.lineage[i]
        note(f"rollback main to lineage[{i}]")
        self.t.rollback_to_snapshot(sid)
        rows, _names = self.model.snapshots[sid]
        self.model.branches["main"] = self.model.project([dict(r) for r in rows])
        self.model.lineage = self.model.lineage[: i + 1]

    # -- checks ----------------------------------------------------------------------------

    @invariant()
    def scans_match_the_model(self) -> None:
        if self.table is None:
            return
        names = self.model.names()
        for branch, rows in self.model.branches.items():
            scan = self.t.scan() if branch == "main" else self.t.scan(ref=branch)
            got = self.scan_rows(scan, names)
            assert_rows_equal(got, rows, f"branch {branch}")

    @invariant()
    def reloaded_table_agrees(self) -> None:
        if self.table is None or self.catalog is None:
            return
        fresh = self.catalog.load_table("db.t")
        assert fresh.metadata_location == self.t.metadata_location

    @rule(data=st.data())
    @precondition(has_table)
    def filtered_scan(self, data: st.DataObject) -> None:
        f = data.draw(filters(self.model))
        text, pred = f.text, f.holds
        want = [r for r in self.model.branches["main"] if pred(r)]
        got = self.scan_rows(self.t.scan(filter=text), self.model.names())
        assert_rows_equal(got, want, f"filter {text}")

    @rule(data=st.data())
    @precondition(lambda self: self.has_table() and bool(self.model.snapshots))
    def time_travel(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(sorted(self.model.snapshots)))
        rows, names = self.model.snapshots[sid]
        got = self.scan_rows(self.t.scan(snapshot_id=sid), names)
        assert_rows_equal(got, rows, f"snapshot {sid}")


TableMachine.TestCase.settings = settings(
    max_examples=examples(12, 400),
    stateful_step_count=40 if LONG else 15,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_table_model = TableMachine.TestCase
