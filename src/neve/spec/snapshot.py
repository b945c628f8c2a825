"""Snapshots (spec "Snapshots") and their summaries."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["MetadataLogEntry", "Operation", "Snapshot", "SnapshotLogEntry"]


class Operation(enum.Enum):
    APPEND = "append"
    REPLACE = "replace"
    OVERWRITE = "overwrite"
    DELETE = "delete"


def _frozen_map(d: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(d or {}))


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    sequence_number: int
    timestamp_ms: int
    manifest_list: str
    operation: Operation
    summary: Mapping[str, str] = field(default_factory=dict)
    parent_snapshot_id: int | None = None
    schema_id: int | None = None
    first_row_id: int | None = None
    added_rows: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "summary", _frozen_map(self.summary))

    def __reduce__(self) -> tuple[object, ...]:
        return (
            Snapshot,
            (
                self.snapshot_id,
                self.sequence_number,
                self.timestamp_ms,
                self.manifest_list,
                self.operation,
                dict(self.summary),
                self.parent_snapshot_id,
                self.schema_id,
                self.first_row_id,
                self.added_rows,
            ),
        )

    def __hash__(self) -> int:
        return hash(self.snapshot_id)


@dataclass(frozen=True)
class SnapshotLogEntry:
    timestamp_ms: int
    snapshot_id: int


@dataclass(frozen=True)
class MetadataLogEntry:
    timestamp_ms: int
    metadata_file: str
