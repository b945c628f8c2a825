"""Reading manifests for planning and for actions (spec "Manifests", "Sequence Number
Inheritance", "First Row ID Inheritance"): :class:`LazyManifest` decodes first only
what partition pruning needs and an entry in full only when asked for; manifests of one
writer schema are read in batches by a compiled Avro reader into Arrow columns (the
columnar path, :mod:`neve.planning.manifest_columnar`), with fastavro
(:mod:`neve.spec.manifest_io`'s decoding plans) for the rest."""

from __future__ import annotations

import io as _io
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

import fastavro
import pyarrow as pa
from fastavro.read import SchemaResolutionError

from neve.errors import NeveIOError, SchemaError, ValidationError
from neve.expressions.metric_arrays import MetricArrays
from neve.io.fileio import FileIO
from neve.planning.manifest_columnar import (
    ColumnarRead,
    ManifestColumns,
    columnar_enabled,
    finish_read,
    prepare_read,
    read_columns,
    run_read,
)
from neve.spec import avro_schemas as _schemas
from neve.spec.avro_container import AvroHeader, read_header
from neve.spec.manifest import (
    DataFile,
    DataFileContent,
    FieldSummary,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    assemble,
)
from neve.spec.manifest_io import (
    DATA_FILE_FIELDS,
    ENTRY_STATUSES,
    FILE_CONTENTS,
    FILE_FORMATS,
    METRIC_MAPS,
    PLAIN_FIELDS,
    EntryPlan,
    block_bytes,
    decoding_schema,
    entry_plan,
    int_keyed,
    iter_records,
    open_container,
    spec_ids_from_json,
)
from neve.spec.partition import PartitionSpec
from neve.spec.schema import Schema
from neve.spec.types import IcebergType

__all__ = [
    "DECODE_ERRORS",
    "LazyManifest",
    "ManifestReads",
    "decode_manifest",
    "decode_manifest_lazy",
    "decode_manifests_lazy",
    "finish_manifest_reads",
    "prepare_manifest_reads",
    "read_manifest",
    "read_manifest_columns",
    "read_manifest_list",
    "run_manifest_reads",
]

_T = TypeVar("_T")
_ADDED = ManifestEntryStatus.ADDED
_DELETED = ManifestEntryStatus.DELETED


def read_manifest(
    io: FileIO,
    manifest: ManifestFile,
    *,
    specs_by_id: Mapping[int, PartitionSpec] | None = None,
    schema: Schema | None = None,
) -> list[ManifestEntry]:
    """All entries of a manifest, with inherited values filled in.

    Partition tuples follow the field order of the manifest's spec (from ``specs_by_id``,
    else from the file's own ``partition-spec``). With ``schema`` too, partition values
    are converted by their Iceberg types; without it, by the file's Avro types.
    """
    data = io.read_bytes(manifest.manifest_path)
    return decode_manifest(data, manifest, specs_by_id=specs_by_id, schema=schema)


def decode_manifest(
    data: bytes,
    manifest: ManifestFile,
    *,
    specs_by_id: Mapping[int, PartitionSpec] | None = None,
    schema: Schema | None = None,
) -> list[ManifestEntry]:
    """Like :func:`read_manifest`, for the bytes of a manifest already in memory."""
    return decode_manifest_lazy(
        data, manifest, specs_by_id=specs_by_id, schema=schema, eager=True
    ).entries()


def decode_manifest_lazy(
    data: bytes,
    manifest: ManifestFile,
    *,
    specs_by_id: Mapping[int, PartitionSpec] | None = None,
    schema: Schema | None = None,
    eager: bool = False,
    columnar: bool | None = None,
    prepared: ManifestColumns | None = None,
) -> LazyManifest:
    """The entries of a manifest decoded in two steps: at once the head of each entry
    (status, inherited snapshot id, sequence numbers and first row id, content and
    partition tuple: enough to prune by partition), and each entry's full data file
    (metrics, path, splits) on first :meth:`LazyManifest.entry`. ``eager`` decodes every
    entry in full now, which is cheaper when all of them will be needed.

    ``columnar`` chooses the decoder: the columnar reader (True; files it cannot
    read go to fastavro), fastavro alone (False), or as ``NEVE_MANIFEST_DECODER`` says
    (None, the default; see :mod:`neve.planning.manifest_columnar`), except that
    manifests the manifest list counts fewer than :data:`FEW_ENTRIES` entries in go to
    fastavro, which decodes them before the columnar reader has set up its read."""
    try:
        return LazyManifest(data, manifest, specs_by_id, schema, eager, columnar, prepared)
    except DECODE_ERRORS as exc:
        raise _damaged(manifest, exc) from exc


