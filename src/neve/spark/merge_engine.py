"""Merge engines on Spark (docs/MERGE-ENGINES.md): the same rules as the pyarrow
engine, with the same code deciding them.

Arrival order is the source DataFrame's row order (``monotonically_increasing_id``,
taken once). ``deduplicate`` without sequence or row kinds keeps the last row of each
key with a window and lets the MERGE join do the rest; ``first-row`` keeps the first row
of each key and only inserts. The other configurations bring the stored rows of the
source's keys and the incoming rows together by key on the executors, where
:func:`neve.arrow.merge_engine.resolve` merges each partition's keys as Arrow tables;
the driver checks the row kinds first, so a refused batch writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from neve.arrow.merge_engine import STORED_INDEX, resolve
from neve.errors import MergeEngineError
from neve.spark.expression import to_spark_literal
from neve.spark.reader import ROW_FILE, ROW_POS
from neve.spark.schema import to_spark_type
from neve.spec.merge_engine import RETRACTABLE_FUNCTIONS, ROW_KINDS, MergeEngine
from neve.spec.schema import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, Schema

__all__ = ["EngineRows", "check_row_kinds", "keep_one_per_key", "resolve_rows", "with_arrival"]

_ARRIVAL = "__arrival"
_SIDE = "__side"
_ACTION = "__action"
_UPDATED = "__updated"
_GROUP = "__group"


def _arrived(source: DataFrame) -> DataFrame:
    return source.withColumn(_ARRIVAL, F.monotonically_increasing_id())


def check_row_kinds(engine: MergeEngine, source: DataFrame) -> DataFrame:
    """``source`` with its retractions dropped when ``ignore-delete`` says so; raises
    :class:`MergeEngineError` (before anything is written) for a value that is not a
    row kind, or a retraction the engine or a column's function does not take."""
    name = engine.rowkind_field
    if name is None or name not in source.columns:
        return source
    kind = F.col(f"`{name}`")
    field = source.schema[name].dataType
    if not isinstance(field, T.StringType):
        raise MergeEngineError(
            f"the row-kind column {name!r} holds {field.simpleString()}; it takes the "
            f"strings {', '.join(ROW_KINDS)}"
        )
    bad = [
        r[0]
        for r in source.where(kind.isNull() | ~kind.isin(*ROW_KINDS))
        .select(kind)
        .distinct()
        .limit(5)
        .collect()
    ]
    if bad:
        raise MergeEngineError(
            f"the row-kind column {name!r} holds {', '.join(map(str, bad))}; each row's "
            f"kind is one of {', '.join(ROW_KINDS)} (insert, update before, update after, "
            "delete)"
        )
    retract = kind.isin("-U", "-D")
    if engine.ignore_delete:
        return source.where(~retract)
    refused: list[str] = []
    if engine.kind in ("partial-update", "first-row"):
        refused = ["*"]
    elif engine.kind == "aggregation":
        refused = sorted(
            c
            for c, a in engine.aggregates.items()
            if a.function not in RETRACTABLE_FUNCTIONS and not a.ignore_retract
        )
    if refused and source.where(retract).limit(1).count():
        if refused == ["*"]:
            raise MergeEngineError(
                f"merge-engine={engine.kind} takes no -U/-D rows (as in Paimon); set the "
                "table property ignore-delete=true to drop them, or send only +I/+U rows"
            )
        raise MergeEngineError(
            f"-U/-D rows retract every column, and the aggregate functions of {refused} "
            f"take no retraction (only {', '.join(sorted(RETRACTABLE_FUNCTIONS))} do); set "
            "ignore-delete=true, or fields.<col>.ignore-retract=true for those columns"
        )
    return source


def with_arrival(source: DataFrame) -> DataFrame:
    """``source`` with its arrival order (the DataFrame's row order) as a column."""
    return _arrived(source)


def keep_one_per_key(joined: DataFrame, keys: Sequence[str], *, last: bool) -> DataFrame:
    """Of a MERGE's joined rows (aliases ``source`` and ``target``; the source with
    :func:`with_arrival`), only the last (deduplicate) or first (first-row) source row
    of each key, in arrival order."""
    arrival = F.col(f"source.{_ARRIVAL}")
    w = Window.partitionBy(*[F.col(f"source.`{k}`") for k in keys]).orderBy(
        arrival.desc() if last else arrival.asc()
    )
    return joined.withColumn("__rank", F.row_number().over(w)).where(F.col("__rank") == 1)


