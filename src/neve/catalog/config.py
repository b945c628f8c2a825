"""Which catalog to open when none is given by URI: environment variables and config files.

A catalog is chosen, first match wins:

1. an explicit URI (``neve.connect(uri, warehouse)``, the command's ``--uri``);
2. an explicit catalog name (``neve.connect("prod")``, ``--catalog prod``, the Spark
   data source's ``catalog`` option without ``uri``), looked up in the config files;
3. ``NEVE_URI`` (with ``NEVE_WAREHOUSE``) in the environment;
4. ``NEVE_CATALOG`` in the environment, a name looked up in the config files;
5. neve's config file's ``default:`` (or its only catalog);
6. pyiceberg's default catalog (``default-catalog:``, else the one named ``default``,
   else its only SQL catalog).

neve's config file is ``$NEVE_CONFIG``, else ``$XDG_CONFIG_HOME/neve/config.yaml``, else
``~/.config/neve/config.yaml``::

    default: dev
    catalogs:
      dev:
        uri: sqlite:////home/me/neve/catalog.db
        warehouse: /home/me/neve/warehouse
      prod:
        uri: postgresql://me@db.example.com/lake
        warehouse: s3://lake/warehouse
        name: lake              # the catalog name stored in the rows (default: neve)
        s3.region: eu-west-1    # any other key is a catalog property

pyiceberg's ``.pyiceberg.yaml`` (in ``$PYICEBERG_HOME``, the home folder or the current
folder: the first one found, as pyiceberg looks) adds its SQL catalogs (``type: sql``,
or a ``uri`` starting with ``sqlite`` or ``postgresql``) and its REST catalogs
(``type: rest``, or an ``http(s)`` URI) under their pyiceberg names, and
their rows are read under that name, so the tables pyiceberg made are the ones neve
sees. A neve catalog of the same name hides pyiceberg's.

This module reads and writes the files; :func:`neve.catalog.connect.connect` opens the
catalog an entry describes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from neve.errors import CatalogNotConfiguredError, NoSuchCatalogError, ValidationError

__all__ = [
    "DEFAULT_CATALOG_NAME",
    "CatalogEntry",
    "configured_catalogs",
    "default_entry",
    "looks_like_name",
    "lookup",
    "neve_config_path",
    "pyiceberg_config_path",
    "register_catalog",
]

#: The catalog name stored in the rows of a SQL catalog when none is given.
DEFAULT_CATALOG_NAME = "neve"

_RESERVED = {"uri", "warehouse", "name", "type"}


@dataclass(frozen=True)
class CatalogEntry:
    """A catalog as configured: what :func:`neve.connect` needs to open it, and where
    it was found (``source``: a file path or an environment variable)."""

    key: str  # the name it is configured under
    uri: str
    warehouse: str | None
    name: str  # the catalog name stored in the rows of a SQL catalog
    source: str
    properties: Mapping[str, str] = field(default_factory=dict)


def neve_config_path() -> Path:
    """``$NEVE_CONFIG``, else ``$XDG_CONFIG_HOME/neve/config.yaml``, else
    ``~/.config/neve/config.yaml`` (the file need not exist)."""
    explicit = os.environ.get("NEVE_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "neve" / "config.yaml"


def pyiceberg_config_path() -> Path | None:
    """The ``.pyiceberg.yaml`` pyiceberg reads: the first of ``$PYICEBERG_HOME``, the
    home folder and the current folder that holds one."""
    for folder in (os.environ.get("PYICEBERG_HOME"), os.path.expanduser("~"), os.getcwd()):
        if folder and (candidate := Path(folder) / ".pyiceberg.yaml").is_file():
            return candidate
    return None


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ValidationError(f"cannot read the config file {path}: {exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValidationError(
            f"the config file {path} is not valid YAML ({exc}); fix it, or point "
            "NEVE_CONFIG at another file"
        ) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValidationError(
            f"the config file {path} must hold a mapping (catalogs: ..., default: ...), "
            f"not a {type(data).__name__}"
        )
    return data


def _entry(key: str, raw: Any, source: Path, default_name: str) -> CatalogEntry:
    if not isinstance(raw, dict):
        raise ValidationError(
            f"catalog {key!r} in {source} must be a mapping with uri: and warehouse:, not {raw!r}"
        )
    uri = raw.get("uri")
    if not isinstance(uri, str) or not uri:
        raise ValidationError(
            f"catalog {key!r} in {source} has no uri: give e.g. "
            "'sqlite:////abs/catalog.db', 'postgresql://user@host/db' or a folder path"
        )
    warehouse = raw.get("warehouse")
    if warehouse is not None and not isinstance(warehouse, str):
        raise ValidationError(f"catalog {key!r} in {source}: warehouse must be a string")
    name = raw.get("name", default_name)
    if not isinstance(name, str) or not name:
        raise ValidationError(f"catalog {key!r} in {source}: name must be a non-empty string")
    props = {}
    for k, v in raw.items():
        if k in _RESERVED:
            continue
        if isinstance(v, (dict, list)):
            raise ValidationError(
                f"catalog {key!r} in {source}: property {k!r} must be a single value"
            )
        props[str(k)] = str(v).lower() if isinstance(v, bool) else str(v)
    return CatalogEntry(str(key), uri, warehouse, name, str(source), props)


def _neve_catalogs() -> tuple[dict[str, CatalogEntry], str | None]:
    path = neve_config_path()
    data = _load(path)
    raw = data.get("catalogs") or {}
    if not isinstance(raw, dict):
        raise ValidationError(f"'catalogs' in {path} must map names to catalogs")
    entries = {str(k): _entry(str(k), v, path, DEFAULT_CATALOG_NAME) for k, v in raw.items()}
    default = data.get("default")
    if default is not None and not isinstance(default, str):
        raise ValidationError(f"'default' in {path} must be a catalog name")
    return entries, default


def _is_sql(raw: Mapping[str, Any]) -> bool:
    uri = raw.get("uri")
    kind = raw.get("type")
    if isinstance(kind, str):
        return kind.lower() == "sql"
    return isinstance(uri, str) and uri.startswith(("sqlite", "postgresql"))


def _is_rest(raw: Mapping[str, Any]) -> bool:
    uri, kind = raw.get("uri"), raw.get("type")
    if isinstance(kind, str):
        return kind.lower() == "rest"
    return isinstance(uri, str) and uri.startswith(("http://", "https://"))


def _pyiceberg_catalogs() -> tuple[dict[str, CatalogEntry], dict[str, str], str | None]:
    """pyiceberg's SQL catalogs, the names and types of the others, and its default."""
    path = pyiceberg_config_path()
    if path is None:
        return {}, {}, None
    data = _load(path)
    raw = data.get("catalog") or {}
    if not isinstance(raw, dict):
        return {}, {}, None
    entries: dict[str, CatalogEntry] = {}
    others: dict[str, str] = {}
    for key, conf in raw.items():
        if not isinstance(conf, dict):
            continue
        conf = {str(k).lower(): v for k, v in conf.items()}  # pyiceberg lower-cases keys
        if _is_sql(conf) or _is_rest(conf):
            entries[str(key)] = _entry(str(key), conf, path, str(key))
        else:
            others[str(key)] = str(conf.get("type") or "of another kind")
    default = data.get("default-catalog")
    return entries, others, default if isinstance(default, str) else None


