"""Shared fixtures.

- ``warehouse``: a temporary folder for the whole session.
- ``postgres_uri``: a real PostgreSQL server started for the session (installed with
  apt-get when missing); its tests fail, never skip, when it cannot start.
- ``catalog``: a fresh catalog per test, once for each kind (SQLite, filesystem,
  PostgreSQL, and REST: neve's REST client against a real ``neve serve`` on a loopback
  port, backed by SQLite; one server per test process, a warehouse per catalog).
- ``sqlite_catalog``: one fresh SQLite catalog per test with the namespace ``db``, for
  tests that need a catalog but test nothing about its kind. Its database and
  warehouse are ``sqlite_catalog.uri`` and ``sqlite_catalog.warehouse`` (for a second
  connection, e.g. from another process).
- ``catalog_factory``: fresh catalogs by kind, for tests that need several.
- ``rest_server``: that server.
- ``s3_server``: the S3-protocol test server (moto behind a logging, fault-injecting
  front; ``tests/s3server``) for the session; ``s3_warehouse``: a fresh bucket on it
  with the catalog properties and AWS environment variables that reach it.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from neve.catalog import Catalog, FilesystemCatalog, SqlCatalog
from neve.catalog.rest import RestCatalog
from restserver import NeveServer, oidc_key, secured_config
from s3server import S3Server, S3Warehouse

# Property tests judge results, never time: no per-example deadline, and no failure
# when a loaded machine (two pytest workers beside Spark and Java) draws examples
# slowly. A test that names its own suppressed health checks names too_slow with them.
settings.register_profile("neve", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("neve")

# No test may reach the cloud's instance metadata service (a link-local address) when
# it builds an object store without credentials: the AWS SDK under pyarrow is told
# there is none, and obstore's lookup goes to a closed loopback port.
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
os.environ.setdefault("AWS_METADATA_ENDPOINT", "http://127.0.0.1:9")

# -- warehouse -----------------------------------------------------------------------


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty home folder and current folder, and none of neve's or pyiceberg's
    catalog variables: the config files a test sees are its own."""
    h = tmp_path / "home"
    h.mkdir()
    for var in (
        "NEVE_URI",
        "NEVE_WAREHOUSE",
        "NEVE_CATALOG",
        "NEVE_CONFIG",
        "XDG_CONFIG_HOME",
        "PYICEBERG_HOME",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.chdir(h)
    return h


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temporary warehouse folder shared by the session (use unique table names)."""
    return tmp_path_factory.mktemp("warehouse")


# -- PostgreSQL ----------------------------------------------------------------------


def _pg_bin_dir() -> str | None:
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl and os.path.dirname(initdb) == os.path.dirname(pg_ctl):
        return os.path.dirname(initdb)

    def major(path: str) -> float:
        try:
            return float(Path(path).parent.name)
        except ValueError:
            return 0.0

    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=major, reverse=True):
        if os.path.isfile(os.path.join(candidate, "initdb")) and os.path.isfile(
            os.path.join(candidate, "pg_ctl")
        ):
            return candidate
    return None


def _install_postgres() -> str:
    """Install Debian's PostgreSQL (once per machine, even with xdist workers)."""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise RuntimeError(
            "PostgreSQL (initdb, pg_ctl) is not installed and cannot be installed here "
            "(needs root and apt-get); install the 'postgresql' package"
        )
    with open(os.path.join(tempfile.gettempdir(), "neve-apt.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _pg_bin_dir()
        if found:
            return found
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "postgresql"]):
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"{shlex.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")
    found = _pg_bin_dir()
    if not found:
        raise RuntimeError("apt-get installed postgresql but initdb/pg_ctl were not found")
    return found


def _ensure_postgres_user() -> None:
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--user-group", "--no-create-home", "postgres"],
            check=True,
            capture_output=True,
        )


