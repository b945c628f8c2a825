"""Metadata for a new table: fresh field ids, partition spec and sort order from terms."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence

import pyarrow as pa

from neve.actions.update_sort_order import sort_order_from_terms
from neve.actions.update_spec import spec_from_terms
from neve.arrow.schema import from_arrow_schema
from neve.errors import SchemaError, UnsupportedFormatVersionError, ValidationError
from neve.spec.merge_engine import check_merge_properties
from neve.spec.partition import PARTITION_DATA_ID_START
from neve.spec.properties import split_reserved
from neve.spec.schema import Schema
from neve.spec.sort_order import UNSORTED, SortOrder
from neve.spec.table_metadata import TableMetadata
from neve.spec.types import IcebergType, ListType, MapType, NestedField, StructType
from neve.spec.versions import SUPPORTED_FORMAT_VERSIONS

__all__ = [
    "DEFAULT_FORMAT_VERSION",
    "assign_fresh_ids",
    "new_table_metadata",
    "to_schema",
    "with_primary_key",
]

DEFAULT_FORMAT_VERSION = 2
_ROW_LEVEL_OPS = ("delete", "update", "merge")


def to_schema(schema: Schema | pa.Schema) -> Schema:
    """A neve schema from a neve or pyarrow schema (non-nullable fields become required)."""
    if isinstance(schema, Schema):
        return schema
    if not isinstance(schema, pa.Schema):
        raise SchemaError(
            f"a table schema is a neve Schema or a pyarrow Schema, not "
            f"{type(schema).__name__}; e.g. pyarrow.schema([('id', pyarrow.int64())])"
        )
    return from_arrow_schema(schema)


def with_primary_key(schema: Schema, primary_key: Sequence[str]) -> Schema:
    """``schema`` with ``primary_key``'s columns (top-level or in required structs) as
    its identifier fields, made required."""
    if isinstance(primary_key, str) or not all(isinstance(n, str) for n in primary_key):
        raise ValidationError(
            f"primary_key is a list of column names, e.g. ['id'], not {primary_key!r}"
        )
    if not primary_key:
        return schema
    if len(set(primary_key)) != len(primary_key):
        raise ValidationError(f"primary_key names a column twice: {list(primary_key)}")
    ids = []
    for name in primary_key:
        f = schema.find_field_or_none(name)
        if f is None:
            raise SchemaError(
                f"primary key column {name!r} is not in the schema; columns: "
                f"{', '.join(x.name for x in schema.fields)}"
            )
        ids.append(f.field_id)
    top = {f.field_id for f in schema.fields}
    fields = [f.with_(required=True) if f.field_id in ids else f for f in schema.fields]
    nested = [i for i in ids if i not in top]
    if nested:
        raise SchemaError(
            f"primary key column {schema.column_name(nested[0])!r} is nested; declare it "
            "required in its struct and set identifier fields through update_schema()"
        )
    out = Schema(*fields, schema_id=schema.schema_id, identifier_field_ids=ids)
    out.validate_identifier_fields()
    return out


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
    format_version: int | None = None,
    primary_key: Sequence[str] = (),
) -> TableMetadata:
    """Metadata of a new table. The format version is ``format_version``, else the
    reserved property ``format-version``, else 2; the reserved properties are not stored
    (:mod:`neve.spec.properties`), and the others are checked.

    ``primary_key`` names the identifier fields (spec "Identifier Field IDs"); they are
    made required, as Paimon makes primary key columns NOT NULL, and must be primitive
    and not float or double. Tables of format version 2 or later get ``merge-on-read``
    as their ``write.{delete,update,merge}.mode`` unless the properties say otherwise,
    so every engine (Iceberg-Java too) changes rows with delete files rather than
    rewriting them."""
    props, from_property = split_reserved(properties if properties is not None else {})
    if format_version is not None and (
        isinstance(format_version, bool) or not isinstance(format_version, int)
    ):
        raise UnsupportedFormatVersionError(
            f"format_version is an integer (1, 2 or 3), not {format_version!r}"
        )
    if format_version is not None and from_property not in (None, format_version):
        raise ValidationError(
            f"format_version={format_version} and the property "
            f"format-version={from_property} disagree; give the version once"
        )
    version = format_version if format_version is not None else from_property
    if version is None:
        version = DEFAULT_FORMAT_VERSION
    if version not in SUPPORTED_FORMAT_VERSIONS:
        raise UnsupportedFormatVersionError(
            f"format version {version} is not supported; use 1, 2 (default) or 3"
        )
    format_version = version
    if format_version >= 2:
        props = {**{f"write.{op}.mode": "merge-on-read" for op in _ROW_LEVEL_OPS}, **props}
    fresh = assign_fresh_ids(with_primary_key(to_schema(schema), primary_key))
    spec = spec_from_terms(
        fresh, list(partition_by), spec_id=0, last_partition_id=PARTITION_DATA_ID_START - 1
    )
    check_merge_properties(props, fresh)
    order = sort_order_from_terms(fresh, list(sort_by)) if sort_by else UNSORTED
    orders: tuple[SortOrder, ...] = (UNSORTED,) if order.is_unsorted else (UNSORTED, order)
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
