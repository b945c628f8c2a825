"""The data work of maintenance on Spark (the Spark engine's ``compact``,
``merge_deletes`` and ``delete_files``), planned and committed on the driver by the same
planners as on the pyarrow engine (:mod:`neve.table.maintenance`):

- compaction reads each planned group's files with their deletes applied and each
  row's position (:func:`neve.spark.reader.read_tasks`) and writes the live rows with
  the distributed writer (:func:`neve.spark.job.write_data`) into files of the plan's
  target size, keeping where every row came from, so deletes committed meanwhile are
  carried over to the new files as on the pyarrow engine; v3 rows keep their
  ``_row_id`` and ``_last_updated_sequence_number``; the sort strategy ranges and sorts
  by a sort order or by z-order (the z-values computed in Spark tasks by
  :func:`neve.arrow.sorting.zorder_key`);
- position delete merges run the pyarrow engine's merge in Spark tasks;
- file deletes run in Spark tasks.
"""

from __future__ import annotations

import dataclasses
import math
import pickle
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from neve.actions.base import TableState
from neve.arrow.positions import merge_deletes as merge_deletes_here
from neve.arrow.schema import to_arrow_schema
from neve.arrow.sorting import zorder_key
from neve.arrow.writer import delete_written_files
from neve.engine.origins import CompactedFiles
from neve.errors import NeveError
from neve.io.fileio import FileIO
from neve.io.locations import data_location
from neve.planning.compaction import CompactionPlan, ZOrder
from neve.planning.delete import DeleteFiles, rewrite_schema
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spark.job import delete_write_dir, write_data
from neve.spark.paths import spark_file_uri
from neve.spark.reader import ROW_FILE, ROW_POS, read_tasks
from neve.spark.session import check_session
from neve.spec.schema import Schema
from neve.spec.sort_order import SortOrder
from neve.spec.table_metadata import TableMetadata
from neve.spec.types import ListType, MapType, NestedField, StructType

__all__ = ["compact", "delete_files", "merge_deletes"]

#: Paths per Spark task.
_PATHS_PER_TASK = 1000


