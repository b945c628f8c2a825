"""The HTTP side of the server: one request as handlers see it, their replies, and
errors in the spec's ``ErrorModel`` with the status the spec gives each.

Every error a handler raises becomes ``{"error": {"message", "type", "code"}}``: neve's
errors by kind (404 for what does not exist, 409 for what exists or a commit that lost,
400 for bad input, 503 for a busy database or an STS call that failed, 500 when a commit's outcome is unknown), and
:class:`RestError` for what the HTTP layer itself refuses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from neve.catalog.base import Catalog
from neve.errors import (
    AlreadyExistsError,
    CatalogBusyError,
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
    NamespaceNotEmptyError,
    NeveError,
    NeveIOError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    NotFoundError,
    StorageCredentialsError,
    ValidationError,
)
from neve.server.auth import Principal
from neve.server.credentials import CredentialVendor

__all__ = [
    "Call",
    "Handler",
    "Reply",
    "RestError",
    "check_name",
    "error_body",
    "error_for",
]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class RestError(Exception):
    """A refusal with its HTTP status and the spec's error type."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


def error_body(status: int, kind: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": status}}


def error_for(exc: NeveError) -> RestError:
    """The REST status and type of one of neve's errors."""
    # the names Iceberg-Java's error handlers expect for each case
    table: list[tuple[type[NeveError], int, str]] = [
        (NoSuchNamespaceError, 404, "NoSuchNamespaceException"),
        (NoSuchTableError, 404, "NoSuchTableException"),
        (NoSuchViewError, 404, "NoSuchViewException"),
        (NotFoundError, 404, "NotFoundException"),
        (NamespaceNotEmptyError, 409, "NamespaceNotEmptyException"),
        (AlreadyExistsError, 409, "AlreadyExistsException"),
        (CommitFailedError, 409, "CommitFailedException"),
        (CommitConflictError, 409, "CommitFailedException"),
        (CommitStateUnknownError, 500, "CommitStateUnknownException"),
        (ValidationError, 400, "BadRequestException"),
        (CatalogBusyError, 503, "ServiceUnavailableException"),
        (StorageCredentialsError, 503, "ServiceUnavailableException"),
        (NeveIOError, 500, "ServerErrorException"),
    ]
    for cls, status, kind in table:
        if isinstance(exc, cls):
            return RestError(status, kind, str(exc))
    return RestError(500, "ServerErrorException", str(exc))


def check_name(level: str, what: str) -> str:
    """A namespace level or a table/view name as the client sent it, refused when it
    could mean something else on a path or in a file name."""
    if not level:
        raise RestError(400, "BadRequestException", f"empty {what} name")
    if level in (".", "..") or "/" in level or "\\" in level or _CONTROL.search(level):
        raise RestError(
            400,
            "BadRequestException",
            f"{what} name {level!r} is not allowed: no '/', '\\', control characters, "
            "and not '.' or '..'",
        )
    if len(level) > 255:
        raise RestError(400, "BadRequestException", f"{what} name is longer than 255 characters")
    return level


@dataclass
class Reply:
    """What a handler answers: a status, a JSON body (None for none) and headers."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Call:
    """One request as a handler sees it."""

    method: str
    warehouse: str
    catalog: Catalog
    params: dict[str, str]
    query: Mapping[str, str]
    headers: Mapping[str, str]
    raw_body: bytes
    principal: Principal
    authorize: Callable[[int, str, tuple[str, ...]], None]
    #: the storage credentials of table locations (static and vended)
    vendor: CredentialVendor = field(default_factory=CredentialVendor)
    #: keeps a metrics report of a table
    keep_metrics: Callable[[tuple[str, ...], dict[str, Any]], None] | None = None
    _json: Any = None

    def json(self) -> Any:
        """The body as JSON (400 when it is missing or malformed)."""
        if self._json is None:
            if not self.raw_body:
                raise RestError(400, "BadRequestException", "the request needs a JSON body")
            try:
                self._json = json.loads(self.raw_body)
            except (ValueError, UnicodeDecodeError) as exc:
                raise RestError(400, "BadRequestException", f"malformed JSON body: {exc}") from exc
        return self._json

    def body_object(self) -> dict[str, Any]:
        data = self.json()
        if not isinstance(data, dict):
            raise RestError(400, "BadRequestException", "the JSON body must be an object")
        return data

    def namespace(self, key: str = "namespace") -> tuple[str, ...]:
        """The namespace path parameter, split at the unit separator (0x1F)."""
        raw = self.params[key]
        levels = tuple(raw.split("\x1f"))
        return tuple(check_name(level, "namespace") for level in levels)

    def name(self, key: str) -> str:
        return check_name(self.params[key], key)

    def ident(self, key: str = "table") -> tuple[str, ...]:
        return (*self.namespace(), self.name(key))


Handler = Callable[[Call], Reply]


def identifier_from_json(data: Any, what: str = "table") -> tuple[str, ...]:
    """A ``TableIdentifier`` object (``{"namespace": [...], "name": ...}``)."""
    if not isinstance(data, Mapping):
        raise RestError(400, "BadRequestException", f"a {what} identifier must be an object")
    ns, name = data.get("namespace"), data.get("name")
    if not isinstance(ns, list) or not all(isinstance(x, str) for x in ns) or not ns:
        raise RestError(400, "BadRequestException", f"{what} identifier: bad namespace {ns!r}")
    if not isinstance(name, str):
        raise RestError(400, "BadRequestException", f"{what} identifier: bad name {name!r}")
    return (*(check_name(x, "namespace") for x in ns), check_name(name, what))
