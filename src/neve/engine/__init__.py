"""The engine seam: the protocol the pyarrow and Spark engines implement
(:mod:`neve.engine.protocol`) and the engine-free results they hand back to the table
layer (:mod:`neve.engine.changes`, :mod:`neve.engine.origins`)."""

from __future__ import annotations

from neve.engine.changes import MergeOutcome, RowChanges, UpdateOutcome
from neve.engine.origins import CompactedFiles, RowOrigins
from neve.engine.protocol import Engine, KeySource, MergeRerun

__all__ = [
    "CompactedFiles",
    "Engine",
    "KeySource",
    "MergeOutcome",
    "MergeRerun",
    "RowChanges",
    "RowOrigins",
    "UpdateOutcome",
]
