"""What ``neve serve`` serves, read from its YAML config file and its command line.

::

    catalog:                      # the catalog served without a prefix
      uri: sqlite:////srv/neve/catalog.db   # or postgresql://user@host/db
      warehouse: /srv/neve/warehouse        # or s3://bucket/warehouse
      name: neve                  # the catalog name stored in the rows
      properties: {s3.region: eu-west-1}
    warehouses:                   # more catalogs, chosen by a client's `warehouse`
      lake: {name: lake, warehouse: s3://lake/warehouse}   # uri: the catalog's
    warehouse-root: /srv/neve/more  # any other warehouse name W: catalog W in <root>/W
    anonymous: false              # requests without a token (principal "anonymous")
    anonymous-roles: [admin]
    token:
      signing-key: <a long random string>   # the same in every server process
      lifetime-seconds: 3600
    principals:
      etl: {secret: <client secret>, roles: [writer]}
    roles:
      writer: ["write on catalog", "manage on namespace staging"]
      reader: ["read on namespace lake:sales"]
    oidc:                         # tokens of an external issuer (optional)
      issuer: https://idp.example.com/realms/data
      audience: neve
      jwks-file: /srv/neve/jwks.json        # or jwks-uri: https://...
      principal-claim: sub
      roles-claim: roles
    storage-credentials:          # handed to clients with each table
      - prefix: s3://lake/
        config: {s3.access-key-id: ..., s3.secret-access-key: ...}
      - prefix: s3://lake/warehouse/  # short-lived, scoped to each table (STS AssumeRole)
        config: {s3.region: eu-west-1}  # handed along with the vended keys
        sts:
          role-arn: arn:aws:iam::123456789012:role/neve-tables
          region: eu-west-1
          endpoint: https://sts.eu-west-1.amazonaws.com   # default: the region's
          access-key-id: ...      # the server's own key for STS (default: its
          secret-access-key: ...  # environment, profile or instance role)
          duration-seconds: 3600
          session-name: neve-serve
          external-id: ...        # when the role's trust policy asks for one
    max-body-bytes: 16777216
    idempotency-lifetime-seconds: 1800

Grants are ``<privilege> on <target>``: the privilege ``read`` (list, load, plan),
``write`` (also commit, create tables and views) or ``manage`` (also create, drop and
change namespaces, drop and rename tables); the target ``catalog`` (the default
catalog), ``catalog <warehouse>``, ``catalog *`` (every catalog), ``namespace
[<warehouse>:]a.b`` (the namespace, those below it and everything in them), ``table
[<warehouse>:]a.b.t`` or ``view [<warehouse>:]a.b.v``.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from neve.errors import ValidationError

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_WAREHOUSE",
    "MANAGE",
    "READ",
    "SIGNING_KEY_ENV",
    "WRITE",
    "Grant",
    "OidcConfig",
    "PrincipalConfig",
    "Privilege",
    "ServerConfig",
    "StsVending",
    "WarehouseConfig",
    "load_config",
    "parse_grant",
]

#: Environment variable holding the server's arguments (JSON: the config file's path
#: and the command line's overrides), for uvicorn's worker processes.
CONFIG_ENV = "NEVE_SERVER_ARGS"
#: Environment variable with the token signing key, when the config file has none
#: (``neve serve`` sets it for its worker processes, so they accept each other's tokens).
SIGNING_KEY_ENV = "NEVE_SERVER_SIGNING_KEY"
#: The warehouse name of the catalog served without a prefix.
DEFAULT_WAREHOUSE = ""
_WAREHOUSE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
#: Path words that cannot be warehouse names (they follow /v1/ without a prefix).
RESERVED_PREFIXES = frozenset({"config", "oauth", "namespaces", "tables", "views", "transactions"})

Privilege = int
READ, WRITE, MANAGE = 1, 2, 3
_PRIVILEGES = {"read": READ, "write": WRITE, "manage": MANAGE}


@dataclass(frozen=True)
class Grant:
    """A privilege on a target: ``kind`` is ``catalog``, ``namespace``, ``table`` or
    ``view``; ``warehouse`` "*" is every catalog; ``path`` the namespace or object."""

    privilege: Privilege
    kind: str
    warehouse: str
    path: tuple[str, ...] = ()


def parse_grant(text: str) -> Grant:
    """``"write on namespace lake:db"`` -> a :class:`Grant` (ValidationError when malformed)."""
    words = str(text).split()
    if len(words) < 3 or words[1] != "on" or words[0] not in _PRIVILEGES:
        raise ValidationError(
            f"grant {text!r} must read '<read|write|manage> on <catalog|namespace|table|view> "
            "[name]', e.g. 'read on namespace sales'"
        )
    privilege, kind = _PRIVILEGES[words[0]], words[2]
    target = " ".join(words[3:])
    if kind == "catalog":
        return Grant(privilege, kind, target or DEFAULT_WAREHOUSE)
    if kind not in ("namespace", "table", "view") or not target:
        raise ValidationError(f"grant {text!r}: name the {kind} it is on")
    warehouse, _, name = target.rpartition(":")
    path = tuple(name.split("."))
    if not all(path) or (kind != "namespace" and len(path) < 2):
        raise ValidationError(f"grant {text!r}: {name!r} is not a {kind} name")
    return Grant(privilege, kind, warehouse or DEFAULT_WAREHOUSE, path)


@dataclass(frozen=True)
class WarehouseConfig:
    """One catalog the server serves."""

    uri: str
    warehouse: str
    name: str = "neve"
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PrincipalConfig:
    secret: str
    roles: tuple[str, ...] = ()


@dataclass(frozen=True)
class OidcConfig:
    """An external token issuer whose tokens the server accepts."""

    issuer: str
    audience: str | None = None
    jwks_file: str | None = None
    jwks_uri: str | None = None
    principal_claim: str = "sub"
    roles_claim: str = "roles"


@dataclass(frozen=True)
class StsVending:
    """Short-lived credentials for the tables under ``prefix`` (``s3://bucket/...``),
    vended by STS ``AssumeRole`` of ``role_arn`` with a session policy that allows only
    the table's own location. ``config`` is handed to clients along with the keys; the
    access key, secret and session token are the server's own for calling STS (None:
    botocore's default chain)."""

    prefix: str
    role_arn: str
    region: str
    endpoint: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    duration_s: int = 3600
    session_name: str = "neve-serve"
    external_id: str | None = None
    config: Mapping[str, str] = field(default_factory=dict)


_STS_KEYS = {
    "role-arn",
    "region",
    "endpoint",
    "access-key-id",
    "secret-access-key",
    "session-token",
    "duration-seconds",
    "session-name",
    "external-id",
}
_SESSION_NAME = re.compile(r"^[\w+=,.@-]{2,64}$")


def _sts_vending(prefix: str, raw: Any, config: dict[str, str]) -> StsVending:
    where = f"storage-credentials {prefix!r}: sts"
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where} must be a mapping with role-arn: and region:")
    unknown = sorted(set(map(str, raw)) - _STS_KEYS)
    if unknown:
        raise ValidationError(f"{where} has unknown keys {unknown}; known: {sorted(_STS_KEYS)}")
    if not prefix.startswith(("s3://", "s3a://", "s3n://")) or len(prefix.split("/")) < 3:
        raise ValidationError(f"{where}: the prefix must be an s3:// location, s3://bucket/...")
    if not raw.get("role-arn") or not raw.get("region"):
        raise ValidationError(f"{where} needs a role-arn and a region")
    duration = int(raw.get("duration-seconds", 3600))
    if not 900 <= duration <= 43200:
        raise ValidationError(f"{where}: duration-seconds must be 900..43200 (STS's range)")
    name = str(raw.get("session-name", "neve-serve"))
    if not _SESSION_NAME.match(name):
        raise ValidationError(f"{where}: session-name must be 2-64 of letters, digits, +=,.@-_")

    def opt(key: str) -> str | None:
        value = raw.get(key)
        return None if value is None else str(value)

    return StsVending(
        prefix=prefix,
        role_arn=str(raw["role-arn"]),
        region=str(raw["region"]),
        endpoint=opt("endpoint"),
        access_key_id=opt("access-key-id"),
        secret_access_key=opt("secret-access-key"),
        session_token=opt("session-token"),
        duration_s=duration,
        session_name=name,
        external_id=opt("external-id"),
        config=config,
    )


