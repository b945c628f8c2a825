"""Avro writer schemas as polars' Avro reader takes them (for the columnar manifest
decoder, :mod:`neve.planning.manifest_columnar`)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

__all__ = ["polars_schema"]

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


def _for_polars(schema: Any, named: dict[str, Any], count: list[int]) -> Any:
    """``schema`` (parsed JSON) as polars' Avro schema parser takes it: without field
    ``default`` attributes (it rejects some, such as Iceberg-Java's ``"default": 0``)
    and with references to named types (``"uuid_fixed"`` a second time) replaced by a
    copy of the definition under a new name (it cannot resolve references). Neither
    changes how values are encoded, so the blocks read the same."""
    if isinstance(schema, str):
        if schema in _PRIMITIVES or schema not in named:
            return schema
        count[0] += 1
        return {**named[schema], "name": f"{named[schema]['name']}_neve{count[0]}"}
    if isinstance(schema, list):
        return [_for_polars(v, named, count) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        k: _for_polars(v, named, count) if k in ("type", "items", "values", "fields") else v
        for k, v in schema.items()
        if k != "default"
    }
    name = schema.get("name")
    if schema.get("type") in ("record", "fixed", "enum") and isinstance(name, str):
        named[name] = out
        namespace = schema.get("namespace")
        if namespace and "." not in name:
            named[f"{namespace}.{name}"] = out
    return out


@lru_cache(maxsize=64)
def polars_schema(schema_text: str) -> str | None:
    """The writer schema rewritten for polars, or None when it needs no rewrite."""
    schema = json.loads(schema_text)
    readable = _for_polars(schema, {}, [0])
    return None if readable == schema else json.dumps(readable)
