"""The pyarrow engine: the data work of table changes on the driver (or in whatever
process runs it), with pyarrow reading and writing Parquet and polars joining. It is
the default engine of tables (``table.append``, ``table.upsert`` ...), and the one
tools and tests use; :class:`neve.spark.engine.SparkEngine` is the other."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from neve.actions.base import TableState
from neve.actions.snapshot import RebasePolicy
from neve.arrow import keys, positions, write
from neve.arrow.compaction_rebase import CompactionRebase
from neve.arrow.positions import read_task
from neve.arrow.reader import DeleteCache
from neve.arrow.rebase import DeltaRebase, NewKeysCheck
from neve.arrow.schema import to_arrow_schema
from neve.engine.changes import MergeOutcome, UpdateOutcome
from neve.engine.origins import CompactedFiles
from neve.engine.protocol import KeySource, MergeRerun
from neve.errors import DataSchemaMismatchError
from neve.expressions import BooleanExpression
from neve.io.fileio import FileIO
from neve.planning.compaction import CompactionPlan
from neve.planning.delete import DeleteFiles
from neve.planning.merge import MergePlan
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile
from neve.spec.schema import Schema

__all__ = ["ArrowEngine", "DriverRebases", "as_arrow_table"]


def as_arrow_table(rows: object) -> pa.Table:
    """``rows`` as a pyarrow Table (a RecordBatch is taken too); anything else is a
    :class:`DataSchemaMismatchError` saying how to convert it."""
    if isinstance(rows, pa.RecordBatch):
        return pa.Table.from_batches([rows])
    if not isinstance(rows, pa.Table):
        raise DataSchemaMismatchError(
            f"rows to write come as a pyarrow Table or RecordBatch, not "
            f"{type(rows).__name__}; convert them first, e.g. pyarrow.table(...) or "
            "pyarrow.Table.from_pandas(df)"
        )
    return rows


class DriverRebases:
    """The rebase hooks of both engines: carrying a change over concurrent commits
    reads the few rows the winners added, on the driver, with pyarrow
    (:mod:`neve.arrow.rebase`, :mod:`neve.arrow.compaction_rebase`)."""

    def delta_rebase(
        self,
        *,
        writes_rows: bool,
        condition: BooleanExpression | None = None,
        case_sensitive: bool = True,
        keys: KeySource | None = None,
        on: Sequence[str] = (),
        rerun: MergeRerun | None = None,
    ) -> RebasePolicy:
        return DeltaRebase(
            writes_rows=writes_rows,
            keys=keys,
            on=on,
            rerun=rerun,
            condition=condition,
            case_sensitive=case_sensitive,
        ).policy()

    def compaction_rebase(self, compacted: CompactedFiles) -> RebasePolicy:
        return CompactionRebase(compacted).policy()


class ArrowEngine(DriverRebases):
    """The pyarrow engine (module docstring); stateless, so one instance serves all."""

    @property
    def name(self) -> str:
        return "pyarrow"

    def __repr__(self) -> str:
        return "ArrowEngine()"

    def columns(self, rows: pa.Table) -> Sequence[str]:
        return list(as_arrow_table(rows).column_names)

    def write(self, table: TableState, rows: pa.Table) -> list[DataFile]:
        return write.write_table_files(table, as_arrow_table(rows))

    def check_new_keys(
        self, table: TableState, rows: pa.Table, on: Sequence[str], branch: str
    ) -> RebasePolicy:
        data = as_arrow_table(rows)
        keys.check_new_keys(table, data, on, branch=branch)
        return NewKeysCheck(data, on).policy()

    def read(self, table: TableState, tasks: Sequence[FileScanTask], schema: Schema) -> pa.Table:
        cache = DeleteCache()
        parts = [read_task(table, t, schema, cache=cache) for t in tasks]
        return pa.concat_tables(parts) if parts else to_arrow_schema(schema).empty_table()

    def rewrite_without(
        self,
        table: TableState,
        tasks: Sequence[FileScanTask],
        expr: BooleanExpression,
        case_sensitive: bool,
    ) -> list[DataFile]:
        return write.rewrite_without(table, tasks, expr, case_sensitive)

    def mark_matching(
        self,
        table: TableState,
        tasks: Sequence[FileScanTask],
        expr: BooleanExpression,
        case_sensitive: bool,
    ) -> DeleteFiles:
        return positions.mark_matching(table, tasks, expr, case_sensitive)

    def update_rows(
        self,
        table: TableState,
        tasks: Sequence[FileScanTask],
        expr: BooleanExpression,
        values: Mapping[str, Any],
        case_sensitive: bool,
        merge_on_read: bool,
    ) -> UpdateOutcome:
        # rowlevel imports polars (~165 ms): only the processes that change rows pay it
        from neve.arrow import rowlevel

        return rowlevel.update_rows(table, tasks, expr, values, case_sensitive, merge_on_read)

    def key_filter(self, table: TableState, rows: pa.Table, on: Sequence[str]) -> BooleanExpression:
        # rowlevel imports polars (~165 ms): only the processes that change rows pay it
        from neve.arrow import rowlevel

        source = rowlevel.conform_keys(rows, on, table.metadata.schema())
        return keys.key_filter(source, on)

    def source_keys(self, table: TableState, rows: pa.Table, on: Sequence[str]) -> KeySource:
        # rowlevel imports polars (~165 ms): only the processes that change rows pay it
        from neve.arrow import rowlevel

        data = rowlevel.conform_keys(rows, on, table.metadata.schema())
        return lambda: data.select(list(on))

    def execute_merge(self, table: TableState, rows: pa.Table, plan: MergePlan) -> MergeOutcome:
        # rowlevel imports polars (~165 ms): only the processes that change rows pay it
        from neve.arrow import rowlevel

        return rowlevel.execute_merge(table, rows, plan)

    def compact(
        self, table: TableState, plan: CompactionPlan, on_group: Callable[[int], None]
    ) -> CompactedFiles:
        return write.compact_with_origins(
            table, plan.groups, plan.options.target, plan.sort, on_group
        )

    def merge_deletes(self, table: TableState, tasks: Sequence[FileScanTask]) -> DeleteFiles:
        return positions.merge_deletes(table, tasks)

    def delete_files(self, io: FileIO, paths: Sequence[str], workers: int) -> tuple[str, ...]:
        return io.delete_many(paths, workers)