def _storage_credentials(
    raw: Any,
) -> tuple[tuple[Mapping[str, Any], ...], tuple[StsVending, ...]]:
    """The config file's ``storage-credentials``: static entries and STS entries."""
    static: list[Mapping[str, Any]] = []
    vending: list[StsVending] = []
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise ValidationError("storage-credentials must be a list of {prefix:, config:, sts:}")
    for c in raw:
        if not isinstance(c, Mapping) or "prefix" not in c or not ("config" in c or "sts" in c):
            raise ValidationError("each storage credential needs a prefix and a config or sts")
        prefix = str(c["prefix"])
        config = _str_map(c.get("config"), f"storage-credentials {prefix!r}: config")
        if "sts" in c:
            vending.append(_sts_vending(prefix, c["sts"], config))
        else:
            static.append({"prefix": prefix, "config": config})
    return tuple(static), tuple(vending)


@dataclass(frozen=True)
class ServerConfig:
    catalog: WarehouseConfig
    warehouses: Mapping[str, WarehouseConfig] = field(default_factory=dict)
    warehouse_root: str | None = None
    anonymous: bool = False
    anonymous_roles: tuple[str, ...] = ("admin",)
    signing_key: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    token_lifetime_s: int = 3600
    principals: Mapping[str, PrincipalConfig] = field(default_factory=dict)
    roles: Mapping[str, tuple[Grant, ...]] = field(
        default_factory=lambda: {"admin": (Grant(MANAGE, "catalog", "*"),)}
    )
    oidc: OidcConfig | None = None
    storage_credentials: tuple[Mapping[str, Any], ...] = ()
    vended_credentials: tuple[StsVending, ...] = ()
    max_body_bytes: int = 16 * 1024 * 1024
    idempotency_lifetime_s: int = 1800

    def warehouse(self, name: str) -> WarehouseConfig | None:
        """The catalog served under warehouse ``name`` ("" the default), or None."""
        if name == DEFAULT_WAREHOUSE:
            return self.catalog
        if name in self.warehouses:
            return self.warehouses[name]
        if self.warehouse_root and _WAREHOUSE_NAME.match(name) and name not in RESERVED_PREFIXES:
            return WarehouseConfig(
                self.catalog.uri,
                self.warehouse_root.rstrip("/") + "/" + name,
                name,
                self.catalog.properties,
            )
        return None


