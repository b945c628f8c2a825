"""Columnar decoding of manifests, for planning.

fastavro decodes a manifest one entry at a time into dicts: about 80 µs an entry when
data files carry metrics for 16 columns, and the same again to skip those metrics, so
the first plan over many manifests is bound by it. A compiled Avro reader (polars-avro,
over arrow-rs's Avro decoder) decodes a whole file into Arrow columns about twenty
times faster (and 2.5 times faster than polars' own ``read_avro``). neve keeps those
columns and makes Python objects only of what planning needs: the head of every entry
(status, inherited ids, partition), and the full data file of the entries that survive
partition pruning.

The reader is an optimisation here, not a second definition of the format: the decoding
plan (canonical field names by field id, partition converters, inheritance rules)
stays the one ``manifest_io`` derives from the file's writer schema; columns are
matched to it by position, which both readers take from the same writer schema
(rewritten where the reader needs it, :mod:`neve.planning.avro_reader`). A file
the reader cannot read (an unsupported codec, a schema it rejects) returns None here
and is decoded by fastavro. ``NEVE_MANIFEST_DECODER=fastavro`` turns this path off,
and so does forking a process that has used the reader (see ``columnar_enabled``).
Any failure of the reader sends the files to fastavro.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import fastavro
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from neve.expressions.metric_arrays import Bounds, Counts, MetricArrays
from neve.io.pools import ForkGuard
from neve.planning.arrow_values import binaries, gather, ints, lazy_maps, spans, valid
from neve.planning.avro_reader import read_arrow, readable_schema
from neve.spec.avro_container import AvroHeader
from neve.spec.manifest_io import METRIC_MAPS

__all__ = [
    "ColumnarRead",
    "FileColumns",
    "HeadColumns",
    "ManifestColumns",
    "columnar_enabled",
    "data_files_together",
    "finish_read",
    "metric_arrays_together",
    "prepare_read",
    "read_columns",
    "read_columns_many",
    "run_read",
]

#: Per entry: status codes, snapshot ids, sequence numbers, file sequence numbers, content
#: codes, record counts, first row ids, partition tuples (see ``ManifestColumns.heads``).
HeadColumns = tuple[
    list[Any], list[Any], list[Any], list[Any], list[Any], list[Any], list[Any], list[Any]
]

#: The fields of some data_file records column by column: canonical name -> one value
#: per record (see ``ManifestColumns.data_file_columns``).
FileColumns = dict[str, list[Any]]

#: Environment variable choosing the manifest decoder: "columnar" (default) or "fastavro".
DECODER_ENV = "NEVE_MANIFEST_DECODER"

#: data_file fields holding int-keyed maps, stored as arrays of key/value records.
_MAPS = frozenset(METRIC_MAPS)


# native readers run thread pools once used (polars' deadlocks a child forked after it
# ran): a process forked after this process used the reader decodes with fastavro.
_READER = ForkGuard()


#: The metric maps ``metrics`` returns, in ``InclusiveMetricsEvaluator.eval_metrics``
#: order.
_METRICS = (
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
)


def columnar_enabled() -> bool:
    """Whether to decode manifests with the columnar reader: unless
    ``NEVE_MANIFEST_DECODER`` says "fastavro", or this process was forked from one that
    had used it."""
    if _READER.forked_after_use:
        return False
    return os.environ.get(DECODER_ENV, "columnar").strip().lower() != "fastavro"


#: A map column's item offsets and keys, and the positions ``_key_positions_at`` found
#: in it.
_Layout = tuple[npt.NDArray[Any], npt.NDArray[Any], dict[int, npt.NDArray[np.int64]]]


def _record(schema: Any) -> dict[str, Any] | None:
    """A fastavro-parsed record schema, or the record branch of an optional one."""
    if isinstance(schema, list):
        schema = next((b for b in schema if isinstance(b, dict)), None)
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return None
    return schema


def _names(schema: Any) -> list[str] | None:
    """Field names of a (possibly optional) record schema."""
    record = _record(schema)
    return None if record is None else [f["name"] for f in record["fields"]]


def _field_type(schema: Any, name: str) -> Any:
    record = _record(schema)
    assert record is not None  # callers check _names first
    return next(f["type"] for f in record["fields"] if f["name"] == name)


def _raw(arr: pa.Array) -> pa.Array:
    """A partition column as the raw values fastavro gives without logical types:
    days for dates, micro- or nanoseconds for timestamps (in the unit the reader took from
    the logical type), microseconds for times; other types as they are."""
    t = arr.type
    # dates and timestamps are their integers underneath: a view (zero-copy) rather
    # than a cast, whose first use in a process costs ~5 ms (pyarrow's kernel set-up)
    if pa.types.is_date32(t):
        return arr.view(pa.int32())
    if pa.types.is_timestamp(t):
        return arr.view(pa.int64())
    if pa.types.is_date(t):
        return arr.cast(pa.int32())
    if pa.types.is_time(t):
        return arr.cast(pa.time64("us")).cast(pa.int64())
    return arr


def _struct_children(arr: pa.Array, names: Sequence[str]) -> dict[str, pa.Array] | None:
    if not pa.types.is_struct(arr.type) or arr.type.num_fields != len(names):
        return None
    return {name: arr.field(i) for i, name in enumerate(names)}


def _map_items(arr: pa.Array) -> tuple[npt.NDArray[Any], pa.StructArray]:
    """The key/value items of a list<struct<key, value>> column's rows, and offsets
    into them (one more than rows: row i holds items ``offsets[i]`` up to
    ``offsets[i + 1]``)."""
    offsets = ints(arr.offsets)  # absolute positions in arr.values
    start = int(offsets[0])
    return offsets - start, arr.values.slice(start, int(offsets[-1]) - start)


class ManifestColumns:
    """The entries of one manifest as Arrow columns, under canonical names."""

    __slots__ = (
        "_arrays",
        "_data_file",
        "_df_fields",
        "_entry",
        "_heads",
        "_metrics",
        "_partition",
        "length",
        "origin",
        "start",
    )

    def __init__(
        self,
        entry: dict[str, pa.Array],
        data_file: pa.StructArray,
        df_fields: dict[str, int],
        partition: dict[str, pa.Array],
        origin: ManifestColumns | None = None,
        start: int = 0,
    ) -> None:
        self._entry = entry
        self._data_file = data_file
        #: The canonical names of the data_file fields but the partition, and their
        #: positions in ``data_file``.
        self._df_fields = df_fields
        self._partition = partition
        self.length = len(data_file)
        #: The columns of the whole read these are a slice of (themselves when
        #: not a slice), and where in them the slice starts.
        self.origin: ManifestColumns = self if origin is None else origin
        self.start = start
        self._metrics: dict[frozenset[int], list[tuple[Any, ...]]] = {}
        self._arrays: dict[frozenset[int], MetricArrays | None] = {}
        self._heads: dict[tuple[Any, ...], HeadColumns] = {}

    def _entry_column(self, name: str) -> list[Any]:
        col = self._entry.get(name)
        # (all null: optional fields writers leave out, such as inherited sequence numbers)
        if col is None or col.null_count == self.length:
            return [None] * self.length
        values: list[Any] = col.to_pylist()
        return values

    def _df_field(self, name: str) -> pa.Array | None:
        """The data_file column ``name``, or None when the file lacks it."""
        i = self._df_fields.get(name)
        return None if i is None else self._data_file.field(i)

    def _df_column(self, name: str) -> list[Any]:
        col = self._df_field(name)
        values: list[Any] = [None] * self.length if col is None else col.to_pylist()
        return values

    def heads(
        self,
        keys: Sequence[str | None],
        convs: Sequence[Callable[[Any], Any] | None],
    ) -> HeadColumns:
        """Lists with one item per entry: status codes, snapshot ids, sequence numbers,
        file sequence numbers, content codes, record counts, first row ids, and partition
        tuples in spec order (the columns named by ``keys``, None for a key the file
        lacks, converted by ``convs``). Full records: see ``data_files``. A slice of a
        larger read takes its part of the whole read's lists, made once (a few Arrow
        calls a column, whatever the length)."""
        origin = self.origin
        if origin is not self:
            memo = (*keys, *convs)
            whole = origin._heads.get(memo)
            if whole is None:
                whole = origin._heads[memo] = origin.heads(keys, convs)
            a, b = self.start, self.start + self.length
            s, i, q, f, c, r, first, p = (column[a:b] for column in whole)
            return s, i, q, f, c, r, first, p
        n = self.length
        values: list[Iterable[Any]] = []
        for key, conv in zip(keys, convs, strict=True):
            if key is None:
                values.append(repeat(None, n))
                continue
            raw = _raw(self._partition[key]).to_pylist()
            values.append(raw if conv is None else [None if v is None else conv(v) for v in raw])
        return (
            self._entry_column("status"),
            self._entry_column("snapshot_id"),
            self._entry_column("sequence_number"),
            self._entry_column("file_sequence_number"),
            self._df_column("content"),
            self._df_column("record_count"),
            self._df_column("first_row_id"),
            list(zip(*values, strict=True)) if values else [()] * n,
        )

    def metrics(self, indices: Sequence[int], field_ids: Iterable[int]) -> list[tuple[Any, ...]]:
        """Per entry at ``indices``: its record count and its value, null and NaN counts
        and lower and upper bounds, each map holding only the keys in ``field_ids``
        (None where the entry has no such map), as ``InclusiveMetricsEvaluator.
        eval_metrics`` takes them; without building the entries' full maps. Computed
        for every entry once per set of fields (repeated plans ask again)."""
        key = frozenset(field_ids)
        found = self._metrics.get(key)
        if found is None:
            wanted = pa.array(sorted(key), type=pa.int32())
            columns = [self._df_column("record_count")]
            columns.extend(self._metric_subsets(name, wanted) for name in _METRICS)
            found = self._metrics[key] = list(zip(*columns, strict=True))
        return [found[i] for i in indices]

    def _metric_subsets(self, name: str, wanted: pa.Array) -> list[dict[int, Any] | None]:
        """Per entry, its metric map ``name`` limited to the keys in ``wanted``."""
        col = self._df_field(name)
        if col is None:
            return [None] * self.length
        out: list[dict[int, Any] | None] = [
            None if n is None else {} for n in pc.list_value_length(col).to_pylist()
        ]
        flat = pc.list_flatten(col)
        keys = flat.field(0)
        chosen = pc.is_in(keys, value_set=wanted)
        values = flat.field(1)
        if pa.types.is_binary_view(values.type):  # no filter kernel for views
            values = values.cast(pa.large_binary())
        for parent, k, v in zip(
            pc.list_parent_indices(col).filter(chosen).to_pylist(),
            keys.filter(chosen).to_pylist(),
            values.filter(chosen).to_pylist(),
            strict=True,
        ):
            found = out[parent]
            if found is not None:
                found[k] = v  # in order: the last of repeated keys wins
        return out

    def metric_arrays(self, field_ids: Iterable[int]) -> MetricArrays | None:
        """The record counts and the metrics of ``field_ids`` of every entry, as arrays
        (computed once per set of fields); None when a column is not laid out as the
        spec has it (then ``metrics`` gives them entry by entry)."""
        key = frozenset(field_ids)
        if key not in self._arrays:
            self._arrays[key] = self._metric_arrays(sorted(key))
        return self._arrays[key]

    def _metric_arrays(
        self, fids: Sequence[int], rows: npt.NDArray[np.int64] | None = None
    ) -> MetricArrays | None:
        """The metric arrays of every entry, or of the entries at ``rows`` in order."""
        record_counts = self._df_field("record_count")
        if record_counts is None:
            return None
        if record_counts.null_count or not pa.types.is_int64(record_counts.type):
            return None
        if rows is None:
            found = [self._key_positions(name, fids) for name in _METRICS]
            counts_of = ints(record_counts)
        else:
            laid_out: list[_Layout] = []
            found = [self._key_positions_at(name, fids, rows, laid_out) for name in _METRICS]
            counts_of = ints(record_counts)[rows]
        counts = [None if f is None else _counts(*f) for f in found[:3]]
        bounds = [None if f is None else _bounds(*f) for f in found[3:]]
        values, nulls, nans = counts
        lower, upper = bounds
        if values is None or nulls is None or nans is None or lower is None or upper is None:
            return None
        return MetricArrays(counts_of, values, nulls, nans, lower, upper)

    def _key_positions(
        self, name: str, fids: Sequence[int]
    ) -> tuple[dict[int, npt.NDArray[np.int64]], pa.Array | None] | None:
        """For each field id, the position in the map ``name``'s flattened key/value
        entries of each entry's value for it (-1 where absent; the last of repeated
        keys, as a dict keeps), and those flattened values."""
        col = self._df_field(name)
        if col is None:
            return {}, None
        listed = pa.types.is_list(col.type) or pa.types.is_large_list(col.type)
        if not listed or not pa.types.is_struct(col.type.value_type):
            return None
        offsets, items = _map_items(col)
        if items.type.num_fields != 2:
            return None
        keys = items.field(0)
        if keys.null_count or not pa.types.is_integer(keys.type):
            return None
        key_array = ints(keys)
        ends = offsets[1:]
        valid = None if col.null_count == 0 else np.array(col.is_valid().to_pylist())
        found: dict[int, npt.NDArray[np.int64]] = {}
        for fid in fids:
            pos = np.flatnonzero(key_array == fid)
            owner = np.searchsorted(ends, pos, side="right")  # the entry holding pos
            if valid is not None:  # a null map's slots, if any, hold nothing
                live = valid[owner]
                pos, owner = pos[live], owner[live]
            last = np.ones(len(pos), dtype=np.bool_)
            last[:-1] = owner[1:] != owner[:-1]
            where = np.full(self.length, -1, dtype=np.int64)
            where[owner[last]] = pos[last]
            found[fid] = where
        return found, items.field(1)

    def _key_positions_at(
        self,
        name: str,
        fids: Sequence[int],
        rows: npt.NDArray[np.int64],
        laid_out: list[_Layout],
    ) -> tuple[dict[int, npt.NDArray[np.int64]], pa.Array | None] | None:
        """``_key_positions`` for the entries at ``rows`` only (one item per row), the
        positions into the map's whole flattened values (which it returns). Maps laid
        out alike (the same offsets and keys, no nulls: writers give the maps of a file
        the same columns) share the positions: ``laid_out`` holds those of the maps
        done so far."""
        col = self._df_field(name)
        if col is None:
            return {}, None
        listed = pa.types.is_list(col.type) or pa.types.is_large_list(col.type)
        if not listed or not pa.types.is_struct(col.type.value_type):
            return None
        items = col.values
        if items.type.num_fields != 2:
            return None
        keys = items.field(0)
        if keys.null_count or not pa.types.is_integer(keys.type):
            return None
        layout = None
        if col.null_count == 0 and col.offset == 0 and items.offset == 0:
            layout = (ints(col.offsets), ints(keys))
            for offsets, key_values, found_before in laid_out:
                if np.array_equal(offsets, layout[0]) and np.array_equal(key_values, layout[1]):
                    return found_before, items.field(1)
        present = valid(col, rows)  # a null map holds nothing
        live = np.arange(len(rows)) if present is None else np.flatnonzero(present)
        found_spans = spans(col, rows[live])
        if found_spans is None:
            return None
        positions, lengths = found_spans
        owner = np.repeat(live, lengths)  # the row (index into rows) holding each item
        key_array = ints(keys)[positions]
        found: dict[int, npt.NDArray[np.int64]] = {}
        for fid in fids:
            hit = np.flatnonzero(key_array == fid)
            pos, own = positions[hit], owner[hit]
            last = np.ones(len(pos), dtype=np.bool_)
            last[:-1] = own[1:] != own[:-1]
            where = np.full(len(rows), -1, dtype=np.int64)
            where[own[last]] = pos[last]
            found[fid] = where
        if layout is not None:
            laid_out.append((*layout, found))
        return found, items.field(1)

    def split(self, counts: Sequence[int]) -> list[ManifestColumns]:
        """Consecutive parts of ``counts`` entries each (zero-copy slices)."""
        out = []
        start = 0
        for n in counts:
            out.append(
                ManifestColumns(
                    {k: a.slice(start, n) for k, a in self._entry.items()},
                    self._data_file.slice(start, n),
                    self._df_fields,
                    {k: a.slice(start, n) for k, a in self._partition.items()},
                    self.origin,
                    self.start + start,
                )
            )
            start += n
        return out

    def data_file_columns(self, indices: Sequence[int]) -> FileColumns:
        """The fields of the data_file records of the entries at ``indices``, column by
        column (canonical name -> one value per index), converted from the Arrow
        buffers (``arrow_values.gather``): a few numpy calls a column, however few the
        entries; a column no entry of the read holds costs nothing. The metric maps are
        ``LazyMap``s, converted (a column at a time) when first read: planning judges
        metrics on arrays, and most of the maps of the files it returns are never read."""
        rows = np.asarray(indices, dtype=np.int64)
        out: FileColumns = {}
        for name, i in self._df_fields.items():
            col = self._data_file.field(i)
            if col.null_count == len(col):  # all null: optional fields writers leave out
                out[name] = [None] * len(rows)
            elif name in _MAPS:
                out[name] = lazy_maps(col, rows)
            else:
                out[name] = gather(col, rows)
        return out


def data_files_together(
    parts: Sequence[tuple[ManifestColumns, Sequence[int]]],
) -> list[FileColumns]:
    """``data_file_columns`` of several manifests' entries (per manifest, its indices),
    the manifests read by one call of the reader converted in one pass over the arrays
    they are slices of (a pass costs a few numpy calls a column: planning a one-day
    filter over many manifests keeps one or two entries of each)."""
    out: list[FileColumns] = [{} for _ in parts]
    groups: dict[int, list[int]] = {}
    for k, (columns, _) in enumerate(parts):
        groups.setdefault(id(columns.origin), []).append(k)
    for members in groups.values():
        origin = parts[members[0]][0].origin
        rows = [
            columns.start + i
            for columns, indices in map(parts.__getitem__, members)
            for i in indices
        ]
        found = origin.data_file_columns(rows)
        at = 0
        for k in members:
            end = at + len(parts[k][1])
            out[k] = {name: values[at:end] for name, values in found.items()}
            at = end
    return out


def metric_arrays_together(
    parts: Sequence[tuple[ManifestColumns, Sequence[int]]],
    field_ids: Sequence[Iterable[int]],
) -> list[tuple[list[int], MetricArrays | None]]:
    """The metric arrays of several manifests' entries (per manifest, its indices, and
    in ``field_ids`` the fields whose metrics it needs), one per group of manifests
    read by one call of the reader: the positions in ``parts`` of the group's members,
    and the arrays of their entries in that order, of the fields of all members (None
    when a column is not laid out as the spec has it)."""
    groups: dict[int, list[int]] = {}
    for k, (columns, _) in enumerate(parts):
        groups.setdefault(id(columns.origin), []).append(k)
    out = []
    for members in groups.values():
        origin = parts[members[0]][0].origin
        rows = [parts[k][0].start + i for k in members for i in parts[k][1]]
        fids = sorted({f for k in members for f in field_ids[k]})
        out.append((members, origin._metric_arrays(fids, np.asarray(rows, dtype=np.int64))))
    return out


def _counts(
    where: dict[int, npt.NDArray[np.int64]], values: pa.Array | None
) -> dict[int, Counts] | None:
    """Per field id, which entries know the count, and the counts."""
    if values is None:
        return {}
    if values.null_count or not pa.types.is_integer(values.type):
        return None
    flat = ints(values).astype(np.int64, copy=False)
    out: dict[int, Counts] = {}
    for fid, pos in where.items():
        known = pos >= 0
        counts = np.zeros(len(pos), dtype=np.int64)
        counts[known] = flat[pos[known]]
        out[fid] = (known, counts)
    return out


def _bounds(
    where: dict[int, npt.NDArray[np.int64]], values: pa.Array | None
) -> dict[int, Bounds] | None:
    """Per field id, which entries know the bound, and the known bounds in order."""
    if values is None:
        return {}
    if values.null_count:
        return None
    out: dict[int, Bounds] = {}
    for fid, pos in where.items():
        known = pos >= 0
        found = binaries(values, pos[known])
        if found is None:
            return None
        out[fid] = (known, found)
    return out


def _one_chunk(col: pa.ChunkedArray) -> pa.Array:
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


#: Codecs the columnar path reads (fastavro decodes the others).
_CODECS = frozenset({"null", "deflate", "snappy"})


_LONG = fastavro.parse_schema("long")


def _blocks(data: bytes, header: AvroHeader) -> Iterator[tuple[int, int, int]]:
    """(start, end, record count) of each data block of an Avro file, the block's
    framing (count and size, two Avro longs) included, its sync marker excluded.
    ValueError when a block does not end with the file's sync marker."""
    buf = io.BytesIO(data)
    pos = header.end
    end_of_file = len(data)
    while pos < end_of_file:
        buf.seek(pos)
        count = fastavro.schemaless_reader(buf, _LONG, None)
        size = fastavro.schemaless_reader(buf, _LONG, None)
        if not isinstance(count, int) or not isinstance(size, int) or count < 0 or size < 0:
            raise ValueError(f"bad Avro block header at byte {pos}")
        end = buf.tell() + size
        if data[end : end + 16] != header.sync:
            raise ValueError(f"the Avro block at byte {pos} does not end with the sync marker")
        yield pos, end, count
        pos = end + 16


