"""Merge-on-read on Spark: DELETE, UPDATE, MERGE and upsert with the heavy work on the
executors and one commit on the driver.

The driver plans the candidate data files (pruned by the filter, or by the source's
keys through partition transforms and column bounds). Spark reads only those files,
with each row's file and position (``_metadata.file_path`` / ``row_index``, deletes
applied), evaluates the filter or joins the source on the keys, and then, grouped by
data file on the executors, merges the new positions with the file's existing deletes
and writes a deletion vector (v3, a Puffin file) or a file-scoped position delete file
(v2), exactly as the pyarrow engine does (:mod:`neve.arrow.positions`). New and updated
rows are written natively by Spark (:mod:`neve.spark.job`). Copy-on-write tables get
their touched files rewritten instead. Everything written goes under one directory per
job, removed if anything fails before the commit.
"""

from __future__ import annotations

import pickle
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyroaring import BitMap64
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from neve.arrow.deletes import write_deletion_vector_puffin, write_position_delete_file
from neve.arrow.reader import DeleteCache, deleted_positions
from neve.arrow.rowlevel import RowChanges
from neve.arrow.write import rewrite_schema
from neve.errors import ValidationError
from neve.expressions import ALWAYS_FALSE, ALWAYS_TRUE, BooleanExpression, and_
from neve.expressions.binding import bind
from neve.expressions.expressions import greater_than_or_equal, is_in, less_than_or_equal
from neve.expressions.visitors import references
from neve.io.locations import LocationProvider, data_location
from neve.planning.delete import DeleteFiles, file_scoped_deletes, plan_delete, whole_file_tasks
from neve.planning.merge import Clause, engine_for_merge, needs_target_values
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spark.commands import spark_rewriter
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
from neve.spark.session import check_session
from neve.spec.manifest import DataFile, DataFileContent
from neve.spec.refs import MAIN_BRANCH
from neve.spec.schema import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, Schema
from neve.spec.table_metadata import TableMetadata
from neve.table.merge import MergeBuilder, MergeResult
from neve.table.table import Table
from neve.table.transaction import DeleteWriter, Transaction, TransactionTable

__all__ = ["delete", "mark_positions", "merge", "spark_delete_writer", "update", "upsert"]

#: Up to this many distinct source keys, candidate files are pruned by the key list.
_IN_LIST_LIMIT = 1000


def _view(table: Table | Transaction) -> TransactionTable:
    return table.table.with_metadata(table.metadata) if isinstance(table, Transaction) else table


@dataclass
class _Marked:
    deletes: DeleteFiles
    tasks: list[FileScanTask] = field(default_factory=list)


def mark_positions(
    spark: SparkSession,
    view: TransactionTable,
    positions: DataFrame,
    tasks: Sequence[FileScanTask],
    written: cleanup_on_failure,
) -> _Marked:
    """Write the delete files for ``positions`` (columns :data:`ROW_FILE`,
    :data:`ROW_POS` of rows of ``tasks``' files) on the executors, one per data file,
    each merging that file's existing deletes; returns them with the files they
    replace."""
    md = view.metadata
    io = view.io
    v3 = md.format_version >= 3
    directory = f"{data_location(md.location, md.properties)}/{uuid.uuid4()}"
    written.add(directory)
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
    found = per_file.select(
        F.col(ROW_FILE).alias("uri"), writer(F.col(ROW_FILE), F.col("__positions")).alias("payload")
    ).collect()
    added: list[DataFile] = []
    replaced: list[DataFile] = []
    touched: list[FileScanTask] = []
    for row in found:
        added += pickle.loads(row.payload)
        task = by_uri[row.uri]
        touched.append(task)
        replaced += file_scoped_deletes(task)
    return _Marked(DeleteFiles(tuple(added), tuple(replaced)), touched)


def _filter_schema(md: TableMetadata, expr: BooleanExpression, case_sensitive: bool) -> Schema:
    schema = md.schema()
    ids = {r.field_id for r in references(bind(schema, expr, case_sensitive))}
    return Schema(*[f for f in schema.fields if _contains(f, ids)])


