"""Where neve puts every file it writes, and what it names them: data and delete files,
manifests, manifest lists and metadata files. One place, so that writers on the driver,
writers on Spark executors, catalogs and maintenance agree on the layout.

The layout is Iceberg-Java's: data under ``write.data.path`` (default
``<table>/data``), metadata under ``write.metadata.path`` (default
``<table>/metadata``); data files named ``<partition>/00000-<n>-<write id>-00001.parquet``,
manifests ``<commit uuid>-m<n>.avro``, manifest lists
``snap-<snapshot id>-<attempt>-<commit uuid>.avro``, metadata files
``<table>/metadata/<version:05d>-<uuid>.metadata.json`` (``.gz.metadata.json`` when
gzip-compressed; always under the table location, where the filesystem catalog looks).
Functions take the table location and properties as plain values (this room sits below
the format's data model).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

__all__ = [
    "LocationProvider",
    "data_location",
    "manifest_list_path",
    "manifest_path",
    "metadata_file_path",
    "metadata_location",
]

DATA_PATH = "write.data.path"
METADATA_PATH = "write.metadata.path"
METADATA_CODEC = "write.metadata.compression-codec"


def _path(properties: Mapping[str, str], key: str) -> str | None:
    """A folder property's value; a blank one is as if absent (as
    ``neve.spec.properties.TableProperties`` reads it: the io room sits below it)."""
    value = properties.get(key)
    return value if isinstance(value, str) and value.strip() else None


def data_location(table_location: str, properties: Mapping[str, str]) -> str:
    """The folder new data and delete files go under."""
    return (_path(properties, DATA_PATH) or f"{table_location.rstrip('/')}/data").rstrip("/")


def metadata_location(table_location: str, properties: Mapping[str, str]) -> str:
    """The folder new manifests, manifest lists and metadata files go under."""
    folder = _path(properties, METADATA_PATH) or f"{table_location.rstrip('/')}/metadata"
    return folder.rstrip("/")


def manifest_path(
    table_location: str, properties: Mapping[str, str], commit_uuid: str, counter: int
) -> str:
    """The ``counter``-th manifest written by the commit ``commit_uuid``."""
    return f"{metadata_location(table_location, properties)}/{commit_uuid}-m{counter}.avro"


def manifest_list_path(
    table_location: str,
    properties: Mapping[str, str],
    snapshot_id: int,
    attempt: int,
    commit_uuid: str,
) -> str:
    """The manifest list of a snapshot, one per commit attempt."""
    name = f"snap-{snapshot_id}-{attempt}-{commit_uuid}.avro"
    return f"{metadata_location(table_location, properties)}/{name}"


def metadata_file_path(table_location: str, properties: Mapping[str, str], version: int) -> str:
    """A new metadata file of the given version (gzip-compressed when the table's
    ``write.metadata.compression-codec`` is gzip)."""
    codec = properties.get(METADATA_CODEC, "none").lower()
    suffix = ".gz.metadata.json" if codec == "gzip" else ".metadata.json"
    return f"{table_location.rstrip('/')}/metadata/{version:05d}-{uuid.uuid4()}{suffix}"


class LocationProvider:
    """Paths of new data files: ``<data dir>/<partition path>/<name>.parquet``, names
    unique per writer (``write_id``) and counted within it.
    Calling the provider with ``(partition, partition_path)`` gives a new path."""

    def __init__(
        self,
        table_location: str,
        properties: Mapping[str, str] | None = None,
        *,
        write_id: str | None = None,
    ) -> None:
        self.data_location = data_location(table_location, properties or {})
        self.write_id = write_id or str(uuid.uuid4())
        self._count = 0

    def new_file_path(self, partition_path: str = "", suffix: str = ".parquet") -> str:
        self._count += 1
        name = f"00000-{self._count}-{self.write_id}-00001{suffix}"
        if partition_path:
            return f"{self.data_location}/{partition_path}/{name}"
        return f"{self.data_location}/{name}"

    def __call__(self, partition: tuple[Any, ...], partition_path: str) -> str:
        return self.new_file_path(partition_path)
