"""Short-lived storage credentials vended by ``neve serve`` through STS ``AssumeRole``
(moto's STS on the S3 test server), scoped to each table's location.

Real parts throughout: a ``neve serve`` process whose warehouse is a bucket on the S3
test server and whose config names an STS endpoint (the same test server), pyiceberg's
``RestCatalog``, neve's own REST client and DuckDB 1.5's iceberg extension holding no
storage keys of their own, and
the test server's request log, which records the access key each request was signed
with.

moto 5.2 does not apply session policies to requests (its access control reads only
the role's own policies, and its condition evaluator knows only ``StringEquals``). So
the scope is checked twice: at the policy level (the session policy moto's STS
received for each vended key names the table's location and nothing else, and moto's
own IAM policy evaluator permits every request the clients made with that key and no
request on another table's objects), and by the test server's front, which refuses
(403 AccessDenied) every request signed with a session's keys that its policy does not
allow (moto's evaluator for actions and resources, the front's own ``StringLike`` for
the ``s3:prefix`` of listings; tests/s3server/server.py). Every test here runs with
that enforcement on, so the clients' whole read and write paths stay inside the
table's location; the refusals themselves are shown on another table named ``t2``
(whose location starts with the same characters as ``t``'s).
"""

from __future__ import annotations

import fnmatch
import json
import pickle
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog as PyRest

import neve
from duckdbengine import duckdb_query
from neve.catalog.rest_credentials import VendedFileIO
from neve.errors import CatalogBusyError, NeveIOError, ValidationError
from neve.io.fileio import FileIO
from neve.server.config import StsVending, load_config
from neve.server.credentials import CredentialVendor
from restserver import NeveServer
from s3server import ACCESS_KEY, REGION, SECRET_KEY, S3Warehouse

pytestmark = pytest.mark.rest

ROLE = "arn:aws:iam::123456789012:role/neve-tables"
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
SIGNING_KEY = "vended-test-signing-key-" + "y" * 32
PRINCIPALS = {
    "admin": {"secret": "admin-secret", "roles": ["admin"]},
    "reader": {"secret": "reader-secret", "roles": ["reader"]},
}
DELEGATION = {"X-Iceberg-Access-Delegation": "vended-credentials"}
#: The operations that write an object (pyiceberg uploads in parts).
WRITES = {"PUT", "PUT_PART", "MPU_CREATE", "MPU_COMPLETE"}


def _config(wh: S3Warehouse) -> dict[str, Any]:
    endpoint = wh.server.endpoint
    return {
        "catalog": {"properties": wh.properties},  # the server's own keys, for metadata
        "token": {"signing-key": SIGNING_KEY},
        "principals": PRINCIPALS,
        "roles": {"admin": ["manage on catalog *"], "reader": ["read on namespace db"]},
        "storage-credentials": [
            {
                "prefix": f"s3://{wh.bucket}/",
                "config": {"s3.endpoint": endpoint, "s3.path-style-access": "true"},
                "sts": {
                    "role-arn": ROLE,
                    "region": REGION,
                    "endpoint": endpoint,
                    "access-key-id": ACCESS_KEY,
                    "secret-access-key": SECRET_KEY,
                    "duration-seconds": 900,
                },
            }
        ],
    }


@pytest.fixture
def served(tmp_path: Path, s3_warehouse: S3Warehouse) -> Iterator[NeveServer]:
    """``neve serve`` vending keys for ``s3_warehouse``, whose test server refuses what
    a session's policy does not allow."""
    s3_warehouse.settings(session_policies=True)
    with NeveServer.start(
        tmp_path / "server", config=_config(s3_warehouse), warehouse=s3_warehouse.uri
    ) as server:
        yield server


def _token(server: NeveServer, who: str) -> dict[str, str]:
    resp = httpx.post(
        f"{server.url}/v1/oauth/tokens",
        data={
            "grant_type": "client_credentials",
            "client_id": who,
            "client_secret": PRINCIPALS[who]["secret"],
        },
    )
    assert resp.status_code == 200, resp.text
    return {"Authorization": f"Bearer {resp.json()['access_token']}"}


def _session(wh: S3Warehouse, access_key: str) -> dict[str, Any]:
    found = [s for s in wh.server.sts_sessions() if s["access_key"] == access_key]
    assert len(found) == 1, access_key
    return found[0]


