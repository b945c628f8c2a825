"""The engine protocol: the data work a table change needs, which the pyarrow engine
(:class:`neve.arrow.engine.ArrowEngine`) and the Spark engine
(:class:`neve.spark.engine.SparkEngine`) both do.

Everything else is the table layer's, the same for every engine: planning (which
files, which rows, which clauses), validation, the actions and their commit, and
automatic compaction. An engine is handed planned tasks and a plan, does the reading,
joining and writing, and hands back files (:mod:`neve.engine.changes`); it never plans
a table and never commits. What an engine wrote and did not get committed is removed
by the commit path (the files are the action's own) or, when the engine fails midway,
by the engine itself.

An engine's rows (``R``) are what its users hand it: a ``pyarrow.Table`` for the
pyarrow engine, a Spark ``DataFrame`` for Spark. Values of an UPDATE's ``set`` are the
engine's too: literals for pyarrow, Spark SQL expressions (or Columns) for Spark; and
MERGE conditions are SQL in the engine's dialect (polars SQL, Spark SQL).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import pyarrow as pa

from neve.actions.base import TableState
from neve.actions.snapshot import RebasePolicy
from neve.engine.changes import MergeOutcome, RowChanges, UpdateOutcome
from neve.engine.origins import CompactedFiles
from neve.expressions import BooleanExpression
from neve.io.fileio import FileIO
from neve.planning.compaction import CompactionPlan
from neve.planning.delete import DeleteFiles
from neve.planning.merge import MergePlan
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile
from neve.spec.schema import Schema

__all__ = ["Engine", "KeySource", "MergeRerun", "R"]

#: The rows an engine takes and gives.
R = TypeVar("R")

#: The keys of an upsert, asked for only when a rebase needs them (an Arrow table).
KeySource = Callable[[], pa.Table]

#: Runs a merge again on another table version (the rebase of a resolving upsert).
MergeRerun = Callable[[TableState], RowChanges]


class Engine(Protocol[R]):
    """The data work of table changes (module docstring). ``table`` is always the
    table version the work is planned on (a table, or a transaction's staged view)."""

    @property
    def name(self) -> str:
        """A short name for messages and results (``pyarrow``, ``spark``)."""
        ...

    # -- rows in ----------------------------------------------------------------------

    def columns(self, rows: R) -> Sequence[str]:
        """The top-level column names of ``rows``; raises
        :class:`neve.errors.DataSchemaMismatchError` when ``rows`` are not rows this
        engine takes."""
        ...

    def write(self, table: TableState, rows: R) -> list[DataFile]:
        """Write ``rows`` as data files of the table's schema and default spec
        (uncommitted). Nothing is left behind when it fails."""
        ...

    def check_new_keys(
        self, table: TableState, rows: R, on: Sequence[str], branch: str
    ) -> RebasePolicy:
        """Refuse ``rows`` for a primary-key append when they hold a key twice or the
        branch holds one of their keys (:class:`neve.errors.DuplicateKeyError`, before
        anything is written); returns how the append rebases: the same check against
        the files concurrent commits add."""
        ...

    def read(self, table: TableState, tasks: Sequence[FileScanTask], schema: Schema) -> R:
        """The live rows of planned ``tasks`` with the columns of ``schema`` (which may
        hold the row lineage columns), deletes applied."""
        ...

    # -- row-level changes on planned whole-file tasks ------------------------------------

    def rewrite_without(
        self,
        table: TableState,
        tasks: Sequence[FileScanTask],
        expr: BooleanExpression,
        case_sensitive: bool,
    ) -> list[DataFile]:
        """New data files holding the live rows of ``tasks`` that ``expr`` does not
        match (copy-on-write); in v3 the rows keep their lineage."""
        ...

    def mark_matching(
        self,
        table: TableState,
        tasks: Sequence[FileScanTask],
        expr: BooleanExpression,
        case_sensitive: bool,
    ) -> DeleteFiles:
        """Delete files marking the live rows of ``tasks`` that ``expr`` matches
        (merge-on-read: DVs in v3, file-scoped position deletes in v2), each merging the
        data file's earlier deletes, with the delete files they replace."""
        ...

    def update_rows(
        self,
        table: TableState,
        tasks: Sequence[FileScanTask],
        expr: BooleanExpression,
        values: Mapping[str, Any],
        case_sensitive: bool,
        merge_on_read: bool,
    ) -> UpdateOutcome:
        """Set ``values`` in the live rows of ``tasks`` that ``expr`` matches: the
        updated rows written anew (keeping their ``_row_id``), the old ones marked
        (merge-on-read) or their files rewritten (copy-on-write)."""
        ...

    # -- MERGE and upsert -----------------------------------------------------------------

    def key_filter(self, table: TableState, rows: R, on: Sequence[str]) -> BooleanExpression:
        """A filter every key of ``rows`` on ``on`` satisfies (an IN list, or the keys'
        range when there are many); ``ALWAYS_FALSE`` when there is no key. Keys that do
        not convert to the table's types are a :class:`neve.errors.ValidationError`."""
        ...

    def source_keys(self, table: TableState, rows: R, on: Sequence[str]) -> KeySource:
        """The keys of ``rows`` in the table's types, as an Arrow table when the
        returned function is called (only a rebase that re-locates an upsert's keys
        calls it)."""
        ...

    def execute_merge(self, table: TableState, rows: R, plan: MergePlan) -> MergeOutcome:
        """Join ``rows`` with the plan's target rows, apply its clauses (or its merge
        engine) and write the result (uncommitted)."""
        ...

    # -- maintenance ----------------------------------------------------------------------

    def compact(
        self, table: TableState, plan: CompactionPlan, on_group: Callable[[int], None]
    ) -> CompactedFiles:
        """Write the live rows of the plan's groups as new data files of its target size
        and order, recording where every row came from; ``on_group(rows)`` after each
        group is written."""
        ...

    def merge_deletes(self, table: TableState, tasks: Sequence[FileScanTask]) -> DeleteFiles:
        """One delete file per task's data file holding all its position deletes."""
        ...

    def delete_files(self, io: FileIO, paths: Sequence[str], workers: int) -> tuple[str, ...]:
        """Delete ``paths``; returns those that could not be deleted."""
        ...

    # -- rebasing over concurrent commits --------------------------------------------------

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
        """How a merge-on-read row delta rebases over concurrent commits (deletion
        vectors of one file unioned; a delete's ``condition`` applied to rows the
        winners added; an upsert's ``keys`` re-located in them, or ``rerun`` at the new
        head)."""
        ...

    def compaction_rebase(self, compacted: CompactedFiles) -> RebasePolicy:
        """How a compaction carries position deletes committed meanwhile over to the
        files it wrote."""
        ...
