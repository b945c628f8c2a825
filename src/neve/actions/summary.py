"""Snapshot summaries (Iceberg spec "Optional Snapshot Summary Fields"): what a snapshot added and removed,
and running totals carried from its parent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from neve.spec.manifest import DataFile, DataFileContent
from neve.spec.snapshot import Snapshot

__all__ = ["build_summary"]

_TOTALS = (
    ("total-data-files", "added-data-files", "deleted-data-files"),
    ("total-delete-files", "added-delete-files", "removed-delete-files"),
    ("total-records", "added-records", "deleted-records"),
    ("total-files-size", "added-files-size", "removed-files-size"),
    ("total-position-deletes", "added-position-deletes", "removed-position-deletes"),
    ("total-equality-deletes", "added-equality-deletes", "removed-equality-deletes"),
)


def _count(files: Sequence[DataFile]) -> dict[str, int]:
    c: dict[str, int] = {}

    def add(key: str, n: int) -> None:
        if n:
            c[key] = c.get(key, 0) + n

    for f in files:
        if f.content is DataFileContent.DATA:
            add("data-files", 1)
            add("records", f.record_count)
        elif f.content is DataFileContent.POSITION_DELETES:
            # a deletion vector counts as a DV, not as a position delete file (as in Java)
            add("delete-files", 1)
            add("dvs" if f.is_deletion_vector else "position-delete-files", 1)
            add("position-deletes", f.record_count)
        else:
            add("delete-files", 1)
            add("equality-delete-files", 1)
            add("equality-deletes", f.record_count)
        dv_size = f.content_size_in_bytes if f.is_deletion_vector else None
        add("files-size", dv_size if dv_size is not None else f.file_size_in_bytes)
    return c


def build_summary(
    added_files: Sequence[DataFile],
    removed_files: Sequence[DataFile],
    parent: Snapshot | None,
    extra: Mapping[str, str],
) -> dict[str, str]:
    """The summary of a snapshot that adds and removes these files, with totals
    carried from ``parent`` and the snapshot properties ``extra``."""
    added = _count(added_files)
    removed = _count(removed_files)
    out: dict[str, str] = {}
    for k, v in added.items():
        out[f"added-{k}"] = str(v)
    for k, v in removed.items():
        key = "deleted-" + k if k in ("data-files", "records") else "removed-" + k
        out[key] = str(v)
    partitions = {(f.spec_id, f.partition) for f in (*added_files, *removed_files)}
    out["changed-partition-count"] = str(len(partitions))
    parent_summary = parent.summary if parent is not None else {}
    for total, add_key, rem_key in _TOTALS:
        prev = parent_summary.get(total)
        if parent is not None and prev is None:
            continue  # unknown history: do not invent a total
        value = int(prev or 0) + int(out.get(add_key, 0)) - int(out.get(rem_key, 0))
        out[total] = str(max(value, 0))
    out.update(extra)
    return out
