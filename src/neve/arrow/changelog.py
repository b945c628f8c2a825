"""Reading a planned changelog with pyarrow (``neve.planning.changelog``): each change
task's rows, then per snapshot the carry-over rows removed and updates paired by key,
and, when asked, each key's changes across the range collapsed into its net change.

- Carry-over: a snapshot that deletes a row and writes an identical row (a copy-on-write
  rewrite copies the rows it keeps) changed nothing there; identical DELETE and INSERT
  rows of one snapshot cancel one for one, comparing every column, as Iceberg-Java's
  changelog view does.
- Updates: within one snapshot, a DELETE and an INSERT of the same key become
  ``UPDATE_BEFORE`` and ``UPDATE_AFTER``. A key deleted or inserted twice by one
  snapshot cannot be paired and is an error.
- Net changes: with a key, the row a key had before the range (its first change, if
  that is a delete) against the row it has at the end (its last change, if that is an
  insert): both and equal is nothing, both and different an update (or DELETE and
  INSERT without ``compute_updates``), one of them a DELETE or an INSERT. Without a key,
  identical rows inserted and deleted in the range cancel (Iceberg-Java's
  ``net_changes``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap64

from neve.arrow.reader import DeleteCache, deleted_positions, read_data_file, read_workers
from neve.arrow.schema import NameMapping, parse_name_mapping, to_arrow_schema
from neve.errors import ValidationError
from neve.expressions.binding import bind
from neve.io.fileio import FileIO
from neve.io.pools import POLARS
from neve.planning.changelog import (
    CHANGE_ORDINAL,
    CHANGE_TYPE,
    COMMIT_SNAPSHOT_ID,
    ChangeKind,
    ChangelogPlan,
    ChangeTask,
    ChangeType,
    has_equality_deletes,
)
from neve.spec.schema import ROW_POSITION, Schema

__all__ = [
    "changelog_arrow_schema",
    "changelog_batches",
    "changelog_table",
    "finish_changes",
    "read_change_task",
    "tag_changes",
]


def changelog_arrow_schema(schema: Schema, columns: Sequence[str] | None = None) -> pa.Schema:
    """The Arrow schema of a changelog: the table's columns (or ``columns``) and the
    three change columns."""
    data = to_arrow_schema(schema if columns is None else schema.select(list(columns)))
    return pa.schema(
        [
            *data,
            pa.field(CHANGE_TYPE, pa.string(), nullable=False),
            pa.field(CHANGE_ORDINAL, pa.int32(), nullable=False),
            pa.field(COMMIT_SNAPSHOT_ID, pa.int64(), nullable=False),
        ]
    )


def read_change_task(
    io: FileIO,
    plan: ChangelogPlan,
    task: ChangeTask,
    *,
    mapping: NameMapping | None = None,
    cache: DeleteCache | None = None,
) -> pa.Table:
    """The rows of one change task (every column of the plan's schema, the task's
    residual filter applied), without the change columns: the rows an inserted file
    holds, a deleted file held, or a file's newly deleted rows held."""
    cache = cache or DeleteCache()
    schema = plan.schema
    md = plan.metadata
    f = task.file
    common = dict(
        table_schema=schema,
        spec=md.spec_by_id(task.spec_id),
        row_filter=bind(schema, task.residual, plan.case_sensitive),
        name_mapping=mapping,
        cache=cache,
        data_sequence_number=task.data_sequence_number,
    )
    if task.kind is not ChangeKind.DELETED_ROWS:
        return read_data_file(io, f, schema, delete_files=task.deletes, **common)  # type: ignore[arg-type]
    if not has_equality_deletes(task.deletes) and not has_equality_deletes(task.deletes_after):
        # positions deleted anew, read back from the data file by position
        before = deleted_positions(io, f, task.deletes, cache) or BitMap64()
        after = deleted_positions(io, f, task.deletes_after, cache) or BitMap64()
        fresh = after - before
        if not fresh:
            return to_arrow_schema(schema).empty_table()
        return read_data_file(io, f, schema, only_positions=fresh, **common)  # type: ignore[arg-type]
    # equality deletes: the rows live before, less the positions still live after
    with_pos = Schema(*schema.fields, ROW_POSITION, schema_id=schema.schema_id)
    rows = read_data_file(io, f, with_pos, delete_files=task.deletes, **common)  # type: ignore[arg-type]
    live = read_data_file(
        io,
        f,
        Schema(ROW_POSITION),
        table_schema=schema,
        spec=md.spec_by_id(task.spec_id),
        delete_files=task.deletes_after,
        name_mapping=mapping,
        cache=cache,
    )
    still = pc.is_in(rows.column(ROW_POSITION.name), value_set=live.column(0).combine_chunks())
    return rows.filter(pc.invert(still)).drop_columns([ROW_POSITION.name])


def _mapping(plan: ChangelogPlan) -> NameMapping | None:
    text = plan.metadata.properties.get("schema.name-mapping.default")
    return parse_name_mapping(text) if text else None


