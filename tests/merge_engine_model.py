"""A small reference model of Paimon's merge engines (docs/MERGE-ENGINES.md), written
plainly as a row-by-row fold over dicts, and the Hypothesis strategies that draw table
configurations and batches for it. Shared by tests/table/test_merge_engines.py
(pyarrow) and tests/spark/test_spark_merge_engines.py (Spark).

Import it as ``from merge_engine_model import ...`` (``tests/`` is on ``sys.path``,
see ``strategies.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

__all__ = [
    "BATCH_SCHEMA",
    "SCHEMA",
    "Config",
    "Refused",
    "apply_batch",
    "batches",
    "configs",
    "to_arrow",
]

Row = dict[str, Any]

#: The table: key ``k``, a sequence column ``s``, and one column per value type.
SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("s", pa.int64()),
        pa.field("n", pa.int64()),
        pa.field("t", pa.string()),
        pa.field("b", pa.bool_()),
    ]
)
#: Incoming rows: the table's columns and the row kind ``op``.
BATCH_SCHEMA = SCHEMA.append(pa.field("op", pa.string()))
VALUES = ("n", "t", "b")
FUNCTIONS = {
    "n": [
        "sum",
        "product",
        "count",
        "min",
        "max",
        "last_value",
        "last_non_null_value",
        "first_value",
        "first_non_null_value",
    ],
    "t": [
        "listagg",
        "min",
        "max",
        "last_value",
        "last_non_null_value",
        "first_value",
        "first_non_null_value",
    ],
    "b": ["bool_and", "bool_or", "last_value", "last_non_null_value", "first_value"],
}
RETRACTABLE = {"sum", "product", "count", "last_value", "last_non_null_value"}


class Refused(Exception):
    """The model says the batch is refused as a whole (the table stays as it was)."""


@dataclass(frozen=True)
class Config:
    """A table's merge-engine configuration as the model reads it."""

    engine: str
    sequence: bool = False
    descending: bool = False
    rowkind: bool = False
    ignore_delete: bool = False
    functions: dict[str, str] = field(default_factory=dict)
    delimiter: str = ","
    copy_on_write: bool = False  # how superseded rows go: rewritten files, not deletes

    def properties(self) -> dict[str, str]:
        props = {"merge-engine": self.engine}
        if self.copy_on_write:
            props["write.merge.mode"] = "copy-on-write"
        if self.sequence:
            props["sequence.field"] = "s"
            if self.descending:
                props["sequence.field.sort-order"] = "descending"
        if self.rowkind:
            props["rowkind.field"] = "op"
        if self.ignore_delete:
            props["ignore-delete"] = "true"
        for c, fn in self.functions.items():
            props[f"fields.{c}.aggregate-function"] = fn
            if fn == "listagg":
                props[f"fields.{c}.list-agg-delimiter"] = self.delimiter
        return props


@st.composite
def configs(draw: st.DrawFn, engine: str) -> Config:
    functions = {}
    if engine == "aggregation":
        functions = {c: draw(st.sampled_from(FUNCTIONS[c])) for c in VALUES}
    return Config(
        engine=engine,
        sequence=engine != "first-row" and draw(st.booleans()),
        descending=draw(st.booleans()),
        rowkind=draw(st.booleans()),
        ignore_delete=draw(st.booleans()),
        functions=functions,
        delimiter=draw(st.sampled_from([",", "|", ""])),
        copy_on_write=draw(st.booleans()),
    )


@st.composite
def batches(draw: st.DrawFn, config: Config) -> list[list[Row]]:
    """1-4 batches of up to 10 rows over 6 keys (so keys repeat within and across
    batches), with nulls, out-of-order sequence values and, when the table has a row
    kind column, every row kind (mostly inserts)."""
    kinds = st.sampled_from(["+I", "+I", "+U", "-U", "-D"]) if config.rowkind else st.just("+I")
    row = st.fixed_dictionaries(
        {
            "k": st.integers(0, 5),
            "s": st.one_of(st.none(), st.integers(0, 4)),
            "n": st.one_of(st.none(), st.integers(-2, 2)),
            "t": st.one_of(st.none(), st.sampled_from(["", "a", "b", "é"])),
            "b": st.one_of(st.none(), st.booleans()),
            "op": kinds,
        }
    )
    return draw(st.lists(st.lists(row, max_size=10), min_size=1, max_size=4))


def to_arrow(rows: list[Row], config: Config) -> pa.Table:
    """A batch as the source of an upsert (with ``op`` only when the table reads it)."""
    table = pa.Table.from_pylist(rows, schema=BATCH_SCHEMA)
    return table if config.rowkind else table.drop_columns(["op"])


