"""Iceberg views (the view spec, format version 1): view metadata, its versions and
their SQL representations, the updates that change it, and their JSON forms.

A view's metadata file holds every version; each version has a schema id, a default
namespace (and catalog) that unqualified names in its SQL resolve against, a summary,
and one SQL text per dialect (``spark``, ``trino``, ``duckdb`` ...). Changes are view
updates (``add-view-version``, ``set-current-view-version``, ``add-schema``,
``set-properties`` ...) guarded by ``assert-view-uuid``, applied only by
:func:`apply_view_updates`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from neve.errors import CommitFailedError, ValidationError
from neve.spec.metadata_json import schema_from_json, schema_to_json
from neve.spec.schema import Schema

__all__ = [
    "AddViewVersion",
    "AssertViewUUID",
    "SetCurrentViewVersion",
    "SqlRepresentation",
    "ViewAddSchema",
    "ViewHistoryEntry",
    "ViewMetadata",
    "ViewRemoveProperties",
    "ViewSetLocation",
    "ViewSetProperties",
    "ViewUpdate",
    "ViewVersion",
    "apply_view_updates",
    "new_view_metadata",
    "view_metadata_from_json",
    "view_metadata_to_json",
    "view_requirement_from_json",
    "view_update_from_json",
    "view_update_to_json",
]

#: "the schema or version added by an earlier update of the same commit"
LAST_ADDED = -1


@dataclass(frozen=True)
class SqlRepresentation:
    sql: str
    dialect: str


@dataclass(frozen=True)
class ViewVersion:
    version_id: int
    timestamp_ms: int
    schema_id: int
    representations: tuple[SqlRepresentation, ...]
    default_namespace: tuple[str, ...]
    summary: Mapping[str, str] = field(default_factory=dict)
    default_catalog: str | None = None

    def sql_for(self, dialect: str) -> str | None:
        for r in self.representations:
            if r.dialect.lower() == dialect.lower():
                return r.sql
        return None


@dataclass(frozen=True)
class ViewHistoryEntry:
    version_id: int
    timestamp_ms: int


@dataclass(frozen=True)
class ViewMetadata:
    view_uuid: str
    location: str
    current_version_id: int
    versions: tuple[ViewVersion, ...]
    version_log: tuple[ViewHistoryEntry, ...]
    schemas: tuple[Schema, ...]
    properties: Mapping[str, str] = field(default_factory=dict)
    format_version: int = 1

    def version(self, version_id: int | None = None) -> ViewVersion:
        wanted = self.current_version_id if version_id is None else version_id
        for v in self.versions:
            if v.version_id == wanted:
                return v
        raise ValidationError(f"view has no version {wanted}")

    def schema(self, schema_id: int | None = None) -> Schema:
        wanted = self.version().schema_id if schema_id is None else schema_id
        for s in self.schemas:
            if s.schema_id == wanted:
                return s
        raise ValidationError(f"view has no schema {wanted}")


# -- JSON -------------------------------------------------------------------------------


def _version_to_json(v: ViewVersion) -> dict[str, Any]:
    out: dict[str, Any] = {
        "version-id": v.version_id,
        "timestamp-ms": v.timestamp_ms,
        "schema-id": v.schema_id,
        "summary": dict(v.summary),
        "representations": [
            {"type": "sql", "sql": r.sql, "dialect": r.dialect} for r in v.representations
        ],
        "default-namespace": list(v.default_namespace),
    }
    if v.default_catalog is not None:
        out["default-catalog"] = v.default_catalog
    return out


def _version_from_json(data: Mapping[str, Any]) -> ViewVersion:
    reps = []
    for r in data.get("representations") or []:
        if r.get("type", "sql") != "sql":
            continue  # representations of other kinds are kept out, as readers may
        reps.append(SqlRepresentation(str(r["sql"]), str(r["dialect"])))
    return ViewVersion(
        version_id=int(data["version-id"]),
        timestamp_ms=int(data["timestamp-ms"]),
        schema_id=int(data["schema-id"]),
        representations=tuple(reps),
        default_namespace=tuple(data.get("default-namespace") or ()),
        summary={str(k): str(v) for k, v in (data.get("summary") or {}).items()},
        default_catalog=data.get("default-catalog"),
    )


def view_metadata_to_json(md: ViewMetadata) -> dict[str, Any]:
    return {
        "view-uuid": md.view_uuid,
        "format-version": md.format_version,
        "location": md.location,
        "current-version-id": md.current_version_id,
        "properties": dict(md.properties),
        "versions": [_version_to_json(v) for v in md.versions],
        "version-log": [
            {"version-id": e.version_id, "timestamp-ms": e.timestamp_ms} for e in md.version_log
        ],
        "schemas": [schema_to_json(s) for s in md.schemas],
    }


def view_metadata_from_json(data: Mapping[str, Any]) -> ViewMetadata:
    """Parse view metadata (:class:`ValidationError` when it is not)."""
    try:
        version = int(data.get("format-version", 1))
        if version != 1:
            raise ValidationError(f"view format version {version} is not supported (only 1)")
        return ViewMetadata(
            view_uuid=str(data["view-uuid"]),
            location=str(data["location"]),
            current_version_id=int(data["current-version-id"]),
            versions=tuple(_version_from_json(v) for v in data["versions"]),
            version_log=tuple(
                ViewHistoryEntry(int(e["version-id"]), int(e["timestamp-ms"]))
                for e in data.get("version-log") or []
            ),
            schemas=tuple(schema_from_json(s) for s in data["schemas"]),
            properties={str(k): str(v) for k, v in (data.get("properties") or {}).items()},
        )
    except ValidationError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise ValidationError(f"malformed view metadata ({exc!r})") from exc


# -- updates ------------------------------------------------------------------------------


class ViewUpdate:
    """Marker base of view updates."""

    __slots__ = ()


@dataclass(frozen=True)
class ViewAddSchema(ViewUpdate):
    schema: Schema


@dataclass(frozen=True)
class ViewSetLocation(ViewUpdate):
    location: str


@dataclass(frozen=True)
class ViewSetProperties(ViewUpdate):
    updates: Mapping[str, str]


@dataclass(frozen=True)
class ViewRemoveProperties(ViewUpdate):
    removals: tuple[str, ...]


@dataclass(frozen=True)
class AddViewVersion(ViewUpdate):
    version: ViewVersion


@dataclass(frozen=True)
class SetCurrentViewVersion(ViewUpdate):
    version_id: int  # LAST_ADDED for the version added in this commit


@dataclass(frozen=True)
class AssertViewUUID:
    uuid: str

    def check(self, base: ViewMetadata) -> None:
        if base.view_uuid != self.uuid:
            raise CommitFailedError(
                f"assert-view-uuid: the view's UUID changed from {self.uuid} to "
                f"{base.view_uuid} (it was dropped and re-created); reload it"
            )


def view_update_to_json(u: ViewUpdate) -> dict[str, Any]:
    if isinstance(u, ViewAddSchema):
        return {
            "action": "add-schema",
            "schema": schema_to_json(u.schema),
            "last-column-id": u.schema.highest_field_id,
        }
    if isinstance(u, ViewSetLocation):
        return {"action": "set-location", "location": u.location}
    if isinstance(u, ViewSetProperties):
        return {"action": "set-properties", "updates": dict(u.updates)}
    if isinstance(u, ViewRemoveProperties):
        return {"action": "remove-properties", "removals": list(u.removals)}
    if isinstance(u, AddViewVersion):
        return {"action": "add-view-version", "view-version": _version_to_json(u.version)}
    if isinstance(u, SetCurrentViewVersion):
        return {"action": "set-current-view-version", "view-version-id": u.version_id}
    raise ValidationError(f"no JSON form for view update {u!r}")


def view_update_from_json(data: Mapping[str, Any]) -> ViewUpdate | None:
    """A view update; None for those that change nothing neve keeps
    (``assign-uuid`` of the same view, ``upgrade-format-version`` to 1)."""
    kind = data.get("action") if isinstance(data, Mapping) else None
    try:
        if kind == "add-schema":
            return ViewAddSchema(schema_from_json(data["schema"]))
        if kind == "set-location":
            return ViewSetLocation(str(data["location"]))
        if kind == "set-properties":
            return ViewSetProperties({str(k): str(v) for k, v in data["updates"].items()})
        if kind == "remove-properties":
            return ViewRemoveProperties(tuple(str(r) for r in data["removals"]))
        if kind == "add-view-version":
            return AddViewVersion(_version_from_json(data["view-version"]))
        if kind == "set-current-view-version":
            return SetCurrentViewVersion(int(data["view-version-id"]))
        if kind in ("assign-uuid", "upgrade-format-version"):
            if kind == "upgrade-format-version" and int(data["format-version"]) != 1:
                raise ValidationError("views have format version 1 only")
            return None
    except ValidationError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValidationError(f"{kind}: malformed view update ({exc!r})") from exc
    raise ValidationError(f"unknown view update action {kind!r}")


def view_requirement_from_json(data: Mapping[str, Any]) -> AssertViewUUID:
    if not isinstance(data, Mapping) or data.get("type") != "assert-view-uuid":
        raise ValidationError(f"unknown view requirement {data!r}; views take assert-view-uuid")
    return AssertViewUUID(str(data["uuid"]))


def _same_version(a: ViewVersion, b: ViewVersion) -> bool:
    def key(v: ViewVersion) -> tuple[object, ...]:
        return (v.schema_id, v.representations, v.default_namespace, v.default_catalog)

    return key(a) == key(b)


def apply_view_updates(base: ViewMetadata, updates: Sequence[ViewUpdate]) -> ViewMetadata:
    """The view metadata ``updates`` make of ``base`` (ValidationError when one does not
    apply). A version equal to an existing one (SQL, schema, namespace) reuses its id,
    as the spec says."""
    md = base
    last_schema = last_version = None
    now = int(time.time() * 1000)
    for u in updates:
        if isinstance(u, ViewAddSchema):
            same = next((s for s in md.schemas if s.same_structure(u.schema)), None)
            if same is None:
                new_id = max((s.schema_id for s in md.schemas), default=-1) + 1
                same = u.schema.with_id(new_id)
                md = replace(md, schemas=(*md.schemas, same))
            last_schema = same.schema_id
        elif isinstance(u, ViewSetLocation):
            md = replace(md, location=u.location.rstrip("/"))
        elif isinstance(u, ViewSetProperties):
            md = replace(md, properties={**md.properties, **u.updates})
        elif isinstance(u, ViewRemoveProperties):
            md = replace(
                md, properties={k: v for k, v in md.properties.items() if k not in u.removals}
            )
        elif isinstance(u, AddViewVersion):
            v = u.version
            if v.schema_id == LAST_ADDED:
                if last_schema is None:
                    raise ValidationError(
                        "add-view-version names the last added schema, but none was added"
                    )
                v = replace(v, schema_id=last_schema)
            if not any(s.schema_id == v.schema_id for s in md.schemas):
                raise ValidationError(f"view version refers to unknown schema {v.schema_id}")
            dialects = [r.dialect.lower() for r in v.representations]
            if len(set(dialects)) != len(dialects):
                raise ValidationError("a view version has one SQL text per dialect")
            existing = next((x for x in md.versions if _same_version(x, v)), None)
            if existing is not None:
                last_version = existing.version_id
                continue
            new_id = max((x.version_id for x in md.versions), default=0) + 1
            md = replace(md, versions=(*md.versions, replace(v, version_id=new_id)))
            last_version = new_id
        elif isinstance(u, SetCurrentViewVersion):
            target = last_version if u.version_id == LAST_ADDED else u.version_id
            if target is None or not any(x.version_id == target for x in md.versions):
                raise ValidationError(f"set-current-view-version: no version {u.version_id}")
            if target != md.current_version_id or not md.version_log:
                md = replace(
                    md,
                    current_version_id=target,
                    version_log=(*md.version_log, ViewHistoryEntry(target, now)),
                )
        else:
            raise ValidationError(f"cannot apply view update {u!r}")
    return md


def new_view_metadata(
    schema: Schema,
    representations: Sequence[SqlRepresentation],
    default_namespace: Sequence[str],
    location: str,
    properties: Mapping[str, str] | None = None,
    default_catalog: str | None = None,
    summary: Mapping[str, str] | None = None,
) -> ViewMetadata:
    """Metadata of a new view with one version."""
    if not representations:
        raise ValidationError("a view needs at least one SQL representation")
    now = int(time.time() * 1000)
    empty = ViewMetadata(
        view_uuid=str(uuid.uuid4()),
        location=location.rstrip("/"),
        current_version_id=-1,
        versions=(),
        version_log=(),
        schemas=(),
        properties=dict(properties or {}),
    )
    version = ViewVersion(
        version_id=1,
        timestamp_ms=now,
        schema_id=LAST_ADDED,
        representations=tuple(representations),
        default_namespace=tuple(default_namespace),
        summary=dict(summary or {}),
        default_catalog=default_catalog,
    )
    return apply_view_updates(
        empty,
        [
            ViewAddSchema(schema.with_id(0)),
            AddViewVersion(version),
            SetCurrentViewVersion(LAST_ADDED),
        ],
    )