@dataclass(frozen=True)
class ColumnarRead:
    """One call of the Avro reader, prepared: the bytes it reads and how its columns
    become manifests. Preparing and finishing run Python (hold the GIL); only
    :func:`run_read` should go to another thread, where the reader runs without the GIL
    (a thread waiting for the GIL waits up to the interpreter's 5 ms switch interval).
    """

    #: One Avro file: a manifest, or several manifests' blocks behind the first one's
    #: header (with its schema rewritten for the reader where needed).
    data: bytes
    #: The fastavro-parsed decoding schema ``manifest_io`` derives from the writer schema.
    decoding_schema: Any
    #: Entries of each manifest read, in order; None for a single manifest.
    counts: tuple[int, ...] | None


def prepare_read(
    datas: Sequence[bytes], headers: Sequence[AvroHeader], decoding_schema: Any
) -> ColumnarRead | None:
    """A read of manifests with one writer schema and codec, in one call of the reader
    (each call has a set-up cost of its own): several files become one with
    the first one's header and every file's blocks, each followed by the first file's
    sync marker. None when the reader cannot read them (a codec it lacks, a process
    forked after it ran) or a file's blocks do not parse: fastavro decodes them then."""
    first = headers[0]
    if first.codec not in _CODECS or _READER.forked_after_use:
        return None
    counts: tuple[int, ...] | None = None
    data = datas[0]
    if len(datas) > 1:
        parts: list[bytes | memoryview] = [memoryview(datas[0])[: first.end]]
        found = []
        try:
            for one, header in zip(datas, headers, strict=True):
                view = memoryview(one)
                n = 0
                for start, end, count in _blocks(one, header):
                    parts.append(view[start:end])
                    parts.append(first.sync)
                    n += count
                found.append(n)
        except (ValueError, EOFError, TypeError):
            return None
        data, counts = b"".join(parts), tuple(found)
    readable = readable_schema(first.schema_text)
    if readable is not None:
        data = first.with_schema(data, readable)
    return ColumnarRead(data, decoding_schema, counts)