def _as_server_user(cmd: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run its tools as the postgres user then."""
    if os.geteuid() != 0:
        return cmd
    if shutil.which("runuser"):
        return ["runuser", "-u", "postgres", "--", *cmd]
    return ["su", "postgres", "-s", "/bin/sh", "-c", shlex.join(cmd)]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(cmd: list[str], cwd: str) -> None:
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")


@pytest.fixture(scope="session")
def postgres_uri() -> Iterator[str]:
    """URI of a database on a PostgreSQL server that lives for the test session."""
    import psycopg

    bin_dir = _pg_bin_dir() or _install_postgres()
    base = tempfile.mkdtemp(prefix="neve-pg-")
    if os.geteuid() == 0:
        _ensure_postgres_user()
        user = pwd.getpwnam("postgres")
        os.chown(base, user.pw_uid, user.pw_gid)
    data, log = os.path.join(base, "data"), os.path.join(base, "server.log")
    pg_ctl = os.path.join(bin_dir, "pg_ctl")
    started = False
    try:
        _run(
            _as_server_user(
                [
                    os.path.join(bin_dir, "initdb"),
                    *("-D", data, "-U", "postgres", "-A", "trust"),
                    *("-E", "UTF8", "--no-locale", "--no-sync"),
                ]
            ),
            cwd=base,
        )
        errors = []
        for _attempt in range(3):  # a free port may be taken before the server binds it
            port = _free_port()
            options = (
                f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off"
            )
            try:
                _run(
                    _as_server_user(
                        [pg_ctl, "-D", data, "-l", log, "-w", "-t", "60", "-o", options, "start"]
                    ),
                    cwd=base,
                )
                started = True
                break
            except RuntimeError as exc:
                errors.append(f"{exc}\n{Path(log).read_text() if os.path.exists(log) else ''}")
        if not started:
            raise RuntimeError("PostgreSQL did not start:\n" + "\n".join(errors))
        with psycopg.connect(
            f"host=127.0.0.1 port={port} user=postgres dbname=postgres", autocommit=True
        ) as conn:
            conn.execute("CREATE DATABASE neve_test")
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/neve_test"
    finally:
        if started:
            with contextlib.suppress(RuntimeError):
                _run(_as_server_user([pg_ctl, "-D", data, "-m", "fast", "-w", "stop"]), cwd=base)
        shutil.rmtree(base, ignore_errors=True)


# -- the S3-protocol server -------------------------------------------------------------


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 server on a loopback port for the session (one per xdist worker)."""
    server = S3Server(tmp_path_factory.mktemp("s3server"))
    yield server
    server.stop()


@pytest.fixture
def s3_warehouse(s3_server: S3Server) -> S3Warehouse:
    """A fresh bucket: ``.uri`` (``s3://<bucket>/wh``), ``.properties`` for catalogs,
    ``.env`` for other processes, and the bucket's request log and faults."""
    return s3_server.warehouse()


@pytest.fixture
def s3_environ(s3_warehouse: S3Warehouse, monkeypatch: pytest.MonkeyPatch) -> S3Warehouse:
    """``s3_warehouse`` with its AWS environment variables set in this process for the
    test, so that whatever starts here without catalog properties (subprocesses, tools
    reading ``AWS_ENDPOINT_URL``) reaches the test server."""
    for key, value in s3_warehouse.env.items():
        monkeypatch.setenv(key, value)
    return s3_warehouse


# -- catalogs ------------------------------------------------------------------------

CATALOG_KINDS = [
    "sqlite",
    "filesystem",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("rest", marks=pytest.mark.rest),
]


@pytest.fixture(scope="session")
def rest_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NeveServer]:
    """``neve serve`` for the session (anonymous access, any warehouse name served
    from its own folder), backed by SQLite."""
    server = NeveServer.start(
        tmp_path_factory.mktemp("rest-server"), anonymous=True, warehouse_root=True
    )
    yield server
    server.stop()


@pytest.fixture
def catalog_factory(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[str], Catalog]]:
    """Makes fresh, empty catalogs by kind ("sqlite", "filesystem", "postgres",
    "rest"), each with its own warehouse under ``tmp_path`` (a REST catalog: its own
    warehouse on the session's server)."""
    made: list[Catalog] = []

    def make(kind: str) -> Catalog:
        n = len(made)
        wh = str(tmp_path / f"warehouse{n}")
        cat: Catalog
        if kind == "sqlite":
            cat = SqlCatalog("neve", f"sqlite:///{tmp_path}/catalog{n}.db", wh)
        elif kind == "filesystem":
            cat = FilesystemCatalog("neve", wh)
        elif kind == "postgres":
            # One database for the session; a catalog name per test keeps tests apart.
            uri = request.getfixturevalue("postgres_uri")
            cat = SqlCatalog(f"test_{uuid.uuid4().hex[:12]}", uri, wh)
        elif kind == "rest":
            server = request.getfixturevalue("rest_server")
            cat = RestCatalog("neve", server.url, {"warehouse": f"t{uuid.uuid4().hex[:12]}"})
        else:
            raise ValueError(f"unknown catalog kind {kind!r}")
        made.append(cat)
        return cat

    yield make
    for cat in made:
        if isinstance(cat, SqlCatalog) and cat.uri.startswith("sqlite"):
            cat.dispose()  # a database file per test: do not keep its engine around
        if isinstance(cat, RestCatalog):
            cat.dispose()


@pytest.fixture(params=CATALOG_KINDS)
def catalog(request: pytest.FixtureRequest, catalog_factory: Callable[[str], Catalog]) -> Catalog:
    """A fresh catalog per test, for each catalog kind."""
    return catalog_factory(request.param)


@pytest.fixture(scope="session")
def idp_key() -> object:
    """The private key of the test's external OIDC issuer."""
    return oidc_key()


@pytest.fixture(scope="session")
def secured(tmp_path_factory: pytest.TempPathFactory, idp_key: object) -> Iterator[NeveServer]:
    """``neve serve`` with principals, roles and grants and no anonymous access
    (``restserver.secured_config``), backed by SQLite."""
    work = tmp_path_factory.mktemp("secured")
    with NeveServer.start(work, config=secured_config(work, idp_key)) as server:  # type: ignore[arg-type]
        yield server


@pytest.fixture
def sqlite_catalog(catalog_factory: Callable[[str], Catalog]) -> SqlCatalog:
    """A fresh SQLite catalog with the namespace ``db`` (its engine is disposed of after
    the test)."""
    cat = catalog_factory("sqlite")
    assert isinstance(cat, SqlCatalog)
    cat.create_namespace("db")
    return cat


# -- Spark ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local SparkSession per test process (each xdist worker has its own)."""
    from neve.spark import local_session

    session = local_session(
        "local[2]",
        "neve-tests",
        conf={
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "4",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "2g",
            "spark.sql.adaptive.enabled": "true",
            # Spark jobs for every row-level change, so the Spark suites test them;
            # the driver path of small changes has tests of its own
            "spark.neve.local.rows-max": "0",
            "spark.neve.local.bytes-max": "0",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
