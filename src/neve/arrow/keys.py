"""Locating rows by key: which live rows of a table hold given key values.

One way to find them serves MERGE/upsert, the primary-key check of appends and the
rebase of a commit over concurrent ones: the planner prunes files by the keys (an IN
list, or their range when there are many, through partition transforms and column
bounds), only the key columns and row positions of the candidate files are read, with
their deletes applied, and the match is a polars semi-join.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap64

from neve.actions.base import TableState
from neve.arrow.positions import read_task
from neve.arrow.reader import DeleteCache, read_workers
from neve.arrow.schema import to_arrow_schema
from neve.errors import DuplicateKeyError, ValidationError
from neve.expressions import ALWAYS_FALSE, BooleanExpression, and_
from neve.expressions.expressions import greater_than_or_equal, is_in, less_than_or_equal
from neve.io.pools import POLARS
from neve.planning.delete import whole_file_tasks
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spec.refs import MAIN_BRANCH
from neve.spec.schema import ROW_POSITION, Schema
from neve.spec.types import NestedField

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "DEFAULT_KEY_CACHE_BYTES",
    "KeyColumnCache",
    "KeyHits",
    "check_new_keys",
    "duplicate_keys",
    "find_keys",
    "key_column",
    "key_column_cache",
    "key_filter",
]

#: Up to this many distinct keys, candidate files are pruned by the key list; beyond
#: it by the keys' range.
IN_LIST_LIMIT = 1000

#: How many offending keys an error names.
_SHOWN = 5


def key_filter(keys: pa.Table, on: Sequence[str]) -> BooleanExpression:
    """A filter that every row holding one of ``keys`` (columns ``on``) satisfies."""
    parts: list[BooleanExpression] = []
    for name in on:
        distinct = pc.unique(keys.column(name).drop_null())
        if len(distinct) == 0:
            return ALWAYS_FALSE
        if len(distinct) <= IN_LIST_LIMIT:
            parts.append(is_in(name, distinct.to_pylist()))
        else:
            bounds = pc.min_max(distinct)
            parts.append(greater_than_or_equal(name, bounds["min"].as_py()))
            parts.append(less_than_or_equal(name, bounds["max"].as_py()))
    return and_(*parts) if len(parts) > 1 else parts[0]


@dataclass(frozen=True)
class KeyHits:
    """The live rows of one data file that hold a searched key: their positions and
    key values."""

    task: FileScanTask
    positions: BitMap64
    keys: pa.Table


def find_keys(
    table: TableState,
    keys: pa.Table,
    on: Sequence[str],
    tasks: Iterable[FileScanTask] | None = None,
    *,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
    cache: DeleteCache | None = None,
    expect_new: bool = False,
) -> list[KeyHits]:
    """The live rows holding one of ``keys`` in ``tasks`` (default: the files of the
    branch head that the keys' filter may match), files read in parallel.

    ``expect_new``: the caller expects few of the keys to exist (the check of appends),
    so each file's most selective key column is probed alone first and the other key
    columns and positions are read only from files where it matches."""
    md = table.metadata
    schema = md.schema()
    expr = key_filter(keys, on)
    if expr is ALWAYS_FALSE:
        return []
    if tasks is None:
        ref = branch if branch in md.refs else MAIN_BRANCH
        scan = ScanPlan(md, table.io, filter=expr, ref=ref, case_sensitive=case_sensitive)
        tasks = scan.plan_files()
    key_schema = Schema(*[schema.find_field(n) for n in on])
    try:
        typed = keys.select(list(on)).cast(to_arrow_schema(key_schema))
    except (pa.ArrowException, ValueError) as exc:
        raise ValidationError(
            f"key columns {list(on)} do not convert to the table's types: {exc}"
        ) from None
    POLARS.require("a primary-key lookup (upsert, MERGE, key checks)")
    # polars is imported where it runs: every process imports this module (~165 ms)
    import polars as pl

    wanted = pl.DataFrame(typed).unique()
    read_schema = Schema(*key_schema.fields, ROW_POSITION)
    shared = cache or DeleteCache()
    probe: tuple[NestedField, pl.Series] | None = None
    if expect_new:
        # the key column with the most distinct values rules out the most files
        column = max(on, key=lambda n: wanted.get_column(n).n_unique())
        probe = (schema.find_field(column), wanted.get_column(column).unique().implode())

    def hits_in(task: FileScanTask) -> KeyHits | None:
        # the key filter only skips row groups: the join below matches the rows
        if probe is not None and not key_column(table, task, probe[0]).is_in(probe[1]).any():
            return None
        rows = read_task(
            table,
            task,
            read_schema,
            expr,
            case_sensitive=case_sensitive,
            cache=shared,
            filter_rows=False,
        )
        if not rows.num_rows:
            return None
        found = pl.DataFrame(rows).join(wanted, on=list(on), how="semi", nulls_equal=False)
        if not found.height:
            return None
        return KeyHits(
            task,
            BitMap64(found[ROW_POSITION.name].to_list()),
            found.select(list(on)).to_arrow(),
        )

    todo = whole_file_tasks(tasks)
    if len(todo) <= 1:
        found = [hits_in(t) for t in todo]
    else:
        with ThreadPoolExecutor(max_workers=min(read_workers(), len(todo))) as ex:
            found = list(ex.map(hits_in, todo))
    return [h for h in found if h is not None]


#: Default bound of the process-wide key column cache, in bytes of column values; the
#: environment variable ``NEVE_KEY_CACHE_BYTES`` overrides it (0 turns caching off).
DEFAULT_KEY_CACHE_BYTES = 256 * 1024 * 1024


def _cache_bytes_from_env() -> int:
    text = os.environ.get("NEVE_KEY_CACHE_BYTES", "")
    try:
        return max(0, int(text)) if text.strip() else DEFAULT_KEY_CACHE_BYTES
    except ValueError:
        return DEFAULT_KEY_CACHE_BYTES


class KeyColumnCache:
    """LRU cache of one key column per data file, as stored (deletes not applied),
    bounded by the bytes of its values and shared by all threads. Data files never
    change once written, so an entry stays valid while its file exists; a probe that
    finds a key in a cached column only sends the file to the exact, delete-aware
    read, so a deleted row never counts as a live key."""

    def __init__(self, max_bytes: int = DEFAULT_KEY_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._columns: OrderedDict[tuple[str, int, int, str], pl.Series] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[str, int, int, str], load: Callable[[], pl.Series]) -> pl.Series:
        with self._lock:
            found = self._columns.get(key)
            if found is not None:
                self._columns.move_to_end(key)
                return found
        column = load()
        size = int(column.estimated_size())
        if size > self.max_bytes:
            return column
        with self._lock:
            if key not in self._columns:
                self._columns[key] = column
                self._bytes += size
                while self._bytes > self.max_bytes:
                    _, old = self._columns.popitem(last=False)
                    self._bytes -= int(old.estimated_size())
        return column

    def __len__(self) -> int:
        return len(self._columns)

    def clear(self) -> None:
        with self._lock:
            self._columns.clear()
            self._bytes = 0


#: The process-wide key column cache.
key_column_cache = KeyColumnCache(_cache_bytes_from_env())


def key_column(table: TableState, task: FileScanTask, field: NestedField) -> pl.Series:
    """The values of key column ``field`` in ``task``'s data file, every row as stored
    (deletes not applied), through :data:`key_column_cache`."""
    whole = replace(task, start=0, length=task.file.file_size_in_bytes, delete_files=())

    def load() -> pl.Series:
        # polars is imported where it runs: every process imports this module
        import polars as pl

        rows = read_task(table, whole, Schema(field))
        POLARS.require("a primary-key lookup (upsert, MERGE, key checks)")
        return pl.Series(field.name, rows.column(0).combine_chunks())

    key = (task.file.file_path, task.file.file_size_in_bytes, field.field_id, str(field.field_type))
    return key_column_cache.get(key, load)


def duplicate_keys(keys: pa.Table, on: Sequence[str]) -> pa.Table:
    """The keys that occur more than once in ``keys``."""
    POLARS.require("a check of primary keys for duplicates")
    # polars is imported where it runs: every process imports this module
    import polars as pl

    counts = pl.DataFrame(keys.select(list(on))).group_by(list(on)).len()
    return counts.filter(pl.col("len") > 1).select(list(on)).to_arrow()


def _shown(keys: pa.Table, on: Sequence[str]) -> str:
    rows = keys.slice(0, _SHOWN).to_pylist()
    text = ", ".join(
        str(r[on[0]]) if len(on) == 1 else "(" + ", ".join(str(r[n]) for n in on) + ")"
        for r in rows
    )
    more = f" and {keys.num_rows - _SHOWN} more" if keys.num_rows > _SHOWN else ""
    return text + more


def duplicate_key_error(keys: pa.Table, on: Sequence[str], where: str) -> DuplicateKeyError:
    return DuplicateKeyError(
        f"{keys.num_rows} key(s) on {list(on)} {where}: {_shown(keys, on)}; nothing was "
        "written. Use upsert() to update existing keys, deduplicate the batch, or set the "
        "table property write.primary-key.check=false for a load known to hold new keys"
    )


def check_new_keys(
    table: TableState,
    data: pa.Table,
    on: Sequence[str],
    *,
    branch: str = MAIN_BRANCH,
    tasks: Iterable[FileScanTask] | None = None,
) -> None:
    """Refuse rows to append whose key the batch holds twice or the table (``tasks``:
    the given files only) holds already: :class:`DuplicateKeyError` names a few."""
    missing = [n for n in on if n not in data.column_names]
    if missing:
        raise ValidationError(
            f"the rows to append lack the primary-key column(s) {missing}; every row of a "
            "primary-key table needs its key"
        )
    nulls = [n for n in on if data.column(n).null_count]
    if nulls:
        raise ValidationError(
            f"{sum(data.column(n).null_count for n in nulls)} row(s) to append have a null "
            f"primary-key column ({', '.join(nulls)}); key columns must hold values"
        )
    twice = duplicate_keys(data, on)
    if twice.num_rows:
        raise duplicate_key_error(twice, on, "occur more than once in the rows to append")
    hits = find_keys(table, data, on, tasks, branch=branch, expect_new=True)
    if hits:
        found = pa.concat_tables([h.keys for h in hits])
        raise duplicate_key_error(found, on, "exist in the table already")