@dataclass
class EngineRows:
    """What a MERGE decided: ``new`` rows to write (DataFrames of the table's columns,
    and in v3 the lineage columns, ``_row_id`` of the row they replace), ``gone`` target
    rows to delete (:data:`ROW_FILE`, :data:`ROW_POS`), the counts, and the
    checkpointed result to unpersist when done."""

    new: list[DataFrame]
    gone: DataFrame
    inserted: int
    updated: int
    deleted: int
    result: DataFrame


@dataclass(frozen=True)
class _KeyMerge:
    """What the executors need to merge a batch of keys (module docstring): the
    engine, the key columns (with the batch's group index), the stored and value
    columns, the row-kind column, whether new keys are inserted, and whether rows carry
    ``_row_id``."""

    engine: MergeEngine
    key_list: list[str]
    stored_cols: list[str]
    value_names: list[str]
    kind: str | None
    inserts: bool
    lineage: bool

    def __call__(self, lists: pa.Array) -> pa.Array:
        # runs on the executors: the pyarrow engine's resolve over a batch of keys
        if isinstance(lists, pa.ChunkedArray):
            lists = lists.combine_chunks()
        rows = pa.Table.from_struct_array(lists.flatten())
        rows = rows.append_column(_GROUP, pc.list_parent_indices(lists))
        side = rows.column(_SIDE)
        st = rows.filter(pc.equal(side, 0))
        inc = rows.filter(pc.equal(side, 1))
        inc = inc.take(pc.sort_indices(inc.column(_ARRIVAL)))
        wanted = (*self.value_names, self.kind, _GROUP)
        inc_cols = [c for c in inc.column_names if c in wanted]
        res = resolve(
            self.engine, self.key_list, st.select([*self.stored_cols, _GROUP]), inc.select(inc_cols)
        )
        types = {c: rows.schema.field(c).type for c in self.value_names}
        writes = self._writes(res.rows, st, types)
        gone = st.take(res.replaced)
        m = gone.num_rows
        gones = pa.table(
            {
                **{c: pa.nulls(m, types[c]) for c in self.value_names},
                ROW_ID.name: pa.nulls(m, pa.int64()),
                ROW_FILE: gone.column(ROW_FILE),
                ROW_POS: gone.column(ROW_POS),
                _ACTION: pa.array(["gone"] * m, pa.string()),
                _UPDATED: pa.nulls(m, pa.bool_()),
                _GROUP: gone.column(_GROUP),
            }
        )
        out = pa.concat_tables([writes, gones.cast(writes.schema)])
        return _as_spark_lists(out.take(pc.sort_indices(out.column(_GROUP))), len(lists))

    def _writes(self, new: pa.Table, stored: pa.Table, types: dict[str, pa.DataType]) -> pa.Table:
        """The merged rows to write: updated ones keep the ``_row_id`` of the stored row."""
        index = new.column(STORED_INDEX)
        if not self.inserts:
            new = new.filter(pc.is_valid(index))
            index = new.column(STORED_INDEX)
        n = new.num_rows
        row_ids = stored.column(ROW_ID.name).take(index) if self.lineage else None
        return pa.table(
            {
                **{
                    c: new.column(c) if c in new.column_names else pa.nulls(n, types[c])
                    for c in self.value_names
                },
                ROW_ID.name: row_ids if row_ids is not None else pa.nulls(n, pa.int64()),
                ROW_FILE: pa.nulls(n, pa.string()),
                ROW_POS: pa.nulls(n, pa.int64()),
                _ACTION: pa.array(["write"] * n, pa.string()),
                _UPDATED: pc.is_valid(index),
                _GROUP: new.column(_GROUP),
            }
        )


def _as_spark_lists(out: pa.Table, groups: int) -> pa.Array:
    """``out`` (sorted by group) as one list of structs per group, in Spark's Arrow
    form of ``array<struct>`` (nullable fields, the element named ``element``)."""
    group = out.column(_GROUP).to_numpy()
    counts = np.bincount(group, minlength=groups) if len(group) else np.zeros(groups)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    items = out.drop_columns([_GROUP]).to_struct_array().combine_chunks()
    fields = [pa.field(f.name, f.type) for f in items.type]
    element = pa.field("element", pa.struct(fields))
    return pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()), items.cast(element.type), type=pa.list_(element)
    )


