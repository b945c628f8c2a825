"""The user-facing scan: a :class:`neve.planning.scan.ScanPlan` that reads its tasks
with the pyarrow engine."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from neve.arrow.scan import scan_batches, scan_to_table
from neve.planning.scan import ScanPlan

__all__ = ["TableScan"]


class TableScan(ScanPlan):
    """A scan of one snapshot of a table. Immutable; methods return new scans."""

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        return scan_batches(self, self.plan_files())

    def to_arrow(self) -> pa.Table:
        return scan_to_table(self, self.plan_files())

    def count(self) -> int:
        return int(self.to_arrow().num_rows)
