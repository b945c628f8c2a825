"""Snapshot references (spec "Snapshot References"): named branches and tags."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["CONSUMER_TAG_PREFIX", "MAIN_BRANCH", "SnapshotRef", "SnapshotRefType"]

MAIN_BRANCH = "main"

#: Tags named ``neve-consumer-<name>`` record how far a streaming consumer has read
#: (docs/STREAMING.md): the tag keeps that snapshot from expiring in every Iceberg
#: engine, and neve's expiration also keeps the snapshots after it on a branch.
CONSUMER_TAG_PREFIX = "neve-consumer-"


class SnapshotRefType(enum.Enum):
    BRANCH = "branch"
    TAG = "tag"


@dataclass(frozen=True)
class SnapshotRef:
    snapshot_id: int
    ref_type: SnapshotRefType = SnapshotRefType.BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    @property
    def is_branch(self) -> bool:
        return self.ref_type is SnapshotRefType.BRANCH
