"""Writing DataFrames to Iceberg tables with Spark: Spark writes Parquet natively,
executors describe the files, the driver commits once.

1. The DataFrame is fitted to the table schema by column name before anything runs:
   safe widening (int to long, float to double, decimal precision, date to
   timestamp), missing optional columns and struct fields filled with nulls; a missing
   required column, an unknown column or an unsafe type raises
   :class:`DataSchemaMismatchError`. Nulls in required columns fail the Spark job
   (and the write leaves nothing behind).
2. Each partition field becomes a hidden column holding a directory-safe form of its
   value (:func:`neve.spark.transforms.partition_key`); rows are distributed by
   ``write.distribution-mode`` (``none``, ``hash`` — the default for partitioned
   tables —, ``range`` — the default for sorted unpartitioned ones) and sorted within
   tasks by the hidden columns and the table's sort order.
3. ``df.write.partitionBy(<hidden columns>).parquet(<data dir>/<write id>)`` writes
   every table column into the files, with Iceberg field ids, the table's codec
   (``write.parquet.compression-codec``, zstd) and about
   ``write.target-file-size-bytes`` per file (as a row count estimated from the
   table's bytes per row).
4. Executors read the footers (and the float columns, for NaN counts and sign-aware
   bounds) and return the :class:`DataFile` of each file; partition tuples come from
   the directory names. The driver commits them in one transaction.

A failed job, a validation error or a lost commit removes the whole write directory.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from neve.errors import (
    CommitStateUnknownError,
    DataSchemaMismatchError,
    NeveError,
    NeveIOError,
    ValidationError,
)
from neve.expressions import BooleanExpression
from neve.io.fileio import FileIO, local_path
from neve.io.locations import LocationProvider
from neve.spark.schema import FIELD_ID_KEY, to_spark_type
from neve.spark.session import check_session
from neve.spark.transforms import decode_partition_key, partition_key, transform_column
from neve.spec.manifest import DataFile
from neve.spec.partition import PartitionSpec
from neve.spec.refs import MAIN_BRANCH
from neve.spec.schema import Schema
from neve.spec.sort_order import NullOrder, SortDirection, SortOrder
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

if TYPE_CHECKING:
    from neve.table.table import Table

__all__ = ["DISTRIBUTION_MODE", "WriteResult", "check_write_schema", "write", "write_files"]

DISTRIBUTION_MODE = "write.distribution-mode"
MODES = ("append", "overwrite", "overwrite-partitions")
_MiB = 1024 * 1024
#: marks the message of the error a null in a required column raises inside the job
_NULL_MARK = "NEVE_REQUIRED_NULL"


# -- public API -----------------------------------------------------------------------


def write_files(
    df: DataFrame, table: Table, *, spec: PartitionSpec | None = None
) -> list[DataFile]:
    """Write ``df`` as data files of ``table`` (its default spec, or ``spec``) and
    return them, uncommitted. Add them with a transaction (``add_files``,
    ``overwrite_files``, ``replace_partitions``); delete them if you do not."""
    return write_data(df, table, spec=spec).files


def write(
    df: DataFrame,
    table: Table,
    mode: str = "append",
    filter: str | BooleanExpression | None = None,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> None:
    """Write ``df`` to ``table`` and commit, as one snapshot.

    ``mode``: ``append``; ``overwrite`` replaces the rows matching ``filter`` (all
    rows when None; files matched partly are rewritten with Spark);
    ``overwrite-partitions`` replaces exactly the partitions the new rows fall into.
    """
    if mode not in MODES:
        raise ValidationError(f"unknown write mode {mode!r}; use one of {', '.join(MODES)}")
    if filter is not None and mode != "overwrite":
        raise ValidationError(f"a filter only applies to mode='overwrite', not {mode!r}")
    if mode == "overwrite":
        from neve.spark.rowlevel import overwrite

        overwrite(df, table, filter, branch=branch, snapshot_properties=snapshot_properties)
        return
    if mode == "overwrite-partitions":
        from neve.spark.rowlevel import overwrite_partitions

        overwrite_partitions(df, table, branch=branch, snapshot_properties=snapshot_properties)
        return
    result = write_data(df, table)
    with cleanup_on_failure(table.io, [result]):
        txn = table.transaction()
        txn.add_files(result.files, branch=branch, snapshot_properties=snapshot_properties)
        txn.commit()


# -- one Spark write ------------------------------------------------------------------


@dataclass(frozen=True)
class WriteResult:
    """The files one Spark job wrote, and the directory holding all of them."""

    directory: str
    files: list[DataFile]


class cleanup_on_failure:
    """Delete the write directories if the block fails (but not when the commit
    outcome is unknown: the files may be referenced by a commit that landed)."""

    def __init__(self, io: FileIO, results: Sequence[WriteResult | str]) -> None:
        self.io = io
        self.results = list(results)

    def add(self, result: WriteResult | str) -> None:
        self.results.append(result)

    def __enter__(self) -> cleanup_on_failure:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: Any, tb: Any) -> None:
        if exc_type is None or issubclass(exc_type, CommitStateUnknownError):
            return
        for r in self.results:
            delete_write_dir(self.io, r.directory if isinstance(r, WriteResult) else r)


def delete_write_dir(io: FileIO, directory: str) -> None:
    """Remove a write directory and everything in it; a failure to do so is left to
    orphan-file cleanup rather than hiding the error being raised."""
    with contextlib.suppress(NeveIOError):
        io.delete_dir(directory)


def write_data(
    df: DataFrame,
    table: Table,
    *,
    spec: PartitionSpec | None = None,
    directory: str | None = None,
    schema: Schema | None = None,
) -> WriteResult:
    """Run the Spark job writing ``df`` into a new directory under the table's data
    location; describe the files. Nothing is left behind when it fails. ``schema``
    (default: the table's) is the schema the files are written with, e.g. with the
    row lineage columns for rows a rewrite copies."""
    spark = df.sparkSession
    check_session(spark)
    md = table.metadata
    schema = schema if schema is not None else md.schema()
    spec = spec if spec is not None else md.spec()
    props = md.properties
    options = _write_options(props, table)
    conformed = conform(df, schema)  # raises before anything is written
    hidden = _hidden_columns(schema, spec, conformed.columns)
    data = conformed.select("*", *[c.alias(name) for name, c in hidden])
    data = _distribute(data, [n for n, _ in hidden], schema, spec, md.sort_order(), props)
    if directory is None:
        base = LocationProvider(md.location, props).data_location
        directory = f"{base}/{uuid.uuid4()}"
    io = table.io
    try:
        writer = data.write.mode("errorifexists")
        for key, value in options.items():
            writer = writer.option(key, value)
        if hidden:
            writer = writer.partitionBy(*[n for n, _ in hidden])
        writer.parquet(_spark_path(directory))
        files = describe_files(
            spark,
            io,
            directory,
            schema,
            spec,
            [n for n, _ in hidden],
            props,
            md.default_sort_order_id,
        )
    except BaseException as exc:
        delete_write_dir(io, directory)
        raise _translate(exc) from exc
    return WriteResult(directory, files)


def _translate(exc: BaseException) -> BaseException:
    text = str(exc)
    if _NULL_MARK in text:
        m = re.search(_NULL_MARK + r": ([^\n]*?)(?: SQLSTATE|\n|$)", text)
        detail = m.group(1).strip() if m else "a required column holds a null"
        return DataSchemaMismatchError(
            f"{detail}; nothing was written. Fill the nulls, or make the column optional "
            "in the table"
        )
    return exc


def _spark_path(path: str) -> str:
    """Local paths as ``file:`` URIs, so Spark writes where neve's FileIO looks
    whatever Hadoop's default file system is."""
    if path.startswith("/") or path.startswith("file:"):
        return "file:" + local_path(path)
    return path


# -- write options --------------------------------------------------------------------

_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "lz4": "lz4_raw",
    "uncompressed": "uncompressed",
    "none": "uncompressed",
}


