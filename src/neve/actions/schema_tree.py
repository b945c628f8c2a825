"""The working schema of a schema change, as a tree of fields.

:class:`SchemaIndex` finds a field by id or by dotted name, with its place in the tree
(the field whose type holds it, and its role there: struct field, list element, map
key or value). As in Iceberg-Java, the ``element`` / ``value`` step of a list or map
of structs may be left out of a name (``points.x`` is ``points.element.x``).
:func:`replace_field` rebuilds the tree with one field changed or removed, and
:func:`check_unique_names` checks that no struct ends up with two fields of one name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from neve.errors import SchemaError
from neve.spec.types import IcebergType, ListType, MapType, NestedField, NestedType, StructType

__all__ = [
    "ELEMENT",
    "FIELD",
    "KEY",
    "VALUE",
    "FieldEntry",
    "SchemaIndex",
    "all_ids",
    "check_unique_names",
    "replace_field",
]

#: Roles a field plays inside its parent.
FIELD, ELEMENT, KEY, VALUE = "field", "element", "key", "value"


@dataclass(frozen=True)
class FieldEntry:
    """A field of the working schema with its place in the tree."""

    field: NestedField
    path: tuple[str, ...]
    parent_id: int | None  # id of the field whose type holds this one; None at top level
    role: str

    @property
    def name(self) -> str:
        return ".".join(self.path)


class SchemaIndex:
    """Lookups over a tuple of top-level fields: by id, by full dotted name and by the
    short name that skips list ``element`` / map ``value`` steps."""

    def __init__(self, fields: tuple[NestedField, ...], case_sensitive: bool) -> None:
        self.case_sensitive = case_sensitive
        self.by_id: dict[int, FieldEntry] = {}
        full: dict[str, int] = {}
        short: dict[str, int] = {}
        # (field, full path, short path or None, short path its children extend, parent, role)
        Item = tuple[
            NestedField, tuple[str, ...], tuple[str, ...] | None, tuple[str, ...], int | None, str
        ]
        stack: list[Item] = [
            (f, (f.name,), (f.name,), (f.name,), None, FIELD) for f in reversed(fields)
        ]
        while stack:
            f, path, alias, base, parent, role = stack.pop()
            self.by_id[f.field_id] = FieldEntry(f, path, parent, role)
            full.setdefault(self._key(".".join(path)), f.field_id)
            if alias is not None:
                short.setdefault(self._key(".".join(alias)), f.field_id)
            t = f.field_type
            children: list[Item] = []
            if isinstance(t, StructType):
                children = [
                    (c, (*path, c.name), (*base, c.name), (*base, c.name), f.field_id, FIELD)
                    for c in t.fields
                ]
            elif isinstance(t, ListType):
                children = [(t.element_field, (*path, "element"), None, base, f.field_id, ELEMENT)]
            elif isinstance(t, MapType):
                key_alias = (*base, "key")
                children = [
                    (t.key_field, (*path, "key"), key_alias, key_alias, f.field_id, KEY),
                    (t.value_field, (*path, "value"), None, base, f.field_id, VALUE),
                ]
            stack.extend(reversed(children))
        self.by_name = short
        self.by_name.update(full)  # a full name wins over an equal short one

    def _key(self, name: str) -> str:
        return name if self.case_sensitive else name.lower()

    def lookup(self, name: str) -> FieldEntry | None:
        fid = self.by_name.get(self._key(name))
        return None if fid is None else self.by_id[fid]


def replace_field(
    fields: tuple[NestedField, ...],
    target: int,
    fn: Callable[[NestedField], NestedField | None],
) -> tuple[NestedField, ...]:
    """Rebuild ``fields`` with the field ``target`` (anywhere below) passed through
    ``fn``; ``fn`` returning None removes a struct child."""
    out: list[NestedField] = []
    for f in fields:
        if f.field_id == target:
            new = fn(f)
            if new is not None:
                out.append(new)
        else:
            t = _replace_in_type(f.field_type, target, fn)
            out.append(f if t is f.field_type else f.with_(field_type=t))
    return tuple(out)


def _replace_in_type(
    t: IcebergType, target: int, fn: Callable[[NestedField], NestedField | None]
) -> IcebergType:
    if isinstance(t, StructType):
        fields = replace_field(t.fields, target, fn)
        return t if fields == t.fields else StructType(*fields)
    if isinstance(t, ListType):
        if t.element_id == target:
            new = fn(t.element_field)
            if new is None:  # guarded by the callers; kept as a safety net
                raise SchemaError("cannot delete a list element; delete the list column instead")
            return ListType(t.element_id, new.field_type, new.required)
        et = _replace_in_type(t.element_type, target, fn)
        return t if et is t.element_type else ListType(t.element_id, et, t.element_required)
    if isinstance(t, MapType):
        if t.value_id == target:
            new = fn(t.value_field)
            if new is None:
                raise SchemaError("cannot delete a map value; delete the map column instead")
            return MapType(t.key_id, t.key_type, t.value_id, new.field_type, new.required)
        kt = _replace_in_type(t.key_type, target, fn)
        vt = _replace_in_type(t.value_type, target, fn)
        if kt is t.key_type and vt is t.value_type:
            return t
        return MapType(t.key_id, kt, t.value_id, vt, t.value_required)
    return t


def all_ids(f: NestedField) -> set[int]:
    """The id of ``f`` and of every field nested in it."""
    ids = {f.field_id}
    t = f.field_type
    if isinstance(t, NestedType):
        for c in t.children:
            ids |= all_ids(c)
    return ids


def check_unique_names(fields: tuple[NestedField, ...], where: str) -> None:
    """Refuse two fields of one name in ``fields`` or in any struct nested in them
    (``where`` names the struct holding ``fields`` in the message)."""
    seen: set[str] = set()
    for f in fields:
        if f.name in seen:
            raise SchemaError(f"{where} has two fields named {f.name!r}; rename one")
        seen.add(f.name)
        _check_type_names(f.field_type, f.name)


def _check_type_names(t: IcebergType, where: str) -> None:
    if isinstance(t, StructType):
        check_unique_names(t.fields, repr(where))
    elif isinstance(t, NestedType):
        for c in t.children:
            _check_type_names(c.field_type, f"{where}.{c.name}")
