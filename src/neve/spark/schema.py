"""Iceberg schemas as Spark schemas, field ids attached.

Spark matches Parquet columns by field id when ``spark.sql.parquet.fieldId.read.enabled``
is on and each StructField carries its id under the metadata key ``parquet.field.id``;
it writes those ids into the files it produces (``spark.sql.parquet.fieldId.write.enabled``,
on by default). List elements and map keys and values cannot carry metadata in Spark,
so they are matched by position, which is how Parquet lays them out anyway.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from neve.arrow.schema import from_arrow_schema
from neve.errors import SchemaError
from neve.spec.schema import Schema
from neve.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    UUIDType,
)

__all__ = [
    "FIELD_ID_KEY",
    "field_id_of",
    "from_spark_schema",
    "to_spark_field",
    "to_spark_schema",
    "to_spark_type",
]

#: StructField metadata key Spark reads and writes Parquet field ids under.
FIELD_ID_KEY = "parquet.field.id"

_SIMPLE: dict[type, T.DataType] = {
    BooleanType: T.BooleanType(),
    IntegerType: T.IntegerType(),
    LongType: T.LongType(),
    FloatType: T.FloatType(),
    DoubleType: T.DoubleType(),
    DateType: T.DateType(),
    TimestampType: T.TimestampNTZType(),
    TimestamptzType: T.TimestampType(),
    StringType: T.StringType(),
    BinaryType: T.BinaryType(),
    FixedType: T.BinaryType(),
}


def to_spark_type(t: IcebergType) -> T.DataType:
    """The Spark type of an Iceberg type.

    timestamp maps to TIMESTAMP_NTZ and timestamptz to TIMESTAMP (instants), as in
    Iceberg's own Spark integration; fixed maps to binary. time, uuid and the
    nanosecond timestamps have no Spark type that reads their Parquet encoding.
    """
    if isinstance(t, StructType):
        return T.StructType([to_spark_field(f) for f in t.fields])
    if isinstance(t, ListType):
        return T.ArrayType(to_spark_type(t.element_type), containsNull=not t.element_required)
    if isinstance(t, MapType):
        return T.MapType(
            to_spark_type(t.key_type),
            to_spark_type(t.value_type),
            valueContainsNull=not t.value_required,
        )
    if isinstance(t, DecimalType):
        return T.DecimalType(t.precision, t.scale)
    simple = _SIMPLE.get(type(t))
    if simple is None:
        hint = (
            " (read uuid columns with table.scan().to_arrow())" if isinstance(t, UUIDType) else ""
        )
        raise SchemaError(
            f"type {t} has no Spark representation{hint}; read such columns with "
            "table.scan().to_arrow() or change the column type"
        )
    return simple


def to_spark_field(f: NestedField) -> T.StructField:
    meta: dict[str, Any] = {FIELD_ID_KEY: f.field_id}
    if f.doc:
        meta["comment"] = f.doc
    return T.StructField(
        f.name, to_spark_type(f.field_type), nullable=not f.required, metadata=meta
    )


def to_spark_schema(schema: Schema) -> T.StructType:
    """A Spark schema whose fields carry Iceberg field ids."""
    return T.StructType([to_spark_field(f) for f in schema.fields])


def field_id_of(f: T.StructField) -> int | None:
    value = (f.metadata or {}).get(FIELD_ID_KEY)
    return int(value) if value is not None else None


def from_spark_schema(struct: T.StructType, *, format_version: int = 2) -> Schema:
    """An Iceberg schema for a Spark schema (for example ``df.schema``), with fresh field
    ids; non-nullable fields become required. Use it to create a table shaped like a
    DataFrame: ``catalog.create_table(name, from_spark_schema(df.schema), ...)``."""
    plain = T.StructType([_without_ids(f) for f in struct.fields])
    return from_arrow_schema(to_arrow_schema(plain, timezone="UTC"), format_version=format_version)


def _without_ids(f: T.StructField) -> T.StructField:
    dt = f.dataType
    if isinstance(dt, T.StructType):
        dt = T.StructType([_without_ids(c) for c in dt.fields])
    return T.StructField(f.name, dt, f.nullable)