def run_read(read: ColumnarRead) -> pa.Table | None:
    """The reader's part of a read: the Avro file as an Arrow table, or None on any
    failure of the reader (fastavro decodes the files instead)."""
    _READER.use()
    try:
        return read_arrow(read.data)
    except Exception:  # whatever it raises (a private module: see avro_reader)
        return None


def finish_read(read: ColumnarRead, table: pa.Table | None) -> list[ManifestColumns] | None:
    """The columns of each manifest read, or None when they do not line up with the
    decoding schema."""
    if table is None:
        return None
    columns = _columns(table, read.decoding_schema)
    if columns is None:
        return None
    if read.counts is None:
        return [columns]
    if columns.length != sum(read.counts):
        return None
    return columns.split(read.counts)


def read_columns_many(
    datas: Sequence[bytes], headers: Sequence[AvroHeader], decoding_schema: Any
) -> list[ManifestColumns] | None:
    """The columns of several manifests with one writer schema and codec, read in one
    call of the reader (see :func:`prepare_read`); None when it cannot read them."""
    read = prepare_read(datas, headers, decoding_schema)
    return None if read is None else finish_read(read, run_read(read))


def read_columns(data: bytes, header: AvroHeader, decoding_schema: Any) -> ManifestColumns | None:
    """The columns of a manifest file, matched to ``decoding_schema`` (the fastavro-
    parsed decoding schema ``manifest_io`` derives from the file's writer schema); None
    when the reader cannot read the file or its columns do not line up with the schema."""
    found = read_columns_many([data], [header], decoding_schema)
    return None if found is None else found[0]


