"""Storage credentials the server hands to clients with each table.

Two kinds, both chosen by the table location's prefix (``storage-credentials`` in the
config file, :mod:`neve.server.config`):

- static: the config's keys as written, in every ``load table`` answer and from the
  ``credentials`` endpoint;
- vended: short-lived keys from STS ``AssumeRole`` (signed by botocore), with an
  inline session policy that allows object reads (and, for a principal that may write
  the table, writes and deletes) only under the table's location, and listings of the
  bucket only with an ``s3:prefix`` inside it. AWS grants a session the intersection of
  the role's own policies and the session policy, so the keys reach that one table
  whatever else the role may do. They go to clients that ask for them
  (``X-Iceberg-Access-Delegation: vended-credentials``, which pyiceberg and Iceberg-Java
  send) and to every ``credentials`` request, as ``s3.access-key-id``,
  ``s3.secret-access-key``, ``s3.session-token`` and
  ``s3.session-token-expires-at-ms``.

Vended keys are kept per table location and access (read or write) and handed out
again until three quarters of their lifetime is over, so a storm of loads of one table
makes one STS call; concurrent requests for the same location wait for that one call.
An STS failure is a :class:`~neve.errors.StorageCredentialsError` (the server answers
503) and nothing is written.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.config import Config as BotoConfig
from botocore.exceptions import BotoCoreError, ClientError
from botocore.session import Session as BotoSession

from neve.errors import StorageCredentialsError
from neve.server.config import StsVending

__all__ = [
    "EXPIRES_AT_KEY",
    "READ_ACTIONS",
    "WRITE_ACTIONS",
    "CredentialVendor",
    "locations_nest",
    "scope_policy",
    "split_location",
]

#: The property with the vended keys' expiry (milliseconds since the epoch), as
#: Iceberg's REST clients read it.
EXPIRES_AT_KEY = "s3.session-token-expires-at-ms"
#: What vended keys may do with objects under the table's location.
READ_ACTIONS = ("s3:GetObject", "s3:GetObjectVersion")
WRITE_ACTIONS = (
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:AbortMultipartUpload",
    "s3:ListMultipartUploadParts",
)
_S3_SCHEMES = ("s3://", "s3a://", "s3n://")
#: Vended keys kept at most (one per table location and access).
_CACHE_SIZE = 4096


def split_location(location: str) -> tuple[str, str]:
    """``(bucket, key prefix)`` of ``s3://bucket/a/b/`` (``("bucket", "a/b")``)."""
    for scheme in _S3_SCHEMES:
        if location.startswith(scheme):
            bucket, _, key = location[len(scheme) :].partition("/")
            return bucket, key.strip("/")
    raise StorageCredentialsError(f"{location!r} is not an s3:// location; STS cannot scope it")


def locations_nest(a: str, b: str) -> bool:
    """Whether one of two table locations holds the other (or they are the same), as
    keys scoped to either would see it."""
    x, y = (_as_s3(v).rstrip("/") + "/" for v in (a, b))
    return x.startswith(y) or y.startswith(x)


def _as_s3(location: str) -> str:
    """``location`` with Hadoop's ``s3a://`` or ``s3n://`` written ``s3://`` (one bucket)."""
    for scheme in _S3_SCHEMES[1:]:
        if location.startswith(scheme):
            return "s3://" + location[len(scheme) :]
    return location