def _positive_int(props: Mapping[str, str], key: str, default: int) -> int:
    raw = props.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(f"table property {key}={raw!r} must be an integer") from None
    if value <= 0:
        raise ValidationError(f"table property {key}={raw!r} must be positive")
    return value


def _write_options(props: Mapping[str, str], table: Table) -> dict[str, str]:
    codec = props.get("write.parquet.compression-codec", "zstd").lower()
    if codec not in _CODECS:
        raise ValidationError(
            f"write.parquet.compression-codec {codec!r} cannot be written with Spark; use "
            f"one of {', '.join(sorted(_CODECS))}"
        )
    target = _positive_int(props, "write.target-file-size-bytes", 512 * _MiB)
    options = {
        "compression": _CODECS[codec],
        "maxRecordsPerFile": str(max(1, int(target // _bytes_per_row(table)))),
        "parquet.block.size": str(
            _positive_int(props, "write.parquet.row-group-size-bytes", 128 * _MiB)
        ),
        "parquet.page.size": str(_positive_int(props, "write.parquet.page-size-bytes", _MiB)),
        "parquet.dictionary.page.size": str(
            _positive_int(props, "write.parquet.dict-size-bytes", 2 * _MiB)
        ),
    }
    level = props.get("write.parquet.compression-level")
    if level is not None and codec == "zstd":
        options["parquet.compression.codec.zstd.level"] = level
    return options


def _bytes_per_row(table: Table) -> float:
    """Compressed bytes per row: the table's own ratio when it has data, otherwise a
    guess from the column types."""
    snap = table.metadata.current_snapshot()
    if snap is not None:
        try:
            size = int(snap.summary.get("total-files-size", "0"))
            rows = int(snap.summary.get("total-records", "0"))
        except ValueError:
            size = rows = 0
        if size > 0 and rows > 0:
            return max(size / rows, 1.0)
    return max(sum(_width(f.field_type) for f in table.metadata.schema().fields) / 3, 1.0)


def _width(t: IcebergType) -> float:
    if isinstance(t, StructType):
        return sum(_width(f.field_type) for f in t.fields)
    if isinstance(t, ListType):
        return 4 * _width(t.element_type)
    if isinstance(t, MapType):
        return 4 * (_width(t.key_type) + _width(t.value_type))
    if isinstance(t, (StringType, BinaryType)):
        return 24
    if isinstance(t, FixedType):
        return t.length
    if isinstance(t, DecimalType):
        return 16 if t.precision > 18 else 8
    if isinstance(t, (BooleanType,)):
        return 1
    if isinstance(t, (IntegerType, FloatType, DateType)):
        return 4
    return 8


# -- fitting the DataFrame to the table -----------------------------------------------

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


def conform(df: DataFrame, schema: Schema) -> DataFrame:
    """``df`` with exactly the table's columns, types and field ids (checked by name;
    see the module docs). Raises :class:`DataSchemaMismatchError` listing every
    problem; nulls in required columns make the Spark job fail when it runs."""
    check_write_schema(df.schema, schema)
    given = {sf.name: sf for sf in df.schema.fields}
    cols = []
    for f in schema.fields:
        sf = given.get(f.name)
        if sf is None:
            c = _default(f)
        else:
            c = _fit(F.col(_quote(f.name)), sf.dataType, f, f.name, None)
        cols.append(_with_id(c, f))
    return df.select(*cols)


def _with_id(c: Column, f: NestedField) -> Column:
    """``c`` named as ``f`` with its field id attached, in an alias Spark keeps (ids
    set on attributes alone vanish when Spark drops a no-op projection)."""
    return c.alias(f.name, metadata={FIELD_ID_KEY: f.field_id})


def _default(f: NestedField) -> Column:
    spark_type = to_spark_type(f.field_type)
    if f.write_default is None:
        return F.lit(None).cast(spark_type)
    from neve.spark.expression import to_spark_literal

    return to_spark_literal(f.write_default, f.field_type)


def _null_check(c: Column, f: NestedField, path: str, parent_valid: Column | None) -> Column:
    """A required field's value: the job fails on a null (one under a null parent
    struct is fine); the result is non-nullable for Spark, so the Parquet column is
    written REQUIRED, as Iceberg-Java writes it."""
    if not f.required:
        return c
    bad = c.isNull() if parent_valid is None else (c.isNull() & parent_valid)
    message = f"{_NULL_MARK}: column {path!r} is required but a row has a null there"
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
            value = _default(child)
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


def _hidden_columns(
    schema: Schema, spec: PartitionSpec, taken: Sequence[str]
) -> list[tuple[str, Column]]:
    used = {n.lower() for n in taken}
    out = []
    for i, pf in enumerate(spec.fields):
        source = schema.find_type(pf.source_id)
        base = re.sub(r"[^A-Za-z0-9_]", "_", pf.name).strip("_") or "p"
        name = base
        while name.lower() in used:
            name = f"{base}_{i}" if name == base else f"{name}_"
        used.add(name.lower())
        out.append((name, partition_key(pf.transform, source, field_column(schema, pf.source_id))))
    return out


def _sort_columns(schema: Schema, order: SortOrder) -> list[Column]:
    out = []
    for sf in order.fields:
        source = schema.find_type(sf.source_id)
        c = transform_column(sf.transform, source, field_column(schema, sf.source_id))
        nulls_first = sf.null_order is NullOrder.NULLS_FIRST
        if sf.direction is SortDirection.ASC:
            out.append(c.asc_nulls_first() if nulls_first else c.asc_nulls_last())
        else:
            out.append(c.desc_nulls_first() if nulls_first else c.desc_nulls_last())
    return out


def _distribute(
    df: DataFrame,
    hidden: Sequence[str],
    schema: Schema,
    spec: PartitionSpec,
    order: SortOrder,
    props: Mapping[str, str],
) -> DataFrame:
    sort = _sort_columns(schema, order)
    default = "hash" if hidden else ("range" if sort else "none")
    mode = props.get(DISTRIBUTION_MODE, default).lower()
    if mode not in ("none", "hash", "range"):
        raise ValidationError(
            f"table property {DISTRIBUTION_MODE}={mode!r} is not one of none, hash, range"
        )
    keys = [F.col(n) for n in hidden]
    if mode == "hash" and keys:
        df = df.repartition(*keys)
    elif mode == "range" and (keys or sort):
        df = df.repartitionByRange(*[k.asc_nulls_first() for k in keys], *sort)
    if keys or sort:
        df = df.sortWithinPartitions(*keys, *sort)
    return df


# -- describing the written files on the executors ------------------------------------


def describe_files(
    spark: Any,
    io: FileIO,
    directory: str,
    schema: Schema,
    spec: PartitionSpec,
    hidden: Sequence[str],
    props: Mapping[str, str],
    sort_order_id: int,
) -> list[DataFile]:
    """The DataFile of every Parquet file below ``directory``, its metrics computed on
    the executors; partition tuples come from the directory names."""
    found = io.list_files(directory)
    prefix = directory.rstrip("/") + "/"
    result_types = [pf.transform.result_type(schema.find_type(pf.source_id)) for pf in spec.fields]
    work: list[tuple[str, tuple[Any, ...]]] = []
    for path in found:
        rel = path[len(prefix) :] if path.startswith(prefix) else path.rsplit("/", 1)[-1]
        name = rel.rsplit("/", 1)[-1]
        if name.startswith((".", "_")) or not name.endswith(".parquet"):
            io.delete(path)  # checksums and markers: not table files
            continue
        work.append((path, _partition_of(rel, hidden, result_types)))
    if not work:
        return []
    fn = _describer(io, schema, spec.spec_id, props, sort_order_id or None)
    slices = max(1, min(len(work), spark.sparkContext.defaultParallelism * 2))
    files: list[DataFile] = spark.sparkContext.parallelize(work, slices).mapPartitions(fn).collect()
    empty = [f for f in files if f.record_count == 0]
    for f in empty:
        io.delete(f.file_path)
    return [f for f in files if f.record_count > 0]


def _partition_of(
    rel: str, hidden: Sequence[str], result_types: Sequence[IcebergType]
) -> tuple[Any, ...]:
    values: dict[str, str] = {}
    for segment in rel.split("/")[:-1]:
        key, sep, value = segment.partition("=")
        if sep:
            values[key] = value
    missing = [h for h in hidden if h not in values]
    if missing:
        raise NeveIOError(f"written file {rel} lacks partition directories {missing}")
    return tuple(
        decode_partition_key(t, values[h]) for h, t in zip(hidden, result_types, strict=True)
    )


def _describer(
    io: FileIO,
    schema: Schema,
    spec_id: int,
    props: Mapping[str, str],
    sort_order_id: int | None,
) -> Callable[[Iterator[tuple[str, tuple[Any, ...]]]], Iterator[DataFile]]:
    props = dict(props)

    def describe(items: Iterator[tuple[str, tuple[Any, ...]]]) -> Iterator[DataFile]:
        for path, partition in items:
            yield describe_parquet_file(io, path, schema, props, partition, spec_id, sort_order_id)

    return describe


def describe_parquet_file(
    io: FileIO,
    path: str,
    schema: Schema,
    props: Mapping[str, str],
    partition: tuple[Any, ...],
    spec_id: int,
    sort_order_id: int | None,
) -> DataFile:
    """The DataFile of one Parquet file written from ``schema``: counts and bounds
    from its footer; NaN counts and bounds of float and double columns from those
    columns' values (Parquet statistics neither count NaNs nor order -0.0 first)."""
    import pyarrow.parquet as pq

    from neve.arrow.metrics import FloatStats, MetricsConfig
    from neve.arrow.writer import parquet_data_file

    config = MetricsConfig.from_properties(schema, props)
    with io.open_input(path) as stream:
        pf = pq.ParquetFile(stream)
        metadata = pf.metadata
        floats = FloatStats(schema)
        float_columns = [f.name for f in schema.fields if _has_float(f.field_type)]
        if float_columns and metadata.num_rows:
            floats.update(pf.read(columns=float_columns, use_threads=False))
    return parquet_data_file(
        path,
        io.file_size(path),
        metadata,
        schema,
        config,
        floats,
        partition,
        spec_id,
        sort_order_id=sort_order_id,
    )


def _has_float(t: IcebergType) -> bool:
    if isinstance(t, (FloatType, DoubleType)):
        return True
    if isinstance(t, StructType):
        return any(_has_float(f.field_type) for f in t.fields)
    if isinstance(t, ListType):
        return _has_float(t.element_type)
    if isinstance(t, MapType):
        return _has_float(t.key_type) or _has_float(t.value_type)
    return False
