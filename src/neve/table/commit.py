"""The one commit path: actions -> updates + requirements -> compare-and-swap, with
refresh-and-retry on a lost swap (Iceberg-Java's ``commit.retry.*`` properties).

An action plans against whatever metadata the attempt starts from. Actions that can
rebase (appends) simply re-plan on the refreshed table; actions whose requirements no
longer hold (a schema changed underneath a schema update, files to remove are gone)
raise :class:`CommitConflictError`, which is not retried.
"""

from __future__ import annotations

import random
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

from neve.errors import CommitConflictError, CommitFailedError, CommitStateUnknownError
from neve.io.fileio import FileIO
from neve.spec.metadata_builder import apply_updates, next_metadata
from neve.spec.table_metadata import TableMetadata
from neve.spec.updates import TableRequirement, TableUpdate

if TYPE_CHECKING:
    from neve.table.table import Table

__all__ = ["Action", "commit_actions"]


class Action(ABC):
    """One change in a transaction."""

    @abstractmethod
    def plan(self, md: TableMetadata) -> tuple[list[TableUpdate], list[TableRequirement]]:
        """Updates and requirements against ``md``. May write manifests (tracked by the
        action for cleanup). Raises CommitConflictError when it cannot rebase."""

    def requirements_hold_or_conflict(
        self, reqs: Sequence[TableRequirement], md: TableMetadata
    ) -> None:
        for r in reqs:
            try:
                r.check(md)
            except CommitFailedError as exc:
                raise CommitConflictError(
                    f"{exc}; the table changed concurrently in a way this change cannot "
                    "rebase onto: reload the table and apply the change again"
                ) from exc

    def on_success(self, io: FileIO) -> None:  # noqa: B027 - optional hook
        """Remove files written by earlier attempts that the final commit does not use."""

    def on_failure(self, io: FileIO) -> None:  # noqa: B027 - optional hook
        """Remove every file this action wrote (the commit did not happen)."""


def _retry_settings(md: TableMetadata) -> tuple[int, float, float, float]:
    return (
        md.int_property("commit.retry.num-retries", 4),
        md.int_property("commit.retry.min-wait-ms", 100) / 1000.0,
        md.int_property("commit.retry.max-wait-ms", 60_000) / 1000.0,
        md.int_property("commit.retry.total-timeout-ms", 1_800_000) / 1000.0,
    )


def commit_actions(table: Table, actions: Sequence[Action]) -> None:
    """Commit ``actions`` as one new metadata version of ``table``, retrying on a lost
    compare-and-swap. On success the table handle points at the new version."""
    if not actions:
        return
    io = table.io
    base_md, base_loc = table.metadata, table.metadata_location
    retries, min_wait, max_wait, total_timeout = _retry_settings(base_md)
    started = time.monotonic()
    attempt = 0
    try:
        while True:
            md = base_md
            for action in actions:
                updates, reqs = action.plan(md)
                action.requirements_hold_or_conflict(reqs, md)
                md = apply_updates(md, updates)
            new_md = next_metadata(md, base_md, base_loc)
            try:
                new_loc = table.catalog.commit_metadata(table.identifier, base_loc, new_md)
            except CommitFailedError:
                attempt += 1
                elapsed = time.monotonic() - started
                if attempt > retries or elapsed > total_timeout:
                    raise
                wait = min(max_wait, min_wait * (2 ** (attempt - 1)))
                time.sleep(wait * (0.5 + random.random() / 2))
                fresh = table.catalog.load_table(table.identifier)
                base_md, base_loc = fresh.metadata, fresh.metadata_location
                continue
            table._set_current(new_md, new_loc)
            break
    except CommitStateUnknownError:
        raise  # files may be referenced by a commit that did land: keep them
    except BaseException:
        for action in actions:
            action.on_failure(io)
        raise
    for action in actions:
        action.on_success(io)
    _delete_old_metadata(table, base_md)


def _delete_old_metadata(table: Table, previous: TableMetadata) -> None:
    """``write.metadata.delete-after-commit.enabled``: drop metadata files that fell out
    of the metadata log."""
    md = table.metadata
    if not md.bool_property("write.metadata.delete-after-commit.enabled", False):
        return
    kept = {e.metadata_file for e in md.metadata_log}
    for e in previous.metadata_log:
        if e.metadata_file not in kept:
            table.io.delete(e.metadata_file)