def _vended(body: dict[str, Any], location: str) -> dict[str, str]:
    """The vended credential of a load-table or credentials answer (prefix: the table)."""
    creds = [c for c in body["storage-credentials"] if c["prefix"] == location]
    assert len(creds) == 1, body["storage-credentials"]
    config: dict[str, str] = creds[0]["config"]
    return config


def _action_and_resource(entry: dict[str, Any], bucket: str) -> tuple[str, str]:
    op = entry["op"]
    if op == "LIST":
        return "s3:ListBucket", f"arn:aws:s3:::{bucket}"
    action = {
        "GET": "s3:GetObject",
        "HEAD": "s3:GetObject",
        "PUT": "s3:PutObject",
        "PUT_PART": "s3:PutObject",
        "MPU_CREATE": "s3:PutObject",
        "MPU_COMPLETE": "s3:PutObject",
        "MPU_ABORT": "s3:AbortMultipartUpload",
        "DELETE": "s3:DeleteObject",
        "DELETE_MULTI": "s3:DeleteObject",
    }[op]
    return action, f"arn:aws:s3:::{bucket}/{entry['key']}"


def _check_in_scope(wh: S3Warehouse, access_key: str, location: str) -> int:
    """Every request made with ``access_key`` is allowed by its session policy (moto's
    evaluator for actions and resources; the ``s3:prefix`` of listings against the
    policy's ``StringLike`` patterns); returns how many there were."""
    policy = json.loads(_session(wh, access_key)["policy"])
    (listing,) = [s for s in policy["Statement"] if s["Action"] == "s3:ListBucket"]
    patterns = listing["Condition"]["StringLike"]["s3:prefix"]
    used = [e for e in wh.log() if e.get("access_key") == access_key]
    for entry in used:
        action, resource = _action_and_resource(entry, wh.bucket)
        if entry["op"] == "DELETE_MULTI":
            continue  # the keys are in the body; the deleted files are checked below
        assert wh.server.sts_evaluate(access_key, action, resource) == "PERMITTED", entry
        if entry["op"] == "LIST":
            assert any(fnmatch.fnmatchcase(entry["key"], p) for p in patterns), entry
        else:
            assert entry["key"].startswith(location.split("/", 3)[3] + "/"), entry
    return len(used)


def test_pyiceberg_writes_and_reads_with_credentials_scoped_to_its_table(
    served: NeveServer, s3_warehouse: S3Warehouse
) -> None:
    py = PyRest(
        "neve",
        uri=served.url,
        credential="admin:admin-secret",
        **{"header.X-Iceberg-Access-Delegation": "vended-credentials"},
    )
    py.create_namespace("db")
    table = py.create_table("db.t", schema=SCHEMA)
    other = py.create_table("db.other", schema=SCHEMA)
    rows = pa.table({"id": [1, 2, 3], "s": ["a", None, "ü"]}, schema=SCHEMA)
    s3_warehouse.clear_log()
    table.append(rows)
    table.append(rows)
    got = py.load_table("db.t").scan().to_arrow().sort_by("id").to_pylist()
    assert got == sorted(rows.to_pylist() * 2, key=lambda r: r["id"])
    body = httpx.get(
        f"{served.url}/v1/namespaces/db/tables/t",
        headers={**_token(served, "admin"), **DELEGATION},
    ).json()
    vended = _vended(body, table.location())
    key = vended["s3.access-key-id"]
    assert key.startswith("ASIA") and key != ACCESS_KEY
    assert {"s3.secret-access-key", "s3.session-token", "s3.session-token-expires-at-ms"} <= set(
        vended
    )
    assert body["config"]["s3.access-key-id"] == key  # for clients that read only config
    # pyiceberg signed its data, manifests and manifest lists with the vended key
    written = [e for e in s3_warehouse.log() if e["op"] in WRITES]
    data = [e for e in written if not e["key"].endswith(".metadata.json")]
    assert data and {e["access_key"] for e in data} == {key}
    assert {e["access_key"] for e in written if e["key"].endswith(".metadata.json")} == {
        ACCESS_KEY  # the server writes metadata files with its own keys
    }
    assert _check_in_scope(s3_warehouse, key, table.location()) >= len(data)
    # the same key, on another table's objects: not allowed
    other_file = f"arn:aws:s3:::{s3_warehouse.bucket}/{other.location().split('/', 3)[3]}/x"
    for action in ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"):
        assert s3_warehouse.server.sts_evaluate(key, action, other_file) != "PERMITTED"
    policy = json.loads(_session(s3_warehouse, key)["policy"])
    prefix = table.location().split("/", 3)[3]
    assert policy["Statement"][0]["Resource"] == f"arn:aws:s3:::{s3_warehouse.bucket}/{prefix}/*"
    listing = policy["Statement"][1]
    assert listing["Condition"]["StringLike"]["s3:prefix"] == [f"{prefix}/", f"{prefix}/*"]
    assert not fnmatch.fnmatchcase(other.location().split("/", 3)[3] + "/", f"{prefix}/*")
    assert _session(s3_warehouse, key)["role_arn"] == ROLE


