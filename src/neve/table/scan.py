"""Scan planning (SPEC-NOTES "Scan planning as Iceberg-Java does it"): choose the
snapshot, prune manifests by partition summaries, prune entries by partition and column
metrics, attach the applicable deletes and the residual filter, split large files.

Planning never touches data files and never needs Spark; tasks are picklable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from neve.errors import ValidationError
from neve.expressions import ALWAYS_TRUE, BooleanExpression, parse
from neve.expressions.binding import bind
from neve.expressions.manifest_evaluator import ManifestEvaluator
from neve.expressions.metrics_evaluator import InclusiveMetricsEvaluator
from neve.expressions.projection import inclusive_projection
from neve.expressions.residual import ResidualEvaluator
from neve.io.fileio import FileIO
from neve.spec.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from neve.spec.manifest_columnar import columnar_enabled
from neve.spec.manifest_io import LazyManifest
from neve.spec.schema import Schema
from neve.spec.snapshot import Snapshot
from neve.spec.table_metadata import TableMetadata
from neve.table.delete_index import DeleteFileIndex
from neve.table.manifest_cache import (
    cached_manifest_list,
    holds_one_partition,
    load_manifests,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["FileScanTask", "TableScan", "live_entries", "to_expression"]


def to_expression(filter: str | BooleanExpression | None) -> BooleanExpression:
    if filter is None:
        return ALWAYS_TRUE
    if isinstance(filter, str):
        return parse(filter)
    return filter


@dataclass(frozen=True)
class FileScanTask:
    """One unit of reading: a byte range of a data file, its residual row filter and
    the delete files that apply to it."""

    file: DataFile
    residual: BooleanExpression
    delete_files: tuple[DataFile, ...]
    start: int
    length: int
    spec_id: int


def live_entries(
    io: FileIO,
    manifests: Sequence[ManifestFile],
    md: TableMetadata,
    workers: int | None = None,
) -> list[ManifestEntry]:
    """All live entries of the given manifests (through the process-wide manifest
    cache; files not cached yet are fetched in parallel)."""
    loaded = load_manifests(io, manifests, md.specs_by_id, eager=True, workers=workers)
    return [e for m in loaded for e in m.live_entries()]


class TableScan:
    """A scan of one snapshot of a table. Immutable; methods return new scans."""

    def __init__(
        self,
        metadata: TableMetadata,
        io: FileIO,
        *,
        filter: str | BooleanExpression | None = None,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        as_of: Any = None,
        ref: str | None = None,
        case_sensitive: bool = True,
        options: dict[str, str] | None = None,
    ) -> None:
        given = [x is not None for x in (snapshot_id, as_of, ref)]
        if sum(given) > 1:
            raise ValidationError("give at most one of snapshot_id, as_of and ref")
        self.metadata = metadata
        self.io = io
        self.row_filter = to_expression(filter)
        self.columns = tuple(columns) if columns is not None else None
        self.case_sensitive = case_sensitive
        self.options = dict(options or {})
        self._snapshot = self._choose_snapshot(snapshot_id, as_of, ref)

    def _choose_snapshot(
        self, snapshot_id: int | None, as_of: Any, ref: str | None
    ) -> Snapshot | None:
        md = self.metadata
        if snapshot_id is not None:
            return md.snapshot_by_id(snapshot_id)
        if ref is not None:
            return md.snapshot_for_ref(ref)
        if as_of is not None:
            return md.snapshot_as_of(_to_millis(as_of))
        return md.current_snapshot()

    def snapshot(self) -> Snapshot | None:
        return self._snapshot

    @property
    def table_schema(self) -> Schema:
        """Time travel reads with the schema the snapshot was written with (as
        Iceberg-Java does for snapshot-id / as-of); the current schema otherwise."""
        s = self._snapshot
        md = self.metadata
        if s is not None and s.schema_id is not None and s.snapshot_id != md.current_snapshot_id:
            try:
                return md.schema_by_id(s.schema_id)
            except ValidationError:
                return md.schema()
        return md.schema()

    def projected_schema(self) -> Schema:
        schema = self.table_schema
        if self.columns is None:
            return schema
        return schema.select(self.columns, self.case_sensitive)

    # -- planning --------------------------------------------------------------------

    def plan_files(self) -> list[FileScanTask]:
        snap = self._snapshot
        if snap is None:
            return []
        md = self.metadata
        schema = self.table_schema
        bind(schema, self.row_filter, self.case_sensitive)  # fail early on bad filters
        manifests = cached_manifest_list(self.io, snap.manifest_list)
        evaluators = {
            spec_id: ManifestEvaluator(spec, schema, self.row_filter, self.case_sensitive)
            for spec_id, spec in md.specs_by_id.items()
        }
        kept = [m for m in manifests if evaluators[m.partition_spec_id].eval(m)]
        # data manifests first, so entries keep the order of the manifest list
        kept.sort(key=lambda m: m.content is not ManifestContent.DATA)
        # Decode in one full pass what will be needed in full anyway: every entry without
        # a filter, and manifests of a single partition (kept ones match as a whole);
        # else decode heads for partition pruning and the survivors' metrics on demand.
        unfiltered = self.row_filter is ALWAYS_TRUE
        # (the columnar decoder builds entries in batches on demand: never eager)
        columnar = columnar_enabled()
        eager = [not columnar and (unfiltered or holds_one_partition(m)) for m in kept]
        loaded = load_manifests(self.io, kept, md.specs_by_id, eager=eager)
        metrics = InclusiveMetricsEvaluator(schema, self.row_filter, self.case_sensitive)
        part_filters = {
            spec_id: _Memo(
                _partition_predicate(spec_id, md, schema, self.row_filter, self.case_sensitive)
            )
            for spec_id in md.specs_by_id
        }
        data: list[ManifestEntry] = []
        deletes: list[ManifestEntry] = []
        gone = ManifestEntryStatus.DELETED
        is_data = DataFileContent.DATA
        for lazy in loaded:
            matches = part_filters[lazy.manifest.partition_spec_id]
            kept_entries = [
                i
                for i, (status, partition) in enumerate(
                    zip(lazy.statuses, lazy.partitions, strict=True)
                )
                if status is not gone and matches(partition)
            ]
            judged: set[int] = set()  # entries the metrics evaluator already kept
            if lazy.manifest.content is ManifestContent.DATA and metrics.field_ids:
                kept_entries, judged = _metrics_survivors(lazy, kept_entries, metrics)
            for i, e in zip(kept_entries, lazy.entries_at(kept_entries), strict=True):
                if e.data_file.content is is_data:
                    if i in judged or metrics.eval(e.data_file):
                        data.append(e)
                else:
                    deletes.append(e)
        index = DeleteFileIndex(deletes, md.specs_by_id)
        residuals = {
            spec_id: _Memo(
                ResidualEvaluator(spec, schema, self.row_filter, self.case_sensitive).residual_for
            )
            for spec_id, spec in md.specs_by_id.items()
        }
        split_size = int(
            self.options.get(
                "read.split.target-size", md.properties.get("read.split.target-size", 134217728)
            )
        )
        tasks: list[FileScanTask] = []
        for e in data:
            f = e.data_file
            applicable = tuple(d.data_file for d in index.for_data_file(e)) if deletes else ()
            residual = residuals[f.spec_id](f.partition)
            for start, length in _splits(f, split_size):
                tasks.append(FileScanTask(f, residual, applicable, start, length, f.spec_id))
        return tasks

    # -- reading ---------------------------------------------------------------------

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        from neve.arrow.scan import scan_batches

        return scan_batches(self, self.plan_files())

    def to_arrow(self) -> pa.Table:
        from neve.arrow.scan import scan_to_table

        return scan_to_table(self, self.plan_files())

    def count(self) -> int:
        return int(self.to_arrow().num_rows)


#: Below this many entries to decode, decoding them is cheaper than reading their
#: metrics apart first (a fixed cost of some Arrow calls per manifest; measured).
_METRICS_FIRST_FROM = 16


def _metrics_survivors(
    lazy: LazyManifest, indices: list[int], metrics: InclusiveMetricsEvaluator
) -> tuple[list[int], set[int]]:
    """``indices`` less the entries that the metrics evaluator rules out, judged from
    the few metrics it reads where the entries are not decoded in full yet, so that
    only files that may match are (the evaluator decides exactly as on full files);
    and the set of entries it judged and kept that way. The manifest's entries are
    judged all at once on arrays where the filter allows, else one by one."""
    pending = [i for i in indices if not lazy.is_decoded(i)]
    if len(pending) < _METRICS_FIRST_FROM:
        return indices, set()
    arrays = lazy.metric_arrays(metrics.field_ids)
    every = None if arrays is None else metrics.eval_arrays(arrays)
    if every is not None:
        judged = {i for i in pending if every[i]}
    else:
        found = lazy.metrics_at(pending, metrics.field_ids)
        if found is None:
            return indices, set()
        judged = {i for i, m in zip(pending, found, strict=True) if metrics.eval_metrics(*m)}
    ruled_out = set(pending) - judged
    return [i for i in indices if i not in ruled_out], judged


class _Memo:
    """A one-argument function of a partition tuple, remembered per tuple (many files
    share a partition)."""

    __slots__ = ("fn", "memo")

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn
        self.memo: dict[Any, Any] = {}

    def __call__(self, partition: Any) -> Any:
        try:
            return self.memo[partition]
        except KeyError:
            result = self.memo[partition] = self.fn(partition)
            return result
        except TypeError:  # an unhashable value
            return self.fn(partition)


def _splits(f: DataFile, target: int) -> list[tuple[int, int]]:
    """Byte ranges on row-group boundaries (``split_offsets``), packed to ``target``."""
    offsets = f.split_offsets
    size = f.file_size_in_bytes
    if not offsets or len(offsets) < 2 or size <= target:
        return [(0, size)]
    bounds = [o for o in offsets if 0 <= o < size]
    if not bounds or bounds != sorted(bounds):
        return [(0, size)]
    out: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(bounds)):
        if bounds[i] - start >= target:
            out.append((start, bounds[i] - start))
            start = bounds[i]
    out.append((start, size - start))
    return out


def _partition_predicate(
    spec_id: int,
    md: TableMetadata,
    schema: Schema,
    row_filter: BooleanExpression,
    case_sensitive: bool,
) -> Any:
    from neve.expressions.evaluator import evaluator

    spec = md.spec_by_id(spec_id)
    try:
        ptype = spec.partition_type(schema)
    except ValidationError:
        return lambda _p: True
    projected = inclusive_projection(schema, spec, case_sensitive).project(row_filter)
    return evaluator(ptype, projected)


def _to_millis(value: Any) -> int:
    """Milliseconds since the epoch from an int (ms), a datetime or an ISO string."""
    import datetime as dt

    if isinstance(value, bool):
        raise ValidationError("as_of must be a timestamp, not a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        from neve.spec.temporal import parse_iso_timestamp

        return parse_iso_timestamp(value, with_tz=True) // 1000
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return int(value.timestamp() * 1000)
    raise ValidationError(f"as_of must be epoch millis, a datetime or an ISO string, not {value!r}")
