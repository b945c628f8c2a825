"""Split Arrow data by partition: compute every partition field with its transform,
group rows by the resulting tuple, and name each group's directory as Iceberg-Java does
(``ts_day=2024-01-05/id_bucket=3``, names and values URL-encoded)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from neve.arrow.schema import arrow_to_values, to_arrow_type
from neve.arrow.transforms import transform_array
from neve.errors import SchemaError
from neve.spec.partition import PartitionField, PartitionSpec
from neve.spec.schema import Schema
from neve.spec.types import IcebergType, NestedType

__all__ = [
    "PartitionSlice",
    "partition_path",
    "partition_table",
    "partition_value_arrays",
    "source_array",
    "url_encode",
]


@dataclass(frozen=True)
class PartitionSlice:
    """The rows of one partition: its tuple (neve values), directory path and data."""

    partition: tuple[Any, ...]
    path: str
    table: pa.Table


def source_array(table: pa.Table, schema: Schema, source_id: int) -> pa.ChunkedArray:
    """The column of field ``source_id`` in ``table`` (a partition or sort source);
    nested struct fields are null where any enclosing struct is null."""
    name = schema.column_name(source_id)
    if name is None:
        raise SchemaError(
            f"the partition source column id {source_id} is not in the table schema "
            f"{schema.schema_id}; the partition spec does not fit this schema"
        )
    ids = [source_id]
    parent = schema.parent_id(source_id)
    while parent is not None:
        ids.append(parent)
        parent = schema.parent_id(parent)
    ids.reverse()
    top = schema.find_field(ids[0])
    arr: pa.ChunkedArray = table.column(top.name)
    t: IcebergType = top.field_type
    for child_id in ids[1:]:
        if not isinstance(t, NestedType):
            break
        index = next(i for i, c in enumerate(t.children) if c.field_id == child_id)
        arr = pc.struct_field(arr, [index])
        t = t.children[index].field_type
    return arr


def partition_value_arrays(
    table: pa.Table, schema: Schema, spec: PartitionSpec
) -> list[pa.ChunkedArray]:
    """One array of partition values per partition field, row-aligned with ``table``
    (which has the table's Arrow schema, as :func:`neve.arrow.conform.conform_table`
    gives)."""
    out = []
    for f in spec.fields:
        source_type = schema.find_type(f.source_id)
        src = source_array(table, schema, f.source_id)
        chunks = [transform_array(f.transform, source_type, c) for c in src.chunks]
        out.append(pa.chunked_array(chunks, type=chunks[0].type) if chunks else _empty(f, schema))
    return out


def _empty(f: PartitionField, schema: Schema) -> pa.ChunkedArray:
    source_type = schema.find_type(f.source_id)
    arr = transform_array(f.transform, source_type, pa.nulls(0, to_arrow_type(source_type)))
    return pa.chunked_array([arr])


def partition_table(table: pa.Table, schema: Schema, spec: PartitionSpec) -> list[PartitionSlice]:
    """The rows of ``table`` grouped by partition tuple, row order kept within a group.

    An unpartitioned spec gives one slice with the empty tuple and path.
    """
    if not spec.fields:
        return [PartitionSlice((), "", table)]
    if table.num_rows == 0:
        return []
    arrays = partition_value_arrays(table, schema, spec)
    result_types = [f.transform.result_type(schema.find_type(f.source_id)) for f in spec.fields]
    keys = [f"p{i}" for i in range(len(arrays))]
    n = table.num_rows
    row_index = pc.subtract(pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), n)), 1)
    key_table = pa.table({**dict(zip(keys, arrays, strict=True)), "__row": row_index})
    groups = key_table.group_by(keys, use_threads=False).aggregate([("__row", "list")])
    columns = [
        arrow_to_values(groups.column(k), t) for k, t in zip(keys, result_types, strict=True)
    ]
    rows = groups.column("__row_list")
    out = []
    for g in range(groups.num_rows):
        partition = tuple(col[g] for col in columns)
        part = table if groups.num_rows == 1 else table.take(rows[g].values)
        out.append(PartitionSlice(partition, partition_path(spec, schema, partition), part))
    return out


def partition_path(spec: PartitionSpec, schema: Schema, partition: Sequence[Any]) -> str:
    """The directory of a partition, ``name=value/...`` with human-readable values."""
    parts = []
    for f, value in zip(spec.fields, partition, strict=True):
        result_type = f.transform.result_type(schema.find_type(f.source_id))
        human = f.transform.to_human_string(result_type, value)
        parts.append(f"{url_encode(f.name)}={url_encode(human)}")
    return "/".join(parts)


_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-*_")


def url_encode(text: str) -> str:
    """``java.net.URLEncoder.encode(text, UTF-8)``: letters, digits and ``.-*_`` stay,
    a space becomes ``+``, every other UTF-8 byte becomes ``%XX``."""
    out = []
    for b in text.encode("utf-8"):
        if b in _SAFE:
            out.append(chr(b))
        elif b == 0x20:
            out.append("+")
        else:
            out.append(f"%{b:02X}")
    return "".join(out)
