"""The namespace and table endpoints: each checks the caller's grant, then calls the
neve catalog it serves (SQL: SQLite or PostgreSQL). Commits go through
``Catalog.commit`` (requirements checked, updates applied, the pointer swapped
atomically) and ``Catalog.commit_transaction`` for several tables at once.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from neve.errors import (
    CommitFailedError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from neve.server.config import MANAGE, READ, WRITE
from neve.server.create import create_request_metadata, metadata_from_staged_updates
from neve.server.credentials import locations_nest
from neve.server.http import Call, Reply, RestError, check_name, identifier_from_json
from neve.server.queue import commit_turn, queue_moved
from neve.spec.commit_json import requirement_from_json, update_from_json
from neve.spec.metadata_builder import apply_updates
from neve.spec.metadata_json import metadata_to_json
from neve.spec.requirements import AssertCreate, TableRequirement
from neve.spec.table_metadata import TableMetadata
from neve.spec.updates import TableUpdate
from neve.table.table import Table

__all__ = [
    "HANDLERS",
    "load_result",
    "metadata_json",
    "page",
    "storage_credentials",
    "wants_vended",
]

SEPARATOR = "\x1f"


def page(names: Sequence[str], call: Call) -> tuple[list[str], str | None]:
    """One page of sorted ``names`` (the spec's ``pageToken``/``pageSize``): all of
    them when the request has no ``pageToken``; the token is the last name given."""
    token = call.query.get("pageToken")
    ordered = sorted(names)
    if token is None:
        return ordered, None
    size_raw = call.query.get("pageSize")
    try:
        size = int(size_raw) if size_raw else 100
    except ValueError:
        size = 0
    if size < 1:
        raise RestError(400, "BadRequestException", f"pageSize must be >= 1, not {size_raw!r}")
    after = ""
    if token:
        try:
            after = base64.urlsafe_b64decode(token.encode()).decode()
        except (ValueError, UnicodeDecodeError) as exc:
            raise RestError(400, "BadRequestException", "malformed pageToken") from exc
    rest = [n for n in ordered if n > after] if token else ordered
    chunk = rest[:size]
    more = len(rest) > size
    next_token = base64.urlsafe_b64encode(chunk[-1].encode()).decode() if more else None
    return chunk, next_token


def _ns_key(ns: tuple[str, ...]) -> str:
    return SEPARATOR.join(ns)


# -- namespaces ------------------------------------------------------------------------


def list_namespaces(call: Call) -> Reply:
    parent_raw = call.query.get("parent")
    parent = (
        tuple(check_name(x, "namespace") for x in parent_raw.split(SEPARATOR)) if parent_raw else ()
    )
    call.authorize(READ, "namespace" if parent else "catalog", parent)
    found = call.catalog.list_namespaces(parent)
    names, token = page([_ns_key(n) for n in found], call)
    body: dict[str, Any] = {"namespaces": [n.split(SEPARATOR) for n in names]}
    if "pageToken" in call.query:
        body["next-page-token"] = token
    return Reply(200, body)


def create_namespace(call: Call) -> Reply:
    data = call.body_object()
    ns = data.get("namespace")
    if not isinstance(ns, list) or not ns or not all(isinstance(x, str) for x in ns):
        raise RestError(400, "BadRequestException", "namespace must be a list of strings")
    levels = tuple(check_name(x, "namespace") for x in ns)
    props = data.get("properties") or {}
    if not isinstance(props, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in props.items()
    ):
        raise RestError(400, "BadRequestException", "properties must map strings to strings")
    parent = levels[:-1]
    call.authorize(MANAGE, "namespace" if parent else "catalog", parent)
    call.catalog.create_namespace(levels, props)
    return Reply(200, {"namespace": list(levels), "properties": props})


def load_namespace(call: Call) -> Reply:
    ns = call.namespace()
    call.authorize(READ, "namespace", ns)
    props = call.catalog.namespace_properties(ns)
    return Reply(200, {"namespace": list(ns), "properties": props})


def namespace_exists(call: Call) -> Reply:
    ns = call.namespace()
    call.authorize(READ, "namespace", ns)
    call.catalog.namespace_properties(ns)
    return Reply(204)


def drop_namespace(call: Call) -> Reply:
    ns = call.namespace()
    call.authorize(MANAGE, "namespace", ns)
    call.catalog.drop_namespace(ns)
    return Reply(204)


def update_properties(call: Call) -> Reply:
    ns = call.namespace()
    call.authorize(MANAGE, "namespace", ns)
    data = call.body_object()
    removals = data.get("removals") or []
    updates = data.get("updates") or {}
    if not isinstance(removals, list) or not all(isinstance(r, str) for r in removals):
        raise RestError(400, "BadRequestException", "removals must be a list of strings")
    if not isinstance(updates, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in updates.items()
    ):
        raise RestError(400, "BadRequestException", "updates must map strings to strings")
    before = call.catalog.namespace_properties(ns)
    call.catalog.update_namespace_properties(ns, removals, updates)
    return Reply(
        200,
        {
            "updated": sorted(updates),
            "removed": sorted(r for r in removals if r in before),
            "missing": sorted(r for r in removals if r not in before) or None,
        },
    )


# -- tables ----------------------------------------------------------------------------


class _Lru:
    """A small thread-safe LRU map (metadata files never change, so what is made from
    one location stays right)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[Any, Any] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Any, make: Any) -> Any:
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        value = make()
        with self.lock:
            self.items[key] = value
            if len(self.items) > self.size:
                self.items.popitem(last=False)
        return value