#: Below this many entries (by the manifest list's counts) fastavro decodes a manifest
#: about as fast as the columnar reader or faster: measured here, eagerly, with metrics
#: of 16 columns, 0.14 against 0.73 ms for one entry, 0.71 against 0.71 ms for ten, 1.1
#: against 0.75 ms for sixteen, 1.9 against 0.85 ms for thirty (fewer metric columns
#: favour fastavro: with one, it is still faster at thirty).
FEW_ENTRIES = 16


def _few_entries(manifest: ManifestFile) -> bool:
    # counts of 0 say nothing (old v1 lists may lack them): the default decoder reads it
    m = manifest
    return 0 < m.added_files_count + m.existing_files_count + m.deleted_files_count < FEW_ENTRIES


@dataclass(frozen=True)
class ManifestReads:
    """The columnar reads of some manifests, prepared: the files of one writer schema and
    codec together (see ``manifest_columnar.ColumnarRead``)."""

    #: How many manifests were given.
    count: int
    #: The positions of the manifests each read covers, and the read.
    reads: tuple[tuple[tuple[int, ...], ColumnarRead], ...]


def prepare_manifest_reads(datas: Sequence[bytes]) -> ManifestReads:
    """Group the manifest files by writer schema and codec and prepare one columnar read
    per group (on the calling thread: it runs Python)."""
    groups: dict[tuple[str, str], list[int]] = {}
    headers: dict[int, AvroHeader] = {}
    for i, data in enumerate(datas):
        try:
            headers[i] = header = read_header(data)
            groups.setdefault((header.schema_text, header.codec), []).append(i)
        except (ValueError, EOFError, KeyError):
            continue  # decode_manifest_lazy reports it
    reads = []
    for (text, _), members in groups.items():
        try:
            decoding = decoding_schema(text)
        except DECODE_ERRORS:
            continue
        read = prepare_read([datas[i] for i in members], [headers[i] for i in members], decoding)
        if read is not None:
            reads.append((tuple(members), read))
    return ManifestReads(len(datas), tuple(reads))


def run_manifest_reads(reads: ManifestReads) -> list[pa.Table | None]:
    """The reader's part of the reads: hardly holds the GIL, so run it on threads."""
    return [run_read(read) for _, read in reads.reads]


def finish_manifest_reads(
    reads: ManifestReads, tables: Sequence[pa.Table | None]
) -> list[ManifestColumns | None]:
    """The columns of each manifest for :func:`decode_manifests_lazy`; None for a file
    fastavro will decode."""
    prepared: list[ManifestColumns | None] = [None] * reads.count
    for (members, read), table in zip(reads.reads, tables, strict=True):
        for i, columns in zip(members, finish_read(read, table) or (), strict=False):
            prepared[i] = columns
    return prepared


def read_manifest_columns(datas: Sequence[bytes]) -> list[ManifestColumns | None]:
    """Prepare, run and finish the columnar reads of some manifests on this thread."""
    reads = prepare_manifest_reads(datas)
    return finish_manifest_reads(reads, run_manifest_reads(reads))


def decode_manifests_lazy(
    datas: Sequence[bytes],
    manifests: Sequence[ManifestFile],
    *,
    specs_by_id: Mapping[int, PartitionSpec] | None = None,
    eager: Sequence[bool] | None = None,
    columnar: bool | None = None,
    prepared: Sequence[ManifestColumns | None] | None = None,
) -> list[LazyManifest]:
    """:func:`decode_manifest_lazy` for several manifests (with one ``eager`` flag
    each). The columnar decoder reads them with :func:`read_manifest_columns` unless
    ``prepared`` holds what it returned."""
    flags = list(eager) if eager is not None else [False] * len(manifests)
    if columnar is None:
        columnar = columnar_enabled()
    if prepared is None:
        prepared = read_manifest_columns(datas) if columnar else [None] * len(datas)
    return [
        decode_manifest_lazy(
            data, m, specs_by_id=specs_by_id, eager=e, columnar=columnar, prepared=p
        )
        for data, m, e, p in zip(datas, manifests, flags, prepared, strict=True)
    ]


def _damaged(manifest: ManifestFile, exc: Exception) -> NeveIOError:
    return NeveIOError(
        f"cannot read manifest {manifest.manifest_path}: {exc!r}; the file is damaged or "
        "not an Iceberg manifest"
    )


