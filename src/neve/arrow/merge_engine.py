"""Merge engines on Arrow tables: how the rows that arrive for a key are merged with
the row the table holds for it (docs/MERGE-ENGINES.md).

:func:`resolve` is the whole rule as a pure function over Arrow tables: given the
stored live rows of some keys and the incoming rows, it returns the rows to write and
the stored rows they replace. The upsert calls it once with the rows it located; a
commit that rebases can call it again with the rows a concurrent commit added as the
stored side. Everything is vectorized in polars (sort, then group by key); only a
``product`` column that takes retractions folds in Python, since integer division
depends on the order.

The common case, ``deduplicate`` without sequence or row kinds, never needs the stored
values: :func:`last_per_key` reduces the batch and the upsert's key join does the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from neve.errors import MergeEngineError
from neve.io.pools import POLARS
from neve.spec.merge_engine import RETRACTABLE_FUNCTIONS, ROW_KINDS, MergeEngine

__all__ = [
    "STORED_INDEX",
    "Resolution",
    "first_per_key",
    "last_per_key",
    "resolve",
    "split_row_kinds",
]

#: The column of :attr:`Resolution.rows` that holds the index (into ``stored``) of the
#: stored row a written row replaces; null for a new key.
STORED_INDEX = "__stored"
_ORDER = "__order"
_RETRACT = "__retract"


@dataclass
class Resolution:
    """What merging incoming rows into stored rows gives: ``rows`` to write (the
    columns of ``stored`` and ``incoming``, plus :data:`STORED_INDEX`), and
    ``replaced``, the indices of the stored rows to delete (those ``rows`` supersede,
    and those of keys the merge deletes)."""

    rows: pa.Table
    replaced: pa.Array


def split_row_kinds(engine: MergeEngine, incoming: pa.Table) -> tuple[pa.Table, pa.Array]:
    """``incoming`` without its row-kind column, and per row whether it retracts
    (``-U``/``-D``). Rows without a row-kind column are all inserts. Raises
    :class:`MergeEngineError` for a value that is not a row kind."""
    name = engine.rowkind_field
    if name is None or name not in incoming.column_names:
        return incoming, pa.array([False] * incoming.num_rows, pa.bool_())
    kinds = incoming.column(name)
    if not pa.types.is_string(kinds.type) and not pa.types.is_large_string(kinds.type):
        raise MergeEngineError(
            f"the row-kind column {name!r} holds {kinds.type}; it takes the strings "
            f"{', '.join(ROW_KINDS)}"
        )
    known = pc.is_in(kinds, value_set=pa.array(ROW_KINDS))
    bad = pc.invert(pc.fill_null(known, False))
    if pc.any(bad).as_py():
        shown = sorted({str(v) for v in kinds.filter(bad).to_pylist()})[:5]
        raise MergeEngineError(
            f"the row-kind column {name!r} holds {', '.join(shown)}; each row's kind is one "
            f"of {', '.join(ROW_KINDS)} (insert, update before, update after, delete)"
        )
    retract = pc.is_in(kinds, value_set=pa.array(["-U", "-D"]))
    return incoming.drop_columns([name]), retract.combine_chunks()


def _check_retractions(engine: MergeEngine, retract: pa.Array) -> None:
    if engine.ignore_delete or not pc.any(retract).as_py():
        return
    if engine.kind in ("partial-update", "first-row"):
        raise MergeEngineError(
            f"merge-engine={engine.kind} takes no -U/-D rows (as in Paimon); set the table "
            "property ignore-delete=true to drop them, or send only +I/+U rows"
        )
    if engine.kind == "aggregation":
        bad = sorted(
            c
            for c, a in engine.aggregates.items()
            if a.function not in RETRACTABLE_FUNCTIONS and not a.ignore_retract
        )
        if bad:
            raise MergeEngineError(
                f"-U/-D rows retract every column, and the aggregate functions of {bad} take "
                f"no retraction (only {', '.join(sorted(RETRACTABLE_FUNCTIONS))} do); set "
                "ignore-delete=true, or fields.<col>.ignore-retract=true for those columns"
            )


def _without_retractions(
    engine: MergeEngine, incoming: pa.Table, retract: pa.Array
) -> tuple[pa.Table, pa.Array]:
    _check_retractions(engine, retract)
    if engine.ignore_delete and pc.any(retract).as_py():
        keep = pc.invert(retract)
        return incoming.filter(keep), retract.filter(keep)
    return incoming, retract


def last_per_key(incoming: pa.Table, on: Sequence[str]) -> pa.Table:
    """The last row of each key, in input order (deduplicate without a sequence); the
    table itself when no key repeats."""
    POLARS.require("a merge engine's fold of rows by key")
    keys = pl.from_arrow(incoming.select(list(on)))
    assert isinstance(keys, pl.DataFrame)
    if not keys.is_duplicated().any():
        return incoming
    last = (
        keys.with_row_index(_ORDER)
        .group_by(list(on), maintain_order=True)
        .agg(pl.col(_ORDER).last())
        .sort(_ORDER)
    )
    return incoming.take(pa.array(last[_ORDER].to_numpy()))


def first_per_key(engine: MergeEngine, incoming: pa.Table, on: Sequence[str]) -> pa.Table:
    """The rows first-row inserts for new keys: the first row of each key in input order
    (after the row kinds are checked: retractions are dropped with ``ignore-delete`` and
    refused without it)."""
    rows, _ = _without_retractions(engine, *split_row_kinds(engine, incoming))
    POLARS.require("a merge engine's fold of rows by key")
    keys = pl.from_arrow(rows.select(list(on)))
    assert isinstance(keys, pl.DataFrame)
    if not keys.is_duplicated().any():
        return rows
    first = (
        keys.with_row_index(_ORDER)
        .group_by(list(on), maintain_order=True)
        .agg(pl.col(_ORDER).first())
        .sort(_ORDER)
    )
    return rows.take(pa.array(first[_ORDER].to_numpy()))


def resolve(
    engine: MergeEngine, on: Sequence[str], stored: pa.Table, incoming: pa.Table
) -> Resolution:
    """Merge ``incoming`` rows (in arrival order, with the row-kind column if the engine
    has one) into the ``stored`` live rows of their keys.

    The rows of a key are folded in the order of the sequence fields (nulls lowest),
    then arrival: stored rows first, then the batch in input order. ``deduplicate``
    keeps the last row (a last ``-U``/``-D`` deletes the key); ``first-row`` keeps a
    stored row, else the first incoming one; ``partial-update`` takes each column's
    last non-null value; ``aggregation`` applies each column's function. A merged row's
    sequence columns are those of its last row, the highest sequence. Keys with no
    incoming row are left alone. ``stored`` needs the key and sequence columns
    (deduplicate, first-row) or every column (partial-update, aggregation)."""
    rows, retract = split_row_kinds(engine, incoming)
    rows, retract = _without_retractions(engine, rows, retract)
    n_stored = stored.num_rows
    POLARS.require("a merge engine's fold of rows by key")
    inc = pl.DataFrame(rows).with_columns(
        pl.Series(_RETRACT, retract, dtype=pl.Boolean),
        pl.int_range(0, pl.len(), dtype=pl.Int64).alias(_ORDER),
        pl.lit(None, dtype=pl.Int64).alias(STORED_INDEX),
    )
    st = pl.DataFrame(stored).with_columns(
        pl.lit(False).alias(_RETRACT),
        (pl.int_range(0, pl.len(), dtype=pl.Int64) - n_stored).alias(_ORDER),
        pl.int_range(0, pl.len(), dtype=pl.Int64).alias(STORED_INDEX),
    )
    # columns the incoming rows lack are null there: no value to merge
    both = pl.concat([st, inc], how="diagonal_relaxed")
    if engine.sequence_fields:
        seq = list(engine.sequence_fields)
        both = both.sort(
            [*seq, _ORDER],
            descending=[engine.descending] * len(seq) + [False],
            nulls_last=False,
            maintain_order=True,
        )
    else:
        both = both.sort(_ORDER)
    keys = list(on)
    touched = pl.col(STORED_INDEX).is_null().any().alias("__touched")
    stored_of = pl.col(STORED_INDEX).drop_nulls()
    if engine.kind in ("deduplicate", "first-row"):
        pick = pl.all().last() if engine.kind == "deduplicate" else pl.all().first()
        if engine.kind == "first-row":
            # a stored row always stays; else the first incoming row wins
            both = both.sort([STORED_INDEX, _ORDER], nulls_last=True, maintain_order=True)
        won = both.group_by(keys, maintain_order=True).agg(
            pick, stored_of.alias("__replaced"), touched
        )
        won = won.filter(pl.col("__touched") & pl.col(STORED_INDEX).is_null())
        out = won.filter(~pl.col(_RETRACT)).with_columns(
            pl.col("__replaced").list.first().alias(STORED_INDEX)
        )
        replaced = won["__replaced"].explode().drop_nulls()
        return Resolution(_to_arrow(out, rows.column_names, stored, rows), _indices(replaced))
    groups = both.group_by(keys, maintain_order=True)
    value_cols = [c for c in stored.column_names if c not in keys]
    retracts = bool(pc.any(retract).as_py())
    seq_cols = set(engine.sequence_fields)
    aggs: list[pl.Expr] = [touched, stored_of.alias("__replaced")]
    python_folds: list[str] = []
    for c in value_cols:
        if c in seq_cols:
            aggs.append(pl.col(c).last())
        elif engine.kind == "partial-update":
            aggs.append(pl.col(c).drop_nulls().last())
        else:
            agg = engine.aggregates[c]
            if agg.function == "product" and retracts and not agg.ignore_retract:
                python_folds.append(c)
                aggs.append(pl.col(c))
                continue
            aggs.append(_aggregate(c, agg.function, agg.delimiter, agg.ignore_retract))
    if python_folds:
        aggs.append(pl.col(_RETRACT).alias("__retracts"))
    merged = groups.agg(aggs).filter(pl.col("__touched"))
    for c in python_folds:
        merged = merged.with_columns(
            pl.Series(c, _fold_products(merged[c].to_list(), merged["__retracts"].to_list()))
        )
    replaced = merged["__replaced"].explode().drop_nulls()
    out = merged.with_columns(pl.col("__replaced").list.first().alias(STORED_INDEX))
    columns = [c for c in stored.column_names if c in out.columns]
    return Resolution(_to_arrow(out, columns, stored, rows), _indices(replaced))


def _aggregate(c: str, function: str, delimiter: str, ignore_retract: bool) -> pl.Expr:
    """Column ``c`` of a key's rows (in fold order) merged by ``function``; a row
    retracts where ``__retract`` holds."""
    value = pl.col(c)
    retract = pl.col(_RETRACT)
    # functions without retraction see only the other rows (a retraction reaches them
    # only when their column ignores it; otherwise it was refused up front)
    adds = value.filter(~retract)
    if function == "sum":
        signed = pl.when(retract).then(-value).otherwise(value)
        source = value.filter(~retract) if ignore_retract else signed
        return pl.when(source.count() > 0).then(source.sum()).otherwise(None).alias(c)
    if function == "count":
        # the stored row's value is the count so far; each incoming row with a value
        # adds one, or takes one away when it retracts
        stored_value = value.filter(pl.col(STORED_INDEX).is_not_null()).sum()
        incoming = pl.col(STORED_INDEX).is_null() & value.is_not_null()
        step = pl.when(retract).then(0 if ignore_retract else -1).otherwise(1)
        return (stored_value + step.filter(incoming).sum()).cast(pl.Int64).alias(c)
    if function == "product":  # without retractions (see resolve)
        kept = adds.drop_nulls()
        return pl.when(kept.count() > 0).then(kept.product()).otherwise(None).alias(c)
    if function in ("min", "max", "bool_and", "bool_or"):
        base = {"min": adds.min(), "max": adds.max(), "bool_and": adds.all(), "bool_or": adds.any()}
        return pl.when(adds.count() > 0).then(base[function]).otherwise(None).alias(c)
    if function == "first_value":
        return adds.first().alias(c)
    if function == "first_non_null_value":
        return adds.drop_nulls().first().alias(c)
    if function == "listagg":
        kept = adds.drop_nulls()
        return pl.when(kept.count() > 0).then(kept.str.join(delimiter)).otherwise(None).alias(c)
    if function == "last_value":
        # a retraction sets the column to null; ignored retractions leave it
        if ignore_retract:
            return value.filter(~retract).last().alias(c)
        return pl.when(retract.last()).then(None).otherwise(value.last()).alias(c)
    # last_non_null_value: the last row with a value decides; a retraction clears it
    if ignore_retract:
        return value.filter(~retract).drop_nulls().last().alias(c)
    with_value = value.is_not_null()
    decides = retract.filter(with_value).last()
    return pl.when(decides).then(None).otherwise(value.drop_nulls().last()).alias(c)


def _fold_products(values: list[list[Any]], retracts: list[list[bool]]) -> list[Any]:
    """``product`` with retractions, folded in order: a retraction divides (integer
    division truncates toward zero, as in Paimon)."""
    out: list[Any] = []
    for vs, rs in zip(values, retracts, strict=True):
        acc: Any = None
        for v, r in zip(vs, rs, strict=True):
            if v is None:
                continue
            if acc is None:
                acc = v
            elif not r:
                acc = acc * v
            elif v == 0:
                raise MergeEngineError(
                    "a -U/-D row retracts 0 from a product column; a product cannot be "
                    "divided by zero. Set fields.<col>.ignore-retract=true or drop the row"
                )
            elif isinstance(acc, int) and isinstance(v, int):
                q = abs(acc) // abs(v)
                acc = q if (acc >= 0) == (v >= 0) else -q
            elif isinstance(acc, Decimal):
                acc = acc / v
            else:
                acc = acc / v
        out.append(acc)
    return out


def _indices(values: pl.Series) -> pa.Array:
    return pa.array(values.cast(pl.Int64).to_numpy(), pa.int64())


def _to_arrow(
    frame: pl.DataFrame, columns: Sequence[str], stored: pa.Table, incoming: pa.Table
) -> pa.Table:
    """The merged rows as Arrow, each column of the stored rows' type (polars widens
    some, e.g. sums), plus :data:`STORED_INDEX`."""
    out = frame.select([*columns, STORED_INDEX]).to_arrow()
    arrays = []
    fields = []
    for name in columns:
        src = stored if name in stored.column_names else incoming
        t = src.schema.field(name).type
        col = out.column(name)
        arrays.append(col if col.type == t else pc.cast(col, t))
        fields.append(pa.field(name, t))
    arrays.append(pc.cast(out.column(STORED_INDEX), pa.int64()))
    fields.append(pa.field(STORED_INDEX, pa.int64()))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
