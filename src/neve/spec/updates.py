"""Table updates as data: the update kinds of the Iceberg REST catalog's commit body
(``add-snapshot``, ``set-snapshot-ref`` ...) that neve applies.

Every change to a table is a list of updates applied to the current metadata by
:func:`neve.spec.metadata_builder.apply_updates`, guarded by requirements
(:mod:`neve.spec.requirements`); their JSON form is in :mod:`neve.spec.commit_json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from neve.spec.partition import PartitionSpec
from neve.spec.refs import SnapshotRef
from neve.spec.schema import Schema
from neve.spec.snapshot import Snapshot
from neve.spec.sort_order import SortOrder

__all__ = [
    "AddSchema",
    "AddSnapshot",
    "AddSortOrder",
    "AddSpec",
    "RemovePartitionSpecs",
    "RemoveProperties",
    "RemoveSchemas",
    "RemoveSnapshotRef",
    "RemoveSnapshots",
    "SetCurrentSchema",
    "SetDefaultSortOrder",
    "SetDefaultSpec",
    "SetProperties",
    "SetSnapshotRef",
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
class RemovePartitionSpecs(TableUpdate):
    """Drop partition specs no manifest uses any more (never the default spec)."""

    spec_ids: tuple[int, ...]


@dataclass(frozen=True)
class RemoveSchemas(TableUpdate):
    """Drop schemas no snapshot uses any more (never the current schema)."""

    schema_ids: tuple[int, ...]


@dataclass(frozen=True)
class SetProperties(TableUpdate):
    updates: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RemoveProperties(TableUpdate):
    removals: tuple[str, ...] = ()