_JSON = _Lru(256)


def metadata_json(metadata: TableMetadata, location: str | None, snapshots: str) -> Any:
    """``metadata_to_json`` of a metadata file's content, made once per location."""
    if location is None:
        return metadata_to_json(metadata)
    return _JSON.get((location, snapshots), lambda: metadata_to_json(metadata))


def _etag(location: str, snapshots: str) -> str:
    return '"' + hashlib.sha256(f"{location}|{snapshots}".encode()).hexdigest()[:32] + '"'


def wants_vended(call: Call) -> bool:
    """Whether the client asked for vended credentials (the spec's
    ``X-Iceberg-Access-Delegation`` header, a comma-separated list)."""
    asked = call.headers.get("x-iceberg-access-delegation", "")
    return "vended-credentials" in (m.strip() for m in asked.split(","))


def _may_write(call: Call, ident: tuple[str, ...]) -> bool:
    try:
        call.authorize(WRITE, "table", ident)
    except RestError:
        return False
    return True


def storage_credentials(
    call: Call, ident: tuple[str, ...], location: str, vend: bool
) -> list[dict[str, Any]]:
    """The credentials for the table ``ident`` at ``location``: read-only vended keys
    for a principal that may only read it."""
    return call.vendor.storage_credentials(location, vend=vend, write=_may_write(call, ident))


def load_result(
    metadata: TableMetadata,
    location: str | None,
    credentials: list[dict[str, Any]],
    snapshots: str = "all",
) -> dict[str, Any]:
    """A ``LoadTableResult``: the metadata, its location, and the storage credentials
    the caller may use for the table (:func:`storage_credentials`, longest prefix
    first; got before anything is written, so an STS failure leaves nothing behind)."""
    md = metadata
    if snapshots == "refs":
        wanted = {r.snapshot_id for r in md.refs.values()}
        md = md.with_(snapshots=tuple(s for s in md.snapshots if s.snapshot_id in wanted))
    out: dict[str, Any] = {
        "metadata-location": location,
        "metadata": metadata_json(md, location, snapshots),
    }
    creds = credentials
    config: dict[str, str] = {}
    if creds:
        out["storage-credentials"] = creds
        config.update(creds[0]["config"])
    out["config"] = config
    return out


def list_tables(call: Call) -> Reply:
    ns = call.namespace()
    call.authorize(READ, "namespace", ns)
    found = call.catalog.list_tables(ns)
    names, token = page([t[-1] for t in found], call)
    body: dict[str, Any] = {"identifiers": [{"namespace": list(ns), "name": n} for n in names]}
    if "pageToken" in call.query:
        body["next-page-token"] = token
    return Reply(200, body)


def _refuse_nested_location(call: Call, ident: tuple[str, ...], location: str) -> None:
    """Vended keys reach every object under their table's location: where the server
    vends them, a table may neither sit inside another table's location nor hold one
    in its own (the same location included), or one table's keys would read and write
    the other's files."""
    if not call.vendor.vends_for(location):
        return
    cat = call.catalog
    pending: list[tuple[str, ...]] = [()]
    seen: set[tuple[str, ...]] = set()
    while pending:
        parent = pending.pop()
        try:
            children = [tuple(n) for n in cat.list_namespaces(parent)]
            tables = [tuple(t) for t in cat.list_tables(parent)] if parent else []
        except NoSuchNamespaceError:  # dropped while listing
            continue
        pending.extend(n for n in children if n not in seen and n != parent)
        seen.update(children)
        for other in tables:
            if other == ident:
                continue
            try:
                theirs = cat.load_table(other).location
            except NoSuchTableError:
                continue
            if locations_nest(location, theirs):
                raise RestError(
                    403,
                    "ForbiddenException",
                    f"the location {location} of table {'.'.join(ident)} overlaps table "
                    f"{'.'.join(other)} at {theirs}: keys vended for one would reach the "
                    "other's files; give the table a location of its own",
                )