# -- the model -------------------------------------------------------------------------


def _order_key(config: Config, entry: tuple[Row, bool, int]) -> tuple[Any, ...]:
    """Fold order: the sequence (a null first, as the lowest), then arrival (the stored
    row before the batch, the batch in input order)."""
    row, _, arrival = entry
    if not config.sequence:
        return (arrival,)
    s = row["s"]
    if s is None:
        return (0, 0, arrival)
    return (1, -s if config.descending else s, arrival)


def _agg(fn: str, acc: Any, v: Any, retract: bool, delimiter: str, first: bool) -> Any:
    """One step of Paimon's aggregate function ``fn`` (retract: a -U/-D row)."""
    if fn == "last_value":
        return None if retract else v
    if fn == "last_non_null_value":
        if v is None:
            return acc
        return None if retract else v
    if fn == "first_value":
        return v if first else acc
    if v is None:
        return acc
    if fn == "first_non_null_value":
        return v if acc is None else acc
    if fn == "sum":
        if acc is None:
            return -v if retract else v
        return acc - v if retract else acc + v
    if fn == "product":
        if acc is None:
            return v
        if not retract:
            return acc * v
        if v == 0:
            raise Refused("retracting 0 from a product")
        q = abs(acc) // abs(v)
        return q if (acc >= 0) == (v >= 0) else -q
    if acc is None:
        return v
    if fn == "min":
        return min(acc, v)
    if fn == "max":
        return max(acc, v)
    if fn == "bool_and":
        return acc and v
    if fn == "bool_or":
        return acc or v
    if fn == "listagg":
        return acc + delimiter + v
    raise AssertionError(fn)


def _merged_columns(config: Config) -> tuple[str, ...]:
    """The columns the engine merges: ``s`` is one of them unless it is the sequence
    (which is taken from the row with the highest sequence)."""
    return VALUES if config.sequence else ("s", *VALUES)


def _merge_key(config: Config, stored: Row | None, rows: list[tuple[Row, bool]]) -> Row | None:
    """The row a key holds after ``rows`` (incoming, with their retract flag) arrive;
    None when it holds none."""
    entries = [(stored, False, -1)] if stored is not None else []
    entries += [(r, retract, i) for i, (r, retract) in enumerate(rows)]
    entries.sort(key=lambda e: _order_key(config, e))
    if config.engine == "deduplicate":
        last, retract, _ = entries[-1]
        return None if retract else last
    if config.engine == "first-row":
        return stored if stored is not None else rows[0][0]
    if config.engine == "partial-update":
        merged: Row = {"k": entries[0][0]["k"], "s": entries[-1][0]["s"]}
        for c in _merged_columns(config):
            merged[c] = None
            for row, _, _ in entries:
                if row[c] is not None:  # a null never overwrites
                    merged[c] = row[c]
        return merged
    # aggregation
    merged = {"k": entries[0][0]["k"], "s": entries[-1][0]["s"]}
    for c in _merged_columns(config):
        fn = config.functions.get(c, "last_non_null_value")  # the default function
        if fn == "count":
            count = stored[c] if stored is not None and stored[c] is not None else 0
            for row, retract in rows:
                if row[c] is not None:
                    count += -1 if retract else 1
            merged[c] = count
            continue
        acc = None
        for i, (row, retract, _) in enumerate(entries):
            acc = _agg(fn, acc, row[c], retract, config.delimiter, i == 0)
        merged[c] = acc
    return merged


def apply_batch(config: Config, state: dict[int, Row], batch: list[Row]) -> dict[int, Row]:
    """The table (key -> row) after upserting ``batch``; raises :class:`Refused` when
    the engine refuses the batch."""
    rows: dict[int, list[tuple[Row, bool]]] = {}
    for r in batch:
        retract = config.rowkind and r["op"] in ("-U", "-D")
        if retract and config.ignore_delete:
            continue
        if retract and config.engine in ("partial-update", "first-row"):
            raise Refused(f"{config.engine} takes no retraction")
        if (
            retract
            and config.engine == "aggregation"
            and any(config.functions[c] not in RETRACTABLE for c in VALUES)
        ):
            raise Refused("a function takes no retraction")
        row = {c: r[c] for c in ("k", "s", *VALUES)}
        rows.setdefault(r["k"], []).append((row, retract))
    out = dict(state)
    for k, incoming in rows.items():
        merged = _merge_key(config, state.get(k), incoming)
        if merged is None:
            out.pop(k, None)
        else:
            out[k] = merged
    return out
