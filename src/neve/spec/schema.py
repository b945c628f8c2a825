"""Schemas: a struct of fields with ids, a schema id and identifier fields.

Names of nested fields are dotted paths: ``a.b`` for a struct child, ``l.element`` for a
list element, ``m.key`` / ``m.value`` for map entries (spec "Schemas").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property

from neve.errors import SchemaError
from neve.spec.types import (
    LONG,
    DoubleType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    NestedType,
    PrimitiveType,
    StructType,
)

__all__ = [
    "LAST_UPDATED_SEQUENCE_NUMBER",
    "ROW_ID",
    "ROW_LINEAGE_FIELDS",
    "ROW_POSITION",
    "Schema",
    "is_row_lineage_field",
    "row_lineage_field",
    "walk_fields",
    "with_row_lineage",
]


def walk_fields(
    fields: Iterable[NestedField], prefix: str = ""
) -> Iterator[tuple[str, NestedField, int | None]]:
    """Yield ``(dotted name, field, parent field id)`` for every field, depth first."""
    stack: list[tuple[str, NestedField, int | None]] = [
        (prefix + f.name, f, None) for f in reversed(tuple(fields))
    ]
    while stack:
        name, f, parent = stack.pop()
        yield name, f, parent
        t = f.field_type
        if isinstance(t, NestedType):
            for child in reversed(t.children):
                stack.append((f"{name}.{child.name}", child, f.field_id))


@dataclass(frozen=True)
class Schema:
    """An Iceberg schema. Immutable; lookups are indexed lazily."""

    fields: tuple[NestedField, ...]
    schema_id: int = 0
    identifier_field_ids: tuple[int, ...] = ()

    def __init__(
        self,
        *fields: NestedField,
        schema_id: int = 0,
        identifier_field_ids: Iterable[int] = (),
    ) -> None:
        object.__setattr__(self, "fields", tuple(fields))
        object.__setattr__(self, "schema_id", schema_id)
        object.__setattr__(self, "identifier_field_ids", tuple(identifier_field_ids))
        self._check_unique_ids()

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_schema, (self.fields, self.schema_id, self.identifier_field_ids))

    def _check_unique_ids(self) -> None:
        seen: set[int] = set()
        for name, f, _ in walk_fields(self.fields):
            if f.field_id in seen:
                raise SchemaError(f"field id {f.field_id} is used twice (at {name!r})")
            seen.add(f.field_id)
        names: set[str] = set()
        for f in self.fields:
            if f.name in names:
                raise SchemaError(f"column name {f.name!r} is used twice")
            names.add(f.name)

    # -- indexes -------------------------------------------------------------------

    @cached_property
    def struct(self) -> StructType:
        return StructType(*self.fields)

    @cached_property
    def _index(
        self,
    ) -> tuple[dict[int, NestedField], dict[str, int], dict[int, str], dict[int, int]]:
        by_id: dict[int, NestedField] = {}
        name_to_id: dict[str, int] = {}
        id_to_name: dict[int, str] = {}
        parents: dict[int, int] = {}
        for name, f, parent in walk_fields(self.fields):
            by_id[f.field_id] = f
            name_to_id[name] = f.field_id
            id_to_name[f.field_id] = name
            if parent is not None:
                parents[f.field_id] = parent
        return by_id, name_to_id, id_to_name, parents

    @cached_property
    def _lower_name_to_id(self) -> dict[str, int]:
        return {k.lower(): v for k, v in self._index[1].items()}

    @cached_property
    def highest_field_id(self) -> int:
        return max(self._index[0], default=0)

    def field_ids(self) -> list[int]:
        """All field ids, depth first."""
        return list(self._index[0])

    def find_field(self, key: str | int, case_sensitive: bool = True) -> NestedField:
        """Find a field by id or dotted name; raises SchemaError when absent."""
        f = self.find_field_or_none(key, case_sensitive)
        if f is None:
            raise SchemaError(
                f"no column {key!r} in schema {self.schema_id}; "
                f"known columns: {', '.join(self.column_names)}"
            )
        return f

    def find_field_or_none(self, key: str | int, case_sensitive: bool = True) -> NestedField | None:
        by_id, name_to_id, _, _ = self._index
        if isinstance(key, int):
            return by_id.get(key)
        fid = name_to_id.get(key) if case_sensitive else self._lower_name_to_id.get(key.lower())
        return None if fid is None else by_id[fid]

    def find_type(self, key: str | int) -> IcebergType:
        return self.find_field(key).field_type

    def column_name(self, field_id: int) -> str | None:
        """The dotted name of a field id, or None."""
        return self._index[2].get(field_id)

    @property
    def identifier_field_names(self) -> list[str]:
        """The dotted names of the identifier fields (a table's primary key)."""
        return [self.column_name(i) or "" for i in self.identifier_field_ids]

    def parent_id(self, field_id: int) -> int | None:
        return self._index[3].get(field_id)

    @property
    def column_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def __iter__(self) -> Iterator[NestedField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    # -- derived schemas -------------------------------------------------------------

    def select(self, names: Iterable[str], case_sensitive: bool = True) -> Schema:
        """A schema with only the named top-level columns, in the given order."""
        out = []
        for n in names:
            f = self.struct.field_by_name(n, case_sensitive)
            if f is None:
                raise SchemaError(
                    f"no column {n!r} in the table; known columns: {', '.join(self.column_names)}"
                )
            out.append(f)
        return Schema(*out, schema_id=self.schema_id)

    def with_id(self, schema_id: int) -> Schema:
        return Schema(
            *self.fields, schema_id=schema_id, identifier_field_ids=self.identifier_field_ids
        )

    def same_structure(self, other: Schema) -> bool:
        """True when fields and identifier fields are equal (ids aside)."""
        return self.fields == other.fields and set(self.identifier_field_ids) == set(
            other.identifier_field_ids
        )

    # -- validation ------------------------------------------------------------------

    def validate_identifier_fields(self) -> None:
        """Identifier fields must be required primitives, not float/double, not nested
        in a list or map, and only inside required structs (spec "Identifier Field IDs")."""
        by_id, _, _, parents = self._index
        for fid in self.identifier_field_ids:
            f = by_id.get(fid)
            if f is None:
                raise SchemaError(f"identifier field id {fid} is not in the schema")
            name = self.column_name(fid)
            if not isinstance(f.field_type, PrimitiveType):
                raise SchemaError(f"identifier field {name!r} must be a primitive type")
            if isinstance(f.field_type, (FloatType, DoubleType)):
                raise SchemaError(f"identifier field {name!r} cannot be float or double")
            if not f.required:
                raise SchemaError(
                    f"identifier field {name!r} must be required; make it required first"
                )
            parent = parents.get(fid)
            while parent is not None:
                p = by_id[parent]
                if isinstance(p.field_type, (ListType, MapType)):
                    raise SchemaError(
                        f"identifier field {name!r} cannot be nested in a list or map"
                    )
                if not p.required:
                    raise SchemaError(
                        f"identifier field {name!r} cannot be nested in an optional struct"
                    )
                parent = parents.get(parent)

    def __str__(self) -> str:
        lines = [f"schema {self.schema_id} {{"]
        lines += [f"  {f}" for f in self.fields]
        lines.append("}")
        return "\n".join(lines)


def _rebuild_schema(
    fields: tuple[NestedField, ...], schema_id: int, identifier_field_ids: tuple[int, ...]
) -> Schema:
    return Schema(*fields, schema_id=schema_id, identifier_field_ids=identifier_field_ids)


# -- metadata columns (spec "Reserved Field IDs", "Row Lineage") -------------------------

#: v3 row lineage: a row's id, unique in the table. Null in a data file means
#: "inherited": the file's ``first_row_id`` plus the row's position.
ROW_ID = NestedField(2147483540, "_row_id", LONG, False)
#: v3 row lineage: the sequence number of the commit that last changed the row. Null in
#: a data file means "inherited": the file's data sequence number.
LAST_UPDATED_SEQUENCE_NUMBER = NestedField(2147483539, "_last_updated_sequence_number", LONG, False)
ROW_LINEAGE_FIELDS = (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER)
#: A row's position in its data file (0 for the first row): what position deletes
#: and deletion vectors name.
ROW_POSITION = NestedField(2147483645, "_pos", LONG, True)
_LINEAGE_IDS = frozenset(f.field_id for f in ROW_LINEAGE_FIELDS)


def is_row_lineage_field(field_id: int) -> bool:
    """Whether ``field_id`` is one of the two reserved row lineage columns."""
    return field_id in _LINEAGE_IDS


def row_lineage_field(name: str, case_sensitive: bool = True) -> NestedField | None:
    """The row lineage metadata column called ``name``, or None."""
    for f in ROW_LINEAGE_FIELDS:
        if f.name == name or (not case_sensitive and f.name.lower() == name.lower()):
            return f
    return None


def with_row_lineage(schema: Schema) -> Schema:
    """``schema`` followed by the row lineage columns it lacks: the schema of data files
    whose rows keep the ids and sequence numbers they had (copy-on-write rewrites)."""
    have = set(schema.field_ids())
    names = {n.lower() for n in schema.column_names}
    extra = []
    for f in ROW_LINEAGE_FIELDS:
        if f.field_id in have:
            continue
        if f.name.lower() in names:
            # readers find the column by its field id; the name only has to be free
            # (also to engines that ignore case, like Spark)
            f = f.with_(name=f"{f.name}_{f.field_id}")
        extra.append(f)
    if not extra:
        return schema
    return Schema(
        *schema.fields,
        *extra,
        schema_id=schema.schema_id,
        identifier_field_ids=schema.identifier_field_ids,
    )
