"""Table metadata (spec "Table Metadata"): the immutable state of a table at one version.

Change it only through :mod:`neve.spec.metadata_builder`, which records each change as an
update. The JSON codec is :mod:`neve.spec.metadata_json`.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import Any

from neve.errors import NoSuchSnapshotError, SchemaError
from neve.spec.partition import PartitionSpec
from neve.spec.properties import TableProperties
from neve.spec.refs import MAIN_BRANCH, SnapshotRef
from neve.spec.schema import Schema
from neve.spec.snapshot import MetadataLogEntry, Snapshot, SnapshotLogEntry
from neve.spec.sort_order import SortOrder

__all__ = ["TableMetadata"]


@dataclass(frozen=True)
class TableMetadata:
    format_version: int
    table_uuid: str
    location: str
    last_sequence_number: int
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    partition_specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    sort_orders: tuple[SortOrder, ...]
    default_sort_order_id: int
    properties: Mapping[str, str] = field(default_factory=dict)
    current_snapshot_id: int | None = None
    snapshots: tuple[Snapshot, ...] = ()
    snapshot_log: tuple[SnapshotLogEntry, ...] = ()
    metadata_log: tuple[MetadataLogEntry, ...] = ()
    refs: Mapping[str, SnapshotRef] = field(default_factory=dict)
    statistics: tuple[Mapping[str, Any], ...] = ()
    partition_statistics: tuple[Mapping[str, Any], ...] = ()
    next_row_id: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "properties", MappingProxyType(dict(self.properties)))
        object.__setattr__(self, "refs", MappingProxyType(dict(self.refs)))

    def __reduce__(self) -> tuple[object, ...]:
        state = {k: getattr(self, k) for k in self.__dataclass_fields__}
        state["properties"] = dict(self.properties)
        state["refs"] = dict(self.refs)
        return (_rebuild, (state,))

    def with_(self, **changes: Any) -> TableMetadata:
        return replace(self, **changes)

    # -- schemas, specs, orders ------------------------------------------------------

    @cached_property
    def _schemas_by_id(self) -> dict[int, Schema]:
        return {s.schema_id: s for s in self.schemas}

    @cached_property
    def _specs_by_id(self) -> dict[int, PartitionSpec]:
        return {s.spec_id: s for s in self.partition_specs}

    def schema(self) -> Schema:
        """The current schema."""
        return self._schemas_by_id[self.current_schema_id]

    def schema_by_id(self, schema_id: int) -> Schema:
        s = self._schemas_by_id.get(schema_id)
        if s is None:
            raise SchemaError(f"schema id {schema_id} is not in the table metadata")
        return s

    def spec(self) -> PartitionSpec:
        """The default partition spec."""
        return self._specs_by_id[self.default_spec_id]

    def spec_by_id(self, spec_id: int) -> PartitionSpec:
        return self._specs_by_id[spec_id]

    @property
    def specs_by_id(self) -> Mapping[int, PartitionSpec]:
        return self._specs_by_id

    def sort_order(self) -> SortOrder:
        for o in self.sort_orders:
            if o.order_id == self.default_sort_order_id:
                return o
        return SortOrder(0, ())

    @cached_property
    def props(self) -> TableProperties:
        """The table's properties, parsed once (:class:`TableProperties`): every
        property neve reads as its typed value, with its default."""
        return TableProperties(self.properties)

    # -- snapshots and refs ----------------------------------------------------------

    @cached_property
    def _snapshots_by_id(self) -> dict[int, Snapshot]:
        return {s.snapshot_id: s for s in self.snapshots}

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot:
        s = self._snapshots_by_id.get(snapshot_id)
        if s is None:
            raise NoSuchSnapshotError(
                f"snapshot {snapshot_id} is not in the table; list table.snapshots() for ids"
            )
        return s

    def has_snapshot(self, snapshot_id: int) -> bool:
        return snapshot_id in self._snapshots_by_id

    def current_snapshot(self) -> Snapshot | None:
        if self.current_snapshot_id is None:
            return None
        return self._snapshots_by_id.get(self.current_snapshot_id)

    def ref(self, name: str) -> SnapshotRef | None:
        return self.refs.get(name)

    def snapshot_for_ref(self, name: str) -> Snapshot | None:
        """Head of a branch or the tagged snapshot; None for an empty main branch."""
        r = self.refs.get(name)
        if r is None:
            if name == MAIN_BRANCH:
                return self.current_snapshot()
            raise NoSuchSnapshotError(
                f"no branch or tag named {name!r}; known refs: {', '.join(sorted(self.refs))}"
            )
        return self.snapshot_by_id(r.snapshot_id)

    def snapshot_as_of(self, timestamp_ms: int) -> Snapshot:
        """The snapshot that was current at ``timestamp_ms``, from the snapshot log."""
        times = [e.timestamp_ms for e in self.snapshot_log]
        i = bisect.bisect_right(times, timestamp_ms)
        if i == 0:
            raise NoSuchSnapshotError(
                f"the table had no current snapshot at {timestamp_ms} ms; "
                "pick a later time or a snapshot id"
            )
        return self.snapshot_by_id(self.snapshot_log[i - 1].snapshot_id)

    def ancestors(self, snapshot_id: int | None) -> list[Snapshot]:
        """The snapshot and its ancestors, newest first (stops at expired parents)."""
        out: list[Snapshot] = []
        sid = snapshot_id
        while sid is not None:
            s = self._snapshots_by_id.get(sid)
            if s is None:
                break
            out.append(s)
            sid = s.parent_snapshot_id
        return out

    def next_sequence_number(self) -> int:
        return self.last_sequence_number + 1 if self.format_version > 1 else 0


def _rebuild(state: dict[str, Any]) -> TableMetadata:
    return TableMetadata(**state)
