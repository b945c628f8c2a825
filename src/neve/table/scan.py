"""The user-facing scan: a :class:`neve.planning.scan.ScanPlan` that reads its tasks
with the pyarrow engine."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa

from neve.arrow.schema import to_arrow_schema
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask

__all__ = ["TableScan"]


class TableScan(ScanPlan):
    """A scan of one snapshot of a table. Immutable; methods return new scans."""

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
