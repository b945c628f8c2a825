"""Structured Streaming through the ``neve`` data source (PySpark 4.x Python stream
reader and writer): ``spark.readStream.format("neve")`` and
``df.writeStream.format("neve")``. docs/STREAMING.md describes the options and the
guarantees; in short:

- **Source.** Offsets are snapshot ids on one branch (``{"snapshot_id": id}``, ``-1``
  before the first snapshot). A micro-batch reads the snapshots after its start offset
  up to its end offset, whole snapshots only: in ``append`` mode the rows their appends
  added (overwrite and delete snapshots fail or are skipped, Iceberg's options), in
  ``changelog`` mode every change with ``_change_type`` (the changelog planner,
  :mod:`neve.planning.changelog`). Spark's checkpoint holds the offsets, so a restarted
  query reads each snapshot exactly once. ``max-files-per-trigger`` /
  ``max-rows-per-trigger`` are admission control (PySpark 4.2+ ``ReadLimit``), counted
  from snapshot summaries; a micro-batch always takes at least one snapshot.
- **Consumers.** With ``consumer-id`` the source moves the consumer's tag
  (:mod:`neve.table.consumers`) to each micro-batch's end offset when Spark reports the
  batch done (``commit``), so the tag never claims more than the checkpoint does; a
  new query with that consumer id and no checkpoint starts after the tag.
- **Sink.** Each micro-batch commits one snapshot whose summary carries the query id
  and batch id under Iceberg-Java's keys; a batch whose id is not above the last one
  committed for that query on the branch (found by walking the branch's snapshots) is
  a replay and is skipped, its files removed: exactly once per micro-batch. With
  ``upsert=true`` a micro-batch is upserted through the table's merge engine; rows of a
  changelog (``_change_type``) become the row kinds of the table's ``rowkind.field``.

Planning and committing run in Spark's Python workers on the driver; executors read
and write data files and never open the catalog.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from pyspark.sql import types as T
from pyspark.sql.datasource import (
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema as spark_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from neve.arrow.writer import delete_written_files, write_data_files
from neve.catalog.base import Catalog
from neve.errors import NeveIOError, NoSuchSnapshotError, ValidationError
from neve.io.fileio import FileIO
from neve.io.locations import LocationProvider
from neve.planning.changelog import (
    CHANGE_ORDINAL,
    CHANGE_TYPE,
    COMMIT_SNAPSHOT_ID,
    ChangelogPlan,
    ChangeType,
    changelog_snapshots,
)
from neve.planning.incremental import SKIP_DELETE_SNAPSHOTS, SKIP_OVERWRITE_SNAPSHOTS
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile
from neve.spec.refs import MAIN_BRANCH
from neve.spec.snapshot import Operation, Snapshot
from neve.spec.table_metadata import TableMetadata
from neve.table.consumers import find_consumer
from neve.table.scan import IncrementalAppendScan, TableScan
from neve.table.table import Table

__all__ = [
    "BATCH_ID_PROPERTY",
    "QUERY_ID_PROPERTY",
    "STREAM_READ_KEYS",
    "STREAM_WRITE_KEYS",
    "NeveStreamReader",
    "NeveStreamWriter",
    "StreamOptions",
    "changelog_spark_schema",
    "changelog_to_row_kinds",
    "is_changelog_stream",
    "last_committed_batch",
    "query_id",
]

#: Snapshot summary keys of a streaming write: the query and its micro-batch (the keys
#: Iceberg-Java's Spark sink writes, so either sink recognises the other's commits).
QUERY_ID_PROPERTY = "spark.sql.streaming.queryId"
BATCH_ID_PROPERTY = "spark.sql.streaming.epochId"

#: Stream-only options of the source and the sink, normalised as the data source
#: normalises option names (lower case, no ``-`` or ``_``).
STREAM_READ_KEYS = {
    "mode",
    "branch",
    "startingposition",
    "startsnapshotid",
    "starttimestamp",
    "streamingskipoverwritesnapshots",
    "streamingskipdeletesnapshots",
    "maxfilespertrigger",
    "maxrowspertrigger",
    "consumerid",
    "consumer.expirationtime",
}
STREAM_WRITE_KEYS = {"upsert", "queryid", "checkpointlocation", "queryname"}

#: The offset before a branch's first snapshot.
_BEFORE_FIRST = -1
#: Rows of a changelog in the order they must be applied within one snapshot: the
#: row a change removes before the row it adds.
_APPLY_RANK = {
    ChangeType.DELETE.value: 0,
    ChangeType.UPDATE_BEFORE.value: 0,
    ChangeType.INSERT.value: 1,
    ChangeType.UPDATE_AFTER.value: 1,
}
_ROW_KIND = {
    ChangeType.INSERT.value: "+I",
    ChangeType.UPDATE_AFTER.value: "+U",
    ChangeType.UPDATE_BEFORE.value: "-U",
    ChangeType.DELETE.value: "-D",
}
_CHANGE_COLUMNS = (CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID)


class StreamOptions(Protocol):
    """The parsed data source options (``neve.spark.datasource``) as this module uses
    them."""

    @property
    def table(self) -> str: ...

    def get(self, key: str) -> str | None: ...

    def flag(self, key: str, default: bool) -> bool: ...

    def integer(self, key: str) -> int | None: ...

    def catalog(self) -> Catalog: ...


@contextlib.contextmanager
def _open(opts: StreamOptions) -> Iterator[Catalog]:
    """The options' catalog, its pooled connections closed afterwards (Spark keeps its
    Python workers, which should not hold database connections)."""
    cat = opts.catalog()
    try:
        yield cat
    finally:
        cat.dispose()


def is_changelog_stream(opts: StreamOptions) -> bool:
    """Whether the options ask for a changelog stream (``mode=changelog``)."""
    mode = (opts.get("mode") or "append").strip().lower()
    if mode not in ("append", "changelog"):
        raise ValidationError(f"option mode={mode!r} must be append or changelog")
    return mode == "changelog"


def changelog_spark_schema(data: T.StructType) -> T.StructType:
    """A changelog's Spark schema: the data columns and the three change columns."""
    return T.StructType(
        [
            *data.fields,
            T.StructField(CHANGE_TYPE, T.StringType(), False),
            T.StructField(CHANGE_ORDINAL, T.IntegerType(), False),
            T.StructField(COMMIT_SNAPSHOT_ID, T.LongType(), False),
        ]
    )


