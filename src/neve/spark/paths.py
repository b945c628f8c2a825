"""The paths neve hands Spark and the paths Spark reports: local paths as ``file:``
URIs (so Spark opens and writes the files neve's FileIO sees, whatever Hadoop's default
file system is), glob characters escaped for reads, and data file paths as the
Hadoop-qualified URIs Spark shows in ``_metadata.file_path``."""

from __future__ import annotations

import os
import posixpath
import re
from urllib.parse import urlsplit

from neve.io.fileio import local_path

__all__ = ["spark_file_uri", "spark_input_path", "spark_output_path"]

# characters java.net.URI leaves unquoted in a path (besides letters, digits and
# non-ASCII characters that are neither spaces nor controls)
_URI_PATH_SAFE = frozenset("_-!.~'()*,;:$&+=/@")


def _quote_path(path: str) -> str:
    out = []
    for ch in path:
        if (ch.isascii() and (ch.isalnum() or ch in _URI_PATH_SAFE)) or (
            not ch.isascii() and ch.isprintable() and not ch.isspace()
        ):
            out.append(ch)
        else:
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8")))
    return "".join(out)


def _normalize(path: str) -> str:
    while "//" in path:
        path = path.replace("//", "/")
    norm = posixpath.normpath(path) if path else path
    return "/" + norm.lstrip("/") if path.startswith("/") else norm


_GLOB = re.compile(r"([\\{}\[\]*?])")


def spark_input_path(path: str) -> str:
    """The path handed to ``spark.read.parquet``: local paths as ``file:`` paths, so
    Spark opens the files neve's FileIO opens whatever Hadoop's default file system,
    and glob characters escaped (Spark expands globs in the paths it reads)."""
    if _is_local(path):
        path = "file:" + _normalize(os.path.abspath(local_path(path)))
    return _GLOB.sub(r"\\\1", path)


def _is_local(path: str) -> bool:
    if len(path) > 1 and path[1] == ":":
        return True
    return urlsplit(path).scheme in ("", "file")


def spark_file_uri(path: str) -> str:
    """The string Spark reports as ``_metadata.file_path`` for a data file path: a
    Hadoop-qualified URI (``file:/tmp/a%20b/x.parquet`` for ``/tmp/a b/x.parquet``)."""
    if _is_local(path):
        return "file:" + _quote_path(_normalize(os.path.abspath(local_path(path))))
    colon = path.index(":")
    scheme, rest = path[:colon], path[colon + 1 :]
    authority = ""
    if rest.startswith("//") and len(rest) > 2:
        end = rest.find("/", 2)
        end = len(rest) if end < 0 else end
        authority, rest = rest[2:end], rest[end:]
    prefix = f"{scheme}://{authority}" if authority else f"{scheme}:"
    return prefix + _quote_path(_normalize(rest))


def spark_output_path(path: str) -> str:
    """Local paths as ``file:`` URIs, so Spark writes where neve's FileIO looks
    whatever Hadoop's default file system is."""
    if path.startswith("/") or path.startswith("file:"):
        return "file:" + local_path(path)
    return path
