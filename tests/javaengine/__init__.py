"""Iceberg-Java 1.10.2 as a test engine: a driver for one long-lived PySpark 3.5 process.

``make java-engine`` builds ``.venv-java`` (PySpark 3.5, the Iceberg 1.10.2 Spark
runtime from ``snowpark-connect-deps-iceberg``, Jackson relocated to the package the
runtime links against) and installs Debian's SQLite and PostgreSQL JDBC drivers.
Nothing is downloaded at test time.

:class:`IcebergJava` starts ``server.py`` with that virtualenv's Python and talks to it
in JSON lines (requests on its stdin, answers on a private pipe). Its catalogs are
Iceberg ``JdbcCatalog``\\ s on the same database as neve's :class:`~neve.catalog.SqlCatalog`
and under the same catalog name, so both engines see the same tables:

    java = IcebergJava.start(workdir, [JdbcCatalog.from_sqlalchemy("neve", uri, wh)])
    java.sql("INSERT INTO neve.db.t VALUES (1, 'a')")
    rows = java.sql("SELECT * FROM neve.db.t").rows

Values come back as neve's pyarrow scans give them (``float``, ``Decimal``,
``datetime.date``, ``datetime.datetime`` aware in UTC for ``timestamp`` and naive for
``timestamp_ntz``, ``bytes``); :func:`canon` makes rows comparable exactly (NaN equals
NaN, -0.0 differs from 0.0).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
import select
import subprocess
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote, urlsplit

__all__ = [
    "ENGINE_PYTHON",
    "ICEBERG_VERSION",
    "IcebergJava",
    "JavaEngineError",
    "JavaSqlError",
    "JdbcCatalog",
    "RestCatalogConf",
    "Result",
    "canon",
    "canon_rows",
    "decode",
]

REPO = Path(__file__).resolve().parents[2]
ENGINE_VENV = Path(os.environ.get("NEVE_JAVA_VENV", REPO / ".venv-java"))
ENGINE_PYTHON = ENGINE_VENV / "bin" / "python"
SERVER = Path(__file__).with_name("server.py")
ICEBERG_VERSION = "1.10.2"
UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)


class JavaEngineError(RuntimeError):
    """The engine could not start, died, or did not answer in time."""


class JavaSqlError(Exception):
    """Iceberg-Java (or Spark) refused a statement; ``java_class`` names the root cause."""

    def __init__(self, message: str, java_class: str | None) -> None:
        super().__init__(message)
        self.java_class = java_class


@dataclass(frozen=True)
class JdbcCatalog:
    """An Iceberg JdbcCatalog named ``name`` (also the Spark catalog name) on ``uri``."""

    name: str
    uri: str  # a JDBC URI: jdbc:sqlite:/path or jdbc:postgresql://host:port/db
    warehouse: str
    user: str | None = None
    password: str | None = None
    cache: bool = False  # Iceberg's table cache: faster, but blind to commits by others
    options: Mapping[str, str] = field(default_factory=dict)  # more catalog properties

    @classmethod
    def from_sqlalchemy(cls, name: str, uri: str, warehouse: str) -> JdbcCatalog:
        """The JdbcCatalog on the database of a neve SqlCatalog URI (sqlite or postgresql)."""
        parts = urlsplit(uri)
        scheme = parts.scheme.split("+")[0]
        if scheme == "sqlite":
            path = uri.split(":///", 1)[1] if ":///" in uri else ""
            if not path or path == ":memory:":
                raise ValueError(f"Iceberg-Java needs an SQLite file, not {uri!r}")
            return cls(name, f"jdbc:sqlite:{path}", warehouse)
        if scheme in ("postgresql", "postgres"):
            host = parts.hostname or "127.0.0.1"
            port = f":{parts.port}" if parts.port else ""
            return cls(
                name,
                f"jdbc:postgresql://{host}{port}{parts.path}",
                warehouse,
                unquote(parts.username) if parts.username else None,
                unquote(parts.password) if parts.password else None,
            )
        raise ValueError(f"no JDBC driver for {uri!r}")

    def request(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "uri": self.uri,
            "warehouse": self.warehouse,
            "user": self.user,
            "password": self.password,
            "cache": self.cache,
            "options": dict(self.options),
        }


@dataclass(frozen=True)
class RestCatalogConf:
    """An Iceberg REST catalog named ``name`` in Spark, at ``uri`` (``neve serve``)."""

    name: str
    uri: str
    credential: str | None = None
    warehouse: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)

    def request(self) -> dict[str, Any]:
        return {
            "type": "rest",
            "name": self.name,
            "uri": self.uri,
            "credential": self.credential,
            "warehouse": self.warehouse,
            "options": dict(self.options),
        }


@dataclass(frozen=True)
class Result:
    """The rows of one statement, values decoded (see :func:`decode`)."""

    columns: list[str]
    types: list[str]
    rows: list[tuple[Any, ...]] = field(repr=False)

    def dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def scalar(self) -> Any:
        if len(self.rows) != 1 or len(self.columns) != 1:
            raise AssertionError(f"expected one value, got {self.columns} x {len(self.rows)} rows")
        return self.rows[0][0]


def decode(value: Any) -> Any:
    """A tagged JSON value from the server as the Python value neve's scans give."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    ((tag, raw),) = value.items()
    if tag == "$f":
        return float.fromhex(raw)
    if tag == "$dec":
        return Decimal(raw)
    if tag == "$date":
        return EPOCH_DATE + dt.timedelta(days=raw)
    if tag == "$ts":
        return (EPOCH + dt.timedelta(microseconds=raw)).replace(tzinfo=UTC)
    if tag == "$tsntz":
        return EPOCH + dt.timedelta(microseconds=raw)
    if tag == "$bin":
        return bytes.fromhex(raw)
    if tag == "$map":
        return {decode(k): decode(v) for k, v in raw}
    if tag == "$row":
        return {k: decode(v) for k, v in raw.items()}
    raise ValueError(f"unknown tag {tag!r}")


