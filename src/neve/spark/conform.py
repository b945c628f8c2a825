"""Fitting a DataFrame to a table schema before a Spark write, by column name: safe
widening (int to long, float to double, decimal precision, date to timestamp), missing
optional columns and struct fields filled with nulls (or their write defaults), field
ids attached; a missing required column, an unknown column or an unsafe type raises
:class:`DataSchemaMismatchError`, and nulls in required columns fail the Spark job."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

from pyspark import SparkContext
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from neve.errors import (
    DataSchemaMismatchError,
    NeveError,
    ValidationError,
)
from neve.spark.expression import to_spark_literal
from neve.spark.schema import FIELD_ID_KEY, to_spark_type
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
)

__all__ = ["NULL_MARK", "check_write_schema", "conform", "field_column"]

#: marks the message of the error a null in a required column raises inside the job
NULL_MARK = "NEVE_REQUIRED_NULL"


_ACCEPTS: dict[type, tuple[type, ...]] = {
    BooleanType: (T.BooleanType,),
    IntegerType: (T.ByteType, T.ShortType, T.IntegerType),
    LongType: (T.ByteType, T.ShortType, T.IntegerType, T.LongType),
    FloatType: (T.FloatType,),
    DoubleType: (T.FloatType, T.DoubleType),
    DateType: (T.DateType,),
    TimestampType: (T.TimestampNTZType, T.DateType),
    TimestamptzType: (T.TimestampType,),
    StringType: (T.StringType, T.CharType, T.VarcharType),
    BinaryType: (T.BinaryType,),
    FixedType: (T.BinaryType,),
}

_HINTS: dict[type, str] = {
    TimestampType: "cast it with .cast('timestamp_ntz') (a zone-less local time)",
    TimestamptzType: "cast it with .cast('timestamp') (an instant)",
}


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _problems(got: T.DataType, want: IcebergType, path: str) -> list[str]:
    if isinstance(got, T.NullType):
        return []
    if isinstance(want, StructType):
        if not isinstance(got, T.StructType):
            return [f"{path!r} is {got.simpleString()}, the table has {want}"]
        return _struct_problems(got, want.fields, path + ".")
    if isinstance(want, ListType):
        if not isinstance(got, T.ArrayType):
            return [f"{path!r} is {got.simpleString()}, the table has {want}"]
        return _problems(got.elementType, want.element_type, f"{path}.element")
    if isinstance(want, MapType):
        if not isinstance(got, T.MapType):
            return [f"{path!r} is {got.simpleString()}, the table has {want}"]
        return _problems(got.keyType, want.key_type, f"{path}.key") + _problems(
            got.valueType, want.value_type, f"{path}.value"
        )
    if isinstance(want, DecimalType):
        if isinstance(got, T.DecimalType) and (
            got.scale == want.scale and got.precision <= want.precision
        ):
            return []
    elif isinstance(got, _ACCEPTS.get(type(want), ())):
        return []
    hint = _HINTS.get(type(want), f"cast it to {_spark_name(want)} first")
    return [
        f"{path!r} is {got.simpleString()}, which cannot be written to the table's {want} "
        f"without losing information ({hint})"
    ]


def _spark_name(t: IcebergType) -> str:
    try:
        return str(to_spark_type(t).simpleString())
    except NeveError:
        return str(t)


def _struct_problems(
    got: T.StructType, fields: Sequence[NestedField], prefix: str = ""
) -> list[str]:
    wanted = {f.name: f for f in fields}
    problems = []
    seen: dict[str, str] = {}
    for sf in got.fields:
        if sf.name.lower() in seen:
            problems.append(
                f"{prefix}{sf.name!r} and {prefix}{seen[sf.name.lower()]!r} differ only in "
                "case; Spark cannot tell them apart, rename one"
            )
        seen[sf.name.lower()] = sf.name
        f = wanted.get(sf.name)
        if f is None:
            near = [n for n in wanted if n.lower() == sf.name.lower()]
            hint = f" (did you mean {near[0]!r}? names are case-sensitive)" if near else ""
            problems.append(
                f"{prefix}{sf.name!r} is not a column of the table{hint}; drop it, or add "
                "it to the table with a schema update first"
            )
        else:
            problems += _problems(sf.dataType, f.field_type, prefix + sf.name)
    given = {sf.name for sf in got.fields}
    for f in fields:
        if f.name not in given and f.required and f.write_default is None:
            problems.append(
                f"required column {prefix}{f.name!r} is missing; add it, or make it "
                "optional in the table"
            )
    return problems


def check_write_schema(spark_schema: T.StructType, schema: Schema) -> None:
    """Check that rows of ``spark_schema`` can be written to a table of ``schema``:
    columns matched by name, types equal or safely widened, required columns present
    (their nulls are caught when the rows are written). Raises
    :class:`DataSchemaMismatchError` listing every problem."""
    problems = _struct_problems(spark_schema, schema.fields)
    if problems:
        raise DataSchemaMismatchError(
            "the DataFrame does not fit the table: "
            + "; ".join(problems)
            + f". Table columns: {schema.column_names}"
        )


def conform(df: DataFrame, schema: Schema, keep: Sequence[str] = ()) -> DataFrame:
    """``df`` with exactly the table's columns, types and field ids (checked by name;
    see the module docs), then the columns named in ``keep`` as they are (columns a
    writer uses but does not write). Raises :class:`DataSchemaMismatchError` listing
    every problem; nulls in required columns make the Spark job fail when it runs."""
    given = {sf.name: sf for sf in df.schema.fields if sf.name not in keep}
    check_write_schema(T.StructType(list(given.values())), schema)
    cols = []
    for f in schema.fields:
        sf = given.get(f.name)
        if sf is None:
            c = _null_check(_default(f), f, f.name, None)
        else:
            c = _fit(_column(df, f.name), sf.dataType, f, f.name, None)
        cols.append(_with_id(c, f))
    return df.select(*cols, *[_column(df, name) for name in keep])


# pyspark's column functions record the Python call site of every call for its error
# messages (a walk of the stack and several Py4J round trips, ~0.6 ms a call), which made
# fitting a 16-column DataFrame cost ~50 ms of every write: on classic sessions the two
# steps every column takes, its reference and its alias, go to the JVM directly.
# DataFrame.to(schema) would fit columns that need no cast in one call, but the field
# ids it sets do not survive Spark's optimizer: a column that came with another table's
# id showed the new one in the DataFrame's schema and was written with the old one.


def _column(df: DataFrame, name: str) -> Column:
    """The top-level column ``name`` of ``df``: one Py4J call on classic sessions."""
    jdf = getattr(df, "_jdf", None)
    classic = _classic_column()
    if jdf is None or classic is None:
        return F.col(_quote(name))
    return classic(jdf.col(_quote(name)))


def _with_id(c: Column, f: NestedField) -> Column:
    """``c`` named as ``f`` with its field id attached, in an alias Spark keeps (ids
    set on attributes alone vanish when Spark drops a no-op projection): one Py4J call
    on classic sessions, once the id's metadata is made."""
    jc = getattr(c, "_jc", None)
    classic = _classic_column()
    context = SparkContext._active_spark_context
    if jc is None or classic is None or context is None:
        return c.alias(f.name, metadata={FIELD_ID_KEY: f.field_id})
    return classic(getattr(jc, "as")(f.name, _id_metadata(context._jvm, f.field_id)))


