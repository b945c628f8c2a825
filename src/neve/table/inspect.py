"""Metadata tables as Arrow tables: snapshots, history, refs, manifests, files, entries,
partitions and the metadata log, with the columns Iceberg-Java's metadata tables expose.

Tables that read manifests (manifests, files, entries, partitions) take a
``snapshot_id`` (None: the current snapshot; an empty table when the table has none).
Partition tuples are shown in the table's combined partition type: every field of every
spec, by field id, named as in the newest spec that has it, all optional; a file written
with an older spec has nulls for the fields its spec lacks. Like Iceberg-Java, the
``partition`` column is left out when no spec has any field.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import pyarrow as pa

from neve.arrow.schema import to_arrow_type, values_to_arrow
from neve.errors import NoSuchSnapshotError, SchemaError
from neve.io.fileio import FileIO
from neve.planning.manifests import read_manifest, read_manifest_list
from neve.planning.scan import live_entries
from neve.spec.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from neve.spec.partition import PartitionField
from neve.spec.schema import walk_fields
from neve.spec.snapshot import Snapshot
from neve.spec.table_metadata import TableMetadata
from neve.spec.types import IcebergType, NestedField, PrimitiveType, StructType
from neve.spec.values import from_bytes

__all__ = ["InspectTable", "InspectedTable"]

_TIMESTAMP_MS = pa.timestamp("ms", tz="UTC")
_INT_MAP = pa.map_(pa.int32(), pa.int64())
_BYTES_MAP = pa.map_(pa.int32(), pa.binary())


class InspectedTable(Protocol):
    """What the metadata tables read of a table handle."""

    @property
    def io(self) -> FileIO: ...

    @property
    def metadata(self) -> TableMetadata: ...

    @property
    def metadata_location(self) -> str: ...


class InspectTable:
    """The metadata tables of one table handle (``table.inspect``). Each method reads the
    handle's metadata as it is when called, so a refreshed handle gives fresh tables."""

    def __init__(self, table: InspectedTable) -> None:
        self._table = table

    @property
    def _md(self) -> TableMetadata:
        return self._table.metadata

    # -- tables from the metadata file -----------------------------------------------

    def snapshots(self) -> pa.Table:
        """One row per snapshot still in the metadata: when it was committed, its
        parent, operation, manifest list and summary (without the operation key)."""
        snaps = self._md.snapshots
        schema = pa.schema(
            [
                pa.field("committed_at", _TIMESTAMP_MS, nullable=False),
                pa.field("snapshot_id", pa.int64(), nullable=False),
                pa.field("parent_id", pa.int64()),
                pa.field("operation", pa.string()),
                pa.field("manifest_list", pa.string(), nullable=False),
                pa.field("summary", pa.map_(pa.string(), pa.string())),
            ]
        )
        return _table(
            schema,
            [
                [s.timestamp_ms for s in snaps],
                [s.snapshot_id for s in snaps],
                [s.parent_snapshot_id for s in snaps],
                [s.operation.value for s in snaps],
                [s.manifest_list for s in snaps],
                [sorted(s.summary.items()) for s in snaps],
            ],
        )

    def history(self) -> pa.Table:
        """The snapshot log: when each snapshot became current on main, its parent, and
        whether it is an ancestor of the current snapshot (false after a rollback)."""
        md = self._md
        ancestors = {s.snapshot_id for s in md.ancestors(md.current_snapshot_id)}
        log = md.snapshot_log
        parents: list[int | None] = []
        for e in log:
            snap = md.snapshot_by_id(e.snapshot_id) if md.has_snapshot(e.snapshot_id) else None
            parents.append(snap.parent_snapshot_id if snap is not None else None)
        schema = pa.schema(
            [
                pa.field("made_current_at", _TIMESTAMP_MS, nullable=False),
                pa.field("snapshot_id", pa.int64(), nullable=False),
                pa.field("parent_id", pa.int64()),
                pa.field("is_current_ancestor", pa.bool_(), nullable=False),
            ]
        )
        return _table(
            schema,
            [
                [e.timestamp_ms for e in log],
                [e.snapshot_id for e in log],
                parents,
                [e.snapshot_id in ancestors for e in log],
            ],
        )

    def refs(self) -> pa.Table:
        """Branches and tags with their snapshot and retention settings."""
        refs = list(self._md.refs.items())
        schema = pa.schema(
            [
                pa.field("name", pa.string(), nullable=False),
                pa.field("type", pa.string(), nullable=False),
                pa.field("snapshot_id", pa.int64(), nullable=False),
                pa.field("max_reference_age_in_ms", pa.int64()),
                pa.field("min_snapshots_to_keep", pa.int32()),
                pa.field("max_snapshot_age_in_ms", pa.int64()),
            ]
        )
        return _table(
            schema,
            [
                [name for name, _ in refs],
                [r.ref_type.value.upper() for _, r in refs],
                [r.snapshot_id for _, r in refs],
                [r.max_ref_age_ms for _, r in refs],
                [r.min_snapshots_to_keep for _, r in refs],
                [r.max_snapshot_age_ms for _, r in refs],
            ],
        )

    def metadata_log_entries(self) -> pa.Table:
        """Every earlier metadata file of the log, then the current one, each with the
        snapshot that was current on main at its time (null before the first)."""
        md = self._md
        rows = [(e.timestamp_ms, e.metadata_file) for e in md.metadata_log]
        rows.append((md.last_updated_ms, self._table.metadata_location))
        latest = [self._current_at(ts) for ts, _ in rows]
        schema = pa.schema(
            [
                pa.field("timestamp", _TIMESTAMP_MS, nullable=False),
                pa.field("file", pa.string(), nullable=False),
                pa.field("latest_snapshot_id", pa.int64()),
                pa.field("latest_schema_id", pa.int32()),
                pa.field("latest_sequence_number", pa.int64()),
            ]
        )
        return _table(
            schema,
            [
                [ts for ts, _ in rows],
                [path for _, path in rows],
                [s.snapshot_id if s else None for s in latest],
                [s.schema_id if s else None for s in latest],
                [s.sequence_number if s else None for s in latest],
            ],
        )

    def _current_at(self, timestamp_ms: int) -> Snapshot | None:
        try:
            return self._md.snapshot_as_of(timestamp_ms)
        except NoSuchSnapshotError:  # before the first snapshot, or since expired
            return None

    # -- tables from manifests -------------------------------------------------------

    def manifests(self, snapshot_id: int | None = None) -> pa.Table:
        """The manifests of a snapshot, with file counts split by content (data or
        delete) and partition summaries whose bounds are human-readable strings."""
        manifests = self._manifest_list(snapshot_id)
        summary_type = pa.struct(
            [
                pa.field("contains_null", pa.bool_(), nullable=False),
                pa.field("contains_nan", pa.bool_()),
                pa.field("lower_bound", pa.string()),
                pa.field("upper_bound", pa.string()),
            ]
        )
        schema = pa.schema(
            [
                pa.field("content", pa.int8(), nullable=False),
                pa.field("path", pa.string(), nullable=False),
                pa.field("length", pa.int64(), nullable=False),
                pa.field("partition_spec_id", pa.int32(), nullable=False),
                pa.field("added_snapshot_id", pa.int64(), nullable=False),
                pa.field("added_data_files_count", pa.int32(), nullable=False),
                pa.field("existing_data_files_count", pa.int32(), nullable=False),
                pa.field("deleted_data_files_count", pa.int32(), nullable=False),
                pa.field("added_delete_files_count", pa.int32(), nullable=False),
                pa.field("existing_delete_files_count", pa.int32(), nullable=False),
                pa.field("deleted_delete_files_count", pa.int32(), nullable=False),
                pa.field("partition_summaries", pa.list_(summary_type), nullable=False),
            ]
        )

        def counts(m: ManifestFile, content: ManifestContent) -> list[int]:
            if m.content is not content:
                return [0, 0, 0]
            return [m.added_files_count, m.existing_files_count, m.deleted_files_count]

        data = [counts(m, ManifestContent.DATA) for m in manifests]
        deletes = [counts(m, ManifestContent.DELETES) for m in manifests]
        return _table(
            schema,
            [
                [int(m.content) for m in manifests],
                [m.manifest_path for m in manifests],
                [m.manifest_length for m in manifests],
                [m.partition_spec_id for m in manifests],
                [m.added_snapshot_id for m in manifests],
                *([c[i] for c in data] for i in range(3)),
                *([c[i] for c in deletes] for i in range(3)),
                [self._summaries(m) for m in manifests],
            ],
        )

    def _summaries(self, m: ManifestFile) -> list[dict[str, Any]]:
        spec = self._md.spec_by_id(m.partition_spec_id)
        out = []
        for pf, s in zip(spec.fields, m.partitions or (), strict=False):
            t = self._field_result_type(pf)

            def human(bound: bytes | None, pf: PartitionField = pf, t: IcebergType = t) -> Any:
                if bound is None or not isinstance(t, PrimitiveType):
                    return None
                return pf.transform.to_human_string(t, from_bytes(t, bound))

            out.append(
                {
                    "contains_null": s.contains_null,
                    "contains_nan": s.contains_nan,
                    "lower_bound": human(s.lower_bound),
                    "upper_bound": human(s.upper_bound),
                }
            )
        return out

    def files(self, snapshot_id: int | None = None) -> pa.Table:
        """The live data and delete files of a snapshot, with readable metrics."""
        return self._files(snapshot_id, None)

    def data_files(self, snapshot_id: int | None = None) -> pa.Table:
        """Like :meth:`files`, data files only."""
        return self._files(snapshot_id, ManifestContent.DATA)

    def delete_files(self, snapshot_id: int | None = None) -> pa.Table:
        """Like :meth:`files`, position and equality delete files only."""
        return self._files(snapshot_id, ManifestContent.DELETES)

    def _files(self, snapshot_id: int | None, content: ManifestContent | None) -> pa.Table:
        manifests = self._manifest_list(snapshot_id)
        if content is not None:
            manifests = [m for m in manifests if m.content is content]
        files = [e.data_file for e in live_entries(self._table.io, manifests, self._md)]
        fields, arrays = self._data_file_columns(files)
        metrics = self._readable_metrics(files)
        return pa.Table.from_arrays(
            [*arrays, metrics],
            schema=pa.schema([*fields, pa.field("readable_metrics", metrics.type)]),
        )

    def entries(self, snapshot_id: int | None = None) -> pa.Table:
        """Every entry of the snapshot's manifests, deleted ones too (status 0 existing,
        1 added, 2 deleted), with the file as a ``data_file`` struct."""
        entries = self._all_entries(self._manifest_list(snapshot_id))
        files = [e.data_file for e in entries]
        fields, arrays = self._data_file_columns(files)
        data_file = pa.StructArray.from_arrays(arrays, fields=fields)
        metrics = self._readable_metrics(files)
        schema = pa.schema(
            [
                pa.field("status", pa.int8(), nullable=False),
                pa.field("snapshot_id", pa.int64()),
                pa.field("sequence_number", pa.int64()),
                pa.field("file_sequence_number", pa.int64()),
                pa.field("data_file", data_file.type, nullable=False),
                pa.field("readable_metrics", metrics.type),
            ]
        )
        return pa.Table.from_arrays(
            [
                pa.array([int(e.status) for e in entries], pa.int8()),
                pa.array([e.snapshot_id for e in entries], pa.int64()),
                pa.array([e.sequence_number for e in entries], pa.int64()),
                pa.array([e.file_sequence_number for e in entries], pa.int64()),
                data_file,
                metrics,
            ],
            schema=schema,
        )

    def partitions(self, snapshot_id: int | None = None) -> pa.Table:
        """One row per partition of a snapshot's live files: record and file counts of
        data, position-delete and equality-delete files, data size, and the latest
        snapshot that added a file to it. Partitions are told apart by their values
        in the combined partition type; ``spec_id`` is the newest spec among their
        files. An unpartitioned table has one row (when it has files) and no
        ``partition``/``spec_id`` columns."""
        md = self._md
        ptype = self._partition_type()
        entries = live_entries(self._table.io, self._manifest_list(snapshot_id), md)
        project = self._projector(ptype)
        rows: dict[tuple[Any, ...], _PartitionRow] = {}
        for e in entries:
            f = e.data_file
            key = project(f)
            row = rows.get(key)
            if row is None:
                row = rows[key] = _PartitionRow(key, f.spec_id)
            snap = (
                md.snapshot_by_id(e.snapshot_id)
                if e.snapshot_id is not None and md.has_snapshot(e.snapshot_id)
                else None
            )
            row.add(f, snap)
        out = list(rows.values())
        fields = [
            pa.field("record_count", pa.int64(), nullable=False),
            pa.field("file_count", pa.int32(), nullable=False),
            pa.field("total_data_file_size_in_bytes", pa.int64(), nullable=False),
            pa.field("position_delete_record_count", pa.int64(), nullable=False),
            pa.field("position_delete_file_count", pa.int32(), nullable=False),
            pa.field("equality_delete_record_count", pa.int64(), nullable=False),
            pa.field("equality_delete_file_count", pa.int32(), nullable=False),
            pa.field("last_updated_at", _TIMESTAMP_MS),
            pa.field("last_updated_snapshot_id", pa.int64()),
        ]
        arrays: list[pa.Array] = [
            pa.array([getattr(r, f.name) for r in out], f.type) for f in fields
        ]
        if ptype.fields:
            part = self._struct_array(ptype, [r.partition for r in out])
            fields = [
                pa.field("partition", part.type, nullable=False),
                pa.field("spec_id", pa.int32(), nullable=False),
                *fields,
            ]
            arrays = [part, pa.array([r.spec_id for r in out], pa.int32()), *arrays]
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    # -- helpers ---------------------------------------------------------------------

    def _manifest_list(self, snapshot_id: int | None) -> list[ManifestFile]:
        md = self._md
        snap = md.snapshot_by_id(snapshot_id) if snapshot_id is not None else md.current_snapshot()
        if snap is None:
            return []
        return read_manifest_list(self._table.io, snap.manifest_list)

    def _all_entries(self, manifests: Sequence[ManifestFile]) -> list[ManifestEntry]:
        io, specs = self._table.io, self._md.specs_by_id

        def read(m: ManifestFile) -> list[ManifestEntry]:
            return read_manifest(io, m, specs_by_id=specs)

        if len(manifests) <= 1:
            return [e for m in manifests for e in read(m)]
        with ThreadPoolExecutor(max_workers=min(8, (os.cpu_count() or 2) * 2)) as ex:
            return [e for part in ex.map(read, manifests) for e in part]

    def _field_result_type(self, pf: PartitionField) -> IcebergType:
        """The partition field's type, from its source column in the current schema, or
        in the newest older schema that still has it (a dropped source column)."""
        md = self._md
        for schema in (md.schema(), *reversed(md.schemas)):
            src = schema.find_field_or_none(pf.source_id)
            if src is not None:
                return pf.transform.result_type(src.field_type)
        raise SchemaError(
            f"partition field {pf.name!r} refers to column id {pf.source_id}, which no "
            "schema of the table has; the table metadata is inconsistent"
        )

    def _partition_type(self) -> StructType:
        """Every partition field of every spec, by field id, named as in the newest spec
        that has it; all optional (as Iceberg-Java's ``Partitioning.partitionType``)."""
        chosen: dict[int, PartitionField] = {}
        for spec in sorted(self._md.partition_specs, key=lambda s: s.spec_id, reverse=True):
            for pf in spec.fields:
                chosen.setdefault(pf.field_id, pf)
        return StructType(
            *(
                NestedField(fid, chosen[fid].name, self._field_result_type(chosen[fid]), False)
                for fid in sorted(chosen)
            )
        )

    def _projector(self, ptype: StructType) -> Callable[[DataFile], tuple[Any, ...]]:
        """Maps a file's partition tuple (its own spec's order) into ``ptype``'s order."""
        positions: dict[int, list[int | None]] = {}
        for spec_id, spec in self._md.specs_by_id.items():
            index = {pf.field_id: i for i, pf in enumerate(spec.fields)}
            positions[spec_id] = [index.get(f.field_id) for f in ptype.fields]

        def project(f: DataFile) -> tuple[Any, ...]:
            return tuple(None if i is None else f.partition[i] for i in positions[f.spec_id])

        return project

    def _struct_array(self, t: StructType, rows: Sequence[tuple[Any, ...]]) -> pa.StructArray:
        children = [
            values_to_arrow([r[i] for r in rows], f.field_type, large_types=False)
            for i, f in enumerate(t.fields)
        ]
        arrow_type = to_arrow_type(t, large_types=False)
        return pa.StructArray.from_arrays(children, fields=list(arrow_type))

    def _data_file_columns(
        self, files: Sequence[DataFile]
    ) -> tuple[list[pa.Field], list[pa.Array]]:
        """The columns of the data_file struct (spec "Manifests"), in Iceberg-Java's
        order; ``partition`` only when the table has partition fields."""

        def col(name: str, t: pa.DataType, values: list[Any], nullable: bool = True) -> None:
            fields.append(pa.field(name, t, nullable=nullable))
            arrays.append(pa.array(values, t))

        def kv(maps: list[Mapping[int, Any] | None]) -> list[Any]:
            return [None if m is None else sorted(m.items()) for m in maps]

        fields: list[pa.Field] = []
        arrays: list[pa.Array] = []
        col("content", pa.int8(), [int(f.content) for f in files], False)
        col("file_path", pa.string(), [f.file_path for f in files], False)
        col("file_format", pa.string(), [f.file_format.value for f in files], False)
        col("spec_id", pa.int32(), [f.spec_id for f in files], False)
        ptype = self._partition_type()
        if ptype.fields:
            project = self._projector(ptype)
            part = self._struct_array(ptype, [project(f) for f in files])
            fields.append(pa.field("partition", part.type, nullable=False))
            arrays.append(part)
        col("record_count", pa.int64(), [f.record_count for f in files], False)
        col("file_size_in_bytes", pa.int64(), [f.file_size_in_bytes for f in files], False)
        col("column_sizes", _INT_MAP, kv([f.column_sizes for f in files]))
        col("value_counts", _INT_MAP, kv([f.value_counts for f in files]))
        col("null_value_counts", _INT_MAP, kv([f.null_value_counts for f in files]))
        col("nan_value_counts", _INT_MAP, kv([f.nan_value_counts for f in files]))
        col("lower_bounds", _BYTES_MAP, kv([f.lower_bounds for f in files]))
        col("upper_bounds", _BYTES_MAP, kv([f.upper_bounds for f in files]))
        col("key_metadata", pa.binary(), [f.key_metadata for f in files])
        col("split_offsets", pa.list_(pa.int64()), [_opt_list(f.split_offsets) for f in files])
        col("equality_ids", pa.list_(pa.int32()), [_opt_list(f.equality_ids) for f in files])
        col("sort_order_id", pa.int32(), [f.sort_order_id for f in files])
        col("first_row_id", pa.int64(), [f.first_row_id for f in files])
        col("referenced_data_file", pa.string(), [f.referenced_data_file for f in files])
        col("content_offset", pa.int64(), [f.content_offset for f in files])
        col("content_size_in_bytes", pa.int64(), [f.content_size_in_bytes for f in files])
        return fields, arrays

    def _readable_metrics(self, files: Sequence[DataFile]) -> pa.StructArray:
        """Per primitive column of the current schema (by full dotted name, nested ones
        too), the file's metrics for it with bounds decoded into the column's type."""
        columns = [
            (name, f)
            for name, f, _ in walk_fields(self._md.schema().fields)
            if isinstance(f.field_type, PrimitiveType)
        ]
        structs: list[pa.Array] = []
        fields: list[pa.Field] = []
        for name, field in columns:
            fid, t = field.field_id, field.field_type
            assert isinstance(t, PrimitiveType)

            def count(
                maps: Callable[[DataFile], Mapping[int, int] | None], fid: int = fid
            ) -> pa.Array:
                return pa.array([(maps(f) or {}).get(fid) for f in files], pa.int64())

            def bound(
                maps: Callable[[DataFile], Mapping[int, bytes] | None],
                fid: int = fid,
                t: PrimitiveType = t,
            ) -> pa.Array:
                raw = [(maps(f) or {}).get(fid) for f in files]
                values = [None if b is None else from_bytes(t, b) for b in raw]
                return values_to_arrow(values, t, large_types=False)

            children = [
                count(lambda f: f.column_sizes),
                count(lambda f: f.value_counts),
                count(lambda f: f.null_value_counts),
                count(lambda f: f.nan_value_counts),
                bound(lambda f: f.lower_bounds),
                bound(lambda f: f.upper_bounds),
            ]
            metric_fields = [
                pa.field(n, a.type)
                for n, a in zip(
                    (
                        "column_size",
                        "value_count",
                        "null_value_count",
                        "nan_value_count",
                        "lower_bound",
                        "upper_bound",
                    ),
                    children,
                    strict=True,
                )
            ]
            arr = pa.StructArray.from_arrays(children, fields=metric_fields)
            structs.append(arr)
            fields.append(pa.field(name, arr.type, nullable=False))
        if not fields:
            return pa.array([{}] * len(files), pa.struct([]))
        return pa.StructArray.from_arrays(structs, fields=fields)