def canon(value: Any) -> Any:
    """A hashable, exactly comparable form of a value: floats by their bits (NaN equals
    NaN, -0.0 differs from 0.0), datetimes as micros (aware ones in UTC), nested values
    recursively; ints, strings, Decimals, dates and bytes as they are."""
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value.hex())
    if isinstance(value, dt.datetime):
        aware = value.tzinfo is not None
        naive = value.astimezone(UTC).replace(tzinfo=None) if aware else value
        delta = naive - EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return ("timestamptz" if aware else "timestamp", micros)
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, Decimal):
        return ("decimal", value)  # Decimal("1.50") == Decimal("1.5"); scale is the type's
    if isinstance(value, Mapping):
        return ("map", tuple(sorted(((canon(k), canon(v)) for k, v in value.items()), key=repr)))
    if isinstance(value, (list, tuple)):
        return tuple(canon(v) for v in value)
    return value


def canon_rows(rows: Iterable[Mapping[str, Any] | Sequence[Any]]) -> Counter[Any]:
    """Rows as a multiset of canonical tuples (dict rows by their values in order)."""
    out: Counter[Any] = Counter()
    for row in rows:
        values = list(row.values()) if isinstance(row, Mapping) else list(row)
        out[tuple(canon(v) for v in values)] += 1
    return out


