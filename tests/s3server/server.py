"""Run with moto's own Python (``.venv-moto/bin/python``, see tests/s3server/__init__.py):
moto's S3 server on a loopback port, behind a WSGI layer that logs every S3 request and
injects faults, both steered per bucket through control requests under ``/_neve/``.

Control (JSON bodies and answers; control requests are not logged):

- ``GET /_neve/log?bucket=B``: the requests logged for bucket ``B`` (``DELETE`` clears);
- ``PUT /_neve/faults``: ``{"bucket", "rate", "kinds", "seed", "slow_s", "ops",
  "match", "limit"}``: each request to ``B`` whose operation is in ``ops`` (all when
  absent) and whose key contains ``match`` (any when absent) gets, with probability
  ``rate`` and until ``limit`` faults were injected (no limit when absent), one of
  ``kinds``: ``503`` (SlowDown, not processed), ``500``
  (InternalError, not processed), ``reset-before`` (connection reset, not processed),
  ``reset-after`` (processed, then the connection is reset: the client never sees the
  answer) or ``slow`` (answered after ``slow_s`` seconds); ``DELETE`` with
  ``?bucket=B`` stops them;
- ``PUT /_neve/settings``: ``{"bucket", "max_keys", "ignore_if_none_match",
  "access_key", "session_policies"}``: list pages of at most ``max_keys`` keys (paging
  shows with few objects), a store that ignores ``If-None-Match`` (one without
  conditional puts), requests signed with another access key id than ``access_key``
  refused (403 InvalidAccessKeyId; moto itself checks no credentials), and, with
  ``session_policies``, requests signed with keys of an STS session refused (403
  AccessDenied) unless the session's policy allows them (below);
- ``GET /_neve/sts-sessions``: the sessions moto's STS handed out (``AssumeRole``):
  access key id, role ARN, session name, duration and the session policy as sent;
- ``PUT /_neve/sts-evaluate``: ``{"access_key", "action", "resource"}``: what moto's
  IAM policy evaluator says of that session's policy for the action on the resource
  (``PERMITTED``, ``DENIED`` or ``NEUTRAL``). moto itself does not apply session
  policies to requests (its access control reads only the role's own policies).

Session policies are applied here, not by moto: the action and resource of a request
(``s3:GetObject`` for GET and HEAD, ``s3:PutObject`` for puts and multipart uploads,
``s3:DeleteObject`` per key of single and bulk deletes, ``s3:ListBucket`` on the
bucket for listings) are judged by moto's IAM policy evaluator, and a listing's
``prefix`` must match a ``StringLike`` ``s3:prefix`` pattern of an allowing
``ListBucket`` statement (``*`` and ``?`` wildcards; moto's evaluator ignores
``StringLike``). Unlike S3, a bulk delete with one key not allowed is refused whole.

STS requests (signed for the service ``sts``) go to moto's STS; they are logged, and
take faults, under the bucket name ``_sts``. Every logged request records the access
key id it was signed with (``access_key``).

The first line printed is ``port <n>``. Requests are path-style (``/bucket/key``).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode
from xml.sax.saxutils import unescape

from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

Environ = dict[str, Any]
StartResponse = Callable[..., Any]

SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)
DENIED = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code>'
    b"<Message>The AWS Access Key Id you provided does not exist in our records.</Message>"
    b"</Error>"
)
ACCESS_DENIED = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>'
    b"<Message>Access Denied (the session policy does not allow this request)</Message>"
    b"</Error>"
)
INTERNAL = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code>'
    b"<Message>We encountered an internal error. Please try again.</Message></Error>"
)


def operation(method: str, key: str, query: dict[str, str]) -> str:
    """The S3 operation of a request, in the words the tests count by."""
    if method == "GET":
        if not key or "list-type" in query or "uploads" in query:
            return "LIST"
        return "GET"
    if method == "HEAD":
        return "HEAD"
    if method == "PUT":
        if "partNumber" in query:
            return "PUT_PART"
        return "PUT" if key else "CREATE_BUCKET"
    if method == "POST":
        if "delete" in query:
            return "DELETE_MULTI"
        if "uploads" in query:
            return "MPU_CREATE"
        if "uploadId" in query:
            return "MPU_COMPLETE"
        return "POST"
    if method == "DELETE":
        return "MPU_ABORT" if "uploadId" in query else "DELETE"
    return method


class Front:
    """The WSGI layer in front of moto."""

    def __init__(
        self,
        app: Callable[[Environ, StartResponse], Iterable[bytes]],
        sts: Callable[[Environ, StartResponse], Iterable[bytes]] | None = None,
    ) -> None:
        self.app = app
        self.sts = sts
        self.lock = threading.Lock()
        self.logs: dict[str, list[dict[str, Any]]] = {}
        self.faults: dict[str, dict[str, Any]] = {}
        self.rngs: dict[str, random.Random] = {}
        self.settings: dict[str, dict[str, Any]] = {}

    # -- control -----------------------------------------------------------------------

    def control(self, environ: Environ, start: StartResponse) -> list[bytes]:
        method = environ["REQUEST_METHOD"]
        what = environ["PATH_INFO"][len("/_neve/") :]
        query = dict(parse_qsl(environ.get("QUERY_STRING", "")))
        body: dict[str, Any] = {}
        if method == "PUT":
            size = int(environ.get("CONTENT_LENGTH") or 0)
            body = json.loads(environ["wsgi.input"].read(size) or b"{}")
        answer: Any = {}
        with self.lock:
            if what == "log" and method == "GET":
                answer = list(self.logs.get(query["bucket"], []))
            elif what == "log" and method == "DELETE":
                self.logs.pop(query["bucket"], None)
            elif what == "faults" and method == "PUT":
                self.faults[body["bucket"]] = body
                self.rngs[body["bucket"]] = random.Random(body.get("seed", 0))
            elif what == "faults" and method == "DELETE":
                self.faults.pop(query["bucket"], None)
            elif what == "settings" and method == "PUT":
                self.settings[body["bucket"]] = body
            elif what == "ping":
                answer = {"ok": True}
            elif what == "sts-sessions" and method == "GET":
                answer = sts_sessions()
            elif what == "sts-evaluate" and method == "PUT":
                answer = {"result": sts_evaluate(body)}
            else:
                start("404 Not Found", [("Content-Type", "application/json")])
                return [b"{}"]
        data = json.dumps(answer).encode()
        start("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]

    # -- S3 requests -------------------------------------------------------------------

    def __call__(self, environ: Environ, start: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/_neve/"):
            return self.control(environ, start)
        auth = environ.get("HTTP_AUTHORIZATION", "")
        if self.sts is not None and "/sts/aws4_request" in auth:
            return self._sts(environ, start)
        bucket, _, key = unquote(path).lstrip("/").partition("/")
        query = dict(parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
        method = environ["REQUEST_METHOD"]
        op = operation(method, key, query)
        return self._serve(environ, start, self.app, bucket, key, query, op)

    def _sts(self, environ: Environ, start: StartResponse) -> Iterable[bytes]:
        size = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(size)
        environ["wsgi.input"] = io.BytesIO(body)
        form = dict(parse_qsl(body.decode("utf-8", "replace")))
        assert self.sts is not None
        return self._serve(environ, start, self.sts, "_sts", "", {}, form.get("Action", "STS"))

    def _serve(
        self,
        environ: Environ,
        start: StartResponse,
        app: Callable[[Environ, StartResponse], Iterable[bytes]],
        bucket: str,
        key: str,
        query: dict[str, str],
        op: str,
    ) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        with self.lock:
            settings = self.settings.get(bucket, {})
            fault = self._fault(bucket, op, key)
        max_keys = settings.get("max_keys")
        if op == "LIST" and max_keys:
            asked = int(query.get("max-keys", "1000"))
            query["max-keys"] = str(min(asked, int(max_keys)))
            environ["QUERY_STRING"] = urlencode(query)
        conditional = "HTTP_IF_NONE_MATCH" in environ
        if conditional and settings.get("ignore_if_none_match"):
            del environ["HTTP_IF_NONE_MATCH"]
        entry: dict[str, Any] = {
            "op": op,
            "method": method,
            "key": key if op != "LIST" else query.get("prefix", ""),
            "if_none_match": conditional,
            "query": environ.get("QUERY_STRING", ""),
            "fault": fault,
            "time": time.time(),
            "access_key": _access_key(environ.get("HTTP_AUTHORIZATION", "")),
        }
        with self.lock:
            self.logs.setdefault(bucket, []).append(entry)
        if settings.get("session_policies") and not _session_allows(
            environ, entry["access_key"], bucket, key, query, op
        ):
            entry["status"] = 403
            return self._error(start, "403 Forbidden", ACCESS_DENIED)
        wanted_key = settings.get("access_key")
        if wanted_key and f"Credential={wanted_key}/" not in environ.get("HTTP_AUTHORIZATION", ""):
            entry["status"] = 403
            return self._error(start, "403 Forbidden", DENIED)
        if fault == "503":
            entry["status"] = 503
            return self._error(start, "503 Slow Down", SLOW_DOWN)
        if fault == "500":
            entry["status"] = 500
            return self._error(start, "500 Internal Server Error", INTERNAL)
        if fault == "reset-before":
            entry["status"] = "reset"
            self._reset(environ)
            return []
        if fault == "slow":
            with self.lock:
                delay = float(self.faults.get(bucket, {}).get("slow_s", 0.2))
            time.sleep(delay)
        status: list[str] = []

        def recording_start(s: str, headers: Any, exc_info: Any = None) -> Any:
            status.append(s)
            entry["status"] = int(s.split()[0])
            return start(s, headers, exc_info) if exc_info else start(s, headers)

        if fault == "reset-after":
            # moto does the work, the client never hears of it
            body = b"".join(app(environ, lambda s, h, e=None: None))
            del body
            entry["status"] = "reset"
            self._reset(environ)
            return []
        return app(environ, recording_start)

    def _fault(self, bucket: str, op: str, key: str) -> str | None:
        config = self.faults.get(bucket)
        if not config:
            return None
        ops = config.get("ops")
        if ops and op not in ops:
            return None
        match = config.get("match")
        if match and match not in key:
            return None
        limit = config.get("limit")
        if limit is not None and config.get("injected", 0) >= int(limit):
            return None
        rng = self.rngs[bucket]
        if rng.random() >= float(config.get("rate", 0.0)):
            return None
        config["injected"] = config.get("injected", 0) + 1
        kinds = config.get("kinds") or ["503"]
        return str(rng.choice(kinds))

    @staticmethod
    def _error(start: StartResponse, status: str, body: bytes) -> list[bytes]:
        start(
            status,
            [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))],
        )
        return [body]

    @staticmethod
    def _reset(environ: Environ) -> None:
        """Drop the connection with a TCP reset: the client sees 'connection reset'."""
        sock = environ.get("werkzeug.socket")
        if sock is None:
            return
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        except OSError:
            pass


def _access_key(authorization: str) -> str | None:
    """The access key id a SigV4 ``Authorization`` header was signed with."""
    _, found, rest = authorization.partition("Credential=")
    return rest.split("/", 1)[0] if found else None


def _assumed_roles() -> list[Any]:
    from moto.sts.models import sts_backends  # moto's state, once the server runs

    roles = []
    for account in list(sts_backends.values()):
        for backend in list(account.values()):
            roles.extend(backend.assumed_roles)
    return roles


def sts_sessions() -> list[dict[str, Any]]:
    return [
        {
            "access_key": r.access_key_id,
            "role_arn": r.role_arn,
            "session_name": r.session_name,
            "policy": r.policy,
            "expiration": r.expiration.isoformat(),
            "external_id": r.external_id,
        }
        for r in _assumed_roles()
    ]


_ACTIONS = {
    "GET": "s3:GetObject",
    "HEAD": "s3:GetObject",
    "PUT": "s3:PutObject",
    "PUT_PART": "s3:PutObject",
    "MPU_CREATE": "s3:PutObject",
    "MPU_COMPLETE": "s3:PutObject",
    "MPU_ABORT": "s3:AbortMultipartUpload",
    "DELETE": "s3:DeleteObject",
    "DELETE_MULTI": "s3:DeleteObject",
}


def _like(pattern: str, value: str) -> bool:
    """IAM's ``StringLike``: ``*`` any run of characters, ``?`` one character."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, re.DOTALL) is not None