#: What fastavro and record access raise on a damaged or foreign file.
DECODE_ERRORS = (
    ValueError,
    EOFError,
    KeyError,
    TypeError,
    IndexError,
    struct.error,
    SchemaError,
)


@dataclass
class _Heads:
    """What a head decode gives, one list per field with one item per entry: status
    codes, snapshot ids, data and file sequence numbers (None when absent), content
    codes, record counts, first row ids, partitions (records, or spec-ordered tuples
    from the columnar decoder), and the full data_file records when they were decoded
    too (else None)."""

    status: list[int]
    snapshot_id: list[Any]
    sequence_number: list[Any]
    file_sequence_number: list[Any]
    content: list[Any]
    record_count: list[int]
    first_row_id: list[Any]
    partition: list[Any]
    full: list[Mapping[str, Any]] | None


def _record_heads(records: Iterable[Any], full: bool) -> _Heads:
    """Heads of fastavro-decoded entry records."""
    heads = _Heads([], [], [], [], [], [], [], [], [] if full else None)
    for rec in records:
        df = rec["data_file"]
        heads.status.append(rec["status"])
        heads.snapshot_id.append(rec["snapshot_id"])
        heads.sequence_number.append(rec.get("sequence_number"))
        heads.file_sequence_number.append(rec.get("file_sequence_number"))
        heads.content.append(df.get("content"))
        heads.record_count.append(df["record_count"])
        heads.first_row_id.append(df.get("first_row_id"))
        heads.partition.append(df["partition"])
        if heads.full is not None:
            heads.full.append(df)
    return heads


def _inherit(values: list[Any], inherited: Any, only: list[bool] | None) -> list[Any]:
    """``values`` with None replaced by ``inherited`` (where ``only`` is True, if given)."""
    if inherited is None or None not in values:
        return values
    if only is None:
        if values.count(None) == len(values):  # as writers leave them: all inherited
            return [inherited] * len(values)
        return [inherited if v is None else v for v in values]
    return [inherited if v is None and o else v for v, o in zip(values, only, strict=True)]


