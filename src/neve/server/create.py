"""New table metadata from a REST ``CreateTableRequest``, and from the updates of a
staged create's commit (``assert-create`` with ``add-schema``, ``add-spec`` ...).

The client's schema gets fresh field ids (as Iceberg-Java's server does), and the
partition spec and sort order it sent are carried over to the new ids by column name;
neve's own rules for new tables (the format version, merge-on-read row changes on v2+,
checked properties, the identifier fields as primary key) apply as for
``catalog.create_table``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from neve.errors import ValidationError
from neve.spec.commit_json import update_from_json
from neve.spec.metadata_json import (
    partition_spec_from_json,
    schema_from_json,
    sort_order_from_json,
)
from neve.spec.partition import PARTITION_DATA_ID_START, PartitionField, PartitionSpec
from neve.spec.schema import Schema
from neve.spec.sort_order import UNSORTED, SortField, SortOrder
from neve.spec.table_metadata import TableMetadata
from neve.spec.updates import TableUpdate
from neve.table.create import new_table_metadata

__all__ = ["metadata_from_create", "metadata_from_staged_updates"]


def _id_map(old: Schema, new: Schema) -> dict[int, int]:
    out = {}
    for name in old.column_names:
        f_old, f_new = old.find_field_or_none(name), new.find_field_or_none(name)
        if f_old is not None and f_new is not None:
            out[f_old.field_id] = f_new.field_id
    return out


def _moved_spec(spec: PartitionSpec, ids: Mapping[int, int]) -> PartitionSpec:
    fields = []
    for i, f in enumerate(spec.fields):
        if f.source_id not in ids:
            raise ValidationError(
                f"partition field {f.name!r} refers to column id {f.source_id}, which is not "
                "in the schema"
            )
        fields.append(
            PartitionField(ids[f.source_id], PARTITION_DATA_ID_START + i, f.transform, f.name)
        )
    return PartitionSpec(0, tuple(fields))


def _moved_order(order: SortOrder, ids: Mapping[int, int]) -> SortOrder:
    if order.is_unsorted:
        return UNSORTED
    fields = []
    for f in order.fields:
        if f.source_id not in ids:
            raise ValidationError(
                f"sort field refers to column id {f.source_id}, not in the schema"
            )
        fields.append(SortField(ids[f.source_id], f.transform, f.direction, f.null_order))
    return SortOrder(1, tuple(fields))


def metadata_from_create(
    schema: Schema,
    spec: PartitionSpec | None,
    order: SortOrder | None,
    location: str,
    properties: Mapping[str, str],
    table_uuid: str | None = None,
    format_version: int | None = None,
) -> TableMetadata:
    """Metadata of a new table as a client described it."""
    pk = [schema.column_name(i) or "" for i in schema.identifier_field_ids]
    plain = Schema(*schema.fields, schema_id=schema.schema_id)
    md = new_table_metadata(
        plain,
        location=location,
        properties=properties,
        format_version=format_version,
        primary_key=pk,
    )
    ids = _id_map(schema, md.schema())
    changes: dict[str, Any] = {}
    if spec is not None and spec.fields:
        moved = _moved_spec(spec, ids)
        changes["partition_specs"] = (moved,)
        changes["last_partition_id"] = max(moved.last_assigned_field_id, md.last_partition_id)
    if order is not None and not order.is_unsorted:
        moved_order = _moved_order(order, ids)
        changes["sort_orders"] = (UNSORTED, moved_order)
        changes["default_sort_order_id"] = moved_order.order_id
    if table_uuid is not None:
        changes["table_uuid"] = table_uuid
    return md.with_(**changes) if changes else md


def create_request_metadata(data: Mapping[str, Any], default_location: str) -> TableMetadata:
    """Metadata for a ``CreateTableRequest`` body."""
    if not isinstance(data.get("schema"), Mapping):
        raise ValidationError("a create-table request needs a schema")
    schema = schema_from_json(data["schema"])
    spec = partition_spec_from_json(data["partition-spec"]) if data.get("partition-spec") else None
    order = sort_order_from_json(data["write-order"]) if data.get("write-order") else None
    props = data.get("properties") or {}
    if not isinstance(props, Mapping):
        raise ValidationError("properties must map strings to strings")
    location = str(data.get("location") or default_location).rstrip("/")
    return metadata_from_create(
        schema, spec, order, location, {str(k): str(v) for k, v in props.items()}
    )


def metadata_from_staged_updates(
    updates: Sequence[Mapping[str, Any]], default_location: str
) -> tuple[TableMetadata, list[TableUpdate]]:
    """The first metadata of a table created by a staged create's commit, and the
    updates still to apply to it (snapshots, refs, later schemas)."""
    schema: Schema | None = None
    spec: PartitionSpec | None = None
    order: SortOrder | None = None
    location, table_uuid, version = default_location, None, None
    props: dict[str, str] = {}
    rest: list[TableUpdate] = []
    for u in updates:
        kind = u.get("action") if isinstance(u, Mapping) else None
        if kind == "assign-uuid":
            table_uuid = str(u["uuid"])
        elif kind == "set-location":
            location = str(u["location"]).rstrip("/")
        elif kind == "upgrade-format-version":
            version = int(u["format-version"])
        elif kind == "add-schema" and schema is None:
            schema = schema_from_json(u["schema"])
        elif kind == "add-spec" and spec is None:
            spec = partition_spec_from_json(u["spec"])
        elif kind == "add-sort-order" and order is None:
            order = sort_order_from_json(u["sort-order"])
        elif kind == "set-properties":
            props.update({str(k): str(v) for k, v in (u.get("updates") or {}).items()})
        elif kind in ("set-current-schema", "set-default-spec", "set-default-sort-order"):
            continue  # the first schema, spec and order are the current ones
        else:
            rest.append(update_from_json(u))
    if schema is None:
        raise ValidationError("a staged create's commit needs an add-schema update")
    md = metadata_from_create(
        schema, spec, order, location, props, table_uuid or str(uuid.uuid4()), version
    )
    return md, rest
