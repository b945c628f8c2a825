"""Row-level changes executed by Spark: the Spark engine's copy-on-write rewrites,
merge-on-read marks, UPDATE, and the join of a planned MERGE.

Spark reads only the planned candidate files, with each row's file and position
(``_metadata.file_path`` / ``row_index``, deletes applied), evaluates the filter or
joins the source on the keys, and then, grouped by data file on the executors, merges
the new positions with the file's existing deletes and writes a deletion vector (v3, a
Puffin file) or a file-scoped position delete file (v2), exactly as the pyarrow engine
does (:mod:`neve.arrow.positions`). New and updated rows are written natively by Spark
(:mod:`neve.spark.job`). Copy-on-write tables get their touched files rewritten
instead. Nothing is committed here: the table layer stages what these return, and a
failure here removes what was written."""

from __future__ import annotations

import pickle
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyroaring import BitMap64
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from neve.actions.base import TableState
from neve.arrow.deletes import write_deletion_vector_puffin, write_position_delete_file
from neve.arrow.reader import DeleteCache, deleted_positions
from neve.engine.changes import MergeOutcome, RowChanges, UpdateOutcome
from neve.errors import ValidationError
from neve.expressions import ALWAYS_FALSE, BooleanExpression, and_
from neve.expressions.binding import bind
from neve.expressions.expressions import greater_than_or_equal, is_in, less_than_or_equal
from neve.expressions.visitors import references
from neve.io.locations import LocationProvider, data_location
from neve.planning.delete import DeleteFiles, file_scoped_deletes, rewrite_schema
from neve.planning.merge import MergePlan
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spark.expression import to_spark_column, to_spark_literal
from neve.spark.job import cleanup_on_failure, write_data
from neve.spark.merge_engine import (
    EngineRows,
    check_row_kinds,
    keep_one_per_key,
    resolve_rows,
    with_arrival,
)
from neve.spark.paths import spark_file_uri
from neve.spark.reader import ROW_FILE, ROW_POS, read_tasks
from neve.spark.schema import to_spark_type
from neve.spec.manifest import DataFile, DataFileContent
from neve.spec.schema import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, Schema
from neve.spec.table_metadata import TableMetadata

__all__ = [
    "Marked",
    "execute_merge",
    "filter_schema",
    "key_filter",
    "mark_matching",
    "mark_positions",
    "read_rows",
    "rewrite_without",
    "update_rows",
]

#: Up to this many distinct source keys, candidate files are pruned by the key list.
_IN_LIST_LIMIT = 1000


def read_rows(
    spark: SparkSession,
    table: TableState,
    tasks: Sequence[FileScanTask],
    schema: Schema,
    *,
    row_positions: bool = False,
) -> DataFrame:
    """The live rows of planned whole-file ``tasks`` with the columns of ``schema``
    (the table's current schema, plus lineage columns where asked for)."""
    scan = ScanPlan(table.metadata, table.io)
    return read_tasks(
        spark,
        scan,
        tasks,
        apply_residual=False,
        projected_schema=schema,
        row_positions=row_positions,
    )


class Marked:
    """The delete files one Spark job wrote for positions, with the planned tasks of the
    data files they mark."""

    def __init__(self, deletes: DeleteFiles, tasks: list[FileScanTask]) -> None:
        self.deletes = deletes
        self.tasks = tasks