class LazyManifest:
    """The entries of one manifest; see :func:`decode_manifest_lazy`. Immutable once
    built apart from the memo of full entries; safe to share between threads (two
    threads may decode the same entry; both get equal values)."""

    __slots__ = (
        "_blocks",
        "_columns",
        "_entries",
        "_inherited",
        "_locations",
        "_partition_of",
        "_schema",
        "contents",
        "manifest",
        "partitions",
        "statuses",
    )

    def __init__(
        self,
        data: bytes,
        manifest: ManifestFile,
        specs_by_id: Mapping[int, PartitionSpec] | None,
        schema: Schema | None,
        eager: bool,
        columnar: bool | None = None,
        prepared: ManifestColumns | None = None,
    ) -> None:
        self.manifest = manifest
        #: Per entry, in file order: status, content and partition tuple (spec order).
        self.statuses: list[ManifestEntryStatus] = []
        self.contents: list[DataFileContent] = []
        self.partitions: list[tuple[Any, ...]] = []
        # per entry: (snapshot id, data seq, file seq, first row id)
        self._inherited: list[tuple[int | None, int | None, int | None, int | None]] = []
        self._blocks: list[bytes] = []
        self._locations: list[tuple[int, int]] = []  # (block index, offset in block)
        self._entries: list[ManifestEntry | None] = []
        self._columns: ManifestColumns | None = None

        spec = specs_by_id.get(manifest.partition_spec_id) if specs_by_id else None
        partition_types: tuple[IcebergType, ...] | None = None
        if spec is not None and schema is not None:
            partition_types = _partition_types(spec, schema)
        header = read_header(data)
        metadata = header.metadata()
        if spec is not None:
            spec_ids: tuple[int, ...] | None = tuple(f.field_id for f in spec.fields)
        else:
            spec_text = metadata.get("partition-spec")
            spec_ids = spec_ids_from_json(spec_text) if spec_text is not None else None
        plan = entry_plan(metadata["avro.schema"], spec_ids, partition_types)
        self._partition_of = plan.partition
        self._schema = plan.schema
        if columnar is None:
            columnar = columnar_enabled() and not _few_entries(manifest)
        columns = None
        if columnar:
            columns = prepared if prepared is not None else read_columns(data, header, plan.schema)
        if columns is not None:
            try:
                self._columns = columns
                head_columns = columns.heads(plan.partition_keys, plan.partition_convs)
                self._read_heads(_Heads(*head_columns, full=None), plan, None)
                if eager:
                    self._fill(range(len(self.statuses)))
                return
            except DECODE_ERRORS:  # columns read but neve cannot use: fastavro
                self._reset()
        reader = open_container(data)
        if not eager and plan.head is not None:
            try:
                heads = self._heads(reader, plan.schema, plan.head)
                self._read_heads(_record_heads(heads, False), plan, self._partition_of)
                return
            except SchemaResolutionError:  # fastavro cannot project this schema: no heads
                self._reset()
                reader = open_container(data)
        records = iter_records(reader, plan.schema)
        self._read_heads(_record_heads(records, True), plan, self._partition_of)

    def _reset(self) -> None:
        self.statuses, self.contents, self.partitions, self._inherited = [], [], [], []
        self._blocks, self._locations, self._entries = [], [], []
        self._columns = None

    def _heads(self, reader: Any, schema: Any, head: Any) -> Iterator[Any]:
        """Head records of every block (fastavro resolves ``schema`` to ``head``,
        skipping the other fields), remembering where each entry starts."""
        blocks, locations = self._blocks, self._locations
        decode = fastavro.schemaless_reader
        for block in reader:
            data = block_bytes(block)
            index = len(blocks)
            blocks.append(data)
            buf = _io.BytesIO(data)
            for _ in range(block.num_records):
                locations.append((index, buf.tell()))
                yield decode(buf, schema, head)

    def _read_heads(
        self, heads: _Heads, plan: EntryPlan, partition_of: Callable[[Any], Any] | None
    ) -> None:
        """Fill the per-entry memos from heads, whose partitions ``partition_of`` turns
        into spec-ordered tuples (None: they are tuples already); entries whose full
        data_file record was decoded too are built at once. Column by column, as list
        comprehensions: planning reads the heads of every entry of every manifest."""
        manifest = self.manifest
        n = len(heads.status)
        statuses = [ENTRY_STATUSES[c] for c in heads.status]
        snapshot_ids = _inherit(heads.snapshot_id, manifest.added_snapshot_id, None)
        if plan.has_sequence_numbers:
            # spec "Sequence Number Inheritance": null means inherit, for ADDED entries
            # (and, as Java does, for any entry of a manifest with sequence number 0)
            seq = manifest.sequence_number if manifest.sequence_number >= 0 else None
            every = seq == 0 or statuses.count(_ADDED) == n
            added = None if every else [s is _ADDED for s in statuses]
            seqs = _inherit(heads.sequence_number, seq, added)
            file_seqs = _inherit(heads.file_sequence_number, seq, added)
        else:
            seqs = file_seqs = [0] * n  # v1 manifests read as sequence number 0
        first_row_ids = heads.first_row_id
        next_row_id = manifest.first_row_id if manifest.content is ManifestContent.DATA else None
        if next_row_id is not None and None in first_row_ids:
            # spec "First Row ID Inheritance"; deleted entries are not given ids,
            # matching the ranges writers reserve (existing + added rows)
            first_row_ids = list(first_row_ids)
            for i, (status, count) in enumerate(zip(statuses, heads.record_count, strict=True)):
                if status is not _DELETED and first_row_ids[i] is None:
                    first_row_ids[i] = next_row_id
                    next_row_id += count
        partitions = (
            heads.partition if partition_of is None else [partition_of(p) for p in heads.partition]
        )
        inherited = list(zip(snapshot_ids, seqs, file_seqs, first_row_ids, strict=True))
        self.statuses = statuses
        self.contents = [FILE_CONTENTS[c or 0] for c in heads.content]
        self.partitions = partitions
        self._inherited = inherited
        self._entries = [None] * n
        full = heads.full
        if full:
            names = full[0].keys()  # the records of one manifest share its schema
            self._build(range(n), {k: [df.get(k) for df in full] for k in names}, True)

    def _build(
        self, indices: Sequence[int], files: Mapping[str, Sequence[Any]], records: bool
    ) -> None:
        """Build and keep the entries at ``indices`` from the fields of their data_file
        records given column by column (one value per index; a field the file lacks may
        be missing), the metric maps as fastavro's key/value ``records`` or as maps (the
        columnar decoder's). Converted column by column: a plan builds every file it
        returns."""
        n = len(indices)
        inherited = [self._inherited[i] for i in indices]
        columns = {name: files.get(name) or [None] * n for name in PLAIN_FIELDS}
        if records:
            for name in METRIC_MAPS:
                columns[name] = [int_keyed(m) for m in columns[name]]
        columns["file_format"] = [
            FILE_FORMATS.get(f) or FileFormat.parse(f) for f in files["file_format"]
        ]
        columns["content"] = [FILE_CONTENTS[c] for c in files.get("content", [0] * n)]
        for name in ("split_offsets", "equality_ids"):
            columns[name] = [None if v is None else tuple(v) for v in columns[name]]
        columns["partition"] = [self.partitions[i] for i in indices]
        columns["first_row_id"] = [ids[3] for ids in inherited]
        columns["spec_id"] = [self.manifest.partition_spec_id] * n
        statuses, entries = self.statuses, self._entries
        rows = zip(*[columns[name] for name in DATA_FILE_FIELDS], strict=True)
        for i, (snapshot_id, seq, file_seq, _), row in zip(indices, inherited, rows, strict=True):
            entries[i] = assemble(
                ManifestEntry,
                {
                    "status": statuses[i],
                    "snapshot_id": snapshot_id,
                    "sequence_number": seq,
                    "file_sequence_number": file_seq,
                    "data_file": assemble(DataFile, dict(zip(DATA_FILE_FIELDS, row, strict=True))),
                },
            )

    def __len__(self) -> int:
        return len(self.statuses)

    def entry(self, i: int) -> ManifestEntry:
        """Entry ``i`` (file order) in full, decoded on first use."""
        e = self._entries[i]
        if e is not None:
            return e
        if self._columns is not None:
            return self.entries_at((i,))[0]
        try:
            block, pos = self._locations[i]
            buf = _io.BytesIO(self._blocks[block])
            buf.seek(pos)
            rec: Any = fastavro.schemaless_reader(buf, self._schema, None)
            self._build((i,), {k: [v] for k, v in rec["data_file"].items()}, True)
        except DECODE_ERRORS as exc:
            raise _damaged(self.manifest, exc) from exc
        e = self._entries[i]
        assert e is not None  # just built
        return e

    def metrics_at(
        self, indices: Sequence[int], field_ids: Iterable[int]
    ) -> list[tuple[Any, ...]] | None:
        """For entries not yet decoded in full, their record counts and metrics limited
        to ``field_ids`` (see ``ManifestColumns.metrics``), cheaper than decoding them;
        None unless the columnar decoder read this manifest."""
        return self._from_columns(lambda columns: columns.metrics(indices, field_ids))

    def metric_arrays(self, field_ids: Iterable[int]) -> MetricArrays | None:
        """Every entry's record count and metrics of ``field_ids`` as arrays (see
        ``ManifestColumns.metric_arrays``); None unless the columnar decoder read this
        manifest."""
        return self._from_columns(lambda columns: columns.metric_arrays(field_ids))

    def _from_columns(self, read: Callable[[ManifestColumns], _T]) -> _T | None:
        """``read`` of this manifest's columns; None unless the columnar decoder read
        the manifest."""
        columns = self._columns
        if columns is None:
            return None
        try:
            return read(columns)
        except DECODE_ERRORS as exc:
            raise _damaged(self.manifest, exc) from exc

    def is_decoded(self, i: int) -> bool:
        """Whether entry ``i`` is decoded in full already."""
        return self._entries[i] is not None

    def entries_at(self, indices: Sequence[int]) -> list[ManifestEntry]:
        """The entries at ``indices`` (file order) in full; decodes those not yet
        decoded together, which the columnar decoder does much faster than one by one."""
        if self._columns is not None:
            self._fill(indices)
        return [self.entry(i) for i in indices]

    def _fill(self, indices: Iterable[int]) -> None:
        columns = self._columns
        entries = self._entries
        missing = [i for i in indices if entries[i] is None]
        if columns is None or not missing:
            return
        try:
            self.store_files(missing, columns.data_file_columns(missing))
        except DECODE_ERRORS as exc:
            raise _damaged(self.manifest, exc) from exc

    @property
    def columns(self) -> ManifestColumns | None:
        """The Arrow columns of the entries, when the columnar decoder read them."""
        return self._columns

    def store_files(self, indices: Sequence[int], files: Mapping[str, Sequence[Any]]) -> None:
        """Build and keep the entries at ``indices`` from the fields of their data_file
        records, column by column (as ``ManifestColumns.data_file_columns`` gives them)."""
        self._build(indices, files, False)

    def entries(self) -> list[ManifestEntry]:
        """Every entry in full."""
        return self.entries_at(range(len(self.statuses)))

    def live_entries(self) -> list[ManifestEntry]:
        """The entries that are not DELETED, in full."""
        gone = _DELETED
        return self.entries_at([i for i, s in enumerate(self.statuses) if s is not gone])


