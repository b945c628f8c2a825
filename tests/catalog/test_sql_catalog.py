"""What only the SQL catalog does: the shared table layout, old layouts, view rows,
engines, and how database failures during a commit are reported."""

from __future__ import annotations

import os
import pickle
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pyarrow as pa
import pytest
from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url

from neve.catalog import SqlCatalog
from neve.errors import (
    CommitStateUnknownError,
    NamespaceNotEmptyError,
    NeveIOError,
    NoSuchTableError,
    TableAlreadyExistsError,
    ValidationError,
)
from neve.io.fileio import local_path

# The JDBC catalog's V0 layout (Iceberg-Java before views; no iceberg_type column).
JAVA_V0_DDL = [
    "CREATE TABLE iceberg_tables(catalog_name VARCHAR(255) NOT NULL,"
    "table_namespace VARCHAR(255) NOT NULL,table_name VARCHAR(255) NOT NULL,"
    "metadata_location VARCHAR(1000),previous_metadata_location VARCHAR(1000),"
    "PRIMARY KEY (catalog_name, table_namespace, table_name))",
    "CREATE TABLE iceberg_namespace_properties(catalog_name VARCHAR(255) NOT NULL,"
    "namespace VARCHAR(255) NOT NULL,property_key VARCHAR(255),"
    "property_value VARCHAR(1000),PRIMARY KEY (catalog_name, namespace, property_key))",
]


def _rows(cat: SqlCatalog, sql: str, **params: Any) -> set[tuple[Any, ...]]:
    with cat.engine.connect() as conn:
        return {tuple(r) for r in conn.execute(text(sql), {"c": cat.name, **params})}


def _execute(cat: SqlCatalog, sql: str, **params: Any) -> None:
    with cat.engine.begin() as conn:
        conn.execute(text(sql), {"c": cat.name, **params})


def _libpq_uri(sqlalchemy_uri: str) -> str:
    return make_url(sqlalchemy_uri).set(drivername="postgresql").render_as_string(False)


def test_table_layout(sql_catalog: SqlCatalog) -> None:
    with sql_catalog.engine.connect() as conn:
        insp = inspect(conn)
        tables = {c["name"] for c in insp.get_columns("iceberg_tables")}
        props = {c["name"] for c in insp.get_columns("iceberg_namespace_properties")}
        tables_pk = insp.get_pk_constraint("iceberg_tables")["constrained_columns"]
        props_pk = insp.get_pk_constraint("iceberg_namespace_properties")["constrained_columns"]
    assert tables == {
        "catalog_name",
        "table_namespace",
        "table_name",
        "metadata_location",
        "previous_metadata_location",
        "iceberg_type",
    }
    assert props == {"catalog_name", "namespace", "property_key", "property_value"}
    assert tables_pk == ["catalog_name", "table_namespace", "table_name"]
    assert props_pk == ["catalog_name", "namespace", "property_key"]


def test_rows_like_java(sql_catalog: SqlCatalog, create_raw: Callable[..., Any]) -> None:
    sql_catalog.create_namespace("db", {"owner": "ana"})
    sql_catalog.create_namespace("x.y")
    assert _rows(
        sql_catalog,
        "SELECT namespace, property_key, property_value FROM iceberg_namespace_properties "
        "WHERE catalog_name = :c",
    ) == {
        ("db", "owner", "ana"),
        ("db", "exists", "true"),
        ("x", "exists", "true"),
        ("x.y", "exists", "true"),
    }
    ident, base, md = create_raw(sql_catalog, "x.y.t")
    new = sql_catalog.commit_metadata(ident, base, md.with_(properties={"a": "b"}))
    assert _rows(
        sql_catalog,
        "SELECT table_namespace, table_name, metadata_location, previous_metadata_location, "
        "iceberg_type FROM iceberg_tables WHERE catalog_name = :c",
    ) == {("x.y", "t", new, base, "TABLE")}


