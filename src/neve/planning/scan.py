"""Scan planning (Iceberg spec "Scan Planning"; as Iceberg-Java does it): choose the
snapshot, prune manifests by partition summaries, prune entries by partition and column
metrics, attach the applicable deletes and the residual filter, split large files.

Planning never touches data files and never needs Spark; tasks are picklable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import compress
from typing import Any

from neve.errors import SchemaError, ValidationError
from neve.expressions import ALWAYS_TRUE, BooleanExpression
from neve.expressions.binding import bind
from neve.expressions.evaluator import evaluator
from neve.expressions.expressions import And, Or
from neve.expressions.manifest_evaluator import ManifestEvaluator
from neve.expressions.metrics_evaluator import InclusiveMetricsEvaluator
from neve.expressions.parser import to_expression
from neve.expressions.residual import ResidualEvaluator
from neve.expressions.visitors import references
from neve.io.fileio import FileIO
from neve.planning.delete_index import DeleteFileIndex
from neve.planning.manifest_batches import (
    METRICS_FIRST_FROM,
    decode_entries_together,
    judge_together,
)
from neve.planning.manifest_cache import (
    cached_manifest_list,
    holds_one_partition,
    load_manifests,
)
from neve.planning.manifest_columnar import columnar_enabled
from neve.planning.manifests import LazyManifest
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    assemble,
)
from neve.spec.partition import PartitionSpec
from neve.spec.properties import TableProperties
from neve.spec.schema import Schema, row_lineage_field
from neve.spec.snapshot import Snapshot
from neve.spec.table_metadata import TableMetadata
from neve.spec.temporal import timestamp_millis

__all__ = ["ScanPlan", "live_entries"]


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


class ScanPlan:
    """What a scan of one snapshot of a table reads: the snapshot, the schema, and the
    file scan tasks. The user-facing :class:`neve.table.scan.TableScan` adds reading."""

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
        if columns is not None and (
            isinstance(columns, str) or not all(isinstance(c, str) for c in columns)
        ):
            raise ValidationError(
                f"columns is a list of column names, e.g. ['id', 'name'], not {columns!r}"
            )
        self.columns = tuple(columns) if columns is not None else None
        self.case_sensitive = case_sensitive
        self.options = dict(options or {})
        self._snapshot = self._choose_snapshot(snapshot_id, as_of, ref)
        # Which schema reads use (Iceberg-Java's SnapshotUtil.schemaFor): the table's
        # current schema for the current state and for branches, whose heads move with
        # the table; the snapshot's own schema for a snapshot id, a time or a tag.
        self._historical = (
            snapshot_id is not None
            or as_of is not None
            or (ref is not None and ref in metadata.refs and not metadata.refs[ref].is_branch)
        )

    def _choose_snapshot(
        self, snapshot_id: int | None, as_of: Any, ref: str | None
    ) -> Snapshot | None:
        md = self.metadata
        if snapshot_id is not None:
            return md.snapshot_by_id(snapshot_id)
        if ref is not None:
            return md.snapshot_for_ref(ref)
        if as_of is not None:
            return md.snapshot_as_of(timestamp_millis(as_of))
        return md.current_snapshot()

    def snapshot(self) -> Snapshot | None:
        return self._snapshot

    @property
    def table_schema(self) -> Schema:
        """Time travel (a snapshot id, a time, a tag) reads with the schema the snapshot
        was written with; the current state and branches read with the current schema
        (as Iceberg-Java does)."""
        s = self._snapshot
        md = self.metadata
        if self._historical and s is not None and s.schema_id is not None:
            try:
                return md.schema_by_id(s.schema_id)
            except ValidationError:
                return md.schema()
        return md.schema()

    def projected_schema(self) -> Schema:
        """The columns the scan returns: all of the table's, or those named in
        ``columns``, which may include the v3 row lineage metadata columns
        ``_row_id`` and ``_last_updated_sequence_number`` (never part of all)."""
        schema = self.table_schema
        if self.columns is None:
            return schema
        cs = self.case_sensitive
        lineage = {
            name: f
            for name in self.columns
            if schema.struct.field_by_name(name, cs) is None
            and (f := row_lineage_field(name, cs)) is not None
        }
        if not lineage:
            return schema.select(self.columns, cs)
        if self.metadata.format_version < 3:
            raise SchemaError(
                f"{', '.join(sorted(lineage))}: row lineage columns exist in format v3 "
                f"tables only, and this table is v{self.metadata.format_version}; leave them "
                "out, or upgrade the table with table.upgrade_format_version(3)"
            )
        fields = [
            lineage[name] if name in lineage else schema.select([name], cs).fields[0]
            for name in self.columns
        ]
        return Schema(*fields, schema_id=schema.schema_id)

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
            spec_id: _Memo(_partition_predicate(spec, schema, evaluators[spec_id].partition_filter))
            for spec_id, spec in md.specs_by_id.items()
        }
        residuals = {
            spec_id: _Memo(
                ResidualEvaluator(spec, schema, self.row_filter, self.case_sensitive).residual_for
            )
            for spec_id, spec in md.specs_by_id.items()
        }
        data: list[ManifestEntry] = []
        deletes: list[ManifestEntry] = []
        is_data = DataFileContent.DATA
        survivors = _survivors(loaded, part_filters, metrics, residuals)
        decode_entries_together([(lazy, kept) for lazy, kept, _ in survivors])
        for lazy, kept_entries, judged in survivors:
            for i, e in zip(kept_entries, lazy.entries_at(kept_entries), strict=True):
                if e.data_file.content is is_data:
                    if i in judged or metrics.eval(e.data_file):
                        data.append(e)
                else:
                    deletes.append(e)
        index = DeleteFileIndex(deletes, md.specs_by_id)
        split_size = TableProperties({**md.properties, **self.options}).as_int(
            "read.split.target-size"
        )
        tasks: list[FileScanTask] = []
        for e in data:
            f = e.data_file
            applicable = tuple(d.data_file for d in index.for_data_file(e)) if deletes else ()
            residual = residuals[f.spec_id](f.partition)
            for start, length in _splits(f, split_size):
                tasks.append(
                    assemble(
                        FileScanTask,
                        {
                            "file": f,
                            "residual": residual,
                            "delete_files": applicable,
                            "start": start,
                            "length": length,
                            "spec_id": f.spec_id,
                            "data_sequence_number": e.sequence_number,
                        },
                    )
                )
        return tasks


def _survivors(
    loaded: Sequence[LazyManifest],
    part_filters: dict[int, _Memo],
    metrics: InclusiveMetricsEvaluator,
    residuals: dict[int, _Memo],
) -> list[tuple[LazyManifest, list[int], set[int]]]:
    """Per manifest, the live entries its partition filter keeps less those the
    metrics evaluator rules out before they are decoded in full, and the set of the
    kept entries it judged that way (the others are judged on their full data files).
    Entries of manifests the columnar reader read in one call are judged together on arrays
    (``judge_together``, reading the metrics of the fields ``_undecided`` leaves),
    else manifest by manifest (``_metrics_survivors``)."""
    kept_by = [
        _partition_survivors(lazy, part_filters[lazy.manifest.partition_spec_id]) for lazy in loaded
    ]
    by_metrics = [
        bool(metrics.field_ids) and lazy.manifest.content is ManifestContent.DATA for lazy in loaded
    ]
    conjunction = _conjunction(metrics.expr)
    reads = {spec_id: _reads(residual_for) for spec_id, residual_for in residuals.items()}
    verdicts = judge_together(
        [
            (lazy, kept if use else [])
            for lazy, kept, use in zip(loaded, kept_by, by_metrics, strict=True)
        ],
        # (asked only of the manifests with entries to judge: none in a repeated plan)
        lambda k: (
            _undecided(loaded[k], kept_by[k], metrics.field_ids, reads)
            if conjunction
            else metrics.field_ids
        ),
        metrics.eval_arrays,
    )
    out: list[tuple[LazyManifest, list[int], set[int]]] = []
    for lazy, kept, use, verdict in zip(loaded, kept_by, by_metrics, verdicts, strict=True):
        judged: set[int] = set()  # entries the metrics evaluator already kept
        if verdict is not None:
            judged = {i for i, ok in verdict.items() if ok}
            kept = [i for i in kept if verdict.get(i, True)]
        elif use:
            kept, judged = _metrics_survivors(lazy, kept, metrics)
        out.append((lazy, kept, judged))
    return out


def _conjunction(expr: BooleanExpression) -> bool:
    """Whether the (bound, NOT-free) ``expr`` is predicates joined by AND alone."""
    if isinstance(expr, And):
        return _conjunction(expr.left) and _conjunction(expr.right)
    return not isinstance(expr, Or)


def _undecided(
    lazy: LazyManifest, indices: list[int], field_ids: frozenset[int], reads: dict[int, _Memo]
) -> frozenset[int]:
    """Of ``field_ids``, those the residual filters of the partitions of the entries at
    ``indices`` still read. For a filter of predicates joined by AND, each predicate on
    the others holds for every row of such an entry (its partition proves it; a
    predicate the partition proves false would have removed the entry), so its metrics,
    which agree with the partition, cannot rule the file out: unknown metrics give the
    same verdict, and are not read (a one-day filter on a day-partitioned table reads the
    metrics of the other columns only). ``reads`` gives per spec the field ids the
    residual of a partition reads."""
    read_by = reads[lazy.manifest.partition_spec_id]
    partitions = lazy.partitions
    try:
        distinct = {partitions[i] for i in indices}
    except TypeError:  # an unhashable value: the residuals are not memoized
        return field_ids
    return field_ids & frozenset().union(*map(read_by, distinct))


def _reads(residual_for: _Memo) -> _Memo:
    """The field ids the residual filter of a partition reads, remembered per partition."""
    return _Memo(lambda p: frozenset(ref.field_id for ref in references(residual_for(p))))


def _partition_survivors(lazy: LazyManifest, matches: _Memo) -> list[int]:
    """The live entries of ``lazy`` whose partition ``matches``: the filter evaluated
    once per distinct partition, the entries picked at C speed (a plan of a 10,000-file
    table reads every entry's head)."""
    partitions = lazy.partitions
    flags: Iterable[bool]
    try:
        distinct = set(partitions)
    except TypeError:  # an unhashable value: one by one
        flags = map(matches, partitions)
    else:
        flags = map({p for p in distinct if matches(p)}.__contains__, partitions)
    gone = ManifestEntryStatus.DELETED
    if gone in lazy.statuses:
        flags = [f and s is not gone for f, s in zip(flags, lazy.statuses, strict=True)]
    return list(compress(range(len(partitions)), flags))


def _metrics_survivors(
    lazy: LazyManifest, indices: list[int], metrics: InclusiveMetricsEvaluator
) -> tuple[list[int], set[int]]:
    """``indices`` less the entries that the metrics evaluator rules out, judged from
    the few metrics it reads where the entries are not decoded in full yet, so that
    only files that may match are (the evaluator decides exactly as on full files);
    and the set of entries it judged and kept that way. The manifest's entries are
    judged all at once on arrays where the filter allows, else one by one."""
    pending = [i for i in indices if not lazy.is_decoded(i)]
    if len(pending) < METRICS_FIRST_FROM:
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


def _partition_predicate(spec: PartitionSpec, schema: Schema, projected: BooleanExpression) -> Any:
    """The test of a partition tuple of ``spec`` by the row filter ``projected`` onto
    the partition (the manifest evaluator's projection: made once)."""
    try:
        ptype = spec.partition_type(schema)
    except ValidationError:
        return lambda _p: True
    return evaluator(ptype, projected)
