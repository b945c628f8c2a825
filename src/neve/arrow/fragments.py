"""Opening a Parquet data file as a pyarrow dataset fragment and reading its row groups,
local or in an object store.

On an object store the footer is read with the file size the manifest gives (no request
to look it up), the column chunks of a row group are fetched in ranges coalesced across
gaps up to 1 MiB and fetched concurrently (pyarrow's pre-buffering; a request costs
about what 1 MiB takes to transfer), and a footer or row group whose read fails after
the client library's own retries is read again (the AWS SDK under pyarrow gives up on
some dropped connections). Local files are streamed as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

import pyarrow as pa
import pyarrow.dataset as ds

from neve.io.fileio import FileIO

__all__ = ["open_fragment", "retrying", "row_group_batches"]

_T = TypeVar("_T")

_REMOTE_CACHE = pa.CacheOptions(hole_size_limit=1 << 20, range_size_limit=64 << 20, lazy=True)
_READ_OPTIONS = ds.ParquetReadOptions(coerce_int96_timestamp_unit="us")
_LOCAL_FORMAT = ds.ParquetFileFormat(read_options=_READ_OPTIONS)
_REMOTE_FORMAT = ds.ParquetFileFormat(
    read_options=_READ_OPTIONS,
    default_fragment_scan_options=ds.ParquetFragmentScanOptions(
        pre_buffer=True, cache_options=_REMOTE_CACHE
    ),
)
#: Attempts at a remote footer or row group.
_REMOTE_READ_ATTEMPTS = 3


def retrying(read: Callable[[], _T]) -> _T:
    """``read()``, tried again (up to three attempts, backing off) when a remote read
    fails for any reason but a missing file."""
    for attempt in range(_REMOTE_READ_ATTEMPTS):
        try:
            return read()
        except FileNotFoundError:
            raise
        except (OSError, pa.ArrowException):
            if attempt + 1 == _REMOTE_READ_ATTEMPTS:
                raise
            time.sleep(0.1 * 2**attempt)
    raise AssertionError("unreachable: the last attempt returns or raises")


def open_fragment(
    io: FileIO, path: str, size: int | None = None
) -> tuple[ds.ParquetFileFragment, pa.Schema]:
    """The fragment of a data file and its physical schema (the footer read). Raises
    pyarrow's errors (``FileNotFoundError``, ``OSError``, ``ArrowException``)."""
    fs, inner = io.filesystem(path)
    local = io.is_local(path)
    fmt = _LOCAL_FORMAT if local else _REMOTE_FORMAT

    def footer() -> tuple[ds.ParquetFileFragment, pa.Schema]:
        made = fmt.make_fragment(inner, filesystem=fs, file_size=None if local else size)
        return made, made.physical_schema

    return footer() if local else retrying(footer)


def row_group_batches(
    fragment: ds.ParquetFileFragment, rg: int, columns: list[str], batch_size: int, remote: bool
) -> Iterable[pa.RecordBatch]:
    """The raw batches of one row group: streamed from a local file; from an object
    store read whole, and read again when the read fails partway."""

    def read() -> Iterator[pa.RecordBatch]:
        batches: Iterator[pa.RecordBatch] = fragment.subset(row_group_ids=[rg]).to_batches(
            columns=columns, batch_size=batch_size
        )
        return batches

    return retrying(lambda: list(read())) if remote else read()