def mark_positions(
    spark: SparkSession,
    view: TableState,
    positions: DataFrame,
    tasks: Sequence[FileScanTask],
) -> Marked:
    """Write the delete files for ``positions`` (columns :data:`ROW_FILE`,
    :data:`ROW_POS` of rows of ``tasks``' files) on the executors, one per data file,
    each merging that file's existing deletes; returns them with the tasks of the files
    they mark. A failure removes the job's directory."""
    md = view.metadata
    io = view.io
    v3 = md.format_version >= 3
    directory = f"{data_location(md.location, md.properties)}/{uuid.uuid4()}"
    props = {**md.properties, "write.data.path": directory}
    location = md.location
    by_uri = {spark_file_uri(t.file.file_path): t for t in tasks}
    targets = {uri: (t.file, tuple(t.delete_files)) for uri, t in by_uri.items()}

    def build_one(uri: str, new: BitMap64) -> bytes:
        # runs on an executor, with the pyarrow engine's delete writers
        f, deletes = targets[uri]
        own = [
            d
            for d in deletes
            if d.referenced_data_file == f.file_path
            and d.content is DataFileContent.POSITION_DELETES
        ]
        old = deleted_positions(io, f, deletes if v3 else own, DeleteCache())
        merged = new | old if old is not None else new
        paths = LocationProvider(location, props)
        if v3:
            path = paths.new_file_path(suffix="-deletes.puffin")
            out = write_deletion_vector_puffin(
                io, path, {f.file_path: merged}, data_files={f.file_path: f}
            )
        else:
            path = paths.new_file_path(suffix="-deletes.parquet")
            out = [
                write_position_delete_file(
                    io,
                    path,
                    {f.file_path: merged},
                    partition=f.partition,
                    spec_id=f.spec_id,
                    properties=props,
                )
            ]
        return pickle.dumps(out)

    def build(uris: pa.Array, lists: pa.Array) -> pa.Array:
        out = []
        for i in range(len(uris)):
            values = lists[i].values.to_numpy(zero_copy_only=False)
            out.append(build_one(uris[i].as_py(), BitMap64(values.tolist())))
        return pa.array(out, pa.binary())

    # one row per data file with its positions; Arrow UDFs need no pandas on workers
    writer = F.arrow_udf(build, T.BinaryType()).asNondeterministic()  # type: ignore[attr-defined]
    per_file = positions.groupBy(ROW_FILE).agg(F.collect_list(ROW_POS).alias("__positions"))
    with cleanup_on_failure(io, [directory]):
        found = per_file.select(
            F.col(ROW_FILE).alias("uri"),
            writer(F.col(ROW_FILE), F.col("__positions")).alias("payload"),
        ).collect()
    added: list[DataFile] = []
    replaced: list[DataFile] = []
    touched: list[FileScanTask] = []
    for row in found:
        added += pickle.loads(row.payload)
        task = by_uri[row.uri]
        touched.append(task)
        replaced += file_scoped_deletes(task)
    return Marked(DeleteFiles(tuple(added), tuple(replaced)), touched)


def filter_schema(md: TableMetadata, expr: BooleanExpression, case_sensitive: bool) -> Schema:
    """The top-level columns of the table that ``expr`` reads."""
    schema = md.schema()
    ids = {r.field_id for r in references(bind(schema, expr, case_sensitive))}
    return Schema(*[f for f in schema.fields if _contains(f, ids)])


def _contains(f: Any, ids: set[int]) -> bool:
    if f.field_id in ids:
        return True
    return any(_contains(c, ids) for c in getattr(f.field_type, "fields", ()))


def mark_matching(
    spark: SparkSession,
    view: TableState,
    tasks: Sequence[FileScanTask],
    expr: BooleanExpression,
    case_sensitive: bool,
) -> DeleteFiles:
    """Delete files marking the rows of ``tasks`` that ``expr`` matches, found by
    Spark reading only the filter's columns and written on the executors."""
    md = view.metadata
    rows = read_rows(
        spark, view, tasks, filter_schema(md, expr, case_sensitive), row_positions=True
    )
    matching = rows.filter(to_spark_column(expr, md.schema(), case_sensitive))
    return mark_positions(spark, view, matching, tasks).deletes


def rewrite_without(
    spark: SparkSession,
    view: TableState,
    tasks: Sequence[FileScanTask],
    expr: BooleanExpression,
    case_sensitive: bool,
) -> list[DataFile]:
    """New data files with the rows of ``tasks`` that ``expr`` does not match: each
    file read once, whole; in v3 the copied rows keep their ``_row_id`` and
    ``_last_updated_sequence_number``."""
    md = view.metadata
    rows_schema = rewrite_schema(md)
    rows = read_rows(spark, view, tasks, rows_schema)
    matches = to_spark_column(expr, md.schema(), case_sensitive)
    return write_data(rows.filter(~matches), view, schema=rows_schema).files


