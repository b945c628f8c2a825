"""Partition evolution as a pure builder (spec "Partition Evolution" and "Partitioning").

:class:`UpdateSpec` adds, removes and renames partition fields of a table's default
spec and returns the new :class:`PartitionSpec`; :func:`spec_from_terms` builds the
first spec of a new table from terms such as ``"day(ts)"`` or ``"bucket(16, id)"``.
Neither does I/O nor commits.

Rules, as Iceberg-Java applies them:
- new partition field ids continue from the table's ``last-partition-id``; in v2+ a
  field with the same source and transform as one in any earlier spec gets that field's
  id back, so partition data of old and new files stays comparable;
- v1 specs cannot drop fields (their ids were positional), so a removed field becomes a
  ``void`` transform that keeps its id;
- names and (source, transform) pairs are unique; at most one of year/month/day/hour
  per source column; a partition name may equal a schema column's name only for an
  identity field of that same column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from neve.actions.base import ChangeBuilder
from neve.errors import SchemaError
from neve.spec.partition import PARTITION_DATA_ID_START, PartitionField, PartitionSpec
from neve.spec.schema import Schema
from neve.spec.table_metadata import TableMetadata
from neve.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
    parse_partition_term,
    parse_transform,
)
from neve.spec.types import ListType, MapType, NestedField, PrimitiveType

__all__ = [
    "UpdateSpec",
    "default_partition_name",
    "resolve_transform_source",
    "spec_from_terms",
]

_TIME_TRANSFORMS = (YearTransform, MonthTransform, DayTransform, HourTransform)
_SUFFIX: tuple[tuple[type[Transform], str], ...] = (
    (YearTransform, "year"),
    (MonthTransform, "month"),
    (DayTransform, "day"),
    (HourTransform, "hour"),
    (VoidTransform, "null"),
)


def default_partition_name(source_name: str, transform: Transform, with_param: bool) -> str:
    """Iceberg-Java's default partition field name: ``id_bucket`` / ``name_trunc`` when
    a spec is created (``with_param=False``), ``id_bucket_16`` / ``name_trunc_4`` when a
    field is added to an existing spec; ``ts_day``, ``ts_hour``, ``x_null`` ...; the
    source name itself for identity."""
    if isinstance(transform, IdentityTransform):
        return source_name
    if isinstance(transform, BucketTransform):
        suffix = f"_{transform.num_buckets}" if with_param else ""
        return f"{source_name}_bucket{suffix}"
    if isinstance(transform, TruncateTransform):
        suffix = f"_{transform.width}" if with_param else ""
        return f"{source_name}_trunc{suffix}"
    for cls, suffix in _SUFFIX:
        if isinstance(transform, cls):
            return f"{source_name}_{suffix}"
    return f"{source_name}_{str(transform).split('[')[0]}"


def _as_transform(transform: Transform | str) -> Transform:
    return parse_transform(transform) if isinstance(transform, str) else transform


def resolve_transform_source(
    schema: Schema,
    column: str,
    transform: Transform,
    case_sensitive: bool = True,
    purpose: str = "partition",
) -> NestedField:
    """Find the source column of a partition or sort field and check the spec's rules:
    it exists, is a primitive not nested in a list or map, and the transform accepts
    its type."""
    if isinstance(transform, UnknownTransform):
        raise SchemaError(
            f"cannot {purpose} by unknown transform {str(transform)!r}; use identity, "
            "bucket[N], truncate[W], year, month, day, hour or void"
        )
    field = schema.find_field_or_none(column, case_sensitive)
    if field is None:
        raise SchemaError(
            f"cannot {purpose} by {column!r}: no such column; "
            f"columns are: {', '.join(schema.column_names) or '(none)'}"
        )
    name = schema.column_name(field.field_id) or column
    parent = schema.parent_id(field.field_id)
    while parent is not None:
        if isinstance(schema.find_type(parent), (ListType, MapType)):
            raise SchemaError(
                f"cannot {purpose} by {name!r}: it is inside a list or map; "
                "use a column of a struct or of the table itself"
            )
        parent = schema.parent_id(parent)
    if not isinstance(field.field_type, PrimitiveType):
        raise SchemaError(
            f"cannot {purpose} by {name!r}: it is {field.field_type}, not a primitive type"
        )
    if not transform.can_transform(field.field_type):
        raise SchemaError(
            f"cannot {purpose} by {transform}({name}): transform {transform} does not apply "
            f"to type {field.field_type}; pick a transform that does (identity, bucket, "
            "truncate, year, month, day, hour per the spec's table)"
        )
    return field


def _dedup_key(f: PartitionField) -> tuple[int, str]:
    # year/month/day/hour of one column are redundant with each other (Iceberg-Java)
    kind = "time" if isinstance(f.transform, _TIME_TRANSFORMS) else str(f.transform)
    return f.source_id, kind


def _check_fields(
    schema: Schema,
    fields: Iterable[PartitionField],
    check_schema_names: Callable[[PartitionField], bool],
    case_sensitive: bool,
) -> None:
    """Unique names and ids, no redundant transforms, no name taken from another column."""
    names: dict[str, PartitionField] = {}
    ids: set[int] = set()
    keys: dict[tuple[int, str], PartitionField] = {}
    for f in fields:
        if not f.name:
            raise SchemaError(f"partition field {f} has an empty name; give it a name")
        if f.name in names:
            raise SchemaError(
                f"partition field name {f.name!r} is used twice; give one of them another name"
            )
        names[f.name] = f
        if f.field_id in ids:
            raise SchemaError(f"partition field id {f.field_id} is used twice")
        ids.add(f.field_id)
        if isinstance(f.transform, VoidTransform):
            continue
        key = _dedup_key(f)
        other = keys.get(key)
        if other is not None:
            col = schema.column_name(f.source_id) or str(f.source_id)
            raise SchemaError(
                f"partition field {f.name!r} ({f.transform}({col})) is redundant with "
                f"{other.name!r} ({other.transform}({col})); partition a column by one "
                "transform of each kind, and by only one of year/month/day/hour"
            )
        keys[key] = f
        if check_schema_names(f):
            col_field = schema.find_field_or_none(f.name, case_sensitive)
            if col_field is not None and not (
                isinstance(f.transform, IdentityTransform) and col_field.field_id == f.source_id
            ):
                raise SchemaError(
                    f"partition field name {f.name!r} is the name of a table column; only an "
                    "identity partition of that same column may use it; pick another name"
                )


def spec_from_terms(
    schema: Schema,
    terms: Iterable[str],
    spec_id: int = 0,
    last_partition_id: int = PARTITION_DATA_ID_START - 1,
) -> PartitionSpec:
    """A new partition spec from terms like ``"day(ts)"``, ``"bucket(16, id)"``,
    ``"truncate(4, name)"`` or a bare column name (identity), with Iceberg-Java's
    default names (``ts_day``, ``id_bucket``, ``name_trunc``, ``category``)."""
    fields: list[PartitionField] = []
    next_id = last_partition_id
    for term in terms:
        transform, column = parse_partition_term(term)
        src = resolve_transform_source(schema, column, transform)
        next_id += 1
        source_name = schema.column_name(src.field_id) or column
        fields.append(
            PartitionField(
                src.field_id,
                next_id,
                transform,
                default_partition_name(source_name, transform, with_param=False),
            )
        )
    _check_fields(schema, fields, lambda f: True, True)
    return PartitionSpec(spec_id, tuple(fields))


class UpdateSpec(ChangeBuilder):
    """Evolves the default partition spec of ``metadata``; :meth:`apply` gives the new
    spec. A context manager: on a normal exit ``on_commit(self)`` is called (without a
    callback the change is only validated); on an exception nothing happens."""

    def __init__(
        self,
        metadata: TableMetadata,
        case_sensitive: bool = True,
        on_commit: Callable[[UpdateSpec], None] | None = None,
    ) -> None:
        self._md = metadata
        self._schema = metadata.schema()
        self._spec = metadata.spec()
        self._v1 = metadata.format_version < 2
        self._case_sensitive = case_sensitive
        self._on_commit = on_commit
        self._last_id = max(
            [metadata.last_partition_id]
            + [s.last_assigned_field_id for s in metadata.partition_specs]
        )
        self._adds: list[PartitionField] = []
        self._deletes: set[int] = set()
        self._renames: dict[int, str] = {}  # field id of the current spec -> new name
        self._aside: dict[int, str] = {}  # removed/void fields renamed to free their name

    # -- lookups -----------------------------------------------------------------------

    def _current_name(self, f: PartitionField) -> str:
        return self._renames.get(f.field_id) or self._aside.get(f.field_id) or f.name

    def _live_by_name(self, name: str) -> PartitionField | None:
        """A field of the current spec, by its name after renames (deleted ones too)."""
        for f in self._spec.fields:
            if self._current_name(f) == name:
                return f
        return None

    def _added_by_name(self, name: str) -> PartitionField | None:
        return next((f for f in self._adds if f.name == name), None)

    def _field_for(self, name_or_term: str, action: str) -> PartitionField:
        """A current-spec field by name, or by a term such as ``"bucket(16, id)"``."""
        f = self._live_by_name(name_or_term)
        if f is not None:
            return f
        if self._added_by_name(name_or_term) is not None:
            raise SchemaError(
                f"cannot {action} partition field {name_or_term!r}: it is added in this same "
                "change; leave out the add instead"
            )
        if "(" in name_or_term:
            transform, column = parse_partition_term(name_or_term)
            src = self._schema.find_field_or_none(column, self._case_sensitive)
            if src is not None:
                for f in self._spec.fields:
                    if f.source_id == src.field_id and f.transform == transform:
                        return f
        known = ", ".join(self._current_name(f) for f in self._spec.fields) or "(none)"
        raise SchemaError(
            f"cannot {action} partition field {name_or_term!r}: no such field; "
            f"partition fields are: {known}"
        )

    # -- changes -----------------------------------------------------------------------

    def add_field(
        self,
        source: str,
        transform: Transform | str = "identity",
        name: str | None = None,
    ) -> UpdateSpec:
        """Partition by ``transform(source)``. ``source`` may also be a whole term such as
        ``"bucket(16, id)"``. Without ``name`` the field gets Iceberg-Java's default name."""
        if isinstance(transform, str) and transform == "identity" and "(" in source:
            t, column = parse_partition_term(source)
        else:
            t, column = _as_transform(transform), source
        src = resolve_transform_source(self._schema, column, t, self._case_sensitive)
        col = self._schema.column_name(src.field_id) or column
        if name is not None and not name:
            raise SchemaError(f"cannot add partition field {t}({col}) with an empty name")

        existing = next(
            (f for f in self._spec.fields if f.source_id == src.field_id and f.transform == t),
            None,
        )
        if existing is not None:
            if existing.field_id in self._deletes:
                # removed and re-added in one change: keep the field as it was
                self._deletes.discard(existing.field_id)
                if name is not None and name != self._current_name(existing):
                    self._rename(existing, name)
                return self
            raise SchemaError(
                f"cannot add partition field {t}({col}): the spec already has it as "
                f"{self._current_name(existing)!r}"
            )
        for f in self._adds:
            if f.source_id == src.field_id and f.transform == t:
                raise SchemaError(
                    f"cannot add partition field {t}({col}) twice (already added as {f.name!r})"
                )

        new = self._recycle_or_create(src.field_id, t, name)
        if new.name == "":
            new = replace(new, name=default_partition_name(col, t, with_param=True))
        if self._added_by_name(new.name) is not None:
            raise SchemaError(
                f"cannot add partition field {new.name!r} twice; give the fields different names"
            )
        for f in self._adds:
            if _dedup_key(f) == _dedup_key(new):
                raise SchemaError(
                    f"cannot add partition field {new.name!r}: it is redundant with "
                    f"{f.name!r}, added in this change; use only one of year/month/day/hour "
                    "per column"
                )
        clash = self._live_by_name(new.name)
        if clash is not None:
            if clash.field_id in self._deletes or isinstance(clash.transform, VoidTransform):
                # a removed (v1: voided) field steps aside, as in Iceberg-Java
                self._aside[clash.field_id] = f"{clash.name}_{clash.field_id}"
            else:
                raise SchemaError(
                    f"cannot add partition field {new.name!r}: the spec already has a field "
                    "with that name; pass another name"
                )
        self._adds.append(new)
        return self

    def _recycle_or_create(
        self, source_id: int, transform: Transform, name: str | None
    ) -> PartitionField:
        if not self._v1:
            # ids in use by the current spec (e.g. v1 void fields of an upgraded table)
            taken = {f.field_id for f in self._spec.fields} | {f.field_id for f in self._adds}
            for spec in self._md.partition_specs:
                for f in spec.fields:
                    if (
                        f.source_id == source_id
                        and f.transform == transform
                        and (name is None or f.name == name)
                        and f.field_id not in taken
                    ):
                        return f
        self._last_id += 1
        return PartitionField(source_id, self._last_id, transform, name or "")

    def add_identity(self, source: str) -> UpdateSpec:
        """Partition by the value of ``source`` itself."""
        return self.add_field(source, "identity")

    def remove_field(self, name: str) -> UpdateSpec:
        """Stop partitioning by a field, named by its partition name or its term. In v1
        the field stays as a ``void`` transform."""
        f = self._field_for(name, "remove")
        if f.field_id in self._deletes:
            raise SchemaError(f"partition field {name!r} is already removed in this change")
        if f.field_id in self._renames:
            raise SchemaError(
                f"cannot remove partition field {name!r}: it is renamed in this same change; "
                "do one or the other"
            )
        self._deletes.add(f.field_id)
        return self

    def rename_field(self, name: str, new_name: str) -> UpdateSpec:
        """Rename a partition field; its id and transform stay."""
        f = self._field_for(name, "rename")
        if f.field_id in self._deletes:
            raise SchemaError(
                f"cannot rename partition field {name!r}: it is removed in this same change"
            )
        if not new_name:
            raise SchemaError(f"cannot rename partition field {name!r} to an empty name")
        self._rename(f, new_name)
        return self

    def _rename(self, f: PartitionField, new_name: str) -> None:
        if self._added_by_name(new_name) is not None:
            raise SchemaError(
                f"cannot rename partition field {f.name!r} to {new_name!r}: a field with that "
                "name is added in this change"
            )
        clash = self._live_by_name(new_name)
        if clash is not None and clash.field_id != f.field_id:
            if isinstance(clash.transform, VoidTransform) or clash.field_id in self._deletes:
                self._aside[clash.field_id] = f"{clash.name}_{clash.field_id}"
            else:
                raise SchemaError(
                    f"cannot rename partition field {f.name!r} to {new_name!r}: the spec "
                    "already has a field with that name; rename that one first"
                )
        self._renames[f.field_id] = new_name

    # -- result ------------------------------------------------------------------------

    def apply(self) -> PartitionSpec:
        """The new partition spec. Its id is that of an equal existing spec, else the
        highest spec id + 1."""
        fields: list[PartitionField] = []
        for f in self._spec.fields:
            name = self._current_name(f)
            if f.field_id not in self._deletes:
                fields.append(replace(f, name=name))
            elif self._v1:
                # v1: field ids are positional, so a removed field stays, always null
                fields.append(replace(f, name=name, transform=VoidTransform()))
        fields.extend(self._adds)
        added_or_renamed = {f.field_id for f in self._adds} | set(self._renames)
        _check_fields(
            self._schema,
            fields,
            lambda f: f.field_id in added_or_renamed,
            self._case_sensitive,
        )
        new_fields = tuple(fields)
        for spec in self._md.partition_specs:
            if spec.fields == new_fields:
                return PartitionSpec(spec.spec_id, new_fields)
        next_id = max((s.spec_id for s in self._md.partition_specs), default=-1) + 1
        return PartitionSpec(next_id, new_fields)