def create_table(call: Call) -> Reply:
    ns = call.namespace()
    call.authorize(WRITE, "namespace", ns)
    data = call.body_object()
    name = data.get("name")
    if not isinstance(name, str):
        raise RestError(400, "BadRequestException", "a create-table request needs a name")
    ident = (*ns, check_name(name, "table"))
    cat = call.catalog
    cat.namespace_properties(ns)  # 404 for a missing namespace
    if cat.table_exists(ident):
        raise TableAlreadyExistsError(f"table {'.'.join(ident)} exists already")
    md = create_request_metadata(data, cat.default_table_location(ident))
    _refuse_nested_location(call, ident, md.location)
    # credentials first: when STS fails, nothing is written
    creds = storage_credentials(call, ident, md.location, wants_vended(call))
    if data.get("stage-create"):
        return Reply(200, load_result(md, None, creds))
    location = cat.create_table_metadata(ident, md)
    return Reply(200, load_result(md, location, creds))


def load_table(call: Call) -> Reply:
    ident = call.ident()
    call.authorize(READ, "table", ident)
    snapshots = call.query.get("snapshots", "all")
    if snapshots not in ("all", "refs"):
        raise RestError(400, "BadRequestException", "snapshots must be 'all' or 'refs'")
    table = call.catalog.load_table(ident)
    etag = _etag(table.metadata_location, snapshots)
    if call.headers.get("if-none-match") == etag:
        return Reply(304, None, {"ETag": etag})
    creds = storage_credentials(call, ident, table.location, wants_vended(call))
    body = load_result(table.metadata, table.metadata_location, creds, snapshots)
    return Reply(200, body, {"ETag": etag})


def table_exists(call: Call) -> Reply:
    ident = call.ident()
    call.authorize(READ, "table", ident)
    if not call.catalog.table_exists(ident):
        raise NoSuchTableError(f"table {'.'.join(ident)} does not exist")
    return Reply(204)


def drop_table(call: Call) -> Reply:
    ident = call.ident()
    call.authorize(MANAGE, "table", ident)
    purge = call.query.get("purgeRequested", "false").lower() == "true"
    call.catalog.drop_table(ident, purge=purge)
    return Reply(204)


def register_table(call: Call) -> Reply:
    ns = call.namespace()
    call.authorize(WRITE, "namespace", ns)
    data = call.body_object()
    name, location = data.get("name"), data.get("metadata-location")
    if not isinstance(name, str) or not isinstance(location, str):
        raise RestError(400, "BadRequestException", "register needs a name and metadata-location")
    if data.get("overwrite"):
        raise RestError(400, "BadRequestException", "register with overwrite is not supported")
    ident = (*ns, check_name(name, "table"))
    creds = None
    if call.vendor.vending:
        md = call.catalog.read_metadata(location)
        _refuse_nested_location(call, ident, md.location)
        if wants_vended(call):  # credentials first: when STS fails, nothing is written
            creds = storage_credentials(call, ident, md.location, True)
    table = call.catalog.register_table(ident, location)
    if creds is None:
        creds = storage_credentials(call, ident, table.location, False)
    return Reply(200, load_result(table.metadata, table.metadata_location, creds))


def rename_table(call: Call) -> Reply:
    data = call.body_object()
    src = identifier_from_json(data.get("source"))
    dst = identifier_from_json(data.get("destination"))
    call.authorize(MANAGE, "table", src)
    call.authorize(WRITE, "namespace", dst[:-1])
    call.catalog.rename_table(src, dst)
    return Reply(204)


