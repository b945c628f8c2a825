"""Incremental append planning (Iceberg's incremental append scan): the data files that
the ``append`` snapshots of a range added, start exclusive, end inclusive, on one line
of a branch's history.

Only the manifests the snapshots of the range wrote are read, and of those only the
entries the snapshot itself ADDED. Rows are read as they were appended: a later delete
in the range is not applied (such a range is refused unless its delete snapshots are
skipped, see below).

A range holding snapshots that are not appends is refused with
:class:`~neve.errors.NonAppendSnapshotError` unless those snapshots are skipped on
request, with Iceberg's streaming option names:

- ``streaming-skip-overwrite-snapshots``: skip ``overwrite`` snapshots (updates, merges,
  upserts, overwrites); rows they add are not returned;
- ``streaming-skip-delete-snapshots``: skip ``delete`` snapshots.

``replace`` snapshots (compaction, manifest rewrites) change no rows and are always
skipped. The range rules (ids and times) are those of the changelog
(:func:`neve.planning.changelog.changelog_snapshots`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from neve.errors import NonAppendSnapshotError
from neve.expressions import BooleanExpression
from neve.expressions.binding import bind
from neve.expressions.manifest_evaluator import ManifestEvaluator
from neve.expressions.metrics_evaluator import InclusiveMetricsEvaluator
from neve.expressions.parser import to_expression
from neve.expressions.residual import ResidualEvaluator
from neve.io.fileio import FileIO
from neve.planning.changelog import ChangeSnapshot, changelog_snapshots
from neve.planning.manifest_cache import cached_manifest_list, load_manifests
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFileContent, ManifestContent, ManifestEntryStatus
from neve.spec.refs import MAIN_BRANCH
from neve.spec.schema import Schema
from neve.spec.snapshot import Operation
from neve.spec.table_metadata import TableMetadata

__all__ = [
    "SKIP_DELETE_SNAPSHOTS",
    "SKIP_OVERWRITE_SNAPSHOTS",
    "IncrementalRange",
    "append_snapshots",
    "plan_appended_files",
]

#: Option: skip ``overwrite`` snapshots instead of failing (Iceberg's name).
SKIP_OVERWRITE_SNAPSHOTS = "streaming-skip-overwrite-snapshots"
#: Option: skip ``delete`` snapshots instead of failing (Iceberg's name).
SKIP_DELETE_SNAPSHOTS = "streaming-skip-delete-snapshots"


def _flag(options: Mapping[str, str], key: str) -> bool:
    raw = str(options.get(key, "false")).strip().lower()
    if raw in ("true", "1", "yes"):
        return True
    if raw in ("false", "0", "no"):
        return False
    raise NonAppendSnapshotError(f"option {key}={raw!r} must be true or false")


@dataclass(frozen=True)
class IncrementalRange:
    """A resolved range: the append snapshots read and those skipped, oldest first."""

    appends: tuple[ChangeSnapshot, ...]
    skipped: tuple[ChangeSnapshot, ...]


def append_snapshots(
    metadata: TableMetadata,
    *,
    start_snapshot_id: int | None = None,
    end_snapshot_id: int | None = None,
    start_time: Any = None,
    end_time: Any = None,
    branch: str = MAIN_BRANCH,
    options: Mapping[str, str] | None = None,
) -> IncrementalRange:
    """The append snapshots of the range, failing on an overwrite or delete snapshot
    that the options do not skip (module docstring)."""
    opts = dict(options or {})
    skip = {
        Operation.OVERWRITE.value: _flag(opts, SKIP_OVERWRITE_SNAPSHOTS),
        Operation.DELETE.value: _flag(opts, SKIP_DELETE_SNAPSHOTS),
    }
    snaps = changelog_snapshots(
        metadata,
        start_snapshot_id=start_snapshot_id,
        end_snapshot_id=end_snapshot_id,
        start_time=start_time,
        end_time=end_time,
        branch=branch,
    )
    appends: list[ChangeSnapshot] = []
    skipped: list[ChangeSnapshot] = []
    for s in snaps:
        if s.operation == Operation.APPEND.value:
            appends.append(s)
        elif skip.get(s.operation, False):
            skipped.append(s)
        else:
            option = (
                SKIP_OVERWRITE_SNAPSHOTS
                if s.operation == Operation.OVERWRITE.value
                else SKIP_DELETE_SNAPSHOTS
            )
            raise NonAppendSnapshotError(
                f"snapshot {s.snapshot_id} is a {s.operation!r} snapshot, and an "
                "incremental append read returns appended rows only; skip such snapshots "
                f'with the option {option}=true (options={{"{option}": "true"}} on a '
                'scan, .option("' + option + '", "true") on Spark), read the range as a '
                "changelog (table.changes(...)), or choose a range of appends"
            )
    return IncrementalRange(tuple(appends), tuple(skipped))


def plan_appended_files(
    metadata: TableMetadata,
    io: FileIO,
    snapshots: Sequence[ChangeSnapshot],
    *,
    schema: Schema | None = None,
    filter: str | BooleanExpression | None = None,
    case_sensitive: bool = True,
) -> list[FileScanTask]:
    """Scan tasks for the data files ``snapshots`` added (whole files, no deletes),
    pruned by ``filter`` like a scan; reads only the manifests those snapshots wrote."""
    md = metadata
    schema = schema or md.schema()
    row_filter = to_expression(filter)
    bind(schema, row_filter, case_sensitive)  # fail early on a bad filter
    evaluators = {
        spec_id: ManifestEvaluator(spec, schema, row_filter, case_sensitive)
        for spec_id, spec in md.specs_by_id.items()
    }
    residuals = {
        spec_id: ResidualEvaluator(spec, schema, row_filter, case_sensitive)
        for spec_id, spec in md.specs_by_id.items()
    }
    metrics = InclusiveMetricsEvaluator(schema, row_filter, case_sensitive)
    tasks: list[FileScanTask] = []
    for cs in snapshots:
        snap = md.snapshot_by_id(cs.snapshot_id)
        own = [
            m
            for m in cached_manifest_list(io, snap.manifest_list)
            if m.content is ManifestContent.DATA
            and m.added_snapshot_id == cs.snapshot_id
            and evaluators[m.partition_spec_id].eval(m)
        ]
        for lazy in load_manifests(io, own, md.specs_by_id, eager=True):
            for e in lazy.entries():
                f = e.data_file
                if (
                    e.status is not ManifestEntryStatus.ADDED
                    or e.snapshot_id != cs.snapshot_id
                    or f.content is not DataFileContent.DATA
                    or not metrics.eval(f)
                ):
                    continue
                residual = residuals[f.spec_id].residual_for(f.partition)
                tasks.append(
                    FileScanTask(
                        f, residual, (), 0, f.file_size_in_bytes, f.spec_id, e.sequence_number
                    )
                )
    return tasks
