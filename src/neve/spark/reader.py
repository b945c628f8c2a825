"""Reading Iceberg tables with Spark: neve plans on the driver, Spark reads the planned
Parquet files natively (or, on stores Hadoop cannot open, neve's FileIO reads them in
Spark's Python tasks: :mod:`neve.spark.io_mode`, :mod:`neve.spark.task_reader`).

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
import pickle
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap64
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from neve.arrow.projection import merge_fields, prune_fields
from neve.arrow.reader import DeleteCache, deleted_positions, read_workers
from neve.arrow.schema import (
    NameMapping,
    apply_name_mapping,
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
from neve.spark.file_columns import (
    arrow_ids,
    by_names,
    fill_field,
    footer_schema,
    has_column,
    historical_field,
    names_to,
    schema_with,
    struct_fields,
    top_column,
    unsafe_names,
    walk_ids,
    with_private_names,
)
from neve.spark.io_mode import io_mode
from neve.spark.paths import spark_file_uri, spark_input_path
from neve.spark.schema import to_spark_field, to_spark_schema, to_spark_type
from neve.spark.session import check_session
from neve.spark.task_reader import read_in_tasks
from neve.spec.manifest import DataFile, DataFileContent
from neve.spec.name_mapping import NAME_MAPPING_PROPERTY
from neve.spec.schema import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, Schema, is_row_lineage_field
from neve.spec.table_metadata import TableMetadata
from neve.spec.transforms import IdentityTransform
from neve.spec.types import NestedField

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
    if io_mode(spark, files[0].file.file_path) == "arrow":
        return read_in_tasks(
            spark,
            scan,
            files,
            apply_residual=apply_residual,
            projected=projected,
            row_positions=row_positions,
            file_column=_FILE,
            pos_column=_POS,
        )
    return _Read(spark, scan, files, apply_residual, projected, row_positions).dataframe()


# -- planning the read ----------------------------------------------------------------


def _unchanged(f: NestedField, read_as: T.StructField) -> bool:
    """Whether field ``f`` read as ``read_as`` needs neither a rename nor a cast."""
    return read_as.name == f.name and read_as.dataType == to_spark_field(f).dataType


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
    #: The position delete files and DVs that apply (decoded on the executors).
    position_deletes: tuple[DataFile, ...] = ()
    equality: tuple[int, ...] = ()  # indexes into _Read.eq_files
    lineage: bool = False  # row lineage columns are read: inherit their nulls

    @property
    def needs_join(self) -> bool:
        return bool(self.fill) or bool(self.position_deletes) or bool(self.equality) or self.lineage


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
        self.unsafe = unsafe_names(self.md, self.read_schema)

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
                    f = historical_field(self.md, fid)
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
        defaults = self._initial_defaults()

        def plan(t: FileScanTask) -> _FilePlan:
            layout, present = layouts.get(t.file.file_path, (_Layout(), None))
            p = _FilePlan(t, layout, lineage=bool(self.lineage))
            spec_ids = identity.get(t.spec_id, {})
            if spec_ids:
                for fid, pos in spec_ids.items():
                    if not has_column(t.file, fid, present):
                        p.fill[fid] = t.file.partition[pos]
            for f in defaults:
                if f.field_id not in p.fill and self._lacks(t.file, f.field_id, present):
                    p.fill[f.field_id] = f.initial_default
            p.position_deletes = tuple(
                d for d in t.delete_files if d.content is DataFileContent.POSITION_DELETES
            )
            p.equality = tuple(
                self.eq_index[d.file_path]
                for d in t.delete_files
                if d.content is DataFileContent.EQUALITY_DELETES
            )
            return p

        # footers (a default's column the metrics do not name) read in parallel
        if len(self.files) == 1 or not defaults:
            return [plan(t) for t in self.files]
        with ThreadPoolExecutor(max_workers=read_workers()) as ex:
            return list(ex.map(plan, self.files))

    def _initial_defaults(self) -> list[NestedField]:
        """Struct fields the read needs (at any depth, in lists and maps too) that have
        an ``initial-default``: a data file written before such a field was added
        reads it as that value (spec "Default values")."""
        return [f for f in struct_fields(self.read_schema.fields) if f.initial_default is not None]

    def _lacks(self, f: DataFile, fid: int, present: set[int] | None) -> bool:
        """Whether data file ``f`` surely has no column ``fid``: unlike an identity
        value, a default must not replace the nulls of a file that has the column, so
        when the metrics do not name the column the file's footer decides."""
        if present is not None:
            return fid not in present
        if has_column(f, fid, None):
            return False
        return fid not in set(arrow_ids(footer_schema(self.io, f.file_path)))

    def _identity_sources(self) -> dict[int, dict[int, int]]:
        """Per spec id: identity source field id -> position in the partition tuple,
        for sources the read needs."""
        wanted = {fid for _n, fid in walk_ids(self.read_schema.fields)}
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
            file_schema = footer_schema(self.io, path)
            if has_field_ids(file_schema):
                return path, (_Layout(), None)
            mapped = apply_name_mapping(file_schema, mapping)
            spark_schema = by_names(self.read_schema.fields, list(mapped))
            ids = set(arrow_ids(mapped))
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
        wanted = [f.name for f in self.projected.fields]
        read = [f.name for f in self.read_schema.fields]
        if len(groups) == 1 and not next(iter(groups))[1] and read == wanted:
            # one group without joins holds exactly these columns in this order (the row
            # positions last): every column of a projection costs Py4J round trips
            return df
        where = [F.col(_FILE), F.col(_POS)] if self.row_positions else []
        return df.select(*[top_column(name) for name in wanted], *where)

    def _group(self, layout: _Layout, joined: bool, plans: list[_FilePlan]) -> DataFrame:
        paths = [spark_input_path(p.task.file.file_path) for p in plans]
        if layout.names is None:
            schema = with_private_names(self.read_schema, self.unsafe)
        else:
            schema = T.StructType.fromJson(json.loads(layout.names))
        reader = self.spark.read.schema(schema).parquet(*paths)
        fields = list(enumerate(self.read_schema.fields))
        if not joined and not self.row_positions:
            if all(_unchanged(f, schema[i]) for i, f in fields):
                return reader  # a projection that renames and casts nothing
            return reader.select(*[self._rename(f, schema[i]) for i, f in fields])
        cols = [self._rename(f, schema[i]) for i, f in fields]
        where = [
            F.col("_metadata.file_path").alias(_FILE),
            F.col("_metadata.row_index").alias(_POS),
        ]
        if not joined:
            return reader.select(*cols, *where)
        df = self._apply_joins(reader.select(*cols, *where), plans)
        return df if self.row_positions else df.drop(_FILE, _POS)

    @staticmethod
    def _rename(f: NestedField, read_as: T.StructField) -> Column:
        target = to_spark_field(f)
        col = top_column(read_as.name)
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
            df = fill_field(df, self.read_schema, fid, F.col(f"__neve_fill_{fid}"))
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
            df = df.withColumn(name, F.coalesce(top_column(name), inherited))
        name = self.lineage.get(LAST_UPDATED_SEQUENCE_NUMBER.field_id)
        if name is not None:
            df = df.withColumn(name, F.coalesce(top_column(name), F.col(_DSEQ)))
        return df

    def _apply_positions(self, df: DataFrame, plans: list[_FilePlan]) -> DataFrame:
        """Remove the rows position deletes and deletion vectors mark: the delete files
        are decoded on the executors (a task per group of data files) into join keys
        ``file number << 40 | position``, never on the driver; the keys are broadcast
        when the manifests say there are few, else joined without collecting them."""
        jobs = [
            (n, pickle.dumps((p.task.file, p.position_deletes)))
            for n, p in enumerate(plans)
            if p.position_deletes
        ]
        if not jobs:
            return df
        bound = sum(d.record_count for p in plans for d in p.position_deletes)
        io = self.io

        def decode(numbers: pa.Array, payloads: pa.Array) -> pa.Array:
            # runs on an executor: the deleted positions of each data file, as join keys
            cache = DeleteCache()
            out = []
            for n, raw in zip(numbers.to_pylist(), payloads.to_pylist(), strict=True):
                data_file, deletes = pickle.loads(raw)
                bits = deleted_positions(io, data_file, deletes, cache) or BitMap64()
                if len(bits) and bits.max() >= 1 << _POS_BITS:
                    raise NeveIOError(
                        f"a delete of {data_file.file_path} names row {bits.max()}, beyond "
                        "any Parquet file; the delete file is corrupt"
                    )
                positions = pa.array(array.array("Q", bits.to_array()), pa.uint64())
                out.append(pc.add(positions.cast(pa.int64()), n << _POS_BITS))
            offsets = np.concatenate([[0], np.cumsum([len(a) for a in out])]).astype(np.int32)
            values = pa.concat_arrays(out) if out else pa.array([], pa.int64())
            # Spark's Arrow form of array<bigint>: a nullable element named "element"
            return pa.ListArray.from_arrays(
                pa.array(offsets, pa.int32()),
                values,
                type=pa.list_(pa.field("element", pa.int64())),
            )

        keys_of = F.arrow_udf(decode, T.ArrayType(T.LongType()))  # type: ignore[attr-defined]
        files = self.spark.createDataFrame(
            jobs,
            T.StructType(
                [
                    T.StructField("n", T.LongType(), False),
                    T.StructField("d", T.BinaryType(), False),
                ]
            ),
        ).repartition(max(1, min(len(jobs), self.spark.sparkContext.defaultParallelism * 2)))
        dels = files.select(F.explode(keys_of(F.col("n"), F.col("d"))).alias(_DKEY))
        if bound <= BROADCAST_DELETE_ROWS:
            dels = F.broadcast(dels)
        else:
            # Spark sizes ``dels`` by its few input rows, not by the keys they explode
            # into, and would broadcast them through the driver: a sort-merge join instead
            # (it spills, where a hash join must hold one side in memory)
            dels = dels.hint("merge")
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
            return top_column(f"__neve_eq_{fid}")
        return column_ref(names_to(self.read_schema, fid))

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
                        schema_with(self.md, self.table_schema, fid, self.key_fields[fid]), {fid}
                    )
                ],
            )
        )
        spark_schema = to_spark_schema(key_schema)
        paths = [spark_input_path(self.eq_files[j].file_path) for j in indexes]
        raw = self.spark.read.schema(spark_schema).parquet(*paths)
        keys = [
            column_ref(names_to(key_schema, fid))
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
