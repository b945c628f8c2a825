"""Reading Iceberg tables with Spark: neve plans on the driver, Spark reads the planned
Parquet files natively.

Columns are matched by Iceberg field id (``spark.sql.parquet.fieldId.read.enabled``):
renamed columns are found, dropped ones vanish, added ones read as null, and Spark
widens promoted types itself (int to long, float to double, decimal precision). Files
written without field ids are read by the names the table's name mapping gives them,
then renamed. Identity partition columns a file lacks take the file's partition
value. Deletes are applied as in :mod:`neve.arrow.reader`: position deletes and
deletion vectors by ``_metadata.row_index``, equality deletes by value (null equal to
null, NaN to NaN), each only to the data files the planner assigned it to; then the
residual filter. The v3 row lineage columns, when asked for, are read by field id and
their nulls inherited per file (``first_row_id`` plus ``_metadata.row_index``, the
data sequence number), as :mod:`neve.arrow.reader` does.

Spark's Parquet filter pushdown addresses file columns by name even when it matches
columns by id, so a name that once belonged to another field id would prune the
wrong row groups. Columns whose name (ignoring case) any schema of the table gave to
another field are therefore read under a private name and renamed after the read.
"""

from __future__ import annotations

import array
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyroaring import BitMap64
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from neve.arrow.deletes import read_deletion_vector, read_position_deletes
from neve.arrow.projection import merge_fields, prune_fields
from neve.arrow.reader import read_workers
from neve.arrow.schema import (
    NameMapping,
    apply_name_mapping,
    field_id,
    has_field_ids,
    parse_name_mapping,
)
from neve.errors import NeveIOError, SchemaError
from neve.expressions.binding import bind
from neve.expressions.expressions import ALWAYS_FALSE, ALWAYS_TRUE, BooleanExpression
from neve.expressions.visitors import references
from neve.io.fileio import FileIO
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spark.expression import column_ref, to_spark_column, to_spark_value
from neve.spark.paths import spark_file_uri, spark_input_path
from neve.spark.schema import field_id_of, to_spark_field, to_spark_schema, to_spark_type
from neve.spark.session import check_session
from neve.spec.manifest import DataFile, DataFileContent, FileFormat
from neve.spec.name_mapping import NAME_MAPPING_PROPERTY
from neve.spec.schema import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, Schema, is_row_lineage_field
from neve.spec.table_metadata import TableMetadata
from neve.spec.transforms import IdentityTransform
from neve.spec.types import IcebergType, ListType, MapType, NestedField, StructType

if TYPE_CHECKING:
    from neve.table.table import Table

__all__ = ["ROW_FILE", "ROW_POS", "read", "read_tasks", "register_view"]

#: Position delete sets up to this many rows are broadcast to the join.
BROADCAST_DELETE_ROWS = 2_000_000

_FILE = "__neve_file"
_POS = "__neve_pos"
#: Columns ``read_tasks(..., row_positions=True)`` adds: each row's data file (as Spark
#: names it, :func:`neve.spark.paths.spark_file_uri`) and its position in that file.
ROW_FILE = _FILE
ROW_POS = _POS
_IFILE = "__neve_ifile"
_FIDX = "__neve_fidx"
_EQS = "__neve_eqs"
_DKEY = "__neve_dkey"
_FRID = "__neve_first_row_id"
_DSEQ = "__neve_data_seq"
#: Row positions take the low bits of a position delete's join key, the file the rest.
_POS_BITS = 40


# -- public entry points --------------------------------------------------------------


def read(
    spark: SparkSession,
    table: Table,
    filter: str | BooleanExpression | None = None,
    columns: Sequence[str] | None = None,
    snapshot_id: int | None = None,
    as_of: Any = None,
    ref: str | None = None,
    case_sensitive: bool = True,
) -> DataFrame:
    """The rows of ``table`` matching ``filter`` as a Spark DataFrame with the columns
    of ``columns`` (all by default), at a snapshot id, a time (``as_of``), a branch or
    tag (``ref``) or the current snapshot; the same rows as ``table.scan(...)``."""
    check_session(spark)
    scan = table.scan(
        filter=filter,
        columns=columns,
        snapshot_id=snapshot_id,
        as_of=as_of,
        ref=ref,
        case_sensitive=case_sensitive,
    )
    return read_tasks(spark, scan, scan.plan_files())