def _str_map(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where} must be a mapping of names to values")
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in raw.items()}


def _warehouse(raw: Any, where: str, default: WarehouseConfig | None) -> WarehouseConfig:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where} must be a mapping with uri: and warehouse:")
    uri = raw.get("uri") or (default.uri if default else None)
    wh = raw.get("warehouse")
    if not uri or not wh:
        raise ValidationError(f"{where} needs a uri and a warehouse")
    name = str(raw.get("name") or "neve")
    props = _str_map(raw.get("properties"), f"{where}.properties")
    return WarehouseConfig(str(uri), str(wh), name, props)


def _roles(raw: Any) -> dict[str, tuple[Grant, ...]]:
    if not isinstance(raw, Mapping):
        raise ValidationError("roles must map role names to lists of grants")
    out = {}
    for role, grants in raw.items():
        if isinstance(grants, str) or not isinstance(grants, Sequence):
            raise ValidationError(f"role {role!r} must list its grants")
        out[str(role)] = tuple(parse_grant(g) for g in grants)
    return out


def _principals(raw: Any) -> dict[str, PrincipalConfig]:
    if not isinstance(raw, Mapping):
        raise ValidationError("principals must map client ids to {secret:, roles:}")
    out = {}
    for name, conf in raw.items():
        if not isinstance(conf, Mapping) or not conf.get("secret"):
            raise ValidationError(f"principal {name!r} needs a secret")
        roles = conf.get("roles") or []
        out[str(name)] = PrincipalConfig(str(conf["secret"]), tuple(str(r) for r in roles))
    return out


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    uri: str | None = None,
    warehouse: str | None = None,
    name: str | None = None,
    anonymous: bool | None = None,
    warehouse_root: str | None = None,
) -> ServerConfig:
    """The server's configuration: the file at ``path`` (if any), overridden by the
    command line's ``uri``, ``warehouse``, ``name`` and ``anonymous``."""
    data: dict[str, Any] = {}
    if path is not None:
        text = Path(path).read_text()
        loaded = yaml.safe_load(text) or {}
        if not isinstance(loaded, dict):
            raise ValidationError(f"the server config {path} must hold a mapping")
        data = loaded
    cat_raw = dict(data.get("catalog") or {})
    if uri:
        cat_raw["uri"] = uri
    if warehouse:
        cat_raw["warehouse"] = warehouse
    if name:
        cat_raw["name"] = name
    catalog = _warehouse(cat_raw, "catalog", None)
    warehouses = {}
    for wh_name, raw in (data.get("warehouses") or {}).items():
        if not _WAREHOUSE_NAME.match(str(wh_name)) or str(wh_name) in RESERVED_PREFIXES:
            raise ValidationError(
                f"warehouse name {wh_name!r} must be letters, digits, '-' and '_' and not one "
                f"of {sorted(RESERVED_PREFIXES)}"
            )
        warehouses[str(wh_name)] = _warehouse(raw, f"warehouses.{wh_name}", catalog)
    token = data.get("token") or {}
    kwargs: dict[str, Any] = {}
    key = token.get("signing-key") or os.environ.get(SIGNING_KEY_ENV)
    if key:
        kwargs["signing_key"] = str(key)
    if data.get("roles") is not None:
        kwargs["roles"] = _roles(data["roles"])
    oidc_raw = data.get("oidc")
    oidc = None
    if oidc_raw:
        if not oidc_raw.get("issuer") or not (
            oidc_raw.get("jwks-file") or oidc_raw.get("jwks-uri")
        ):
            raise ValidationError("oidc needs an issuer and a jwks-file or jwks-uri")
        oidc = OidcConfig(
            str(oidc_raw["issuer"]),
            oidc_raw.get("audience"),
            oidc_raw.get("jwks-file"),
            oidc_raw.get("jwks-uri"),
            str(oidc_raw.get("principal-claim", "sub")),
            str(oidc_raw.get("roles-claim", "roles")),
        )
    static, vending = _storage_credentials(data.get("storage-credentials") or [])
    return ServerConfig(
        catalog=catalog,
        warehouses=warehouses,
        warehouse_root=warehouse_root or data.get("warehouse-root"),
        anonymous=bool(data.get("anonymous", False)) if anonymous is None else anonymous,
        anonymous_roles=tuple(data.get("anonymous-roles") or ("admin",)),
        token_lifetime_s=int(token.get("lifetime-seconds", 3600)),
        principals=_principals(data.get("principals") or {}),
        oidc=oidc,
        storage_credentials=static,
        vended_credentials=vending,
        max_body_bytes=int(data.get("max-body-bytes", 16 * 1024 * 1024)),
        idempotency_lifetime_s=int(data.get("idempotency-lifetime-seconds", 1800)),
        **kwargs,
    )
