"""The append action: add data files to a branch."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from neve.actions.base import TableState
from neve.actions.snapshot import REBASES, RebasePolicy, SnapshotAction
from neve.spec.refs import MAIN_BRANCH
from neve.spec.snapshot import Operation

__all__ = ["AppendFiles"]


class AppendFiles(SnapshotAction):
    """Add data files. Appends never conflict: on retry they rebase onto the new head
    (``rebase`` may add a hook that checks what concurrent commits added, e.g. the
    primary-key check, but always retries until the total timeout)."""

    operation = Operation.APPEND

    def __init__(
        self,
        table: TableState,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        owned_files: Iterable[str] = (),
        rebase: RebasePolicy = REBASES,
    ) -> None:
        super().__init__(
            table,
            branch=branch,
            snapshot_properties=snapshot_properties,
            owned_files=owned_files,
            rebase=rebase,
        )
