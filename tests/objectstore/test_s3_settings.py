"""S3 settings as users write them (neve.io.s3): pyiceberg's and Iceberg-Java's property
names, the AWS environment variables and the AWS profile files, in that order; and what
pyarrow's and obstore's clients are given."""

from __future__ import annotations

from pathlib import Path

import pytest

from neve.errors import ValidationError
from neve.io.s3 import DEFAULT_MAX_ATTEMPTS, s3_settings


def _profiles(home: Path) -> dict[str, str]:
    aws = home / ".aws"
    aws.mkdir()
    (aws / "credentials").write_text(
        "[default]\naws_access_key_id = DEF\naws_secret_access_key = defsecret\n"
        "[lake]\naws_access_key_id = LAKE\naws_secret_access_key = lakesecret\n"
        "aws_session_token = laketoken\n"
    )
    (aws / "config").write_text(
        "[default]\nregion = eu-west-1\n"
        "[profile lake]\nregion = eu-north-1\nendpoint_url = http://lake.example:9000\n"
    )
    return {
        "AWS_SHARED_CREDENTIALS_FILE": str(aws / "credentials"),
        "AWS_CONFIG_FILE": str(aws / "config"),
    }


def test_properties_by_pyiceberg_and_java_names() -> None:
    s = s3_settings(
        {
            "s3.endpoint": "http://127.0.0.1:9000",
            "s3.access-key-id": "AK",
            "s3.secret-access-key": "SK",
            "s3.session-token": "TOK",
            "s3.region": "eu-central-1",
            "s3.path-style-access": "true",
            "s3.connect-timeout": "2.5",
            "s3.request-timeout": "30",
            "s3.max-attempts": "4",
        },
        env={},
    )
    assert s.pyarrow_options() == {
        "endpoint_override": "127.0.0.1:9000",
        "scheme": "http",
        "access_key": "AK",
        "secret_key": "SK",
        "session_token": "TOK",
        "region": "eu-central-1",
        "force_virtual_addressing": False,
        "connect_timeout": 2.5,
        "request_timeout": 30.0,
    }
    assert s.obstore_config() == {
        "endpoint": "http://127.0.0.1:9000",
        "access_key_id": "AK",
        "secret_access_key": "SK",
        "session_token": "TOK",
        "region": "eu-central-1",
        "virtual_hosted_style_request": False,
    }
    assert s.allow_http and s.max_attempts == 4
    # pyiceberg's client.* names and its virtual-addressing flag
    c = s3_settings(
        {
            "client.access-key-id": "CA",
            "client.secret-access-key": "CS",
            "client.region": "us-west-2",
            "s3.force-virtual-addressing": "true",
        },
        env={},
    )
    assert (c.access_key, c.secret_key, c.region, c.path_style) == ("CA", "CS", "us-west-2", False)
    assert c.obstore_config()["virtual_hosted_style_request"] is True
    assert s3_settings({}, env={}).max_attempts == DEFAULT_MAX_ATTEMPTS


def test_environment_then_profile(tmp_path: Path) -> None:
    files = _profiles(tmp_path)
    env = {
        **files,
        "AWS_ENDPOINT_URL": "http://env.example:1",
        "AWS_ACCESS_KEY_ID": "ENV",
        "AWS_SECRET_ACCESS_KEY": "envsecret",
    }
    s = s3_settings({}, env=env)
    # the environment wins over the default profile; the profile fills the region
    assert (s.endpoint, s.access_key, s.region) == ("http://env.example:1", "ENV", "eu-west-1")
    # AWS_PROFILE picks a profile; the environment still wins where it says something
    s = s3_settings({}, env={**env, "AWS_PROFILE": "lake"})
    assert (s.access_key, s.region, s.session_token) == ("ENV", "eu-north-1", "laketoken")
    # a profile named in the properties wins over the environment
    s = s3_settings({"s3.profile-name": "lake"}, env=env)
    assert (s.endpoint, s.access_key, s.secret_key) == (
        "http://lake.example:9000",
        "LAKE",
        "lakesecret",
    )
    # properties win over everything
    s = s3_settings(
        {"s3.profile-name": "lake", "s3.access-key-id": "P", "s3.secret-access-key": "Q"}, env=env
    )
    assert (s.access_key, s.secret_key) == ("P", "Q")
    # only the files: the default profile
    s = s3_settings({}, env=files)
    assert (s.access_key, s.region, s.endpoint) == ("DEF", "eu-west-1", None)
    # AWS_ENDPOINT_URL_S3 wins over AWS_ENDPOINT_URL; a bare host means https
    s = s3_settings({}, env={"AWS_ENDPOINT_URL_S3": "s3.example", "AWS_ENDPOINT_URL": "x"})
    assert s.endpoint == "https://s3.example" and not s.allow_http


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"s3.access-key-id": "A"}, "without its secret"),
        ({"s3.path-style-access": "maybe"}, "true or false"),
        ({"s3.connect-timeout": "-1"}, "seconds"),
        ({"s3.max-attempts": "0"}, "integer >= 1"),
        ({"s3.conditional-put": "sometimes"}, "auto, true or false"),
    ],
)
def test_bad_settings(props: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        s3_settings(props, env={})


def test_anonymous() -> None:
    s = s3_settings(
        {"s3.anonymous": "true", "s3.access-key-id": "A", "s3.secret-access-key": "B"}, env={}
    )
    assert s.pyarrow_options() == {"anonymous": True}
    assert s.obstore_config()["skip_signature"] is True
