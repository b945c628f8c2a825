"""HTTP for the REST catalog client (httpx): tokens, errors, and retries that are safe.

- Tokens: ``token`` is a fixed bearer token; ``credential`` (``client_id:secret``) is
  exchanged for one at ``oauth2-server-uri`` (default ``<uri>/v1/oauth/tokens``, the
  spec's OAuth2 client-credentials flow), fetched again before it expires and once
  more when the server answers 401 or 419.
- Errors: the server's ``ErrorModel`` becomes neve's error of the same meaning (404 ->
  ``NoSuch*``, 409 -> ``*AlreadyExists`` / ``CommitFailedError`` /
  ``NamespaceNotEmptyError``, 400 -> ``ValidationError``, 401/403/419 ->
  ``AccessDeniedError``, 503 -> ``CatalogBusyError``, other 5xx -> ``NeveIOError``).
- Retries: a request that changes something carries an ``Idempotency-Key`` when the
  server supports them, and is then sent again with the same key after a lost
  connection or a 502/503/504 (applied once); without keys it is not repeated.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # imported where a client is made: httpx (with the click, rich and pygments its
    # command line imports) is a tenth of a second that only a REST catalog needs
    import httpx

from neve.errors import (
    AccessDeniedError,
    CatalogBusyError,
    CommitFailedError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NeveError,
    NeveIOError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    NotFoundError,
    TableAlreadyExistsError,
    ValidationError,
    ViewAlreadyExistsError,
)

__all__ = ["RestHttp", "RestResponseError", "uuid7"]

#: How often a request with an idempotency key is sent again after a lost answer.
_IDEMPOTENT_ATTEMPTS = 4
_RETRY_STATUS = frozenset({502, 503, 504})


def uuid7() -> str:
    """A UUID version 7 (time-ordered, RFC 9562), as the spec asks of idempotency keys."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 68) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


class RestResponseError(NeveIOError):
    """An answer the client cannot use (not JSON, or not what the spec says)."""


def error_from_response(status: int, body: Any, context: str) -> NeveError:
    """neve's error for a REST error answer."""
    err = body.get("error") if isinstance(body, Mapping) else None
    kind = str(err.get("type", "")) if isinstance(err, Mapping) else ""
    message = str(err.get("message", "")) if isinstance(err, Mapping) else str(body)[:500]
    text = f"{context}: {message or kind or f'HTTP {status}'}"
    if status in (401, 403, 419):
        return AccessDeniedError(f"{text} (HTTP {status})")
    if status == 404:
        if "Namespace" in kind:
            return NoSuchNamespaceError(text)
        if "Table" in kind:
            return NoSuchTableError(text)
        if "View" in kind:
            return NoSuchViewError(text)
        return NotFoundError(text)
    if status == 409:
        if "NamespaceNotEmpty" in kind:
            return NamespaceNotEmptyError(text)
        if "AlreadyExists" in kind:
            lowered = context.lower()
            if "view" in lowered:
                return ViewAlreadyExistsError(text)
            if "namespace" in lowered and "table" not in lowered:
                return NamespaceAlreadyExistsError(text)
            return TableAlreadyExistsError(text)
        return CommitFailedError(text)
    if status in (400, 405, 406, 413, 422):
        return ValidationError(text)
    if status == 503:
        return CatalogBusyError(text)
    return NeveIOError(f"{text} (HTTP {status})")