def _contains(f: Any, ids: set[int]) -> bool:
    if f.field_id in ids:
        return True
    return any(_contains(c, ids) for c in getattr(f.field_type, "fields", ()))


def spark_delete_writer(
    spark: SparkSession, table: Table | Transaction, written: cleanup_on_failure
) -> DeleteWriter:
    """A delete writer (see :meth:`neve.table.transaction.Transaction.delete`) that
    finds the matching rows with Spark, reading only the filter's columns, and writes
    their delete files on the executors."""

    def write(
        tasks: Sequence[FileScanTask], expr: BooleanExpression, case_sensitive: bool
    ) -> DeleteFiles:
        view = _view(table)
        md = view.metadata
        scan = ScanPlan(md, view.io, case_sensitive=case_sensitive)
        rows = read_tasks(
            spark,
            scan,
            tasks,
            apply_residual=False,
            projected_schema=_filter_schema(md, expr, case_sensitive),
            row_positions=True,
        )
        matching = rows.filter(to_spark_column(expr, md.schema(), case_sensitive))
        return mark_positions(spark, view, matching, tasks, written).deletes

    return write


def delete(
    spark: SparkSession,
    table: Table,
    filter: str | BooleanExpression,
    *,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
    snapshot_properties: Mapping[str, str] | None = None,
) -> None:
    """Delete the rows matching ``filter`` as one snapshot: deletion vectors (v3) or
    position delete files (v2) written on the executors when ``write.delete.mode`` is
    merge-on-read, else a copy-on-write rewrite with Spark."""
    check_session(spark)
    with cleanup_on_failure(table.io, []) as written:
        txn = table.transaction()
        txn.delete(
            filter,
            branch=branch,
            case_sensitive=case_sensitive,
            snapshot_properties=snapshot_properties,
            rewriter=spark_rewriter(spark, txn, written),
            delete_writer=spark_delete_writer(spark, txn, written),
        )
        txn.commit()


def _value(v: str | Column) -> Column:
    return v if isinstance(v, Column) else F.expr(v)


def update(
    spark: SparkSession,
    table: Table,
    set: Mapping[str, str | Column],
    filter: str | BooleanExpression | None = None,
    *,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
    snapshot_properties: Mapping[str, str] | None = None,
) -> int:
    """Set columns to Spark SQL expressions (``set={"qty": "qty + 1"}``, or Columns)
    in the rows matching ``filter``, as one snapshot; returns the rows updated."""
    check_session(spark)
    if not isinstance(set, Mapping) or not set:
        raise ValidationError('update needs set={column: spark_sql, ...}, e.g. {"qty": "qty + 1"}')
    md = table.metadata
    schema = md.schema()
    unknown = [c for c in set if schema.find_field_or_none(c) is None]
    if unknown:
        raise ValidationError(f"update sets column {unknown[0]!r}, which the table does not have")
    from neve.expressions.parser import to_expression  # light; the parser's home

    expr = to_expression(filter)
    bind(schema, expr, case_sensitive)
    with cleanup_on_failure(table.io, []) as written:
        txn = table.transaction()
        mor = txn.merge_on_read("update")
        plan = plan_delete(md, table.io, expr, branch=branch, case_sensitive=case_sensitive)
        tasks = [*plan.remove_tasks, *plan.rewrite]
        rows_schema = rewrite_schema(md)
        scan = ScanPlan(md, table.io, case_sensitive=case_sensitive)
        rows = read_tasks(
            spark,
            scan,
            tasks,
            apply_residual=False,
            projected_schema=rows_schema,
            row_positions=True,
        )
        match = to_spark_column(expr, schema, case_sensitive)
        if mor:
            rows = rows.filter(match).persist()
            new = rows.select(*[_set_column(f.name, set, None) for f in rows_schema.fields])
        else:
            new = rows.select(*[_set_column(f.name, set, match) for f in rows_schema.fields])
        count = rows.filter(match).count() if not mor else rows.count()
        if not count:
            return 0
        result = write_data(new, table, schema=rows_schema)
        written.add(result)
        changes = RowChanges(data_files=result.files)
        if mor:
            marked = mark_positions(spark, table, rows, tasks, written)
            changes.deletes, changes.deleted_from = marked.deletes, marked.tasks
            rows.unpersist()
        else:
            changes.rewritten = list(tasks)
        txn.stage_row_changes(
            changes,
            expr,
            "update",
            mor,
            branch=branch,
            case_sensitive=case_sensitive,
            snapshot_properties=snapshot_properties,
        )
        txn.commit()
        return count


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


