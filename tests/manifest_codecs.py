"""The ``avro.codec`` a table's manifests and manifest lists were written with."""

from __future__ import annotations

from pathlib import Path

import fastavro

from neve.table.table import Table

#: ``write.avro.compression-codec``'s values, and the ``avro.codec`` of files written
#: with each.
CODECS = {"gzip": "deflate", "zstd": "zstandard", "snappy": "snappy", "uncompressed": "null"}


def manifest_codecs(table: Table) -> dict[str, str]:
    """``avro.codec`` of each manifest list and manifest in the table's metadata folder,
    by file name."""
    out = {}
    for path in (Path(table.metadata.location) / "metadata").glob("*.avro"):
        with path.open("rb") as f:
            out[path.name] = fastavro.reader(f).codec
    return out
