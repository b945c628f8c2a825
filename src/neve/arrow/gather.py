"""Rows of a data file at given positions, gathered by polars (its decoder is faster
than pyarrow's for the column types it decodes exactly), for reads of a few rows of a
file: the changelog's rows newly deleted by a deletion vector."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
from pyroaring import BitMap64

from neve.arrow.lineage import POSITION_COLUMN
from neve.io.fileio import FileIO
from neve.io.pools import POLARS

__all__ = ["gather_positions", "polars_exact"]


def polars_exact(t: pa.DataType) -> bool:
    """Whether polars decodes a file column of type ``t`` to exactly the values pyarrow
    does (after a cast back to ``t``); files with other columns are read by pyarrow."""
    return bool(
        pa.types.is_signed_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_boolean(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_decimal128(t)
        or pa.types.is_date32(t)
    )


def gather_positions(
    io: FileIO, path: str, file_schema: pa.Schema, columns: list[str], positions: BitMap64
) -> pa.Table | None:
    """The rows of a data file at ``positions`` (columns ``columns``, the types pyarrow
    reads, plus their positions in ``POSITION_COLUMN``), decoded by polars, which skips
    materialising the other rows. ``None`` when a column's type is not one polars
    decodes exactly (:func:`polars_exact`), polars cannot read the file or must not run
    here (a process forked after it ran): the caller reads it with pyarrow then."""
    types = pa.schema([file_schema.field(c) for c in columns])
    # polars' thread pool, once started, hangs a child forked after it (the child has
    # none of its threads): a process forked after polars ran reads with pyarrow (a data
    # loader's workers forked after the parent took rows, say)
    if POLARS.forked_after_use or not all(polars_exact(f.type) for f in types):
        return None
    # polars is imported where it runs: every process imports this module (~165 ms)
    import polars as pl

    POLARS.use()
    wanted = np.frombuffer(positions.to_array(), dtype=np.uint64).astype(np.int64)
    fs, inner = io.filesystem(path)
    try:
        source: Any = inner
        if not isinstance(fs, pafs.LocalFileSystem):  # polars reads the bytes then
            source = io.read_bytes(path)  # in one request on object stores
        frame = (
            pl.scan_parquet(source)
            .select(columns)
            .with_row_index(POSITION_COLUMN)
            .filter(pl.col(POSITION_COLUMN).is_in(pl.Series(wanted).implode(), nulls_equal=False))
            .collect()
        )
    except (pl.exceptions.PolarsError, OSError):
        return None
    out = frame.to_arrow()
    if out.num_rows != len(wanted):
        return None  # not the rows asked for: let pyarrow read them
    arrays = [out.column(c).cast(types.field(c).type) for c in columns]
    arrays.append(out.column(POSITION_COLUMN).cast(pa.int64()))
    return pa.table(arrays, schema=pa.schema([*types, pa.field(POSITION_COLUMN, pa.int64())]))
