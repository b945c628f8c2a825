"""Actions that change metadata only: schema, partition spec, sort order, properties,
refs and the current snapshot. Each one checks a requirement on the metadata it was
planned on, so a concurrent change to the same thing fails as a conflict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from neve.actions.base import Action
from neve.errors import NoSuchSnapshotError, SchemaError, ValidationError
from neve.spec.partition import PartitionSpec
from neve.spec.properties import check_property_keys, split_reserved
from neve.spec.refs import MAIN_BRANCH, SnapshotRef, SnapshotRefType
from neve.spec.requirements import (
    AssertCurrentSchemaId,
    AssertDefaultSpecId,
    AssertRefSnapshotId,
    TableRequirement,
)
from neve.spec.schema import Schema
from neve.spec.sort_order import SortOrder
from neve.spec.table_metadata import TableMetadata
from neve.spec.updates import (
    LAST_ADDED,
    AddSchema,
    AddSortOrder,
    AddSpec,
    RemoveProperties,
    RemoveSnapshotRef,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetProperties,
    SetSnapshotRef,
    TableUpdate,
    UpgradeFormatVersion,
)

__all__ = [
    "SchemaAction",
    "SortOrderAction",
    "SpecAction",
    "UpdatesAction",
    "properties_action",
    "ref_action",
]


class UpdatesAction(Action):
    """A fixed list of updates and requirements."""

    def __init__(
        self, updates: Sequence[TableUpdate], requirements: Sequence[TableRequirement] = ()
    ) -> None:
        self.updates = list(updates)
        self.requirements = list(requirements)

    def plan(self, md: TableMetadata) -> tuple[list[TableUpdate], list[TableRequirement]]:
        return list(self.updates), list(self.requirements)


def properties_action(
    updates: Mapping[str, str] | None = None, removals: Sequence[str] = ()
) -> UpdatesAction:
    """Set and remove table properties. Values neve reads are checked here (see
    :mod:`neve.spec.properties`); ``format-version`` upgrades the table instead of being
    stored, and the other reserved properties are ignored, as in Iceberg-Java."""
    kept, version = split_reserved(updates if updates is not None else {})
    removed = check_property_keys(removals)
    both = sorted(set(kept) & set(removed))
    if both:
        raise ValidationError(
            f"properties {both} are both set and removed in one change; pick one for each"
        )
    ups: list[TableUpdate] = []
    if kept:
        ups.append(SetProperties(kept))
    if removed:
        ups.append(RemoveProperties(tuple(removed)))
    if version is not None:
        ups.append(UpgradeFormatVersion(version))
    return UpdatesAction(ups)


class SchemaAction(Action):
    def __init__(self, base: TableMetadata, schema: Schema, last_column_id: int) -> None:
        self.base_schema_id = base.current_schema_id
        self.schema = schema
        self.last_column_id = last_column_id

    def plan(self, md: TableMetadata) -> tuple[list[TableUpdate], list[TableRequirement]]:
        for spec in md.partition_specs if md.format_version == 1 else [md.spec()]:
            for f in spec.fields:
                if self.schema.find_field_or_none(f.source_id) is None:
                    name = md.schema().column_name(f.source_id)
                    raise SchemaError(
                        f"cannot drop column {name!r}: partition field {f.name!r} uses it; "
                        "remove the partition field with update_spec() first"
                    )
        return (
            [AddSchema(self.schema, self.last_column_id), SetCurrentSchema(LAST_ADDED)],
            [AssertCurrentSchemaId(self.base_schema_id)],
        )


class SpecAction(Action):
    def __init__(self, base: TableMetadata, spec: PartitionSpec) -> None:
        self.base_spec_id = base.default_spec_id
        self.spec = spec

    def plan(self, md: TableMetadata) -> tuple[list[TableUpdate], list[TableRequirement]]:
        return (
            [AddSpec(self.spec), SetDefaultSpec(LAST_ADDED)],
            [AssertDefaultSpecId(self.base_spec_id)],
        )


class SortOrderAction(Action):
    def __init__(self, order: SortOrder) -> None:
        self.order = order

    def plan(self, md: TableMetadata) -> tuple[list[TableUpdate], list[TableRequirement]]:
        return [AddSortOrder(self.order), SetDefaultSortOrder(LAST_ADDED)], []


def upgrade_action(version: int) -> UpdatesAction:
    """Upgrade the format version (a downgrade or an unknown version is refused when the
    change is applied)."""
    if isinstance(version, bool) or not isinstance(version, int):
        raise ValidationError(f"a format version is an integer (1, 2 or 3), not {version!r}")
    return UpdatesAction([UpgradeFormatVersion(version)])


def ref_action(
    md: TableMetadata,
    name: str,
    snapshot_id: int | None,
    *,
    ref_type: SnapshotRefType = SnapshotRefType.BRANCH,
    create: bool = False,
    remove: bool = False,
    min_snapshots_to_keep: int | None = None,
    max_snapshot_age_ms: int | None = None,
    max_ref_age_ms: int | None = None,
) -> UpdatesAction:
    """Create, move or remove a branch or tag, guarded on the ref's current value."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError(f"a branch or tag name is a non-empty string, not {name!r}")
    if snapshot_id is not None and (
        isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int)
    ):
        raise ValidationError(f"a snapshot id is an integer, not {snapshot_id!r}")
    current = md.refs.get(name)
    cur_id = current.snapshot_id if current is not None else None
    if name == MAIN_BRANCH and cur_id is None:
        cur_id = md.current_snapshot_id
    req = [AssertRefSnapshotId(name, cur_id)]
    if remove:
        if current is None:
            raise NoSuchSnapshotError(f"no branch or tag named {name!r}")
        if name == MAIN_BRANCH:
            raise ValidationError("the main branch cannot be removed")
        kind = "tag" if not current.is_branch else "branch"
        if (ref_type is SnapshotRefType.TAG) != (kind == "tag"):
            raise ValidationError(f"{name!r} is a {kind}; remove it as a {kind}")
        return UpdatesAction([RemoveSnapshotRef(name)], req)
    if create and current is not None:
        raise ValidationError(f"a branch or tag named {name!r} exists already")
    if current is not None and current.ref_type is not ref_type:
        raise ValidationError(f"{name!r} is a {current.ref_type.value}, not a {ref_type.value}")
    if snapshot_id is None:
        raise ValidationError(
            "the table has no snapshot yet; commit data before creating a branch or tag"
        )
    md.snapshot_by_id(snapshot_id)
    if ref_type is SnapshotRefType.TAG and min_snapshots_to_keep is not None:
        raise ValidationError("tags do not take min_snapshots_to_keep; it is for branches")
    ref = SnapshotRef(
        snapshot_id,
        ref_type,
        min_snapshots_to_keep
        if min_snapshots_to_keep is not None
        else (current.min_snapshots_to_keep if current else None),
        max_snapshot_age_ms
        if max_snapshot_age_ms is not None
        else (current.max_snapshot_age_ms if current else None),
        max_ref_age_ms
        if max_ref_age_ms is not None
        else (current.max_ref_age_ms if current else None),
    )
    return UpdatesAction([SetSnapshotRef(name, ref)], req)