def test_neve_client_uses_and_refreshes_vended_credentials(
    served: NeveServer, s3_warehouse: S3Warehouse
) -> None:
    cat = neve.connect(served.url, credential="admin:admin-secret")
    assert not any(k.startswith("s3.access") for k in cat.properties)
    cat.create_namespace("db")
    s3_warehouse.clear_log()
    t = cat.create_table("db.t", SCHEMA)
    assert isinstance(t.io, VendedFileIO)
    key = t.io.properties["s3.access-key-id"]
    assert key.startswith("ASIA")
    t.append(pa.table({"id": [1, 2, 3], "s": ["x", "y", None]}, schema=SCHEMA))
    t.delete("id = 2")
    fresh = cat.load_table("db.t")
    assert fresh.io is t.io  # the same credentials: the same clients
    assert sorted(fresh.scan().to_arrow().column("id").to_pylist()) == [1, 3]
    puts = [e for e in s3_warehouse.log() if e["op"] in WRITES]
    assert {e["access_key"] for e in puts if not e["key"].endswith(".metadata.json")} == {key}
    assert _check_in_scope(s3_warehouse, key, t.location) > 0
    # credentials near expiry are fetched again from the credentials endpoint
    t.io.expire_now()
    t.append(pa.table({"id": [4], "s": ["z"]}, schema=SCHEMA))
    assert t.io.refreshes == 1
    assert t.io.properties["s3.session-token"]
    assert sorted(cat.load_table("db.t").scan().to_arrow().column("id").to_pylist()) == [1, 3, 4]
    # a process gets the credentials of the moment, as a plain FileIO
    copy = pickle.loads(pickle.dumps(t.io))
    assert type(copy).__name__ == "FileIO" and copy.properties == t.io.properties


def test_a_reader_gets_read_only_credentials(served: NeveServer, s3_warehouse: S3Warehouse) -> None:
    admin = neve.connect(served.url, credential="admin:admin-secret")
    admin.create_namespace("db")
    t = admin.create_table("db.t", SCHEMA)
    t.append(pa.table({"id": [7], "s": ["r"]}, schema=SCHEMA))
    reader = neve.connect(served.url, credential="reader:reader-secret")
    rt = reader.load_table("db.t")
    assert rt.scan().to_arrow().column("id").to_pylist() == [7]
    key = rt.io.properties["s3.access-key-id"]
    assert key != t.io.properties["s3.access-key-id"]
    inside = f"arn:aws:s3:::{s3_warehouse.bucket}/{t.location.split('/', 3)[3]}/data/f.parquet"
    assert s3_warehouse.server.sts_evaluate(key, "s3:GetObject", inside) == "PERMITTED"
    for action in ("s3:PutObject", "s3:DeleteObject"):
        assert s3_warehouse.server.sts_evaluate(key, action, inside) != "PERMITTED"
    creds = httpx.get(
        f"{served.url}/v1/namespaces/db/tables/t/credentials", headers=_token(served, "reader")
    ).json()
    assert _vended(creds, t.location)["s3.access-key-id"] == key


