"""A PySpark data source named ``neve``: the Spark habit as an entry point.

Reading::

    register_datasource(spark)
    df = (spark.read.format("neve")
          .option("uri", "sqlite:////abs/catalog.db").option("warehouse", "/abs/wh")
          .option("filter", "x > 5").option("columns", "id,x")
          .load("db.events"))

Writing::

    df.write.format("neve").option("uri", ...).mode("append").save("db.events")

Options (names are case-insensitive and may be kebab, snake or camel case:
``snapshot-id``, ``snapshot_id`` and ``snapshotId`` are one option):

==================  ====================================================================
``uri``             catalog URI, as for :func:`neve.connect`
``warehouse``       catalog warehouse (required for SQL catalogs)
``catalog``         with ``uri``: the catalog name stored in the rows (default ``neve``);
                    without: a catalog configured under that name
                    (:mod:`neve.catalog.config`), or a REST catalog's
                    ``http(s)://`` URI. With neither, the configured default
``catalog.<prop>``  a catalog property (Spark lower-cases option names)
``table``           the table, when not given to ``load()`` / ``save()``
``filter``          read: a neve filter expression (``"x > 5 and s = 'a'"``)
``columns``         read: comma-separated top-level columns to read
``snapshot-id``     read: time travel to a snapshot
``as-of``           read: time travel to a time (epoch millis or ISO timestamp)
``ref``             read: a branch or tag
``case-sensitive``  read: bind ``filter`` and ``columns`` case-sensitively (default true)
``partitions``      read: how many Spark tasks to spread the planned files over
``branch``          write: the branch to commit to (default ``main``)
``overwrite-mode``  write: ``static`` (default: mode "overwrite" replaces every row) or
                    ``dynamic`` (replace only the partitions the new rows fall into)
==================  ====================================================================

Incremental append reads (docs/STREAMING.md): ``start-snapshot-id``, ``end-snapshot-id``,
``start-timestamp``, ``end-timestamp``, with ``streaming-skip-overwrite-snapshots`` and
``streaming-skip-delete-snapshots``.
``spark.readStream`` and ``df.writeStream`` take the streaming options of
:mod:`neve.spark.streaming` as well (``mode``, ``consumer-id``, ``upsert`` ...;
docs/STREAMING.md).

Changelog reads: ``changelog=true`` with ``start-snapshot-id`` / ``end-snapshot-id``
or ``start-timestamp`` / ``end-timestamp`` (start exclusive, end inclusive; default
everything up to the head of ``ref``) reads ``table.changes(...)``: the changed rows
with ``_change_type``, ``_change_ordinal`` and ``_commit_snapshot_id``; also
``compute-updates`` (default true), ``net-changes`` (default false) and
``identifier-columns`` (comma-separated; default the primary key), with ``filter`` and
``columns`` as above. One Spark task per snapshot (docs/CHANGELOG-READS.md).

How it works. Planning and committing happen on the driver (in the Python workers
Spark starts there): ``load()`` opens the catalog once, pins the table's metadata
file, and later scans of that DataFrame read exactly that version. Executors read
and write Parquet with neve's pyarrow data path and never open the catalog. Each write
task returns its data files (with metrics) to the driver, which commits them in one
snapshot (its summary names the write under ``neve.write-id``); a failed job deletes
every file its tasks wrote.

Filters are taken only from the ``filter`` option. Filters written in Spark
(``df.filter(...)``) run in Spark after the scan: PySpark 4.3's filter pushdown for
Python data sources leaks pushed filters into later scans of the same DataFrame, so
this source does not accept pushed filters at all.

Errors raised while planning or committing (a bad filter, a missing table, data that
does not fit the table) happen in a Spark-managed Python worker; Spark re-raises them
as its own exception types, with neve's error class name and message in the text.
For the native, faster data plane use :mod:`neve.spark.reader` and
:mod:`neve.spark.job`.
"""

from __future__ import annotations

import contextlib
import math
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema as spark_arrow_schema