def _partition(region: str) -> str:
    """The ARN partition of an AWS region."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def scope_policy(location: str, *, write: bool, partition: str = "aws") -> dict[str, Any]:
    """The session policy for one table location: objects under it (read, or read and
    write), listings of its bucket with an ``s3:prefix`` under it, the bucket's
    location."""
    bucket, key = split_location(location)
    bucket_arn = f"arn:{partition}:s3:::{bucket}"
    objects = f"{bucket_arn}/{key}/*" if key else f"{bucket_arn}/*"
    actions = [*READ_ACTIONS, *(WRITE_ACTIONS if write else ())]
    listing: dict[str, Any] = {
        "Sid": "ListTableLocation",
        "Effect": "Allow",
        "Action": "s3:ListBucket",
        "Resource": bucket_arn,
    }
    if key:
        listing["Condition"] = {"StringLike": {"s3:prefix": [f"{key}/", f"{key}/*"]}}
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "TableObjects", "Effect": "Allow", "Action": actions, "Resource": objects},
            listing,
            {
                "Sid": "BucketLocation",
                "Effect": "Allow",
                "Action": "s3:GetBucketLocation",
                "Resource": bucket_arn,
            },
        ],
    }


@dataclass(frozen=True)
class _Vended:
    config: dict[str, str]
    renew_at_ms: int


class CredentialVendor:
    """The storage credentials of a table location (thread-safe; one per server)."""

    def __init__(
        self,
        static: Sequence[Mapping[str, Any]] = (),
        vending: Sequence[StsVending] = (),
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.static = tuple(static)
        self.vending = tuple(vending)
        self.clock = clock
        self._clients: dict[str, Any] = {}
        self._cache: OrderedDict[tuple[str, str, bool], _Vended] = OrderedDict()
        self._locks: dict[tuple[str, str, bool], threading.Lock] = {}
        self._lock = threading.Lock()

    def storage_credentials(
        self, location: str, *, vend: bool, write: bool
    ) -> list[dict[str, Any]]:
        """The ``storage-credentials`` of a table at ``location``, longest prefix first:
        the static ones whose prefix it starts with and, when ``vend``, keys from the
        STS entry with the longest matching prefix, scoped to ``location``."""
        out: list[dict[str, Any]] = [
            {"prefix": str(c["prefix"]), "config": dict(c["config"])}
            for c in self.static
            if location.startswith(str(c["prefix"]))
        ]
        entries = self._entries_for(location)
        if vend and entries:
            entry = max(entries, key=lambda v: len(v.prefix))
            scope = location.rstrip("/")
            out.append({"prefix": scope, "config": self._vended(entry, scope, write)})
        out.sort(key=lambda c: -len(str(c["prefix"])))
        return out

    def vends_for(self, location: str) -> bool:
        """Whether keys scoped to ``location`` may be vended (an STS entry's prefix holds
        it)."""
        return bool(self._entries_for(location))

    def _entries_for(self, location: str) -> list[StsVending]:
        """The STS entries whose prefix holds ``location``."""
        return [v for v in self.vending if _as_s3(location).startswith(_as_s3(v.prefix))]

    # -- STS --------------------------------------------------------------------------

    def _vended(self, entry: StsVending, location: str, write: bool) -> dict[str, str]:
        key = (entry.prefix, location, write)
        with self._lock:
            found = self._fresh(key)
            if found is not None:
                return found
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # one STS call per location at a time; the others wait for it
            with self._lock:
                found = self._fresh(key)
            if found is not None:
                return found
            obtained_ms = int(self.clock() * 1000)
            config = self._assume(entry, location, write)
            # the lifetime asked for, or less when STS gave less (its clock may differ)
            life_ms = min(entry.duration_s * 1000, int(config[EXPIRES_AT_KEY]) - obtained_ms)
            renew_at = obtained_ms + life_ms * 3 // 4
            with self._lock:
                self._cache[key] = _Vended(config, renew_at)
                self._cache.move_to_end(key)
                while len(self._cache) > _CACHE_SIZE:
                    old, _ = self._cache.popitem(last=False)
                    self._locks.pop(old, None)
            return dict(config)

    def _fresh(self, key: tuple[str, str, bool]) -> dict[str, str] | None:
        """Kept keys for ``key`` with more than a quarter of their lifetime left (the
        caller holds the lock)."""
        found = self._cache.get(key)
        if found is None or self.clock() * 1000 >= found.renew_at_ms:
            return None
        self._cache.move_to_end(key)
        return dict(found.config)

    def _client(self, entry: StsVending) -> Any:
        with self._lock:
            client = self._clients.get(entry.prefix)
            if client is not None:
                return client
            kwargs: dict[str, Any] = {
                "region_name": entry.region,
                "config": BotoConfig(
                    retries={"max_attempts": 3, "mode": "standard"},
                    connect_timeout=5,
                    read_timeout=20,
                ),
            }
            if entry.endpoint:
                kwargs["endpoint_url"] = entry.endpoint
            if entry.access_key_id:
                kwargs["aws_access_key_id"] = entry.access_key_id
                kwargs["aws_secret_access_key"] = entry.secret_access_key
                kwargs["aws_session_token"] = entry.session_token
            try:
                client = BotoSession().create_client("sts", **kwargs)
            except (BotoCoreError, ValueError) as exc:
                raise StorageCredentialsError(
                    f"cannot set up the STS client for storage-credentials {entry.prefix!r}: "
                    f"{exc}; check its sts: endpoint and region"
                ) from exc
            self._clients[entry.prefix] = client
            return client

    def _assume(self, entry: StsVending, location: str, write: bool) -> dict[str, str]:
        policy = scope_policy(location, write=write, partition=_partition(entry.region))
        args: dict[str, Any] = {
            "RoleArn": entry.role_arn,
            "RoleSessionName": entry.session_name,
            "Policy": json.dumps(policy, separators=(",", ":")),
            "DurationSeconds": entry.duration_s,
        }
        if entry.external_id:
            args["ExternalId"] = entry.external_id
        where = entry.endpoint or f"the STS endpoint of {entry.region}"
        client = self._client(entry)
        try:
            answer = client.assume_role(**args)
            creds = answer["Credentials"]
            expires_ms = int(creds["Expiration"].timestamp() * 1000)
            keys = {
                "s3.access-key-id": str(creds["AccessKeyId"]),
                "s3.secret-access-key": str(creds["SecretAccessKey"]),
                "s3.session-token": str(creds["SessionToken"]),
            }
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise StorageCredentialsError(
                f"{where} refused AssumeRole of {entry.role_arn} for {location}: "
                f"{error.get('Code', 'error')}: {error.get('Message', exc)}; check the role's "
                "trust policy and the server's own STS credentials (storage-credentials sts:)"
            ) from exc
        except (BotoCoreError, KeyError, TypeError, AttributeError) as exc:
            raise StorageCredentialsError(
                f"cannot get short-lived credentials for {location} from {where}: {exc}; "
                "check that the STS endpoint is reachable (the request can be retried)"
            ) from exc
        config = {"s3.region": entry.region, **entry.config, **keys}
        config[EXPIRES_AT_KEY] = str(expires_ms)
        return config