def configured_catalogs() -> dict[str, CatalogEntry]:
    """Every catalog the config files name, by name (neve's hide pyiceberg's of the
    same name)."""
    neve, _ = _neve_catalogs()
    pyiceberg, _, _ = _pyiceberg_catalogs()
    return {**pyiceberg, **neve}


def _known(entries: Mapping[str, CatalogEntry]) -> str:
    if not entries:
        return (
            f"no catalogs are configured (neve looks in {neve_config_path()} and in "
            "pyiceberg's .pyiceberg.yaml)"
        )
    return "configured catalogs: " + ", ".join(
        f"{k} ({e.source})" for k, e in sorted(entries.items())
    )


def looks_like_name(text: str) -> bool:
    """Whether ``text`` is written as a catalog name rather than a URI or path: no
    ``://``, no path separator, not starting with ``~`` or ``.`` (``./x`` is a folder).
    :func:`neve.catalog.connect.connect` also looks at the current folder (its rule
    for a word that is both a configured catalog and a folder there)."""
    return (
        bool(text)
        and "://" not in text
        and "/" not in text
        and os.sep not in text
        and not text.startswith(("~", "."))
        and not text.startswith("file:")
    )


def lookup(key: str) -> CatalogEntry:
    """The catalog configured as ``key`` (:class:`NoSuchCatalogError` listing the known
    names when there is none)."""
    entries = configured_catalogs()
    entry = entries.get(key)
    if entry is not None:
        return entry
    _, others, _ = _pyiceberg_catalogs()
    if key in others:
        raise NoSuchCatalogError(
            f"catalog {key!r} in pyiceberg's config is {others[key]}; neve opens SQL "
            f"catalogs (SQLite, PostgreSQL), REST catalogs and folders. {_known(entries)}"
        )
    raise NoSuchCatalogError(
        f"no catalog named {key!r}; {_known(entries)}. Add it to {neve_config_path()} "
        "(catalogs: {" + key + ": {uri: ..., warehouse: ...}}), or give a URI; for a "
        f"filesystem catalog in a folder of that name write './{key}'"
    )


