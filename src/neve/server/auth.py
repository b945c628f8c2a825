"""Who is asking and what they may do: the OAuth2 client-credentials token endpoint,
bearer tokens (the server's own, signed HS256 JWTs that expire; or an external OIDC
issuer's, checked against its key set), and grants by role.

A request without a token is refused (401) unless anonymous access is on; a token
that does not verify is 401, one that expired 419 (the spec's "authentication
timeout": refresh and retry); a principal without the grant 403.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import jwt

from neve.server.config import (
    DEFAULT_WAREHOUSE,
    Grant,
    Privilege,
    ServerConfig,
)

__all__ = ["AuthError", "Authenticator", "Principal", "may"]

_ISSUER = "neve"
_SCOPE = "catalog"


class AuthError(Exception):
    """A request that is not authenticated (``status`` 401 or 419) or not allowed (403),
    or a token request that is refused (400/401, with an OAuth2 ``error`` code)."""

    def __init__(self, status: int, message: str, oauth_error: str = "invalid_client") -> None:
        super().__init__(message)
        self.status = status
        self.oauth_error = oauth_error


@dataclass(frozen=True)
class Principal:
    name: str
    roles: tuple[str, ...]


def _secret_matches(given: str, configured: str) -> bool:
    if configured.startswith("sha256:"):
        digest = hashlib.sha256(given.encode()).hexdigest()
        return hmac.compare_digest(digest, configured[len("sha256:") :])
    return hmac.compare_digest(given.encode(), configured.encode())


class Authenticator:
    """Issues and checks tokens for one server configuration."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self._oidc_keys: Any = None

    # -- the token endpoint ---------------------------------------------------------

    def token_for_client(self, client_id: str, client_secret: str) -> dict[str, Any]:
        """An OAuth2 token response for valid client credentials."""
        principal = self.config.principals.get(client_id)
        if principal is None or not _secret_matches(client_secret, principal.secret):
            raise AuthError(401, "unknown client id or wrong client secret", "invalid_client")
        return self._issue(client_id)

    def exchange(self, subject_token: str) -> dict[str, Any]:
        """A fresh token for the principal of a (still valid) token of this server."""
        principal = self.principal_of(subject_token)
        if principal.name not in self.config.principals:
            raise AuthError(400, "only this server's own tokens can be exchanged", "invalid_grant")
        return self._issue(principal.name)

    def _issue(self, name: str) -> dict[str, Any]:
        now = int(time.time())
        lifetime = self.config.token_lifetime_s
        claims = {
            "iss": _ISSUER,
            "sub": name,
            "iat": now,
            "exp": now + lifetime,
            "jti": uuid.uuid4().hex,
            "scope": _SCOPE,
        }
        token = jwt.encode(claims, self.config.signing_key, algorithm="HS256")
        return {
            "access_token": token,
            "token_type": "bearer",
            "expires_in": lifetime,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "scope": _SCOPE,
        }

    # -- checking requests ----------------------------------------------------------

    def authenticate(self, authorization: str | None) -> Principal:
        """The principal of a request's ``Authorization`` header."""
        if not authorization:
            if self.config.anonymous:
                return Principal("anonymous", self.config.anonymous_roles)
            raise AuthError(401, "no bearer token: get one from /v1/oauth/tokens")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError(401, "the Authorization header must be 'Bearer <token>'")
        token = token.strip()
        if self.config.anonymous and token.count(".") != 2:
            # Clients without credentials send placeholders ("Bearer None"): with
            # anonymous access on they are anonymous; a JWT is always checked.
            return Principal("anonymous", self.config.anonymous_roles)
        return self.principal_of(token)

    def principal_of(self, token: str) -> Principal:
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError as exc:
            raise AuthError(401, f"the bearer token is not a valid JWT ({exc})") from exc
        oidc = self.config.oidc
        if oidc is not None and unverified.get("iss") == oidc.issuer:
            return self._oidc_principal(token, header)
        try:
            claims = jwt.decode(
                token,
                self.config.signing_key,
                algorithms=["HS256"],
                issuer=_ISSUER,
                options={"require": ["exp", "sub", "iss"]},
            )
        except jwt.ExpiredSignatureError as exc:
            raise AuthError(419, "the bearer token expired: get a new one and retry") from exc
        except jwt.PyJWTError as exc:
            raise AuthError(401, f"the bearer token does not verify ({exc})") from exc
        name = str(claims["sub"])
        if name == "anonymous" or name not in self.config.principals:
            raise AuthError(401, f"principal {name!r} is not known to this server")
        return Principal(name, self.config.principals[name].roles)

    def _oidc_principal(self, token: str, header: dict[str, Any]) -> Principal:
        oidc = self.config.oidc
        assert oidc is not None
        key = self._oidc_key(header.get("kid"))
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=["RS256", "RS384", "RS512", "ES256", "ES384"],
                issuer=oidc.issuer,
                audience=oidc.audience,
                options={"require": ["exp", "iss"], "verify_aud": oidc.audience is not None},
            )
        except jwt.ExpiredSignatureError as exc:
            raise AuthError(419, "the identity provider's token expired") from exc
        except jwt.PyJWTError as exc:
            raise AuthError(401, f"the identity provider's token does not verify ({exc})") from exc
        name = claims.get(oidc.principal_claim)
        if not isinstance(name, str) or not name:
            raise AuthError(401, f"the token has no {oidc.principal_claim!r} claim")
        roles = claims.get(oidc.roles_claim) or []
        if isinstance(roles, str):
            roles = roles.split()
        return Principal(name, tuple(str(r) for r in roles))

    def _oidc_key(self, kid: str | None) -> Any:
        oidc = self.config.oidc
        assert oidc is not None
        try:
            if oidc.jwks_file is not None:
                if self._oidc_keys is None:
                    with open(oidc.jwks_file, encoding="utf-8") as f:
                        self._oidc_keys = jwt.PyJWKSet.from_dict(json.load(f))
                keys = self._oidc_keys.keys
                found = [k for k in keys if kid is None or k.key_id == kid]
                if not found:
                    raise AuthError(401, f"no key {kid!r} in the identity provider's key set")
                return found[0].key
            if self._oidc_keys is None:
                self._oidc_keys = jwt.PyJWKClient(str(oidc.jwks_uri), cache_keys=True)
            return self._oidc_keys.get_signing_key(kid).key
        except AuthError:
            raise
        except (OSError, ValueError, jwt.PyJWTError) as exc:
            raise AuthError(401, f"cannot read the identity provider's key set ({exc})") from exc


def _covers(grant: Grant, warehouse: str, kind: str, path: tuple[str, ...]) -> bool:
    if grant.warehouse not in ("*", warehouse):
        return False
    if grant.kind == "catalog":
        return True
    if grant.kind == "namespace":
        # the namespace, the namespaces below it, and the tables and views in them
        n = len(grant.path)
        if kind == "namespace":
            return path[:n] == grant.path
        return len(path) > n and path[:n] == grant.path
    return grant.kind == kind and grant.path == path


def may(
    principal: Principal,
    roles: dict[str, tuple[Grant, ...]] | Any,
    privilege: Privilege,
    warehouse: str,
    kind: str,
    path: Iterable[str] = (),
) -> bool:
    """Whether one of ``principal``'s roles grants ``privilege`` (or a higher one) on
    the target: ``kind`` ``catalog`` (``path`` empty), ``namespace`` (its levels), or
    ``table``/``view`` (namespace levels and name)."""
    target = tuple(path)
    for role in principal.roles:
        for grant in roles.get(role, ()):
            if grant.privilege >= privilege and _covers(
                grant, warehouse or DEFAULT_WAREHOUSE, kind, target
            ):
                return True
    return False
