"""Iceberg name mappings (table property ``schema.name-mapping.default``): the field
ids of columns by the names they have had, for data files written without field ids
(spec "Column Projection"). :func:`neve.arrow.schema.apply_name_mapping` applies one
to an Arrow schema."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from neve.errors import SchemaError
from neve.spec.schema import Schema
from neve.spec.types import ListType, MapType, NestedField, StructType

__all__ = [
    "NAME_MAPPING_PROPERTY",
    "MappedField",
    "NameMapping",
    "create_name_mapping",
    "parse_name_mapping",
]

#: Table property holding the default name mapping.
NAME_MAPPING_PROPERTY = "schema.name-mapping.default"


@dataclass(frozen=True)
class MappedField:
    """One entry of a name mapping: the names a field has had, and its id."""

    names: tuple[str, ...]
    field_id: int | None = None
    fields: tuple[MappedField, ...] = ()

    @cached_property
    def _by_name(self) -> dict[str, MappedField]:
        return _index(self.fields)

    def child(self, name: str) -> MappedField | None:
        return self._by_name.get(name)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.field_id is not None:
            out["field-id"] = self.field_id
        out["names"] = list(self.names)
        if self.fields:
            out["fields"] = [f.to_dict() for f in self.fields]
        return out


def _index(fields: Iterable[MappedField]) -> dict[str, MappedField]:
    out: dict[str, MappedField] = {}
    for f in fields:
        for n in f.names:
            out[n] = f
    return out


@dataclass(frozen=True)
class NameMapping:
    """Iceberg's name mapping (``schema.name-mapping.default``): field ids by name path,
    for data files written without ids (spec "Column Projection")."""

    fields: tuple[MappedField, ...] = field(default=())

    @cached_property
    def _by_name(self) -> dict[str, MappedField]:
        return _index(self.fields)

    def find(self, *path: str) -> MappedField | None:
        """The mapped field at a name path (``"loc", "element", "lat"``), or None."""
        if not path:
            return None
        current = self._by_name.get(path[0])
        for name in path[1:]:
            if current is None:
                return None
            current = current.child(name)
        return current

    def to_json(self) -> str:
        return json.dumps([f.to_dict() for f in self.fields])


def parse_name_mapping(text: str) -> NameMapping:
    """Parse the JSON of ``schema.name-mapping.default``."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(
            f"the name mapping is not valid JSON ({exc}); fix {NAME_MAPPING_PROPERTY}"
        ) from exc
    return NameMapping(_parse_mapped_fields(raw, ()))


def _parse_mapped_fields(raw: Any, path: tuple[str, ...]) -> tuple[MappedField, ...]:
    where = ".".join(path) or "the top level"
    if not isinstance(raw, list):
        raise SchemaError(
            f"name mapping at {where} must be a list of {{field-id, names, fields}} objects"
        )
    out = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("names"), list):
            raise SchemaError(f"name mapping entry {item!r} at {where} needs a 'names' list")
        names = tuple(str(n) for n in item["names"])
        fid = item.get("field-id")
        if fid is not None and (isinstance(fid, bool) or not isinstance(fid, int)):
            raise SchemaError(f"name mapping entry {item!r} at {where} has a non-integer field-id")
        children = _parse_mapped_fields(item.get("fields") or [], (*path, *names[:1]))
        out.append(MappedField(names, fid, children))
    return tuple(out)


def create_name_mapping(schema: Schema) -> NameMapping:
    """The name mapping of a schema's current names (what table creation stores)."""

    def mapped(f: NestedField) -> MappedField:
        return MappedField((f.name,), f.field_id, tuple(mapped(c) for c in _ice_children(f)))

    return NameMapping(tuple(mapped(f) for f in schema.fields))


def _ice_children(f: NestedField) -> tuple[NestedField, ...]:
    t = f.field_type
    if isinstance(t, (StructType, ListType, MapType)):
        return t.children
    return ()