# -- UPDATE -----------------------------------------------------------------------------


def _value(v: str | Column) -> Column:
    return v if isinstance(v, Column) else F.expr(v)


def _set_column(name: str, values: Mapping[str, str | Column], match: Column | None) -> Column:
    """The column ``name`` of an updated row: its new value where the row matches,
    lineage for the new sequence number (``_last_updated_sequence_number`` null)."""
    if name == LAST_UPDATED_SEQUENCE_NUMBER.name:
        new: Column = F.lit(None).cast("long")
    elif name in values:
        new = _value(values[name])
    else:
        return F.col(name)
    if match is not None:
        new = F.when(match, new).otherwise(F.col(name))
    return new.alias(name)


def update_rows(
    spark: SparkSession,
    view: TableState,
    tasks: Sequence[FileScanTask],
    expr: BooleanExpression,
    values: Mapping[str, Any],
    case_sensitive: bool,
    merge_on_read: bool,
) -> UpdateOutcome:
    """Set columns to Spark SQL expressions (or Columns) in the rows of ``tasks`` that
    ``expr`` matches: merge-on-read writes the updated rows and marks the old ones;
    copy-on-write rewrites the tasks' files whole."""
    md = view.metadata
    rows_schema = rewrite_schema(md)
    rows = read_rows(spark, view, tasks, rows_schema, row_positions=True)
    match = to_spark_column(expr, md.schema(), case_sensitive)
    if merge_on_read:
        rows = rows.filter(match).persist()
        new = rows.select(*[_set_column(f.name, values, None) for f in rows_schema.fields])
        count = rows.count()
    else:
        new = rows.select(*[_set_column(f.name, values, match) for f in rows_schema.fields])
        count = rows.filter(match).count()
    if not count:
        return UpdateOutcome(RowChanges(), 0)
    with cleanup_on_failure(view.io, []) as written:
        result = write_data(new, view, schema=rows_schema)
        written.add(result)
        if not merge_on_read:
            return UpdateOutcome(RowChanges(tuple(result.files), rewritten=tuple(tasks)), count)
        marked = mark_positions(spark, view, rows, tasks)
        rows.unpersist()
    changes = RowChanges(tuple(result.files), marked.deletes, tuple(marked.tasks))
    return UpdateOutcome(changes, count)


# -- MERGE ------------------------------------------------------------------------------


def key_filter(source: DataFrame, keys: Sequence[str]) -> BooleanExpression:
    """A filter every key of ``source`` satisfies. One pass: bounds and an estimate of
    the distinct count (no shuffle); the exact values are collected only when the
    estimate says the list is short."""
    aggs = []
    for k in keys:
        aggs += [F.approx_count_distinct(k, 0.05), F.min(k), F.max(k)]
    stats = source.agg(*aggs).collect()[0]
    parts: list[BooleanExpression] = []
    for i, k in enumerate(keys):
        estimate, low, high = stats[3 * i], stats[3 * i + 1], stats[3 * i + 2]
        if low is None:  # no row, or only null keys: nothing can match
            return ALWAYS_FALSE
        values = None
        if estimate <= 2 * _IN_LIST_LIMIT:
            col = F.col(f"`{k}`")
            found = source.select(col).where(col.isNotNull()).distinct()
            values = [r[0] for r in found.limit(_IN_LIST_LIMIT + 1).collect()]
        if values is not None and len(values) <= _IN_LIST_LIMIT:
            parts.append(is_in(k, values))
        else:
            parts += [greater_than_or_equal(k, low), less_than_or_equal(k, high)]
    return and_(*parts) if len(parts) > 1 else parts[0]


def _target(spark: SparkSession, view: TableState, source: DataFrame, plan: MergePlan) -> DataFrame:
    """The plan's target rows, with their file and position; unless the merge acts on
    target rows no source row matches, only those whose key is in the source."""
    md = view.metadata
    target = read_rows(spark, view, plan.tasks, plan.target_schema, row_positions=True)
    if plan.by_source:
        return target
    target = target.filter(to_spark_column(plan.key_filter, md.schema()))
    # Only target rows whose key is in the source can match: a semi join against the
    # source's keys (broadcast, so the large side is streamed, never shuffled) leaves
    # the outer join after it two small sides.
    keys = plan.on
    probe = source.select(*[F.col(f"`{k}`") for k in keys]).where(
        " AND ".join(f"`{k}` IS NOT NULL" for k in keys)
    )
    return target.join(F.broadcast(probe), list(keys), "left_semi")