@lru_cache(maxsize=4096)
def _id_metadata(jvm: Any, field_id: int) -> Any:
    """The JVM's column metadata holding ``field_id`` (immutable: made once per id)."""
    metadata = getattr(jvm, "org.apache.spark.sql.types.Metadata")
    return metadata.fromJson(json.dumps({FIELD_ID_KEY: field_id}))


@cache
def _classic_column() -> type[Column] | None:
    """pyspark's classic column class; None where only Spark Connect's client is
    installed."""
    try:
        # (classic sessions only: Spark Connect's client has no JVM and may lack it)
        from pyspark.sql.classic.column import Column as ClassicColumn
    except ImportError:
        return None
    return ClassicColumn


def _default(f: NestedField) -> Column:
    """What a write that omits ``f`` stores: its write default, else null (spec
    "Default values"; a required field without one is refused before this)."""
    spark_type = to_spark_type(f.field_type)
    if f.write_default is None:
        return F.lit(None).cast(spark_type)
    return to_spark_literal(f.write_default, f.field_type)


def _null_check(c: Column, f: NestedField, path: str, parent_valid: Column | None) -> Column:
    """A required field's value: the job fails on a null (one under a null parent
    struct is fine); the result is non-nullable for Spark, so the Parquet column is
    written REQUIRED, as Iceberg-Java writes it."""
    if not f.required:
        return c
    bad = c.isNull() if parent_valid is None else (c.isNull() & parent_valid)
    message = f"{NULL_MARK}: column {path!r} is required but a row has a null there"
    checked = F.when(bad, F.raise_error(F.lit(message))).otherwise(c)
    # never used: nulls either failed above or sit under a null struct
    return F.coalesce(checked, _zero(to_spark_type(f.field_type)))