def test_catalog_names_keep_apart(sql_catalog: SqlCatalog, create_raw: Callable[..., Any]) -> None:
    other = SqlCatalog("other_" + uuid.uuid4().hex[:8], sql_catalog.uri, sql_catalog.warehouse)
    create_raw(sql_catalog, "db.t")
    assert other.list_namespaces() == []
    assert not other.table_exists("db.t")
    other.create_namespace("db")
    create_raw(other, "db.t")  # the same name in another catalog is another table
    other.drop_table("db.t")
    assert sql_catalog.table_exists("db.t")


def test_implicit_namespaces(sql_catalog: SqlCatalog) -> None:
    # Rows written by an older client: a table but no namespace rows at all.
    _execute(
        sql_catalog,
        "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, "
        "metadata_location) VALUES (:c, 'legacy.inner', 't', '/x/v1.metadata.json')",
    )
    assert sql_catalog.namespace_exists("legacy")
    assert sql_catalog.namespace_exists("legacy.inner")
    assert sql_catalog.list_namespaces() == [("legacy",)]
    assert sql_catalog.list_namespaces("legacy") == [("legacy", "inner")]
    assert sql_catalog.list_tables("legacy.inner") == [("legacy", "inner", "t")]
    assert sql_catalog.namespace_properties("legacy.inner") == {}
    with pytest.raises(NamespaceNotEmptyError):
        sql_catalog.drop_namespace("legacy")


def test_namespace_without_exists_row(sql_catalog: SqlCatalog) -> None:
    # pyiceberg writes only the given properties when there are some.
    _execute(
        sql_catalog,
        "INSERT INTO iceberg_namespace_properties VALUES (:c, 'py', 'owner', 'ana')",
    )
    assert sql_catalog.namespace_properties("py") == {"owner": "ana"}
    sql_catalog.update_namespace_properties("py", removals=["owner"])
    assert sql_catalog.namespace_exists("py")  # the exists row keeps it
    assert sql_catalog.namespace_properties("py") == {}


def test_view_rows_are_not_tables(sql_catalog: SqlCatalog, create_raw: Callable[..., Any]) -> None:
    create_raw(sql_catalog, "db.t")
    _execute(
        sql_catalog,
        "INSERT INTO iceberg_tables VALUES (:c, 'db', 'v', '/x/v.metadata.json', NULL, 'VIEW')",
    )
    assert sql_catalog.list_tables("db") == [("db", "t")]
    assert not sql_catalog.table_exists("db.v")
    with pytest.raises(NoSuchTableError):
        sql_catalog._drop_table(("db", "v"))
    with pytest.raises(TableAlreadyExistsError):
        sql_catalog._register_table(("db", "v"), "/x/other.metadata.json")
    with pytest.raises(NamespaceNotEmptyError):
        sql_catalog.drop_namespace("db")
    assert ("db", "v", "VIEW") in _rows(
        sql_catalog,
        "SELECT table_namespace, table_name, iceberg_type FROM iceberg_tables "
        "WHERE catalog_name = :c",
    )


@pytest.fixture
def v0_uri(sql_catalog: SqlCatalog, tmp_path: Any) -> Iterator[str]:
    """An empty database whose catalog tables have Iceberg-Java's V0 layout."""
    admin = None
    if sql_catalog.uri.startswith("sqlite"):
        uri = f"sqlite:///{tmp_path}/v0.db"
    else:
        name = "v0_" + uuid.uuid4().hex[:10]
        admin = psycopg.connect(_libpq_uri(sql_catalog.uri), autocommit=True)
        admin.execute(f"CREATE DATABASE {name}")
        uri = make_url(sql_catalog.uri).set(database=name).render_as_string(False)
    engine = create_engine(uri)
    with engine.begin() as conn:
        for ddl in JAVA_V0_DDL:
            conn.exec_driver_sql(ddl)
    engine.dispose()
    yield uri
    if admin is not None:
        admin.execute(f"DROP DATABASE {make_url(uri).database} WITH (FORCE)")
        admin.close()


