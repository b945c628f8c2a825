"""Snapshot references (spec "Snapshot References"): named branches and tags."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["MAIN_BRANCH", "SnapshotRef", "SnapshotRefType"]

MAIN_BRANCH = "main"


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