def _zero(t: T.DataType) -> Column:
    """A non-null literal of Spark type ``t`` (Spark sees it cannot be null)."""
    if isinstance(t, T.BooleanType):
        return F.lit(False)
    if isinstance(t, (T.IntegerType, T.LongType, T.FloatType, T.DoubleType)):
        return F.lit(0).cast(t)
    if isinstance(t, T.DecimalType):
        text = "0" if t.scale == 0 else "0." + "0" * t.scale
        return F.expr(f"{text}BD").cast(t)  # decimal(s, s) widens without overflow
    if isinstance(t, T.DateType):
        return F.expr("DATE'1970-01-01'")
    if isinstance(t, T.TimestampNTZType):
        return F.expr("TIMESTAMP_NTZ'1970-01-01 00:00:00'")
    if isinstance(t, T.TimestampType):
        return F.expr("TIMESTAMP_LTZ'1970-01-01 00:00:00Z'")
    if isinstance(t, T.StringType):
        return F.lit("")
    if isinstance(t, T.BinaryType):
        return F.lit(bytearray())
    if isinstance(t, T.StructType):
        return F.struct(*[_zero(f.dataType).alias(f.name) for f in t.fields])
    if isinstance(t, (T.ArrayType, T.MapType)):
        empty = F.array() if isinstance(t, T.ArrayType) else F.create_map()
        return empty.cast(t)
    raise ValidationError(f"Spark type {t.simpleString()} is not supported for writing")


def _fit(
    c: Column, got: T.DataType, f: NestedField, path: str, parent_valid: Column | None
) -> Column:
    """``c`` (of Spark type ``got``) as a value of field ``f``."""
    want = f.field_type
    spark_want = to_spark_type(want)
    if isinstance(got, T.NullType):
        c = F.lit(None).cast(spark_want)
    elif isinstance(want, StructType):
        assert isinstance(got, T.StructType)
        c = _fit_struct(c, got, want, path, parent_valid)
    elif isinstance(want, ListType):
        assert isinstance(got, T.ArrayType)
        el = want.element_field
        if _needs_work(got.elementType, el):
            c = F.transform(c, lambda x: _fit(x, got.elementType, el, f"{path}.element", None))
    elif isinstance(want, MapType):
        assert isinstance(got, T.MapType)
        kf, vf = want.key_field, want.value_field
        if _needs_work(got.keyType, kf):
            c = F.transform_keys(c, lambda k, _v: _fit(k, got.keyType, kf, f"{path}.key", None))
        if _needs_work(got.valueType, vf):
            c = F.transform_values(
                c, lambda _k, v: _fit(v, got.valueType, vf, f"{path}.value", None)
            )
    else:
        if got != spark_want:
            c = c.cast(spark_want)
        if isinstance(want, FixedType):
            message = f"column {path!r} is fixed[{want.length}] but a value has another length"
            c = F.when(F.length(c) != F.lit(want.length), F.raise_error(F.lit(message))).otherwise(
                c
            )
    return _null_check(c, f, path, parent_valid)


def _needs_work(got: T.DataType, f: NestedField) -> bool:
    """Whether a value needs casting, filling or checking to become ``f``."""
    want = f.field_type
    if f.required or isinstance(want, StructType):
        return True  # null checks; struct fields carry field ids only when rebuilt
    if isinstance(want, ListType):
        return not isinstance(got, T.ArrayType) or _needs_work(got.elementType, want.element_field)
    if isinstance(want, MapType):
        return (
            not isinstance(got, T.MapType)
            or _needs_work(got.keyType, want.key_field)
            or _needs_work(got.valueType, want.value_field)
        )
    return isinstance(want, FixedType) or got != to_spark_type(want)


def _fit_struct(
    c: Column, got: T.StructType, want: StructType, path: str, parent_valid: Column | None
) -> Column:
    valid = c.isNotNull() if parent_valid is None else (c.isNotNull() & parent_valid)
    given = {sf.name: sf for sf in got.fields}
    children = []
    for child in want.fields:
        sf = given.get(child.name)
        child_path = f"{path}.{child.name}"
        if sf is None:
            value = _null_check(_default(child), child, child_path, valid)
        else:
            value = _fit(c.getField(child.name), sf.dataType, child, child_path, valid)
        children.append(_with_id(value, child))
    return F.when(c.isNull(), F.lit(None)).otherwise(F.struct(*children))


# -- partition columns, distribution and ordering -------------------------------------


def field_column(schema: Schema, field_id: int) -> Column:
    """The column of a (possibly nested) field, addressed by its current names."""
    ids = [field_id]
    parent = schema.parent_id(field_id)
    while parent is not None:
        ids.append(parent)
        parent = schema.parent_id(parent)
    ids.reverse()
    c = F.col(_quote(schema.find_field(ids[0]).name))
    for fid in ids[1:]:
        c = c.getField(schema.find_field(fid).name)
    return c