def execute_merge(
    spark: SparkSession, view: TableState, source: DataFrame, plan: MergePlan
) -> MergeOutcome:
    """Join ``source`` with the plan's target rows on the executors, apply its clauses
    (or its merge engine) and write the result; nothing is committed."""
    started = time.perf_counter()
    md = view.metadata
    one_per_key = ""  # the source rows the join keeps per key: "last", "first" or all
    if plan.source_rows == "last":
        source, one_per_key = with_arrival(source), "last"
    elif plan.source_rows == "first" and plan.engine is not None:
        source, one_per_key = with_arrival(check_row_kinds(plan.engine, source)), "first"
    target = _target(spark, view, source, plan)
    if plan.source_rows == "resolve" and plan.engine is not None:
        rows = resolve_rows(
            plan.engine,
            source,
            target,
            plan.on,
            md.schema(),
            lineage=md.format_version >= 3,
            inserts=plan.inserts,
        )
    else:
        rows = _clause_rows(source, target, plan, md, one_per_key)
    decided = time.perf_counter()
    changes = _write_changes(spark, view, rows, plan)
    written = time.perf_counter()
    return MergeOutcome(
        changes,
        rows_inserted=rows.inserted,
        rows_updated=rows.updated,
        rows_deleted=rows.deleted,
        seconds={"join": decided - started, "write": written - decided},
        executed_by="spark",
    )


def _joined(source: DataFrame, target: DataFrame, plan: MergePlan, one_per_key: str) -> DataFrame:
    """Source and target joined on the keys, each row with the index of its clause
    (``__clause``), computed once (checkpointed)."""
    s = source.withColumn("__s", F.lit(True)).alias("source")
    t = target.alias("target")
    on_keys = [F.col(f"source.`{k}`") == F.col(f"target.`{k}`") for k in plan.on]
    cond = on_keys[0]
    for extra in on_keys[1:]:
        cond = cond & extra
    joined = s.join(t, cond, "full" if plan.by_source else "left")
    if one_per_key:
        # deduplicate / first-row: after the join, so the window runs once, in the
        # checkpoint below, over the joined rows only
        joined = keep_one_per_key(joined, plan.on, last=one_per_key == "last")
    t_pos = F.col(f"target.{ROW_POS}")
    groups = {
        "matched": F.col("source.__s").isNotNull() & t_pos.isNotNull(),
        "not_matched": t_pos.isNull(),
        "not_matched_by_source": F.col("source.__s").isNull(),
    }
    chosen: Any = None
    for i, c in enumerate(plan.clauses):
        when = groups[c.group]
        if c.condition is not None:
            when = when & F.coalesce(F.expr(c.condition), F.lit(False))
        chosen = F.when(when, F.lit(i)) if chosen is None else chosen.when(when, F.lit(i))
    # eager: the join runs once, and the plans of the checks and writes after it stay small
    joined = joined.withColumn("__clause", chosen).localCheckpoint()
    if plan.refuses_duplicates:
        twice = (
            joined.filter(groups["matched"])
            .groupBy(F.col(f"target.{ROW_FILE}"), t_pos)
            .count()
            .filter(F.col("count") > 1)
            .limit(1)
            .count()
        )
        if twice:
            raise ValidationError(
                f"a target row matches more than one source row on {list(plan.on)}; a "
                "MERGE changes each target row at most once. Deduplicate the source by "
                "its key"
            )
    return joined


