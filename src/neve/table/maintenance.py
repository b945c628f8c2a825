"""Table maintenance that removes files: purge on drop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neve.errors import NeveIOError
from neve.spec.manifest_io import read_manifest, read_manifest_list

if TYPE_CHECKING:
    from neve.table.table import Table

__all__ = ["purge_table_files", "reachable_files"]


def reachable_files(table: Table) -> set[str]:
    """Every file the table's metadata reaches: data and delete files, manifests,
    manifest lists, and metadata files (current and logged)."""
    md = table.metadata
    io = table.io
    out: set[str] = {table.metadata_location}
    out.update(e.metadata_file for e in md.metadata_log)
    seen_manifests: set[str] = set()
    for s in md.snapshots:
        out.add(s.manifest_list)
        try:
            manifests = read_manifest_list(io, s.manifest_list)
        except NeveIOError:  # a missing list: nothing more to find from it
            continue
        for m in manifests:
            if m.manifest_path in seen_manifests:
                continue
            seen_manifests.add(m.manifest_path)
            out.add(m.manifest_path)
            for e in read_manifest(io, m, specs_by_id=md.specs_by_id):
                out.add(e.data_file.file_path)
    return out


def purge_table_files(table: Table) -> None:
    """Delete every file the table reaches (used by ``drop_table(purge=True)``)."""
    io = table.io
    for path in reachable_files(table):
        io.delete(path)