def _partition_types(spec: PartitionSpec, schema: Schema) -> tuple[IcebergType, ...] | None:
    try:
        return tuple(f.field_type for f in spec.partition_type(schema).fields)
    except ValidationError:
        # a spec over a column the schema no longer has: fall back to the Avro types
        return None


# ======================================================================================
# Reading manifest lists
# ======================================================================================


_list_schema = lru_cache(maxsize=32)(_schemas.manifest_list_decoding_schema)


def read_manifest_list(io: FileIO, path: str) -> list[ManifestFile]:
    """All entries of a manifest list. v1 lists read as data manifests with sequence
    number 0; counts a v1 writer left out are taken from the manifest itself, so that
    "has added/existing files" stays truthful."""
    data = io.read_bytes(path)
    try:
        reader = open_container(data)
        metadata = reader.metadata
        rows = [
            _manifest_file(rec, metadata)
            for rec in iter_records(reader, _list_schema(metadata["avro.schema"]))
        ]
    except DECODE_ERRORS as exc:
        raise NeveIOError(
            f"cannot read manifest list {path}: {exc!r}; the file is damaged or not an "
            "Iceberg manifest list"
        ) from exc
    return [_with_counts(io, m) if missing else m for m, missing in rows]


_MANIFEST_CONTENTS = {c.value: c for c in ManifestContent}