def _prefix_allowed(policy: dict[str, Any], prefix: str) -> bool:
    for statement in policy.get("Statement", []):
        actions = statement.get("Action")
        actions = [actions] if isinstance(actions, str) else actions or []
        if statement.get("Effect") != "Allow" or "s3:ListBucket" not in actions:
            continue
        like = statement.get("Condition", {}).get("StringLike", {}).get("s3:prefix")
        if like is None:
            return True
        patterns = [like] if isinstance(like, str) else like
        if any(_like(p, prefix) for p in patterns):
            return True
    return False


def _session_allows(
    environ: Environ, access_key: str | None, bucket: str, key: str, query: dict[str, str], op: str
) -> bool:
    """Whether the session policy of ``access_key`` allows the request (True for keys
    that are not an STS session's)."""
    from moto.iam.access_control import IAMPolicy, PermissionResult  # moto's evaluator

    role = next((r for r in _assumed_roles() if r.access_key_id == access_key), None)
    if role is None or not role.policy:
        return True
    policy = IAMPolicy(role.policy)

    def allowed(action: str, resource: str) -> bool:
        found = policy.is_action_permitted(action, resource)
        return bool(found == PermissionResult.PERMITTED)

    if op == "LIST":
        return allowed("s3:ListBucket", f"arn:aws:s3:::{bucket}") and _prefix_allowed(
            json.loads(role.policy), query.get("prefix", "")
        )
    if op == "DELETE_MULTI":
        size = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(size)
        environ["wsgi.input"] = io.BytesIO(body)
        keys = [unescape(k) for k in re.findall(r"<Key>(.*?)</Key>", body.decode("utf-8"))]
        return all(allowed("s3:DeleteObject", f"arn:aws:s3:::{bucket}/{k}") for k in keys)
    action = _ACTIONS.get(op)
    return action is not None and allowed(action, f"arn:aws:s3:::{bucket}/{key}")


def sts_evaluate(request: dict[str, Any]) -> str:
    from moto.iam.access_control import IAMPolicy  # moto's own policy evaluator

    for role in _assumed_roles():
        if role.access_key_id == request["access_key"]:
            if not role.policy:
                return "NO-POLICY"
            found = IAMPolicy(role.policy).is_action_permitted(
                request["action"], request["resource"]
            )
            return str(found.name)
    return "NO-SESSION"


class _Handler(MotoRequestHandler):
    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass  # the front logs what the tests need

    def handle(self) -> None:
        with contextlib.suppress(OSError):  # a connection the front reset on purpose
            super().handle()


def main() -> None:
    host = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
    app = Front(create_backend_app("s3"), create_backend_app("sts"))
    server = make_server(host, 0, app, threaded=True, request_handler=_Handler)
    print(f"port {server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