def _both_sides(
    engine: MergeEngine, source: DataFrame, target: DataFrame, schema: Schema, lineage: bool
) -> DataFrame:
    """The stored rows (side 0) and the incoming rows in the table's columns (side 1,
    with their arrival order) in one DataFrame."""
    kind = engine.rowkind_field
    columns = []
    for f in schema.fields:
        t = to_spark_type(f.field_type)
        if f.name in source.columns:
            columns.append(F.col(f"`{f.name}`").cast(t).alias(f.name))
        elif engine.kind == "deduplicate" and f.write_default is not None:
            columns.append(to_spark_literal(f.write_default, f.field_type).alias(f.name))
        else:
            columns.append(F.lit(None).cast(t).alias(f.name))
    if kind is not None and kind in source.columns:
        columns.append(F.col(f"`{kind}`").alias(kind))
    incoming = (
        _arrived(source.select(*columns))
        .withColumn(_SIDE, F.lit(1))
        .withColumn(ROW_FILE, F.lit(None).cast("string"))
        .withColumn(ROW_POS, F.lit(None).cast("long"))
    )
    names = [f.name for f in schema.fields]
    stored_cols = [c for c in target.columns if c in names]
    rid = [ROW_ID.name] if lineage else []
    stored = target.select(*stored_cols, ROW_FILE, ROW_POS, *rid).withColumn(_SIDE, F.lit(0))
    return stored.unionByName(incoming, allowMissingColumns=True)


def resolve_rows(
    engine: MergeEngine,
    source: DataFrame,
    target: DataFrame,
    keys: Sequence[str],
    schema: Schema,
    *,
    lineage: bool,
    inserts: bool,
) -> EngineRows:
    """Merge ``source`` into the stored rows ``target`` (with :data:`ROW_FILE`,
    :data:`ROW_POS`, and ``_row_id`` when ``lineage``) by ``engine``, key by key on the
    executors. ``inserts``: whether new keys are inserted (an upsert) or left out."""
    source = check_row_kinds(engine, source)
    names = [f.name for f in schema.fields]
    kind = engine.rowkind_field
    both = _both_sides(engine, source, target, schema, lineage)
    value_names = [f.name for f in both.schema.fields if f.name in names]
    rid = [ROW_ID.name] if lineage else []
    carried = [*value_names, ROW_FILE, ROW_POS, *rid, _SIDE, _ARRIVAL]
    if kind is not None and kind in both.columns:
        carried.append(kind)
    # one row per key holding all its rows: Arrow UDFs need no pandas on the workers
    packed = both.groupBy(*[F.col(f"`{k}`") for k in keys]).agg(
        F.collect_list(F.struct(*[F.col(f"`{c}`") for c in carried])).alias("__rows")
    )
    # every field nullable: Spark checks the UDF's Arrow type against this one
    by_name = {f.name: f for f in both.schema.fields}
    out_type = T.ArrayType(
        T.StructType(
            [
                *[T.StructField(c, by_name[c].dataType) for c in value_names],
                T.StructField(ROW_ID.name, T.LongType()),
                T.StructField(ROW_FILE, T.StringType()),
                T.StructField(ROW_POS, T.LongType()),
                T.StructField(_ACTION, T.StringType()),
                T.StructField(_UPDATED, T.BooleanType()),
            ]
        )
    )
    stored_cols = [c for c in target.columns if c in names]
    merger = _KeyMerge(engine, [*keys, _GROUP], stored_cols, value_names, kind, inserts, lineage)

    def merge_keys(lists: pa.Array) -> pa.Array:
        # a function (Spark reads the UDF's kind off its type hints); runs on executors
        return merger(lists)

    merged = F.arrow_udf(merge_keys, out_type)  # type: ignore[attr-defined]
    try:
        result = (
            packed.select(F.explode(merged(F.col("__rows"))).alias("__r"))
            .select("__r.*")
            .localCheckpoint()
        )
        counts = {
            (r[_ACTION], r[_UPDATED]): r["count"]
            for r in result.groupBy(_ACTION, _UPDATED).count().collect()
        }
    except PySparkException as exc:
        if "MergeEngineError" in str(exc):  # raised by resolve on an executor
            message = str(exc).split("MergeEngineError:", 1)[-1].strip().splitlines()[0]
            raise MergeEngineError(message) from exc
        raise
    new = result.where(F.col(_ACTION) == "write").select(*names, *rid)
    if lineage:
        new = new.withColumn(LAST_UPDATED_SEQUENCE_NUMBER.name, F.lit(None).cast("long"))
    updated = counts.get(("write", True), 0)
    replaced = counts.get(("gone", None), 0)
    return EngineRows(
        new=[new] if updated + counts.get(("write", False), 0) else [],
        gone=result.where(F.col(_ACTION) == "gone").select(ROW_FILE, ROW_POS),
        inserted=counts.get(("write", False), 0),
        updated=updated,
        deleted=replaced - updated,
        result=result,
    )
