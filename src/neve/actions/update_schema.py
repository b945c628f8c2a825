"""Schema evolution as a pure builder (spec "Schema Evolution").

:class:`UpdateSchema` records changes to a schema — add, delete, rename, promote,
reorder, identifier fields — and :meth:`UpdateSchema.apply` returns the new schema and
the new ``last-column-id``. It does no I/O and commits nothing: the table layer hands it
an ``on_commit`` callback and turns the result into metadata updates.

Changes are applied one after the other to a working copy (a tree of fields,
:mod:`neve.actions.schema_tree`), so later calls see earlier ones (a renamed column is
found by its new name). Names are dotted paths; as in Iceberg-Java, the ``element`` /
``value`` step of a list or map of structs may be left out (``points.x`` is
``points.element.x``). What may happen to a column's type and default is in
:mod:`neve.actions.column_types` and :mod:`neve.actions.column_defaults`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from neve.actions.base import ChangeBuilder
from neve.actions.column_defaults import coerce_default, same_default
from neve.actions.column_types import check_format_types, is_promotion_allowed
from neve.actions.schema_tree import (
    FIELD,
    KEY,
    FieldEntry,
    SchemaIndex,
    all_ids,
    check_unique_names,
    replace_field,
)
from neve.errors import SchemaError
from neve.spec.schema import Schema
from neve.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    NestedType,
    PrimitiveType,
    StructType,
    parse_type,
)

__all__ = ["ColumnPath", "UpdateSchema", "is_promotion_allowed"]

ColumnPath = str | tuple[str, ...]
"""A dotted column name (``"a.b"``) or its segments (``("a", "b")``); segments may
themselves contain dots."""


class UpdateSchema(ChangeBuilder):
    """Builds a new schema from ``schema`` by the spec's evolution rules.

    Use it as a context manager: on a normal exit ``on_commit(self)`` is called (without a
    callback, the changes are only validated); on an exception nothing happens.
    Every method returns ``self`` so calls chain.
    """

    def __init__(
        self,
        schema: Schema,
        last_column_id: int,
        format_version: int,
        case_sensitive: bool = True,
        on_commit: Callable[[UpdateSchema], None] | None = None,
    ) -> None:
        self._base = schema
        self._fields: tuple[NestedField, ...] = schema.fields
        self._last_column_id = max(last_column_id, schema.highest_field_id)
        self._format_version = format_version
        self._case_sensitive = case_sensitive
        self._on_commit = on_commit
        self._allow_incompatible = False
        self._identifier_ids: tuple[int, ...] = schema.identifier_field_ids
        self._added: set[int] = set()  # every id created here, nested ones included
        self._changed: set[int] = set()  # renamed, retyped, re-documented, re-nulled
        self._index_cache: SchemaIndex | None = None
        self._base_index = SchemaIndex(schema.fields, case_sensitive)

    # -- lookups -----------------------------------------------------------------------

    @property
    def _index(self) -> SchemaIndex:
        if self._index_cache is None:
            self._index_cache = SchemaIndex(self._fields, self._case_sensitive)
        return self._index_cache

    def _set_fields(self, fields: tuple[NestedField, ...]) -> None:
        self._fields = fields
        self._index_cache = None

    def _name_key(self, name: str) -> str:
        return name if self._case_sensitive else name.lower()

    @staticmethod
    def _path_str(path: ColumnPath) -> str:
        return path if isinstance(path, str) else ".".join(path)

    def _find(self, path: ColumnPath, action: str) -> FieldEntry:
        name = self._path_str(path)
        entry = self._index.lookup(name)
        if entry is not None:
            return entry
        old = self._base_index.lookup(name)
        if old is not None:
            now = self._index.by_id.get(old.field.field_id)
            if now is None:
                raise SchemaError(
                    f"cannot {action} column {name!r}: it is deleted earlier in this same "
                    "change; do one or the other"
                )
            raise SchemaError(
                f"cannot {action} column {name!r}: it was renamed to {now.name!r} earlier "
                "in this change; use the new name"
            )
        raise SchemaError(
            f"cannot {action} column {name!r}: no such column; "
            f"top-level columns are: {', '.join(f.name for f in self._fields) or '(none)'}"
        )

    def _children(self, holder_id: int | None) -> tuple[NestedField, ...]:
        if holder_id is None:
            return self._fields
        t = self._index.by_id[holder_id].field.field_type
        assert isinstance(t, StructType)
        return t.fields

    def _sibling_named(self, holder_id: int | None, name: str) -> NestedField | None:
        key = self._name_key(name)
        for f in self._children(holder_id):
            if self._name_key(f.name) == key:
                return f
        return None

    def _holder_name(self, holder_id: int | None) -> str:
        return "the table" if holder_id is None else repr(self._index.by_id[holder_id].name)

    def _edit_field(self, field_id: int, fn: Callable[[NestedField], NestedField | None]) -> None:
        self._set_fields(replace_field(self._fields, field_id, fn))

    def _edit_children(
        self,
        holder_id: int | None,
        fn: Callable[[tuple[NestedField, ...]], tuple[NestedField, ...]],
    ) -> None:
        if holder_id is None:
            self._set_fields(fn(self._fields))
            return

        def edit(f: NestedField) -> NestedField:
            assert isinstance(f.field_type, StructType)
            return f.with_(field_type=StructType(*fn(f.field_type.fields)))

        self._edit_field(holder_id, edit)

    def _next_id(self) -> int:
        self._last_column_id += 1
        return self._last_column_id

    # -- options -----------------------------------------------------------------------

    def allow_incompatible_changes(self) -> UpdateSchema:
        """Allow changes that may break reading existing data (optional -> required,
        adding a required column without a default)."""
        self._allow_incompatible = True
        return self

    def _require_v3(self, what: str, otherwise: str) -> None:
        if self._format_version < 3:
            raise SchemaError(
                f"{what}: column defaults need format version 3 and this table is version "
                f"{self._format_version}; upgrade it first (set_properties("
                "{'format-version': '3'})), or do it " + otherwise
            )

    # -- adding ------------------------------------------------------------------------

    def add_column(
        self,
        path: ColumnPath,
        field_type: IcebergType | str,
        doc: str | None = None,
        required: bool = False,
        default: Any = None,
        *,
        initial_default: Any = None,
        write_default: Any = None,
    ) -> UpdateSchema:
        """Add a column. ``path`` names the new column inside its parent struct
        (``"a.b.new"``); a list or map parent means its element / value struct. Nested
        types get fresh field ids.

        Defaults need format v3 (spec "Default values"): ``initial_default`` is what rows
        written before the column existed read as, ``write_default`` what a later write
        that omits the column stores; ``default`` sets both. A required column needs
        both (spec "Schema Evolution"); :meth:`update_column_default` changes the write
        default later."""
        if default is not None and (initial_default is not None or write_default is not None):
            raise SchemaError(
                f"cannot add column {self._path_str(path)!r}: give either default= (both "
                "defaults) or initial_default= / write_default=, not both"
            )
        if default is not None:
            initial_default = write_default = default
        if isinstance(path, str):
            segments = tuple(path.split("."))
        elif isinstance(path, (tuple, list)) and all(isinstance(p, str) for p in path):
            segments = tuple(path)
        else:
            raise SchemaError(
                f"a column is named by a string ('a.b') or a tuple of strings, not {path!r}"
            )
        if not segments or any(not s for s in segments):
            raise SchemaError(f"invalid column name {path!r}: names must not be empty")
        holder_id: int | None = None
        if len(segments) > 1:
            holder_id = self._resolve_parent(segments[:-1])
        self._add_field(
            holder_id, segments[-1], field_type, doc, required, initial_default, write_default
        )
        return self

    def _resolve_parent(self, parent: tuple[str, ...]) -> int:
        entry = self._find(".".join(parent), "add to")
        f = entry.field
        if entry.role == KEY:
            raise SchemaError(f"cannot add fields to map keys ({entry.name!r})")
        t = f.field_type
        if isinstance(t, ListType):
            f = t.element_field
        elif isinstance(t, MapType):
            f = t.value_field
        if not isinstance(f.field_type, StructType):
            raise SchemaError(
                f"cannot add a field to {entry.name!r}: it is {f.field_type}, not a struct"
            )
        return f.field_id

    def _add_field(
        self,
        holder_id: int | None,
        name: str,
        field_type: IcebergType | str,
        doc: str | None,
        required: bool,
        initial_default: Any = None,
        write_default: Any = None,
    ) -> int:
        full = name if holder_id is None else f"{self._index.by_id[holder_id].name}.{name}"
        t = parse_type(field_type) if isinstance(field_type, str) else field_type
        check_format_types(t, self._format_version, full)
        clash = self._sibling_named(holder_id, name)
        if clash is not None:
            raise SchemaError(
                f"cannot add column {full!r}: {self._holder_name(holder_id)} already has a "
                f"field named {clash.name!r}; rename or delete it first, or pick another name"
            )
        if initial_default is not None or write_default is not None:
            self._require_v3(f"cannot add column {full!r} with a default value", "without one")
        if initial_default is not None:
            initial_default = coerce_default(initial_default, t, full)
        if write_default is not None:
            write_default = coerce_default(write_default, t, full)
        if required and not self._allow_incompatible:
            # spec "Schema Evolution": a required field is added with both defaults set
            if initial_default is None:
                raise SchemaError(
                    f"cannot add required column {full!r} without a default value: existing "
                    "rows have no value for it; add it as optional, or give a default in a "
                    "format version 3 table"
                )
            if write_default is None:
                raise SchemaError(
                    f"cannot add required column {full!r} without a write default: a required "
                    "column is added with both defaults; give write_default= too (or "
                    "default= for both)"
                )
        new_id = self._next_id()
        new_field = NestedField(
            new_id,
            name,
            self._fresh_ids(t),
            required,
            doc,
            initial_default=initial_default,
            write_default=write_default,
        )
        self._edit_children(holder_id, lambda fields: (*fields, new_field))
        self._added |= all_ids(new_field)
        return new_id

    def _fresh_ids(self, t: IcebergType) -> IcebergType:
        # Same order as Iceberg-Java's assignFreshIds: the fields of one struct (or the
        # key and value of a map) get consecutive ids before their nested children.
        if isinstance(t, StructType):
            ids = [self._next_id() for _ in t.fields]
            return StructType(
                *(
                    f.with_(field_id=i, field_type=self._fresh_ids(f.field_type))
                    for f, i in zip(t.fields, ids, strict=True)
                )
            )
        if isinstance(t, ListType):
            eid = self._next_id()
            return ListType(eid, self._fresh_ids(t.element_type), t.element_required)
        if isinstance(t, MapType):
            kid, vid = self._next_id(), self._next_id()
            return MapType(
                kid,
                self._fresh_ids(t.key_type),
                vid,
                self._fresh_ids(t.value_type),
                t.value_required,
            )
        return t

    # -- deleting ----------------------------------------------------------------------

    def delete_column(self, path: ColumnPath) -> UpdateSchema:
        """Delete a column (and everything nested in it). Identifier fields cannot be
        deleted until :meth:`set_identifier_fields` leaves them out."""
        entry = self._find(path, "delete")
        if entry.role != FIELD:
            raise SchemaError(
                f"cannot delete {entry.name!r}: a list element or map key/value cannot be "
                "deleted on its own; delete the list or map column instead"
            )
        fid = entry.field.field_id
        if fid in self._added:
            raise SchemaError(
                f"cannot delete column {entry.name!r}: it is added in this same change; "
                "leave out the add instead"
            )
        touched = all_ids(entry.field) & (self._changed | self._added)
        if touched:
            raise SchemaError(
                f"cannot delete column {entry.name!r}: it (or a field nested in it) has other "
                "changes in this update; drop those changes or delete in a separate update"
            )
        self._edit_field(fid, lambda f: None)
        return self

    drop_column = delete_column

    # -- renaming ----------------------------------------------------------------------

    def rename_column(self, path: ColumnPath, new_name: str) -> UpdateSchema:
        """Rename the last step of ``path`` to ``new_name``; the field id is kept."""
        entry = self._find(path, "rename")
        if entry.role != FIELD:
            raise SchemaError(
                f"cannot rename {entry.name!r}: list elements and map keys/values have fixed names"
            )
        if not new_name:
            raise SchemaError(f"cannot rename {entry.name!r} to an empty name")
        if new_name == entry.field.name:
            return self
        clash = self._sibling_named(entry.parent_id, new_name)
        if clash is not None and clash.field_id != entry.field.field_id:
            raise SchemaError(
                f"cannot rename {entry.name!r} to {new_name!r}: "
                f"{self._holder_name(entry.parent_id)} already has a field named "
                f"{clash.name!r}; rename or delete that one first"
            )
        self._edit_field(entry.field.field_id, lambda f: f.with_(name=new_name))
        self._changed.add(entry.field.field_id)
        return self

    # -- updating ----------------------------------------------------------------------

    def update_column(
        self,
        path: ColumnPath,
        field_type: IcebergType | str | None = None,
        doc: str | None = None,
        required: bool | None = None,
    ) -> UpdateSchema:
        """Promote the type, change the doc and/or the nullability of a column.
        Only the spec's promotions are allowed; optional -> required needs
        :meth:`allow_incompatible_changes` (or an added column with a default)."""
        entry = self._find(path, "update")
        if entry.role == KEY:
            raise SchemaError(
                f"cannot update map key {entry.name!r}: map keys cannot change; "
                "add a new map column instead"
            )
        f = entry.field
        new = f
        if field_type is not None:
            new = new.with_(field_type=self._promoted(entry, field_type))
        if doc is not None and doc != f.doc:
            new = new.with_(doc=doc)
        if required is not None and required != f.required:
            if (
                required
                and not self._allow_incompatible
                and not (f.field_id in self._added and f.initial_default is not None)
            ):
                raise SchemaError(
                    f"cannot make column {entry.name!r} required: existing rows may hold "
                    "nulls; call allow_incompatible_changes() first if you are sure they "
                    "do not"
                )
            new = new.with_(required=required)
        if new != f:
            self._edit_field(f.field_id, lambda _: new)
            self._changed.add(f.field_id)
        return self

    def update_column_default(self, path: ColumnPath, value: Any) -> UpdateSchema:
        """Change a column's write default: what a later write that omits the column
        stores (format v3; spec "Default values"). Rows already written keep their
        values and the initial default never changes. ``None`` clears the write
        default; a required column without one can then only be written with a value
        for it (as Iceberg-Java's ``updateColumnDefault`` allows)."""
        entry = self._find(path, "change the default of")
        if entry.role != FIELD:
            raise SchemaError(
                f"cannot give {entry.name!r} a default: defaults belong to struct fields, "
                "not to list elements or map keys and values"
            )
        self._require_v3(f"cannot change the default of {entry.name!r}", "without a default")
        f = entry.field
        new = None if value is None else coerce_default(value, f.field_type, entry.name)
        if not same_default(f.field_type, new, f.write_default):
            self._edit_field(f.field_id, lambda g: g.with_(write_default=new))
            self._changed.add(f.field_id)
        return self

    def _promoted(self, entry: FieldEntry, field_type: IcebergType | str) -> IcebergType:
        old = entry.field.field_type
        new = parse_type(field_type) if isinstance(field_type, str) else field_type
        if new == old:
            return old
        if isinstance(old, NestedType) or isinstance(new, NestedType):
            raise SchemaError(
                f"cannot change column {entry.name!r} from {old} to {new}: only primitive "
                "types can be promoted; add a new column instead"
            )
        if not is_promotion_allowed(old, new, self._format_version):
            raise SchemaError(
                f"cannot change column {entry.name!r} from {old} to {new}: the spec allows "
                "only int -> long, float -> double and decimal(P,S) -> decimal(P2,S) with "
                "P2 > P; add a new column instead"
            )
        check_format_types(new, self._format_version, entry.name)
        return new

    def make_column_optional(self, path: ColumnPath) -> UpdateSchema:
        """Allow nulls in a column (always a compatible change)."""
        return self.update_column(path, required=False)

    def require_column(self, path: ColumnPath) -> UpdateSchema:
        """Disallow nulls in a column (incompatible: see :meth:`update_column`)."""
        return self.update_column(path, required=True)

    # -- moving ------------------------------------------------------------------------

    def move_first(self, path: ColumnPath) -> UpdateSchema:
        """Move a column to the front of its struct."""
        entry = self._movable(path)
        fid = entry.field.field_id
        self._edit_children(
            entry.parent_id,
            lambda fs: (entry.field, *(f for f in fs if f.field_id != fid)),
        )
        return self

    def move_before(self, path: ColumnPath, other: ColumnPath) -> UpdateSchema:
        """Move a column just before ``other``, a column of the same struct."""
        return self._move_next_to(path, other, after=False)

    def move_after(self, path: ColumnPath, other: ColumnPath) -> UpdateSchema:
        """Move a column just after ``other``, a column of the same struct."""
        return self._move_next_to(path, other, after=True)

    def _movable(self, path: ColumnPath) -> FieldEntry:
        entry = self._find(path, "move")
        if entry.role != FIELD:
            raise SchemaError(
                f"cannot move {entry.name!r}: only fields of a struct can be reordered"
            )
        return entry

    def _move_next_to(self, path: ColumnPath, other: ColumnPath, after: bool) -> UpdateSchema:
        entry = self._movable(path)
        ref = self._movable(other)
        word = "after" if after else "before"
        if entry.field.field_id == ref.field.field_id:
            raise SchemaError(f"cannot move {entry.name!r} {word} itself")
        if entry.parent_id != ref.parent_id:
            raise SchemaError(
                f"cannot move {entry.name!r} {word} {ref.name!r}: they are in different "
                "structs; columns can only be reordered within their own struct"
            )
        fid, rid = entry.field.field_id, ref.field.field_id

        def reorder(fields: tuple[NestedField, ...]) -> tuple[NestedField, ...]:
            rest = [f for f in fields if f.field_id != fid]
            at = next(i for i, f in enumerate(rest) if f.field_id == rid)
            rest.insert(at + 1 if after else at, entry.field)
            return tuple(rest)

        self._edit_children(entry.parent_id, reorder)
        return self

    # -- identifier fields -------------------------------------------------------------

    def set_identifier_fields(self, *paths: ColumnPath) -> UpdateSchema:
        """Replace the identifier fields (the row key) with the named columns; they are
        validated against the spec's rules in :meth:`apply`."""
        ids: list[int] = []
        for p in paths:
            fid = self._find(p, "use as identifier").field.field_id
            if fid not in ids:
                ids.append(fid)
        self._identifier_ids = tuple(ids)
        return self

    # -- union -------------------------------------------------------------------------

    def union_by_name(self, new_schema: Schema) -> UpdateSchema:
        """Merge ``new_schema`` in by name: add the columns it has that the table lacks
        (as optional), promote types it widens, make optional what it has optional."""
        self._union_struct(new_schema.fields, None)
        return self

    def _union_struct(self, incoming: Iterable[NestedField], holder_id: int | None) -> None:
        for nf in incoming:
            existing = self._sibling_named(holder_id, nf.name)
            if existing is None:
                self._add_field(holder_id, nf.name, nf.field_type, nf.doc, False)
            else:
                self._union_field(existing.field_id, nf)

    def _union_field(self, field_id: int, nf: NestedField) -> None:
        entry = self._index.by_id[field_id]
        old_t, new_t = entry.field.field_type, nf.field_type
        if isinstance(old_t, StructType) and isinstance(new_t, StructType):
            self._union_struct(new_t.fields, field_id)
        elif isinstance(old_t, ListType) and isinstance(new_t, ListType):
            self._union_field(old_t.element_id, new_t.element_field)
        elif isinstance(old_t, MapType) and isinstance(new_t, MapType):
            if old_t.key_type != new_t.key_type and not (
                old_t.key_type.is_nested and new_t.key_type.is_nested
            ):
                raise SchemaError(
                    f"cannot merge map {entry.name!r}: key type {new_t.key_type} differs from "
                    f"{old_t.key_type} and map keys cannot change"
                )
            self._union_field(old_t.value_id, new_t.value_field)
        elif isinstance(old_t, PrimitiveType) and isinstance(new_t, PrimitiveType):
            if old_t != new_t and not is_promotion_allowed(new_t, old_t, self._format_version):
                # a narrower incoming type is ignored; a wider one is promoted
                self.update_column(entry.name, field_type=new_t)
        else:
            raise SchemaError(
                f"cannot merge column {entry.name!r}: {old_t} and {new_t} are different kinds "
                "of type; rename one of them"
            )
        entry = self._index.by_id[field_id]
        if entry.role == KEY:
            return
        if nf.optional and entry.field.required:
            self.update_column(entry.name, required=False)
        if nf.doc is not None and nf.doc != entry.field.doc:
            self.update_column(entry.name, doc=nf.doc)

    # -- result ------------------------------------------------------------------------

    def apply(self) -> tuple[Schema, int]:
        """The new schema and the new last column id. The schema id is a placeholder
        (current id + 1); the table layer reuses the id of an equal existing schema."""
        for fid in self._identifier_ids:
            if fid not in self._index.by_id:
                name = self._base.column_name(fid) or str(fid)
                raise SchemaError(
                    f"cannot delete identifier field {name!r}: change the identifier fields "
                    "first (call set_identifier_fields() without it)"
                )
        check_unique_names(self._fields, "the table")
        schema = Schema(
            *self._fields,
            schema_id=self._base.schema_id + 1,
            identifier_field_ids=self._identifier_ids,
        )
        schema.validate_identifier_fields()
        return schema, self._last_column_id