def _columns(opts: StreamOptions) -> list[str] | None:
    raw = opts.get("columns")
    return [c.strip() for c in raw.split(",") if c.strip()] if raw else None


def _branch(opts: StreamOptions) -> str:
    return opts.get("branch") or MAIN_BRANCH


# -- reading ---------------------------------------------------------------------------------


@dataclass
class _AppendPartition(InputPartition):
    """Appended files one Spark task reads, with the scan that reads them. With
    ``inserted_by`` (changelog mode) the rows are that snapshot's inserts."""

    scan: TableScan
    tasks: list[FileScanTask]
    inserted_by: int | None = None


@dataclass
class _ChangePartition(InputPartition):
    """One snapshot's change tasks (a changelog plan cut to that snapshot)."""

    io: FileIO
    plan: ChangelogPlan
    columns: list[str] | None
    shift: int = 0  # added to the ordinals (after a first snapshot read in full)


def _cost(s: Snapshot, changelog: bool) -> tuple[int, int]:
    """Files and rows a snapshot brings to a stream, from its summary (Iceberg's
    summary fields); replace snapshots bring nothing."""
    if s.operation is Operation.REPLACE:
        return 0, 0
    summ = s.summary

    def n(key: str) -> int:
        try:
            return int(summ.get(key, "0"))
        except ValueError:
            return 0

    if not changelog:
        return n("added-data-files"), n("added-records")
    files = n("added-data-files") + n("deleted-data-files") + n("added-delete-files")
    rows = (
        n("added-records")
        + n("deleted-records")
        + n("added-position-deletes")
        + n("added-equality-deletes")
    )
    return files, rows


class NeveStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The streaming source (module docstring). One instance serves the query on the
    driver; a second one only reads partitions on executors (``read`` keeps no state)."""

    def __init__(self, opts: StreamOptions, schema: T.StructType) -> None:
        self.opts = opts
        self.changelog = is_changelog_stream(opts)
        self.branch = _branch(opts)
        self.columns = _columns(opts)
        self.arrow_schema = spark_arrow_schema(schema, timezone="UTC")
        self.skip = {
            SKIP_OVERWRITE_SNAPSHOTS: str(opts.flag("streamingskipoverwritesnapshots", False)),
            SKIP_DELETE_SNAPSHOTS: str(opts.flag("streamingskipdeletesnapshots", False)),
        }
        max_files = opts.integer("maxfilespertrigger")
        max_rows = opts.integer("maxrowspertrigger")
        if max_files is not None and max_rows is not None:
            raise ValidationError(
                "give max-files-per-trigger or max-rows-per-trigger, not both (a Python "
                "stream source takes one read limit)"
            )
        for name, v in (("max-files-per-trigger", max_files), ("max-rows-per-trigger", max_rows)):
            if v is not None and v < 1:
                raise ValidationError(f"option {name}={v} must be at least 1")
        self.limit: ReadLimit = (
            ReadMaxFiles(max_files)
            if max_files is not None
            else ReadMaxRows(max_rows)
            if max_rows is not None
            else ReadAllAvailable()
        )
        self.consumer = opts.get("consumerid")
        self.expiration = opts.get("consumer.expirationtime")
        if self.expiration is not None and not self.consumer:
            raise ValidationError("option consumer.expiration-time needs consumer-id too")
        self.target: int | None = None  # Trigger.AvailableNow: the head when it began
        self.recorded: int | None = None  # where this run last moved the consumer's tag
        starts = [
            k for k in ("startingposition", "startsnapshotid", "starttimestamp") if opts.get(k)
        ]
        if len(starts) > 1:
            raise ValidationError(
                "give one of starting-position, start-snapshot-id and start-timestamp"
            )

    # driver --------------------------------------------------------------------------------

    def _metadata(self) -> tuple[TableMetadata, Table]:
        with _open(self.opts) as cat:
            table = cat.load_table(self.opts.table)
        return table.metadata, table

    def _head(self, md: TableMetadata) -> int:
        head = md.snapshot_for_ref(self.branch)
        if head is None:
            if self.branch != MAIN_BRANCH:
                raise NoSuchSnapshotError(
                    f"table {self.opts.table} has no branch {self.branch!r}; create it or "
                    "stream from another branch"
                )
            return _BEFORE_FIRST
        return head.snapshot_id

    def initialOffset(self) -> dict[str, int]:
        md, _ = self._metadata()
        if self.consumer:
            found = find_consumer(md, self.consumer)
            if found is not None:  # carry on where the consumer stopped
                return {"snapshot_id": found.snapshot_id}
        head = self._head(md)
        position = (self.opts.get("startingposition") or "earliest").strip().lower()
        sid = self.opts.integer("startsnapshotid")
        when = self.opts.get("starttimestamp")
        if sid is not None:
            line = [s.snapshot_id for s in md.ancestors(head)] if head != _BEFORE_FIRST else []
            if sid not in line:
                raise ValidationError(
                    f"start-snapshot-id {sid} is not a snapshot of branch {self.branch!r} "
                    f"of {self.opts.table}; pick one from table.snapshots() on that branch"
                )
            return {"snapshot_id": sid}
        if when is not None:
            # the stream starts with the first snapshot committed at or after the time
            raw: int | str = int(when) if when.strip().lstrip("-").isdigit() else when
            snaps = changelog_snapshots(md, start_time=raw, branch=self.branch)
            wanted = {c.snapshot_id for c in snaps}
            chain = md.ancestors(head) if head != _BEFORE_FIRST else []
            from_time = [s for s in chain if s.snapshot_id in wanted]
            if not from_time:
                return {"snapshot_id": head}
            first = from_time[-1]
            parent = first.parent_snapshot_id
            return {"snapshot_id": parent if parent is not None else _BEFORE_FIRST}
        if position == "latest":
            return {"snapshot_id": head}
        if position != "earliest":
            raise ValidationError(
                f"option starting-position={position!r} must be earliest or latest; start "
                "at a snapshot with start-snapshot-id, at a time with start-timestamp"
            )
        return {"snapshot_id": _BEFORE_FIRST}

    def _pending(self, md: TableMetadata, start: int, head: int) -> list[Snapshot]:
        """The snapshots after ``start`` up to ``head``, oldest first."""
        if head in (_BEFORE_FIRST, start):
            return []
        line = md.ancestors(head)
        ids = [s.snapshot_id for s in line]
        if start == _BEFORE_FIRST:
            return list(reversed(line))
        if start not in ids:
            raise NoSuchSnapshotError(
                f"the stream has read up to snapshot {start}, which is no longer an "
                f"ancestor of branch {self.branch!r} of {self.opts.table} (expired, or the "
                "branch was rolled back); give the query a consumer-id so expiration keeps "
                "what it still reads, or start it again with a new checkpoint"
            )
        return list(reversed(line[: ids.index(start)]))

    def getDefaultReadLimit(self) -> ReadLimit:
        return self.limit

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._head(self._metadata()[0])

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        # Spark asks for the next batch once the batch ending at ``start`` is committed
        # to its sink and checkpoint (it calls commit() only when a next batch starts,
        # so the last batch of a run would otherwise never be recorded)
        self._record(int(start["snapshot_id"]))
        md, _ = self._metadata()
        head = self._head(md) if self.target is None else self.target
        pending = self._pending(md, int(start["snapshot_id"]), head)
        if not pending:
            return start
        if isinstance(limit, ReadMaxFiles | ReadMaxRows):
            cap = limit.max_files if isinstance(limit, ReadMaxFiles) else limit.max_rows
            which = 0 if isinstance(limit, ReadMaxFiles) else 1
            taken, used = 0, 0
            for s in pending:
                cost = _cost(s, self.changelog)[which]
                if taken and used + cost > cap:
                    break
                taken, used = taken + 1, used + cost
            return {"snapshot_id": pending[taken - 1].snapshot_id}
        return {"snapshot_id": pending[-1].snapshot_id}

    def reportLatestOffset(self) -> dict[str, int] | None:
        return {"snapshot_id": self._head(self._metadata()[0])}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        first, last = int(start["snapshot_id"]), int(end["snapshot_id"])
        if first == last:
            return []
        md, table = self._metadata()
        begin = None if first == _BEFORE_FIRST else first
        filter = self.opts.get("filter")
        case_sensitive = self.opts.flag("casesensitive", True)
        parts: list[InputPartition] = []
        line = md.ancestors(last) if begin is None else []
        if line and line[-1].parent_snapshot_id is not None:
            # The branch's history was expired before its oldest snapshot: what that
            # snapshot holds is read in full (as inserts), then the changes after it
            # (Iceberg-Java's streaming reads its first snapshot the same way).
            oldest = line[-1].snapshot_id
            full = table.scan(
                filter=filter,
                columns=self.columns,
                snapshot_id=oldest,
                case_sensitive=case_sensitive,
            )
            mark = oldest if self.changelog else None
            parts += [_AppendPartition(full, [t], mark) for t in full.plan_files()]
            begin = oldest
            if begin == last:
                return parts
        if self.changelog:
            plan = table.plan_changes(
                begin, last, filter=filter, branch=self.branch, case_sensitive=case_sensitive
            )
            shift = 1 if parts else 0
            for cs in plan.snapshots:
                tasks = tuple(t for t in plan.tasks if t.ordinal == cs.ordinal)
                if tasks:
                    one = dataclasses.replace(plan, snapshots=(cs,), tasks=tasks)
                    parts.append(_ChangePartition(table.io, one, self.columns, shift))
            return parts
        scan = IncrementalAppendScan(
            md,
            table.io,
            start_snapshot_id=begin,
            end_snapshot_id=last,
            branch=self.branch,
            filter=filter,
            columns=self.columns,
            case_sensitive=case_sensitive,
            options=self.skip,
        )
        return parts + [_AppendPartition(scan, [t]) for t in scan.plan_files()]

    def commit(self, end: dict[str, int]) -> None:
        self._record(int(end["snapshot_id"]))

    def _record(self, sid: int) -> None:
        """Move the consumer's tag to ``sid`` (read up to there, Spark's checkpoint
        says), unless it is there already."""
        if not self.consumer or sid in (_BEFORE_FIRST, self.recorded):
            return
        _, table = self._metadata()
        found = find_consumer(table.metadata, self.consumer)
        if found is None or found.snapshot_id != sid or self.expiration is not None:
            table.record_consumer(self.consumer, sid, self.expiration)
        self.recorded = sid

    # executors -----------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        # runs on Spark executors: the pyarrow data path is imported there only
        from neve.arrow.changelog import changelog_batches
        from neve.arrow.scan import scan_batches  # executors only, as above

        if isinstance(partition, _AppendPartition):
            for batch in scan_batches(partition.scan, partition.tasks):
                if not batch.num_rows:
                    continue
                if partition.inserted_by is not None:  # a changelog's first snapshot
                    n = batch.num_rows
                    batch = pa.RecordBatch.from_arrays(
                        [
                            *batch.columns,
                            pa.array([ChangeType.INSERT.value] * n, pa.string()),
                            pa.array([0] * n, pa.int32()),
                            pa.array([partition.inserted_by] * n, pa.int64()),
                        ],
                        names=[*batch.schema.names, *_CHANGE_COLUMNS],
                    )
                yield batch.cast(self.arrow_schema)
        elif isinstance(partition, _ChangePartition):
            for table in changelog_batches(partition.io, partition.plan, columns=partition.columns):
                if partition.shift:
                    shifted = pc.add(table.column(CHANGE_ORDINAL), partition.shift)
                    i = table.column_names.index(CHANGE_ORDINAL)
                    table = table.set_column(i, CHANGE_ORDINAL, shifted.cast(pa.int32()))
                yield from table.cast(self.arrow_schema).to_batches()


# -- writing ---------------------------------------------------------------------------------


@dataclass
class _StreamMessage(WriterCommitMessage):
    """What one write task sends to the driver: the files it wrote (append) or its
    rows (upsert, merged on the driver)."""

    files: list[DataFile] = dataclasses.field(default_factory=list)
    rows: pa.Table | None = None


def query_id(opts: StreamOptions) -> str:
    """The streaming query's id: the ``query-id`` option, else the id Spark keeps in
    the checkpoint's ``metadata`` file (stable across restarts of the query)."""
    given = opts.get("queryid")
    if given:
        return given
    where = opts.get("checkpointlocation")
    if not where:
        raise ValidationError(
            "the neve streaming sink needs the query's checkpoint: "
            '.option("checkpointLocation", "/path") on writeStream (or give '
            '.option("query-id", "<stable id>"))'
        )
    path = where[len("file:") :] if where.startswith("file:") else where
    try:
        if "://" in path:
            fs, inner = pafs.FileSystem.from_uri(path)
        else:
            fs, inner = pafs.LocalFileSystem(), os.path.abspath(path)
        with fs.open_input_stream(inner.rstrip("/") + "/metadata") as f:
            text = f.read().decode()
        return str(json.loads(text.splitlines()[0])["id"])
    except (OSError, ValueError, KeyError, IndexError) as exc:
        raise NeveIOError(
            f"cannot read the streaming query's id from {where}/metadata ({exc}); give "
            '.option("query-id", "<stable id>") to the neve sink'
        ) from exc


