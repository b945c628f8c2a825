"""Write Arrow data as Iceberg Parquet data files: field ids in the Parquet schema, one
partition per file, files rolled at the target size, and the column metrics of each
file returned in a :class:`~neve.spec.manifest.DataFile`.

Nothing is committed here: the caller adds the returned files to a transaction, and
deletes them with :func:`delete_written_files` when the commit fails. If writing itself
fails, the files written so far (and the partial one) are deleted before the error is
raised.

Table properties honoured (defaults as in Iceberg-Java):
``write.target-file-size-bytes`` (512 MiB), ``write.parquet.row-group-size-bytes``
(128 MiB), ``write.parquet.compression-codec`` (zstd; uncompressed in the random-access
layout), ``write.parquet.compression-level``,
``write.parquet.page-size-bytes`` (1 MiB), ``write.parquet.page-row-limit`` (20000),
``write.parquet.dict-size-bytes`` (2 MiB), ``write.data.path``, the metrics modes
of :mod:`neve.arrow.metrics`, and the page index, bloom filters and layout preset of
:mod:`neve.arrow.layout`.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from neve.arrow.conform import conform_table
from neve.arrow.layout import ParquetLayoutOptions, parquet_codec
from neve.arrow.metrics import FloatStats, MetricsConfig, parquet_metrics
from neve.arrow.partitioning import PartitionSlice, partition_table
from neve.arrow.schema import to_arrow_schema
from neve.errors import NeveError, NeveIOError
from neve.io.fileio import FileIO
from neve.spec.manifest import DataFile, DataFileContent, FileFormat
from neve.spec.partition import PartitionSpec
from neve.spec.properties import TableProperties
from neve.spec.schema import Schema

__all__ = [
    "DataFileStream",
    "ParquetWriteOptions",
    "delete_written_files",
    "parquet_data_file",
    "write_data_files",
    "write_parquet_file",
]

MiB = 1024 * 1024

#: Returns the path of a new data file for a partition tuple and its directory path.
PathFactory = Callable[[tuple[Any, ...], str], str]
#: Told, for each chunk of rows written to a file, the file's path and the chunk's
#: passenger columns (:class:`DataFileStream`).
PassengerSink = Callable[[str, pa.Table], None]


_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "lz4": "lz4",
    "brotli": "brotli",
    "uncompressed": "none",
    "none": "none",
}


@dataclass(frozen=True)
class ParquetWriteOptions:
    """Parquet writer settings from table properties (the layout preset and the
    per-column settings: :mod:`neve.arrow.layout`)."""

    target_file_size: int
    row_group_size: int
    compression: str
    compression_level: int | None
    page_size: int
    page_row_limit: int
    dict_size: int
    layout: ParquetLayoutOptions = field(default_factory=ParquetLayoutOptions)

    @staticmethod
    def from_properties(properties: Mapping[str, str]) -> ParquetWriteOptions:
        """The settings the table properties ask for (read through
        :class:`~neve.spec.properties.TableProperties`: an unusable stored value is its
        default; the page size's default is the layout's)."""
        props = TableProperties(properties)
        codec = parquet_codec(properties)
        layout = ParquetLayoutOptions.from_properties(properties)
        page_key = "write.parquet.page-size-bytes"
        page_size = (
            props.as_int(page_key)
            if page_key in properties and page_key not in props.invalid
            else layout.page_size
        )
        return ParquetWriteOptions(
            target_file_size=props.as_int("write.target-file-size-bytes"),
            row_group_size=props.as_int("write.parquet.row-group-size-bytes"),
            compression=_CODECS[codec],
            compression_level=props.as_optional_int("write.parquet.compression-level"),
            page_size=page_size,
            page_row_limit=props.as_int("write.parquet.page-row-limit"),
            dict_size=props.as_int("write.parquet.dict-size-bytes"),
            layout=layout,
        )

    def writer_kwargs(self, schema: pa.Schema | None = None) -> dict[str, Any]:
        """The ``pyarrow.parquet.ParquetWriter`` arguments; ``schema`` (the Arrow schema
        written) names the columns that per-column settings apply to."""
        return {
            "compression": self.compression,
            "compression_level": self.compression_level,
            "data_page_size": self.page_size,
            "max_rows_per_page": self.page_row_limit,
            "dictionary_pagesize_limit": self.dict_size,
            # the spec stores decimals of precision <= 18 as int32/int64
            "store_decimal_as_integer": True,
            "write_time_adjusted_to_utc": False,
            "version": "2.6",
            **self.layout.writer_kwargs(schema, self.row_group_size),
        }


class _OpenFile:
    """One Parquet file being written, with the float statistics of its rows."""

    def __init__(
        self,
        io: FileIO,
        path: str,
        schema: Schema,
        arrow_schema: pa.Schema,
        options: ParquetWriteOptions,
    ) -> None:
        self.path = path
        self.floats = FloatStats(schema)
        self._stream = io.open_output(path)
        try:
            self._writer = pq.ParquetWriter(
                self._stream, arrow_schema, **options.writer_kwargs(arrow_schema)
            )
        except BaseException:
            self._stream.close()
            raise

    def write(self, chunk: pa.Table) -> None:
        self.floats.update(chunk)
        self._writer.write_table(chunk, row_group_size=max(1, chunk.num_rows))

    def tell(self) -> int:
        return int(self._stream.tell())

    def close(self) -> tuple[pq.FileMetaData, int]:
        self._writer.close()
        size = self.tell()
        self._stream.close()
        return self._writer.writer.metadata, size

    def abort(self) -> None:
        for closer in (self._writer.close, self._stream.close):
            with contextlib.suppress(Exception):  # the file is deleted next
                closer()


def parquet_data_file(
    path: str,
    size: int,
    metadata: pq.FileMetaData,
    schema: Schema,
    config: MetricsConfig,
    floats: FloatStats,
    partition: tuple[Any, ...],
    spec_id: int,
    content: DataFileContent = DataFileContent.DATA,
    equality_ids: tuple[int, ...] | None = None,
    sort_order_id: int | None = None,
) -> DataFile:
    """The DataFile of a written Parquet file, its metrics taken from the footer and
    ``floats`` (NaN counts and float bounds need the data)."""
    m = parquet_metrics(metadata, schema, config, floats)
    return DataFile(
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=partition,
        record_count=m.record_count,
        file_size_in_bytes=size,
        content=content,
        column_sizes=m.column_sizes,
        value_counts=m.value_counts,
        null_value_counts=m.null_value_counts,
        nan_value_counts=m.nan_value_counts,
        lower_bounds=m.lower_bounds,
        upper_bounds=m.upper_bounds,
        split_offsets=m.split_offsets,
        equality_ids=equality_ids,
        sort_order_id=sort_order_id,
        spec_id=spec_id,
    )


class _RollingWriter:
    """Writes slices to files of about the target size, row groups of about the
    row-group size, estimating compressed bytes per row from what was written."""

    def __init__(
        self,
        io: FileIO,
        schema: Schema,
        spec_id: int,
        paths: PathFactory,
        options: ParquetWriteOptions,
        config: MetricsConfig,
        sort_order_id: int | None,
        passengers: Sequence[str] = (),
        on_rows: PassengerSink | None = None,
    ) -> None:
        self.io = io
        self.schema = schema
        self.arrow_schema = to_arrow_schema(schema)
        self.spec_id = spec_id
        self.paths = paths
        self.options = options
        self.config = config
        self.sort_order_id = sort_order_id
        self.passengers = list(passengers)
        self.on_rows = on_rows
        self.written: list[str] = []
        self.files: list[DataFile] = []
        self._bytes = 0
        self._rows = 0
        self._open: _OpenFile | None = None
        self._partition: tuple[Any, ...] = ()

    def bytes_per_row(self, table: pa.Table) -> float:
        """Compressed bytes per row as written so far (before that, ``table``'s size in
        memory)."""
        if self._rows:
            return max(float(self._bytes) / self._rows, 1e-3)
        # before anything is written, the in-memory size is a safe overestimate
        rows: int = max(table.num_rows, 1)
        return max(float(table.nbytes) / rows, 1.0)

    def write(self, part: PartitionSlice, keep_open: bool = False) -> None:
        """Write the rows of one partition; with ``keep_open`` the last file stays open
        for more rows of the same partition (another partition closes it)."""
        if self._open is not None and self._partition != part.partition:
            self._close(self._partition)
        table = part.table
        n = table.num_rows
        offset = 0
        while offset < n:
            if self._open is None:
                path = self.paths(part.partition, part.path)
                self.written.append(path)
                self._open = _OpenFile(self.io, path, self.schema, self.arrow_schema, self.options)
                self._partition = part.partition
            current = self._open
            bpr = self.bytes_per_row(table)
            room = self.options.target_file_size - current.tell()
            rows = min(
                n - offset,
                max(1, math.ceil(self.options.row_group_size / bpr)),
                max(1, math.ceil(room / bpr)),
            )
            chunk = table.slice(offset, rows)
            if self.passengers:
                if self.on_rows is not None:
                    self.on_rows(current.path, chunk.select(self.passengers))
                chunk = chunk.drop_columns(self.passengers)
            before = current.tell()
            current.write(chunk)
            self._bytes += current.tell() - before
            self._rows += rows
            offset += rows
            if current.tell() >= self.options.target_file_size:
                self._close(part.partition)
        if not keep_open:
            self._close(part.partition)

    def finish(self) -> None:
        """Close the open file, if any."""
        self._close(self._partition)

    def _close(self, partition: tuple[Any, ...]) -> None:
        current, self._open = self._open, None
        if current is None:
            return
        metadata, size = current.close()
        self.files.append(
            parquet_data_file(
                current.path,
                size,
                metadata,
                self.schema,
                self.config,
                current.floats,
                partition,
                self.spec_id,
                DataFileContent.DATA,
                None,
                self.sort_order_id,
            )
        )

    def abort(self) -> None:
        if self._open is not None:
            self._open.abort()
            self._open = None
        delete_written_files(self.io, self.written)


def write_data_files(
    io: FileIO,
    table_schema: Schema,
    spec: PartitionSpec,
    data: pa.Table,
    location_provider: PathFactory,
    properties: Mapping[str, str] | None = None,
    *,
    sort_order_id: int | None = None,
) -> list[DataFile]:
    """Write ``data`` as Parquet data files of ``spec``'s partitions; return them.

    ``data`` is first fitted to ``table_schema`` by column name (see
    :func:`neve.arrow.conform.conform_table`); when that fails nothing is written.
    ``location_provider(partition, partition_path)`` names each new file.
    """
    props = properties or {}
    options = ParquetWriteOptions.from_properties(props)
    config = MetricsConfig.from_properties(table_schema, props)
    conformed = conform_table(data, table_schema)
    slices = partition_table(conformed, table_schema, spec)
    writer = _RollingWriter(
        io, table_schema, spec.spec_id, location_provider, options, config, sort_order_id
    )
    try:
        for part in slices:
            writer.write(part)
    except NeveError:
        writer.abort()
        raise
    except (OSError, pa.ArrowException) as exc:
        writer.abort()
        raise NeveIOError(f"writing data files failed: {exc}; nothing was kept") from exc
    except BaseException:
        writer.abort()
        raise
    return writer.files


class DataFileStream:
    """Writes a stream of Arrow tables as data files, each table as
    :func:`write_data_files` writes one (fitted to ``table_schema``, split by
    ``spec``'s partitions, files rolled at the target size), for a writer that gets its
    rows in batches (a Spark task). Rows clustered by partition, as a distributed write
    sorts them, fill target-size files across tables: the rows of one partition are
    gathered up to a row group before they are written, and a file stays open while
    its partition goes on.

    ``passengers`` are columns of the tables that are not written: for each chunk of
    rows written to a file, ``on_rows(path, passengers)`` gets their values in the
    file's row order. :meth:`close` returns the files; on failure call :meth:`abort`,
    which deletes them."""

    def __init__(
        self,
        io: FileIO,
        table_schema: Schema,
        spec: PartitionSpec,
        location_provider: PathFactory,
        properties: Mapping[str, str] | None = None,
        *,
        sort_order_id: int | None = None,
        passengers: Sequence[str] = (),
        on_rows: PassengerSink | None = None,
    ) -> None:
        props = properties or {}
        self.schema = table_schema
        self.spec = spec
        self.passengers = list(passengers)
        self._writer = _RollingWriter(
            io,
            table_schema,
            spec.spec_id,
            location_provider,
            ParquetWriteOptions.from_properties(props),
            MetricsConfig.from_properties(table_schema, props),
            sort_order_id,
            self.passengers,
            on_rows,
        )
        self._pending: list[PartitionSlice] = []
        self._pending_rows = 0

    def write(self, data: pa.Table) -> None:
        """Add ``data`` (the table's columns by name, and the passengers)."""
        if not data.num_rows:
            return
        body = conform_table(data.drop_columns(self.passengers), self.schema)
        for name in self.passengers:
            body = body.append_column(name, data.column(name))
        for part in partition_table(body, self.schema, self.spec):
            if self._pending and self._pending[0].partition != part.partition:
                self._flush()
            self._pending.append(part)
            self._pending_rows += part.table.num_rows
            per_group = self._writer.options.row_group_size / self._writer.bytes_per_row(part.table)
            if self._pending_rows >= per_group:
                self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        first = self._pending[0]
        rows = pa.concat_tables([p.table for p in self._pending])
        self._pending = []
        self._pending_rows = 0
        self._writer.write(PartitionSlice(first.partition, first.path, rows), keep_open=True)

    def close(self) -> list[DataFile]:
        """Write what is left, close the last file; the files written."""
        self._flush()
        self._writer.finish()
        return self._writer.files

    def abort(self) -> None:
        """Delete every file written (and the open one)."""
        self._pending = []
        self._writer.abort()


def write_parquet_file(
    io: FileIO,
    path: str,
    schema: Schema,
    data: pa.Table,
    properties: Mapping[str, str] | None = None,
    *,
    partition: tuple[Any, ...] = (),
    spec_id: int = 0,
    content: DataFileContent = DataFileContent.DATA,
    equality_ids: tuple[int, ...] | None = None,
    metrics: MetricsConfig | None = None,
    sort_order_id: int | None = None,
) -> DataFile:
    """Write one Parquet file (no partitioning, no rolling) and describe it.

    Used for delete files. ``data`` is fitted to ``schema`` as in
    :func:`write_data_files`; the file is deleted again if writing fails.
    """
    props = properties or {}
    options = ParquetWriteOptions.from_properties(props)
    config = metrics or MetricsConfig.from_properties(schema, props)
    conformed = conform_table(data, schema)
    opened: _OpenFile | None = None
    try:
        opened = _OpenFile(io, path, schema, conformed.schema, options)
        opened.write(conformed)
        metadata, size = opened.close()
    except BaseException as exc:
        if opened is not None:
            opened.abort()
        delete_written_files(io, [path])
        if isinstance(exc, (OSError, pa.ArrowException)) and not isinstance(exc, NeveError):
            raise NeveIOError(f"writing {path} failed: {exc}") from exc
        raise
    return parquet_data_file(
        path,
        size,
        metadata,
        schema,
        config,
        opened.floats,
        partition,
        spec_id,
        content,
        equality_ids,
        sort_order_id,
    )


def delete_written_files(io: FileIO, files: Iterable[DataFile | str]) -> list[str]:
    """Delete files written by a failed operation; missing files are fine.

    Returns the paths that could not be deleted (left for orphan-file cleanup) instead
    of raising, so the original error stays the one the caller sees.
    """
    failed = []
    for f in files:
        path = f.file_path if isinstance(f, DataFile) else f
        try:
            io.delete(path)
        except NeveIOError:
            failed.append(path)
    return failed
