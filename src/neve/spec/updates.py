"""Table changes as data: updates and requirements, in the spirit of the Iceberg REST
catalog's commit body (``add-snapshot``, ``assert-ref-snapshot-id`` ...).

Every change to a table is a list of updates applied to a base metadata by
:func:`neve.spec.metadata_builder.apply_updates`, guarded by requirements checked
against that base.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from neve.errors import CommitFailedError
from neve.spec.partition import PartitionSpec
from neve.spec.refs import SnapshotRef
from neve.spec.schema import Schema
from neve.spec.snapshot import Snapshot
from neve.spec.sort_order import SortOrder
from neve.spec.table_metadata import TableMetadata

__all__ = [
    "AddSchema",
    "AddSnapshot",
    "AddSortOrder",
    "AddSpec",
    "AssertCurrentSchemaId",
    "AssertDefaultSpecId",
    "AssertRefSnapshotId",
    "AssertTableUUID",
    "RemoveProperties",
    "RemoveSnapshotRef",
    "RemoveSnapshots",
    "SetCurrentSchema",
    "SetDefaultSortOrder",
    "SetDefaultSpec",
    "SetProperties",
    "SetSnapshotRef",
    "TableRequirement",
    "TableUpdate",
    "UpgradeFormatVersion",
]

#: "the schema/spec/order added by an earlier update of the same commit"
LAST_ADDED = -1


class TableUpdate:
    """Marker base of all updates."""

    __slots__ = ()


@dataclass(frozen=True)
class UpgradeFormatVersion(TableUpdate):
    format_version: int


@dataclass(frozen=True)
class AddSchema(TableUpdate):
    schema: Schema
    last_column_id: int


@dataclass(frozen=True)
class SetCurrentSchema(TableUpdate):
    schema_id: int  # LAST_ADDED for the schema added in this commit


@dataclass(frozen=True)
class AddSpec(TableUpdate):
    spec: PartitionSpec


@dataclass(frozen=True)
class SetDefaultSpec(TableUpdate):
    spec_id: int


@dataclass(frozen=True)
class AddSortOrder(TableUpdate):
    sort_order: SortOrder


@dataclass(frozen=True)
class SetDefaultSortOrder(TableUpdate):
    sort_order_id: int


@dataclass(frozen=True)
class AddSnapshot(TableUpdate):
    snapshot: Snapshot


@dataclass(frozen=True)
class SetSnapshotRef(TableUpdate):
    ref_name: str
    ref: SnapshotRef


@dataclass(frozen=True)
class RemoveSnapshotRef(TableUpdate):
    ref_name: str


@dataclass(frozen=True)
class RemoveSnapshots(TableUpdate):
    snapshot_ids: tuple[int, ...]


@dataclass(frozen=True)
class SetProperties(TableUpdate):
    updates: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RemoveProperties(TableUpdate):
    removals: tuple[str, ...] = ()


class TableRequirement:
    """A condition on the base metadata that must hold for updates to apply."""

    __slots__ = ()

    def check(self, base: TableMetadata) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class AssertTableUUID(TableRequirement):
    uuid: str

    def check(self, base: TableMetadata) -> None:
        if base.table_uuid != self.uuid:
            raise CommitFailedError(
                f"table UUID changed from {self.uuid} to {base.table_uuid}: the table was "
                "dropped and re-created; reload it"
            )


@dataclass(frozen=True)
class AssertRefSnapshotId(TableRequirement):
    ref: str
    snapshot_id: int | None

    def check(self, base: TableMetadata) -> None:
        r = base.refs.get(self.ref)
        current = r.snapshot_id if r is not None else None
        if current != self.snapshot_id:
            raise CommitFailedError(
                f"branch {self.ref!r} moved from {self.snapshot_id} to {current}"
            )


@dataclass(frozen=True)
class AssertCurrentSchemaId(TableRequirement):
    schema_id: int

    def check(self, base: TableMetadata) -> None:
        if base.current_schema_id != self.schema_id:
            raise CommitFailedError(
                f"current schema changed from {self.schema_id} to {base.current_schema_id}"
            )


@dataclass(frozen=True)
class AssertDefaultSpecId(TableRequirement):
    spec_id: int

    def check(self, base: TableMetadata) -> None:
        if base.default_spec_id != self.spec_id:
            raise CommitFailedError(
                f"default partition spec changed from {self.spec_id} to {base.default_spec_id}"
            )