def last_committed_batch(md: TableMetadata, branch: str, query: str) -> int | None:
    """The last micro-batch of ``query`` committed on ``branch`` (walking the branch's
    snapshots newest first), or None."""
    head = md.snapshot_for_ref(branch)
    for s in md.ancestors(head.snapshot_id if head is not None else None):
        if s.summary.get(QUERY_ID_PROPERTY) == query:
            try:
                return int(s.summary.get(BATCH_ID_PROPERTY, ""))
            except ValueError:
                return None
    return None


def changelog_to_row_kinds(rows: pa.Table, row_kind_field: str | None) -> pa.Table:
    """Rows of a changelog ready for an upsert: in the order the changes happened
    (ordinal, then what a change removes before what it adds), the change type as the
    table's row kind column, the other change columns dropped."""
    if CHANGE_TYPE not in rows.column_names:
        return rows.drop_columns([c for c in _CHANGE_COLUMNS if c in rows.column_names])
    if not row_kind_field:
        raise ValidationError(
            "upserting a changelog (rows with _change_type) needs the target table's "
            "row kind column: set its property rowkind.field (e.g. set_properties("
            '{"rowkind.field": "_row_kind"})) so deletes and updates apply '
            "(docs/MERGE-ENGINES.md); or drop _change_type to upsert every row"
        )
    types = rows.column(CHANGE_TYPE).to_pylist()
    unknown = sorted({t for t in types if t not in _ROW_KIND}, key=str)
    if unknown:
        raise ValidationError(
            f"_change_type values {unknown} are not INSERT, DELETE, UPDATE_BEFORE or UPDATE_AFTER"
        )
    ordinal = (
        rows.column(CHANGE_ORDINAL).to_pylist()
        if CHANGE_ORDINAL in rows.column_names
        else [0] * rows.num_rows
    )
    order = sorted(range(rows.num_rows), key=lambda i: (ordinal[i], _APPLY_RANK[types[i]], i))
    ordered = rows.take(pa.array(order, pa.int64()))
    kinds = pa.array([_ROW_KIND[types[i]] for i in order], pa.string())
    out = ordered.drop_columns([c for c in _CHANGE_COLUMNS if c in rows.column_names])
    return out.append_column(row_kind_field, kinds)


