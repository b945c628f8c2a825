"""Metadata for a new table: fresh field ids, partition spec and sort order from terms."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from neve.errors import UnsupportedFormatVersionError
from neve.spec.partition import PARTITION_DATA_ID_START
from neve.spec.schema import Schema
from neve.spec.sort_order import UNSORTED, SortOrder
from neve.spec.table_metadata import SUPPORTED_FORMAT_VERSIONS, TableMetadata
from neve.spec.types import IcebergType, ListType, MapType, NestedField, StructType

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["assign_fresh_ids", "new_table_metadata", "to_schema"]


def to_schema(schema: Schema | pa.Schema) -> Schema:
    """A neve schema from a neve or pyarrow schema (non-nullable fields become required)."""
    if isinstance(schema, Schema):
        return schema
    from neve.arrow.schema import from_arrow_schema

    return from_arrow_schema(schema)


def assign_fresh_ids(schema: Schema) -> Schema:
    """Renumber field ids from 1 as Iceberg-Java does: each struct's fields first, then
    their children. Identifier fields follow their columns."""
    counter = [0]

    def next_id() -> int:
        counter[0] += 1
        return counter[0]

    def fresh_struct_fields(fields: Sequence[NestedField]) -> list[NestedField]:
        ids = [next_id() for _ in fields]
        return [
            f.with_(field_id=i, field_type=fresh_type(f.field_type))
            for f, i in zip(fields, ids, strict=False)
        ]

    def fresh_type(t: IcebergType) -> IcebergType:
        if isinstance(t, StructType):
            return StructType(*fresh_struct_fields(t.fields))
        if isinstance(t, ListType):
            eid = next_id()
            return ListType(eid, fresh_type(t.element_type), t.element_required)
        if isinstance(t, MapType):
            kid, vid = next_id(), next_id()
            return MapType(
                kid, fresh_type(t.key_type), vid, fresh_type(t.value_type), t.value_required
            )
        return t

    fields = fresh_struct_fields(schema.fields)
    fresh = Schema(*fields, schema_id=0)
    ident_names = [schema.column_name(i) for i in schema.identifier_field_ids]
    ident_ids = [fresh.find_field(n).field_id for n in ident_names if n is not None]
    out = Schema(*fields, schema_id=0, identifier_field_ids=ident_ids)
    out.validate_identifier_fields()
    return out


def new_table_metadata(
    schema: Schema | pa.Schema,
    *,
    partition_by: Sequence[str] = (),
    sort_by: Sequence[str] = (),
    location: str,
    properties: Mapping[str, str] | None = None,
    format_version: int = 2,
) -> TableMetadata:
    from neve.table.update_sort_order import sort_order_from_terms
    from neve.table.update_spec import spec_from_terms

    if format_version not in SUPPORTED_FORMAT_VERSIONS:
        raise UnsupportedFormatVersionError(
            f"format version {format_version} is not supported; use 1, 2 (default) or 3"
        )
    fresh = assign_fresh_ids(to_schema(schema))
    spec = spec_from_terms(
        fresh, list(partition_by), spec_id=0, last_partition_id=PARTITION_DATA_ID_START - 1
    )
    order = sort_order_from_terms(fresh, list(sort_by)) if sort_by else UNSORTED
    orders: tuple[SortOrder, ...] = (UNSORTED,) if order.is_unsorted else (UNSORTED, order)
    props = dict(properties or {})
    return TableMetadata(
        format_version=format_version,
        table_uuid=str(uuid.uuid4()),
        location=location,
        last_sequence_number=0,
        last_updated_ms=int(time.time() * 1000),
        last_column_id=fresh.highest_field_id,
        schemas=(fresh,),
        current_schema_id=0,
        partition_specs=(spec,),
        default_spec_id=0,
        last_partition_id=max(spec.last_assigned_field_id, PARTITION_DATA_ID_START - 1),
        sort_orders=orders,
        default_sort_order_id=order.order_id,
        properties=props,
        next_row_id=0 if format_version >= 3 else None,
    )
