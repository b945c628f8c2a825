"""One entry point to open a catalog from a URI."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse

from neve.catalog.base import Catalog
from neve.catalog.filesystem import FilesystemCatalog
from neve.catalog.sql import SqlCatalog
from neve.errors import ValidationError
from neve.io.fileio import local_path

__all__ = ["connect"]

_SQL_SCHEMES = ("sqlite", "postgresql", "postgres")


def _absolute(location: str) -> str:
    """Local paths become absolute (metadata must not hold relative paths); URIs stay."""
    if "://" in location and not location.startswith("file://"):
        return location
    if location.startswith("file:"):
        return "file://" + os.path.abspath(local_path(location))
    return os.path.abspath(os.path.expanduser(location))


def _sql_uri(uri: str) -> str:
    scheme, rest = uri.split("://", 1)
    backend, _, driver = scheme.partition("+")
    if backend in ("postgresql", "postgres"):
        return f"postgresql+{driver or 'psycopg'}://{rest}"
    return uri


def connect(
    uri: str | os.PathLike[str],
    warehouse: str | os.PathLike[str] | None = None,
    *,
    name: str = "neve",
    **properties: Any,
) -> Catalog:
    """Open a catalog.

    - ``"sqlite:////abs/path.db"``, ``"sqlite:///relative.db"``,
      ``"postgresql://user:pw@host:5432/db"`` (psycopg 3 unless a driver is named, as in
      ``postgresql+psycopg://``): a :class:`SqlCatalog`; ``warehouse`` is required and
      says where new tables go (a folder or a URI such as ``s3://bucket/warehouse``).
    - a folder path or ``file://`` URI: a :class:`FilesystemCatalog` on that folder.

    ``name`` is the catalog name stored with every row of a SQL catalog (Iceberg-Java
    and pyiceberg see the same tables under the same name). Other keyword arguments
    become catalog properties (strings), e.g. FileIO credentials, or SQLite's busy
    timeout: ``connect(uri, warehouse, **{"sqlite.busy-timeout-ms": "5000"})`` (default
    60000; see :class:`SqlCatalog`).
    """
    if not isinstance(uri, (str, os.PathLike)) or (
        warehouse is not None and not isinstance(warehouse, (str, os.PathLike))
    ):
        raise ValidationError(
            f"connect() takes a URI or folder path (a string), not {uri!r}"
            + ("" if warehouse is None else f" with warehouse {warehouse!r}")
            + "; e.g. neve.connect('sqlite:////abs/catalog.db', warehouse='/abs/warehouse')"
        )
    uri = os.fspath(uri)
    props = {str(k): str(v) for k, v in properties.items()}
    wh = os.fspath(warehouse) if warehouse is not None else None
    scheme = urlparse(uri).scheme if "://" in uri else ""
    if scheme.partition("+")[0] in _SQL_SCHEMES:
        if not wh:
            raise ValidationError(
                f"a SQL catalog needs a warehouse, the place for new tables: "
                f"connect({uri!r}, warehouse='/abs/path') or warehouse='s3://bucket/warehouse'"
            )
        return SqlCatalog(name, _sql_uri(uri), _absolute(wh), props)
    if scheme in ("", "file"):
        folder = _absolute(uri)
        if wh is not None and _absolute(wh).rstrip("/") != folder.rstrip("/"):
            raise ValidationError(
                f"a filesystem catalog's warehouse is its folder {uri!r}; leave warehouse "
                f"unset (got {wh!r})"
            )
        return FilesystemCatalog(name, folder, props)
    raise ValidationError(
        f"cannot open a catalog from {uri!r}: use 'sqlite:////path/catalog.db', "
        "'postgresql://user:pw@host/db' (with warehouse=...), or a local folder. Tables on "
        f"{scheme}:// need a SQL catalog: connect('sqlite:////path/catalog.db', "
        f"warehouse={uri!r})"
    )