class NeveStreamWriter(DataSourceStreamArrowWriter):
    """The streaming sink (module docstring). Picklable."""

    def __init__(self, opts: StreamOptions, table: Table, upsert: bool, branch: str) -> None:
        md = table.metadata
        self.opts = opts
        self.io: FileIO = table.io
        self.schema = md.schema()
        self.spec = md.spec()
        self.location = md.location
        self.properties = dict(md.properties)
        self.sort_order_id = md.default_sort_order_id or None
        self.upsert = upsert
        self.branch = branch
        self.write_id = str(uuid.uuid4())

    # executors ---------------------------------------------------------------------------

    def write(self, iterator: Iterator[pa.RecordBatch]) -> _StreamMessage:
        batches = [b for b in iterator if b.num_rows]
        if not batches:
            return _StreamMessage()
        rows = pa.Table.from_batches(batches)
        if self.upsert:
            return _StreamMessage(rows=rows)
        files = write_data_files(
            self.io,
            self.schema,
            self.spec,
            rows,
            LocationProvider(self.location, self.properties),
            self.properties,
            sort_order_id=self.sort_order_id,
        )
        return _StreamMessage(files=files)

    # driver ------------------------------------------------------------------------------

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        got = [m for m in messages if isinstance(m, _StreamMessage)]
        files = [f for m in got for f in m.files]
        parts = [m.rows for m in got if m.rows is not None and m.rows.num_rows]
        query = query_id(self.opts)
        with _open(self.opts) as cat:
            table = cat.load_table(self.opts.table)
            last = last_committed_batch(table.metadata, self.branch, query)
            if last is not None and batchId <= last:
                # a replay of a batch already committed: its new files are not needed
                delete_written_files(self.io, files)
                return
            if not files and not parts:
                return
            props = {QUERY_ID_PROPERTY: query, BATCH_ID_PROPERTY: str(batchId)}
            tx = table.transaction()
            try:
                if self.upsert:
                    rows = changelog_to_row_kinds(
                        pa.concat_tables(parts, promote_options="permissive"),
                        table.properties.get("rowkind.field"),
                    )
                    tx.upsert(rows, branch=self.branch, snapshot_properties=props)
                else:
                    tx.add_files(files, branch=self.branch, snapshot_properties=props)
                tx.commit()
            except Exception:
                if (
                    files
                    and last_committed_batch(
                        cat.load_table(self.opts.table).metadata, self.branch, query
                    )
                    != batchId
                ):
                    delete_written_files(self.io, files)
                raise

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        files = [f for m in messages if isinstance(m, _StreamMessage) for f in m.files]
        if files:
            delete_written_files(self.io, files)