def tag_changes(
    io: FileIO,
    plan: ChangelogPlan,
    task: ChangeTask,
    *,
    mapping: NameMapping | None = None,
    cache: DeleteCache | None = None,
) -> pa.Table:
    """The rows of one change task with ``_change_type`` (INSERT or DELETE, before
    pairing), ``_change_ordinal`` and ``_commit_snapshot_id``, in the schema of
    :func:`changelog_arrow_schema`."""
    raw_schema = changelog_arrow_schema(plan.schema)
    if mapping is None:
        mapping = _mapping(plan)
    rows = read_change_task(io, plan, task, mapping=mapping, cache=cache)
    n = rows.num_rows
    rows = rows.append_column(
        raw_schema.field(CHANGE_TYPE), pa.array([task.change_type.value] * n, pa.string())
    )
    rows = rows.append_column(
        raw_schema.field(CHANGE_ORDINAL), pa.array(np.full(n, task.ordinal, dtype=np.int32))
    )
    rows = rows.append_column(
        raw_schema.field(COMMIT_SNAPSHOT_ID),
        pa.array(np.full(n, task.snapshot_id, dtype=np.int64)),
    )
    return rows.cast(raw_schema)


def _read_tasks(io: FileIO, plan: ChangelogPlan, tasks: Sequence[ChangeTask]) -> pa.Table:
    """The rows of ``tasks`` tagged (:func:`tag_changes`), read in parallel."""
    cache = DeleteCache()
    mapping = _mapping(plan)
    raw_schema = changelog_arrow_schema(plan.schema)

    def one(t: ChangeTask) -> pa.Table:
        return tag_changes(io, plan, t, mapping=mapping, cache=cache)

    if not tasks:
        return raw_schema.empty_table()
    if len(tasks) == 1:
        parts = [one(tasks[0])]
    else:
        workers = min(read_workers(), len(tasks))
        with ThreadPoolExecutor(max_workers=workers) as ex:
            parts = list(ex.map(one, tasks))
    return pa.concat_tables(parts)


def _key_expr(name: str) -> pl.Expr:
    head, *rest = name.split(".")
    expr = pl.col(head)
    for part in rest:
        expr = expr.struct.field(part)
    return expr


_ROW = "__neve_row"
_N = "__neve_n"


def finish_changes(
    rows: pa.Table,
    data_columns: Sequence[str],
    key: Sequence[str],
    *,
    compute_updates: bool = True,
    net_changes: bool = False,
) -> pa.Table:
    """Carry-over rows removed, updates paired and net changes collapsed (module
    docstring) in ``rows``: data columns plus the change columns as read (INSERT and
    DELETE only). Row order: by ordinal, then as read."""
    if rows.num_rows == 0:
        return rows
    POLARS.require("a changelog read")
    df = pl.from_arrow(rows.select([*data_columns, CHANGE_TYPE, CHANGE_ORDINAL]))
    assert isinstance(df, pl.DataFrame)
    # floats compare by their shortest text: -0.0 is not 0.0, NaN equals NaN (the
    # frame only decides which rows to keep; the rows themselves come from ``rows``)
    floats = [c for c, t in df.schema.items() if t in (pl.Float32, pl.Float64)]
    df = df.with_columns([pl.col(c).cast(pl.String) for c in floats]).with_row_index(_ROW)
    data = list(data_columns)
    ins, dele = ChangeType.INSERT.value, ChangeType.DELETE.value
    # carry-over: identical rows deleted and inserted by one snapshot, one for one (net
    # changes without a key cancel them across the range, keeping the latest rows, as
    # Iceberg-Java does)
    if key or not net_changes:
        df = df.with_columns(
            pl.int_range(pl.len()).over([*data, CHANGE_ORDINAL, CHANGE_TYPE]).alias(_N)
        )
        on = [*data, CHANGE_ORDINAL, _N]
        gone = df.filter(pl.col(CHANGE_TYPE) == dele).join(
            df.filter(pl.col(CHANGE_TYPE) == ins), on=on, how="inner", nulls_equal=True, suffix="_i"
        )
        dropped = pl.concat([gone.get_column(_ROW), gone.get_column(_ROW + "_i")])
        df = df.filter(~pl.col(_ROW).is_in(dropped.implode())).drop(_N)
    types = df.get_column(CHANGE_TYPE).to_list()
    if net_changes:
        df, types = _net(df, data, key, ins, dele)
    if key and compute_updates:
        types = _pair(df, key, types, by_ordinal=not net_changes)
    order = df.get_column(_ROW).to_numpy()
    out = rows.take(pa.array(order, pa.int64()))
    out = out.set_column(
        out.schema.get_field_index(CHANGE_TYPE),
        out.schema.field(CHANGE_TYPE),
        pa.array(types, pa.string()),
    )
    sort = np.lexsort((np.arange(out.num_rows), out.column(CHANGE_ORDINAL).to_numpy()))
    return out.take(pa.array(sort, pa.int64()))


