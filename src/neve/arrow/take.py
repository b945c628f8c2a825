"""Random access on the pyarrow engine: rows by row id, rows by their place in a
snapshot, and a snapshot's live row count (docs/RANDOM-ACCESS.md).

- :func:`take_row_ids`: the rows whose ``_row_id`` (format v3) is asked, in the order
  asked. An id is looked for at its inherited place (the file whose ``first_row_id``
  range holds it, :mod:`neve.planning.row_ids`) and, when the row is not there (it was
  copied by a rewrite, which stores its ``_row_id``), in the files that store ids.
- :func:`take_positions`: the i-th live rows of a snapshot, files in scan order, rows
  in file order, deletes applied; :func:`live_row_count` is their number.

Each file reads only the pages holding the rows where it has a page index
(:mod:`neve.arrow.pages`), with its deletes applied.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from pyroaring import BitMap64

from neve.arrow.pages import int64_array
from neve.arrow.reader import DeleteCache, deleted_positions, read_data_file, read_workers
from neve.arrow.schema import NameMapping, parse_name_mapping, to_arrow_schema
from neve.arrow.take_files import read_files_at
from neve.errors import NoSuchRowError, ValidationError
from neve.expressions.binding import bind
from neve.expressions.expressions import is_in
from neve.io.fileio import FileIO
from neve.io.pools import ProcessPool
from neve.planning.row_ids import RowIdIndex, row_id_index
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFileContent
from neve.spec.schema import ROW_ID, ROW_POSITION, Schema, with_row_lineage
from neve.spec.table_metadata import TableMetadata

__all__ = ["MISSING", "live_row_count", "take_positions", "take_row_ids"]

Ints = npt.NDArray[np.int64]

#: What ``missing=`` accepts: raise :class:`NoSuchRowError`, or leave the rows out.
MISSING = ("error", "skip")

#: How many unknown ids an error names.
_SHOWN = 5


@dataclass(frozen=True)
class _Snapshot:
    """What a read of one snapshot needs: its index, schemas and shared caches (the
    deletes, deletion vectors and footers of its files, kept across takes)."""

    metadata: TableMetadata
    io: FileIO
    index: RowIdIndex
    table_schema: Schema
    projected: Schema
    mapping: NameMapping | None
    deletes: DeleteCache
    result_schema: pa.Schema
    #: what a take by row id reads (with the ids and positions), and one by position
    by_id: Schema
    by_position: Schema


class _LiveRows:
    """Per task of a snapshot: its live rows' count and, for files with deletes, the
    map from the k-th live row to its file position (built once per snapshot)."""

    def __init__(self, counts: Ints, deleted: dict[int, Ints], live: dict[int, Ints]) -> None:
        self.counts = counts
        self.cumulative = np.cumsum(counts)
        self.deleted = deleted  # sorted deleted positions, per task
        self.live = live  # live positions, per task with equality deletes

    def positions(self, task: int, k: Ints) -> Ints:
        if task in self.live:
            out: Ints = self.live[task][k]
            return out
        d = self.deleted.get(task)
        if d is None or not len(d):
            return k
        # the live rows before deleted position d[j] number d[j] - j
        before = d - np.arange(len(d), dtype=np.int64)
        shifted: Ints = k + np.searchsorted(before, k, side="right")
        return shifted


_live_cache: OrderedDict[tuple[str, int | None], _LiveRows] = OrderedDict()
_live_lock = threading.Lock()


#: Opened snapshots, by the metadata object, FileIO, columns and snapshot asked for.
#: Metadata objects are immutable and the entry holds them (so their ``id`` is not
#: reused while it lives): a table loaded anew, or after a commit, is a new key.
_opened: OrderedDict[tuple[Any, ...], _Snapshot] = OrderedDict()
_OPENED = 8


def _open(
    metadata: TableMetadata,
    io: FileIO,
    columns: Sequence[str] | None,
    snapshot_id: int | None,
    as_of: Any,
    ref: str | None,
) -> _Snapshot:
    key: tuple[Any, ...] = (
        id(metadata),
        id(io),
        None if columns is None else tuple(columns),
        # typed: True and 1.0 are equal to 1 as keys, but not as what they ask
        (type(snapshot_id), snapshot_id),
        (type(as_of), as_of),
        ref,
    )
    try:
        with _live_lock:
            found = _opened.get(key)
            if found is not None:
                _opened.move_to_end(key)
                return found
    except TypeError:  # an unhashable as_of: opened every time
        key = ()
    plan = ScanPlan(metadata, io, columns=columns, snapshot_id=snapshot_id, as_of=as_of, ref=ref)
    index = row_id_index(metadata, io, snapshot_id=snapshot_id, as_of=as_of, ref=ref)
    text = metadata.properties.get("schema.name-mapping.default")
    projected = plan.projected_schema()
    out = _Snapshot(
        metadata,
        io,
        index,
        plan.table_schema,
        projected,
        parse_name_mapping(text) if text else None,
        DeleteCache(random_access=True),
        to_arrow_schema(projected),
        _with(projected, ROW_ID, ROW_POSITION),
        _with(projected, ROW_POSITION),
    )
    if key:
        with _live_lock:
            _opened[key] = out
            while len(_opened) > _OPENED:
                _opened.popitem(last=False)
    return out


def _read(
    s: _Snapshot,
    task: FileScanTask,
    schema: Schema,
    positions: BitMap64 | None,
    row_filter: Any = None,
    table_schema: Schema | None = None,
) -> pa.Table:
    return read_data_file(
        s.io,
        task.file,
        schema,
        table_schema=table_schema or s.table_schema,
        spec=s.metadata.spec_by_id(task.spec_id),
        row_filter=row_filter,
        delete_files=task.delete_files,
        name_mapping=s.mapping,
        cache=s.deletes,
        data_sequence_number=task.data_sequence_number,
        only_positions=positions,
    )


#: Up to this many rows taken from local files, the files are read one after another:
#: handing a few pages' work to threads costs more than it saves (measured: 10 and 100
#: rows from two files were slower in threads).
_SERIAL_ROWS = 256

#: The threads that read a take's files at once.
_files_pool = ProcessPool(read_workers, "neve-take")


def _lock_in_child() -> None:
    # a thread of the parent may have held the lock when it forked: not one of the child's
    global _live_lock
    _live_lock = threading.Lock()


os.register_at_fork(after_in_child=_lock_in_child)


def _parallel(
    s: _Snapshot, tasks: Sequence[int], rows: int, jobs: Sequence[Callable[[], pa.Table]]
) -> list[pa.Table]:
    """The jobs' results, files read at once where it pays (many rows, or an object
    store), in a pool kept for takes."""
    if len(jobs) <= 1 or _serial(s, tasks, rows):
        return [job() for job in jobs]
    return list(_files_pool.get().map(lambda job: job(), jobs))


def _serial(s: _Snapshot, tasks: Sequence[int], rows: int) -> bool:
    return rows <= _SERIAL_ROWS and all(
        s.io.is_local(s.index.tasks[t].file.file_path) for t in tasks
    )


def _read_positions(
    s: _Snapshot, tasks: Sequence[int], rows: int, schema: Schema, positions: Sequence[Ints]
) -> list[pa.Table]:
    """The rows at ``positions`` of each task's file (with their ids and positions as
    ``schema`` asks), live rows only. A take of few rows from several local files reads
    their pages at once, decoded together (:mod:`neve.arrow.take_files`); files that
    cannot be read so, and larger takes, are read file by file."""
    bitmaps = [BitMap64(p.tolist()) for p in positions]
    found: list[pa.Table | None] = [None] * len(tasks)
    if tasks and _serial(s, tasks, rows):
        todo = [
            (s.index.tasks[t], s.metadata.spec_by_id(s.index.tasks[t].spec_id), b)
            for t, b in zip(tasks, bitmaps, strict=True)
        ]
        found = read_files_at(s.io, todo, schema, s.table_schema, s.mapping, s.deletes)
    jobs = [
        (lambda t=t, b=b: _read(s, s.index.tasks[t], schema, b))
        for t, b, got in zip(tasks, bitmaps, found, strict=True)
        if got is None
    ]
    rest = iter(_parallel(s, tasks, rows, jobs))
    return [got if got is not None else next(rest) for got in found]


def _with(schema: Schema, *extra: Any) -> Schema:
    have = set(schema.field_ids())
    return Schema(*schema.fields, *[f for f in extra if f.field_id not in have])


def _column(table: pa.Table, name: str) -> Ints:
    out: Ints = table.column(name).to_numpy(zero_copy_only=False).astype(np.int64)
    return out


def _shown(values: Ints) -> str:
    head = ", ".join(str(int(v)) for v in values[:_SHOWN])
    return head + (f" and {len(values) - _SHOWN} more" if len(values) > _SHOWN else "")


def _result(s: _Snapshot, parts: list[pa.Table], order: Ints) -> pa.Table:
    """The rows of ``parts`` (concatenated) at ``order``, with the projected columns."""
    schema = s.result_schema
    if not parts:
        return schema.empty_table()
    rows = pa.concat_tables([p.select(schema.names) for p in parts])
    if len(order) != rows.num_rows or np.any(order != np.arange(len(order))):
        rows = rows.take(int64_array(order))
    return rows if rows.schema == schema else rows.cast(schema)


def take_row_ids(
    metadata: TableMetadata,
    io: FileIO,
    row_ids: Sequence[int] | npt.ArrayLike,
    *,
    columns: Sequence[str] | None = None,
    snapshot_id: int | None = None,
    as_of: Any = None,
    ref: str | None = None,
    missing: str = "error",
) -> pa.Table:
    """The live rows whose ``_row_id`` is in ``row_ids``, in that order (an id asked
    twice gives its row twice). ``missing="error"`` raises :class:`NoSuchRowError`
    for ids that name no live row (never assigned, or deleted); ``"skip"`` leaves
    them out."""
    if metadata.format_version < 3:
        raise ValidationError(
            f"row ids exist in format v3 tables only and this table is "
            f"v{metadata.format_version}; use take_rows() for rows by position, or "
            "upgrade the table with table.upgrade_format_version(3)"
        )
    if missing not in MISSING:
        raise ValidationError(f"missing={missing!r}: use one of {', '.join(MISSING)}")
    ids = np.asarray(row_ids, dtype=np.int64).reshape(-1)
    s = _open(metadata, io, columns, snapshot_id, as_of, ref)
    read_schema = s.by_id
    parts: list[pa.Table] = []
    found_at = np.full(len(ids), -1, dtype=np.int64)  # row in the concatenated parts
    base = 0
    task, pos = s.index.locate(ids)
    wanted = sorted(set(task[task >= 0].tolist()))
    asked = [pos[task == t] for t in wanted]
    read = _read_positions(s, wanted, len(ids), read_schema, asked)
    for t, rows in zip(wanted, read, strict=True):
        here = np.flatnonzero(task == t)
        got_pos = _column(rows, ROW_POSITION.name)
        got_ids = _column(rows, ROW_ID.name)
        at = np.minimum(np.searchsorted(got_pos, pos[here]), max(len(got_pos) - 1, 0))
        hit = (
            (got_pos[at] == pos[here]) & (got_ids[at] == ids[here])
            if len(got_pos)
            else np.zeros(len(here), dtype=bool)
        )
        found_at[here[hit]] = base + at[hit]
        parts.append(rows)
        base += rows.num_rows
    lost = ids[found_at < 0]
    if len(lost):  # (np.unique only here: its first call imports numpy.ma, 30 ms)
        base = _search_stored(s, np.unique(lost), ids, found_at, parts, base)
    absent = found_at < 0
    if absent.any() and missing == "error":
        unknown = np.unique(ids[absent])
        raise NoSuchRowError(
            f"{len(unknown)} row id(s) name no live row of this snapshot: {_shown(unknown)}; "
            "they were deleted or never written. Pass missing='skip' (neve take: --skip-missing) "
            "to leave them out"
        )
    return _result(s, parts, found_at[~absent])


def _search_stored(
    s: _Snapshot, lost: Ints, ids: Ints, found_at: Ints, parts: list[pa.Table], base: int
) -> int:
    """Find ``lost`` ids among the ``_row_id`` values files store (rows rewritten
    since their id was assigned), filling ``found_at``; returns the new row count."""
    schema = with_row_lineage(s.table_schema)
    expr = bind(schema, is_in(ROW_ID.name, lost.tolist()), True)
    read_schema = _with(s.projected, ROW_ID)
    candidates = s.index.storing(lost)
    jobs = [
        (lambda t=t: _read(s, s.index.tasks[t], read_schema, None, expr, schema))
        for t in candidates
    ]
    for rows in _parallel(s, candidates, len(lost), jobs):
        if not rows.num_rows:
            continue
        got = _column(rows, ROW_ID.name)
        order = np.argsort(got, kind="stable")
        at = np.searchsorted(got[order], ids)
        at = np.minimum(at, len(got) - 1)
        hit = (found_at < 0) & (got[order][at] == ids)
        found_at[hit] = base + order[at[hit]]
        parts.append(rows)
        base += rows.num_rows
    return base


def _live_rows(s: _Snapshot) -> _LiveRows:
    key = (s.metadata.table_uuid, s.index.snapshot_id)
    with _live_lock:
        found = _live_cache.get(key)
        if found is not None:
            _live_cache.move_to_end(key)
            return found
    index = s.index
    counts = index.record_counts - np.maximum(index.deleted, 0)
    deleted: dict[int, Ints] = {}
    live: dict[int, Ints] = {}
    for i, t in enumerate(index.tasks):
        if not t.delete_files:
            continue
        if any(d.content is DataFileContent.EQUALITY_DELETES for d in t.delete_files):
            rows = _read(s, t, Schema(ROW_POSITION), None)
            live[i] = np.sort(_column(rows, ROW_POSITION.name))
            counts[i] = len(live[i])
            continue
        bits = deleted_positions(s.io, t.file, t.delete_files, s.deletes) or BitMap64()
        d = np.frombuffer(bits.to_array(), dtype=np.uint64).astype(np.int64)
        deleted[i] = d[d < index.record_counts[i]]
        counts[i] = index.record_counts[i] - len(deleted[i])
    out = _LiveRows(counts, deleted, live)
    with _live_lock:
        _live_cache[key] = out
        while len(_live_cache) > 16:
            _live_cache.popitem(last=False)
    return out


def live_row_count(
    metadata: TableMetadata,
    io: FileIO,
    *,
    snapshot_id: int | None = None,
    as_of: Any = None,
    ref: str | None = None,
) -> int:
    """The live rows of a snapshot: from metadata where the deletes tell (none, or a
    deletion vector per file); position delete files are read where they do not;
    files with equality deletes are read (their key columns)."""
    index = row_id_index(metadata, io, snapshot_id=snapshot_id, as_of=as_of, ref=ref)
    if (index.deleted >= 0).all():
        return int((index.record_counts - index.deleted).sum())
    s = _open(metadata, io, [], snapshot_id, as_of, ref)
    return int(_live_rows(s).counts.sum())


def take_positions(
    metadata: TableMetadata,
    io: FileIO,
    positions: Sequence[int] | npt.ArrayLike,
    *,
    columns: Sequence[str] | None = None,
    snapshot_id: int | None = None,
    as_of: Any = None,
    ref: str | None = None,
) -> pa.Table:
    """The i-th live rows of a snapshot for each i in ``positions``, in that order:
    files in the order a scan reads them, rows in file order, deletes applied."""
    wanted = np.asarray(positions, dtype=np.int64).reshape(-1)
    s = _open(metadata, io, columns, snapshot_id, as_of, ref)
    live = _live_rows(s)
    total = int(live.cumulative[-1]) if len(live.cumulative) else 0
    outside = (wanted < 0) | (wanted >= total)
    if outside.any():
        raise NoSuchRowError(
            f"row positions {_shown(np.unique(wanted[outside]))} lie outside the snapshot, "
            f"which holds {total} live rows (positions 0 to {total - 1})"
        )
    task = np.searchsorted(live.cumulative, wanted, side="right")
    before = np.concatenate([[0], live.cumulative[:-1]])
    k = wanted - before[task]
    file_pos = np.empty(len(wanted), dtype=np.int64)
    for t in sorted(set(task.tolist())):
        here = task == t
        file_pos[here] = live.positions(t, k[here])
    read_schema = s.by_position
    todo = sorted(set(task.tolist()))
    asked = [file_pos[task == t] for t in todo]
    parts: list[pa.Table] = []
    order = np.empty(len(wanted), dtype=np.int64)
    base = 0
    for t, rows in zip(
        todo, _read_positions(s, todo, len(wanted), read_schema, asked), strict=True
    ):
        here = np.flatnonzero(task == t)
        got = _column(rows, ROW_POSITION.name)
        order[here] = base + np.searchsorted(got, file_pos[here])
        parts.append(rows)
        base += rows.num_rows
    return _result(s, parts, order)