def register_view(spark: SparkSession, table: Table, view_name: str, **read_kwargs: Any) -> None:
    """Register ``read(spark, table, **read_kwargs)`` as a temporary view for SQL.

    The view holds the files planned now; register it again to see later commits.
    """
    read(spark, table, **read_kwargs).createOrReplaceTempView(view_name)


def read_tasks(
    spark: SparkSession,
    scan: ScanPlan,
    tasks: Sequence[FileScanTask],
    *,
    apply_residual: bool = True,
    projected_schema: Schema | None = None,
    row_positions: bool = False,
) -> DataFrame:
    """The live rows of exactly these tasks (planned by ``scan``), deletes applied,
    with the columns of ``projected_schema`` (default: ``scan.projected_schema()``;
    fields of the scan's table schema, and the row lineage columns).

    Splits of one file are read once, as the whole file (Spark splits files itself).
    With ``apply_residual`` the tasks' residual filters are applied; without it every
    live row of the files is returned. With ``row_positions`` the columns
    :data:`ROW_FILE` and :data:`ROW_POS` say where each row is (for merge-on-read).
    """
    check_session(spark)
    projected = projected_schema if projected_schema is not None else scan.projected_schema()
    out_schema = to_spark_schema(projected)
    files = _whole_files(tasks)
    if row_positions:
        out_schema = out_schema.add(_FILE, T.StringType(), False).add(_POS, T.LongType(), False)
    if not files:
        return spark.createDataFrame([], out_schema)
    return _Read(spark, scan, files, apply_residual, projected, row_positions).dataframe()


# -- planning the read ----------------------------------------------------------------


def _whole_files(tasks: Sequence[FileScanTask]) -> list[FileScanTask]:
    seen: dict[str, FileScanTask] = {}
    for t in tasks:
        seen.setdefault(t.file.file_path, t)
    return list(seen.values())


@dataclass(frozen=True)
class _Layout:
    """How to read a group of files: by field id, or by names from the name mapping
    (``names``: the Spark read schema with the file's names, as JSON)."""

    names: str | None = None


@dataclass
class _FilePlan:
    task: FileScanTask
    layout: _Layout
    fill: dict[int, Any] = field(default_factory=dict)  # source id -> partition value
    positions: BitMap64 | None = None
    equality: tuple[int, ...] = ()  # indexes into _Read.eq_files
    lineage: bool = False  # row lineage columns are read: inherit their nulls

    @property
    def needs_join(self) -> bool:
        return bool(self.fill) or self.positions is not None or bool(self.equality) or self.lineage