def test_java_v0_layout(v0_uri: str, tmp_path: Any, create_raw: Callable[..., Any]) -> None:
    cat = SqlCatalog("neve", v0_uri, str(tmp_path / "wh"))
    try:
        ident, base, md = create_raw(cat, "db.t")
        new = cat.commit_metadata(ident, base, md.with_(properties={"a": "b"}))
        assert cat.list_tables("db") == [("db", "t")]
        assert cat._metadata_location(ident) == new
        cat.rename_table("db.t", "db.u")
        assert cat.list_tables("db") == [("db", "u")]
        with cat.engine.connect() as conn:
            columns = {c["name"] for c in inspect(conn).get_columns("iceberg_tables")}
        assert "iceberg_type" not in columns  # neve does not migrate the layout
    finally:
        cat.dispose()


def test_version_numbers_follow_the_base(
    sql_catalog: SqlCatalog, create_raw: Callable[..., Any]
) -> None:
    _, _, md = create_raw(sql_catalog, "db.t")
    folder = local_path(md.location) + "/metadata"
    for source_name, expected in (("v3.metadata.json", "00004-"), ("custom.json", "00000-")):
        source = f"{folder}/{source_name}"
        sql_catalog.write_metadata(md, source)
        name = f"db.from_{source_name.split('.')[0]}"
        sql_catalog._register_table(tuple(name.split(".")), source)
        new = sql_catalog.commit_metadata(tuple(name.split(".")), source, md)
        assert new.rsplit("/", 1)[-1].startswith(expected)


