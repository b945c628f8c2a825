"""``neve serve``'s ASGI application: routing, authentication, body limits,
idempotency keys, and the ``config`` and ``oauth/tokens`` endpoints.

Paths are matched on the raw (still percent-encoded) path, one segment at a time, so a
name holding an encoded ``/`` is refused as a name (400) rather than read as two path
segments. A path starts ``/v1/`` and then either names an operation directly (the
catalog served without a prefix) or a warehouse name first (the ``prefix`` that
``config`` hands a client that asked for that warehouse).
"""

from __future__ import annotations

import base64
import json
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, unquote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from neve.catalog.base import CommitResult, parse_identifier
from neve.catalog.commit_queue import queued_first
from neve.catalog.sql import SqlCatalog
from neve.errors import NeveError
from neve.server import planning, queue, tables, views
from neve.server.auth import Authenticator, AuthError, Principal, may
from neve.server.config import (
    CONFIG_ENV,
    DEFAULT_WAREHOUSE,
    RESERVED_PREFIXES,
    ServerConfig,
    WarehouseConfig,
    load_config,
)
from neve.server.credentials import CredentialVendor
from neve.server.http import Call, Reply, RestError, error_body, error_for
from neve.server.store import IdempotencyStore, MetricsStore
from neve.spec.requirements import TableRequirement
from neve.spec.table_metadata import TableMetadata
from neve.spec.updates import TableUpdate

__all__ = ["CONFIG_ENV", "ENDPOINTS", "RestServer", "create_app", "create_app_from_env"]

_ROUTES = [*tables.HANDLERS, *planning.HANDLERS, *views.HANDLERS, *queue.HANDLERS]
#: The endpoints ``config`` advertises, in the spec's "<verb> <path>" form.
ENDPOINTS = sorted({f"{m} /v1/{{prefix}}/{p}" for m, p, _h, _w in _ROUTES})


def _json_response(status: int, body: Any, headers: Mapping[str, str] | None = None) -> Response:
    if body is None:
        return Response(status_code=status, headers=dict(headers or {}))
    return Response(
        json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8"),
        status_code=status,
        media_type="application/json",
        headers=dict(headers or {}),
    )


#: Marks a kept answer whose table metadata is left out (``_kept``).
_FROM_LOCATION = "neve-metadata-from-location"


#: The route whose answers ``_kept`` shortens: a table commit's.
_COMMIT_ROUTE = "POST namespaces/{namespace}/tables/{table}"


def _kept(route: str, status: int, body: Any) -> Any:
    """An answer as the idempotency store keeps it: the table metadata of a commit's
    answer (all snapshots) is left out and read again from its metadata file, which
    never changes, when the answer is replayed. A table's metadata grows with its
    history, and every commit sent with a key would store it whole."""
    if route == _COMMIT_ROUTE and status == 200 and isinstance(body, dict):
        return {k: v for k, v in body.items() if k != "metadata"} | {_FROM_LOCATION: True}
    return body


def _restored(body: Any, catalog: ServedCatalog) -> Any:
    """A kept answer as it was sent (``_kept``)."""
    if not (isinstance(body, dict) and body.get(_FROM_LOCATION)):
        return body
    location = body["metadata-location"]
    out = {k: v for k, v in body.items() if k != _FROM_LOCATION}
    out["metadata"] = tables.metadata_json(catalog.read_metadata(location), location, "all")
    return out


def _match(pattern: str, segments: list[str]) -> dict[str, str] | None:
    parts = pattern.split("/")
    if len(parts) != len(segments):
        return None
    params = {}
    for part, seg in zip(parts, segments, strict=True):
        if part.startswith("{"):
            params[part[1:-1]] = unquote(seg)
        elif part != seg:
            return None
    return params