def _net(
    df: pl.DataFrame, data: list[str], key: Sequence[str], ins: str, dele: str
) -> tuple[pl.DataFrame, list[str]]:
    if not key:
        # identical rows: what the range inserted less what it deleted, one for one
        counted = df.with_columns(
            pl.int_range(pl.len()).over([*data, CHANGE_TYPE]).alias(_N),
        )
        gone = counted.filter(pl.col(CHANGE_TYPE) == dele).join(
            counted.filter(pl.col(CHANGE_TYPE) == ins),
            on=[*data, _N],
            how="inner",
            nulls_equal=True,
            suffix="_i",
        )
        dropped = pl.concat([gone.get_column(_ROW), gone.get_column(_ROW + "_i")])
        kept = df.filter(~pl.col(_ROW).is_in(dropped.implode()))
        return kept, kept.get_column(CHANGE_TYPE).to_list()
    keys = [_key_expr(k).alias(f"__neve_k{i}") for i, k in enumerate(key)]
    knames = [f"__neve_k{i}" for i in range(len(key))]
    # each key's changes in order: by ordinal, a delete before the insert of its ordinal
    ranked = df.with_columns(*keys, (pl.col(CHANGE_TYPE) == ins).cast(pl.Int8).alias(_N)).sort(
        [CHANGE_ORDINAL, _N, _ROW]
    )
    first = ranked.group_by(knames, maintain_order=True).first()
    last = ranked.group_by(knames, maintain_order=True).last()
    before = first.filter(pl.col(CHANGE_TYPE) == dele)
    after = last.filter(pl.col(CHANGE_TYPE) == ins)
    both = before.join(after, on=[*knames, *data], how="inner", nulls_equal=True, suffix="_a")
    same = pl.concat([both.get_column(_ROW), both.get_column(_ROW + "_a")])
    chosen = pl.concat([before.get_column(_ROW), after.get_column(_ROW)])
    kept = df.filter(pl.col(_ROW).is_in(chosen.implode()) & ~pl.col(_ROW).is_in(same.implode()))
    return kept, kept.get_column(CHANGE_TYPE).to_list()


def _pair(df: pl.DataFrame, key: Sequence[str], types: list[str], *, by_ordinal: bool) -> list[str]:
    """``types`` with a key's DELETE and INSERT (of one snapshot, or of the whole range
    for net changes) turned into UPDATE_BEFORE and UPDATE_AFTER."""
    groups = [_key_expr(k) for k in key]
    if by_ordinal:
        groups.append(pl.col(CHANGE_ORDINAL))
    ins, dele = ChangeType.INSERT.value, ChangeType.DELETE.value
    counts = df.select(
        pl.col(CHANGE_TYPE).eq(dele).sum().over(groups).alias("d"),
        pl.col(CHANGE_TYPE).eq(ins).sum().over(groups).alias("i"),
    )
    d = counts.get_column("d").to_numpy()
    i = counts.get_column("i").to_numpy()
    if (d > 1).any() or (i > 1).any():
        raise ValidationError(
            f"cannot pair updates: a snapshot deleted or inserted more than one row with the "
            f"same key ({', '.join(key)}); pass identifier_columns= naming a unique key, or "
            "compute_updates=False"
        )
    paired = (d == 1) & (i == 1)
    before, after = ChangeType.UPDATE_BEFORE.value, ChangeType.UPDATE_AFTER.value
    return [
        (before if t == dele else after) if p else t
        for t, p in zip(types, paired.tolist(), strict=True)
    ]


def _select(table: pa.Table, schema: Schema, columns: Sequence[str] | None) -> pa.Table:
    if columns is None:
        return table
    names = [f.name for f in schema.select(list(columns)).fields]
    return table.select([*names, CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID])


def changelog_batches(
    io: FileIO,
    plan: ChangelogPlan,
    *,
    columns: Sequence[str] | None = None,
    compute_updates: bool = True,
    net_changes: bool = False,
) -> Iterator[pa.Table]:
    """The changelog snapshot by snapshot (one table per snapshot with changes; all in
    one with ``net_changes``), so memory holds one snapshot's changes at a time."""
    data = [f.name for f in plan.schema.fields]
    key = list(plan.identifier_columns)
    if net_changes:
        rows = _read_tasks(io, plan, plan.tasks)
        out = finish_changes(rows, data, key, compute_updates=compute_updates, net_changes=True)
        yield _select(out, plan.schema, columns)
        return
    by_ordinal: dict[int, list[ChangeTask]] = {}
    for t in plan.tasks:
        by_ordinal.setdefault(t.ordinal, []).append(t)
    for ordinal in sorted(by_ordinal):
        rows = _read_tasks(io, plan, by_ordinal[ordinal])
        out = finish_changes(rows, data, key, compute_updates=compute_updates)
        if out.num_rows:
            yield _select(out, plan.schema, columns)


def changelog_table(
    io: FileIO,
    plan: ChangelogPlan,
    *,
    columns: Sequence[str] | None = None,
    compute_updates: bool = True,
    net_changes: bool = False,
) -> pa.Table:
    """The whole changelog of ``plan`` as one table (see :func:`changelog_batches`)."""
    schema = changelog_arrow_schema(plan.schema, columns)
    parts = list(
        changelog_batches(
            io, plan, columns=columns, compute_updates=compute_updates, net_changes=net_changes
        )
    )
    if not parts:
        return schema.empty_table()
    return pa.concat_tables(parts).cast(schema)
