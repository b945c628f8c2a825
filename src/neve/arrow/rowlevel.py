"""Row-level changes on the pyarrow engine: UPDATE and the execution of a planned MERGE.

Both end the same way (:func:`apply_changes`): rows of planned data files to delete, by
position, and new rows to write. Merge-on-read marks the positions in delete files
(:mod:`neve.arrow.positions`) and writes only the new rows; copy-on-write rewrites each
touched data file without those positions, beside the new rows. In v3 an updated row
keeps its ``_row_id`` and takes the new sequence number (spec "Row Lineage"); rows a
rewrite copies keep both.

A MERGE arrives planned (:func:`neve.planning.merge.plan_merge`: candidate files
pruned by the source's keys, the target columns to read, how the source is taken, the
clauses): only those columns and row positions of the candidates are read, and the join
runs in polars. Conditions and ``set`` values are SQL expressions over
``source.<column>`` and ``target.<column>``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap64

from neve.actions.base import TableState
from neve.arrow.merge_engine import STORED_INDEX, first_per_key, last_per_key, resolve
from neve.arrow.positions import positions_of, read_task, write_deletes
from neve.arrow.reader import DeleteCache
from neve.arrow.schema import constant_array, to_arrow_schema, to_arrow_type
from neve.arrow.write import write_table_files
from neve.arrow.writer import delete_written_files
from neve.engine.changes import MergeOutcome, RowChanges, UpdateOutcome
from neve.errors import ValidationError
from neve.expressions import BooleanExpression
from neve.io.pools import POLARS
from neve.planning.delete import DeleteFiles, rewrite_schema
from neve.planning.merge import Clause, MergePlan
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile
from neve.spec.merge_engine import MergeEngine
from neve.spec.schema import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, ROW_POSITION, Schema

__all__ = [
    "apply_changes",
    "apply_set",
    "conform_keys",
    "execute_merge",
    "update_rows",
]


def _lineage_columns(rows: pa.Table, keep_row_id: bool) -> pa.Table:
    """Updated rows keep their ``_row_id`` and inherit the new sequence number; new
    rows inherit both (nulls)."""
    for f in (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER):
        if f.name not in rows.column_names:
            continue
        if f is ROW_ID and keep_row_id:
            continue
        i = rows.column_names.index(f.name)
        rows = rows.set_column(i, rows.schema.field(i), pa.nulls(rows.num_rows, pa.int64()))
    return rows


def apply_changes(
    table: TableState,
    marks: Sequence[tuple[FileScanTask, BitMap64]],
    new_rows: pa.Table | None,
    merge_on_read: bool,
    cache: DeleteCache | None = None,
) -> RowChanges:
    """Delete ``marks`` (positions per planned whole-file task) and write ``new_rows``
    (with the table's columns, and in v3 the lineage columns): delete files for
    merge-on-read, rewritten files for copy-on-write. What it wrote is removed if it
    fails."""
    cache = cache or DeleteCache()
    marks = [(t, p) for t, p in marks if p]
    rows_schema = rewrite_schema(table.metadata)
    parts = [new_rows] if new_rows is not None and new_rows.num_rows else []
    deletes = DeleteFiles()
    data_files: list[DataFile] = []
    try:
        if merge_on_read:
            deletes = write_deletes(table, marks, cache)
        else:
            with_pos = Schema(*rows_schema.fields, ROW_POSITION)
            for task, positions in marks:
                rows = read_task(table, task, with_pos, cache=cache)
                gone = pa.array(list(positions), pa.int64())
                keep = pc.invert(pc.is_in(rows.column(ROW_POSITION.name), value_set=gone))
                parts.append(rows.filter(keep).drop_columns([ROW_POSITION.name]))
        if parts:
            data = pa.concat_tables(
                [p.select(parts[0].column_names) for p in parts], promote_options="permissive"
            )
            if data.num_rows:
                data_files = write_table_files(table, data, schema=rows_schema)
    except BaseException:
        delete_written_files(table.io, [*data_files, *deletes.added])
        raise
    touched = tuple(t for t, _ in marks)
    return RowChanges(
        data_files=tuple(data_files),
        deletes=deletes,
        deleted_from=touched if merge_on_read else (),
        rewritten=() if merge_on_read else touched,
    )


# -- UPDATE -----------------------------------------------------------------------------


def apply_set(rows: pa.Table, values: Mapping[str, Any], schema: Schema) -> pa.Table:
    """``rows`` with each top-level column of ``values`` set to its literal value."""
    for name, value in values.items():
        f = schema.find_field_or_none(name)
        if f is None or name not in rows.column_names:
            raise ValidationError(
                f"update sets column {name!r}, which the table does not have (top-level "
                f"columns: {', '.join(x.name for x in schema.fields)})"
            )
        if value is None and f.required:
            raise ValidationError(f"column {name!r} is required; it cannot be set to null")
        i = rows.column_names.index(name)
        t = rows.schema.field(i).type
        try:
            column = pa.repeat(pa.scalar(value, type=t), rows.num_rows)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            raise ValidationError(
                f"cannot set column {name!r} ({f.field_type}) to {value!r}: {exc}"
            ) from None
        rows = rows.set_column(i, rows.schema.field(i), column)
    return rows


def update_rows(
    table: TableState,
    tasks: Sequence[FileScanTask],
    expr: BooleanExpression,
    values: Mapping[str, Any],
    case_sensitive: bool,
    merge_on_read: bool,
) -> UpdateOutcome:
    """Set ``values`` in the live rows of ``tasks`` that ``expr`` matches; returns the
    changes and the number of rows updated."""
    md = table.metadata
    schema = md.schema()
    cache = DeleteCache()
    read_schema = Schema(*rewrite_schema(md).fields, ROW_POSITION)
    marks: list[tuple[FileScanTask, BitMap64]] = []
    updated: list[pa.Table] = []
    for task in tasks:
        rows = read_task(table, task, read_schema, expr, case_sensitive=case_sensitive, cache=cache)
        if not rows.num_rows:
            continue
        marks.append((task, positions_of(rows)))
        changed = apply_set(rows.drop_columns([ROW_POSITION.name]), values, schema)
        updated.append(_lineage_columns(changed, keep_row_id=True))
    new_rows = pa.concat_tables(updated) if updated else None
    changes = apply_changes(table, marks, new_rows, merge_on_read, cache)
    return UpdateOutcome(changes, sum(t.num_rows for t in updated))


# -- MERGE ------------------------------------------------------------------------------


def _sql(text: str, what: str) -> pl.Expr:
    try:
        return pl.sql_expr(text)
    except Exception as exc:  # polars raises several kinds for a bad SQL expression
        raise ValidationError(f"cannot parse the merge {what} {text!r}: {exc}") from None


def _choose(
    frame: pl.DataFrame, clauses: Sequence[Clause], group: str, in_group: pl.Expr
) -> pl.Expr:
    """The index of the first clause of ``group`` whose condition holds, per row."""
    chosen: Any = None
    for i, c in enumerate(clauses):
        if c.group != group:
            continue
        cond = in_group if c.condition is None else in_group & _sql(c.condition, "condition")
        chosen = (
            pl.when(cond).then(pl.lit(i)) if chosen is None else chosen.when(cond).then(pl.lit(i))
        )
    return pl.lit(None, dtype=pl.Int64) if chosen is None else chosen.otherwise(pl.lit(None))


def _source(source: pa.Table, plan: MergePlan, schema: Schema) -> pa.Table:
    """The source as the plan takes it: every row, the last or first row per key, or
    the merge engine's input."""
    engine = plan.engine
    if plan.source_rows == "last":
        return last_per_key(source, plan.on)
    if plan.source_rows == "first" and engine is not None:
        return first_per_key(engine, source, plan.on)
    if plan.source_rows == "resolve" and engine is not None:
        return _engine_input(source, engine, schema)
    return source


def _read_target(table: TableState, plan: MergePlan, cache: DeleteCache) -> pa.Table:
    """The plan's target rows: its columns, ``__file`` (the index of the task),
    ``__pos`` (the row's position in its file) and ``__t`` (the row's index)."""
    target_schema = Schema(*plan.target_schema.fields, ROW_POSITION)
    row_filter = None if plan.by_source else plan.key_filter
    reads = []
    for i, task in enumerate(plan.tasks):
        rows = read_task(table, task, target_schema, row_filter, cache=cache)
        reads.append(
            rows.append_column("__file", pa.repeat(pa.scalar(i, pa.int64()), rows.num_rows))
        )
    empty = to_arrow_schema(target_schema).append(pa.field("__file", pa.int64()))
    target = pa.concat_tables(reads) if reads else empty.empty_table()
    target = target.rename_columns(
        ["__pos" if n == ROW_POSITION.name else n for n in target.column_names]
    )
    return target.append_column("__t", _row_numbers(target.num_rows))


def _row_numbers(n: int) -> pa.Array:
    """0 to ``n - 1`` as an int64 column (from numpy: no Python int per row)."""
    return pa.array(np.arange(n, dtype=np.int64))


def execute_merge(table: TableState, source: pa.Table, plan: MergePlan) -> MergeOutcome:
    """Join ``source`` with the planned target rows, apply the plan's clauses (or its
    merge engine) and write the result; nothing is committed. A target row matched by
    two source rows is refused before anything is written when the plan says so."""
    started = time.perf_counter()
    md = table.metadata
    schema = md.schema()
    source = _source(conform_keys(source, plan.on, schema), plan, schema)
    cache = DeleteCache()
    target = _read_target(table, plan, cache)
    source = source.append_column("__s", _row_numbers(source.num_rows))
    scanned = time.perf_counter()
    if plan.source_rows == "resolve":
        return _resolved(table, plan, source, target, cache, started, scanned)
    joined = _join(source, target, plan.on, plan.clauses, plan.by_source)
    matched = pl.col("__s").is_not_null() & pl.col("__t").is_not_null()
    if plan.refuses_duplicates:
        twice = joined.filter(matched).group_by("__t").len().filter(pl.col("len") > 1)
        if twice.height:
            raise ValidationError(
                f"{twice.height} target row(s) match more than one source row on "
                f"{list(plan.on)}; a MERGE changes each target row at most once. "
                "Deduplicate the source by its key first"
            )
    acted = joined.with_columns(
        pl.coalesce(
            _choose(joined, plan.clauses, "matched", matched),
            _choose(joined, plan.clauses, "not_matched", pl.col("__t").is_null()),
            _choose(joined, plan.clauses, "not_matched_by_source", pl.col("__s").is_null()),
        ).alias("__clause")
    ).filter(pl.col("__clause").is_not_null())
    outcome = _apply_clauses(md.format_version, schema, plan, source, target, acted)
    joined_at = time.perf_counter()
    changes = apply_changes(
        table,
        [(plan.tasks[f], p) for f, p in sorted(outcome.marks.items())],
        outcome.new_rows(),
        plan.merge_on_read,
        cache,
    )
    written = time.perf_counter()
    return MergeOutcome(
        changes,
        rows_inserted=outcome.inserted,
        rows_updated=outcome.updated,
        rows_deleted=outcome.deleted,
        seconds={
            "scan": scanned - started,
            "join": joined_at - scanned,
            "write": written - joined_at,
        },
        executed_by="pyarrow",
    )


@dataclass
class _Applied:
    """What the clauses decided: positions to mark per task index, rows to write."""

    marks: dict[int, BitMap64] = field(default_factory=dict)
    parts: list[pa.Table] = field(default_factory=list)
    inserted: int = 0
    updated: int = 0
    deleted: int = 0

    def mark(self, rows: pl.DataFrame) -> None:
        for f, p in zip(rows["__file"].to_list(), rows["__pos"].to_list(), strict=True):
            self.marks.setdefault(f, BitMap64()).add(p)

    def new_rows(self) -> pa.Table | None:
        return pa.concat_tables(self.parts, promote_options="permissive") if self.parts else None


def _apply_clauses(
    format_version: int,
    schema: Schema,
    plan: MergePlan,
    source: pa.Table,
    target: pa.Table,
    acted: pl.DataFrame,
) -> _Applied:
    """Per clause, the target rows it marks and the rows it writes."""
    names = [f.name for f in schema.fields]
    lineage = format_version >= 3
    out = _Applied()
    for i, c in enumerate(plan.clauses):
        rows = acted.filter(pl.col("__clause") == i)
        if not rows.height:
            continue
        if c.kind != "insert_all":
            out.mark(rows)
        if c.kind in ("delete", "delete_by_source"):
            out.deleted += rows.height
            continue
        if c.kind == "insert_all":
            out.inserted += rows.height
            taken = source.take(pa.array(rows["__s"].to_numpy()))
            out.parts.append(_as_new_rows(taken, names, schema, format_version, None))
            continue
        out.updated += rows.height
        if c.kind == "update_all":
            taken = source.take(pa.array(rows["__s"].to_numpy()))
            t_rows = pa.array(rows["__t"].to_numpy())
            row_ids = target.column(ROW_ID.name).take(t_rows) if lineage else None
        else:  # update with set expressions over source and target
            taken = _set_values(target.take(pa.array(rows["__t"].to_numpy())), rows, c)
            row_ids = taken.column(ROW_ID.name) if lineage else None
            taken = taken.select(names)
        out.parts.append(_as_new_rows(taken, names, schema, format_version, row_ids))
    return out


def _set_values(taken: pa.Table, rows: pl.DataFrame, clause: Clause) -> pa.Table:
    """The target rows ``taken`` with the clause's ``set`` values (evaluated over the
    joined ``rows``) in place."""
    for name, text in (clause.set or {}).items():
        values = rows.select(_sql(text, "set value").alias(name)).to_arrow().column(0)
        i_col = taken.column_names.index(name)
        t = taken.schema.field(i_col).type
        try:
            cast = pc.cast(values, t)
        except pa.ArrowException as exc:
            raise ValidationError(f"merge value {text!r} for {name!r}: {exc}") from None
        taken = taken.set_column(i_col, taken.schema.field(i_col), cast)
    return taken


def _engine_input(source: pa.Table, engine: MergeEngine, schema: Schema) -> pa.Table:
    """The source as a merge engine takes it: the table's columns in the table's types
    (one the source lacks holds its write default for deduplicate, else null: nothing
    to merge), then the row-kind column when there is one."""
    columns: dict[str, Any] = {}
    for f in schema.fields:
        t = to_arrow_type(f.field_type)
        if f.name in source.column_names:
            col = source.column(f.name)
            try:
                columns[f.name] = col if col.type == t else pc.cast(col, t)
            except pa.ArrowException as exc:
                raise ValidationError(
                    f"merge source column {f.name!r} ({col.type}) does not convert to the "
                    f"table's {f.field_type}: {exc}"
                ) from None
        elif engine.kind == "deduplicate":
            columns[f.name] = constant_array(f.write_default, f.field_type, source.num_rows)
        else:
            columns[f.name] = pa.nulls(source.num_rows, t)
    kind = engine.rowkind_field
    if kind is not None and kind in source.column_names:
        columns[kind] = source.column(kind)
    return pa.table(columns)


def _resolved(
    table: TableState,
    plan: MergePlan,
    source: pa.Table,
    target: pa.Table,
    cache: DeleteCache,
    started: float,
    scanned: float,
) -> MergeOutcome:
    """Finish a MERGE whose rows a merge engine resolves: the stored rows it replaces are
    marked, the merged rows written (an updated row keeps its ``_row_id``)."""
    assert plan.engine is not None
    md = table.metadata
    schema = md.schema()
    names = [f.name for f in schema.fields]
    stored_cols = [c for c in target.column_names if c in names]
    res = resolve(plan.engine, plan.on, target.select(stored_cols), source.drop_columns(["__s"]))
    rows = res.rows
    index = rows.column(STORED_INDEX)
    if not plan.inserts:  # when_matched_update_all alone: new keys stay out
        rows = rows.filter(pc.is_valid(index))
        index = rows.column(STORED_INDEX)
    marks: dict[int, BitMap64] = {}
    gone = target.select(["__file", "__pos"]).take(res.replaced)
    for f, p in zip(gone["__file"].to_pylist(), gone["__pos"].to_pylist(), strict=True):
        marks.setdefault(f, BitMap64()).add(p)
    updated = int(pc.sum(pc.is_valid(index)).as_py() or 0)
    row_ids = target.column(ROW_ID.name).take(index) if md.format_version >= 3 else None
    new_rows = _as_new_rows(rows.select(names), names, schema, md.format_version, row_ids)
    joined_at = time.perf_counter()
    changes = apply_changes(
        table,
        [(plan.tasks[f], p) for f, p in sorted(marks.items())],
        new_rows,
        plan.merge_on_read,
        cache,
    )
    written = time.perf_counter()
    return MergeOutcome(
        changes,
        rows_inserted=rows.num_rows - updated,
        rows_updated=updated,
        rows_deleted=len(res.replaced) - updated,
        seconds={
            "scan": scanned - started,
            "join": joined_at - scanned,
            "write": written - joined_at,
        },
        executed_by="pyarrow",
    )


def conform_keys(source: Any, on: Sequence[str], schema: Schema) -> pa.Table:
    """``source`` as a pyarrow Table with its key columns ``on`` in the table's types
    (:class:`ValidationError` for a source that is no table or a key that does not
    convert)."""
    if isinstance(source, pa.RecordBatch):
        source = pa.Table.from_batches([source])
    if not isinstance(source, pa.Table):
        raise ValidationError(
            f"the merge source is a pyarrow Table, not {type(source).__name__}; convert it "
            "first, e.g. pyarrow.Table.from_pandas(df)"
        )
    for name in on:
        f = schema.find_field(name)
        i = source.column_names.index(name)
        want = to_arrow_type(f.field_type)
        if source.schema.field(i).type != want:
            try:
                column = pc.cast(source.column(i), want)
            except pa.ArrowException as exc:
                raise ValidationError(
                    f"merge key {name!r} of the source ({source.schema.field(i).type}) does "
                    f"not convert to the table's {f.field_type}: {exc}"
                ) from None
            source = source.set_column(i, pa.field(name, want), column)
    return source


def _join(
    source: pa.Table,
    target: pa.Table,
    on: Sequence[str],
    clauses: Sequence[Clause],
    by_source: bool,
) -> pl.DataFrame:
    """Source and target rows joined on the keys, with ``source`` and ``target``
    struct columns for the clauses' SQL expressions."""
    needs_values = any(c.condition or c.set for c in clauses)
    s_cols = source.column_names if needs_values else [*on, "__s"]
    t_cols = [
        c for c in target.column_names if needs_values or c in (*on, "__file", "__pos", "__t")
    ]
    POLARS.require("MERGE")
    s = pl.DataFrame(
        source.select(s_cols).rename_columns(
            [c if c.startswith("__") else "s__" + c for c in s_cols]
        )
    )
    t = pl.DataFrame(
        target.select(t_cols).rename_columns(
            [c if c.startswith("__") else "t__" + c for c in t_cols]
        )
    )
    joined = s.join(
        t,
        left_on=["s__" + k for k in on],
        right_on=["t__" + k for k in on],
        how="full" if by_source else "left",
        coalesce=False,
        nulls_equal=False,
    )
    if needs_values:
        joined = joined.with_columns(
            pl.struct(
                [pl.col(c).alias(c[3:]) for c in joined.columns if c.startswith("s__")]
            ).alias("source"),
            pl.struct(
                [pl.col(c).alias(c[3:]) for c in joined.columns if c.startswith("t__")]
            ).alias("target"),
        )
    return joined


def _as_new_rows(
    rows: pa.Table,
    names: Sequence[str],
    schema: Schema,
    format_version: int,
    row_ids: pa.ChunkedArray | pa.Array | None,
) -> pa.Table:
    """``rows`` as rows to write: the table's columns (a missing one holds its write
    default, else null; spec "Default values"), and in v3 the lineage columns (an
    updated row keeps its ``_row_id``)."""
    missing = [schema.find_field(n) for n in names if n not in rows.column_names]
    required = [f.name for f in missing if f.required and f.write_default is None]
    if required:
        raise ValidationError(
            f"the merge source lacks required column(s) {required}, which have no write "
            "default; add them, or use when_matched_update(set=...) for the columns it has"
        )
    columns = {
        n: rows.column(n)
        if n in rows.column_names
        else constant_array(
            schema.find_field(n).write_default, schema.find_field(n).field_type, rows.num_rows
        )
        for n in names
    }
    out = pa.table(columns)
    if format_version >= 3:
        ids = row_ids if row_ids is not None else pa.nulls(out.num_rows, pa.int64())
        out = out.append_column(ROW_ID.name, ids)
        out = out.append_column(
            LAST_UPDATED_SEQUENCE_NUMBER.name, pa.nulls(out.num_rows, pa.int64())
        )
    return out