def test_one_sts_call_per_table_under_a_load_storm(
    served: NeveServer, s3_warehouse: S3Warehouse
) -> None:
    cat = neve.connect(served.url, credential="admin:admin-secret")
    cat.create_namespace("db")
    s3_warehouse.server.clear_log("_sts")
    for name in ("a", "b"):
        cat.create_table(f"db.{name}", SCHEMA)  # vends the keys once
    headers = {**_token(served, "admin"), **DELEGATION}

    def load(name: str) -> str:
        body = httpx.get(f"{served.url}/v1/namespaces/db/tables/{name}", headers=headers).json()
        return _vended(body, body["metadata"]["location"])["s3.access-key-id"]

    with ThreadPoolExecutor(8) as pool:
        keys = list(pool.map(load, ["a"] * 24 + ["b"] * 8))
    assert len(set(keys[:24])) == 1 and len(set(keys[24:])) == 1 and keys[0] != keys[-1]
    calls = [e for e in s3_warehouse.server.log("_sts") if e["op"] == "AssumeRole"]
    assert len(calls) == 2  # one per table (at its creation), not one per load
    # without the delegation header no keys are vended and STS is not asked
    plain = httpx.get(f"{served.url}/v1/namespaces/db/tables/a", headers=_token(served, "admin"))
    assert "storage-credentials" not in plain.json()
    assert len(s3_warehouse.server.log("_sts")) == 2


def test_an_sts_failure_is_a_503_and_nothing_is_written(
    served: NeveServer, s3_warehouse: S3Warehouse
) -> None:
    cat = neve.connect(served.url, credential="admin:admin-secret")
    cat.create_namespace("db")
    headers = {**_token(served, "admin"), **DELEGATION}
    # created without asking for credentials, so the server has none for it yet
    made = httpx.post(
        f"{served.url}/v1/namespaces/db/tables",
        json={"name": "kept", "schema": {"type": "struct", "schema-id": 0, "fields": []}},
        headers=_token(served, "admin"),
    )
    assert made.status_code == 200 and "storage-credentials" not in made.json()
    s3_warehouse.clear_log()
    s3_warehouse.server.set_faults("_sts", 1.0, ["500"])
    try:
        resp = httpx.post(
            f"{served.url}/v1/namespaces/db/tables",
            json={"name": "new", "schema": {"type": "struct", "schema-id": 0, "fields": []}},
            headers=headers,
        )
        assert resp.status_code == 503, resp.text
        error = resp.json()["error"]
        assert error["type"] == "ServiceUnavailableException"
        assert "AssumeRole" in error["message"] and ROLE in error["message"]
        for path in ("db/tables/kept", "db/tables/kept/credentials"):
            got = httpx.get(f"{served.url}/v1/namespaces/{path}", headers=headers)
            assert got.status_code == 503, got.text
        with pytest.raises(CatalogBusyError, match="AssumeRole"):
            cat.create_table("db.other", SCHEMA)
    finally:
        s3_warehouse.server.clear_faults("_sts")
    assert not cat.table_exists("db.new") and not cat.table_exists("db.other")
    assert [e for e in s3_warehouse.log() if e["op"] in WRITES] == []
    assert cat.load_table("db.kept").scan().to_arrow().num_rows == 0  # STS back: fine


def test_sts_config_is_checked(tmp_path: Path) -> None:
    def config(sts: dict[str, Any], prefix: str = "s3://b/wh/") -> Path:
        path = tmp_path / f"{uuid.uuid4().hex}.yaml"
        entry = {"prefix": prefix, "sts": sts}
        path.write_text(json.dumps({"storage-credentials": [entry]}))
        return path

    good = {"role-arn": ROLE, "region": REGION}
    loaded = load_config(config(good), uri="sqlite://", warehouse="s3://b/wh")
    assert loaded.vended_credentials[0].role_arn == ROLE
    assert loaded.vended_credentials[0].duration_s == 3600
    for bad, prefix, words in [
        ({"region": REGION}, "s3://b/wh/", "role-arn"),
        ({**good, "duration-seconds": 60}, "s3://b/wh/", "900..43200"),
        ({**good, "role": "x"}, "s3://b/wh/", "unknown keys"),
        (good, "/srv/warehouse/", "s3://"),
        ({**good, "session-name": "a b"}, "s3://b/wh/", "session-name"),
    ]:
        with pytest.raises(ValidationError, match=words):
            load_config(config(bad, prefix), uri="sqlite://", warehouse="s3://b/wh")


