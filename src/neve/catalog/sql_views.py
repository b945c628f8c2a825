"""Views in the SQL catalog: rows of ``iceberg_tables`` whose ``iceberg_type`` is
``VIEW`` (Iceberg-Java's JDBC catalog keeps them the same way, so both see the same
views). A view and a table cannot share a name. Databases made by older clients,
without the ``iceberg_type`` column, hold no views.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, and_, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from neve.catalog.sql_tables import ICEBERG_TABLES, VIEW_TYPE, check_name, dotted_name
from neve.errors import (
    CommitFailedError,
    NoSuchNamespaceError,
    NoSuchViewError,
    ValidationError,
    ViewAlreadyExistsError,
)

__all__ = ["SqlViews"]

_T = ICEBERG_TABLES.c
Identifier = tuple[str, ...]


class SqlViews:
    """The view primitives of :class:`neve.catalog.sql.SqlCatalog`."""

    name: str
    stores_views = True

    if TYPE_CHECKING:  # provided by SqlCatalog

        def reading(self, action: str) -> AbstractContextManager[Connection]: ...

        def writing(self, action: str) -> AbstractContextManager[Connection]: ...

        @property
        def typed(self) -> bool: ...

        def namespace_exists(self, namespace: Any) -> bool: ...

    # -- primitives --------------------------------------------------------------------

    def _view_where(self, ident: Identifier) -> Any:
        return and_(
            _T.catalog_name == self.name,
            _T.table_namespace == dotted_name(ident[:-1]),
            _T.table_name == check_name(ident[-1], "view"),
            _T.iceberg_type == VIEW_TYPE,
        )

    def _need_views(self) -> None:
        if not self.typed:
            raise ValidationError(
                "this catalog database has no iceberg_type column (it was made by an older "
                "client), so it cannot hold views; upgrade it with Iceberg-Java's JDBC "
                "catalog (schema version V1) or use a new database"
            )

    def _view_metadata_location(self, ident: Identifier) -> str:
        if not self.typed:
            raise NoSuchViewError(f"view {'.'.join(ident)} does not exist")
        with self.reading(f"loading view {'.'.join(ident)}") as conn:
            loc = conn.execute(
                select(_T.metadata_location).where(self._view_where(ident))
            ).scalar_one_or_none()
        if not loc:
            raise NoSuchViewError(
                f"view {'.'.join(ident)} does not exist in catalog {self.name!r}; "
                f"list_views({'.'.join(ident[:-1])!r}) shows the views there"
            )
        return str(loc)

    def _check_namespace(self, namespace: Identifier) -> None:
        if not self.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"namespace {'.'.join(namespace)} does not exist")

    def _register_view(self, ident: Identifier, location: str) -> None:
        self._need_views()
        row = {
            "catalog_name": self.name,
            "table_namespace": dotted_name(ident[:-1]),
            "table_name": check_name(ident[-1], "view"),
            "metadata_location": location,
            "previous_metadata_location": None,
            "iceberg_type": VIEW_TYPE,
        }
        try:
            with self.writing(f"creating view {'.'.join(ident)}") as conn:
                conn.execute(insert(ICEBERG_TABLES).values(row))
        except IntegrityError as exc:
            raise ViewAlreadyExistsError(
                f"{'.'.join(ident)} exists already (a view or a table); pick another name"
            ) from exc

    def _swap_view(self, ident: Identifier, base_location: str, location: str) -> None:
        with self.writing(f"replacing view {'.'.join(ident)}") as conn:
            moved = conn.execute(
                update(ICEBERG_TABLES)
                .where(self._view_where(ident), _T.metadata_location == base_location)
                .values(metadata_location=location, previous_metadata_location=base_location)
            ).rowcount
        if moved != 1:
            raise CommitFailedError(
                f"view {'.'.join(ident)} was changed by another writer; reload it and retry"
            )

    def _drop_view(self, ident: Identifier) -> None:
        with self.writing(f"dropping view {'.'.join(ident)}") as conn:
            dropped = (
                conn.execute(delete(ICEBERG_TABLES).where(self._view_where(ident))).rowcount
                if self.typed
                else 0
            )
        if dropped != 1:
            raise NoSuchViewError(f"view {'.'.join(ident)} does not exist")

    def _rename_view(self, src: Identifier, dst: Identifier) -> None:
        self._need_views()
        try:
            with self.writing(f"renaming view {'.'.join(src)}") as conn:
                moved = conn.execute(
                    update(ICEBERG_TABLES)
                    .where(self._view_where(src))
                    .values(
                        table_namespace=dotted_name(dst[:-1]),
                        table_name=check_name(dst[-1], "view"),
                    )
                ).rowcount
        except IntegrityError as exc:
            raise ViewAlreadyExistsError(
                f"cannot rename to {'.'.join(dst)}: a view or table of that name exists"
            ) from exc
        if moved != 1:
            raise NoSuchViewError(f"view {'.'.join(src)} does not exist")

    def _list_views(self, namespace: Identifier) -> list[Identifier]:
        self._check_namespace(namespace)
        if not self.typed:
            return []
        with self.reading(f"listing views of {'.'.join(namespace)}") as conn:
            names: Iterator[str] = conn.execute(
                select(_T.table_name).where(
                    _T.catalog_name == self.name,
                    _T.table_namespace == dotted_name(namespace),
                    _T.iceberg_type == VIEW_TYPE,
                )
            ).scalars()
            return [(*namespace, n) for n in names]
