"""One entry point to open a catalog: from a URI or folder, by a configured name, or as
configured (:mod:`neve.catalog.config` says how a catalog is chosen)."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse

from neve.catalog.base import Catalog
from neve.catalog.config import (
    DEFAULT_CATALOG_NAME,
    CatalogEntry,
    default_entry,
    looks_like_name,
    lookup,
)
from neve.catalog.filesystem import FilesystemCatalog
from neve.catalog.rest import RestCatalog
from neve.errors import NotFoundError, ValidationError
from neve.io.fileio import local_path
from neve.io.objectstore import OBJECT_SCHEMES

__all__ = ["connect", "open_entry"]

_SQL_SCHEMES = ("sqlite", "postgresql", "postgres")
_REST_SCHEMES = ("http", "https")


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
    uri: str | os.PathLike[str] | None = None,
    warehouse: str | os.PathLike[str] | None = None,
    *,
    name: str | None = None,
    **properties: Any,
) -> Catalog:
    """Open a catalog.

    - ``"sqlite:////abs/path.db"``, ``"sqlite:///relative.db"``,
      ``"postgresql://user:pw@host:5432/db"`` (psycopg 3 unless a driver is named, as in
      ``postgresql+psycopg://``): a :class:`SqlCatalog`; ``warehouse`` is required and
      says where new tables go (a folder or a URI such as ``s3://bucket/warehouse``).
    - ``"http(s)://host:port"``: a :class:`~neve.catalog.rest.RestCatalog`, an Iceberg
      REST catalog server (``neve serve`` or any other); ``warehouse`` is the warehouse
      the server should serve (a name or location, as the server understands it), and
      ``credential="client_id:secret"`` or ``token=...`` authenticate (docs/REST.md).
    - a folder path or ``file://`` URI: a :class:`FilesystemCatalog` on that folder;
      an object store URI (``s3://bucket/warehouse``, also ``s3a``, ``s3n``, ``gs``): a
      :class:`FilesystemCatalog` there, committing with conditional puts
      (docs/OBJECT-STORES.md; stores without them are refused).
    - a catalog name (``"prod"``: no ``://``, no ``/``, not starting with ``.`` or
      ``~``): the catalog configured under that name in neve's config file or
      pyiceberg's ``.pyiceberg.yaml`` (:mod:`neve.catalog.config`). A word that is not
      configured but is a folder in the current folder opens that folder (write
      ``./word`` to say so); a word that is both is refused as ambiguous.
    - nothing: the catalog ``NEVE_URI``/``NEVE_WAREHOUSE``, ``NEVE_CATALOG`` or the
      config files' default name; :class:`~neve.errors.CatalogNotConfiguredError` when
      there is none.

    ``name`` is the catalog name stored with every row of a SQL catalog (Iceberg-Java
    and pyiceberg see the same tables under the same name; default ``neve``, or what
    the configured catalog says). ``warehouse`` and other keyword arguments override a
    configured catalog's. Other keyword arguments become catalog properties (strings),
    e.g. FileIO credentials, or SQLite's busy timeout:
    ``connect(uri, warehouse, **{"sqlite.busy-timeout-ms": "5000"})`` (default 60000;
    see :class:`SqlCatalog`).
    """
    if (uri is not None and not isinstance(uri, (str, os.PathLike))) or (
        warehouse is not None and not isinstance(warehouse, (str, os.PathLike))
    ):
        raise ValidationError(
            f"connect() takes a URI or folder path (a string), not {uri!r}"
            + ("" if warehouse is None else f" with warehouse {warehouse!r}")
            + "; e.g. neve.connect('sqlite:////abs/catalog.db', warehouse='/abs/warehouse')"
        )
    props = {str(k): str(v) for k, v in properties.items()}
    wh = os.fspath(warehouse) if warehouse is not None else None
    if uri is None:
        if wh is not None:
            raise ValidationError(
                f"connect() got a warehouse ({wh!r}) but no URI: give the catalog's URI too, "
                "e.g. connect('sqlite:////abs/catalog.db', warehouse=...)"
            )
        return open_entry(default_entry(), name=name, **props)
    if isinstance(uri, str) and looks_like_name(uri):
        entry = _named(uri)
        if entry is not None:
            return open_entry(entry, warehouse=wh, name=name, **props)
    return _open_uri(os.fspath(uri), wh, name or DEFAULT_CATALOG_NAME, props)


def _named(word: str) -> CatalogEntry | None:
    """The configured catalog ``word`` names, or None when it is a folder here."""
    here = os.path.exists(word)
    try:
        entry = lookup(word)
    except NotFoundError:
        if here:
            return None  # an existing folder (or file) of that name, as before names
        raise
    if here:
        raise ValidationError(
            f"{word!r} is both a configured catalog ({entry.source}) and a path in the "
            f"current folder; write './{word}' for the folder, or run from another folder "
            "(the command takes --catalog NAME, which is always a name)"
        )
    return entry


def open_entry(
    entry: CatalogEntry,
    *,
    warehouse: str | None = None,
    name: str | None = None,
    **properties: str,
) -> Catalog:
    """Open a configured catalog; ``warehouse``, ``name`` and ``properties`` override
    what the entry says."""
    props = {**entry.properties, **properties}
    return _open_uri(entry.uri, warehouse or entry.warehouse, name or entry.name, props)


def _open_uri(uri: str, wh: str | None, name: str, props: dict[str, str]) -> Catalog:
    scheme = urlparse(uri).scheme if "://" in uri else ""
    if scheme in _REST_SCHEMES:
        return RestCatalog(name, uri, {**props, **({"warehouse": wh} if wh else {})})
    if scheme.partition("+")[0] in _SQL_SCHEMES:
        if not wh:
            raise ValidationError(
                f"a SQL catalog needs a warehouse, the place for new tables: "
                f"connect({uri!r}, warehouse='/abs/path') or warehouse='s3://bucket/warehouse'"
            )
        # heavy: SQLAlchemy loads with the first SQL catalog
        from neve.catalog.sql import SqlCatalog

        return SqlCatalog(name, _sql_uri(uri), _absolute(wh), props)
    if scheme in ("", "file"):
        folder = _absolute(uri)
        if wh is not None and _absolute(wh).rstrip("/") != folder.rstrip("/"):
            raise ValidationError(
                f"a filesystem catalog's warehouse is its folder {uri!r}; leave warehouse "
                f"unset (got {wh!r})"
            )
        return FilesystemCatalog(name, folder, props)
    if scheme in OBJECT_SCHEMES:
        if wh is not None and wh.rstrip("/") != uri.rstrip("/"):
            raise ValidationError(
                f"a filesystem catalog's warehouse is its location {uri!r}; leave warehouse "
                f"unset (got {wh!r})"
            )
        return FilesystemCatalog(name, uri, props)
    raise ValidationError(
        f"cannot open a catalog from {uri!r}: use 'sqlite:////path/catalog.db', "
        "'postgresql://user:pw@host/db' (with warehouse=...), 'http://host:8181' (a REST "
        "catalog), a local folder, or an object store location ('s3://bucket/warehouse'). "
        "Tables on "
        f"{scheme}:// need a SQL catalog: connect('sqlite:////path/catalog.db', "
        f"warehouse={uri!r})"
    )
