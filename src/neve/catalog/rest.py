"""A catalog that speaks the Iceberg REST protocol to any server: ``neve serve``,
Polaris, Lakekeeper, Gravitino, Nessie, Unity, Glue or S3 Tables.

``neve.connect("http://host:8181", credential="id:secret", warehouse="lake")`` opens
one. It asks the server's ``config`` first (``defaults``, then the caller's properties,
then ``overrides``: the ``prefix`` of every path, the endpoints the server offers,
whether it keeps idempotency keys). Tables are what the server says: metadata and its
location come from its answers, and commits are sent as requirements and updates, so
everything neve does on a SQL catalog (appends, row-level changes, key tables,
maintenance, changelog, streaming) runs on a REST catalog unchanged. With the catalog
property ``scan-planning-mode=server`` and a server that offers the plan endpoint,
scans are planned by the server (:meth:`RestCatalog.plan_scan`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from neve.catalog import rest_queue as queue
from neve.catalog.base import Catalog, CommitResult, Identifier, parse_identifier
from neve.catalog.rest_credentials import (
    VENDED_KEYS,
    VendedFileIO,
    best_credential,
    table_properties,
)
from neve.catalog.rest_expressions import expression_from_json, expression_to_json
from neve.catalog.rest_http import RestHttp, RestResponseError
from neve.catalog.views import View, view_ident
from neve.errors import (
    CommitStateUnknownError,
    NeveError,
    NotFoundError,
    ValidationError,
)
from neve.planning.tasks import FileScanTask
from neve.spec.commit_json import requirement_to_json, update_to_json
from neve.spec.content_file_json import content_file_from_json
from neve.spec.metadata_json import (
    metadata_from_json,
    partition_spec_to_json,
    schema_to_json,
    sort_order_to_json,
)
from neve.spec.requirements import TableRequirement
from neve.spec.schema import Schema
from neve.spec.table_metadata import TableMetadata
from neve.spec.updates import TableUpdate
from neve.spec.view_metadata import (
    AssertViewUUID,
    ViewMetadata,
    ViewUpdate,
    view_metadata_from_json,
    view_update_to_json,
)
from neve.table.create import new_table_metadata, to_schema
from neve.table.scan import TableScan
from neve.table.table import Table

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["RestCatalog"]

_SEP = "\x1f"
_PLAN = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan"
_CREDENTIALS = "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials"
_LINEAGE = {"_row_id", "_last_updated_sequence_number"}


def _table_ident(name: str | Sequence[str]) -> Identifier:
    ident = parse_identifier(name)
    if len(ident) < 2:
        raise ValidationError(f"table name {name!r} needs a namespace: use 'namespace.table'")
    return ident


class RestCatalog(Catalog):
    """A catalog behind an Iceberg REST server."""

    stores_views = True

    def __init__(self, name: str, uri: str, properties: Mapping[str, str] | None = None):
        props = dict(properties or {})
        self._given = dict(props)
        self.uri = uri.rstrip("/")
        self.http = RestHttp(self.uri, props)
        wanted = props.get("warehouse")
        params = {"warehouse": wanted} if wanted else None
        resp = self.http.request("GET", "v1/config", "reading the server's config", params=params)
        config = resp.json()
        if not isinstance(config, Mapping):
            raise RestResponseError(f"{self.uri}/v1/config did not answer a JSON object")
        merged = {
            **dict(config.get("defaults") or {}),
            **props,
            **dict(config.get("overrides") or {}),
        }
        super().__init__(name, str(merged.get("warehouse") or ""), merged)
        self.http.properties.update(merged)
        self.prefix = str(merged.get("prefix") or "")
        self.endpoints = set(config.get("endpoints") or [])
        self.http.idempotency = bool(config.get("idempotency-key-lifetime"))
        #: the last answer per table: (ETag, metadata, location)
        self._loaded: dict[Identifier, tuple[str, TableMetadata, str]] = {}
        #: the file IO of each table the server handed credentials for
        self._ios: dict[Identifier, VendedFileIO] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "uri": self.uri,
            "given": self._given,
            "properties": self.properties,
            "prefix": self.prefix,
            "endpoints": sorted(self.endpoints),
            "idempotency": self.http.idempotency,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        # no request on unpickling (a Spark executor may never talk to the server):
        # the server's config travels with the catalog; a token is fetched on first use
        Catalog.__init__(
            self,
            state["name"],
            str(state["properties"].get("warehouse") or ""),
            state["properties"],
        )
        self.uri = state["uri"]
        self._given = state["given"]
        self.http = RestHttp(self.uri, state["properties"])
        self.http.idempotency = state["idempotency"]
        self.prefix = state["prefix"]
        self.endpoints = set(state["endpoints"])
        self._loaded = {}
        self._ios = {}

    def __repr__(self) -> str:
        return f"RestCatalog(name={self.name!r}, uri={self.uri!r}, warehouse={self.warehouse!r})"

    def dispose(self) -> None:
        """Close the HTTP connections (later calls open new ones)."""
        self.http.close()

    # -- paths ------------------------------------------------------------------------

    def _path(self, *parts: str) -> str:
        base = ["v1"] + ([quote(self.prefix, safe="")] if self.prefix else [])
        return "/".join(base + list(parts))

    @staticmethod
    def _ns(namespace: Identifier) -> str:
        return quote(_SEP.join(namespace), safe="")

    def _table_path(self, ident: Identifier, *rest: str) -> str:
        return self._path(
            "namespaces", self._ns(ident[:-1]), "tables", quote(ident[-1], safe=""), *rest
        )

    # -- namespaces -------------------------------------------------------------------

    def _create_namespace(self, namespace: Identifier, properties: Mapping[str, str]) -> None:
        self.http.request(
            "POST",
            self._path("namespaces"),
            f"creating namespace {'.'.join(namespace)}",
            json={"namespace": list(namespace), "properties": dict(properties)},
            mutates=True,
        )

    def _namespace_properties(self, namespace: Identifier) -> dict[str, str]:
        resp = self.http.request(
            "GET",
            self._path("namespaces", self._ns(namespace)),
            f"loading namespace {'.'.join(namespace)}",
        )
        return dict(resp.json().get("properties") or {})

    def namespace_exists(self, namespace: str | Sequence[str]) -> bool:
        ns = parse_identifier(namespace)
        try:
            self.http.request("HEAD", self._path("namespaces", self._ns(ns)), "namespace exists")
        except NotFoundError:  # a HEAD answer has no body to say what is missing
            return False
        return True

    def _update_namespace_properties(
        self, namespace: Identifier, removals: set[str], updates: Mapping[str, str]
    ) -> None:
        both = removals & set(updates)
        if both:
            raise ValidationError(
                f"properties {sorted(both)} are both removed and updated; pick one for each"
            )
        self.http.request(
            "POST",
            self._path("namespaces", self._ns(namespace), "properties"),
            f"updating namespace {'.'.join(namespace)}",
            json={"removals": sorted(removals), "updates": dict(updates)},
            mutates=True,
        )

    def _drop_namespace(self, namespace: Identifier) -> None:
        self.http.request(
            "DELETE",
            self._path("namespaces", self._ns(namespace)),
            f"dropping namespace {'.'.join(namespace)}",
            mutates=True,
        )

    def _paged(self, path: str, key: str, context: str, params: dict[str, str]) -> list[Any]:
        out: list[Any] = []
        token: str | None = ""
        while token is not None:
            resp = self.http.request("GET", path, context, params={**params, "pageToken": token})
            body = resp.json()
            out.extend(body.get(key) or [])
            token = body.get("next-page-token") or None
        return out

    def _list_namespaces(self, parent: Identifier) -> list[Identifier]:
        params = {"parent": _SEP.join(parent)} if parent else {}
        found = self._paged(self._path("namespaces"), "namespaces", "listing namespaces", params)
        return [tuple(n) for n in found]

    def _list_tables(self, namespace: Identifier) -> list[Identifier]:
        found = self._paged(
            self._path("namespaces", self._ns(namespace), "tables"),
            "identifiers",
            f"listing tables of {'.'.join(namespace)}",
            {},
        )
        return [(*i["namespace"], i["name"]) for i in found]

    # -- tables -----------------------------------------------------------------------

    def _table(self, ident: Identifier, body: Mapping[str, Any]) -> Table:
        try:
            md = metadata_from_json(body["metadata"])
            location = str(body["metadata-location"])
        except (KeyError, TypeError) as exc:
            raise RestResponseError(f"the server's table answer lacks {exc}") from exc
        table = Table(ident, md, location, self)
        self._table_io(table, body)
        return table

    def _table_io(self, table: Table, body: Mapping[str, Any]) -> None:
        """Give ``table`` the file IO of the credentials in the server's answer (the
        catalog's own IO when it has none)."""
        props = table_properties(self.properties, table.location, body)
        if props == self.properties:
            self._ios.pop(table.identifier, None)
            return
        known = self._ios.get(table.identifier)
        if known is None or known.properties != props:
            ident, location = table.identifier, table.location
            # without the old keys: a server that hands out none any more leaves none
            config = {k: v for k, v in props.items() if k not in VENDED_KEYS}

            def refresh() -> dict[str, str]:
                return {**config, **self._fresh_credentials(ident, location)}

            known = self._ios[ident] = VendedFileIO(props, refresh)
        table.io = known

    def _fresh_credentials(self, ident: Identifier, location: str) -> dict[str, str]:
        """New storage credentials for a table: from the ``credentials`` endpoint when
        the server offers it, else from loading the table again."""
        what = f"fetching storage credentials of table {'.'.join(ident)}"
        if _CREDENTIALS in self.endpoints:
            resp = self.http.request("GET", self._table_path(ident, "credentials"), what)
            body = resp.json()
            found = body.get("storage-credentials") if isinstance(body, Mapping) else None
            return best_credential(found, location)
        resp = self.http.request("GET", self._table_path(ident), what)
        answer = resp.json()
        return table_properties({}, location, answer if isinstance(answer, Mapping) else {})

    def _metadata_location(self, ident: Identifier) -> str:
        return self.load_table(ident).metadata_location

    def load_table(self, name: str | Sequence[str]) -> Table:
        """Load a table; a table loaded before is asked for with its ETag, and an
        unchanged one (304) is not sent or parsed again."""
        ident = _table_ident(name)
        known = self._loaded.get(ident)
        headers = {"If-None-Match": known[0]} if known is not None else None
        resp = self.http.request(
            "GET",
            self._table_path(ident),
            f"loading table {'.'.join(ident)}",
            headers=headers,
            ok=lambda s: 200 <= s < 300 or (s == 304 and known is not None),
        )
        if resp.status_code == 304 and known is not None:
            table = Table(ident, known[1], known[2], self)
            found = self._ios.get(ident)
            if found is not None:
                table.io = found
            return table
        table = self._table(ident, resp.json())
        etag = resp.headers.get("etag")
        if etag:
            self._loaded[ident] = (etag, table.metadata, table.metadata_location)
        return table

    def table_exists(self, name: str | Sequence[str]) -> bool:
        ident = _table_ident(name)
        try:
            self.http.request("HEAD", self._table_path(ident), "table exists")
        except NotFoundError:
            return False
        return True

    def create_table(
        self,
        name: str | Sequence[str],
        schema: Schema | pa.Schema,
        partition_by: Sequence[str] | None = None,
        *,
        sort_by: Sequence[str] | None = None,
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
        format_version: int | None = None,
        primary_key: Sequence[str] = (),
    ) -> Table:
        """Create a table (as :meth:`Catalog.create_table`); the server decides the
        location unless ``location`` is given."""
        ident = _table_ident(name)
        md = new_table_metadata(
            schema,
            partition_by=partition_by or (),
            sort_by=sort_by or (),
            location=location or "",
            properties=properties or {},
            format_version=format_version,
            primary_key=primary_key,
        )
        return self._create(ident, md, location is not None)

    def _create(self, ident: Identifier, md: TableMetadata, with_location: bool) -> Table:
        body: dict[str, Any] = {
            "name": ident[-1],
            "schema": schema_to_json(md.schema()),
            "partition-spec": partition_spec_to_json(md.spec()),
            "write-order": sort_order_to_json(md.sort_order()),
            "properties": {**md.properties, "format-version": str(md.format_version)},
        }
        if with_location:
            body["location"] = md.location
        resp = self.http.request(
            "POST",
            self._path("namespaces", self._ns(ident[:-1]), "tables"),
            f"creating table {'.'.join(ident)}",
            json=body,
            mutates=True,
        )
        return self._table(ident, resp.json())

    def _create_table(self, ident: Identifier, metadata: TableMetadata) -> str:
        return self._create(ident, metadata, True).metadata_location

    def _register_table(self, ident: Identifier, metadata_location: str) -> str:
        resp = self.http.request(
            "POST",
            self._path("namespaces", self._ns(ident[:-1]), "register"),
            f"registering table {'.'.join(ident)}",
            json={"name": ident[-1], "metadata-location": metadata_location},
            mutates=True,
        )
        return str(resp.json()["metadata-location"])

    def register_table(self, name: str | Sequence[str], metadata_location: str) -> Table:
        ident = _table_ident(name)
        self._register_table(ident, metadata_location)
        return self.load_table(ident)

    def drop_table(self, name: str | Sequence[str], purge: bool = False) -> None:
        """Drop a table; with ``purge`` the server deletes its files."""
        ident = _table_ident(name)
        self.http.request(
            "DELETE",
            self._table_path(ident),
            f"dropping table {'.'.join(ident)}",
            params={"purgeRequested": "true" if purge else "false"},
            mutates=True,
        )

    def _drop_table(self, ident: Identifier) -> None:
        self.drop_table(ident)

    def rename_table(self, src: str | Sequence[str], dst: str | Sequence[str]) -> None:
        self._rename_table(_table_ident(src), _table_ident(dst))

    def _rename_table(self, src: Identifier, dst: Identifier) -> None:
        self.http.request(
            "POST",
            self._path("tables", "rename"),
            f"renaming table {'.'.join(src)}",
            json={
                "source": {"namespace": list(src[:-1]), "name": src[-1]},
                "destination": {"namespace": list(dst[:-1]), "name": dst[-1]},
            },
            mutates=True,
        )

    def _commit(self, ident: Identifier, base_location: str, metadata: TableMetadata) -> str:
        raise ValidationError("a REST catalog commits requirements and updates, not metadata")

    def commit(
        self,
        name: str | Sequence[str],
        requirements: Sequence[TableRequirement],
        updates: Sequence[TableUpdate],
        *,
        turn: str | None = None,
    ) -> CommitResult:
        """Send a commit (requirements and updates) to the server, which checks and
        applies it atomically (409 is :class:`CommitFailedError`: reload and retry).
        ``turn``: the committer's ticket in the server's commit queue (sent as a
        header; only a server that offers the queue gives tickets)."""
        ident = _table_ident(name)
        label = ".".join(ident)

        def unknown(exc: Exception) -> NeveError:
            return CommitStateUnknownError(
                f"the commit to {label} was sent but its answer was lost ({exc}); load the "
                "table to see whether it was applied before retrying"
            )

        resp = self.http.request(
            "POST",
            self._table_path(ident),
            f"committing to table {label}",
            json={
                "identifier": {"namespace": list(ident[:-1]), "name": ident[-1]},
                "requirements": [requirement_to_json(r) for r in requirements],
                "updates": [update_to_json(u) for u in updates],
            },
            headers=None if turn is None else {queue.TURN_HEADER: turn},
            mutates=True,
            on_unknown=unknown,
        )
        body = resp.json()
        return CommitResult(metadata_from_json(body["metadata"]), str(body["metadata-location"]))

    # -- the commit queue, where the server offers it (neve.catalog.rest_queue) -----------

    @property
    def commit_queue_supported(self) -> bool:
        return self.endpoints >= queue.ENDPOINTS

    @property
    def commit_queue_after_losses(self) -> int:
        return queue.AFTER_LOSSES

    def _join_queue(self, ident: Identifier, since: float, ticket: str) -> str:
        return queue.RestCommitQueue(self.http, self._table_path).join(ident, since, ticket)

    def _queue_turn(self, ident: Identifier, ticket: str) -> bool:
        return queue.RestCommitQueue(self.http, self._table_path).turn(ident, ticket)

    def _leave_queue(self, ident: Identifier, ticket: str) -> None:
        queue.RestCommitQueue(self.http, self._table_path).leave(ident, ticket)

    def commit_transaction(
        self,
        changes: Sequence[
            tuple[str | Sequence[str], Sequence[TableRequirement], Sequence[TableUpdate]]
        ],
    ) -> list[CommitResult]:
        """Commit changes to several tables atomically (the server's
        ``/transactions/commit``): all of them or none."""
        idents = [_table_ident(n) for n, _r, _u in changes]
        self.http.request(
            "POST",
            self._path("transactions", "commit"),
            "committing a transaction",
            json={
                "table-changes": [
                    {
                        "identifier": {"namespace": list(i[:-1]), "name": i[-1]},
                        "requirements": [requirement_to_json(r) for r in reqs],
                        "updates": [update_to_json(u) for u in ups],
                    }
                    for i, (_n, reqs, ups) in zip(idents, changes, strict=True)
                ]
            },
            mutates=True,
            on_unknown=lambda exc: CommitStateUnknownError(
                f"the transaction was sent but its answer was lost ({exc}); load the tables "
                "to see whether it was applied"
            ),
        )
        out = []
        for ident in idents:
            t = self.load_table(ident)
            out.append(CommitResult(t.metadata, t.metadata_location))
        return out

    # -- views --------------------------------------------------------------------------

    def _view_path(self, ident: Identifier, *rest: str) -> str:
        return self._path(
            "namespaces", self._ns(ident[:-1]), "views", quote(ident[-1], safe=""), *rest
        )

    @staticmethod
    def _view(ident: Identifier, body: Mapping[str, Any]) -> View:
        try:
            return View(
                ident, view_metadata_from_json(body["metadata"]), str(body["metadata-location"])
            )
        except (KeyError, TypeError) as exc:
            raise RestResponseError(f"the server's view answer lacks {exc}") from exc

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
        ident = view_ident(name)
        reps = {dialect: sql} if isinstance(sql, str) else dict(sql)
        body: dict[str, Any] = {
            "name": ident[-1],
            "schema": schema_to_json(to_schema(schema).with_id(0)),
            "view-version": {
                "version-id": 1,
                "timestamp-ms": int(time.time() * 1000),
                "schema-id": 0,
                "summary": {"engine-name": "neve"},
                "representations": [
                    {"type": "sql", "sql": text, "dialect": d} for d, text in reps.items()
                ],
                "default-namespace": list(
                    default_namespace if default_namespace is not None else ident[:-1]
                ),
            },
            "properties": dict(properties or {}),
        }
        if location is not None:
            body["location"] = location
        resp = self.http.request(
            "POST",
            self._path("namespaces", self._ns(ident[:-1]), "views"),
            f"creating view {'.'.join(ident)}",
            json=body,
            mutates=True,
        )
        return self._view(ident, resp.json())

    def load_view(self, name: str | Sequence[str]) -> View:
        ident = view_ident(name)
        resp = self.http.request("GET", self._view_path(ident), f"loading view {'.'.join(ident)}")
        return self._view(ident, resp.json())

    def view_exists(self, name: str | Sequence[str]) -> bool:
        try:
            self.http.request("HEAD", self._view_path(view_ident(name)), "view exists")
        except NotFoundError:
            return False
        return True

    def list_views(self, namespace: str | Sequence[str]) -> list[Identifier]:
        ns = parse_identifier(namespace)
        found = self._paged(
            self._path("namespaces", self._ns(ns), "views"),
            "identifiers",
            f"listing views of {'.'.join(ns)}",
            {},
        )
        return sorted((*i["namespace"], i["name"]) for i in found)

    def drop_view(self, name: str | Sequence[str]) -> None:
        ident = view_ident(name)
        self.http.request(
            "DELETE", self._view_path(ident), f"dropping view {'.'.join(ident)}", mutates=True
        )

    def rename_view(self, src: str | Sequence[str], dst: str | Sequence[str]) -> None:
        s, d = view_ident(src), view_ident(dst)
        self.http.request(
            "POST",
            self._path("views", "rename"),
            f"renaming view {'.'.join(s)}",
            json={
                "source": {"namespace": list(s[:-1]), "name": s[-1]},
                "destination": {"namespace": list(d[:-1]), "name": d[-1]},
            },
            mutates=True,
        )

    def register_view(self, name: str | Sequence[str], metadata_location: str) -> View:
        ident = view_ident(name)
        resp = self.http.request(
            "POST",
            self._path("namespaces", self._ns(ident[:-1]), "register-view"),
            f"registering view {'.'.join(ident)}",
            json={"name": ident[-1], "metadata-location": metadata_location},
            mutates=True,
        )
        return self._view(ident, resp.json())

    def commit_view(
        self,
        name: str | Sequence[str],
        requirements: Sequence[AssertViewUUID],
        updates: Sequence[ViewUpdate],
    ) -> View:
        ident = view_ident(name)
        resp = self.http.request(
            "POST",
            self._view_path(ident),
            f"replacing view {'.'.join(ident)}",
            json={
                "identifier": {"namespace": list(ident[:-1]), "name": ident[-1]},
                "requirements": [
                    {"type": "assert-view-uuid", "uuid": r.uuid} for r in requirements
                ],
                "updates": [view_update_to_json(u) for u in updates],
            },
            mutates=True,
        )
        return self._view(ident, resp.json())

    def create_view_metadata(self, name: str | Sequence[str], md: ViewMetadata) -> View:
        raise ValidationError("a REST catalog creates views from their SQL: use create_view")

    # -- server-side planning -----------------------------------------------------------

    @property
    def plans_on_server(self) -> bool:
        """Whether scans are planned by the server: ``scan-planning-mode=server`` and
        a server that offers the plan endpoint."""
        mode = str(self.properties.get("scan-planning-mode", "client")).lower()
        return mode == "server" and _PLAN in self.endpoints

    def plan_scan(self, identifier: Identifier, scan: TableScan) -> list[FileScanTask] | None:
        """The scan's tasks as the server plans them, or None to plan here (client
        planning mode, no plan endpoint, or a scan of row lineage columns, whose
        inherited sequence numbers the protocol's tasks do not carry)."""
        if not self.plans_on_server or _LINEAGE & set(scan.columns or ()):
            return None
        snap = scan.snapshot()
        if snap is None:
            return []
        req: dict[str, Any] = {
            "snapshot-id": snap.snapshot_id,
            "filter": expression_to_json(scan.row_filter),
            "case-sensitive": scan.case_sensitive,
            "use-snapshot-schema": scan.table_schema.schema_id != scan.metadata.current_schema_id,
        }
        if scan.columns is not None:
            req["select"] = list(scan.columns)
        resp = self.http.request(
            "POST", self._table_path(identifier, "plan"), "planning a scan", json=req
        )
        body = resp.json()
        if body.get("status") != "completed":
            raise RestResponseError(f"the server's plan is {body.get('status')!r}, not completed")
        md, schema = scan.metadata, scan.table_schema
        tasks = _tasks(md, schema, body, scan.case_sensitive)
        for token in body.get("plan-tasks") or []:
            more = self.http.request(
                "POST",
                self._table_path(identifier, "tasks"),
                "fetching scan tasks",
                json={"plan-task": token},
            ).json()
            tasks.extend(_tasks(md, schema, more, scan.case_sensitive))
        return tasks


def _tasks(
    md: TableMetadata, schema: Schema, body: Mapping[str, Any], case_sensitive: bool
) -> list[FileScanTask]:
    types = {sid: spec.partition_type(md.schema()) for sid, spec in md.specs_by_id.items()}
    deletes = [
        content_file_from_json(d, types[int(d["spec-id"])], schema)
        for d in body.get("delete-files") or []
    ]
    out = []
    for t in body.get("file-scan-tasks") or []:
        raw = t["data-file"]
        f = content_file_from_json(raw, types[int(raw["spec-id"])], schema)
        residual = expression_from_json(t.get("residual-filter", True), schema, case_sensitive)
        applied = tuple(deletes[i] for i in t.get("delete-file-references") or [])
        out.append(FileScanTask(f, residual, applied, 0, f.file_size_in_bytes, f.spec_id, None))
    return out
