"""Applying updates to table metadata: the only way metadata changes.

:func:`apply_updates` is one dispatch over the update types of :mod:`neve.spec.updates`.
It enforces the spec's invariants (ids unique, refs point at known snapshots, sequence
numbers increase, ``main`` equals ``current-snapshot-id``) and keeps the snapshot log.
:func:`next_metadata` stamps the result for writing: update time and metadata log.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from neve.errors import (
    NoSuchSnapshotError,
    SchemaError,
    UnsupportedFormatVersionError,
    ValidationError,
)
from neve.spec.merge_engine import check_merge_properties
from neve.spec.refs import MAIN_BRANCH, SnapshotRefType
from neve.spec.snapshot import MetadataLogEntry, SnapshotLogEntry
from neve.spec.table_metadata import TableMetadata
from neve.spec.updates import (
    LAST_ADDED,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AddSpec,
    RemovePartitionSpecs,
    RemoveProperties,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetProperties,
    SetSnapshotRef,
    TableUpdate,
    UpgradeFormatVersion,
)
from neve.spec.versions import SUPPORTED_FORMAT_VERSIONS

__all__ = ["apply_updates", "next_metadata"]


def _now_ms() -> int:
    return int(time.time() * 1000)


def apply_updates(base: TableMetadata, updates: Iterable[TableUpdate]) -> TableMetadata:
    """Apply updates in order and return the new metadata (the base is unchanged)."""
    md = base
    check_merge = False
    last_schema: int | None = None
    last_spec: int | None = None
    last_order: int | None = None
    for u in updates:
        if isinstance(u, AddSchema):
            md, last_schema = _add_schema(md, u)
        elif isinstance(u, SetCurrentSchema):
            sid = last_schema if u.schema_id == LAST_ADDED else u.schema_id
            if sid is None:
                raise SchemaError("set-current-schema -1 needs a schema added in the same commit")
            md.schema_by_id(sid)
            md = md.with_(current_schema_id=sid)
            check_merge = True
        elif isinstance(u, AddSpec):
            md, last_spec = _add_spec(md, u)
        elif isinstance(u, SetDefaultSpec):
            spid = last_spec if u.spec_id == LAST_ADDED else u.spec_id
            if spid is None or spid not in md.specs_by_id:
                raise ValidationError(f"partition spec {u.spec_id} is not in the table")
            md = md.with_(default_spec_id=spid)
        elif isinstance(u, AddSortOrder):
            md, last_order = _add_sort_order(md, u)
        elif isinstance(u, SetDefaultSortOrder):
            oid = last_order if u.sort_order_id == LAST_ADDED else u.sort_order_id
            if oid is None or all(o.order_id != oid for o in md.sort_orders):
                raise ValidationError(f"sort order {u.sort_order_id} is not in the table")
            md = md.with_(default_sort_order_id=oid)
        elif isinstance(u, AddSnapshot):
            md = _add_snapshot(md, u)
        elif isinstance(u, SetSnapshotRef):
            md = _set_ref(md, u)
        elif isinstance(u, RemoveSnapshotRef):
            md = _remove_ref(md, u.ref_name)
        elif isinstance(u, RemoveSnapshots):
            md = _remove_snapshots(md, set(u.snapshot_ids))
        elif isinstance(u, RemovePartitionSpecs):
            md = _remove_specs(md, set(u.spec_ids))
        elif isinstance(u, RemoveSchemas):
            md = _remove_schemas(md, set(u.schema_ids))
        elif isinstance(u, SetProperties):
            props = dict(md.properties)
            props.update(u.updates)
            md = md.with_(properties=props)
            check_merge = True
        elif isinstance(u, RemoveProperties):
            props = {k: v for k, v in md.properties.items() if k not in set(u.removals)}
            md = md.with_(properties=props)
            check_merge = True
        elif isinstance(u, UpgradeFormatVersion):
            md = _upgrade(md, u.format_version)
        else:  # pragma: no cover - all update types are handled above
            raise ValidationError(f"unknown update {u!r}")
    if check_merge:
        # merge-engine properties name columns: checked when either side changes
        check_merge_properties(md.properties, md.schema())
    return md


def _add_schema(md: TableMetadata, u: AddSchema) -> tuple[TableMetadata, int]:
    u.schema.validate_identifier_fields()
    for existing in md.schemas:
        if existing.same_structure(u.schema):
            return md, existing.schema_id
    new_id = max((s.schema_id for s in md.schemas), default=-1) + 1
    schema = u.schema.with_id(new_id)
    last_col = max(md.last_column_id, u.last_column_id, schema.highest_field_id)
    return md.with_(schemas=(*md.schemas, schema), last_column_id=last_col), new_id


def _add_spec(md: TableMetadata, u: AddSpec) -> tuple[TableMetadata, int]:
    schema = md.schema()
    u.spec.partition_type(schema)  # validates source columns and transforms
    for f in u.spec.fields:
        src = schema.find_field(f.source_id)
        if not f.transform.can_transform(src.field_type):
            raise SchemaError(
                f"transform {f.transform} cannot apply to column {src.name!r} of type "
                f"{src.field_type}"
            )
    for existing in md.partition_specs:
        if existing.compatible_with(u.spec):
            return md, existing.spec_id
    new_id = max((s.spec_id for s in md.partition_specs), default=-1) + 1
    spec = replace(u.spec, spec_id=new_id)
    last = max(md.last_partition_id, spec.last_assigned_field_id)
    return md.with_(partition_specs=(*md.partition_specs, spec), last_partition_id=last), new_id


def _add_sort_order(md: TableMetadata, u: AddSortOrder) -> tuple[TableMetadata, int]:
    if u.sort_order.is_unsorted:
        return md, 0
    for existing in md.sort_orders:
        if existing.fields == u.sort_order.fields:
            return md, existing.order_id
    new_id = max((o.order_id for o in md.sort_orders), default=0) + 1
    return md.with_(sort_orders=(*md.sort_orders, replace(u.sort_order, order_id=new_id))), new_id


def _add_snapshot(md: TableMetadata, u: AddSnapshot) -> TableMetadata:
    s = u.snapshot
    if md.has_snapshot(s.snapshot_id):
        raise ValidationError(f"snapshot {s.snapshot_id} exists already")
    if (
        md.format_version > 1
        and s.sequence_number <= md.last_sequence_number
        and s.parent_snapshot_id is not None
    ):
        raise ValidationError(
            f"snapshot sequence number {s.sequence_number} is not above the table's "
            f"last sequence number {md.last_sequence_number}"
        )
    changes: dict[str, Any] = {
        "snapshots": (*md.snapshots, s),
        "last_updated_ms": s.timestamp_ms,
    }
    if md.format_version > 1:
        changes["last_sequence_number"] = max(md.last_sequence_number, s.sequence_number)
    if md.format_version >= 3:
        # Row lineage: a snapshot's row ids start at or after the table's next-row-id,
        # or row ids would repeat (and next-row-id would move backwards).
        next_row_id = md.next_row_id or 0
        if s.first_row_id is None or s.first_row_id < next_row_id:
            raise ValidationError(
                f"snapshot {s.snapshot_id} has first-row-id {s.first_row_id}, behind the "
                f"table's next-row-id {next_row_id}; assign first-row-id = next-row-id"
            )
        changes["next_row_id"] = s.first_row_id + (s.added_rows or 0)
    return md.with_(**changes)


def _set_ref(md: TableMetadata, u: SetSnapshotRef) -> TableMetadata:
    ref = u.ref
    snap = md.snapshot_by_id(ref.snapshot_id)
    if md.refs.get(u.ref_name) == ref:
        return md  # unchanged: no new snapshot-log entry (as Iceberg-Java)
    if u.ref_name == MAIN_BRANCH and ref.ref_type is not SnapshotRefType.BRANCH:
        raise ValidationError("'main' must be a branch")
    refs = dict(md.refs)
    refs[u.ref_name] = ref
    changes: dict[str, Any] = {"refs": refs}
    if u.ref_name == MAIN_BRANCH:
        changes["current_snapshot_id"] = ref.snapshot_id
        ts = (
            snap.timestamp_ms
            if snap.snapshot_id not in {e.snapshot_id for e in md.snapshot_log}
            else _now_ms()
        )
        ts = max(ts, md.snapshot_log[-1].timestamp_ms if md.snapshot_log else ts)
        changes["snapshot_log"] = (*md.snapshot_log, SnapshotLogEntry(ts, ref.snapshot_id))
        changes["last_updated_ms"] = max(md.last_updated_ms, ts)
    return md.with_(**changes)


def _remove_ref(md: TableMetadata, name: str) -> TableMetadata:
    if name not in md.refs:
        raise NoSuchSnapshotError(f"no branch or tag named {name!r}")
    refs = {k: v for k, v in md.refs.items() if k != name}
    changes: dict[str, Any] = {"refs": refs}
    if name == MAIN_BRANCH:
        changes["current_snapshot_id"] = None
    return md.with_(**changes)


def _remove_snapshots(md: TableMetadata, ids: set[int]) -> TableMetadata:
    for name, r in md.refs.items():
        if r.snapshot_id in ids:
            raise ValidationError(
                f"cannot remove snapshot {r.snapshot_id}: ref {name!r} points at it; "
                "remove or move the ref first"
            )
    snapshots = tuple(s for s in md.snapshots if s.snapshot_id not in ids)
    kept = {s.snapshot_id for s in snapshots}
    # Spec "Table Metadata Fields", snapshot-log: when snapshots expire, all entries
    # before an expired snapshot are removed (that history is no longer valid).
    log: list[SnapshotLogEntry] = []
    for e in md.snapshot_log:
        if e.snapshot_id in kept:
            log.append(e)
        else:
            log.clear()
    return md.with_(
        snapshots=snapshots,
        snapshot_log=tuple(log),
        statistics=tuple(s for s in md.statistics if s.get("snapshot-id") not in ids),
        partition_statistics=tuple(
            s for s in md.partition_statistics if s.get("snapshot-id") not in ids
        ),
    )


def _remove_specs(md: TableMetadata, ids: set[int]) -> TableMetadata:
    if md.default_spec_id in ids:
        raise ValidationError(
            f"cannot remove partition spec {md.default_spec_id}: it is the default spec"
        )
    return md.with_(partition_specs=tuple(s for s in md.partition_specs if s.spec_id not in ids))


def _remove_schemas(md: TableMetadata, ids: set[int]) -> TableMetadata:
    if md.current_schema_id in ids:
        raise ValidationError(
            f"cannot remove schema {md.current_schema_id}: it is the current schema"
        )
    return md.with_(schemas=tuple(s for s in md.schemas if s.schema_id not in ids))


def _upgrade(md: TableMetadata, version: int) -> TableMetadata:
    if version not in SUPPORTED_FORMAT_VERSIONS:
        raise UnsupportedFormatVersionError(
            f"format version {version} is not supported; use 1, 2 or 3"
        )
    if version < md.format_version:
        raise UnsupportedFormatVersionError(
            f"cannot downgrade format version from {md.format_version} to {version}"
        )
    if version == md.format_version:
        return md
    changes: dict[str, Any] = {"format_version": version}
    if version >= 3 and md.next_row_id is None:
        changes["next_row_id"] = 0
    return md.with_(**changes)


def next_metadata(
    new: TableMetadata, base: TableMetadata | None, base_location: str | None
) -> TableMetadata:
    """Stamp metadata for writing as the version after ``base``: last-updated time and
    the metadata log entry for the previous file, capped by
    ``write.metadata.previous-versions-max`` (default 100)."""
    now = max(_now_ms(), new.last_updated_ms)
    log = tuple(new.metadata_log)
    if base is not None and base_location is not None:
        log = (*log, MetadataLogEntry(base.last_updated_ms, base_location))
        cap = new.props.as_int("write.metadata.previous-versions-max")
        if len(log) > cap:
            log = log[len(log) - max(cap, 1) :]
    return new.with_(last_updated_ms=now, metadata_log=log)