from neve.arrow.writer import delete_written_files, write_data_files
from neve.catalog.base import Catalog, parse_identifier
from neve.catalog.config import lookup
from neve.catalog.connect import connect, open_entry
from neve.errors import NoSuchTableError, ValidationError
from neve.expressions.binding import bind
from neve.io.fileio import FileIO
from neve.io.locations import LocationProvider
from neve.planning.incremental import SKIP_DELETE_SNAPSHOTS, SKIP_OVERWRITE_SNAPSHOTS
from neve.planning.tasks import FileScanTask, group_tasks
from neve.spark.changelog import ChangelogReader
from neve.spark.conform import check_write_schema
from neve.spark.schema import to_spark_schema
from neve.spark.session import check_session
from neve.spark.streaming import (
    STREAM_READ_KEYS,
    STREAM_WRITE_KEYS,
    NeveStreamReader,
    NeveStreamWriter,
    changelog_spark_schema,
    is_changelog_stream,
)
from neve.spec.manifest import DataFile
from neve.spec.partition import PartitionSpec
from neve.spec.refs import MAIN_BRANCH
from neve.spec.schema import Schema
from neve.table.scan import TableScan
from neve.table.table import Table

__all__ = [
    "WRITE_ID_PROPERTY",
    "NeveCommitMessage",
    "NeveDataSource",
    "check_write_schema",
    "register_datasource",
]

#: Snapshot summary property naming the Spark write that produced the snapshot.
WRITE_ID_PROPERTY = "neve.write-id"

#: Read tasks per scan when the files are small (at most one per scan task).
DEFAULT_MIN_PARTITIONS = 8
#: Bytes of data files per read task when the files are large.
DEFAULT_SPLIT_SIZE = 128 * 1024 * 1024
#: Arrow bytes a write task buffers before writing them out as files.
WRITE_BUFFER_BYTES = 256 * 1024 * 1024

_READ_KEYS = {"filter", "columns", "snapshotid", "asof", "ref", "casesensitive", "partitions"}
_READ_KEYS |= {"startsnapshotid", "endsnapshotid", "starttimestamp", "endtimestamp"}
_READ_KEYS |= {"streamingskipoverwritesnapshots", "streamingskipdeletesnapshots"}
_READ_KEYS |= {"changelog", "computeupdates", "netchanges", "identifiercolumns"}
_WRITE_KEYS = {"branch", "overwritemode"}
_COMMON_KEYS = {"uri", "warehouse", "catalog", "table", "path"}
_SPELLING = {
    "snapshotid": "snapshot-id",
    "asof": "as-of",
    "casesensitive": "case-sensitive",
    "overwritemode": "overwrite-mode",
    "startsnapshotid": "start-snapshot-id",
    "endsnapshotid": "end-snapshot-id",
    "starttimestamp": "start-timestamp",
    "endtimestamp": "end-timestamp",
    "streamingskipoverwritesnapshots": "streaming-skip-overwrite-snapshots",
    "streamingskipdeletesnapshots": "streaming-skip-delete-snapshots",
    "startingposition": "starting-position",
    "maxfilespertrigger": "max-files-per-trigger",
    "maxrowspertrigger": "max-rows-per-trigger",
    "consumerid": "consumer-id",
    "consumer.expirationtime": "consumer.expiration-time",
    "queryid": "query-id",
    "computeupdates": "compute-updates",
    "netchanges": "net-changes",
    "identifiercolumns": "identifier-columns",
}