def _parse_commit(data: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
    reqs, ups = data.get("requirements", []), data.get("updates")
    if not isinstance(reqs, list) or not isinstance(ups, list):
        raise RestError(400, "BadRequestException", "a commit needs requirements and updates lists")
    return reqs, ups


def _commit_one(
    call: Call, ident: tuple[str, ...], data: Mapping[str, Any], turn: str | None = None
) -> tuple[TableMetadata, str]:
    cat = call.catalog
    raw_reqs, raw_ups = _parse_commit(data)
    requirements: list[TableRequirement] = [requirement_from_json(r) for r in raw_reqs]
    if any(isinstance(r, AssertCreate) for r in requirements):
        if cat.table_exists(ident):
            raise CommitFailedError(f"assert-create: table {'.'.join(ident)} exists already")
        md, rest = metadata_from_staged_updates(raw_ups, cat.default_table_location(ident))
        cat.namespace_properties(ident[:-1])
        if rest:
            md = apply_updates(md, rest)
        _refuse_nested_location(call, ident, md.location)
        location = cat.create_table_metadata(ident, md)
        return md, location
    updates: list[TableUpdate] = [update_from_json(u) for u in raw_ups]
    result = cat.commit(ident, requirements, updates, turn=turn)
    return result.metadata, result.metadata_location


def commit_table(call: Call) -> Reply:
    ident = call.ident()
    call.authorize(WRITE, "table", ident)
    data = call.body_object()
    if "identifier" in data and identifier_from_json(data["identifier"]) != ident:
        raise RestError(400, "BadRequestException", "the body's identifier differs from the path")
    try:
        md, location = _commit_one(call, ident, data, commit_turn(call))
    finally:
        queue_moved(call)  # a swap in turn dropped its ticket; a refused one changed nothing
    return Reply(
        200, {"metadata-location": location, "metadata": metadata_json(md, location, "all")}
    )


def commit_transaction(call: Call) -> Reply:
    data = call.body_object()
    changes = data.get("table-changes")
    if not isinstance(changes, list) or not changes:
        raise RestError(400, "BadRequestException", "table-changes must be a non-empty list")
    parsed = []
    for change in changes:
        if not isinstance(change, dict):
            raise RestError(400, "BadRequestException", "each table change must be an object")
        ident = identifier_from_json(change.get("identifier"))
        call.authorize(WRITE, "table", ident)
        raw_reqs, raw_ups = _parse_commit(change)
        parsed.append(
            (
                ident,
                [requirement_from_json(r) for r in raw_reqs],
                [update_from_json(u) for u in raw_ups],
            )
        )
    try:
        call.catalog.commit_transaction(parsed)
    finally:
        queue_moved(call)
    return Reply(204)


def report_metrics(call: Call) -> Reply:
    ident = call.ident()
    call.authorize(READ, "table", ident)
    data = call.body_object()
    if not isinstance(data.get("report-type"), str):
        raise RestError(400, "BadRequestException", "a metrics report needs a report-type")
    if call.keep_metrics is not None:
        call.keep_metrics(ident, data)
    return Reply(204)


def load_credentials(call: Call) -> Reply:
    ident = call.ident()
    call.authorize(READ, "table", ident)
    table: Table = call.catalog.load_table(ident)
    creds = storage_credentials(call, ident, table.location, vend=True)
    return Reply(200, {"storage-credentials": creds})


#: (method, path after the prefix, handler, whether it mutates).
HANDLERS: list[tuple[str, str, Any, bool]] = [
    ("GET", "namespaces", list_namespaces, False),
    ("POST", "namespaces", create_namespace, True),
    ("GET", "namespaces/{namespace}", load_namespace, False),
    ("HEAD", "namespaces/{namespace}", namespace_exists, False),
    ("DELETE", "namespaces/{namespace}", drop_namespace, True),
    ("POST", "namespaces/{namespace}/properties", update_properties, True),
    ("GET", "namespaces/{namespace}/tables", list_tables, False),
    ("POST", "namespaces/{namespace}/tables", create_table, True),
    ("GET", "namespaces/{namespace}/tables/{table}", load_table, False),
    ("HEAD", "namespaces/{namespace}/tables/{table}", table_exists, False),
    ("POST", "namespaces/{namespace}/tables/{table}", commit_table, True),
    ("DELETE", "namespaces/{namespace}/tables/{table}", drop_table, True),
    ("POST", "namespaces/{namespace}/register", register_table, True),
    ("POST", "namespaces/{namespace}/tables/{table}/metrics", report_metrics, False),
    ("GET", "namespaces/{namespace}/tables/{table}/credentials", load_credentials, False),
    ("POST", "tables/rename", rename_table, True),
    ("POST", "transactions/commit", commit_transaction, True),
]
