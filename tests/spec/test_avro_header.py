"""neve.spec.avro_container.read_header parses the header of an Avro container file
itself (planning reads one per manifest): it must agree with fastavro's reader on
every file fastavro writes (any metadata, codecs, empty files), and reject what is not
a whole header with the errors readers expect."""

from __future__ import annotations

import io
import os
from pathlib import Path

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budget import examples
from neve.spec.avro_container import read_header

_SCHEMA = {"type": "record", "name": "r", "fields": [{"name": "x", "type": "long"}]}
_FIXTURES = Path(os.environ.get("NEVE_FIXTURES", "/work/shared/fixtures"))


def _fastavro_header(data: bytes) -> tuple[dict[str, bytes], bytes]:
    reader = fastavro.reader(io.BytesIO(data))
    meta = {k: v.encode("utf-8") if isinstance(v, str) else v for k, v in reader.metadata.items()}
    return meta, reader._header["sync"]


@settings(max_examples=examples(50, 500))
@given(
    meta=st.dictionaries(
        st.text(min_size=1, max_size=20).filter(lambda k: not k.startswith("avro.")),
        st.text(max_size=300),
        max_size=12,
    ),
    rows=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=5),
    codec=st.sampled_from(["null", "deflate"]),
)
def test_header_equals_fastavro(meta: dict[str, str], rows: list[int], codec: str) -> None:
    out = io.BytesIO()
    fastavro.writer(out, _SCHEMA, [{"x": x} for x in rows], codec=codec, metadata=meta)
    data = out.getvalue()
    header = read_header(data)
    expected_meta, sync = _fastavro_header(data)
    assert header.meta == expected_meta
    assert header.sync == sync
    assert header.metadata() == {k: v.decode() for k, v in expected_meta.items()}
    # the first block starts right after the header: fastavro reads the rows from there
    assert data[header.end - 16 : header.end] == sync
    body = data[header.end :]
    assert not rows or len(body) > 16
    for cut in (0, 3, 5, header.end // 2, header.end - 1):
        with pytest.raises((ValueError, EOFError)):
            read_header(data[:cut])


def test_headers_of_files_other_writers_wrote() -> None:
    """Manifests and manifest lists Iceberg-Java wrote (the shared fixtures)."""
    files = sorted(_FIXTURES.rglob("*.avro"))
    assert len(files) >= 3, f"expected the Avro files of the fixtures under {_FIXTURES}"
    for path in files:
        data = path.read_bytes()
        header = read_header(data)
        assert (header.meta, header.sync) == _fastavro_header(data), path


def test_not_avro() -> None:
    with pytest.raises(ValueError, match="bad magic"):
        read_header(b"PAR1" + bytes(40))