def test_gzip_codec_names(sql_catalog: SqlCatalog, create_raw: Callable[..., Any]) -> None:
    ident, base, md = create_raw(sql_catalog, "db.t")
    zipped = md.with_(properties={"write.metadata.compression-codec": "gzip"})
    new = sql_catalog.commit_metadata(ident, base, zipped)
    assert new.endswith(".gz.metadata.json")
    with open(local_path(new), "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    assert sql_catalog.read_metadata(new).properties == zipped.properties


def test_engines_are_shared_and_disposable(
    sql_catalog: SqlCatalog, create_raw: Callable[..., Any]
) -> None:
    other = SqlCatalog(sql_catalog.name, sql_catalog.uri, sql_catalog.warehouse)
    assert other.engine is sql_catalog.engine
    create_raw(sql_catalog, "db.t")
    first = sql_catalog.engine
    sql_catalog.dispose()
    assert other.table_exists("db.t")  # reconnects on a fresh engine
    assert other.engine is not first


def test_pickles(sql_catalog: SqlCatalog, create_raw: Callable[..., Any]) -> None:
    ident, base, _ = create_raw(sql_catalog, "db.t")
    copy = pickle.loads(pickle.dumps(sql_catalog))
    assert isinstance(copy, SqlCatalog)
    assert (copy.name, copy.uri, copy.warehouse) == (
        sql_catalog.name,
        sql_catalog.uri,
        sql_catalog.warehouse,
    )
    assert copy._metadata_location(ident) == base


def test_unreachable_database_hides_password(tmp_path: Any) -> None:
    uri = "postgresql+psycopg://neve:s3cret@127.0.0.1:1/nowhere?connect_timeout=2"
    with pytest.raises(NeveIOError, match="reachable") as info:
        SqlCatalog("neve", uri, str(tmp_path))
    assert "s3cret" not in str(info.value)
    assert "***" in str(info.value)


def test_bad_uri(tmp_path: Any) -> None:
    with pytest.raises(ValidationError, match="cannot parse"):
        SqlCatalog("neve", "not a uri", str(tmp_path))
    with pytest.raises(ValidationError, match="driver"):
        SqlCatalog("neve", "postgresql+nodriver://x@localhost/db", str(tmp_path))


# -- database failures during a commit (PostgreSQL: a real lost connection) ----------


@pytest.fixture
def pg_catalog(catalog_factory: Callable[[str], Any]) -> SqlCatalog:
    cat = catalog_factory("postgres")
    assert isinstance(cat, SqlCatalog)
    return cat


def _kill_backend_on(
    engine: Engine, when: str, statement_prefix: str, admin_uri: str
) -> Callable[[], None]:
    """Terminate the server process of the connection that runs ``statement_prefix``,
    ``when`` = before_cursor_execute or after_cursor_execute. Returns the remover."""

    def listener(conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith(statement_prefix):
            pid = conn.connection.dbapi_connection.info.backend_pid
            with psycopg.connect(admin_uri, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))

    event.listen(engine, when, listener)
    return lambda: event.remove(engine, when, listener)


@pytest.mark.postgres
def test_connection_lost_after_update_is_unknown(
    pg_catalog: SqlCatalog, create_raw: Callable[..., Any]
) -> None:
    ident, base, md = create_raw(pg_catalog, "db.t")
    folder = local_path(md.location) + "/metadata"
    before = set(os.listdir(folder))
    remove = _kill_backend_on(
        pg_catalog.engine,
        "after_cursor_execute",
        "UPDATE ICEBERG_TABLES",
        _libpq_uri(pg_catalog.uri),
    )
    try:
        with pytest.raises(CommitStateUnknownError, match="outcome is unknown"):
            pg_catalog.commit_metadata(ident, base, md.with_(properties={"a": "b"}))
    finally:
        remove()
    kept = set(os.listdir(folder)) - before
    assert len(kept) == 1  # the new metadata file is kept: the commit might have happened
    # Here the server died before COMMIT, so the pointer did not move.
    assert pg_catalog._metadata_location(ident) == base


@pytest.mark.postgres
def test_connection_lost_before_update_changes_nothing(
    pg_catalog: SqlCatalog, create_raw: Callable[..., Any]
) -> None:
    ident, base, md = create_raw(pg_catalog, "db.t")
    folder = local_path(md.location) + "/metadata"
    before = set(os.listdir(folder))
    remove = _kill_backend_on(
        pg_catalog.engine,
        "before_cursor_execute",
        "UPDATE ICEBERG_TABLES",
        _libpq_uri(pg_catalog.uri),
    )
    try:
        with pytest.raises(NeveIOError, match="nothing was changed"):
            pg_catalog.commit_metadata(ident, base, md.with_(properties={"a": "b"}))
    finally:
        remove()
    assert set(os.listdir(folder)) == before
    assert pg_catalog._metadata_location(ident) == base


def test_a_commit_from_the_version_last_seen_reads_no_pointer(sql_catalog: SqlCatalog) -> None:
    """The swap's ``WHERE metadata_location = <base>`` refuses a stale base by itself, so
    a commit starts from the version this catalog last committed: the pointer is
    only updated, never read first."""
    sql_catalog.create_namespace("db")
    rows = pa.table({"id": pa.array([1, 2], pa.int64())})
    table = sql_catalog.create_table("db.t", rows.schema)
    table.append(rows)
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(" ".join(statement.split()).upper())

    event.listen(sql_catalog.engine, "before_cursor_execute", record)
    try:
        table.append(rows)
    finally:
        event.remove(sql_catalog.engine, "before_cursor_execute", record)
    pointer = [s for s in statements if "ICEBERG_TABLES" in s]
    assert len(pointer) == 1, pointer
    assert pointer[0].startswith("UPDATE ICEBERG_TABLES SET METADATA_LOCATION")
    assert sql_catalog.load_table("db.t").scan().to_arrow().num_rows == 4


def test_concurrent_property_updates(sql_catalog: SqlCatalog) -> None:
    sql_catalog.create_namespace("db")
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        barrier.wait()
        try:
            for round_no in range(3):
                sql_catalog.update_namespace_properties(
                    "db", updates={f"k{i}": str(round_no), "shared": str(i)}
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    props = sql_catalog.namespace_properties("db")
    assert {k: v for k, v in props.items() if k != "shared"} == {f"k{i}": "2" for i in range(6)}
    assert props["shared"] in {str(i) for i in range(6)}