def _columns(table: pa.Table, decoding_schema: Any) -> ManifestColumns | None:
    """The reader's table under the canonical names of ``decoding_schema``, matched by
    position (both readers take the positions from the same writer schema)."""
    entry_names = _names(decoding_schema)
    if entry_names is None or "data_file" not in entry_names:
        return None
    df_schema = _field_type(decoding_schema, "data_file")
    df_names = _names(df_schema)
    if df_names is None:
        return None
    part_names: list[str] = []
    if "partition" in df_names:
        found = _names(_field_type(df_schema, "partition"))
        if found is None:
            return None
        part_names = found
    if table.num_columns != len(entry_names):
        return None
    entry = {name: _one_chunk(table.column(i)) for i, name in enumerate(entry_names)}
    data_file = entry["data_file"]
    # a partition without fields (unpartitioned) is not read (see readable_schema)
    read_names = [n for n in df_names if n != "partition" or part_names]
    if not pa.types.is_struct(data_file.type) or data_file.type.num_fields != len(read_names):
        return None
    partition: dict[str, pa.Array] = {}
    if part_names:
        children = _struct_children(data_file.field(read_names.index("partition")), part_names)
        if children is None:
            return None
        partition = children
    # canonical names, so that records converted carry the keys fastavro's would; the
    # partition apart (its logical types may not convert to Python: year 0 dates)
    fields = {name: i for i, name in enumerate(read_names) if name != "partition"}
    return ManifestColumns(entry, data_file, fields, partition)
