"""JSON codec for table metadata and its parts (spec "Table Metadata Fields",
"Appendix C: JSON serialization"). Reads format versions 1-3; writes the version the
metadata says. Defaults are JSON single-value serialized (:mod:`neve.spec.values`).
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Mapping
from typing import Any

from neve.errors import SchemaError, UnsupportedFormatVersionError, ValidationError
from neve.spec import values
from neve.spec.encoded import EncodedCache
from neve.spec.partition import PARTITION_DATA_ID_START, PartitionField, PartitionSpec
from neve.spec.refs import MAIN_BRANCH, SnapshotRef, SnapshotRefType
from neve.spec.schema import Schema
from neve.spec.snapshot import MetadataLogEntry, Operation, Snapshot, SnapshotLogEntry
from neve.spec.sort_order import NullOrder, SortDirection, SortField, SortOrder
from neve.spec.table_metadata import TableMetadata
from neve.spec.transforms import parse_transform
from neve.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    parse_type,
)
from neve.spec.versions import SUPPORTED_FORMAT_VERSIONS

__all__ = [
    "metadata_from_bytes",
    "metadata_from_json",
    "metadata_to_bytes",
    "metadata_to_json",
    "partition_fields_to_json",
    "partition_spec_from_json",
    "partition_spec_to_json",
    "ref_from_json",
    "ref_to_json",
    "schema_from_json",
    "schema_to_json",
    "snapshot_from_json",
    "snapshot_to_json",
    "sort_order_from_json",
    "sort_order_to_json",
    "type_from_json",
    "type_to_json",
]

# -- types and schemas ---------------------------------------------------------------


def type_to_json(t: IcebergType) -> Any:
    if isinstance(t, PrimitiveType):
        return str(t)
    if isinstance(t, StructType):
        return {"type": "struct", "fields": [_field_to_json(f) for f in t.fields]}
    if isinstance(t, ListType):
        return {
            "type": "list",
            "element-id": t.element_id,
            "element": type_to_json(t.element_type),
            "element-required": t.element_required,
        }
    if isinstance(t, MapType):
        return {
            "type": "map",
            "key-id": t.key_id,
            "key": type_to_json(t.key_type),
            "value-id": t.value_id,
            "value": type_to_json(t.value_type),
            "value-required": t.value_required,
        }
    raise SchemaError(f"cannot serialize type {t!r}")


def _field_to_json(f: NestedField) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": f.field_id,
        "name": f.name,
        "required": f.required,
        "type": type_to_json(f.field_type),
    }
    if f.doc is not None:
        out["doc"] = f.doc
    if f.initial_default is not None:
        out["initial-default"] = values.to_json(f.field_type, f.initial_default)
    if f.write_default is not None:
        out["write-default"] = values.to_json(f.field_type, f.write_default)
    return out


def type_from_json(data: Any) -> IcebergType:
    if isinstance(data, str):
        return parse_type(data)
    if not isinstance(data, Mapping):
        raise SchemaError(f"invalid type in metadata: {data!r}")
    kind = data.get("type")
    if kind == "struct":
        return StructType(*(_field_from_json(f) for f in data["fields"]))
    if kind == "list":
        return ListType(
            int(data["element-id"]),
            type_from_json(data["element"]),
            bool(data.get("element-required", True)),
        )
    if kind == "map":
        return MapType(
            int(data["key-id"]),
            type_from_json(data["key"]),
            int(data["value-id"]),
            type_from_json(data["value"]),
            bool(data.get("value-required", True)),
        )
    raise SchemaError(f"unknown nested type {kind!r} in metadata")


def _field_from_json(data: Mapping[str, Any]) -> NestedField:
    ftype = type_from_json(data["type"])
    initial = data.get("initial-default")
    write = data.get("write-default")
    return NestedField(
        field_id=int(data["id"]),
        name=str(data["name"]),
        field_type=ftype,
        required=bool(data.get("required", False)),
        doc=data.get("doc"),
        initial_default=None if initial is None else values.from_json(ftype, initial),
        write_default=None if write is None else values.from_json(ftype, write),
    )


def schema_to_json(schema: Schema) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "struct",
        "schema-id": schema.schema_id,
        "fields": [_field_to_json(f) for f in schema.fields],
    }
    if schema.identifier_field_ids:
        out["identifier-field-ids"] = list(schema.identifier_field_ids)
    return out


def schema_from_json(data: Mapping[str, Any]) -> Schema:
    return Schema(
        *(_field_from_json(f) for f in data.get("fields", ())),
        schema_id=int(data.get("schema-id", 0)),
        identifier_field_ids=[int(i) for i in data.get("identifier-field-ids", ())],
    )


# -- partition specs and sort orders --------------------------------------------------


def partition_fields_to_json(spec: PartitionSpec) -> list[dict[str, Any]]:
    return [
        {
            "source-id": f.source_id,
            "field-id": f.field_id,
            "name": f.name,
            "transform": str(f.transform),
        }
        for f in spec.fields
    ]


def partition_spec_to_json(spec: PartitionSpec) -> dict[str, Any]:
    return {"spec-id": spec.spec_id, "fields": partition_fields_to_json(spec)}


def _partition_fields_from_json(
    fields: Any, next_id: int = PARTITION_DATA_ID_START
) -> tuple[PartitionField, ...]:
    out = []
    for f in fields:
        fid = f.get("field-id")
        if fid is None:  # v1 specs may omit field ids; assign sequentially
            fid = next_id
        next_id = int(fid) + 1
        source = f.get("source-id")
        if source is None:  # v3 multi-argument form
            ids = f.get("source-ids") or []
            if len(ids) != 1:
                raise ValidationError(
                    f"partition field {f.get('name')!r} has {len(ids)} source columns; "
                    "neve supports single-source transforms"
                )
            source = ids[0]
        out.append(
            PartitionField(
                source_id=int(source),
                field_id=int(fid),
                transform=parse_transform(str(f["transform"])),
                name=str(f["name"]),
            )
        )
    return tuple(out)


def partition_spec_from_json(data: Any) -> PartitionSpec:
    """Read a spec object, or a bare v1 list of fields (spec id 0)."""
    if isinstance(data, list):
        return PartitionSpec(0, _partition_fields_from_json(data))
    return PartitionSpec(int(data.get("spec-id", 0)), _partition_fields_from_json(data["fields"]))


def sort_order_to_json(order: SortOrder) -> dict[str, Any]:
    return {
        "order-id": order.order_id,
        "fields": [
            {
                "transform": str(f.transform),
                "source-id": f.source_id,
                "direction": f.direction.value,
                "null-order": f.null_order.value,
            }
            for f in order.fields
        ],
    }


def sort_order_from_json(data: Mapping[str, Any]) -> SortOrder:
    fields = []
    for f in data.get("fields", ()):
        source = f.get("source-id")
        if source is None:
            source = (f.get("source-ids") or [None])[0]
        fields.append(
            SortField(
                source_id=int(source),
                transform=parse_transform(str(f.get("transform", "identity"))),
                direction=SortDirection(f.get("direction", "asc")),
                null_order=NullOrder(f.get("null-order", "nulls-first")),
            )
        )
    return SortOrder(int(data.get("order-id", 0)), tuple(fields))


# -- snapshots and refs ---------------------------------------------------------------


def snapshot_to_json(s: Snapshot, format_version: int) -> dict[str, Any]:
    out: dict[str, Any] = {"snapshot-id": s.snapshot_id}
    if s.parent_snapshot_id is not None:
        out["parent-snapshot-id"] = s.parent_snapshot_id
    if format_version > 1:
        out["sequence-number"] = s.sequence_number
    out["timestamp-ms"] = s.timestamp_ms
    out["manifest-list"] = s.manifest_list
    summary = {"operation": s.operation.value}
    summary.update({k: v for k, v in s.summary.items() if k != "operation"})
    out["summary"] = summary
    if s.schema_id is not None:
        out["schema-id"] = s.schema_id
    if format_version >= 3:
        if s.first_row_id is not None:
            out["first-row-id"] = s.first_row_id
        if s.added_rows is not None:
            out["added-rows"] = s.added_rows
    return out


def snapshot_from_json(data: Mapping[str, Any]) -> Snapshot:
    summary = dict(data.get("summary") or {})
    op = summary.pop("operation", "append")
    if "manifest-list" not in data:
        raise UnsupportedFormatVersionError(
            f"snapshot {data.get('snapshot-id')} lists manifests inline (old v1 'manifests' "
            "field); rewrite the table's metadata with Iceberg-Java first"
        )
    return Snapshot(
        snapshot_id=int(data["snapshot-id"]),
        parent_snapshot_id=_opt_int(data.get("parent-snapshot-id")),
        sequence_number=int(data.get("sequence-number", 0)),
        timestamp_ms=int(data["timestamp-ms"]),
        manifest_list=str(data["manifest-list"]),
        operation=Operation(op),
        summary={str(k): str(v) for k, v in summary.items()},
        schema_id=_opt_int(data.get("schema-id")),
        first_row_id=_opt_int(data.get("first-row-id")),
        added_rows=_opt_int(data.get("added-rows")),
    )


def ref_to_json(r: SnapshotRef) -> dict[str, Any]:
    out: dict[str, Any] = {"snapshot-id": r.snapshot_id, "type": r.ref_type.value}
    if r.min_snapshots_to_keep is not None:
        out["min-snapshots-to-keep"] = r.min_snapshots_to_keep
    if r.max_snapshot_age_ms is not None:
        out["max-snapshot-age-ms"] = r.max_snapshot_age_ms
    if r.max_ref_age_ms is not None:
        out["max-ref-age-ms"] = r.max_ref_age_ms
    return out


def ref_from_json(data: Mapping[str, Any]) -> SnapshotRef:
    return SnapshotRef(
        snapshot_id=int(data["snapshot-id"]),
        ref_type=SnapshotRefType(data.get("type", "branch")),
        min_snapshots_to_keep=_opt_int(data.get("min-snapshots-to-keep")),
        max_snapshot_age_ms=_opt_int(data.get("max-snapshot-age-ms")),
        max_ref_age_ms=_opt_int(data.get("max-ref-age-ms")),
    )


def _opt_int(v: Any) -> int | None:
    return None if v is None else int(v)


# -- table metadata -------------------------------------------------------------------


def metadata_to_json(md: TableMetadata) -> dict[str, Any]:
    head, tail = _metadata_parts(md)
    snapshots = [snapshot_to_json(s, md.format_version) for s in md.snapshots]
    return {**head, "snapshots": snapshots, **tail}


def _metadata_parts(md: TableMetadata) -> tuple[dict[str, Any], dict[str, Any]]:
    """The fields of the metadata JSON before its snapshots and after them."""
    v = md.format_version
    if v not in SUPPORTED_FORMAT_VERSIONS:
        raise UnsupportedFormatVersionError(
            f"cannot write format version {v}; neve writes versions 1, 2 and 3"
        )
    out: dict[str, Any] = {
        "format-version": v,
        "table-uuid": md.table_uuid,
        "location": md.location,
    }
    if v > 1:
        out["last-sequence-number"] = md.last_sequence_number
    out["last-updated-ms"] = md.last_updated_ms
    out["last-column-id"] = md.last_column_id
    if v == 1:  # v1 readers look for the single current schema and spec
        out["schema"] = schema_to_json(md.schema())
    out["schemas"] = [schema_to_json(s) for s in md.schemas]
    out["current-schema-id"] = md.current_schema_id
    if v == 1:
        out["partition-spec"] = partition_fields_to_json(md.spec())
    out["partition-specs"] = [partition_spec_to_json(s) for s in md.partition_specs]
    out["default-spec-id"] = md.default_spec_id
    out["last-partition-id"] = md.last_partition_id
    out["properties"] = dict(md.properties)
    out["current-snapshot-id"] = (
        md.current_snapshot_id if md.current_snapshot_id is not None else -1
    )
    out["refs"] = {name: ref_to_json(r) for name, r in md.refs.items()}
    tail: dict[str, Any] = {
        "statistics": [dict(s) for s in md.statistics],
        "partition-statistics": [dict(s) for s in md.partition_statistics],
        "snapshot-log": [
            {"timestamp-ms": e.timestamp_ms, "snapshot-id": e.snapshot_id} for e in md.snapshot_log
        ],
        "metadata-log": [
            {"timestamp-ms": e.timestamp_ms, "metadata-file": e.metadata_file}
            for e in md.metadata_log
        ],
        "sort-orders": [sort_order_to_json(o) for o in md.sort_orders],
        "default-sort-order-id": md.default_sort_order_id,
    }
    if v >= 3:
        tail["next-row-id"] = md.next_row_id if md.next_row_id is not None else 0
    return out, tail


def metadata_from_json(data: Mapping[str, Any]) -> TableMetadata:
    try:
        version = int(data["format-version"])
    except (KeyError, TypeError, ValueError) as exc:
        raise UnsupportedFormatVersionError(
            "metadata has no valid 'format-version'; is this an Iceberg metadata file?"
        ) from exc
    if version not in SUPPORTED_FORMAT_VERSIONS:
        raise UnsupportedFormatVersionError(
            f"table metadata has format version {version}; neve reads versions 1, 2 and 3. "
            "Upgrade neve or read the table with an engine that supports that version"
        )
    try:
        return _metadata_from_json(version, data)
    except ValidationError:
        raise
    except KeyError as exc:
        raise ValidationError(f"table metadata is missing the required field {exc}") from exc
    except (TypeError, ValueError, AttributeError) as exc:
        raise ValidationError(
            f"table metadata is malformed ({exc}); check the file against the Iceberg spec"
        ) from exc


# Fields that the spec makes required from v2 on ("Table Metadata Fields"); v1 readers
# derive them from the v1 fields instead. v3 adds next-row-id (row lineage).
_REQUIRED_V2 = (
    "table-uuid",
    "last-sequence-number",
    "last-updated-ms",
    "schemas",
    "current-schema-id",
    "partition-specs",
    "default-spec-id",
    "last-partition-id",
    "sort-orders",
    "default-sort-order-id",
)


def _metadata_from_json(version: int, data: Mapping[str, Any]) -> TableMetadata:
    required = (*_REQUIRED_V2, "next-row-id") if version >= 3 else _REQUIRED_V2
    missing = [k for k in required if k not in data] if version >= 2 else []
    if missing:
        raise ValidationError(
            f"format v{version} table metadata is missing required fields: "
            f"{', '.join(missing)}; the file is incomplete or not written by an Iceberg writer"
        )
    # Schemas: v2+ has "schemas"; v1 may only have "schema".
    if "schemas" in data:
        schemas = tuple(schema_from_json(s) for s in data["schemas"])
        current_schema_id = int(data.get("current-schema-id", schemas[0].schema_id))
    else:
        schemas = (schema_from_json(data["schema"]),)
        current_schema_id = schemas[0].schema_id
    # Partition specs: v1 may only have "partition-spec" (a list of fields).
    if "partition-specs" in data:
        specs = tuple(partition_spec_from_json(s) for s in data["partition-specs"])
        default_spec_id = int(data.get("default-spec-id", specs[0].spec_id))
    else:
        specs = (partition_spec_from_json(data.get("partition-spec", [])),)
        default_spec_id = 0
    last_partition_id = data.get("last-partition-id")
    if last_partition_id is None:
        last_partition_id = max(
            (s.last_assigned_field_id for s in specs), default=PARTITION_DATA_ID_START - 1
        )
    if "sort-orders" in data:
        orders = tuple(sort_order_from_json(o) for o in data["sort-orders"])
        default_order = int(data.get("default-sort-order-id", 0))
    else:
        orders = (SortOrder(0, ()),)
        default_order = 0
    if current_schema_id not in {s.schema_id for s in schemas}:
        raise ValidationError(
            f"current-schema-id {current_schema_id} names no schema in the metadata; "
            "the metadata file is corrupt: restore a previous version"
        )
    if default_spec_id not in {s.spec_id for s in specs}:
        raise ValidationError(
            f"default-spec-id {default_spec_id} names no partition spec in the metadata; "
            "the metadata file is corrupt: restore a previous version"
        )
    snapshots = tuple(snapshot_from_json(s) for s in data.get("snapshots") or ())
    current = data.get("current-snapshot-id")
    current_id = None if current is None or int(current) == -1 else int(current)
    refs = {name: ref_from_json(r) for name, r in (data.get("refs") or {}).items()}
    if current_id is not None and MAIN_BRANCH not in refs:
        refs[MAIN_BRANCH] = SnapshotRef(current_id, SnapshotRefType.BRANCH)
    return TableMetadata(
        format_version=version,
        table_uuid=str(data.get("table-uuid", "")),
        location=str(data["location"]),
        last_sequence_number=int(data.get("last-sequence-number", 0)),
        last_updated_ms=int(data.get("last-updated-ms", 0)),
        last_column_id=int(data["last-column-id"]),
        schemas=schemas,
        current_schema_id=current_schema_id,
        partition_specs=specs,
        default_spec_id=default_spec_id,
        last_partition_id=int(last_partition_id),
        sort_orders=orders,
        default_sort_order_id=default_order,
        properties={str(k): str(v) for k, v in (data.get("properties") or {}).items()},
        current_snapshot_id=current_id,
        snapshots=snapshots,
        snapshot_log=tuple(
            SnapshotLogEntry(int(e["timestamp-ms"]), int(e["snapshot-id"]))
            for e in data.get("snapshot-log") or ()
        ),
        metadata_log=tuple(
            MetadataLogEntry(int(e["timestamp-ms"]), str(e["metadata-file"]))
            for e in data.get("metadata-log") or ()
        ),
        refs=refs,
        statistics=tuple(data.get("statistics") or ()),
        partition_statistics=tuple(data.get("partition-statistics") or ()),
        next_row_id=_opt_int(data.get("next-row-id")) if version >= 3 else None,
    )


#: Snapshots as compact JSON text: each metadata file a commit writes repeats every
#: snapshot of its parent's, so each is encoded once.
_SNAPSHOT_JSON: EncodedCache[str] = EncodedCache(50_000)


def metadata_to_bytes(md: TableMetadata, compress: bool = False) -> bytes:
    """The metadata file's bytes: :func:`metadata_to_json` as compact JSON."""
    head, tail = _metadata_parts(md)
    v = md.format_version
    snapshots = ",".join(_snapshot_text(s, v) for s in md.snapshots)
    text = f'{_compact(head)[:-1]},"snapshots":[{snapshots}],{_compact(tail)[1:]}'
    raw = text.encode()
    # mtime=0, as Java's GZIPOutputStream writes: the same metadata gives the
    # same bytes whenever it is written
    return gzip.compress(raw, mtime=0) if compress else raw


def _snapshot_text(s: Snapshot, format_version: int) -> str:
    return _SNAPSHOT_JSON.get(
        s, format_version, lambda: _compact(snapshot_to_json(s, format_version))
    )


def _compact(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, separators=(",", ":"))


def metadata_from_bytes(data: bytes) -> TableMetadata:
    """Parse a metadata file, gzip-compressed or not."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise ValidationError(f"table metadata is not valid gzip: {exc}") from exc
    try:
        parsed = json.loads(data)
    except ValueError as exc:
        raise ValidationError(f"table metadata is not valid JSON: {exc}") from exc
    if not isinstance(parsed, Mapping):
        raise ValidationError("table metadata must be a JSON object")
    return metadata_from_json(parsed)
