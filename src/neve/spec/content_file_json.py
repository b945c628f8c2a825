"""The REST catalog's JSON form of data and delete files (the spec's ``ContentFile``,
``DataFile``, ``PositionDeleteFile`` and ``EqualityDeleteFile``), as server-side scan
planning returns them.

Partition values and column bounds are given in the JSON single-value form of their
types (spec "JSON single-value serialization", :func:`neve.spec.values.to_json`);
counts and bounds are the spec's parallel ``keys``/``values`` arrays. Bounds of columns
the schema does not know (dropped columns) are left out, as are bounds of nested types.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from neve.errors import ValidationError
from neve.spec.manifest import DataFile, DataFileContent, FileFormat
from neve.spec.schema import Schema
from neve.spec.types import PrimitiveType, StructType
from neve.spec.values import from_bytes, from_json, to_bytes, to_json

__all__ = ["content_file_from_json", "content_file_to_json", "partition_to_json"]

_CONTENT = {
    DataFileContent.DATA: "data",
    DataFileContent.POSITION_DELETES: "position-deletes",
    DataFileContent.EQUALITY_DELETES: "equality-deletes",
}
_CONTENT_BY_NAME = {v: k for k, v in _CONTENT.items()}


def _counts(
    values: Mapping[int, int] | None, only: Collection[int] | None
) -> dict[str, list[int]] | None:
    if values is None or (only is not None and not only):
        return None
    keys = sorted(k for k in values if only is None or k in only)
    return {"keys": keys, "values": [int(values[k]) for k in keys]}


def _bounds(
    values: Mapping[int, bytes] | None, schema: Schema, only: Collection[int] | None
) -> dict[str, list[Any]] | None:
    if values is None or (only is not None and not only):
        return None
    keys, out = [], []
    for field_id in sorted(k for k in values if only is None or k in only):
        field = schema.find_field_or_none(field_id)
        if field is None or not isinstance(field.field_type, PrimitiveType):
            continue
        keys.append(field_id)
        out.append(to_json(field.field_type, from_bytes(field.field_type, values[field_id])))
    return {"keys": keys, "values": out}


def partition_to_json(partition: tuple[Any, ...], partition_type: StructType) -> list[Any]:
    """A partition tuple as the list of JSON single values the protocol gives."""
    return [
        to_json(field.field_type, value)
        for field, value in zip(partition_type.fields, partition, strict=True)
    ]


def content_file_to_json(
    f: DataFile,
    partition_type: StructType,
    schema: Schema,
    *,
    stats: Collection[int] | None = None,
    partition: list[Any] | None = None,
) -> dict[str, Any]:
    """A data or delete file as the REST protocol gives it; ``partition_type`` is the
    partition type of the file's spec, ``schema`` the schema its bounds are read with.
    ``stats`` limits the column metrics to those field ids (None: all of them);
    ``partition`` is the partition's JSON when the caller has it already."""
    out: dict[str, Any] = {
        "content": _CONTENT[f.content],
        "file-path": f.file_path,
        "file-format": f.file_format.value.lower(),
        "spec-id": f.spec_id,
        "partition": partition
        if partition is not None
        else partition_to_json(f.partition, partition_type),
        "file-size-in-bytes": f.file_size_in_bytes,
        "record-count": f.record_count,
    }
    optional: dict[str, Any] = {
        "key-metadata": f.key_metadata.hex().upper() if f.key_metadata is not None else None,
        "split-offsets": list(f.split_offsets) if f.split_offsets is not None else None,
        "sort-order-id": f.sort_order_id,
        "first-row-id": f.first_row_id,
        "column-sizes": _counts(f.column_sizes, stats),
        "value-counts": _counts(f.value_counts, stats),
        "null-value-counts": _counts(f.null_value_counts, stats),
        "nan-value-counts": _counts(f.nan_value_counts, stats),
        "lower-bounds": _bounds(f.lower_bounds, schema, stats),
        "upper-bounds": _bounds(f.upper_bounds, schema, stats),
        "equality-ids": list(f.equality_ids) if f.equality_ids is not None else None,
        "referenced-data-file": f.referenced_data_file,
        "content-offset": f.content_offset,
        "content-size-in-bytes": f.content_size_in_bytes,
    }
    out.update({k: v for k, v in optional.items() if v is not None})
    return out


def _pairs(data: Mapping[str, Any], key: str) -> list[tuple[int, Any]] | None:
    raw = data.get(key)
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ValidationError(f"content file: {key!r} must be an object with keys and values")
    keys, values = raw.get("keys") or [], raw.get("values") or []
    if not isinstance(keys, list) or not isinstance(values, list) or len(keys) != len(values):
        raise ValidationError(f"content file: {key!r} needs keys and values of one length")
    return list(zip(keys, values, strict=True))


def _count_map(data: Mapping[str, Any], key: str) -> dict[int, int] | None:
    pairs = _pairs(data, key)
    return None if pairs is None else {int(k): int(v) for k, v in pairs}


def _bound_map(data: Mapping[str, Any], key: str, schema: Schema) -> dict[int, bytes] | None:
    pairs = _pairs(data, key)
    if pairs is None:
        return None
    out: dict[int, bytes] = {}
    for k, v in pairs:
        field = schema.find_field_or_none(int(k))
        if field is not None and isinstance(field.field_type, PrimitiveType):
            out[int(k)] = to_bytes(field.field_type, from_json(field.field_type, v))
    return out


def content_file_from_json(
    data: Mapping[str, Any], partition_type: StructType, schema: Schema
) -> DataFile:
    """Read a REST content file (inverse of :func:`content_file_to_json`)."""
    try:
        content = _CONTENT_BY_NAME[str(data["content"])]
        partition = data.get("partition") or []
        if len(partition) != len(partition_type.fields):
            raise ValidationError(
                f"content file {data.get('file-path')!r}: {len(partition)} partition values "
                f"for a spec of {len(partition_type.fields)} fields"
            )
        split = data.get("split-offsets")
        key = data.get("key-metadata")
        eq = data.get("equality-ids")
        return DataFile(
            file_path=str(data["file-path"]),
            file_format=FileFormat.parse(str(data["file-format"])),
            partition=tuple(
                from_json(f.field_type, v)
                for f, v in zip(partition_type.fields, partition, strict=True)
            ),
            record_count=int(data["record-count"]),
            file_size_in_bytes=int(data["file-size-in-bytes"]),
            content=content,
            column_sizes=_count_map(data, "column-sizes"),
            value_counts=_count_map(data, "value-counts"),
            null_value_counts=_count_map(data, "null-value-counts"),
            nan_value_counts=_count_map(data, "nan-value-counts"),
            lower_bounds=_bound_map(data, "lower-bounds", schema),
            upper_bounds=_bound_map(data, "upper-bounds", schema),
            key_metadata=bytes.fromhex(key) if key is not None else None,
            split_offsets=tuple(int(o) for o in split) if split is not None else None,
            equality_ids=tuple(int(i) for i in eq) if eq is not None else None,
            sort_order_id=data.get("sort-order-id"),
            first_row_id=data.get("first-row-id"),
            referenced_data_file=data.get("referenced-data-file"),
            content_offset=data.get("content-offset"),
            content_size_in_bytes=data.get("content-size-in-bytes"),
            spec_id=int(data["spec-id"]),
        )
    except ValidationError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise ValidationError(f"malformed content file in a REST response ({exc!r})") from exc
