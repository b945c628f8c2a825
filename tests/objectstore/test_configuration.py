"""Reaching an object store the ways users configure it: catalog properties in
``neve.connect``, the AWS environment variables alone, an AWS profile, neve's config
file, and the command's ``--property``. The test server refuses requests signed with
another access key, so each way must carry the credentials through."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

import neve
from neve.errors import NeveIOError
from s3server import ACCESS_KEY, SECRET_KEY, S3Warehouse

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])
NEVE = Path(sys.executable).with_name("neve")


def _roundtrip(cat: neve.Catalog) -> list[int]:
    cat.create_namespace_if_not_exists("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    return sorted(cat.load_table("db.t").scan().to_arrow().column("id").to_pylist())


@pytest.fixture
def locked(s3_warehouse: S3Warehouse) -> S3Warehouse:
    """The bucket answers only requests signed with the test access key."""
    s3_warehouse.settings(access_key=ACCESS_KEY)
    return s3_warehouse


def _clean_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in list(os.environ):
        if var.startswith("AWS_") and var not in (
            "AWS_EC2_METADATA_DISABLED",
            "AWS_METADATA_ENDPOINT",
        ):
            monkeypatch.delenv(var)


def test_wrong_key_is_refused_with_a_neve_error(locked: S3Warehouse, home: Path) -> None:
    props = {**locked.properties, "s3.access-key-id": "someone-else", "s3.max-attempts": "1"}
    with pytest.raises(Exception, match=r"SQL catalog|InvalidAccessKeyId|403") as err:
        neve.connect(locked.uri, **props)
    assert isinstance(err.value, neve.NeveError)
    # a SQL catalog with an s3 warehouse fails at the first write, typed
    cat = neve.connect(f"sqlite:///{home}/c.db", warehouse=locked.uri, **props)
    cat.create_namespace("db")
    with pytest.raises(NeveIOError):
        cat.create_table("db.t", SCHEMA)


def test_properties(locked: S3Warehouse) -> None:
    assert _roundtrip(neve.connect(locked.uri, **locked.properties)) == [1, 2, 3]


def test_environment_only(locked: S3Warehouse, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_aws_env(monkeypatch)
    for k, v in locked.env.items():
        monkeypatch.setenv(k, v)
    assert _roundtrip(neve.connect(locked.uri)) == [1, 2, 3]
    # the SQL catalog with an s3 warehouse takes the same settings
    sql = neve.connect(f"sqlite:///{home}/c.db", warehouse=f"s3://{locked.bucket}/sqlwh")
    assert _roundtrip(sql) == [1, 2, 3]


def test_aws_profile(locked: S3Warehouse, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_aws_env(monkeypatch)
    aws = home / ".aws"
    aws.mkdir()
    (aws / "credentials").write_text(
        f"[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n"
        f"[lake]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
    )
    (aws / "config").write_text(
        f"[profile lake]\nregion = us-east-1\nendpoint_url = {locked.server.endpoint}\n"
    )
    assert _roundtrip(neve.connect(locked.uri, **{"s3.profile-name": "lake"})) == [1, 2, 3]
    monkeypatch.setenv("AWS_PROFILE", "lake")
    assert sorted(
        neve.connect(locked.uri).load_table("db.t").scan().to_arrow().column("id").to_pylist()
    ) == [1, 2, 3]


def _neve(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "NEVE_"))}
    clean["AWS_EC2_METADATA_DISABLED"] = "true"
    return subprocess.run(
        [str(NEVE), *args],
        capture_output=True,
        text=True,
        env={**clean, "HOME": str(home), "COLUMNS": "200", **(env or {})},
        cwd=home,
        timeout=300,
        check=False,
    )


def test_config_file_and_command_line(locked: S3Warehouse, home: Path) -> None:
    config = home / ".config" / "neve" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(
        yaml.safe_dump({"catalogs": {"lake": {"uri": locked.uri, **locked.properties}}})
    )
    assert _roundtrip(neve.connect("lake")) == [1, 2, 3]
    done = _neve(home, "--catalog", "lake", "tables", "db")
    assert done.returncode == 0, done.stderr
    assert "db.t" in done.stdout
    # --property with --uri: tests/cli/test_cli_object_store.py
    # without the settings the command fails with one line naming the problem
    bad = _neve(
        home,
        "--uri",
        locked.uri,
        "-P",
        f"s3.endpoint={locked.server.endpoint}",
        "-P",
        "s3.access-key-id=x",
        "-P",
        "s3.secret-access-key=y",
        "-P",
        "s3.max-attempts=1",
        "tables",
        "db",
    )
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: ")
