"""The view endpoints: list, create, load, exists, replace (commit), drop, rename and
register, on the served catalog's views (:mod:`neve.catalog.views`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from neve.catalog.views import View
from neve.errors import ValidationError
from neve.server.config import MANAGE, READ, WRITE
from neve.server.http import Call, Reply, RestError, check_name, identifier_from_json
from neve.server.tables import page
from neve.spec.metadata_json import schema_from_json
from neve.spec.view_metadata import (
    SqlRepresentation,
    ViewUpdate,
    new_view_metadata,
    view_metadata_to_json,
    view_requirement_from_json,
    view_update_from_json,
)

__all__ = ["HANDLERS"]


def _result(view: View) -> dict[str, Any]:
    return {
        "metadata-location": view.metadata_location,
        "metadata": view_metadata_to_json(view.metadata),
        "config": {},
    }


def list_views(call: Call) -> Reply:
    ns = call.namespace()
    call.authorize(READ, "namespace", ns)
    names, token = page([v[-1] for v in call.catalog.list_views(ns)], call)
    body: dict[str, Any] = {"identifiers": [{"namespace": list(ns), "name": n} for n in names]}
    if "pageToken" in call.query:
        body["next-page-token"] = token
    return Reply(200, body)


def _version(data: Mapping[str, Any]) -> Mapping[str, Any]:
    version = data.get("view-version")
    if not isinstance(version, Mapping) or not isinstance(version.get("representations"), list):
        raise RestError(
            400, "BadRequestException", "a view needs a view-version with representations"
        )
    return version


def create_view(call: Call) -> Reply:
    ns = call.namespace()
    call.authorize(WRITE, "namespace", ns)
    data = call.body_object()
    name = data.get("name")
    if not isinstance(name, str) or not isinstance(data.get("schema"), Mapping):
        raise RestError(400, "BadRequestException", "a view needs a name and a schema")
    ident = (*ns, check_name(name, "view"))
    version = _version(data)
    reps = [
        SqlRepresentation(str(r["sql"]), str(r["dialect"]))
        for r in version["representations"]
        if isinstance(r, Mapping) and r.get("type", "sql") == "sql"
    ]
    props = data.get("properties") or {}
    if not isinstance(props, Mapping):
        raise ValidationError("properties must map strings to strings")
    md = new_view_metadata(
        schema_from_json(data["schema"]),
        reps,
        list(version.get("default-namespace") or ns),
        str(data.get("location") or "/".join([call.catalog.warehouse, *ident])),
        {str(k): str(v) for k, v in props.items()},
        version.get("default-catalog"),
        {str(k): str(v) for k, v in (version.get("summary") or {}).items()},
    )
    return Reply(200, _result(call.catalog.create_view_metadata(ident, md)))


def load_view(call: Call) -> Reply:
    ident = call.ident("view")
    call.authorize(READ, "view", ident)
    return Reply(200, _result(call.catalog.load_view(ident)))


def view_exists(call: Call) -> Reply:
    ident = call.ident("view")
    call.authorize(READ, "view", ident)
    call.catalog.load_view(ident)
    return Reply(204)


def replace_view(call: Call) -> Reply:
    ident = call.ident("view")
    call.authorize(WRITE, "view", ident)
    data = call.body_object()
    reqs, ups = data.get("requirements") or [], data.get("updates")
    if not isinstance(reqs, list) or not isinstance(ups, list):
        raise RestError(400, "BadRequestException", "a view commit needs requirements and updates")
    updates: list[ViewUpdate] = [u for u in map(view_update_from_json, ups) if u is not None]
    view = call.catalog.commit_view(ident, [view_requirement_from_json(r) for r in reqs], updates)
    return Reply(200, _result(view))


def drop_view(call: Call) -> Reply:
    ident = call.ident("view")
    call.authorize(MANAGE, "view", ident)
    call.catalog.drop_view(ident)
    return Reply(204)


def rename_view(call: Call) -> Reply:
    data = call.body_object()
    src = identifier_from_json(data.get("source"), "view")
    dst = identifier_from_json(data.get("destination"), "view")
    call.authorize(MANAGE, "view", src)
    call.authorize(WRITE, "namespace", dst[:-1])
    call.catalog.rename_view(src, dst)
    return Reply(204)


def register_view(call: Call) -> Reply:
    ns = call.namespace()
    call.authorize(WRITE, "namespace", ns)
    data = call.body_object()
    name, location = data.get("name"), data.get("metadata-location")
    if not isinstance(name, str) or not isinstance(location, str):
        raise RestError(
            400, "BadRequestException", "register-view needs a name and metadata-location"
        )
    view = call.catalog.register_view((*ns, check_name(name, "view")), location)
    return Reply(200, _result(view))


HANDLERS: list[tuple[str, str, Any, bool]] = [
    ("GET", "namespaces/{namespace}/views", list_views, False),
    ("POST", "namespaces/{namespace}/views", create_view, True),
    ("GET", "namespaces/{namespace}/views/{view}", load_view, False),
    ("HEAD", "namespaces/{namespace}/views/{view}", view_exists, False),
    ("POST", "namespaces/{namespace}/views/{view}", replace_view, True),
    ("DELETE", "namespaces/{namespace}/views/{view}", drop_view, True),
    ("POST", "views/rename", rename_view, True),
    ("POST", "namespaces/{namespace}/register-view", register_view, True),
]