class IcebergJava:
    """One Iceberg-Java 1.10.2 engine (a PySpark 3.5 process) and its catalogs."""

    def __init__(self, proc: subprocess.Popen[str], reply: IO[str], log: Path) -> None:
        self._proc = proc
        self._reply = reply
        self.log = log
        self.info: dict[str, Any] = {}

    @classmethod
    def start(
        cls,
        workdir: Path,
        catalogs: Sequence[JdbcCatalog | RestCatalogConf],
        *,
        memory: str = "768m",
        timeout: float = 180.0,
    ) -> IcebergJava:
        """Start the engine; :class:`JavaEngineError` (with the log's tail) when it cannot."""
        if not ENGINE_PYTHON.is_file():
            raise JavaEngineError(
                f"{ENGINE_PYTHON} is missing: build the Iceberg-Java engine with "
                "`make java-engine` (it is part of `make setup`)"
            )
        workdir.mkdir(parents=True, exist_ok=True)
        log = workdir / "iceberg-java.log"
        read_fd, write_fd = os.pipe()
        env = {
            **os.environ,
            "TZ": "UTC",
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": str(ENGINE_PYTHON),
            "PYSPARK_DRIVER_PYTHON": str(ENGINE_PYTHON),
        }
        for key in ("PYTHONPATH", "SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "VIRTUAL_ENV"):
            env.pop(key, None)  # neve's venv and PySpark 4 must not leak into PySpark 3.5
        with open(log, "w") as log_file:
            proc = subprocess.Popen(
                [
                    str(ENGINE_PYTHON),
                    str(SERVER),
                    "--reply-fd",
                    str(write_fd),
                    "--memory",
                    memory,
                    "--catalogs",
                    json.dumps([c.request() for c in catalogs]),
                ],
                stdin=subprocess.PIPE,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                pass_fds=(write_fd,),
                cwd=workdir,
                env=env,
                text=True,
            )
        os.close(write_fd)
        engine = cls(proc, os.fdopen(read_fd, "r", encoding="utf-8"), log)
        try:
            ready = engine._receive(timeout)
        except JavaEngineError:
            engine.close()
            raise
        if not ready.get("ok"):
            engine.close()
            raise JavaEngineError(f"Iceberg-Java did not start: {ready.get('error')}")
        engine.info = ready
        return engine

    # -- requests ------------------------------------------------------------------------

    def _tail(self) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])
        except OSError:
            return "(no log)"

    def _receive(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise JavaEngineError(
                    f"Iceberg-Java did not answer within {timeout:.0f}s; log {self.log}:\n"
                    + self._tail()
                )
            ready, _, _ = select.select([self._reply], [], [], min(left, 1.0))
            if ready:
                line = self._reply.readline()
                if line:
                    answer: dict[str, Any] = json.loads(line)
                    return answer
                break
            if self._proc.poll() is not None:
                break
        raise JavaEngineError(
            f"Iceberg-Java exited (code {self._proc.poll()}); log {self.log}:\n" + self._tail()
        )

    def request(self, message: Mapping[str, Any], timeout: float = 300.0) -> dict[str, Any]:
        """Send one request and return its answer (raw, still tagged)."""
        if self._proc.poll() is not None or self._proc.stdin is None:
            raise JavaEngineError(f"Iceberg-Java is not running; log {self.log}:\n" + self._tail())
        try:
            self._proc.stdin.write(json.dumps(message) + "\n")
            self._proc.stdin.flush()
        except BrokenPipeError as exc:
            raise JavaEngineError(
                f"Iceberg-Java went away; log {self.log}:\n" + self._tail()
            ) from exc
        return self._receive(timeout)

    def sql(self, statement: str, timeout: float = 300.0) -> Result:
        """Run one Spark SQL statement; its rows, decoded. :class:`JavaSqlError` if refused."""
        answer = self.request({"op": "sql", "sql": statement}, timeout)
        if not answer.get("ok"):
            raise JavaSqlError(
                f"{answer.get('error')}\n(statement: {statement})", answer.get("java_class")
            )
        rows = [tuple(decode(v) for v in row) for row in answer["rows"]]
        return Result(list(answer["columns"]), list(answer["types"]), rows)

    def add_catalog(self, catalog: JdbcCatalog | RestCatalogConf) -> None:
        """Make another JdbcCatalog known to the engine (by its name, before first use)."""
        answer = self.request({"op": "catalog", **catalog.request()})
        if not answer.get("ok"):
            raise JavaEngineError(str(answer.get("error")))

    def close(self) -> None:
        """Stop the engine (asks it to exit, then terminates it)."""
        proc = self._proc
        if proc.poll() is None and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.write(json.dumps({"op": "exit"}) + "\n")
                proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        with contextlib.suppress(OSError):
            self._reply.close()

    def __enter__(self) -> IcebergJava:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
