"""What a change checks about the commits that landed between the snapshot it was
planned on and the branch head it commits onto (Iceberg-Java's ``MergingSnapshotProducer``
validations): data files added in the range it changes, and delete files added for the
data files it reads from or removes."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any

from neve.actions.snapshot import SnapshotAction, file_key
from neve.errors import CommitConflictError
from neve.expressions import BooleanExpression
from neve.expressions.evaluator import evaluator
from neve.expressions.metrics_evaluator import InclusiveMetricsEvaluator
from neve.expressions.projection import inclusive_projection
from neve.io.fileio import FileIO
from neve.planning.manifests import read_manifest, read_manifest_list
from neve.spec.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
)
from neve.spec.snapshot import Operation, Snapshot
from neve.spec.table_metadata import TableMetadata

__all__ = ["added_since", "check_no_new_deletes", "file_matcher"]


def file_matcher(
    md: TableMetadata, expr: BooleanExpression, case_sensitive: bool
) -> Callable[[DataFile], bool]:
    """Whether a file may hold a row matching ``expr``, by its partition (inclusive
    projection) and its metrics."""
    schema = md.schema()
    parts: dict[int, Callable[[tuple[Any, ...]], bool]] = {}
    for spec_id, spec in md.specs_by_id.items():
        ptype = spec.partition_type(schema)
        parts[spec_id] = evaluator(
            ptype, inclusive_projection(schema, spec, case_sensitive).project(expr)
        )
    metrics = InclusiveMetricsEvaluator(schema, expr, case_sensitive)

    def may_match(f: DataFile) -> bool:
        if not parts[f.spec_id](f.partition):
            return False
        # metrics of delete files describe the deleted rows' columns, not the data's
        return f.content is not DataFileContent.DATA or bool(metrics.eval(f))

    return may_match


def added_since(
    md: TableMetadata,
    io: FileIO,
    base_snapshot_id: int | None,
    parent: Snapshot,
    ignore: set[int],
    content: ManifestContent = ManifestContent.DATA,
) -> Iterator[ManifestEntry]:
    """Entries of ``content`` (data or delete files) added by the snapshots after
    ``base_snapshot_id`` up to ``parent`` (inclusive), leaving out the snapshots in
    ``ignore`` and compactions (which add no new rows and no new deletes)."""
    for s in md.ancestors(parent.snapshot_id):
        if s.snapshot_id == base_snapshot_id:
            return
        if s.snapshot_id in ignore or s.operation is Operation.REPLACE:
            continue
        if content is ManifestContent.DATA and s.operation is Operation.DELETE:
            continue  # a delete adds no data files
        for m in read_manifest_list(io, s.manifest_list):
            if m.content is not content:
                continue
            if m.added_snapshot_id != s.snapshot_id or not m.has_added_files:
                continue
            for e in read_manifest(io, m, specs_by_id=md.specs_by_id):
                if e.status is ManifestEntryStatus.ADDED and e.snapshot_id == s.snapshot_id:
                    yield e
    if base_snapshot_id is not None:
        raise CommitConflictError(
            f"snapshot {base_snapshot_id} this change was planned on is no longer an ancestor "
            "of the branch head (rolled back or expired); reload the table and retry"
        )


def check_no_new_deletes(
    action: SnapshotAction,
    md: TableMetadata,
    parent: Snapshot,
    data_files: Iterable[DataFile],
    contents: Collection[DataFileContent] = (
        DataFileContent.POSITION_DELETES,
        DataFileContent.EQUALITY_DELETES,
    ),
) -> None:
    """No delete file committed since ``action``'s base may apply to ``data_files`` (the
    data files it rewrites, removes or marks deleted rows in): its deletes would be
    lost or merged over. File-scoped deletes apply to the file they name; the others
    to their partition; equality deletes of an unpartitioned spec to every file. Only
    delete files of ``contents`` count (a compaction that rebases position deletes
    checks equality deletes alone)."""
    paths = {f.file_path for f in data_files if f.content is DataFileContent.DATA}
    if not paths:
        return
    partitions = {(f.spec_id, f.partition) for f in data_files if f.content is DataFileContent.DATA}
    entries = added_since(
        md,
        action.io,
        action.base_snapshot_id,
        parent,
        action.ignore_snapshot_ids,
        ManifestContent.DELETES,
    )
    # data files whose current file-scoped deletes this change replaces: its own delete
    # file holds their positions (a DV replaces every delete of its file), so older
    # concurrent ones are merged in too; had they not been current, removing the one
    # that is would have failed as "no longer in the table"
    merged = {
        f.referenced_data_file
        for f in action.removed_paths.values()
        if f.content is not DataFileContent.DATA and f.referenced_data_file is not None
    }
    for e in entries:
        d = e.data_file
        if d.content not in contents:
            continue
        if file_key(d) in action.removed_paths or (
            d.referenced_data_file is not None and d.referenced_data_file in merged
        ):
            continue  # merged into this change's own delete file, which replaces it
        if d.referenced_data_file is not None:
            hit = d.referenced_data_file in paths
        elif (
            d.content is DataFileContent.EQUALITY_DELETES
            and md.spec_by_id(d.spec_id).is_unpartitioned
        ):
            hit = True
        else:
            hit = (d.spec_id, d.partition) in partitions
        if hit:
            raise CommitConflictError(
                f"a concurrent commit (snapshot {e.snapshot_id}) added delete file "
                f"{d.file_path} for data this change rewrites or deletes from; reload the "
                "table and run the change again"
            )
