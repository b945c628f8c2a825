"""The compiled Avro reader of the columnar manifest decoder
(:mod:`neve.planning.manifest_columnar`): Avro files into Arrow tables, and the writer
schemas as it takes them.

The reader is polars-avro's native part (arrow-rs's Avro decoder), reached through
``polars_avro._avro_rs.AvroSource`` without the package's polars plugin, which costs
~2 ms a call: a private module, so the package is pinned to one minor version, and
callers treat any exception of :func:`read_arrow` as "decode with fastavro". The native
module is loaded from its file without running the package's ``__init__``, which
imports polars (~165 ms of every process's start) for the plugin neve does not use; the
module itself needs neither polars nor arro3 (it hands out Arrow C data)."""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import io
import json
import os
import sys
from collections.abc import Iterator
from functools import lru_cache
from types import ModuleType
from typing import Any

import pyarrow as pa

__all__ = ["read_arrow", "readable_schema"]

_NATIVE = "polars_avro._avro_rs"


def _native_module() -> ModuleType:
    """polars-avro's native module (whoever loads it first: this, or an import of the
    package), loaded from the package's folder without importing the package."""
    found = sys.modules.get(_NATIVE)
    if found is not None:
        return found
    package = importlib.util.find_spec("polars_avro")  # a top-level name: not imported
    folders = package.submodule_search_locations if package is not None else None
    for folder in folders or ():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_avro_rs" + suffix)
            if not os.path.exists(path):
                continue
            spec = importlib.util.spec_from_file_location(_NATIVE, path)
            if spec is None or spec.loader is None:
                continue
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules[_NATIVE] = module
            return module
    raise ImportError(f"polars-avro's native module {_NATIVE} is not installed")


AvroSource: Any = _native_module().AvroSource

#: Rows per record batch of the reader: a planning read is one batch.
_BATCH_ROWS = 1 << 20

#: Whether in-memory files can be made and opened by path (Linux with /proc).
_MEMFD = hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd")


def read_arrow(data: bytes) -> pa.Table:
    """The Avro file ``data`` (its schema one the reader takes, see
    :func:`readable_schema`) as an Arrow table; the reader's own exception if it cannot
    read it."""
    with _source(data) as source:
        reader = AvroSource([source], False, False)
        batches = [pa.record_batch(b) for b in reader.batch_iter(_BATCH_ROWS, None)]
    return pa.Table.from_batches(batches)


@contextlib.contextmanager
def _source(data: bytes) -> Iterator[Any]:
    """``data`` as a source of the reader. It reads a Python file through a 4 MiB
    buffer it zero-fills first (~2.5 ms while the process's heap is young; a file it
    opens itself it reads without): on Linux the bytes go to an in-memory file (memfd)
    it opens by its /proc path; elsewhere, a factory of Python files."""
    if not _MEMFD:
        yield lambda: contextlib.nullcontext(io.BytesIO(data))
        return
    fd = os.memfd_create("neve-manifest", os.MFD_CLOEXEC)
    try:
        with open(fd, "wb", closefd=False) as f:
            f.write(data)
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


def _readable(schema: Any, named: dict[str, Any], count: list[int]) -> Any:
    """``schema`` (parsed JSON) as the reader takes it: without field ``default``
    attributes (some readers reject some, such as Iceberg-Java's ``"default": 0``),
    with references to named types (``"uuid_fixed"`` a second time) replaced by a copy
    of the definition under a new name, and without fields whose type is a record of no
    fields (the partition of an unpartitioned table), which it cannot make a column of
    and which encode as nothing. None of these changes how values are encoded, so the
    blocks read the same."""
    if isinstance(schema, str):
        if schema in _PRIMITIVES or schema not in named:
            return schema
        found = named[schema]
        count[0] += 1
        return {**found, "name": f"{found['name']}_neve{count[0]}"}
    if isinstance(schema, list):
        return [_readable(v, named, count) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        k: _readable(v, named, count) if k in ("type", "items", "values", "fields") else v
        for k, v in schema.items()
        if k != "default"
    }
    name = schema.get("name")
    if schema.get("type") == "record":
        out["fields"] = [f for f in out.get("fields", []) if not _empty_record(f.get("type"))]
    if schema.get("type") in ("record", "fixed", "enum") and isinstance(name, str):
        named[name] = out
        namespace = schema.get("namespace")
        if namespace and "." not in name:
            named[f"{namespace}.{name}"] = out
    return out


def _empty_record(schema: Any) -> bool:
    """Whether ``schema`` (parsed JSON) is a record without fields."""
    return isinstance(schema, dict) and schema.get("type") == "record" and not schema.get("fields")


@lru_cache(maxsize=64)
def readable_schema(schema_text: str) -> str | None:
    """The writer schema rewritten for the reader, or None when it needs no rewrite."""
    schema = json.loads(schema_text)
    readable = _readable(schema, {}, [0])
    return None if readable == schema else json.dumps(readable)