def delete_files(
    spark: SparkSession, io: FileIO, paths: Sequence[str], workers: int
) -> tuple[str, ...]:
    """Delete ``paths`` in Spark tasks (``workers`` threads each at most); returns those
    that could not be deleted."""
    if not paths:
        return ()
    slices = max(1, min(len(paths) // _PATHS_PER_TASK + 1, 4 * max(1, workers)))

    def part(items: Iterable[str]) -> Iterable[str]:
        # runs in a Spark task
        return io.delete_many(list(items), 4)

    failed = spark.sparkContext.parallelize(list(paths), slices).mapPartitions(part)
    return tuple(sorted(failed.collect()))


@dataclass(frozen=True)
class _Version:
    """A table state at one metadata version, small enough to ship to executors."""

    io: FileIO
    metadata: TableMetadata


def _with_properties(table: TableState, **props: str) -> _Version:
    md = table.metadata
    return _Version(table.io, dataclasses.replace(md, properties={**md.properties, **props}))


def _sorted_by(md: TableMetadata, sort: SortOrder) -> tuple[TableMetadata, bool]:
    """``md`` with ``sort`` (the plan's order of the sort strategy) as its default sort
    order, so the distributed writer ranges and sorts the rows by it; and whether it
    is one of the table's orders (files record only those)."""
    for order in md.sort_orders:
        if order.fields == sort.fields:
            return dataclasses.replace(md, default_sort_order_id=order.order_id), True
    new_id = max((o.order_id for o in md.sort_orders), default=0) + 1
    added = SortOrder(new_id, sort.fields)
    view = dataclasses.replace(
        md, sort_orders=(*md.sort_orders, added), default_sort_order_id=new_id
    )
    return view, False


#: Columns the compactor adds to the rows it reads: the source file's index in the
#: plan's files, and the z-value of z-order rewrites.
_SOURCE = "__neve_source"
_SOURCE_URI = "__neve_source_uri"
_ZVALUE = "__neve_zvalue"


def _with_sources(spark: SparkSession, rows: DataFrame, sources: Sequence[str]) -> DataFrame:
    """``rows`` (read with row positions) with each row's source file as its index in
    ``sources`` instead of Spark's name for it."""
    index = spark.createDataFrame(
        [(spark_file_uri(p), i) for i, p in enumerate(sources)],
        T.StructType(
            [
                T.StructField(_SOURCE_URI, T.StringType(), False),
                T.StructField(_SOURCE, T.IntegerType(), False),
            ]
        ),
    )
    joined = rows.join(F.broadcast(index), rows[ROW_FILE] == index[_SOURCE_URI], "left")
    # a row whose file is not a planned source would lose its origin: fail instead
    missing = F.raise_error(
        F.concat(F.lit("neve: compacted row of unplanned file "), F.col(ROW_FILE))
    ).cast("int")
    return joined.withColumn(_SOURCE, F.coalesce(F.col(_SOURCE), missing)).drop(
        ROW_FILE, _SOURCE_URI
    )


def _with_zvalues(rows: DataFrame, schema: Schema, order: ZOrder) -> DataFrame:
    """``rows`` with each row's z-value (:func:`neve.arrow.sorting.zorder_key` as
    big-endian bytes, which Spark compares as the pyarrow engine sorts the keys),
    computed in Spark tasks by an Arrow UDF over the top-level columns holding the
    z-order's fields. A column z-order cannot take fails here, on the driver."""
    zorder_key(to_arrow_schema(schema).empty_table(), schema, order)  # raises on bad input
    wanted = set(order.source_ids)
    fields = [f for f in schema.fields if wanted & _ids_in(f)]
    sources = Schema(*fields)

    def zvalues(arr: pa.Array) -> pa.Array:
        # runs in a Spark task
        words = zorder_key(pa.Table.from_struct_array(arr), sources, order)
        flat = pa.py_buffer(words.astype(">u8").tobytes())
        keys = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(words.shape[1] * 8), len(arr), [None, flat]
        )
        return keys.cast(pa.binary())

    udf = F.arrow_udf(zvalues, T.BinaryType())  # type: ignore[attr-defined]
    return rows.withColumn(
        _ZVALUE, udf(F.struct(*[F.col("`" + f.name.replace("`", "``") + "`") for f in fields]))
    )


def _ids_in(f: NestedField) -> set[int]:
    """The field ids of ``f`` and of every field nested in it."""
    out = {f.field_id}
    t = f.field_type
    if isinstance(t, StructType):
        for child in t.fields:
            out |= _ids_in(child)
    elif isinstance(t, ListType):
        out |= _ids_in(t.element_field)
    elif isinstance(t, MapType):
        out |= _ids_in(t.key_field) | _ids_in(t.value_field)
    return out


def compact(
    spark: SparkSession, table: TableState, plan: CompactionPlan, on_group: Callable[[int], None]
) -> CompactedFiles:
    """A compaction's data work on Spark: the planned
    groups' files are read with their deletes applied, each row's position and the
    current schema (in v3 with the row lineage columns, so rows keep their ``_row_id``
    and ``_last_updated_sequence_number``), and written by the distributed writer with
    the plan's target file size, which tells where every row of every file came from
    (so the commit carries concurrent deletes over). An unpartitioned group is gathered
    into as many tasks as target-size files it fills; partitioned rows are distributed
    by partition, as every write is; the sort strategy ranges and sorts the rows by the
    plan's sort order or z-order (files written in an order that is not one of the
    table's, z-order included, name none). One Spark job; a failure removes its
    directory. ``on_group`` is told of each group once the job has written them all."""
    check_session(spark)
    md = table.metadata
    target = plan.options.target
    view = _with_properties(table, **{"write.target-file-size-bytes": str(target)})
    rows_schema = rewrite_schema(md)
    known = True
    if isinstance(plan.sort, ZOrder):
        known = False
    elif plan.sort is not None:  # the plan says how to write the groups
        sorted_md, known = _sorted_by(view.metadata, plan.sort)
        view = _Version(view.io, sorted_md)
    sources = list(dict.fromkeys(t.file.file_path for t in plan.tasks))
    scan = ScanPlan(md, table.io)
    rows = read_tasks(
        spark,
        scan,
        plan.tasks,
        apply_residual=False,
        projected_schema=rows_schema,
        row_positions=True,
    )
    rows = _with_sources(spark, rows, sources)
    order_by = None
    if isinstance(plan.sort, ZOrder):
        rows, order_by = _with_zvalues(rows, rows_schema, plan.sort), _ZVALUE
    if not md.spec().fields and plan.sort is None:
        size = sum(t.file.file_size_in_bytes for t in plan.tasks)
        rows = rows.coalesce(max(1, math.ceil(size / target)))  # never adds tasks
    written = write_data(
        rows, view, schema=rows_schema, order_by=order_by, origins=(_SOURCE, ROW_POS)
    )
    files = written.files
    if not known:  # an order given for this rewrite only is not the table's
        files = [f.with_(sort_order_id=None) for f in files]
    for _ in plan.groups:  # one job wrote every group
        on_group(0)
    return CompactedFiles(files, sources, written.origins)


def merge_deletes(
    spark: SparkSession, table: TableState, tasks: Sequence[FileScanTask]
) -> DeleteFiles:
    """The pyarrow engine's merge of each data file's position deletes
    (:func:`neve.arrow.positions.merge_deletes`) run in Spark tasks, into one new
    directory that a failure removes whole."""
    check_session(spark)
    if not tasks:
        return DeleteFiles()
    md = table.metadata
    directory = f"{data_location(md.location, md.properties)}/{uuid.uuid4()}"
    view = _with_properties(table, **{"write.data.path": directory})
    slices = max(1, min(len(tasks), spark.sparkContext.defaultParallelism * 2))

    def part(items: Iterable[FileScanTask]) -> Iterator[bytes]:
        # runs on an executor: merge this slice's deletes with the pyarrow engine
        try:
            done = merge_deletes_here(view, list(items))
        except Exception as exc:  # reported to the driver, which cleans up
            yield pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
            return
        yield pickle.dumps(("ok", done))

    try:
        results = [
            pickle.loads(r)
            for r in spark.sparkContext.parallelize(list(tasks), slices)
            .mapPartitions(part)
            .collect()
        ]
    except BaseException:
        delete_write_dir(table.io, directory)
        raise
    errors = [r[1] for r in results if r[0] == "error"]
    merged = [r[1] for r in results if r[0] == "ok"]
    added = tuple(f for d in merged for f in d.added)
    if errors:
        delete_written_files(table.io, [f.file_path for f in added])
        delete_write_dir(table.io, directory)
        raise NeveError(
            f"merging position deletes failed on Spark ({errors[0]}); nothing was "
            "committed and the files written were removed. Fix the cause and run it again"
        )
    return DeleteFiles(added, tuple(f for d in merged for f in d.replaced))