def test_vended_keys_are_refused_outside_their_table(
    served: NeveServer, s3_warehouse: S3Warehouse
) -> None:
    cat = neve.connect(served.url, credential="admin:admin-secret")
    cat.create_namespace("db")
    rows = pa.table({"id": [1, 2], "s": ["p", "q"]}, schema=SCHEMA)
    t, t2 = cat.create_table("db.t", SCHEMA), cat.create_table("db.t2", SCHEMA)
    t.append(rows)
    t2.append(rows)
    key = t.io.properties["s3.access-key-id"]
    io = FileIO(dict(t.io.properties))  # only db.t's vended keys
    assert io.read_bytes(t.metadata_location)
    assert io.list_files(t.location)
    bucket_root = f"s3://{s3_warehouse.bucket}"
    s3_warehouse.clear_log()
    refused: list[Any] = [
        lambda: io.read_bytes(t2.metadata_location),
        lambda: io.write_bytes(f"{t2.location}/data/intruder.parquet", b"x"),
        lambda: io.write_bytes(f"{bucket_root}/elsewhere.bin", b"x"),
        lambda: io.delete(t2.metadata_location),
        lambda: io.list_files(t2.location),
        lambda: io.list_files(f"{bucket_root}/wh"),
    ]
    for attempt in refused:
        with pytest.raises(NeveIOError):
            attempt()
    log = s3_warehouse.log()
    assert log and all(e["access_key"] == key and e["status"] == 403 for e in log), log
    assert {e["op"] for e in log} == {"GET", "PUT", "DELETE_MULTI", "LIST"}
    # db.t2 is untouched, and pyiceberg's FileIO with db.t's keys is refused there too
    assert sorted(cat.load_table("db.t2").scan().to_arrow().column("id").to_pylist()) == [1, 2]
    py = PyRest("neve", uri=served.url, credential="admin:admin-secret")
    py_t = py.load_table("db.t")
    assert py_t.io.properties["s3.access-key-id"] == key
    with pytest.raises(OSError):
        py_t.io.new_input(t2.metadata_location).open().read()
    assert py_t.io.new_input(t.metadata_location).open().read()


def test_no_table_may_nest_in_another_tables_location(
    served: NeveServer, s3_warehouse: S3Warehouse
) -> None:
    """Vended keys reach all of their table's location: a table created or registered
    inside another's location, around it, or at it would get keys to the other's files."""
    cat = neve.connect(served.url, credential="admin:admin-secret")
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(pa.table({"id": [1], "s": ["p"]}, schema=SCHEMA))
    headers = {**_token(served, "admin"), **DELEGATION}
    empty = {"type": "struct", "schema-id": 0, "fields": []}
    s3_warehouse.clear_log()
    for name, location in (
        ("inside", f"{t.location}/data/inner"),
        ("around", t.location.rsplit("/", 1)[0]),
        ("same", f"{t.location}/"),
    ):
        resp = httpx.post(
            f"{served.url}/v1/namespaces/db/tables",
            json={"name": name, "schema": empty, "location": location},
            headers=headers,
        )
        assert resp.status_code == 403, resp.text
        message = resp.json()["error"]["message"]
        assert "overlaps table db.t" in message and "a location of its own" in message
        assert not cat.table_exists(f"db.{name}")
    registered = httpx.post(
        f"{served.url}/v1/namespaces/db/register",
        json={"name": "twin", "metadata-location": t.metadata_location},
        headers=headers,
    )
    assert registered.status_code == 403, registered.text
    assert not cat.table_exists("db.twin")
    assert [e for e in s3_warehouse.log() if e["op"] in WRITES] == []
    # a sibling whose name starts with the table's is not inside it
    sibling = httpx.post(
        f"{served.url}/v1/namespaces/db/tables",
        json={"name": "sibling", "schema": empty, "location": f"{t.location}-x"},
        headers=headers,
    )
    assert sibling.status_code == 200, sibling.text
    assert cat.load_table("db.t").scan().to_arrow().num_rows == 1