class _PartitionRow:
    """Running totals of one row of the partitions table."""

    def __init__(self, partition: tuple[Any, ...], spec_id: int) -> None:
        self.partition = partition
        self.spec_id = spec_id
        self.record_count = 0
        self.file_count = 0
        self.total_data_file_size_in_bytes = 0
        self.position_delete_record_count = 0
        self.position_delete_file_count = 0
        self.equality_delete_record_count = 0
        self.equality_delete_file_count = 0
        self.last_updated_at: int | None = None
        self.last_updated_snapshot_id: int | None = None

    def add(self, f: DataFile, snap: Snapshot | None) -> None:
        self.spec_id = max(self.spec_id, f.spec_id)
        if snap is not None and (
            self.last_updated_at is None or snap.timestamp_ms > self.last_updated_at
        ):
            self.last_updated_at = snap.timestamp_ms
            self.last_updated_snapshot_id = snap.snapshot_id
        if f.content is DataFileContent.DATA:
            self.record_count += f.record_count
            self.file_count += 1
            self.total_data_file_size_in_bytes += f.file_size_in_bytes
        elif f.content is DataFileContent.POSITION_DELETES:
            self.position_delete_record_count += f.record_count
            self.position_delete_file_count += 1
        else:
            self.equality_delete_record_count += f.record_count
            self.equality_delete_file_count += 1


def _opt_list(values: tuple[int, ...] | None) -> list[int] | None:
    return None if values is None else list(values)


def _table(schema: pa.Schema, columns: Sequence[Sequence[Any]]) -> pa.Table:
    return pa.Table.from_arrays(
        [pa.array(list(c), f.type) for c, f in zip(columns, schema, strict=True)], schema=schema
    )
