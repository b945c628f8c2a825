"""The JSON form of requirements and updates, as the Iceberg REST catalog's commit body
has them (``{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 3}``,
``{"action": "add-snapshot", "snapshot": {...}}``). Schemas, specs, sort orders,
snapshots and refs inside them use the table metadata JSON codecs.

Update kinds of the protocol that neve does not apply (statistics, encryption keys,
``assign-uuid``, ``set-location``, removing schemas or specs, ``enable-row-lineage``)
are refused by name rather than dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from neve.errors import ValidationError
from neve.spec.metadata_json import (
    partition_spec_from_json,
    partition_spec_to_json,
    ref_from_json,
    ref_to_json,
    schema_from_json,
    schema_to_json,
    snapshot_from_json,
    snapshot_to_json,
    sort_order_from_json,
    sort_order_to_json,
)
from neve.spec.requirements import (
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    TableRequirement,
)
from neve.spec.updates import (
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

__all__ = [
    "UNSUPPORTED_UPDATES",
    "requirement_from_json",
    "requirement_to_json",
    "update_from_json",
    "update_to_json",
]

#: REST update kinds neve does not apply.
UNSUPPORTED_UPDATES = frozenset(
    {
        "assign-uuid",
        "set-location",
        "set-statistics",
        "remove-statistics",
        "set-partition-statistics",
        "remove-partition-statistics",
        "enable-row-lineage",
        "add-encryption-key",
        "remove-encryption-key",
    }
)


def _field(data: Mapping[str, Any], key: str, kind: str) -> Any:
    if not isinstance(data, Mapping) or key not in data:
        raise ValidationError(f"{kind}: field {key!r} is missing")
    return data[key]


def _int(data: Mapping[str, Any], key: str, kind: str) -> int:
    value = _field(data, key, kind)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{kind}: field {key!r} is an integer, not {value!r}")
    return value


def _str(data: Mapping[str, Any], key: str, kind: str) -> str:
    value = _field(data, key, kind)
    if not isinstance(value, str):
        raise ValidationError(f"{kind}: field {key!r} is a string, not {value!r}")
    return value


def _opt_int(data: Mapping[str, Any], key: str, kind: str) -> int | None:
    return None if data.get(key) is None else _int(data, key, kind)


# -- requirements ---------------------------------------------------------------------

_REQUIREMENT_INT_FIELDS: dict[type[TableRequirement], tuple[str, str, str]] = {
    # class -> (type, JSON field, attribute)
    AssertLastAssignedFieldId: (
        "assert-last-assigned-field-id",
        "last-assigned-field-id",
        "last_assigned_field_id",
    ),
    AssertCurrentSchemaId: ("assert-current-schema-id", "current-schema-id", "schema_id"),
    AssertLastAssignedPartitionId: (
        "assert-last-assigned-partition-id",
        "last-assigned-partition-id",
        "last_assigned_partition_id",
    ),
    AssertDefaultSpecId: ("assert-default-spec-id", "default-spec-id", "spec_id"),
    AssertDefaultSortOrderId: (
        "assert-default-sort-order-id",
        "default-sort-order-id",
        "sort_order_id",
    ),
}


def requirement_to_json(r: TableRequirement) -> dict[str, Any]:
    if isinstance(r, AssertCreate):
        return {"type": "assert-create"}
    if isinstance(r, AssertTableUUID):
        return {"type": "assert-table-uuid", "uuid": r.uuid}
    if isinstance(r, AssertRefSnapshotId):
        return {"type": "assert-ref-snapshot-id", "ref": r.ref, "snapshot-id": r.snapshot_id}
    kind, key, attr = _REQUIREMENT_INT_FIELDS[type(r)]
    return {"type": kind, key: getattr(r, attr)}


def requirement_from_json(data: Mapping[str, Any]) -> TableRequirement:
    kind = _str(data, "type", "requirement")
    if kind == "assert-create":
        return AssertCreate()
    if kind == "assert-table-uuid":
        return AssertTableUUID(_str(data, "uuid", kind))
    if kind == "assert-ref-snapshot-id":
        _field(data, "snapshot-id", kind)  # present, null for "must not exist"
        return AssertRefSnapshotId(_str(data, "ref", kind), _opt_int(data, "snapshot-id", kind))
    for cls, (name, key, _attr) in _REQUIREMENT_INT_FIELDS.items():
        if name == kind:
            return cls(_int(data, key, kind))  # type: ignore[call-arg]
    raise ValidationError(
        f"unknown requirement type {kind!r}; the REST protocol's are assert-create, "
        f"assert-table-uuid, assert-ref-snapshot-id and "
        f"{', '.join(v[0] for v in _REQUIREMENT_INT_FIELDS.values())}"
    )


# -- updates --------------------------------------------------------------------------


def update_to_json(u: TableUpdate) -> dict[str, Any]:
    if isinstance(u, UpgradeFormatVersion):
        return {"action": "upgrade-format-version", "format-version": u.format_version}
    if isinstance(u, AddSchema):
        return {
            "action": "add-schema",
            "schema": schema_to_json(u.schema),
            "last-column-id": u.last_column_id,
        }
    if isinstance(u, SetCurrentSchema):
        return {"action": "set-current-schema", "schema-id": u.schema_id}
    if isinstance(u, AddSpec):
        return {"action": "add-spec", "spec": partition_spec_to_json(u.spec)}
    if isinstance(u, SetDefaultSpec):
        return {"action": "set-default-spec", "spec-id": u.spec_id}
    if isinstance(u, AddSortOrder):
        return {"action": "add-sort-order", "sort-order": sort_order_to_json(u.sort_order)}
    if isinstance(u, SetDefaultSortOrder):
        return {"action": "set-default-sort-order", "sort-order-id": u.sort_order_id}
    if isinstance(u, AddSnapshot):
        s = u.snapshot
        version = 3 if s.first_row_id is not None else 2
        return {"action": "add-snapshot", "snapshot": snapshot_to_json(s, version)}
    if isinstance(u, SetSnapshotRef):
        return {"action": "set-snapshot-ref", "ref-name": u.ref_name, **ref_to_json(u.ref)}
    if isinstance(u, RemoveSnapshotRef):
        return {"action": "remove-snapshot-ref", "ref-name": u.ref_name}
    if isinstance(u, RemoveSnapshots):
        return {"action": "remove-snapshots", "snapshot-ids": list(u.snapshot_ids)}
    if isinstance(u, RemovePartitionSpecs):
        return {"action": "remove-partition-specs", "spec-ids": list(u.spec_ids)}
    if isinstance(u, RemoveSchemas):
        return {"action": "remove-schemas", "schema-ids": list(u.schema_ids)}
    if isinstance(u, SetProperties):
        return {"action": "set-properties", "updates": dict(u.updates)}
    if isinstance(u, RemoveProperties):
        return {"action": "remove-properties", "removals": list(u.removals)}
    raise ValidationError(f"no JSON form for update {u!r}")  # pragma: no cover


def _add_schema(data: Mapping[str, Any], kind: str) -> TableUpdate:
    schema = schema_from_json(_field(data, "schema", kind))
    last = _opt_int(data, "last-column-id", kind)
    return AddSchema(schema, last if last is not None else schema.highest_field_id)


def _string_map(data: Mapping[str, Any], key: str, kind: str) -> dict[str, str]:
    value = _field(data, key, kind)
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValidationError(f"{kind}: {key!r} maps strings to strings, not {value!r}")
    return dict(value)


def _strings(data: Mapping[str, Any], key: str, kind: str) -> tuple[str, ...]:
    value = _field(data, key, kind)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError(f"{kind}: {key!r} is a list of strings, not {value!r}")
    return tuple(value)


def _ints(data: Mapping[str, Any], key: str, kind: str) -> tuple[int, ...]:
    value = _field(data, key, kind)
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise ValidationError(f"{kind}: {key!r} is a list of integers, not {value!r}")
    return tuple(value)


_UPDATE_READERS: dict[str, Callable[[Mapping[str, Any], str], TableUpdate]] = {
    "upgrade-format-version": lambda d, k: UpgradeFormatVersion(_int(d, "format-version", k)),
    "add-schema": _add_schema,
    "set-current-schema": lambda d, k: SetCurrentSchema(_int(d, "schema-id", k)),
    "add-spec": lambda d, k: AddSpec(partition_spec_from_json(_field(d, "spec", k))),
    "set-default-spec": lambda d, k: SetDefaultSpec(_int(d, "spec-id", k)),
    "add-sort-order": lambda d, k: AddSortOrder(sort_order_from_json(_field(d, "sort-order", k))),
    "set-default-sort-order": lambda d, k: SetDefaultSortOrder(_int(d, "sort-order-id", k)),
    "add-snapshot": lambda d, k: AddSnapshot(snapshot_from_json(_field(d, "snapshot", k))),
    "set-snapshot-ref": lambda d, k: SetSnapshotRef(
        _str(d, "ref-name", k), ref_from_json({**d, "snapshot-id": _int(d, "snapshot-id", k)})
    ),
    "remove-snapshot-ref": lambda d, k: RemoveSnapshotRef(_str(d, "ref-name", k)),
    "remove-snapshots": lambda d, k: RemoveSnapshots(_ints(d, "snapshot-ids", k)),
    "remove-partition-specs": lambda d, k: RemovePartitionSpecs(_ints(d, "spec-ids", k)),
    "remove-schemas": lambda d, k: RemoveSchemas(_ints(d, "schema-ids", k)),
    "set-properties": lambda d, k: SetProperties(_string_map(d, "updates", k)),
    "remove-properties": lambda d, k: RemoveProperties(_strings(d, "removals", k)),
}


def update_from_json(data: Mapping[str, Any]) -> TableUpdate:
    kind = _str(data, "action", "update")
    if kind in UNSUPPORTED_UPDATES:
        raise ValidationError(
            f"update {kind!r} is part of the REST protocol but neve does not apply it; "
            "make this change with Iceberg-Java"
        )
    reader = _UPDATE_READERS.get(kind)
    if reader is None:
        raise ValidationError(
            f"unknown update action {kind!r}; neve applies {', '.join(sorted(_UPDATE_READERS))}"
        )
    try:
        return reader(data, kind)
    except ValidationError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise ValidationError(f"{kind}: malformed body ({exc!r})") from exc
