"""The append action: add data files to a branch."""

from __future__ import annotations

from neve.actions.snapshot import SnapshotAction
from neve.spec.snapshot import Operation

__all__ = ["AppendFiles"]


class AppendFiles(SnapshotAction):
    """Add data files. Appends never conflict: on retry they rebase onto the new head."""

    operation = Operation.APPEND
    always_rebases = True