def default_entry() -> CatalogEntry:
    """The catalog to open when none is named: ``NEVE_URI``/``NEVE_WAREHOUSE``, else
    ``NEVE_CATALOG``, else the config files' default (see the module docstring);
    :class:`CatalogNotConfiguredError` saying how to configure one when nothing is."""
    uri = os.environ.get("NEVE_URI")
    if uri:
        return CatalogEntry(
            "NEVE_URI",
            uri,
            os.environ.get("NEVE_WAREHOUSE") or None,
            os.environ.get("NEVE_CATALOG") or DEFAULT_CATALOG_NAME,
            "environment (NEVE_URI)",
        )
    named = os.environ.get("NEVE_CATALOG")
    if named:
        return lookup(named)
    neve, default = _neve_catalogs()
    if default is not None:
        if default not in neve:
            raise NoSuchCatalogError(
                f"the default catalog {default!r} of {neve_config_path()} is not among its "
                f"catalogs ({', '.join(sorted(neve)) or 'none'}); fix 'default:'"
            )
        return neve[default]
    if len(neve) == 1:
        return next(iter(neve.values()))
    pyiceberg, _, py_default = _pyiceberg_catalogs()
    for candidate in (py_default, "default"):
        if candidate is not None and candidate in pyiceberg and candidate not in neve:
            return pyiceberg[candidate]
    if not neve and len(pyiceberg) == 1:
        return next(iter(pyiceberg.values()))
    known = {**pyiceberg, **neve}
    if known:
        raise CatalogNotConfiguredError(
            f"no catalog was named and there is no default; {_known(known)}. Pick one with "
            f"--catalog NAME / neve.connect('NAME'), or set 'default: NAME' in "
            f"{neve_config_path()}"
        )
    raise CatalogNotConfiguredError(
        "no catalog was named and none is configured: give --uri and --warehouse "
        "(neve.connect(uri, warehouse)), set NEVE_URI and NEVE_WAREHOUSE, or add one to "
        f"{neve_config_path()}:  catalogs: {{dev: {{uri: 'sqlite:////abs/catalog.db', "
        "warehouse: /abs/warehouse}}, default: dev  (after `make demo`, the demo's "
        "catalog is registered there as 'demo')"
    )


def register_catalog(
    key: str,
    uri: str,
    warehouse: str | None,
    *,
    name: str = DEFAULT_CATALOG_NAME,
    make_default: bool | None = None,
) -> tuple[Path, bool]:
    """Add or replace catalog ``key`` in neve's config file (created when missing;
    other catalogs are kept, comments are not). ``make_default``: True makes it the
    default, None only when no default is set. Returns the file and whether ``key`` is
    now the default."""
    if not looks_like_name(key):
        raise ValidationError(
            f"catalog name {key!r} must not contain '/' or '://' nor start with '.' or '~'"
        )
    path = neve_config_path()
    data = _load(path)
    catalogs = data.get("catalogs") or {}
    if not isinstance(catalogs, dict):
        raise ValidationError(f"'catalogs' in {path} must map names to catalogs")
    entry: dict[str, str] = {"uri": uri}
    if warehouse is not None:
        entry["warehouse"] = warehouse
    if name != DEFAULT_CATALOG_NAME:
        entry["name"] = name
    catalogs[key] = entry
    data["catalogs"] = catalogs
    if make_default or (make_default is None and not data.get("default")):
        data["default"] = key
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(data, sort_keys=False))
    os.replace(tmp, path)
    return path, data.get("default") == key