class _Read:
    def __init__(
        self,
        spark: SparkSession,
        scan: ScanPlan,
        files: list[FileScanTask],
        residual: bool,
        projected: Schema,
        row_positions: bool = False,
    ) -> None:
        self.spark = spark
        self.row_positions = row_positions
        self.scan = scan
        self.io: FileIO = scan.io
        self.md: TableMetadata = scan.metadata
        self.table_schema = scan.table_schema
        self.projected = projected
        # row lineage columns asked for: field id -> name
        self.lineage = {
            f.field_id: f.name for f in projected.fields if is_row_lineage_field(f.field_id)
        }
        self.files = files
        self.row_filter = self._filter(residual)
        text = self.md.properties.get(NAME_MAPPING_PROPERTY)
        self.mapping: NameMapping | None = parse_name_mapping(text) if text else None
        # equality delete files (by path) and the key fields of each id set
        self.eq_files: list[DataFile] = []
        eq_index: dict[str, int] = {}
        for t in files:
            for d in t.delete_files:
                if d.content is DataFileContent.EQUALITY_DELETES and d.file_path not in eq_index:
                    if not d.equality_ids:
                        raise NeveIOError(
                            f"equality delete file {d.file_path} has no equality_ids; the "
                            "manifest is invalid"
                        )
                    eq_index[d.file_path] = len(self.eq_files)
                    self.eq_files.append(d)
        self.eq_index = eq_index
        self.key_fields = self._key_fields()
        self.read_schema = self._read_schema()
        self.unsafe = _unsafe_names(self.md, self.read_schema)

    # -- what to read ---------------------------------------------------------------

    def _filter(self, residual: bool) -> BooleanExpression:
        if not residual:
            return ALWAYS_TRUE
        residuals = {t.residual for t in self.files}
        if residuals <= {ALWAYS_TRUE}:
            return ALWAYS_TRUE
        # Every residual equals the scan filter on the rows of its file (the parts it
        # drops are decided by the partition), so one filter serves all files and one
        # Spark scan (with pushdown) reads them all.
        expr = residuals.pop() if len(residuals) == 1 else self.scan.row_filter
        return bind(self.table_schema, expr, self.scan.case_sensitive)

    def _key_fields(self) -> dict[int, NestedField]:
        out: dict[int, NestedField] = {}
        for d in self.eq_files:
            for fid in d.equality_ids or ():
                if fid in out:
                    continue
                f = self.table_schema.find_field_or_none(fid)
                if f is None:
                    f = _historical_field(self.md, fid)
                if f is None:
                    raise SchemaError(
                        f"equality delete file {d.file_path} uses field id {fid}, which no "
                        "schema of the table has; the table metadata is incomplete"
                    )
                out[fid] = f
        return out

    def _read_schema(self) -> Schema:
        need = {r.field_id for r in references(self.row_filter)} if self._has_filter else set()
        need |= {fid for fid in self.key_fields if self.table_schema.find_field_or_none(fid)}
        fields = merge_fields(self.projected.fields, prune_fields(self.table_schema, need))
        # equality columns the table has dropped: read them at the top level by id
        for fid, f in self.key_fields.items():
            if self.table_schema.find_field_or_none(fid) is None:
                fields.append(NestedField(fid, f"__neve_eq_{fid}", f.field_type, False))
        return Schema(*fields)

    @property
    def _has_filter(self) -> bool:
        return self.row_filter is not ALWAYS_TRUE and self.row_filter is not ALWAYS_FALSE

    # -- per file -------------------------------------------------------------------

    def _plans(self) -> list[_FilePlan]:
        layouts = self._layouts()
        identity = self._identity_sources()
        cache: dict[str, dict[str, BitMap64]] = {}
        lock = threading.Lock()

        defaults = self._initial_defaults()

        def plan(t: FileScanTask) -> _FilePlan:
            layout, present = layouts.get(t.file.file_path, (_Layout(), None))
            p = _FilePlan(t, layout, lineage=bool(self.lineage))
            spec_ids = identity.get(t.spec_id, {})
            if spec_ids:
                for fid, pos in spec_ids.items():
                    if not _has_column(t.file, fid, present):
                        p.fill[fid] = t.file.partition[pos]
            for f in defaults:
                if f.field_id not in p.fill and self._lacks(t.file, f.field_id, present):
                    p.fill[f.field_id] = f.initial_default
            p.positions = _positions(self.io, t.file, t.delete_files, cache, lock)
            p.equality = tuple(
                self.eq_index[d.file_path]
                for d in t.delete_files
                if d.content is DataFileContent.EQUALITY_DELETES
            )
            return p

        # deletes and footers (a default's column unnamed by the metrics) read in parallel
        if len(self.files) == 1 or not (defaults or any(t.delete_files for t in self.files)):
            return [plan(t) for t in self.files]
        with ThreadPoolExecutor(max_workers=read_workers()) as ex:
            return list(ex.map(plan, self.files))

    def _initial_defaults(self) -> list[NestedField]:
        """Struct fields the read needs (at any depth, in lists and maps too) that have
        an ``initial-default``: a data file written before such a field was added
        reads it as that value (spec "Default values")."""
        return [f for f in _struct_fields(self.read_schema.fields) if f.initial_default is not None]

    def _lacks(self, f: DataFile, fid: int, present: set[int] | None) -> bool:
        """Whether data file ``f`` surely has no column ``fid``: unlike an identity
        value, a default must not replace the nulls of a file that has the column, so
        when the metrics do not name the column the file's footer decides."""
        if present is not None:
            return fid not in present
        if _has_column(f, fid, None):
            return False
        return fid not in set(_arrow_ids(_footer_schema(self.io, f.file_path)))

    def _identity_sources(self) -> dict[int, dict[int, int]]:
        """Per spec id: identity source field id -> position in the partition tuple,
        for sources the read needs."""
        wanted = {fid for _n, fid in _walk_ids(self.read_schema.fields)}
        out: dict[int, dict[int, int]] = {}
        for spec_id, spec in self.md.specs_by_id.items():
            found = {
                f.source_id: i
                for i, f in enumerate(spec.fields)
                if isinstance(f.transform, IdentityTransform) and f.source_id in wanted
            }
            if found:
                out[spec_id] = found
        return out

    def _layouts(self) -> dict[str, tuple[_Layout, set[int] | None]]:
        """Files without field ids and the ids each holds (only looked up when the
        table has a name mapping; without one every file must carry ids)."""
        if self.mapping is None:
            return {}
        mapping = self.mapping

        def look(t: FileScanTask) -> tuple[str, tuple[_Layout, set[int] | None]]:
            path = t.file.file_path
            file_schema = _footer_schema(self.io, path)
            if has_field_ids(file_schema):
                return path, (_Layout(), None)
            mapped = apply_name_mapping(file_schema, mapping)
            spark_schema = _by_names(self.read_schema.fields, list(mapped))
            ids = set(_arrow_ids(mapped))
            return path, (_Layout(spark_schema.json()), ids)

        with ThreadPoolExecutor(max_workers=read_workers()) as ex:
            return dict(ex.map(look, self.files))

    # -- building the DataFrame -----------------------------------------------------

    def dataframe(self) -> DataFrame:
        plans = self._plans()
        groups: dict[tuple[_Layout, bool], list[_FilePlan]] = {}
        for p in plans:
            groups.setdefault((p.layout, p.needs_join), []).append(p)
        parts = [self._group(layout, joined, ps) for (layout, joined), ps in groups.items()]
        df = parts[0]
        for other in parts[1:]:
            df = df.unionByName(other)
        if self._has_filter:
            df = df.filter(to_spark_column(self.row_filter, self.table_schema))
        elif self.row_filter is ALWAYS_FALSE:
            df = df.limit(0)
        where = [F.col(_FILE), F.col(_POS)] if self.row_positions else []
        return df.select(*[_top(f.name) for f in self.projected.fields], *where)

    def _group(self, layout: _Layout, joined: bool, plans: list[_FilePlan]) -> DataFrame:
        paths = [spark_input_path(p.task.file.file_path) for p in plans]
        if layout.names is None:
            schema = _with_private_names(self.read_schema, self.unsafe)
        else:
            schema = T.StructType.fromJson(json.loads(layout.names))
        reader = self.spark.read.schema(schema).parquet(*paths)
        cols = [self._rename(f, schema[i]) for i, f in enumerate(self.read_schema.fields)]
        where = [
            F.col("_metadata.file_path").alias(_FILE),
            F.col("_metadata.row_index").alias(_POS),
        ]
        if not joined:
            return reader.select(*cols, *where) if self.row_positions else reader.select(*cols)
        df = self._apply_joins(reader.select(*cols, *where), plans)
        return df if self.row_positions else df.drop(_FILE, _POS)

    def _rename(self, f: NestedField, read_as: T.StructField) -> Column:
        target = to_spark_field(f)
        col = _top(read_as.name)
        if read_as.dataType != target.dataType:
            col = col.cast(target.dataType)  # struct casts rename fields by position
        return col.alias(f.name)

    def _apply_joins(self, df: DataFrame, plans: list[_FilePlan]) -> DataFrame:
        """Per-file work for files that need it: one small broadcast join attaches each
        row's file number, identity fill values and applicable equality deletes; then
        position deletes are removed by a join on ``file number << 40 | row index``."""
        fill_ids = sorted({fid for p in plans for fid in p.fill})
        has_eq = any(p.equality for p in plans)
        info_fields = [
            T.StructField(_IFILE, T.StringType(), False),
            T.StructField(_FIDX, T.LongType(), False),
        ]
        for fid in fill_ids:
            f = self.read_schema.find_field(fid)
            info_fields.append(T.StructField(f"__neve_fill_{fid}", to_spark_type(f.field_type)))
        if has_eq:
            info_fields.append(T.StructField(_EQS, T.ArrayType(T.IntegerType(), False), False))
        lineage = bool(self.lineage)
        if lineage:
            info_fields.append(T.StructField(_FRID, T.LongType()))
            info_fields.append(T.StructField(_DSEQ, T.LongType()))
        rows = []
        for n, p in enumerate(plans):
            row: list[Any] = [spark_file_uri(p.task.file.file_path), n]
            for fid in fill_ids:
                t = self.read_schema.find_field(fid).field_type
                row.append(to_spark_value(p.fill.get(fid), t))
            if has_eq:
                row.append(list(p.equality))
            if lineage:
                row += [p.task.file.first_row_id, p.task.data_sequence_number]
            rows.append(tuple(row))
        info = self.spark.createDataFrame(rows, T.StructType(info_fields))
        df = df.join(F.broadcast(info), df[_FILE] == info[_IFILE], "left")
        # a file Spark names differently than spark_file_uri would silently keep its
        # deletes unapplied: fail instead
        missing = F.raise_error(
            F.concat(
                F.lit("neve: no scan task matches the Spark file path "),
                F.col(_FILE),
                F.lit("; report this path to neve"),
            )
        )
        df = df.withColumn(_FIDX, F.coalesce(F.col(_FIDX), missing.cast("long")))
        for fid in fill_ids:
            df = _fill(df, self.read_schema, fid, F.col(f"__neve_fill_{fid}"))
        if lineage:
            df = self._inherit_lineage(df)
        df = self._apply_positions(df, plans)
        if has_eq:
            df = self._apply_equality(df)
        drop = [_IFILE, _FIDX, *[f"__neve_fill_{fid}" for fid in fill_ids]]
        if has_eq:
            drop.append(_EQS)
        if lineage:
            drop += [_FRID, _DSEQ]
        return df.drop(*drop)

    def _inherit_lineage(self, df: DataFrame) -> DataFrame:
        """Row lineage nulls inherited (spec "Row Lineage"): ``_row_id`` from the file's
        ``first_row_id`` plus the row's position, ``_last_updated_sequence_number``
        from the file's data sequence number; a value stored in the file wins."""
        name = self.lineage.get(ROW_ID.field_id)
        if name is not None:
            inherited = F.col(_FRID) + F.col(_POS)
            df = df.withColumn(name, F.coalesce(_top(name), inherited))
        name = self.lineage.get(LAST_UPDATED_SEQUENCE_NUMBER.field_id)
        if name is not None:
            df = df.withColumn(name, F.coalesce(_top(name), F.col(_DSEQ)))
        return df

    def _apply_positions(self, df: DataFrame, plans: list[_FilePlan]) -> DataFrame:
        keys: list[pa.Array] = []
        for n, p in enumerate(plans):
            if p.positions is None or not len(p.positions):
                continue
            if p.positions.max() >= 1 << _POS_BITS:
                raise NeveIOError(
                    f"a delete of {p.task.file.file_path} names row {p.positions.max()}, "
                    "beyond any Parquet file; the delete file is corrupt"
                )
            values = array.array("Q", p.positions.to_array())
            arr = pa.array(values, pa.uint64()).cast(pa.int64())
            keys.append(pc.add(arr, pa.scalar(n << _POS_BITS, pa.int64())))
        if not keys:
            return df
        table = pa.table({_DKEY: pa.chunked_array(keys, pa.int64())})
        dels = self.spark.createDataFrame(table)
        if table.num_rows <= BROADCAST_DELETE_ROWS:
            dels = F.broadcast(dels)
        key = F.shiftleft(F.col(_FIDX), _POS_BITS) + F.col(_POS)
        return df.join(dels, key == dels[_DKEY], "left_anti")

    def _apply_equality(self, df: DataFrame) -> DataFrame:
        by_ids: dict[tuple[int, ...], list[int]] = {}
        for j, d in enumerate(self.eq_files):
            by_ids.setdefault(tuple(d.equality_ids or ()), []).append(j)
        for ids, indexes in by_ids.items():
            dels = self._equality_rows(ids, indexes)
            cond = F.array_contains(F.col(_EQS), dels["__neve_j"])
            for i, fid in enumerate(ids):
                cond = cond & self._key_column(fid).eqNullSafe(dels[f"__neve_k{i}"])
            df = df.join(F.broadcast(dels), cond, "left_anti")
        return df

    def _key_column(self, fid: int) -> Column:
        if self.table_schema.find_field_or_none(fid) is None:
            return _top(f"__neve_eq_{fid}")
        return column_ref(_names_to(self.read_schema, fid))

    def _equality_rows(self, ids: tuple[int, ...], indexes: list[int]) -> DataFrame:
        """Rows of the equality delete files ``indexes`` (all keyed by ``ids``) as
        columns ``__neve_j`` (the file's index) and ``__neve_k0..``."""
        key_schema = Schema(
            *merge_fields(
                [],
                [
                    f
                    for fid in ids
                    for f in prune_fields(
                        _schema_with(self.md, self.table_schema, fid, self.key_fields[fid]), {fid}
                    )
                ],
            )
        )
        spark_schema = to_spark_schema(key_schema)
        paths = [spark_input_path(self.eq_files[j].file_path) for j in indexes]
        raw = self.spark.read.schema(spark_schema).parquet(*paths)
        keys = [
            column_ref(_names_to(key_schema, fid))
            .cast(to_spark_type(self.key_fields[fid].field_type))
            .alias(f"__neve_k{i}")
            for i, fid in enumerate(ids)
        ]
        files = self.spark.createDataFrame(
            [(spark_file_uri(self.eq_files[j].file_path), j) for j in indexes],
            T.StructType(
                [
                    T.StructField("__neve_efile", T.StringType(), False),
                    T.StructField("__neve_j", T.IntegerType(), False),
                ]
            ),
        )
        rows = raw.select(*keys, F.col("_metadata.file_path").alias("__neve_efile"))
        return rows.join(F.broadcast(files), "__neve_efile").drop("__neve_efile")