def test_the_server_renews_kept_keys_after_three_quarters_of_their_lifetime(
    s3_warehouse: S3Warehouse,
) -> None:
    now = [1_000_000.0]
    entry = StsVending(
        prefix=f"s3://{s3_warehouse.bucket}/",
        role_arn=ROLE,
        region=REGION,
        endpoint=s3_warehouse.server.endpoint,
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY,
        duration_s=900,
    )
    vendor = CredentialVendor((), (entry,), clock=lambda: now[0])
    location = f"s3://{s3_warehouse.bucket}/wh/db/t"

    def key() -> str:
        (cred,) = vendor.storage_credentials(location, vend=True, write=True)
        return str(cred["config"]["s3.access-key-id"])

    first = key()
    now[0] += 0.74 * 900
    assert key() == first  # still kept
    now[0] += 0.02 * 900
    second = key()
    assert second != first  # past three quarters of 900 s: a new session
    assert vendor.storage_credentials(location, vend=False, write=True) == []
    # Hadoop's s3a:// names the same bucket; the session is scoped the same way
    hadoop = f"s3a://{s3_warehouse.bucket}/wh/db/h"
    (cred,) = vendor.storage_credentials(hadoop, vend=True, write=False)
    assert cred["prefix"] == hadoop
    policy = json.loads(_session(s3_warehouse, cred["config"]["s3.access-key-id"])["policy"])
    assert policy["Statement"][0] == {
        "Sid": "TableObjects",
        "Effect": "Allow",
        "Action": ["s3:GetObject", "s3:GetObjectVersion"],
        "Resource": f"arn:aws:s3:::{s3_warehouse.bucket}/wh/db/h/*",
    }
    assert vendor.storage_credentials("s3://another-bucket/wh/t", vend=True, write=True) == []


def test_the_client_refreshes_before_expiry() -> None:
    now = [1_000.0]
    fetched: list[int] = []

    def refresh() -> dict[str, str]:
        fetched.append(1)
        expiry = int((now[0] + 900) * 1000)
        return {"s3.region": REGION, "s3.session-token-expires-at-ms": str(expiry)}

    first_expiry = int((now[0] + 900) * 1000)
    io = VendedFileIO(
        {"s3.region": REGION, "s3.session-token-expires-at-ms": str(first_expiry)},
        refresh,
        clock=lambda: now[0],
    )
    path = "s3://some-bucket/t/data/f.parquet"
    io.store(path)
    now[0] += 599  # 301 s left
    io.store(path)
    assert fetched == []
    now[0] += 2  # 299 s left: within five minutes of expiry
    io.store(path)
    assert fetched == [1] and io.refreshes == 1
    assert io.expires_at_ms == int((now[0] + 900) * 1000)
    # keys that came with 100 s left are refreshed halfway
    short = VendedFileIO(
        {"s3.session-token-expires-at-ms": str(int((now[0] + 100) * 1000))},
        refresh,
        clock=lambda: now[0],
    )
    now[0] += 49
    short.store(path)
    assert short.refreshes == 0
    now[0] += 2
    short.store(path)
    assert short.refreshes == 1
    # credentials without an expiry are never refreshed
    static = VendedFileIO({"s3.region": REGION}, refresh, clock=lambda: now[0])
    now[0] += 10**6
    static.store(path)
    assert static.refreshes == 0


def test_duckdb_reads_with_a_readers_vended_keys(
    served: NeveServer, s3_warehouse: S3Warehouse
) -> None:
    cat = neve.connect(served.url, credential="admin:admin-secret")
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(pa.table({"id": [1, 2, 3], "s": ["a", "é 🦆", None]}, schema=SCHEMA))
    t.delete("id = 2")
    s3_warehouse.clear_log()
    setup = [
        f"ATTACH 'neve' AS c (TYPE ICEBERG, ENDPOINT '{served.url}', "
        "CLIENT_ID 'reader', CLIENT_SECRET 'reader-secret')"
    ]
    got = duckdb_query("SELECT id, s FROM c.db.t ORDER BY id", setup=setup)
    assert got == [{"id": 1, "s": "a"}, {"id": 3, "s": None}]
    used = {e["access_key"] for e in s3_warehouse.log()}
    (key,) = used  # one key for every request DuckDB made, a reader's
    assert key.startswith("ASIA")
    policy = json.loads(_session(s3_warehouse, key)["policy"])
    assert policy["Statement"][0]["Action"] == ["s3:GetObject", "s3:GetObjectVersion"]
    assert _check_in_scope(s3_warehouse, key, t.location) > 0