# -- options -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Options:
    """The data source options, keys normalised (lower case, no ``-`` or ``_``)."""

    values: Mapping[str, str]
    catalog_properties: Mapping[str, str]

    @staticmethod
    def parse(raw: Mapping[str, str], allowed: set[str]) -> _Options:
        values: dict[str, str] = {}
        props: dict[str, str] = {}
        for key, value in raw.items():
            low = key.lower()
            if low.startswith("catalog."):
                props[low[len("catalog.") :]] = value
                continue
            norm = low.replace("-", "").replace("_", "")
            if norm not in allowed | _COMMON_KEYS:
                known = sorted(_SPELLING.get(k, k) for k in allowed | _COMMON_KEYS - {"path"})
                raise ValidationError(
                    f"unknown option {key!r} for the neve data source; known options: "
                    f"{', '.join(known)} and catalog.<property>"
                )
            values[norm] = value
        rest = "://" in values.get("catalog", "")  # a REST catalog's URI takes a warehouse
        if values.get("warehouse") and not values.get("uri") and not rest:
            raise ValidationError(
                'option warehouse needs option uri too: .option("uri", "sqlite:////path/'
                'catalog.db").option("warehouse", "/path/warehouse"), or name a configured '
                'catalog with .option("catalog", "name")'
            )
        if not (values.get("table") or values.get("path")):
            raise ValidationError(
                'name the table: .load("db.events") / .save("db.events") or '
                '.option("table", "db.events")'
            )
        return _Options(values, props)

    def get(self, key: str) -> str | None:
        return self.values.get(key)

    @property
    def table(self) -> str:
        return self.values.get("table") or self.values["path"]

    def flag(self, key: str, default: bool) -> bool:
        raw = self.values.get(key)
        if raw is None:
            return default
        if raw.strip().lower() in ("true", "1", "yes"):
            return True
        if raw.strip().lower() in ("false", "0", "no"):
            return False
        raise ValidationError(f"option {_SPELLING.get(key, key)}={raw!r} must be true or false")

    def integer(self, key: str) -> int | None:
        raw = self.values.get(key)
        if raw is None:
            return None
        try:
            return int(raw)
        except ValueError:
            raise ValidationError(
                f"option {_SPELLING.get(key, key)}={raw!r} must be an integer"
            ) from None

    def catalog(self) -> Catalog:
        """The catalog the options name: by URI, by configured name, or the configured
        default (the same resolution as :func:`neve.connect`)."""
        uri, named = self.values.get("uri"), self.values.get("catalog")
        if uri:
            return connect(
                uri, self.values.get("warehouse"), name=named or None, **self.catalog_properties
            )
        if named and "://" in named:  # a REST catalog's URI: http(s)://host:port
            return connect(named, self.values.get("warehouse"), **self.catalog_properties)
        if named:
            return open_entry(lookup(named), **self.catalog_properties)
        return connect(**self.catalog_properties)


@contextlib.contextmanager
def _catalog(opts: _Options) -> Iterator[Catalog]:
    """The catalog, its pooled connections closed afterwards (Spark reuses its Python
    workers, and a worker should not keep a database connection open)."""
    cat = opts.catalog()
    try:
        yield cat
    finally:
        cat.dispose()


def _time(raw: str | None) -> int | str | None:
    if isinstance(raw, str) and raw.strip().lstrip("-").isdigit():
        return int(raw)
    return raw


def _scan(table: Table, opts: _Options, ranged: bool = True) -> TableScan:
    """The scan the options ask for; ``ranged=False`` leaves out an incremental range
    (the schema does not depend on it, and a stream reads its own ranges)."""
    columns = opts.get("columns")
    incremental = {}
    if ranged:  # an incremental append read (neve.planning.incremental)
        incremental = dict(
            start_snapshot_id=opts.integer("startsnapshotid"),
            end_snapshot_id=opts.integer("endsnapshotid"),
            start_time=_time(opts.get("starttimestamp")),
            end_time=_time(opts.get("endtimestamp")),
        )
    skips = {
        SKIP_OVERWRITE_SNAPSHOTS: str(opts.flag("streamingskipoverwritesnapshots", False)),
        SKIP_DELETE_SNAPSHOTS: str(opts.flag("streamingskipdeletesnapshots", False)),
    }
    return table.scan(
        filter=opts.get("filter"),
        columns=[c.strip() for c in columns.split(",") if c.strip()] if columns else None,
        snapshot_id=opts.integer("snapshotid"),
        as_of=_time(opts.get("asof")),
        ref=opts.get("ref"),
        case_sensitive=opts.flag("casesensitive", True),
        options=skips,
        **incremental,  # type: ignore[arg-type]
    )


# -- reading ---------------------------------------------------------------------------------


@dataclass
class _TaskGroup(InputPartition):
    """The scan tasks one Spark task reads."""

    index: int
    tasks: list[FileScanTask]


def _partition_count(tasks: Sequence[FileScanTask], requested: int | None) -> int:
    if requested is not None:
        if requested < 1:
            raise ValidationError(f"option partitions={requested} must be at least 1")
        return requested
    by_size = math.ceil(sum(t.length for t in tasks) / DEFAULT_SPLIT_SIZE)
    return max(by_size, min(len(tasks), DEFAULT_MIN_PARTITIONS))