class ServedCatalog(SqlCatalog):
    """The server's SQL catalog: a metadata file never changes once written, so each
    is read and parsed once (loads and commits of busy tables reuse it)."""

    def __init__(
        self, name: str, uri: str, warehouse: str, properties: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(name, uri, warehouse, properties)
        self._cache: OrderedDict[str, TableMetadata] = OrderedDict()
        self._cache_lock = threading.Lock()

    def commit(
        self,
        name: str | Sequence[str],
        requirements: Sequence[TableRequirement],
        updates: Sequence[TableUpdate],
        *,
        turn: str | None = None,
    ) -> CommitResult:
        """``Catalog.commit``, refused at once (before a metadata file is written) when
        an older writer is queued and the committer has no turn: many clients share a
        server's tables, and under contention most first attempts are such."""
        ident = parse_identifier(name)
        if turn is None and self.queued_ahead(ident, None):
            raise queued_first(".".join(ident))
        return super().commit(ident, requirements, updates, turn=turn)

    def read_metadata(self, location: str) -> TableMetadata:
        with self._cache_lock:
            found = self._cache.get(location)
            if found is not None:
                self._cache.move_to_end(location)
                return found
        md = super().read_metadata(location)
        with self._cache_lock:
            self._cache[location] = md
            if len(self._cache) > 256:
                self._cache.popitem(last=False)
        return md


class RestServer:
    """The server's state: its config, its catalogs (one per warehouse, made on first
    use), the token issuer and the idempotency store."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.auth = Authenticator(config)
        self._catalogs: dict[str, ServedCatalog] = {}
        self._lock = threading.Lock()
        default = self.catalog(DEFAULT_WAREHOUSE)
        self.idempotency = IdempotencyStore(default.engine, config.idempotency_lifetime_s)
        self.metrics = MetricsStore(default.engine)
        self.vendor = CredentialVendor(config.storage_credentials, config.vended_credentials)

    def catalog(self, warehouse: str) -> ServedCatalog:
        with self._lock:
            found = self._catalogs.get(warehouse)
            if found is not None:
                return found
            conf: WarehouseConfig | None = self.config.warehouse(warehouse)
            if conf is None:
                raise RestError(404, "NoSuchWarehouseException", f"no warehouse {warehouse!r}")
            cat = ServedCatalog(conf.name, conf.uri, conf.warehouse, conf.properties)
            self._catalogs[warehouse] = cat
            return cat

    # -- requests -----------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # lifespan and websockets: nothing to do
        request = Request(scope, receive)
        try:
            response = await self._handle(request)
        except RestError as exc:
            response = _json_response(exc.status, error_body(exc.status, exc.kind, str(exc)))
        await response(scope, receive, send)

    async def _body(self, request: Request) -> bytes:
        limit = self.config.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise RestError(413, "BadRequestException", f"the body is over {limit} bytes")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise RestError(413, "BadRequestException", f"the body is over {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def _handle(self, request: Request) -> Response:
        raw_path = request.scope.get("raw_path") or request.url.path.encode()
        path = raw_path.decode("latin-1").split("?", 1)[0]
        segments = path.strip("/").split("/")
        if not segments or segments[0] != "v1":
            raise RestError(404, "NotFoundException", f"no such path {path!r}; the API is at /v1/")
        segments = segments[1:]
        body = await self._body(request)
        method = request.method
        if segments == ["oauth", "tokens"] and method == "POST":
            return await run_in_threadpool(self._token, request, body)
        if segments == ["config"] and method == "GET":
            return await run_in_threadpool(self._config, request)
        warehouse = DEFAULT_WAREHOUSE
        if segments and segments[0] not in RESERVED_PREFIXES:
            warehouse, segments = unquote(segments[0]), segments[1:]
        for verb, pattern, handler, mutates in _ROUTES:
            params = _match(pattern, segments)
            if params is None:
                continue
            if verb != method:
                continue
            return await run_in_threadpool(
                self._run, request, body, warehouse, params, handler, mutates, f"{verb} {pattern}"
            )
        if any(_match(p, segments) is not None for _v, p, _h, _w in _ROUTES):
            raise RestError(405, "MethodNotAllowedException", f"{method} is not allowed on {path}")
        raise RestError(404, "NotFoundException", f"no such path {path!r}")

    def _principal(self, request: Request) -> Principal:
        try:
            return self.auth.authenticate(request.headers.get("authorization"))
        except AuthError as exc:
            kind = (
                "AuthenticationTimeoutException" if exc.status == 419 else "NotAuthorizedException"
            )
            raise RestError(exc.status, kind, str(exc)) from exc

    def _authorizer(self, principal: Principal, warehouse: str) -> Any:
        def authorize(privilege: int, kind: str, path: tuple[str, ...]) -> None:
            if not may(principal, self.config.roles, privilege, warehouse, kind, path):
                names = {1: "read", 2: "write", 3: "manage"}
                target = ".".join(path) or "the catalog"
                raise RestError(
                    403,
                    "ForbiddenException",
                    f"principal {principal.name!r} may not {names[privilege]} {kind} {target}",
                )

        return authorize

    def _run(
        self,
        request: Request,
        body: bytes,
        warehouse: str,
        params: dict[str, str],
        handler: Any,
        mutates: bool,
        route: str,
    ) -> Response:
        principal = self._principal(request)
        catalog = self.catalog(warehouse)
        call = Call(
            method=request.method,
            warehouse=warehouse,
            catalog=catalog,
            params=params,
            query=dict(parse_qsl(request.url.query, keep_blank_values=True)),
            headers={k.lower(): v for k, v in request.headers.items()},
            raw_body=body,
            principal=principal,
            authorize=self._authorizer(principal, warehouse),
            vendor=self.vendor,
            keep_metrics=lambda ident, report: self.metrics.keep(warehouse, ident, report),
        )
        key = request.headers.get("idempotency-key")
        if key is None or not mutates:
            return self._reply(handler, call)[0]
        try:
            uuid.UUID(key)
        except ValueError as exc:
            raise RestError(400, "BadRequestException", "Idempotency-Key must be a UUID") from exc
        where = f"{warehouse}|{route}|{request.url.path}"
        stored = self.idempotency.claim(key, where)
        if stored is not None:
            return self._replay(stored.route, stored.status, stored.body, where, catalog)
        response, answer = self._reply(handler, call)
        if response.status_code >= 500:
            self.idempotency.release(key)
        else:
            status = response.status_code
            self.idempotency.finish(key, status, _kept(route, status, answer))
        return response

    @staticmethod
    def _replay(
        route: str, status: int | None, body: Any, where: str, catalog: ServedCatalog
    ) -> Response:
        if route != where:
            raise RestError(
                422,
                "UnprocessableEntityException",
                "this Idempotency-Key was used for another request; use a new key",
            )
        if status is None:
            raise RestError(
                503,
                "ServiceUnavailableException",
                "a request with this Idempotency-Key is still in progress; retry later",
            )
        return _json_response(status, _restored(body, catalog))

    @staticmethod
    def _reply(handler: Any, call: Call) -> tuple[Response, Any]:
        """The response to a request, and its JSON body (None for none)."""
        try:
            reply: Reply = handler(call)
        except NeveError as exc:
            err = error_for(exc)
            body = error_body(err.status, err.kind, str(err))
            return _json_response(err.status, body), body
        except RestError as exc:
            body = error_body(exc.status, exc.kind, str(exc))
            return _json_response(exc.status, body), body
        return _json_response(reply.status, reply.body, reply.headers), reply.body

    # -- config and tokens -----------------------------------------------------------------

    def _config(self, request: Request) -> Response:
        self._principal(request)
        wanted = request.query_params.get("warehouse") or DEFAULT_WAREHOUSE
        default = self.config.catalog
        # the location of new tables is the catalog's warehouse; a prefix picks the catalog
        overrides: dict[str, str] = {"warehouse": default.warehouse}
        if wanted not in (DEFAULT_WAREHOUSE, default.name, default.warehouse):
            overrides = {"warehouse": self.catalog(wanted).warehouse, "prefix": wanted}
        return _json_response(
            200,
            {
                "defaults": {},
                "overrides": overrides,
                "endpoints": ENDPOINTS,
                "idempotency-key-lifetime": f"PT{self.config.idempotency_lifetime_s}S",
            },
        )

    def _token(self, request: Request, body: bytes) -> Response:
        form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        grant = form.get("grant_type")
        try:
            if grant == "client_credentials":
                client_id, secret = form.get("client_id"), form.get("client_secret")
                basic = _basic_credentials(request.headers.get("authorization"))
                if basic is not None and not client_id:
                    client_id, secret = basic  # RFC 6749's client_secret_basic
                if not client_id or secret is None:
                    raise AuthError(
                        400, "client_id and client_secret are required", "invalid_request"
                    )
                return _json_response(200, self.auth.token_for_client(client_id, secret))
            if grant == "urn:ietf:params:oauth:grant-type:token-exchange":
                subject = form.get("subject_token")
                if not subject:
                    raise AuthError(400, "subject_token is required", "invalid_request")
                return _json_response(200, self.auth.exchange(subject))
            raise AuthError(400, f"grant_type {grant!r} is not supported", "unsupported_grant_type")
        except AuthError as exc:
            status = 400 if exc.status not in (400, 401) else exc.status
            return _json_response(status, {"error": exc.oauth_error, "error_description": str(exc)})


def _basic_credentials(header: str | None) -> tuple[str, str] | None:
    """Client id and secret from an ``Authorization: Basic`` header (URL-encoded, as
    RFC 6749 says), or None."""
    if not header or not header.lower().startswith("basic "):
        return None
    try:
        raw = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    client_id, sep, secret = raw.partition(":")
    return (unquote(client_id), unquote(secret)) if sep else None


def create_app(config: ServerConfig) -> RestServer:
    """The ASGI application serving ``config``'s catalogs."""
    return RestServer(config)


def create_app_from_env() -> RestServer:
    """The application as ``neve serve`` configured it (uvicorn's factory in each
    worker process; the arguments are in :data:`CONFIG_ENV`)."""
    args = json.loads(os.environ.get(CONFIG_ENV, "{}"))
    return RestServer(load_config(args.pop("config", None), **args))