class RestHttp:
    """One server's HTTP session: base URI, bearer token, retries."""

    def __init__(self, uri: str, properties: Mapping[str, str]) -> None:
        self.uri = uri.rstrip("/")
        self.properties = dict(properties)
        timeout = float(self.properties.get("rest.timeout-seconds", "120"))
        headers = {
            k[len("header.") :]: v for k, v in self.properties.items() if k.startswith("header.")
        }
        headers.setdefault("X-Iceberg-Access-Delegation", "vended-credentials")
        import httpx  # here, not at the top: only a REST client needs it (see the top)

        self.client = httpx.Client(timeout=timeout, headers=headers)
        self._token: str | None = self.properties.get("token")
        self._expires = float("inf")
        self._lock = threading.Lock()
        self.idempotency = False  # set from the server's config answer

    def close(self) -> None:
        self.client.close()

    # -- tokens ---------------------------------------------------------------------

    def _credential(self) -> tuple[str, str] | None:
        raw = self.properties.get("credential")
        if not raw:
            return None
        client_id, sep, secret = raw.partition(":")
        return (client_id, secret) if sep else ("", raw)

    def _fetch_token(self) -> None:
        cred = self._credential()
        if cred is None:
            return
        url = self.properties.get("oauth2-server-uri") or f"{self.uri}/v1/oauth/tokens"
        form = {
            "grant_type": "client_credentials",
            "client_id": cred[0],
            "client_secret": cred[1],
            "scope": self.properties.get("scope", "catalog"),
        }
        import httpx  # here, not at the top: only a REST client needs it (see the top)

        try:
            resp = self.client.post(url, data=form)
        except httpx.HTTPError as exc:
            raise NeveIOError(f"cannot reach the token endpoint {url}: {exc}") from exc
        body = _json(resp)
        if resp.status_code != 200 or not isinstance(body, Mapping) or "access_token" not in body:
            detail = body.get("error_description") if isinstance(body, Mapping) else None
            raise AccessDeniedError(
                f"the token endpoint {url} refused the credential "
                f"(HTTP {resp.status_code}: {detail or body}); check the client id and secret"
            )
        self._token = str(body["access_token"])
        expires_in = body.get("expires_in")
        # fetch a new one when 90% of its lifetime is over
        self._expires = time.monotonic() + 0.9 * float(expires_in) if expires_in else float("inf")

    def _auth_headers(self, refresh: bool = False) -> dict[str, str]:
        with self._lock:
            if self._credential() is not None and (
                refresh or self._token is None or time.monotonic() >= self._expires
            ):
                self._fetch_token()
            token = self._token
        return {"Authorization": f"Bearer {token}"} if token else {}

    # -- requests -------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        context: str,
        *,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        mutates: bool = False,
        ok: Callable[[int], bool] = lambda s: 200 <= s < 300,
        on_unknown: Callable[[Exception], NeveError] | None = None,
    ) -> httpx.Response:
        """Send one request; the response when ``ok(status)``, else neve's error.

        A mutating request that loses its answer is sent again with the same
        idempotency key when the server keeps them; otherwise ``on_unknown`` says what
        the lost answer means (the default: a NeveIOError)."""
        import httpx  # here, not at the top: only a REST client needs it (see the top)

        url = f"{self.uri}/{path.lstrip('/')}"
        extra = dict(headers or {})
        keyed = mutates and self.idempotency
        if keyed:
            extra["Idempotency-Key"] = uuid7()
        attempts = _IDEMPOTENT_ATTEMPTS if keyed or not mutates else 1
        refreshed = False
        attempt = 0
        while True:
            attempt += 1
            try:
                resp = self.client.request(
                    method,
                    url,
                    json=json,
                    params=params,
                    headers={**extra, **self._auth_headers()},
                )
            except httpx.TransportError as exc:
                if attempt < attempts:
                    time.sleep(0.05 * 2**attempt)
                    continue
                if mutates and on_unknown is not None:
                    raise on_unknown(exc) from exc
                raise NeveIOError(f"{context}: cannot reach {self.uri} ({exc})") from exc
            if resp.status_code in (401, 419) and not refreshed and self._credential():
                refreshed = True
                self._auth_headers(refresh=True)
                attempt -= 1
                continue
            if resp.status_code in _RETRY_STATUS and attempt < attempts:
                time.sleep(0.05 * 2**attempt)
                continue
            if ok(resp.status_code):
                return resp
            if mutates and resp.status_code >= 500 and on_unknown is not None:
                raise on_unknown(error_from_response(resp.status_code, _json(resp), context))
            raise error_from_response(resp.status_code, _json(resp), context)


def _json(resp: httpx.Response) -> Any:
    try:
        return resp.json()
    except ValueError:
        return resp.text
