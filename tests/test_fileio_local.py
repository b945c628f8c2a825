"""FileIO on local paths: whole-file reads go through Python's own files, and say
what went wrong as pyarrow's streams did."""

from __future__ import annotations

from pathlib import Path

import pytest

from neve.errors import NeveIOError
from neve.io.fileio import FileIO


def test_read_bytes_of_a_plain_path_and_a_file_uri(tmp_path: Path) -> None:
    path = tmp_path / "a.avro"
    path.write_bytes(b"\x00\x01 manifest bytes")
    io = FileIO()
    assert io.read_bytes(str(path)) == b"\x00\x01 manifest bytes"
    assert io.read_bytes(f"file://{path}") == b"\x00\x01 manifest bytes"
    assert io.read_bytes(f"file:{path}") == b"\x00\x01 manifest bytes"


def test_read_bytes_of_a_missing_file_or_a_directory(tmp_path: Path) -> None:
    io = FileIO()
    with pytest.raises(NeveIOError, match="file not found"):
        io.read_bytes(str(tmp_path / "missing.avro"))
    with pytest.raises(NeveIOError, match="cannot read"):
        io.read_bytes(str(tmp_path))