# -- helpers ----------------------------------------------------------------------------


def _top(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def _walk_ids(fields: Sequence[NestedField]) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for f in fields:
        out.append((f.name, f.field_id))
        if isinstance(f.field_type, StructType):
            out.extend(_walk_ids(f.field_type.fields))
    return out


def _struct_fields(fields: Sequence[NestedField]) -> list[NestedField]:
    """Every struct field at or below ``fields``, through lists and maps."""
    out: list[NestedField] = []

    def walk(t: IcebergType) -> None:
        if isinstance(t, StructType):
            for c in t.fields:
                out.append(c)
                walk(c.field_type)
        elif isinstance(t, (ListType, MapType)):
            for c in t.children:
                walk(c.field_type)

    walk(StructType(*fields))
    return out


def _steps(t: IcebergType, fid: int) -> list[str] | None:
    """How to reach field ``fid`` from a value of type ``t``: struct field names, and
    ``[]`` for a list's elements or ``{}`` for a map's values."""
    if isinstance(t, StructType):
        for f in t.fields:
            if f.field_id == fid:
                return [f.name]
            below = _steps(f.field_type, fid)
            if below is not None:
                return [f.name, *below]
    elif isinstance(t, ListType):
        below = _steps(t.element_type, fid)
        return None if below is None else ["[]", *below]
    elif isinstance(t, MapType):
        below = _steps(t.value_type, fid)
        return None if below is None else ["{}", *below]
    return None


def _filled(c: Column, steps: Sequence[str], value: Column) -> Column:
    """``c`` with the field at ``steps`` (see :func:`_steps`) coalesced with ``value``;
    null structs, lists and maps stay null."""
    if not steps:
        return F.coalesce(c, value)
    step, rest = steps[0], steps[1:]
    if step == "[]":
        return F.transform(c, lambda e: _filled(e, rest, value))
    if step == "{}":
        return F.transform_values(c, lambda _k, v: _filled(v, rest, value))
    inner = _filled(c.getField(step), rest, value)
    return F.when(c.isNull(), c).otherwise(c.withField("`" + step.replace("`", "``") + "`", inner))


def _names_to(schema: Schema, fid: int) -> list[str]:
    chain = [fid]
    parent = schema.parent_id(fid)
    while parent is not None:
        chain.append(parent)
        parent = schema.parent_id(parent)
    return [schema.find_field(i).name for i in reversed(chain)]


def _historical_field(md: TableMetadata, fid: int) -> NestedField | None:
    for s in sorted(md.schemas, key=lambda s: s.schema_id, reverse=True):
        f = s.find_field_or_none(fid)
        if f is not None:
            return f
    return None


def _schema_with(md: TableMetadata, schema: Schema, fid: int, f: NestedField) -> Schema:
    """A schema holding field ``fid``: ``schema`` or, for a dropped field, the latest
    schema that had it."""
    if schema.find_field_or_none(fid) is not None:
        return schema
    for s in sorted(md.schemas, key=lambda s: s.schema_id, reverse=True):
        if s.find_field_or_none(fid) is not None:
            return s
    return Schema(f)


def _unsafe_names(md: TableMetadata, schema: Schema) -> set[int]:
    """Ids of fields whose name path (ignoring case) some schema of the table gave to
    a different field id: Spark's filter pushdown would find the wrong column."""
    owners: dict[tuple[str, ...], set[int]] = {}
    for s in [*md.schemas, schema]:
        for path, fid in _paths(s.fields, ()):
            owners.setdefault(path, set()).add(fid)
    return {fid for path, fid in _paths(schema.fields, ()) if len(owners.get(path, set())) > 1}


def _paths(
    fields: Sequence[NestedField], prefix: tuple[str, ...]
) -> list[tuple[tuple[str, ...], int]]:
    out: list[tuple[tuple[str, ...], int]] = []
    for f in fields:
        path = (*prefix, f.name.lower())
        out.append((path, f.field_id))
        t = f.field_type
        if isinstance(t, StructType):
            out.extend(_paths(t.fields, path))
        elif isinstance(t, ListType):
            out.extend(_paths([t.element_field], path))
        elif isinstance(t, MapType):
            out.extend(_paths([t.key_field, t.value_field], path))
    return out


def _with_private_names(schema: Schema, unsafe: set[int]) -> T.StructType:
    """The Spark read schema (field ids attached); top-level columns holding a field
    with an unsafe name get private names, which Spark's pushdown cannot resolve."""
    out = []
    for f in schema.fields:
        sf = to_spark_field(f)
        if any(fid in unsafe for _path, fid in _paths([f], ())):
            sf = T.StructField(
                f"__neve_c{f.field_id}",
                _private_nested(sf.dataType, unsafe),
                sf.nullable,
                sf.metadata,
            )
        out.append(sf)
    return T.StructType(out)


def _private_nested(t: T.DataType, unsafe: set[int]) -> T.DataType:
    if isinstance(t, T.StructType):
        fields = []
        for sf in t.fields:
            fid = field_id_of(sf)
            name = f"__neve_c{fid}" if fid in unsafe else sf.name
            fields.append(
                T.StructField(name, _private_nested(sf.dataType, unsafe), sf.nullable, sf.metadata)
            )
        return T.StructType(fields)
    if isinstance(t, T.ArrayType):
        return T.ArrayType(_private_nested(t.elementType, unsafe), t.containsNull)
    if isinstance(t, T.MapType):
        return T.MapType(
            _private_nested(t.keyType, unsafe),
            _private_nested(t.valueType, unsafe),
            t.valueContainsNull,
        )
    return t


def _by_names(fields: Sequence[NestedField], file_fields: list[pa.Field]) -> T.StructType:
    """A Spark read schema without field ids, shaped like ``fields`` but named as the
    columns of a name-mapped file (``file_fields`` carry the mapped ids); fields the
    file lacks get names no file column has, so they read as null."""
    by_id = {field_id(f): f for f in file_fields if field_id(f) is not None}
    out = []
    for f in fields:
        found = by_id.get(f.field_id)
        name = found.name if found is not None else f"__neve_missing_{f.field_id}"
        out.append(T.StructField(name, _type_by_names(f, found), True))
    return T.StructType(out)


def _type_by_names(f: NestedField, found: pa.Field | None) -> T.DataType:
    t = f.field_type
    if isinstance(t, StructType):
        children = list(found.type) if found is not None and pa.types.is_struct(found.type) else []
        return _by_names(t.fields, children)
    if isinstance(t, ListType):
        elem = None
        if found is not None and (
            pa.types.is_list(found.type) or pa.types.is_large_list(found.type)
        ):
            elem = found.type.value_field
        return T.ArrayType(_type_by_names(t.element_field, elem), not t.element_required)
    if isinstance(t, MapType):
        key = value = None
        if found is not None and pa.types.is_map(found.type):
            key, value = found.type.key_field, found.type.item_field
        return T.MapType(
            _type_by_names(t.key_field, key),
            _type_by_names(t.value_field, value),
            not t.value_required,
        )
    return to_spark_type(t)


def _arrow_ids(schema: pa.Schema) -> list[int]:
    out: list[int] = []

    def walk(f: pa.Field) -> None:
        fid = field_id(f)
        if fid is not None:
            out.append(fid)
        t = f.type
        if pa.types.is_struct(t):
            for c in t:
                walk(c)
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_field)
        elif pa.types.is_map(t):
            walk(t.key_field)
            walk(t.item_field)

    for f in schema:
        walk(f)
    return out


