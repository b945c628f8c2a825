"""Views in a catalog: the user-facing :class:`View` handle and the view half of the
catalog API (create, load, replace, drop, rename, list), shared by every catalog that
stores views.

A view is a pointer to its current view metadata file, as a table is. A change is
view updates guarded by requirements (:meth:`ViewCatalog.commit_view`, the REST
protocol's shape): the updates are applied to the current metadata, the new file is
written and the pointer swapped atomically; a lost swap is tried again on the newer
version. Catalogs implement the primitives (``_view_metadata_location``,
``_register_view``, ``_swap_view``, ``_drop_view``, ``_rename_view``,
``_list_views``); those that store no views keep the defaults, which say so.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from neve.errors import (
    CommitFailedError,
    NeveIOError,
    NoSuchViewError,
    ValidationError,
    ViewAlreadyExistsError,
)
from neve.io.fileio import FileIO
from neve.spec.schema import Schema
from neve.spec.view_metadata import (
    LAST_ADDED,
    AddViewVersion,
    AssertViewUUID,
    SetCurrentViewVersion,
    SqlRepresentation,
    ViewAddSchema,
    ViewMetadata,
    ViewSetProperties,
    ViewUpdate,
    ViewVersion,
    apply_view_updates,
    new_view_metadata,
    view_metadata_from_json,
    view_metadata_to_json,
)
from neve.table.create import to_schema

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["View", "ViewCatalog", "view_ident"]

_SWAP_ATTEMPTS = 4
Identifier = tuple[str, ...]


def view_ident(name: str | Sequence[str]) -> Identifier:
    """``"db.v"`` or ``("db", "v")`` -> ``("db", "v")`` (a namespace is required)."""
    parts = tuple(name.split(".")) if isinstance(name, str) else tuple(name)
    if len(parts) < 2 or not all(isinstance(p, str) and p for p in parts):
        raise ValidationError(f"view name {name!r} needs a namespace: use 'namespace.view'")
    return parts


@dataclass(frozen=True)
class View:
    """A view: its name, current metadata and where the metadata is."""

    identifier: Identifier
    metadata: ViewMetadata
    metadata_location: str

    @property
    def name(self) -> str:
        return ".".join(self.identifier)

    def schema(self) -> Schema:
        return self.metadata.schema()

    def version(self) -> ViewVersion:
        return self.metadata.version()

    def sql(self, dialect: str = "spark") -> str:
        """The view's SQL text for ``dialect`` (:class:`ValidationError` naming the
        dialects it has when it has none for this one)."""
        v = self.version()
        text = v.sql_for(dialect)
        if text is None:
            have = ", ".join(r.dialect for r in v.representations)
            raise ValidationError(f"view {self.name} has no SQL for {dialect!r}; it has {have}")
        return text

    @property
    def properties(self) -> Mapping[str, str]:
        return self.metadata.properties


def _representations(sql: str | Mapping[str, str], dialect: str) -> tuple[SqlRepresentation, ...]:
    if isinstance(sql, str):
        return (SqlRepresentation(sql, dialect),)
    return tuple(SqlRepresentation(text, d) for d, text in sql.items())


class ViewCatalog:
    """The view half of a catalog (mixed into :class:`neve.catalog.base.Catalog`)."""

    io: FileIO
    warehouse: str
    name: str
    #: Whether the catalog stores views (those that do set it).
    stores_views: bool = False

    # -- primitives --------------------------------------------------------------------

    def _views(self) -> None:
        if not self.stores_views:
            raise self._no_views()

    def _no_views(self) -> ValidationError:
        return ValidationError(
            f"{type(self).__name__} does not store views; use a SQL catalog or a REST catalog"
        )

    def _view_metadata_location(self, ident: Identifier) -> str:
        """Location of the view's metadata; NoSuchViewError when absent."""
        raise self._no_views()

    def _register_view(self, ident: Identifier, location: str) -> None:
        """Add the view's row; ViewAlreadyExistsError when the name is taken (by a view
        or a table)."""
        raise self._no_views()

    def _swap_view(self, ident: Identifier, base_location: str, location: str) -> None:
        """Move the pointer atomically; CommitFailedError when it moved."""
        raise self._no_views()

    def _drop_view(self, ident: Identifier) -> None:
        raise self._no_views()

    def _rename_view(self, src: Identifier, dst: Identifier) -> None:
        raise self._no_views()

    def _list_views(self, namespace: Identifier) -> list[Identifier]:
        raise self._no_views()

    def _check_namespace(self, namespace: Identifier) -> None:
        """NoSuchNamespaceError when ``namespace`` is missing (the catalog's rule)."""
        raise self._no_views()

    # -- files -------------------------------------------------------------------------

    def _read_view(self, location: str) -> ViewMetadata:
        try:
            return view_metadata_from_json(json.loads(self.io.read_bytes(location)))
        except (ValueError, ValidationError) as exc:
            raise NeveIOError(f"view metadata {location} is damaged: {exc}") from exc

    def _write_view(self, md: ViewMetadata, version: int) -> str:
        location = f"{md.location}/metadata/{version:05d}-{uuid.uuid4()}.metadata.json"
        data = json.dumps(view_metadata_to_json(md), ensure_ascii=False).encode("utf-8")
        self.io.write_bytes(location, data)
        return location

    # -- the API -----------------------------------------------------------------------

    def create_view(
        self,
        name: str | Sequence[str],
        schema: Schema | pa.Schema,
        sql: str | Mapping[str, str],
        dialect: str = "spark",
        *,
        default_namespace: Sequence[str] | None = None,
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
    ) -> View:
        """Create a view of ``sql`` (one text, in ``dialect``; or a mapping of dialect
        to text) whose rows have ``schema``. Unqualified names in the SQL resolve in
        ``default_namespace`` (default: the view's own namespace)."""
        self._views()
        ident = view_ident(name)
        md = new_view_metadata(
            to_schema(schema),
            _representations(sql, dialect),
            list(default_namespace if default_namespace is not None else ident[:-1]),
            location or "/".join([self.warehouse, *ident]),
            properties,
        )
        return self.create_view_metadata(ident, md)

    def create_view_metadata(self, name: str | Sequence[str], md: ViewMetadata) -> View:
        """Create a view from metadata made elsewhere (a REST create request)."""
        self._views()
        ident = view_ident(name)
        self._check_namespace(ident[:-1])
        location = self._write_view(md, 0)
        try:
            self._register_view(ident, location)
        except ViewAlreadyExistsError:
            self.io.delete(location)
            raise
        return View(ident, md, location)

    def register_view(self, name: str | Sequence[str], metadata_location: str) -> View:
        """Track a view written by anyone, given its current metadata file."""
        self._views()
        ident = view_ident(name)
        self._check_namespace(ident[:-1])
        md = self._read_view(metadata_location)
        self._register_view(ident, metadata_location)
        return View(ident, md, metadata_location)

    def load_view(self, name: str | Sequence[str]) -> View:
        self._views()
        ident = view_ident(name)
        location = self._view_metadata_location(ident)
        return View(ident, self._read_view(location), location)

    def view_exists(self, name: str | Sequence[str]) -> bool:
        self._views()
        try:
            self._view_metadata_location(view_ident(name))
        except NoSuchViewError:
            return False
        return True

    def list_views(self, namespace: str | Sequence[str]) -> list[Identifier]:
        self._views()
        ns = tuple(namespace.split(".")) if isinstance(namespace, str) else tuple(namespace)
        return sorted(self._list_views(ns))

    def drop_view(self, name: str | Sequence[str]) -> None:
        self._views()
        self._drop_view(view_ident(name))

    def rename_view(self, src: str | Sequence[str], dst: str | Sequence[str]) -> None:
        self._views()
        s, d = view_ident(src), view_ident(dst)
        self._check_namespace(d[:-1])
        self._rename_view(s, d)

    def replace_view(
        self,
        name: str | Sequence[str],
        schema: Schema | pa.Schema,
        sql: str | Mapping[str, str],
        dialect: str = "spark",
        *,
        default_namespace: Sequence[str] | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> View:
        """Make a new version of the view current (the old ones are kept)."""
        ident = view_ident(name)
        current = self.load_view(ident)
        version = ViewVersion(
            version_id=0,
            timestamp_ms=0,
            schema_id=LAST_ADDED,
            representations=_representations(sql, dialect),
            default_namespace=tuple(
                default_namespace if default_namespace is not None else ident[:-1]
            ),
        )
        updates: list[ViewUpdate] = [
            ViewAddSchema(to_schema(schema)),
            AddViewVersion(version),
            SetCurrentViewVersion(LAST_ADDED),
        ]
        if properties:
            updates.append(ViewSetProperties(dict(properties)))
        return self.commit_view(ident, [AssertViewUUID(current.metadata.view_uuid)], updates)

    def commit_view(
        self,
        name: str | Sequence[str],
        requirements: Sequence[AssertViewUUID],
        updates: Sequence[ViewUpdate],
    ) -> View:
        """Apply view updates atomically after checking ``requirements`` (the REST
        protocol's view commit); a lost swap is tried again on the newer version."""
        self._views()
        ident = view_ident(name)
        for attempt in range(_SWAP_ATTEMPTS):
            base_location = self._view_metadata_location(ident)
            base = self._read_view(base_location)
            for r in requirements:
                r.check(base)
            new = apply_view_updates(base, updates)
            location = self._write_view(new, _version_of(base_location) + 1)
            try:
                self._swap_view(ident, base_location, location)
            except CommitFailedError:
                self.io.delete(location)
                if attempt + 1 < _SWAP_ATTEMPTS:
                    continue
                raise
            return View(ident, new, location)
        raise AssertionError("unreachable: the last attempt returns or raises")


def _version_of(location: str) -> int:
    name = location.rsplit("/", 1)[-1]
    head = name.split("-", 1)[0]
    return int(head) if head.isdigit() else 0
