"""How data files are laid out for reading: the Parquet page index, bloom filters and
the ``write.parquet.layout`` preset, from table properties.

``write.parquet.layout=random-access`` writes files that a few rows can be read from
cheaply (docs/RANDOM-ACCESS.md): pages of about 8 KiB, the page index (offset and
column index), no dictionary pages (a take would read a column's dictionary page as
well as its data page: measured, twice the bytes), and values handed to the page
writer in small batches so that pages of long strings end near the page size, and
pages not compressed (:func:`parquet_codec`). Properties set explicitly
(``write.parquet.page-size-bytes``, ``write.parquet.dict-size-bytes``,
``write.parquet.compression-codec``) win over the preset. The page index is written by
default in every layout (``write.parquet.page-index.enabled=false`` leaves it out): it
costs neither write time nor size, and parquet-java writes it always. The same settings reach Spark's writer as Hadoop ``parquet.*`` options
(:func:`spark_parquet_options`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from neve.spec.properties import TableProperties

__all__ = [
    "RANDOM_ACCESS_PAGE_SIZE",
    "ParquetLayoutOptions",
    "parquet_codec",
    "spark_parquet_options",
]

MiB = 1024 * 1024

#: The page size of the random-access layout: Lance's chunks are at most 8 KiB, and
#: the physical floor of a take is one page per column per row.
RANDOM_ACCESS_PAGE_SIZE = 8 * 1024

#: Values handed to the page writer at once in the random-access layout: pyarrow
#: checks the page size between batches, so 32 values of 100 bytes end a page near
#: 8 KiB (at 9.6 KiB) where 64 made it 13 KiB and the default 1,024 100 KiB (written
#: as fast as with 64).
_RANDOM_ACCESS_BATCH = 32

#: The codec of the random-access layout. Decoding a small page compressed with zstd
#: costs a fixed 20-40 microseconds (its entropy tables are built per block), which a
#: take pays per page: measured with benchmarks/bench_take.py at 1,000,000 rows, a
#: take of 1,000 rows took 193 ms with zstd, 128 ms with snappy, 112 ms with lz4 and
#: 77 ms uncompressed; the files were 80, 124, 124 and 128 MiB (random data; Lance's
#: dataset of it 97 MiB).
RANDOM_ACCESS_CODEC = "uncompressed"

_CODEC = "write.parquet.compression-codec"

_BLOOM = "write.parquet.bloom-filter-enabled.column."
_BLOOM_FPP = "write.parquet.bloom-filter-fpp.column."


def _leaf_paths(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    """Each leaf column's dotted Parquet path (as pyarrow names them) and type."""
    out: list[tuple[str, pa.DataType]] = []

    def walk(path: str, t: pa.DataType) -> None:
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(f"{path}.{t.field(i).name}", t.field(i).type)
        elif pa.types.is_map(t):
            walk(f"{path}.key_value.key", t.key_type)
            walk(f"{path}.key_value.value", t.item_type)
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            walk(f"{path}.list.element", t.value_type)
        else:
            out.append((path, t))

    for f in schema:
        walk(f.name, f.type)
    return out


def parquet_codec(properties: Mapping[str, str]) -> str:
    """The codec data files are written with: ``write.parquet.compression-codec`` where
    it is set (and valid), else the layout's (uncompressed for random access, zstd
    otherwise)."""
    props = TableProperties(properties)
    if _CODEC in properties and _CODEC not in props.invalid:
        return props.as_text(_CODEC) or "zstd"
    if props.as_text("write.parquet.layout") == "random-access":
        return RANDOM_ACCESS_CODEC
    return props.as_text(_CODEC) or "zstd"


def _bloom_ndv(max_bytes: int, fpp: float) -> int:
    """The distinct values a split-block bloom filter of ``max_bytes`` holds at false
    positive rate ``fpp``; Iceberg-Java sizes its filters to the maximum as well."""
    bits = max_bytes * 8
    return max(1, int(bits * -math.log(1.0 - fpp ** (1.0 / 8.0)) / 8.0))


@dataclass(frozen=True)
class ParquetLayoutOptions:
    """The layout settings of a table's Parquet files."""

    preset: str = "default"
    page_index: bool = True
    page_size: int = MiB
    dictionary: bool = True
    write_batch_size: int | None = None
    bloom_fpp: tuple[tuple[str, float], ...] = ()
    bloom_max_bytes: int = MiB

    @staticmethod
    def from_properties(properties: Mapping[str, str]) -> ParquetLayoutOptions:
        props = TableProperties(properties)
        preset = props.as_text("write.parquet.layout") or "default"
        random_access = preset == "random-access"
        page_index = props.as_bool("write.parquet.page-index.enabled")
        enabled = props.columns(_BLOOM)
        fpps = props.columns(_BLOOM_FPP)
        bloom = tuple(
            (name, float(fpps.get(name, 0.01))) for name, on in sorted(enabled.items()) if on
        )
        return ParquetLayoutOptions(
            preset=preset,
            page_index=page_index,
            page_size=RANDOM_ACCESS_PAGE_SIZE if random_access else MiB,
            dictionary=not random_access,
            write_batch_size=_RANDOM_ACCESS_BATCH if random_access else None,
            bloom_fpp=bloom,
            bloom_max_bytes=props.as_int("write.parquet.bloom-filter-max-bytes"),
        )

    def writer_kwargs(self, schema: pa.Schema | None, row_group_size: int) -> dict[str, Any]:
        """The layout's ``pyarrow.parquet.ParquetWriter`` arguments for files of
        ``schema``."""
        out: dict[str, Any] = {"write_page_index": self.page_index}
        if self.write_batch_size is not None:
            out["write_batch_size"] = self.write_batch_size
        if not self.dictionary:
            out["use_dictionary"] = False
        if schema is not None and self.bloom_fpp:
            paths = {p for p, _ in _leaf_paths(schema)}
            out["bloom_filter_options"] = {
                name: {"ndv": _bloom_ndv(self.bloom_max_bytes, fpp), "fpp": fpp}
                for name, fpp in self.bloom_fpp
                if name in paths
            }
        return out


def spark_parquet_options(properties: Mapping[str, str], schema: pa.Schema) -> dict[str, str]:
    """The Hadoop ``parquet.*`` options that give Spark's Parquet writer the table's
    layout: page row limit, bloom filters and the random-access preset (parquet-java
    writes the page index always). ``schema`` is the Arrow schema of the rows
    written."""
    layout = ParquetLayoutOptions.from_properties(properties)
    out = {
        "parquet.page.row.count.limit": str(
            TableProperties(properties).as_int("write.parquet.page-row-limit")
        ),
    }
    if layout.bloom_fpp:
        out["parquet.bloom.filter.max.bytes"] = str(layout.bloom_max_bytes)
        for name, fpp in layout.bloom_fpp:
            out[f"parquet.bloom.filter.enabled#{name}"] = "true"
            out[f"parquet.bloom.filter.fpp#{name}"] = str(fpp)
    if layout.preset == "random-access" and "write.parquet.page-size-bytes" not in properties:
        out["parquet.page.size"] = str(layout.page_size)
    if not layout.dictionary:
        out["parquet.enable.dictionary"] = "false"
    return out