# -- MERGE ------------------------------------------------------------------------------


def merge(
    spark: SparkSession, source: DataFrame, table: Table, on: Sequence[str] | None = None
) -> MergeBuilder:
    """A MERGE of the DataFrame ``source`` into ``table`` on ``on`` (default: the
    primary key), joined on the executors; conditions and ``set`` values are Spark SQL
    over ``source.<column>`` and ``target.<column>``. ``execute()`` commits it."""
    check_session(spark)
    schema = table.metadata.schema()
    keys = list(on) if on else [schema.column_name(i) or "" for i in schema.identifier_field_ids]

    def run(
        clauses: Sequence[Clause],
        branch: str,
        case_sensitive: bool,
        snapshot_properties: Mapping[str, str] | None,
    ) -> MergeResult:
        return _merge(
            spark, source, table, keys, clauses, branch, case_sensitive, snapshot_properties
        )

    return MergeBuilder(run)


def upsert(
    spark: SparkSession,
    source: DataFrame,
    table: Table,
    on: Sequence[str] | None = None,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> MergeResult:
    """Update the rows whose key is in ``source`` with its rows, insert the others."""
    return (
        merge(spark, source, table, on)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(branch=branch, snapshot_properties=snapshot_properties)
    )


def _key_filter(source: DataFrame, keys: Sequence[str]) -> BooleanExpression:
    # One pass: bounds and an estimate of the distinct count (no shuffle); the exact
    # values are collected only when the estimate says the list is short.
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


def _merge(
    spark: SparkSession,
    source: DataFrame,
    table: Table,
    keys: Sequence[str],
    clauses: Sequence[Clause],
    branch: str,
    case_sensitive: bool,
    snapshot_properties: Mapping[str, str] | None,
) -> MergeResult:
    started = time.perf_counter()
    if not clauses:
        raise ValidationError(
            "this merge has no clause; add when_matched_update_all(), "
            "when_not_matched_insert_all() or another when_... clause"
        )
    md = table.metadata
    schema = md.schema()
    names = [f.name for f in schema.fields]
    if not keys:
        raise ValidationError(
            "merge needs key columns: pass on=[...] or create the table with a primary_key"
        )
    for k in keys:
        if k not in names:
            raise ValidationError(f"merge key {k!r} is not a top-level column of the table")
        if k not in source.columns:
            raise ValidationError(f"the merge source has no key column {k!r}")
    txn = table.transaction()
    mor = txn.merge_on_read("merge")
    engine = engine_for_merge(md, keys, clauses)
    resolving = False
    one_per_key = ""  # the source rows the join keeps per key: "last", "first" or all
    if engine is not None:  # an upsert on the primary key: the table's merge engine decides
        if engine.plain:
            source, one_per_key = with_arrival(source), "last"
        elif engine.kind == "first-row":
            source, one_per_key = with_arrival(check_row_kinds(engine, source)), "first"
            clauses = [c for c in clauses if c.kind == "insert_all"]
            if not clauses:  # existing keys keep their rows, and no new key is inserted
                return MergeResult(0, 0, 0, 0, 0, 0, 0, {"total": time.perf_counter() - started})
        else:
            resolving = True
    by_source = any(c.group == "not_matched_by_source" for c in clauses)
    key_filter = ALWAYS_TRUE if by_source else _key_filter(source, keys)
    scan = ScanPlan(
        md,
        table.io,
        filter=key_filter,
        ref=branch if branch in md.refs else MAIN_BRANCH,
        case_sensitive=case_sensitive,
    )
    tasks = whole_file_tasks(scan.plan_files()) if key_filter is not ALWAYS_FALSE else []
    head = scan.snapshot()
    total = int(head.summary.get("total-data-files", "0") or 0) if head is not None else 0
    planned = time.perf_counter()

    rows_schema = rewrite_schema(md)
    lineage = md.format_version >= 3
    if resolving and engine is not None and engine.kind == "deduplicate":
        target_schema = Schema(
            *[schema.find_field(k) for k in (*keys, *engine.sequence_fields)],
            *([ROW_ID] if lineage else []),
        )
    elif needs_target_values(clauses) or resolving:
        target_schema = rows_schema
    else:
        target_schema = Schema(
            *[schema.find_field(k) for k in keys], *([ROW_ID] if lineage else [])
        )
    target = read_tasks(
        spark,
        ScanPlan(md, table.io, case_sensitive=case_sensitive),
        tasks,
        apply_residual=False,
        projected_schema=target_schema,
        row_positions=True,
    )
    if not by_source:
        target = target.filter(to_spark_column(key_filter, schema, case_sensitive))
        # Only target rows whose key is in the source can match: a semi join against the
        # source's keys (broadcast, so the large side is streamed, never shuffled) leaves
        # the outer join below two small sides.
        probe = source.select(*[F.col(f"`{k}`") for k in keys]).where(
            " AND ".join(f"`{k}` IS NOT NULL" for k in keys)
        )
        target = target.join(F.broadcast(probe), list(keys), "left_semi")
    if resolving and engine is not None:
        return _write_changes(
            spark,
            table,
            txn,
            resolve_rows(
                engine,
                source,
                target,
                keys,
                schema,
                lineage=lineage,
                inserts=any(c.kind == "insert_all" for c in clauses),
            ),
            tasks,
            key_filter,
            mor,
            branch=branch,
            case_sensitive=case_sensitive,
            snapshot_properties=snapshot_properties,
            times=(started, planned),
            files=(len(tasks), max(total - len(tasks), 0)),
        )
    s = source.withColumn("__s", F.lit(True)).alias("source")
    t = target.alias("target")
    on_keys = [F.col(f"source.`{k}`") == F.col(f"target.`{k}`") for k in keys]
    cond = on_keys[0]
    for extra in on_keys[1:]:
        cond = cond & extra
    joined = s.join(t, cond, "full" if by_source else "left")
    if one_per_key:
        # deduplicate / first-row: after the join, so the window runs once, in the
        # checkpoint below, over the joined rows only
        joined = keep_one_per_key(joined, keys, last=one_per_key == "last")
    t_pos = F.col(f"target.{ROW_POS}")
    matched = F.col("source.__s").isNotNull() & t_pos.isNotNull()
    groups = {
        "matched": matched,
        "not_matched": t_pos.isNull(),
        "not_matched_by_source": F.col("source.__s").isNull(),
    }
    chosen: Any = None
    for i, c in enumerate(clauses):
        when = groups[c.group]
        if c.condition is not None:
            when = when & F.coalesce(F.expr(c.condition), F.lit(False))
        chosen = F.when(when, F.lit(i)) if chosen is None else chosen.when(when, F.lit(i))
    # eager: the join runs once, and the plans of the checks and writes after it stay small
    joined = joined.withColumn("__clause", chosen).localCheckpoint()
    if any(c.group == "matched" for c in clauses):
        twice = (
            joined.filter(matched)
            .groupBy(F.col(f"target.{ROW_FILE}"), t_pos)
            .count()
            .filter(F.col("count") > 1)
            .limit(1)
            .count()
        )
        if twice:
            raise ValidationError(
                f"a target row matches more than one source row on {list(keys)}; a MERGE "
                "changes each target row at most once. Deduplicate the source by its key"
            )
    acted = joined.filter(F.col("__clause").isNotNull())
    counts = {r["__clause"]: r["count"] for r in acted.groupBy("__clause").count().collect()}
    inserted = updated = deleted = 0
    parts: list[DataFrame] = []
    for i, c in enumerate(clauses):
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
        elif c.kind == "update_all":
            updated += n
            cols = [_source_column(source, schema, name) for name in names]
            row_id = F.col(f"target.{ROW_ID.name}") if lineage else F.lit(None).cast("long")
        else:
            updated += n
            given = c.set or {}
            cols = [
                (F.expr(given[name]) if name in given else F.col(f"target.`{name}`")).alias(name)
                for name in names
            ]
            row_id = F.col(f"target.{ROW_ID.name}") if lineage else F.lit(None).cast("long")
        if lineage:
            cols += [
                row_id.alias(ROW_ID.name),
                F.lit(None).cast("long").alias(LAST_UPDATED_SEQUENCE_NUMBER.name),
            ]
        parts.append(rows.select(*cols))
    gone = acted.filter(
        F.col("__clause").isin([i for i, c in enumerate(clauses) if c.kind != "insert_all"])
    ).select(F.col(f"target.{ROW_FILE}").alias(ROW_FILE), F.col(f"target.{ROW_POS}").alias(ROW_POS))
    return _write_changes(
        spark,
        table,
        txn,
        EngineRows(parts, gone, inserted, updated, deleted, joined),
        tasks,
        key_filter,
        mor,
        branch=branch,
        case_sensitive=case_sensitive,
        snapshot_properties=snapshot_properties,
        times=(started, planned),
        files=(len(tasks), max(total - len(tasks), 0)),
    )


def _write_changes(
    spark: SparkSession,
    table: Table,
    txn: Transaction,
    rows: EngineRows,
    tasks: Sequence[FileScanTask],
    key_filter: BooleanExpression,
    mor: bool,
    *,
    branch: str,
    case_sensitive: bool,
    snapshot_properties: Mapping[str, str] | None,
    times: tuple[float, float],
    files: tuple[int, int],
) -> MergeResult:
    """Write and commit what a MERGE decided (by its clauses or by the table's merge
    engine): the new rows as data files, the target rows they replace or delete marked
    (merge-on-read) or their files rewritten (copy-on-write)."""
    md = table.metadata
    rows_schema = rewrite_schema(md)
    started, planned = times
    decided = time.perf_counter()
    with cleanup_on_failure(table.io, []) as written:
        changes = RowChanges()
        parts = list(rows.new)
        if mor:
            if parts:
                new = parts[0]
                for p in parts[1:]:
                    new = new.unionByName(p)
                result = write_data(new, table, schema=rows_schema)
                written.add(result)
                changes.data_files = result.files
            if rows.updated or rows.deleted:
                marked = mark_positions(spark, table, rows.gone, tasks, written)
                changes.deletes, changes.deleted_from = marked.deletes, marked.tasks
        else:
            touched_uris = {r[0] for r in rows.gone.select(ROW_FILE).distinct().collect()}
            touched = [t for t in tasks if spark_file_uri(t.file.file_path) in touched_uris]
            if touched:
                whole = read_tasks(
                    spark,
                    ScanPlan(md, table.io, case_sensitive=case_sensitive),
                    touched,
                    apply_residual=False,
                    projected_schema=rows_schema,
                    row_positions=True,
                )
                kept = whole.join(rows.gone, [ROW_FILE, ROW_POS], "left_anti")
                parts.append(kept.drop(ROW_FILE, ROW_POS))
            if parts:
                out = parts[0]
                for p in parts[1:]:
                    out = out.unionByName(p)
                result = write_data(out, table, schema=rows_schema)
                written.add(result)
                changes.data_files = result.files
            changes.rewritten = touched
        rows.result.unpersist()  # the checkpointed blocks
        written_at = time.perf_counter()
        if changes.data_files or changes.deletes.added or changes.rewritten:
            txn.stage_row_changes(
                changes,
                key_filter,
                "merge",
                mor,
                branch=branch,
                case_sensitive=case_sensitive,
                snapshot_properties=snapshot_properties,
            )
            txn.commit()
    done = time.perf_counter()
    return MergeResult(
        rows_inserted=rows.inserted,
        rows_updated=rows.updated,
        rows_deleted=rows.deleted,
        files_scanned=files[0],
        files_skipped=files[1],
        data_files_added=len(changes.data_files),
        delete_files_added=len(changes.deletes.added),
        seconds={
            "plan": planned - started,
            "join": decided - planned,
            "write": written_at - decided,
            "commit": done - written_at,
            "total": done - started,
        },
    )


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
