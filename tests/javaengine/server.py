"""The Iceberg-Java test engine's server: one PySpark 3.5 process with Iceberg 1.10.2.

Run by :mod:`javaengine` with the engine's own Python (``.venv-java/bin/python``),
never imported by the test process (PySpark 3.5 and neve's PySpark 4 cannot share one
virtualenv). It reads one JSON request per line on stdin and answers one JSON line on
the file descriptor given as ``--reply-fd`` (the JVM inherits stdout and may print on
it, so stdout is pointed at stderr before Spark starts). Requests:

- ``{"op": "ping"}`` -> ``{"ok": true, "iceberg": "1.10.2", "spark": "3.5.x"}``
- ``{"op": "sql", "sql": "..."}`` -> ``{"ok": true, "columns": [...], "types": [...],
  "rows": [[...], ...]}``
- ``{"op": "catalog", "name": ..., "uri": ..., "warehouse": ..., "user": ...,
  "password": ...}`` -> ``{"ok": true}``: adds a JDBC catalog (before its first use)
- ``{"op": "update_schema", "catalog": ..., "table": "ns.t", "changes": [...]}`` ->
  ``{"ok": true}``: a schema change through Java's ``UpdateSchema`` API, for what Spark
  3.5's SQL cannot say (column defaults). Each change is ``{"add": name, "type":
  "int", "default": value, "required": false}`` or ``{"set-default": name, "value":
  value}``; a value is a JSON boolean or number, or a string Iceberg-Java converts
  to the column's type (dates, timestamps, decimals, strings)
- ``{"op": "exit"}``

A failure answers ``{"ok": false, "error": <message>, "java_class": <class or null>}``.
Values are tagged so that their exact type survives JSON: ``{"$f": float.hex()}`` for
float and double (NaN, -0.0 and infinities included), ``{"$dec": "1.50"}``,
``{"$date": days}``, ``{"$ts": micros}`` (timestamp with zone, UTC),
``{"$tsntz": micros}``, ``{"$bin": hex}``, ``{"$map": [[k, v], ...]}``,
``{"$row": {name: value}}``; ints, strings, booleans, lists and nulls are plain JSON.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ICEBERG_VERSION = "1.10.2"
EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
SQLITE_JDBC = "/usr/share/java/sqlite-jdbc.jar"
POSTGRES_JDBC = "/usr/share/java/postgresql.jar"
EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH = dt.datetime(1970, 1, 1)


def engine_jars() -> list[str]:
    """The Iceberg runtime, the relocated Jackson and HttpClient it lacks, and the JDBC
    drivers."""
    import snowpark_connect_deps_iceberg  # type: ignore[import-not-found]

    runtime = (
        Path(snowpark_connect_deps_iceberg.__file__).parent
        / "jars"
        / f"iceberg-spark-runtime-3.5_2.12-{ICEBERG_VERSION}.jar"
    )
    jackson = Path(sys.prefix) / "iceberg-java" / "iceberg-jackson-relocated.jar"
    http = Path(sys.prefix) / "iceberg-java" / "iceberg-httpclient-relocated.jar"
    jars = [runtime, jackson, http, Path(SQLITE_JDBC), Path(POSTGRES_JDBC)]
    missing = [str(j) for j in jars if not j.is_file()]
    if missing:
        raise SystemExit(f"missing jars {missing}: run `make java-engine`")
    return [str(j) for j in jars]


def rest_catalog_conf(spec: dict[str, Any]) -> dict[str, str]:
    """Spark settings of an Iceberg REST catalog (``neve serve`` or any other)."""
    prefix = f"spark.sql.catalog.{spec['name']}"
    conf = {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "rest",
        f"{prefix}.uri": spec["uri"],
        f"{prefix}.cache-enabled": "false",
    }
    for key in ("credential", "token", "warehouse"):
        if spec.get(key):
            conf[f"{prefix}.{key}"] = spec[key]
    for key, value in (spec.get("options") or {}).items():
        conf[f"{prefix}.{key}"] = str(value)
    return conf


def catalog_conf(spec: dict[str, Any]) -> dict[str, str]:
    """Spark settings of an Iceberg JdbcCatalog on the database neve's SqlCatalog uses
    (or of a REST catalog, when ``spec["type"]`` is ``rest``).

    neve creates the catalog tables (Java's "V1" layout) before the engine starts, so
    Java does not initialise them: its initialisation leaves an SQLite read lock open.
    The table cache is off unless asked for, so that every statement sees commits made
    by neve."""
    if spec.get("type") == "rest":
        return rest_catalog_conf(spec)
    prefix = f"spark.sql.catalog.{spec['name']}"
    uri, user, password = spec["uri"], spec.get("user"), spec.get("password")
    conf = {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "jdbc",
        f"{prefix}.uri": uri,
        f"{prefix}.warehouse": spec["warehouse"],
        f"{prefix}.cache-enabled": "true" if spec.get("cache") else "false",
        f"{prefix}.jdbc.init-catalog-tables": "false",
        f"{prefix}.jdbc.schema-version": "V1",
    }
    if uri.startswith("jdbc:sqlite:"):
        conf[f"{prefix}.jdbc.busy_timeout"] = "60000"
    for key, value in (spec.get("options") or {}).items():
        conf[f"{prefix}.{key}"] = str(value)
    if user is not None:
        conf[f"{prefix}.jdbc.user"] = user
    if password is not None:
        conf[f"{prefix}.jdbc.password"] = password
    return conf


# -- values ---------------------------------------------------------------------------


def encoder(dtype: Any) -> Callable[[Any], Any]:
    """A function turning one collected value of Spark type ``dtype`` into tagged JSON."""
    from pyspark.sql import types as T

    def nullable(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        return lambda v: None if v is None else fn(v)

    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        return nullable(lambda v: {"$f": float(v).hex()})
    if isinstance(dtype, T.DecimalType):
        return nullable(lambda v: {"$dec": str(v)})
    if isinstance(dtype, T.BinaryType):
        return nullable(lambda v: {"$bin": bytes(v).hex()})
    if isinstance(dtype, T.DateType):
        return nullable(lambda v: {"$date": (v - EPOCH_DATE).days})
    if isinstance(dtype, T.TimestampNTZType):
        return nullable(lambda v: {"$tsntz": _micros(v)})
    if isinstance(dtype, T.TimestampType):
        # PySpark gives local wall-clock time; the process runs with TZ=UTC.
        return nullable(lambda v: {"$ts": _micros(v)})
    if isinstance(dtype, T.ArrayType):
        item = encoder(dtype.elementType)
        return nullable(lambda v: [item(x) for x in v])
    if isinstance(dtype, T.MapType):
        key, value = encoder(dtype.keyType), encoder(dtype.valueType)
        return nullable(lambda v: {"$map": [[key(k), value(x)] for k, x in v.items()]})
    if isinstance(dtype, T.StructType):
        fields = [(f.name, encoder(f.dataType)) for f in dtype.fields]
        return nullable(
            lambda v: {"$row": {n: fn(x) for (n, fn), x in zip(fields, v, strict=True)}}
        )
    return lambda v: v  # booleans, integers, strings


def _tagged(tag: str) -> Callable[[Any], Any]:
    return lambda v: None if v is None else {tag: v}


def _micros(value: dt.datetime) -> int:
    delta = value.replace(tzinfo=None) - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


# -- requests -------------------------------------------------------------------------


class Server:
    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "ping":
            return {"ok": True, **versions(self.spark)}
        if op == "sql":
            return self.sql(request["sql"])
        if op == "catalog":
            for key, value in catalog_conf(request).items():
                self.spark.conf.set(key, value)
            return {"ok": True}
        if op == "update_schema":
            return self.update_schema(request)
        return {"ok": False, "error": f"unknown op {op!r}", "java_class": None}

    def sql(self, statement: str) -> dict[str, Any]:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        df = self.spark.sql(statement)
        fields = df.schema.fields
        encoders = [encoder(f.dataType) for f in fields]
        if any(isinstance(f.dataType, (T.TimestampType, T.TimestampNTZType)) for f in fields):
            # PySpark's datetime conversion fails for year 1 and the like: collect the
            # top-level timestamps as epoch microseconds (the session time zone is UTC).
            plain = df.toDF(*[f"c{i}" for i in range(len(fields))])
            columns = []
            for i, f in enumerate(fields):
                col = F.col(f"c{i}")
                if isinstance(f.dataType, T.TimestampNTZType):
                    col = F.unix_micros(col.cast("timestamp"))
                    encoders[i] = _tagged("$tsntz")
                elif isinstance(f.dataType, T.TimestampType):
                    col = F.unix_micros(col)
                    encoders[i] = _tagged("$ts")
                columns.append(col.alias(f"c{i}"))
            df = plain.select(*columns)
        rows = [[enc(v) for enc, v in zip(encoders, row, strict=True)] for row in df.collect()]
        return {
            "ok": True,
            "columns": [f.name for f in fields],
            "types": [f.dataType.simpleString() for f in fields],
            "rows": rows,
        }

    def update_schema(self, request: dict[str, Any]) -> dict[str, Any]:
        jvm = self.spark.sparkContext._jvm
        manager = self.spark._jsparkSession.sessionState().catalogManager()
        catalog = manager.catalog(request["catalog"]).icebergCatalog()
        ident = jvm.org.apache.iceberg.catalog.TableIdentifier.parse(request["table"])
        table = catalog.loadTable(ident)
        types = {f.name(): f.type() for f in table.schema().columns()}
        update = table.updateSchema()
        for change in request["changes"]:
            if "add" in change:
                iceberg_type = jvm.org.apache.iceberg.types.Types.fromPrimitiveString(
                    change["type"]
                )
                value = _literal(jvm, change.get("default"), iceberg_type)
                if change.get("required"):
                    update = update.addRequiredColumn(change["add"], iceberg_type, None, value)
                else:
                    update = update.addColumn(change["add"], iceberg_type, None, value)
                types[change["add"]] = iceberg_type
            else:
                name = change["set-default"]
                value = _literal(jvm, change.get("value"), types[name])
                update = update.updateColumnDefault(name, value)
        update.commit()
        return {"ok": True}


def _literal(jvm: Any, value: Any, iceberg_type: Any) -> Any:
    """An Iceberg-Java ``Literal`` of ``value`` converted to ``iceberg_type`` (None: none)."""
    if value is None:
        return None
    lit = jvm.org.apache.iceberg.expressions.Expressions.lit
    if isinstance(value, bool):
        return lit(value).to(iceberg_type)
    if isinstance(value, int):
        return lit(jvm.java.lang.Long.valueOf(str(value))).to(iceberg_type)
    if isinstance(value, float):
        return lit(value).to(iceberg_type)  # Py4J passes a float as a Java double
    return lit(str(value)).to(iceberg_type)


def versions(spark: Any) -> dict[str, str]:
    jvm = spark.sparkContext._jvm
    return {"iceberg": str(jvm.org.apache.iceberg.IcebergBuild.version()), "spark": spark.version}


def java_class(exc: BaseException) -> str | None:
    """The class name of the Java exception behind ``exc`` (its root cause), if any."""
    java = getattr(exc, "java_exception", None)
    if java is None:
        java = getattr(exc, "_origin", None)
    if java is None:
        return None
    try:
        cause = java
        while cause.getCause() is not None and cause.getCause() != cause:
            cause = cause.getCause()
        return str(cause.getClass().getName())
    except Exception:
        return None


def start_session(memory: str, catalogs: list[dict[str, Any]]) -> Any:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("neve-iceberg-java")
        .config("spark.jars", ",".join(engine_jars()))
        .config("spark.sql.extensions", EXTENSIONS)
        .config("spark.driver.memory", memory)
        .config(
            "spark.driver.extraJavaOptions",
            "-Duser.timezone=UTC -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss4m",
        )
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
    )
    for cat in catalogs:
        for key, value in catalog_conf(cat).items():
            builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reply-fd", type=int, required=True)
    parser.add_argument("--memory", default="768m")
    parser.add_argument("--catalogs", default="[]", help="JSON list of {name, uri, warehouse}")
    args = parser.parse_args()

    os.environ["TZ"] = "UTC"
    time.tzset()
    reply = os.fdopen(args.reply_fd, "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # whatever the JVM or Spark print goes to the log, not the protocol
    sys.stdout = sys.stderr

    def send(message: dict[str, Any]) -> None:
        reply.write(json.dumps(message, allow_nan=False) + "\n")
        reply.flush()

    try:
        started = time.monotonic()
        spark = start_session(args.memory, json.loads(args.catalogs))
        info = versions(spark)
        if info["iceberg"] != ICEBERG_VERSION:
            raise SystemExit(f"Iceberg {info['iceberg']} found, {ICEBERG_VERSION} wanted")
        # One metadata round trip through the relocated Jackson classes.
        spark.sparkContext._jvm.org.apache.iceberg.SchemaParser.fromJson(
            '{"type":"struct","schema-id":0,"fields":[]}'
        )
        send({"ok": True, "ready": True, "seconds": round(time.monotonic() - started, 2), **info})
    except BaseException as exc:
        send({"ok": False, "error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"})
        raise
    server = Server(spark)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("op") == "exit":
            break
        try:
            answer = server.handle(request)
        except Exception as exc:
            answer = {
                "ok": False,
                "error": f"{type(exc).__name__}: {exc}",
                "java_class": java_class(exc),
            }
        send(answer)
    spark.stop()


if __name__ == "__main__":
    main()
