"""What an engine hands back after the data work of a row-level change, before anything
is committed: the files it wrote and what they replace. The table layer turns these
into one action (a row delta or an overwrite) the same way for every engine."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from neve.planning.delete import DeleteFiles
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile

__all__ = ["MergeOutcome", "RowChanges", "UpdateOutcome"]


@dataclass(frozen=True)
class RowChanges:
    """What a row-level change wrote: new data files (rows inserted and updated); for
    merge-on-read the delete files marking the rows it replaced or deleted and the
    planned tasks of the data files they mark (``deleted_from``); for copy-on-write the
    planned tasks of the data files it rewrote (``rewritten``: their live rows that stay
    are among ``data_files``)."""

    data_files: tuple[DataFile, ...] = ()
    deletes: DeleteFiles = field(default_factory=DeleteFiles)
    deleted_from: tuple[FileScanTask, ...] = ()
    rewritten: tuple[FileScanTask, ...] = ()

    def written_paths(self) -> list[str]:
        """Every file the change wrote (removed when it is not committed)."""
        return [f.file_path for f in (*self.data_files, *self.deletes.added)]

    @property
    def is_empty(self) -> bool:
        """True when the change wrote nothing and rewrites nothing: no commit."""
        return not (self.data_files or self.deletes.added or self.rewritten)


@dataclass(frozen=True)
class UpdateOutcome:
    """An UPDATE's data work: its changes and how many rows it updated."""

    changes: RowChanges
    rows_updated: int


@dataclass(frozen=True)
class MergeOutcome:
    """A MERGE's data work: its changes, the rows it inserted, updated and deleted,
    seconds per phase (``scan``, ``join``, ``write``), and which engine path ran it
    (``executed_by``: ``pyarrow``, ``spark``, or ``spark-driver`` for a small merge a
    Spark engine ran on the driver)."""

    changes: RowChanges
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    seconds: Mapping[str, float] = field(default_factory=dict)
    executed_by: str = ""
