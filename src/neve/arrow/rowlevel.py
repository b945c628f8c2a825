"""Row-level changes on the pyarrow engine: UPDATE and MERGE.

Both end the same way (:func:`apply_changes`): rows of planned data files to delete, by
position, and new rows to write. Merge-on-read marks the positions in delete files
(:mod:`neve.arrow.positions`) and writes only the new rows; copy-on-write rewrites each
touched data file without those positions, beside the new rows. In v3 an updated row
keeps its ``_row_id`` and takes the new sequence number (spec "Row Lineage"); rows a
rewrite copies keep both.

MERGE locates the target rows of the source's keys without reading whole files: the
planner prunes files by the keys (an IN list, or the keys' range when there are many,
through partition transforms such as ``bucket`` and column bounds), only the key
columns and row positions of the candidates are read (whole rows only where a clause
needs the target's values), and the join runs in polars. Conditions and ``set``
values are SQL expressions over ``source.<column>`` and ``target.<column>``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap64

from neve.actions.base import TableState
from neve.arrow.keys import key_filter as keys_filter
from neve.arrow.merge_engine import STORED_INDEX, first_per_key, last_per_key, resolve
from neve.arrow.positions import positions_of, read_task, write_deletes
from neve.arrow.reader import DeleteCache
from neve.arrow.schema import constant_array, to_arrow_schema, to_arrow_type
from neve.arrow.write import rewrite_schema, write_table_files
from neve.arrow.writer import delete_written_files
from neve.errors import ValidationError
from neve.expressions import ALWAYS_FALSE, ALWAYS_TRUE, BooleanExpression
from neve.planning.delete import DeleteFiles, whole_file_tasks
from neve.planning.merge import Clause, needs_target_values
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile
from neve.spec.merge_engine import MergeEngine
from neve.spec.refs import MAIN_BRANCH
from neve.spec.schema import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, ROW_POSITION, Schema
from neve.spec.types import NestedField

__all__ = [
    "MergeOutcome",
    "RowChanges",
    "apply_changes",
    "apply_set",
    "merge_rows",
    "update_rows",
]


@dataclass
class RowChanges:
    """What a row-level change wrote: new data files (rows inserted and updated),
    delete files (merge-on-read), and the data files it rewrote (copy-on-write)."""

    data_files: list[DataFile] = field(default_factory=list)
    deletes: DeleteFiles = field(default_factory=DeleteFiles)
    deleted_from: list[FileScanTask] = field(default_factory=list)
    rewritten: list[FileScanTask] = field(default_factory=list)

    def written_paths(self) -> list[str]:
        return [f.file_path for f in (*self.data_files, *self.deletes.added)]


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
    out = RowChanges()
    rows_schema = rewrite_schema(table.metadata)
    try:
        parts = [new_rows] if new_rows is not None and new_rows.num_rows else []
        if merge_on_read:
            out.deletes = write_deletes(table, marks, cache)
            out.deleted_from = [t for t, _ in marks]
        else:
            with_pos = Schema(*rows_schema.fields, ROW_POSITION)
            for task, positions in marks:
                rows = read_task(table, task, with_pos, cache=cache)
                gone = pa.array(list(positions), pa.int64())
                keep = pc.invert(pc.is_in(rows.column(ROW_POSITION.name), value_set=gone))
                parts.append(rows.filter(keep).drop_columns([ROW_POSITION.name]))
                out.rewritten.append(task)
        if parts:
            data = pa.concat_tables(
                [p.select(parts[0].column_names) for p in parts], promote_options="permissive"
            )
            if data.num_rows:
                out.data_files = write_table_files(table, data, schema=rows_schema)
    except BaseException:
        delete_written_files(table.io, out.written_paths())
        raise
    return out


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
) -> tuple[RowChanges, int]:
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
    return changes, sum(t.num_rows for t in updated)


# -- MERGE ------------------------------------------------------------------------------


@dataclass
class MergeOutcome:
    """What a MERGE found and wrote, before it is committed."""

    changes: RowChanges
    conflict_filter: BooleanExpression
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    files_scanned: int = 0
    files_skipped: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


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


def merge_rows(
    table: TableState,
    source: pa.Table,
    on: Sequence[str],
    clauses: Sequence[Clause],
    *,
    merge_on_read: bool,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
    engine: MergeEngine | None = None,
) -> MergeOutcome:
    """Plan, join and write a MERGE of ``source`` into ``table`` on the columns ``on``;
    nothing is committed. Two source rows matching one target row are refused before
    anything is written, unless ``engine`` (the table's merge engine, given for an
    upsert on the primary key: ``update_all`` with or without ``insert_all``) resolves
    them (:mod:`neve.arrow.merge_engine`)."""
    started = time.perf_counter()
    md = table.metadata
    schema = md.schema()
    names = [f.name for f in schema.fields]
    source = _conform_keys(source, on, schema)
    resolving = False
    if engine is not None:
        if engine.plain:  # the fast path: the stored values are never needed
            source = last_per_key(source, on)
        elif engine.kind == "first-row":  # stored keys stay: only new keys are inserted
            source = first_per_key(engine, source, on)
            clauses = [c for c in clauses if c.kind == "insert_all"]
        else:
            resolving = True
            source = _engine_input(source, engine, schema)
    by_source = any(c.group == "not_matched_by_source" for c in clauses)
    if not clauses:  # first-row without an insert clause: nothing to do
        key_filter: BooleanExpression = ALWAYS_FALSE
    else:
        key_filter = ALWAYS_TRUE if by_source else keys_filter(source, on)

    scan = ScanPlan(
        md,
        table.io,
        filter=key_filter,
        ref=branch if branch in md.refs else MAIN_BRANCH,
        case_sensitive=case_sensitive,
    )
    tasks = whole_file_tasks(scan.plan_files()) if key_filter is not ALWAYS_FALSE else []
    total = _live_file_count(scan)
    planned = time.perf_counter()

    # the target side: key columns and positions (whole rows where clauses need them)
    cache = DeleteCache()
    need_rows = needs_target_values(clauses)
    lineage = [ROW_ID] if md.format_version >= 3 else []
    wanted = schema.fields if need_rows else [schema.find_field(n) for n in on]
    if resolving and engine is not None:
        wanted = (
            schema.fields
            if engine.kind != "deduplicate"
            else [schema.find_field(n) for n in (*on, *engine.sequence_fields)]
        )
    target_schema = Schema(*wanted, *lineage, ROW_POSITION)
    reads = []
    for i, task in enumerate(tasks):
        rows = read_task(
            table,
            task,
            target_schema,
            None if by_source else key_filter,
            case_sensitive=case_sensitive,
            cache=cache,
        )
        reads.append(
            rows.append_column("__file", pa.repeat(pa.scalar(i, pa.int64()), rows.num_rows))
        )
    empty = to_arrow_schema(target_schema).append(pa.field("__file", pa.int64()))
    target = pa.concat_tables(reads) if reads else empty.empty_table()
    target = target.rename_columns(
        ["__pos" if n == ROW_POSITION.name else n for n in target.column_names]
    )
    target = target.append_column("__t", pa.array(range(target.num_rows), pa.int64()))
    source = source.append_column("__s", pa.array(range(source.num_rows), pa.int64()))
    scanned = time.perf_counter()

    if resolving and engine is not None:
        return _resolved(
            table,
            engine,
            source,
            target,
            on,
            tasks,
            cache,
            inserts=any(c.kind == "insert_all" for c in clauses),
            merge_on_read=merge_on_read,
            outcome=MergeOutcome(
                changes=RowChanges(),
                conflict_filter=key_filter,
                files_scanned=len(tasks),
                files_skipped=max(total - len(tasks), 0),
                seconds={"plan": planned - started, "scan": scanned - planned},
            ),
        )
    joined = _join(source, target, on, clauses, by_source)
    matched = pl.col("__s").is_not_null() & pl.col("__t").is_not_null()
    if any(c.group == "matched" for c in clauses):
        twice = joined.filter(matched).group_by("__t").len().filter(pl.col("len") > 1)
        if twice.height:
            raise ValidationError(
                f"{twice.height} target row(s) match more than one source row on "
                f"{list(on)}; a MERGE changes each target row at most once. Deduplicate "
                "the source by its key first"
            )
    actions = joined.with_columns(
        pl.coalesce(
            _choose(joined, clauses, "matched", matched),
            _choose(joined, clauses, "not_matched", pl.col("__t").is_null()),
            _choose(joined, clauses, "not_matched_by_source", pl.col("__s").is_null()),
        ).alias("__clause")
    ).filter(pl.col("__clause").is_not_null())

    marks: dict[int, BitMap64] = {}
    new_parts: list[pa.Table] = []
    inserted = updated = deleted = 0
    for i, c in enumerate(clauses):
        rows = actions.filter(pl.col("__clause") == i)
        if not rows.height:
            continue
        if c.kind != "insert_all":
            for f, p in zip(rows["__file"].to_list(), rows["__pos"].to_list(), strict=True):
                marks.setdefault(f, BitMap64()).add(p)
        if c.kind in ("delete", "delete_by_source"):
            deleted += rows.height
        elif c.kind == "insert_all":
            inserted += rows.height
            taken = source.take(pa.array(rows["__s"].to_numpy()))
            new_parts.append(_as_new_rows(taken, names, schema, md.format_version, None))
        elif c.kind == "update_all":
            updated += rows.height
            taken = source.take(pa.array(rows["__s"].to_numpy()))
            row_ids = (
                target.column(ROW_ID.name).take(pa.array(rows["__t"].to_numpy()))
                if lineage
                else None
            )
            new_parts.append(_as_new_rows(taken, names, schema, md.format_version, row_ids))
        else:  # update with set expressions over source and target
            updated += rows.height
            taken = target.take(pa.array(rows["__t"].to_numpy()))
            for name, text in (c.set or {}).items():
                if name not in names:
                    raise ValidationError(
                        f"merge sets column {name!r}, which the table does not have"
                    )
                values = rows.select(_sql(text, "set value").alias(name)).to_arrow().column(0)
                i_col = taken.column_names.index(name)
                t = taken.schema.field(i_col).type
                try:
                    cast = pc.cast(values, t)
                except pa.ArrowException as exc:
                    raise ValidationError(f"merge value {text!r} for {name!r}: {exc}") from None
                taken = taken.set_column(i_col, taken.schema.field(i_col), cast)
            row_ids = taken.column(ROW_ID.name) if lineage else None
            new_parts.append(
                _as_new_rows(taken.select(names), names, schema, md.format_version, row_ids)
            )
    joined_at = time.perf_counter()

    new_rows = pa.concat_tables(new_parts, promote_options="permissive") if new_parts else None
    changes = apply_changes(
        table, [(tasks[f], p) for f, p in sorted(marks.items())], new_rows, merge_on_read, cache
    )
    written = time.perf_counter()
    return MergeOutcome(
        changes=changes,
        conflict_filter=key_filter,
        rows_inserted=inserted,
        rows_updated=updated,
        rows_deleted=deleted,
        files_scanned=len(tasks),
        files_skipped=max(total - len(tasks), 0),
        seconds={
            "plan": planned - started,
            "scan": scanned - planned,
            "join": joined_at - scanned,
            "write": written - joined_at,
        },
    )


def _engine_input(source: pa.Table, engine: MergeEngine, schema: Schema) -> pa.Table:
    """The source as a merge engine takes it: the table's columns in the table's types
    (one the source lacks holds its write default for deduplicate, else null: nothing
    to merge), then the row-kind column when there is one."""
    columns: dict[str, Any] = {}
    for f in schema.fields:
        t = _arrow_type(f)
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
    engine: MergeEngine,
    source: pa.Table,
    target: pa.Table,
    on: Sequence[str],
    tasks: Sequence[FileScanTask],
    cache: DeleteCache,
    *,
    inserts: bool,
    merge_on_read: bool,
    outcome: MergeOutcome,
) -> MergeOutcome:
    """Finish a MERGE whose rows a merge engine resolves: the stored rows it replaces are
    marked, the merged rows written (an updated row keeps its ``_row_id``)."""
    md = table.metadata
    schema = md.schema()
    names = [f.name for f in schema.fields]
    started = time.perf_counter()
    stored_cols = [c for c in target.column_names if c in names]
    incoming = source.drop_columns([c for c in ("__s",) if c in source.column_names])
    res = resolve(engine, on, target.select(stored_cols), incoming)
    rows = res.rows
    index = rows.column(STORED_INDEX)
    if not inserts:  # when_matched_update_all alone: new keys stay out
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
    outcome.changes = apply_changes(
        table,
        [(tasks[f], p) for f, p in sorted(marks.items())],
        new_rows,
        merge_on_read,
        cache,
    )
    written = time.perf_counter()
    outcome.rows_inserted = rows.num_rows - updated
    outcome.rows_updated = updated
    outcome.rows_deleted = len(res.replaced) - updated
    outcome.seconds.update({"join": joined_at - started, "write": written - joined_at})
    return outcome


def _arrow_type(f: NestedField) -> pa.DataType:
    return to_arrow_type(f.field_type)


def _live_file_count(scan: ScanPlan) -> int:
    head = scan.snapshot()
    if head is None:
        return 0
    return int(head.summary.get("total-data-files", "0") or 0)


def _conform_keys(source: Any, on: Sequence[str], schema: Schema) -> pa.Table:
    if isinstance(source, pa.RecordBatch):
        source = pa.Table.from_batches([source])
    if not isinstance(source, pa.Table):
        raise ValidationError(
            f"the merge source is a pyarrow Table, not {type(source).__name__}; convert it "
            "first, e.g. pyarrow.Table.from_pandas(df)"
        )
    if not on:
        raise ValidationError(
            "merge needs key columns: pass on=[...] or create the table with a primary_key"
        )
    for name in on:
        f = schema.find_field_or_none(name)
        if f is None or name not in [x.name for x in schema.fields]:
            raise ValidationError(f"merge key {name!r} is not a top-level column of the table")
        if name not in source.column_names:
            raise ValidationError(f"the merge source has no key column {name!r}")
        i = source.column_names.index(name)
        want = _arrow_type(f)
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