class _NeveReader(DataSourceReader):
    """Plans on the driver; reads the planned files on executors. Picklable."""

    def __init__(self, scan: TableScan, spark_schema: T.StructType, partitions: int | None):
        self.scan = scan
        self.arrow_schema = spark_arrow_schema(spark_schema, timezone="UTC")
        self.requested_partitions = partitions

    def partitions(self) -> Sequence[InputPartition]:
        tasks = self.scan.plan_files()
        count = _partition_count(tasks, self.requested_partitions)
        return [_TaskGroup(i, g) for i, g in enumerate(group_tasks(tasks, count))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        # runs on Spark executors: imported there, not when the driver loads the module
        from neve.arrow.scan import scan_batches

        if not isinstance(partition, _TaskGroup):  # Spark's empty-scan placeholder
            return
        for batch in scan_batches(self.scan, partition.tasks):
            if batch.num_rows:
                # the exact Arrow types Spark expects (plain lists and strings, UTC)
                yield batch.cast(self.arrow_schema)


# -- writing ---------------------------------------------------------------------------------


@dataclass
class NeveCommitMessage(WriterCommitMessage):
    """What one write task sends to the driver: the data files it wrote."""

    files: list[DataFile] = field(default_factory=list)


class _NeveWriter(DataSourceArrowWriter):
    """Executors write Parquet files; the driver commits them once. Picklable."""

    def __init__(
        self,
        opts: _Options,
        table: Table,
        overwrite: bool,
    ) -> None:
        md = table.metadata
        self.opts = opts
        self.io: FileIO = table.io
        self.schema: Schema = md.schema()
        self.spec: PartitionSpec = md.spec()
        self.location = md.location
        self.properties = dict(md.properties)
        self.sort_order_id = md.default_sort_order_id or None
        self.overwrite = overwrite
        mode = (opts.get("overwritemode") or "static").lower()
        if mode not in ("static", "dynamic"):
            raise ValidationError(f"option overwrite-mode={mode!r} must be static or dynamic")
        self.dynamic = mode == "dynamic"
        self.branch = opts.get("branch") or MAIN_BRANCH
        self.write_id = str(uuid.uuid4())

    # executors ---------------------------------------------------------------------------

    def write(self, iterator: Iterator[pa.RecordBatch]) -> NeveCommitMessage:
        written: list[DataFile] = []
        buffered: list[pa.RecordBatch] = []
        size = 0
        try:
            for batch in iterator:
                if not batch.num_rows:
                    continue
                buffered.append(batch)
                size += batch.nbytes
                if size >= WRITE_BUFFER_BYTES:
                    written += self._flush(buffered)
                    buffered, size = [], 0
            if buffered:
                written += self._flush(buffered)
        except BaseException:
            delete_written_files(self.io, written)
            raise
        return NeveCommitMessage(written)

    def _flush(self, batches: list[pa.RecordBatch]) -> list[DataFile]:
        return write_data_files(
            self.io,
            self.schema,
            self.spec,
            pa.Table.from_batches(batches),
            LocationProvider(self.location, self.properties),
            self.properties,
            sort_order_id=self.sort_order_id,
        )

    # driver ------------------------------------------------------------------------------

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        files = _files_of(messages)
        if not files and not (self.overwrite and not self.dynamic):
            return  # nothing to add, nothing to replace
        props = {WRITE_ID_PROPERTY: self.write_id}
        with _catalog(self.opts) as cat:
            tx = cat.load_table(self.opts.table).transaction()
            if not self.overwrite:
                tx.add_files(files, branch=self.branch, snapshot_properties=props)
            elif self.dynamic:
                tx.replace_partitions(files, branch=self.branch, snapshot_properties=props)
            else:  # every row of the branch replaced by the new files
                tx.overwrite_files(files, None, branch=self.branch, snapshot_properties=props)
            # on failure Spark calls abort(), which deletes the files unless this landed
            tx.commit()

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        files = _files_of(messages)
        if not files:
            return
        try:
            with _catalog(self.opts) as cat:
                md = cat.load_table(self.opts.table).metadata
            if any(s.summary.get(WRITE_ID_PROPERTY) == self.write_id for s in md.snapshots):
                return  # the commit landed after all: its files are the table's now
        except NoSuchTableError:
            pass
        except Exception:
            return  # cannot tell whether the commit landed: keep the files for orphan cleanup
        delete_written_files(self.io, files)


def _files_of(messages: Sequence[WriterCommitMessage | None]) -> list[DataFile]:
    return [f for m in messages if isinstance(m, NeveCommitMessage) for f in m.files]


def _changelog_reader(table: Table, opts: _Options, schema: T.StructType) -> ChangelogReader:
    """The ``changelog=true`` read: the changelog of the options' range on the branch
    ``ref`` (default main), one Spark task per snapshot."""
    columns, keys = opts.get("columns"), opts.get("identifiercolumns")
    plan = table.plan_changes(
        opts.integer("startsnapshotid"),
        opts.integer("endsnapshotid"),
        _time(opts.get("starttimestamp")),
        _time(opts.get("endtimestamp")),
        filter=opts.get("filter"),
        identifier_columns=[c.strip() for c in keys.split(",") if c.strip()] if keys else None,
        branch=opts.get("ref") or MAIN_BRANCH,
        case_sensitive=opts.flag("casesensitive", True),
    )
    return ChangelogReader(
        table.io,
        plan,
        schema,
        compute_updates=opts.flag("computeupdates", True),
        net_changes=opts.flag("netchanges", False),
        columns=[c.strip() for c in columns.split(",") if c.strip()] if columns else None,
    )


# -- the data source -------------------------------------------------------------------------


class NeveDataSource(DataSource):
    """``spark.read.format("neve")`` and ``df.write.format("neve")``; see the module
    documentation for the options."""

    @classmethod
    def name(cls) -> str:
        return "neve"

    def schema(self) -> T.StructType:
        # the same schema serves spark.read and spark.readStream (streaming options too)
        opts = _Options.parse(self.options, _READ_KEYS | STREAM_READ_KEYS)
        with _catalog(opts) as cat:
            table = cat.load_table(opts.table)
        scan = _scan(table, opts, ranged=False)
        bind(scan.table_schema, scan.row_filter, scan.case_sensitive)  # bad filters fail now
        # later scans of this DataFrame read this very version of the table
        self.metadata_location: str | None = table.metadata_location
        data = to_spark_schema(scan.projected_schema())
        changelog = is_changelog_stream(opts) or opts.flag("changelog", False)
        return changelog_spark_schema(data) if changelog else data

    def reader(self, schema: T.StructType) -> DataSourceReader:
        opts = _Options.parse(self.options, _READ_KEYS)
        with _catalog(opts) as cat:
            location = getattr(self, "metadata_location", None)
            if location is None:
                table = cat.load_table(opts.table)
            else:
                ident = parse_identifier(opts.table)
                table = Table(ident, cat.read_metadata(location), location, cat)
        if opts.flag("changelog", False):  # a changelog of the range (neve.spark.changelog)
            return _changelog_reader(table, opts, schema)
        scan = _scan(table, opts)
        expected = to_spark_schema(scan.projected_schema())
        if schema.fieldNames() != expected.fieldNames():
            raise ValidationError(
                f"the neve data source reads columns {expected.fieldNames()}, not the given "
                f"schema's {schema.fieldNames()}; leave out .schema(...) and choose columns "
                'with .option("columns", "a,b")'
            )
        return _NeveReader(scan, expected, opts.integer("partitions"))

    def writer(self, schema: T.StructType, overwrite: bool) -> _NeveWriter:
        opts = _Options.parse(self.options, _WRITE_KEYS)
        with _catalog(opts) as cat:
            table = cat.load_table(opts.table)
        check_write_schema(schema, table.schema())
        return _NeveWriter(opts, table, overwrite)

    def streamReader(self, schema: T.StructType) -> NeveStreamReader:
        """``spark.readStream.format("neve")`` (:mod:`neve.spark.streaming`)."""
        return NeveStreamReader(_Options.parse(self.options, _READ_KEYS | STREAM_READ_KEYS), schema)

    def streamWriter(self, schema: T.StructType, overwrite: bool) -> NeveStreamWriter:
        """``df.writeStream.format("neve")`` (:mod:`neve.spark.streaming`)."""
        opts = _Options.parse(self.options, _WRITE_KEYS | STREAM_WRITE_KEYS)
        if overwrite:
            raise ValidationError(
                "the neve streaming sink appends or upserts each micro-batch: use "
                'outputMode("append") (the only mode Spark gives Python sinks), with '
                '.option("upsert", "true") to upsert by the primary key'
            )
        with _catalog(opts) as cat:
            table = cat.load_table(opts.table)
        upsert = opts.flag("upsert", False)
        if not upsert:
            check_write_schema(schema, table.schema())
        return NeveStreamWriter(opts, table, upsert, opts.get("branch") or MAIN_BRANCH)


def register_datasource(spark: SparkSession) -> None:
    """Make ``format("neve")`` available on this session."""
    check_session(spark)
    spark.dataSource.register(NeveDataSource)