_FOOTERS: OrderedDict[str, pa.Schema] = OrderedDict()
_FOOTERS_LOCK = threading.Lock()
_FOOTERS_MAX = 4096


def _footer_schema(io: FileIO, path: str) -> pa.Schema:
    """The Arrow schema of a Parquet file (data files never change, so it is cached)."""
    with _FOOTERS_LOCK:
        cached = _FOOTERS.get(path)
        if cached is not None:
            _FOOTERS.move_to_end(path)
            return cached
    try:
        with io.open_input(path) as f:
            schema = pq.ParquetFile(f).schema_arrow
    except (OSError, pa.ArrowException) as exc:
        raise NeveIOError(f"cannot read the Parquet footer of {path}: {exc}") from exc
    with _FOOTERS_LOCK:
        _FOOTERS[path] = schema
        while len(_FOOTERS) > _FOOTERS_MAX:
            _FOOTERS.popitem(last=False)
    return schema


def _has_column(f: DataFile, fid: int, present: set[int] | None) -> bool:
    """Whether the data file surely holds column ``fid``: from its (name-mapped) footer
    when known, else from its metrics. Unknown counts as absent (filling a present
    identity column with its partition value changes nothing)."""
    if present is not None:
        return fid in present
    for metric in (f.column_sizes, f.value_counts, f.null_value_counts):
        if metric and fid in metric:
            return True
    return False