_COUNT_FIELDS = (
    "added_files_count",
    "existing_files_count",
    "deleted_files_count",
    "added_rows_count",
    "existing_rows_count",
    "deleted_rows_count",
)


def _manifest_file(
    rec: Mapping[str, Any], metadata: Mapping[str, str]
) -> tuple[ManifestFile, bool]:
    """A manifest-list record as a ManifestFile, and whether any count was missing."""
    get = rec.get
    summaries = get("partitions")
    snapshot_id = get("added_snapshot_id")
    if snapshot_id is None:  # optional in v1 lists
        snapshot_id = int(metadata.get("snapshot-id", "-1"))
    seq = get("sequence_number")
    seq = 0 if seq is None else seq  # v1 lists: sequence number 0
    min_seq = get("min_sequence_number")
    counts = [get(k) for k in _COUNT_FIELDS]
    m = assemble(
        ManifestFile,
        {
            "manifest_path": rec["manifest_path"],
            "manifest_length": rec["manifest_length"],
            "partition_spec_id": rec["partition_spec_id"],
            "content": _MANIFEST_CONTENTS[get("content") or 0],
            "sequence_number": seq,
            "min_sequence_number": seq if min_seq is None else min_seq,
            "added_snapshot_id": snapshot_id,
            "added_files_count": counts[0] or 0,
            "existing_files_count": counts[1] or 0,
            "deleted_files_count": counts[2] or 0,
            "added_rows_count": counts[3] or 0,
            "existing_rows_count": counts[4] or 0,
            "deleted_rows_count": counts[5] or 0,
            "partitions": None
            if summaries is None
            else tuple(
                assemble(
                    FieldSummary,
                    {
                        "contains_null": s["contains_null"],
                        "contains_nan": s.get("contains_nan"),
                        "lower_bound": s.get("lower_bound"),
                        "upper_bound": s.get("upper_bound"),
                    },
                )
                for s in summaries
            ),
            "key_metadata": get("key_metadata"),
            "first_row_id": get("first_row_id"),
        },
    )
    return m, None in counts


def _with_counts(io: FileIO, m: ManifestFile) -> ManifestFile:
    """Fill in the counts an old v1 manifest list left null by reading the manifest."""
    files = {s: 0 for s in ManifestEntryStatus}
    rows = {s: 0 for s in ManifestEntryStatus}
    for e in read_manifest(io, m):
        files[e.status] += 1
        rows[e.status] += e.data_file.record_count
    return m.with_(
        added_files_count=files[ManifestEntryStatus.ADDED],
        existing_files_count=files[ManifestEntryStatus.EXISTING],
        deleted_files_count=files[ManifestEntryStatus.DELETED],
        added_rows_count=rows[ManifestEntryStatus.ADDED],
        existing_rows_count=rows[ManifestEntryStatus.EXISTING],
        deleted_rows_count=rows[ManifestEntryStatus.DELETED],
    )
