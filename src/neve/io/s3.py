"""Settings for S3 and S3-compatible stores, written the way users already write them.

Each setting is looked up, first match wins:

1. the catalog's properties (``neve.connect(..., **{"s3.endpoint": ...})``, the config
   file's catalog entry, the command's ``--property``), under pyiceberg's and
   Iceberg-Java's names: ``s3.endpoint``, ``s3.access-key-id``,
   ``s3.secret-access-key``, ``s3.session-token``, ``s3.region``,
   ``s3.path-style-access`` (Java) / ``s3.force-virtual-addressing`` (pyiceberg),
   ``s3.profile-name``, ``s3.anonymous``, ``s3.connect-timeout``,
   ``s3.request-timeout`` (seconds), with pyiceberg's ``client.*`` names
   (``client.access-key-id``, ``client.region`` ...) as fallbacks;
2. the AWS environment variables: ``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``,
   ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
   ``AWS_REGION``, ``AWS_DEFAULT_REGION``;
3. the profile ``s3.profile-name`` / ``AWS_PROFILE`` (else ``default``) of the AWS
   shared files (``AWS_SHARED_CREDENTIALS_FILE``, default ``~/.aws/credentials``;
   ``AWS_CONFIG_FILE``, default ``~/.aws/config``): static keys, ``region`` and
   ``endpoint_url``. A profile named in the properties wins over the environment.

Credentials none of these give (SSO, assumed roles, instance metadata) are left to the
libraries' own credential chains. neve's own settings: ``s3.max-attempts`` (attempts
per request on throttling, 5xx answers and dropped connections; default 10) and
``s3.conditional-put`` (``auto``: probe the store once; ``true``; ``false``: the store
has none, so the filesystem catalog refuses it).
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from neve.errors import ValidationError

__all__ = ["S3Settings", "s3_settings"]

#: Property names, pyiceberg's / Iceberg-Java's first, then pyiceberg's ``client.*``.
_KEYS: dict[str, tuple[str, ...]] = {
    "endpoint": ("s3.endpoint",),
    "access_key": ("s3.access-key-id", "client.access-key-id"),
    "secret_key": ("s3.secret-access-key", "client.secret-access-key"),
    "session_token": ("s3.session-token", "client.session-token"),
    "region": ("s3.region", "client.region"),
    "profile": ("s3.profile-name", "client.profile-name"),
}
_ENV: dict[str, tuple[str, ...]] = {
    "endpoint": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
    "access_key": ("AWS_ACCESS_KEY_ID",),
    "secret_key": ("AWS_SECRET_ACCESS_KEY",),
    "session_token": ("AWS_SESSION_TOKEN",),
    "region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
}
#: Keys of a profile in the shared files.
_PROFILE: dict[str, str] = {
    "endpoint": "endpoint_url",
    "access_key": "aws_access_key_id",
    "secret_key": "aws_secret_access_key",
    "session_token": "aws_session_token",
    "region": "region",
}
DEFAULT_MAX_ATTEMPTS = 10
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


@dataclass(frozen=True)
class S3Settings:
    """Where and how to reach an S3-compatible store; ``None`` leaves a setting to the
    libraries' defaults."""

    endpoint: str | None = None  # scheme://host[:port]
    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None
    region: str | None = None
    path_style: bool | None = None
    anonymous: bool = False
    connect_timeout: float | None = None
    request_timeout: float | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    conditional_put: str = "auto"  # auto | true | false

    @property
    def allow_http(self) -> bool:
        return bool(self.endpoint and self.endpoint.startswith("http://"))

    def pyarrow_options(self) -> dict[str, Any]:
        """Keyword arguments of ``pyarrow.fs.S3FileSystem`` (without the retry strategy,
        which the caller builds: pyarrow objects stay out of this module)."""
        opts: dict[str, Any] = {}
        if self.endpoint:
            scheme, _, host = self.endpoint.partition("://")
            opts["endpoint_override"] = host.rstrip("/")
            opts["scheme"] = scheme
        if self.anonymous:
            opts["anonymous"] = True
        elif self.access_key and self.secret_key:
            opts["access_key"] = self.access_key
            opts["secret_key"] = self.secret_key
            if self.session_token:
                opts["session_token"] = self.session_token
        if self.region:
            opts["region"] = self.region
        if self.path_style is not None:
            opts["force_virtual_addressing"] = not self.path_style
        if self.connect_timeout is not None:
            opts["connect_timeout"] = self.connect_timeout
        if self.request_timeout is not None:
            opts["request_timeout"] = self.request_timeout
        return opts

    def obstore_config(self) -> dict[str, Any]:
        """The ``config`` of an ``obstore.store.S3Store``."""
        config: dict[str, Any] = {}
        if self.endpoint:
            config["endpoint"] = self.endpoint.rstrip("/")
        if self.anonymous:
            config["skip_signature"] = True
        elif self.access_key and self.secret_key:
            config["access_key_id"] = self.access_key
            config["secret_access_key"] = self.secret_key
            if self.session_token:
                config["session_token"] = self.session_token
        config["region"] = self.region or "us-east-1"
        # path style unless asked otherwise: what S3-compatible servers expect, and
        # what AWS serves as well
        config["virtual_hosted_style_request"] = self.path_style is False
        return config