def _positions(
    io: FileIO,
    data_file: DataFile,
    delete_files: Sequence[DataFile],
    cache: dict[str, dict[str, BitMap64]],
    lock: threading.Lock,
) -> BitMap64 | None:
    """Deleted positions of a data file: its deletion vectors, which replace position
    delete files, or else the union of its position delete files."""
    dvs = [
        d
        for d in delete_files
        if d.file_format is FileFormat.PUFFIN
        and d.referenced_data_file in (None, data_file.file_path)
    ]
    result: BitMap64 | None = None
    if dvs:
        for dv in dvs:
            bits = read_deletion_vector(io, dv)
            result = bits if result is None else result | bits
        return result
    for d in delete_files:
        if d.content is not DataFileContent.POSITION_DELETES:
            continue
        with lock:
            loaded = cache.get(d.file_path)
        if loaded is None:
            loaded = read_position_deletes(io, d)
            with lock:
                cache[d.file_path] = loaded
        found = loaded.get(data_file.file_path)
        if found is not None:
            result = found if result is None else result | found
    return result


def _fill(df: DataFrame, schema: Schema, fid: int, value: Column) -> DataFrame:
    """``df`` with field ``fid`` (top level, in structs, or in list elements and map
    values) coalesced with ``value``."""
    steps = _steps(schema.struct, fid)
    if steps is not None and ("[]" in steps or "{}" in steps):
        return df.withColumn(steps[0], _filled(_top(steps[0]), steps[1:], value))
    names = _names_to(schema, fid)
    if len(names) == 1:
        return df.withColumn(names[0], F.coalesce(_top(names[0]), value))
    top = _top(names[0])
    inner = ".".join("`" + n.replace("`", "``") + "`" for n in names[1:])
    filled = top.withField(inner, F.coalesce(column_ref(names), value))
    return df.withColumn(names[0], F.when(top.isNull(), top).otherwise(filled))
