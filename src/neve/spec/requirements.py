"""Table requirements as data: the eight requirement kinds of the Iceberg REST
catalog's commit body. A catalog checks each against the table's current metadata
(None when the table does not exist) before it applies a commit's updates; a
requirement that does not hold is a :class:`CommitFailedError` (REST answers 409), on
which the committer reloads the table and plans its change again."""

from __future__ import annotations

from dataclasses import dataclass

from neve.errors import CommitFailedError
from neve.spec.table_metadata import TableMetadata

__all__ = [
    "AssertCreate",
    "AssertCurrentSchemaId",
    "AssertDefaultSortOrderId",
    "AssertDefaultSpecId",
    "AssertLastAssignedFieldId",
    "AssertLastAssignedPartitionId",
    "AssertRefSnapshotId",
    "AssertTableUUID",
    "TableRequirement",
]


class TableRequirement:
    """A condition on the table's current metadata that must hold for a commit."""

    __slots__ = ()

    def check(self, base: TableMetadata | None) -> None:
        """Raise :class:`CommitFailedError` unless the requirement holds on ``base``."""
        raise NotImplementedError

    def holds(self, base: TableMetadata | None) -> bool:
        try:
            self.check(base)
        except CommitFailedError:
            return False
        return True


def _existing(base: TableMetadata | None, what: str) -> TableMetadata:
    if base is None:
        raise CommitFailedError(f"{what}: the table does not exist (it was dropped); reload it")
    return base


@dataclass(frozen=True)
class AssertCreate(TableRequirement):
    """The table must not exist yet."""

    def check(self, base: TableMetadata | None) -> None:
        if base is not None:
            raise CommitFailedError(
                "assert-create: the table exists already; load it instead of creating it"
            )


@dataclass(frozen=True)
class AssertTableUUID(TableRequirement):
    uuid: str

    def check(self, base: TableMetadata | None) -> None:
        md = _existing(base, "assert-table-uuid")
        if md.table_uuid != self.uuid:
            raise CommitFailedError(
                "assert-table-uuid: "
                f"table UUID changed from {self.uuid} to {md.table_uuid}: the table was "
                "dropped and re-created; reload it"
            )


@dataclass(frozen=True)
class AssertRefSnapshotId(TableRequirement):
    """The ref must point at ``snapshot_id``; None: the ref must not exist."""

    ref: str
    snapshot_id: int | None

    def check(self, base: TableMetadata | None) -> None:
        md = _existing(base, "assert-ref-snapshot-id")
        r = md.refs.get(self.ref)
        current = r.snapshot_id if r is not None else None
        if current != self.snapshot_id:
            raise CommitFailedError(
                "assert-ref-snapshot-id: "
                f"branch {self.ref!r} moved from {self.snapshot_id} to {current}"
            )


@dataclass(frozen=True)
class AssertLastAssignedFieldId(TableRequirement):
    last_assigned_field_id: int

    def check(self, base: TableMetadata | None) -> None:
        md = _existing(base, "assert-last-assigned-field-id")
        if md.last_column_id != self.last_assigned_field_id:
            raise CommitFailedError(
                "assert-last-assigned-field-id: "
                f"last assigned field id changed from {self.last_assigned_field_id} to "
                f"{md.last_column_id}: columns were added concurrently"
            )


@dataclass(frozen=True)
class AssertCurrentSchemaId(TableRequirement):
    schema_id: int

    def check(self, base: TableMetadata | None) -> None:
        md = _existing(base, "assert-current-schema-id")
        if md.current_schema_id != self.schema_id:
            raise CommitFailedError(
                "assert-current-schema-id: "
                f"current schema changed from {self.schema_id} to {md.current_schema_id}"
            )


@dataclass(frozen=True)
class AssertLastAssignedPartitionId(TableRequirement):
    last_assigned_partition_id: int

    def check(self, base: TableMetadata | None) -> None:
        md = _existing(base, "assert-last-assigned-partition-id")
        if md.last_partition_id != self.last_assigned_partition_id:
            raise CommitFailedError(
                "assert-last-assigned-partition-id: "
                f"last assigned partition field id changed from "
                f"{self.last_assigned_partition_id} to {md.last_partition_id}"
            )


@dataclass(frozen=True)
class AssertDefaultSpecId(TableRequirement):
    spec_id: int

    def check(self, base: TableMetadata | None) -> None:
        md = _existing(base, "assert-default-spec-id")
        if md.default_spec_id != self.spec_id:
            raise CommitFailedError(
                "assert-default-spec-id: "
                f"default partition spec changed from {self.spec_id} to {md.default_spec_id}"
            )


@dataclass(frozen=True)
class AssertDefaultSortOrderId(TableRequirement):
    sort_order_id: int

    def check(self, base: TableMetadata | None) -> None:
        md = _existing(base, "assert-default-sort-order-id")
        if md.default_sort_order_id != self.sort_order_id:
            raise CommitFailedError(
                "assert-default-sort-order-id: "
                f"default sort order changed from {self.sort_order_id} to "
                f"{md.default_sort_order_id}"
            )
