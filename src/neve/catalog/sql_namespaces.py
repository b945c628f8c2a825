"""Namespaces in the SQL catalog: rows of ``iceberg_namespace_properties`` (with the
``exists`` marker Iceberg-Java writes for every namespace), and the namespaces that
table rows imply. Names are stored dotted (``a.b``)."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Table, and_, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from neve.catalog.sql_tables import (
    EXISTS_KEY,
    ICEBERG_TABLES,
    NAMESPACE_PROPERTIES,
    dotted_name,
    like_prefix,
)
from neve.errors import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    ValidationError,
)

__all__ = ["SqlNamespaces"]

_T = ICEBERG_TABLES.c
_P = NAMESPACE_PROPERTIES.c
Identifier = tuple[str, ...]


class SqlNamespaces:
    """The namespace primitives of :class:`neve.catalog.sql.SqlCatalog`."""

    name: str

    if TYPE_CHECKING:  # provided by SqlCatalog

        def reading(self, action: str) -> AbstractContextManager[Connection]: ...

        def writing(self, action: str) -> AbstractContextManager[Connection]: ...

        def insert_if_absent(self, conn: Connection, table: Table, row: dict[str, Any]) -> bool: ...

    def _namespace_exists(self, conn: Connection, dotted: str) -> bool:
        for col, table_col in (
            (_P.namespace, _P.catalog_name),
            (_T.table_namespace, _T.catalog_name),
        ):
            exact = select(col).where(table_col == self.name, col == dotted).limit(1)
            if conn.execute(exact).first() is not None:
                return True
        return bool(self._descendants(conn, dotted))

    def _descendants(self, conn: Connection, dotted: str) -> set[str]:
        """Dotted names of namespaces below ``dotted`` that have rows."""
        pattern = like_prefix(dotted)
        stmt = (
            select(_P.namespace)
            .where(_P.catalog_name == self.name, _P.namespace.like(pattern, escape="!"))
            .union(
                select(_T.table_namespace).where(
                    _T.catalog_name == self.name, _T.table_namespace.like(pattern, escape="!")
                )
            )
        )
        # LIKE ignores case on SQLite: check the prefix exactly here.
        return {ns for ns in conn.execute(stmt).scalars() if ns.startswith(dotted + ".")}

    def _create_namespace(self, namespace: Identifier, properties: Mapping[str, str]) -> None:
        dotted = dotted_name(namespace)
        try:
            with self.writing(f"creating namespace {dotted}") as conn:
                if self._namespace_exists(conn, dotted):
                    raise NamespaceAlreadyExistsError(
                        f"namespace {dotted} exists already; use it, or pick another name"
                    )
                for i in range(1, len(namespace)):  # parents exist implicitly: make them real
                    parent = dotted_name(namespace[:i])
                    if not self._namespace_exists(conn, parent):
                        row = self._property_row(parent, EXISTS_KEY, "true")
                        self.insert_if_absent(conn, NAMESPACE_PROPERTIES, row)
                rows = [
                    self._property_row(dotted, k, v)
                    for k, v in {**properties, EXISTS_KEY: "true"}.items()
                ]
                conn.execute(insert(NAMESPACE_PROPERTIES), rows)
        except IntegrityError as exc:
            raise NamespaceAlreadyExistsError(
                f"namespace {dotted} was created by someone else at the same time; use it"
            ) from exc

    def _property_row(self, dotted: str, key: str, value: str) -> dict[str, str]:
        return {
            "catalog_name": self.name,
            "namespace": dotted,
            "property_key": key,
            "property_value": value,
        }

    def _namespace_properties(self, namespace: Identifier) -> dict[str, str]:
        dotted = dotted_name(namespace)
        with self.reading(f"reading namespace {dotted}") as conn:
            rows = conn.execute(
                select(_P.property_key, _P.property_value).where(
                    _P.catalog_name == self.name, _P.namespace == dotted
                )
            ).all()
            if not rows and not self._namespace_exists(conn, dotted):
                raise NoSuchNamespaceError(
                    f"namespace {dotted} does not exist; create it with "
                    f"catalog.create_namespace({dotted!r})"
                )
        return {k: v or "" for k, v in rows if k != EXISTS_KEY}

    def _update_namespace_properties(
        self, namespace: Identifier, removals: set[str], updates: Mapping[str, str]
    ) -> None:
        dotted = dotted_name(namespace)
        both = removals & set(updates)
        if both:
            raise ValidationError(
                f"properties {sorted(both)} are both removed and updated; pick one for each"
            )
        removals = removals - {EXISTS_KEY}
        updates = {k: v for k, v in updates.items() if k != EXISTS_KEY}
        where_ns = and_(_P.catalog_name == self.name, _P.namespace == dotted)
        with self.writing(f"updating namespace {dotted}") as conn:
            if not self._namespace_exists(conn, dotted):
                raise NoSuchNamespaceError(f"namespace {dotted} does not exist; create it first")
            if removals:
                conn.execute(
                    delete(NAMESPACE_PROPERTIES).where(
                        where_ns, _P.property_key.in_(sorted(removals))
                    )
                )
            # Update in place, insert what is new: rows another writer touches at the
            # same time are then overwritten, not duplicated.
            for key, value in {**updates, EXISTS_KEY: "true"}.items():
                changed = conn.execute(
                    update(NAMESPACE_PROPERTIES)
                    .where(where_ns, _P.property_key == key)
                    .values(property_value=value)
                ).rowcount
                row = self._property_row(dotted, key, value)
                if changed == 0 and not self.insert_if_absent(conn, NAMESPACE_PROPERTIES, row):
                    conn.execute(
                        update(NAMESPACE_PROPERTIES)
                        .where(where_ns, _P.property_key == key)
                        .values(property_value=value)
                    )

    def _drop_namespace(self, namespace: Identifier) -> None:
        dotted = dotted_name(namespace)
        with self.writing(f"dropping namespace {dotted}") as conn:
            if not self._namespace_exists(conn, dotted):
                raise NoSuchNamespaceError(f"namespace {dotted} does not exist")
            tables = (
                conn.execute(
                    select(_T.table_name).where(
                        _T.catalog_name == self.name, _T.table_namespace == dotted
                    )
                )
                .scalars()
                .all()
            )
            if tables:
                raise NamespaceNotEmptyError(
                    f"namespace {dotted} still holds {len(tables)} table(s) "
                    f"({', '.join(sorted(tables)[:5])}); drop them first"
                )
            children = self._descendants(conn, dotted)
            if children:
                raise NamespaceNotEmptyError(
                    f"namespace {dotted} still holds namespaces "
                    f"({', '.join(sorted(children)[:5])}); drop them first"
                )
            conn.execute(
                delete(NAMESPACE_PROPERTIES).where(
                    _P.catalog_name == self.name, _P.namespace == dotted
                )
            )

    def _list_namespaces(self, parent: Identifier) -> list[Identifier]:
        with self.reading("listing namespaces") as conn:
            if parent:
                dotted = dotted_name(parent)
                if not self._namespace_exists(conn, dotted):
                    raise NoSuchNamespaceError(f"namespace {dotted} does not exist")
                names = self._descendants(conn, dotted)
            else:
                stmt = (
                    select(_P.namespace)
                    .where(_P.catalog_name == self.name)
                    .union(select(_T.table_namespace).where(_T.catalog_name == self.name))
                )
                names = set(conn.execute(stmt).scalars())
        depth = len(parent) + 1
        return list({tuple(n.split("."))[:depth] for n in names if n.count(".") + 1 >= depth})

    # -- tables ----------------------------------------------------------------------