def _flag(props: Mapping[str, str], key: str) -> bool | None:
    raw = props.get(key)
    if raw is None:
        return None
    text = str(raw).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValidationError(f"catalog property {key}={raw!r} must be true or false")


def _number(props: Mapping[str, str], key: str) -> float | None:
    raw = props.get(key)
    if raw is None:
        return None
    try:
        value = float(str(raw).strip())
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ValidationError(f"catalog property {key}={raw!r} must be a number of seconds > 0")
    return value


def _profile_values(name: str, env: Mapping[str, str]) -> dict[str, str]:
    """The keys of profile ``name`` in the AWS shared credentials and config files
    (credentials win, as in the AWS SDKs)."""
    home = os.path.expanduser("~")
    files = (
        (env.get("AWS_CONFIG_FILE") or os.path.join(home, ".aws", "config"), True),
        (
            env.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.join(home, ".aws", "credentials"),
            False,
        ),
    )
    values: dict[str, str] = {}
    for path, is_config in files:
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error) as exc:
            raise ValidationError(f"cannot read the AWS profile file {path}: {exc}") from exc
        section = f"profile {name}" if is_config and name != "default" else name
        if parser.has_section(section):
            values.update({k: v.strip() for k, v in parser.items(section)})
    return values


def s3_settings(properties: Mapping[str, str], env: Mapping[str, str] | None = None) -> S3Settings:
    """The settings of an S3 store from catalog properties, the environment (default:
    ``os.environ``) and the AWS profile files, in that order (see the module doc)."""
    env = os.environ if env is None else env
    found: dict[str, str | None] = {}
    for field, keys in _KEYS.items():
        found[field] = next((str(properties[k]) for k in keys if properties.get(k)), None)
    profile_name = found.pop("profile")
    explicit_profile = profile_name is not None
    profile = _profile_values(profile_name or env.get("AWS_PROFILE") or "default", env)
    for field, keys in _ENV.items():
        if found.get(field):
            continue
        from_env = next((env[k] for k in keys if env.get(k)), None)
        from_profile = profile.get(_PROFILE[field]) or None
        found[field] = (
            (from_profile or from_env) if explicit_profile else (from_env or from_profile)
        )
    if found["access_key"] and not found["secret_key"]:
        raise ValidationError(
            "an S3 access key id was given without its secret (s3.secret-access-key or "
            "AWS_SECRET_ACCESS_KEY); give both, or neither to use the default credentials"
        )
    endpoint = found["endpoint"]
    if endpoint and "://" not in endpoint:
        endpoint = f"https://{endpoint}"
    path_style = _flag(properties, "s3.path-style-access")
    virtual = _flag(properties, "s3.force-virtual-addressing")
    if path_style is None and virtual is not None:
        path_style = not virtual
    attempts_raw = properties.get("s3.max-attempts")
    attempts = DEFAULT_MAX_ATTEMPTS
    if attempts_raw is not None:
        try:
            attempts = int(str(attempts_raw).strip())
        except ValueError:
            attempts = 0
        if attempts < 1:
            raise ValidationError(
                f"catalog property s3.max-attempts={attempts_raw!r} must be an integer >= 1"
            )
    conditional = str(properties.get("s3.conditional-put", "auto")).strip().lower()
    if conditional in _TRUE:
        conditional = "true"
    elif conditional in _FALSE:
        conditional = "false"
    elif conditional != "auto":
        raise ValidationError(
            f"catalog property s3.conditional-put={conditional!r} must be auto, true or false"
        )
    return S3Settings(
        endpoint=endpoint,
        access_key=found["access_key"],
        secret_key=found["secret_key"],
        session_token=found["session_token"],
        region=found["region"],
        path_style=path_style,
        anonymous=bool(_flag(properties, "s3.anonymous")),
        connect_timeout=_number(properties, "s3.connect-timeout"),
        request_timeout=_number(properties, "s3.request-timeout"),
        max_attempts=attempts,
        conditional_put=conditional,
    )
