"""The user-facing scan: a :class:`neve.planning.scan.ScanPlan` that reads its tasks
with the pyarrow engine."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

import pyarrow as pa

from neve.arrow.schema import to_arrow_schema
from neve.expressions import BooleanExpression
from neve.io.fileio import FileIO
from neve.planning.incremental import append_snapshots, plan_appended_files
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spec.refs import MAIN_BRANCH
from neve.spec.table_metadata import TableMetadata

__all__ = ["IncrementalAppendScan", "ScanPlanner", "TableScan"]


@runtime_checkable
class ScanPlanner(Protocol):
    """A catalog that may plan scans itself (a REST catalog whose server plans them)."""

    def plan_scan(
        self, identifier: tuple[str, ...], scan: TableScan
    ) -> list[FileScanTask] | None: ...


class TableScan(ScanPlan):
    """A scan of one snapshot of a table. Immutable; methods return new scans.

    ``planner`` (set by the table for a catalog that plans scans) is asked for the
    tasks first; when it answers None the scan plans here."""

    planner: tuple[ScanPlanner, tuple[str, ...]] | None = None

    def plan_files(self) -> list[FileScanTask]:
        if self.planner is not None:
            catalog, identifier = self.planner
            tasks = catalog.plan_scan(identifier, self)
            if tasks is not None:
                return tasks
        return super().plan_files()

    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the rows the scan returns (field ids kept); reads no data."""
        return to_arrow_schema(self.projected_schema())

    def to_batches(self, tasks: Sequence[FileScanTask] | None = None) -> Iterator[pa.RecordBatch]:
        """Stream the scan's rows as record batches, task by task: of every planned task,
        or of ``tasks`` (some of :meth:`plan_files`' tasks, e.g. one at a time to report
        progress)."""
        # heavy: the pyarrow data path loads pyarrow.dataset and pyarrow.parquet (~80 ms);
        # only reading and writing rows need it, not planning or metadata work
        from neve.arrow.scan import scan_batches

        return scan_batches(self, self.plan_files() if tasks is None else tasks)

    def to_arrow(self) -> pa.Table:
        from neve.arrow.scan import scan_to_table  # heavy, as in to_batches

        return scan_to_table(self, self.plan_files())

    def count(self) -> int:
        return int(self.to_arrow().num_rows)


class IncrementalAppendScan(TableScan):
    """The rows the ``append`` snapshots of a range added (start exclusive, end
    inclusive; Iceberg's incremental append scan, :mod:`neve.planning.incremental`).
    Reads with the branch's current schema, and only the manifests the range's snapshots wrote;
    an overwrite or delete snapshot in the range fails unless ``options`` skip it."""

    def __init__(
        self,
        metadata: TableMetadata,
        io: FileIO,
        *,
        start_snapshot_id: int | None = None,
        end_snapshot_id: int | None = None,
        start_time: Any = None,
        end_time: Any = None,
        branch: str = MAIN_BRANCH,
        filter: str | BooleanExpression | None = None,
        columns: Sequence[str] | None = None,
        case_sensitive: bool = True,
        options: dict[str, str] | None = None,
    ) -> None:
        self.range = append_snapshots(
            metadata,
            start_snapshot_id=start_snapshot_id,
            end_snapshot_id=end_snapshot_id,
            start_time=start_time,
            end_time=end_time,
            branch=branch,
            options=options,
        )
        # rows are read with the branch's current schema, as Iceberg-Java's
        # incremental scans read with the table's
        super().__init__(
            metadata,
            io,
            filter=filter,
            columns=columns,
            ref=branch,
            case_sensitive=case_sensitive,
            options=options,
        )

    def plan_files(self) -> list[FileScanTask]:
        return plan_appended_files(
            self.metadata,
            self.io,
            self.range.appends,
            schema=self.table_schema,
            filter=self.row_filter,
            case_sensitive=self.case_sensitive,
        )
