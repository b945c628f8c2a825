"""The action: one staged change to a table. Planned against a metadata version, it
gives the updates to apply and the requirements that version must meet; the commit
loop (:mod:`neve.actions.commit`) plans it again on a newer version when a concurrent
commit wins."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Protocol, Self

from neve.errors import CommitConflictError, CommitFailedError
from neve.io.fileio import FileIO
from neve.spec.requirements import TableRequirement
from neve.spec.table_metadata import TableMetadata
from neve.spec.updates import TableUpdate

__all__ = ["Action", "ChangeBuilder", "TableState"]


class TableState(Protocol):
    """What an action reads of the table it changes: its file IO and the metadata
    version it starts from (a table, or a transaction's staged view of one)."""

    @property
    def io(self) -> FileIO: ...

    @property
    def metadata(self) -> TableMetadata: ...


class ChangeBuilder(ABC):
    """A builder of one schema, partition spec or sort order change. Used in a ``with``
    block it commits when the block ends without an error; :meth:`commit` hands it to
    the table layer's callback, or without one only validates it (:meth:`apply`)."""

    _on_commit: Callable[[Any], None] | None

    @abstractmethod
    def apply(self) -> object:
        """The new schema, spec or order (validated); changes nothing."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()

    def commit(self) -> None:
        """Hand the builder to the table layer's commit callback (or just validate)."""
        if self._on_commit is not None:
            self._on_commit(self)
        else:
            self.apply()


class Action(ABC):
    """One change in a transaction."""

    @property
    def always_rebases(self) -> bool:
        """True for a change that rebases onto any newer version of its branch (an
        append; a row delta with a rebase hook, whose checks still refuse what cannot
        rebase): its commit keeps retrying until the total timeout."""
        return False

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