def _clause_rows(
    source: DataFrame, target: DataFrame, plan: MergePlan, md: TableMetadata, one_per_key: str
) -> EngineRows:
    """What the clauses decide: the rows each writes and the target rows each removes."""
    schema = md.schema()
    names = [f.name for f in schema.fields]
    lineage = md.format_version >= 3
    joined = _joined(source, target, plan, one_per_key)
    acted = joined.filter(F.col("__clause").isNotNull())
    counts = {r["__clause"]: r["count"] for r in acted.groupBy("__clause").count().collect()}
    inserted = updated = deleted = 0
    parts: list[DataFrame] = []
    for i, c in enumerate(plan.clauses):
        n = counts.get(i, 0)
        if not n:
            continue
        rows = acted.filter(F.col("__clause") == i)
        if c.kind in ("delete", "delete_by_source"):
            deleted += n
            continue
        if c.kind == "insert_all":
            inserted += n
            cols = [_source_column(source, schema, name) for name in names]
            row_id: Column = F.lit(None).cast("long")
        else:
            updated += n
            row_id = F.col(f"target.{ROW_ID.name}") if lineage else F.lit(None).cast("long")
            if c.kind == "update_all":
                cols = [_source_column(source, schema, name) for name in names]
            else:
                given = c.set or {}
                cols = [
                    (F.expr(given[n]) if n in given else F.col(f"target.`{n}`")).alias(n)
                    for n in names
                ]
        if lineage:
            cols += [
                row_id.alias(ROW_ID.name),
                F.lit(None).cast("long").alias(LAST_UPDATED_SEQUENCE_NUMBER.name),
            ]
        parts.append(rows.select(*cols))
    removing = [i for i, c in enumerate(plan.clauses) if c.kind != "insert_all"]
    gone = acted.filter(F.col("__clause").isin(removing)).select(
        F.col(f"target.{ROW_FILE}").alias(ROW_FILE), F.col(f"target.{ROW_POS}").alias(ROW_POS)
    )
    return EngineRows(parts, gone, inserted, updated, deleted, joined)


def _union(parts: Sequence[DataFrame]) -> DataFrame:
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def _write_changes(
    spark: SparkSession, view: TableState, rows: EngineRows, plan: MergePlan
) -> RowChanges:
    """Write what a MERGE decided: the new rows as data files, the target rows they
    replace or delete marked (merge-on-read) or their files rewritten (copy-on-write).
    A failure removes everything written."""
    rows_schema = rewrite_schema(view.metadata)
    parts = list(rows.new)
    data_files: list[DataFile] = []
    changes = RowChanges()
    with cleanup_on_failure(view.io, []) as written:
        if plan.merge_on_read:
            if parts:
                result = write_data(_union(parts), view, schema=rows_schema)
                written.add(result)
                data_files = result.files
            if rows.updated or rows.deleted:
                marked = mark_positions(spark, view, rows.gone, plan.tasks)
                changes = RowChanges(deletes=marked.deletes, deleted_from=tuple(marked.tasks))
        else:
            touched_uris = {r[0] for r in rows.gone.select(ROW_FILE).distinct().collect()}
            touched = [t for t in plan.tasks if spark_file_uri(t.file.file_path) in touched_uris]
            if touched:
                whole = read_rows(spark, view, touched, rows_schema, row_positions=True)
                kept = whole.join(rows.gone, [ROW_FILE, ROW_POS], "left_anti")
                parts.append(kept.drop(ROW_FILE, ROW_POS))
            if parts:
                result = write_data(_union(parts), view, schema=rows_schema)
                written.add(result)
                data_files = result.files
            changes = RowChanges(rewritten=tuple(touched))
    rows.result.unpersist()  # the checkpointed blocks
    return RowChanges(tuple(data_files), changes.deletes, changes.deleted_from, changes.rewritten)


def _source_column(source: DataFrame, schema: Schema, name: str) -> Column:
    """A table column taken from the source; one the source lacks holds its write
    default, else null (spec "Default values")."""
    if name in source.columns:
        return F.col(f"source.`{name}`").alias(name)
    f = schema.find_field(name)
    if f.write_default is not None:
        return to_spark_literal(f.write_default, f.field_type).alias(name)
    if f.required:
        raise ValidationError(
            f"the merge source lacks required column {name!r}, which has no write default; "
            "add it, or use when_matched_update(set=...) for the columns it has"
        )
    return F.lit(None).cast(to_spark_type(f.field_type)).alias(name)
