"""Manifest model (spec "Manifests", "Manifest Lists"): data files, manifest entries and
manifest-list entries. Codecs live in :mod:`neve.spec.avro`.

Partition tuples are plain tuples of values in the partition spec's field order, using
neve's value representation (see :mod:`neve.spec.values`). Statistics maps are keyed by
field id; bounds are single-value serialized bytes (spec Appendix D).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

__all__ = [
    "DataFile",
    "DataFileContent",
    "FieldSummary",
    "FileFormat",
    "ManifestContent",
    "ManifestEntry",
    "ManifestEntryStatus",
    "ManifestFile",
    "assemble",
]

_T = TypeVar("_T")


class DataFileContent(enum.IntEnum):
    DATA = 0
    POSITION_DELETES = 1
    EQUALITY_DELETES = 2


class ManifestContent(enum.IntEnum):
    DATA = 0
    DELETES = 1


class ManifestEntryStatus(enum.IntEnum):
    EXISTING = 0
    ADDED = 1
    DELETED = 2


class FileFormat(enum.Enum):
    PARQUET = "PARQUET"
    AVRO = "AVRO"
    ORC = "ORC"
    PUFFIN = "PUFFIN"

    @classmethod
    def parse(cls, text: str) -> FileFormat:
        return cls(text.upper())


@dataclass(frozen=True, eq=True)
class DataFile:
    """A data or delete file with its partition tuple and column metrics."""

    file_path: str
    file_format: FileFormat
    partition: tuple[Any, ...]
    record_count: int
    file_size_in_bytes: int
    content: DataFileContent = DataFileContent.DATA
    column_sizes: Mapping[int, int] | None = None
    value_counts: Mapping[int, int] | None = None
    null_value_counts: Mapping[int, int] | None = None
    nan_value_counts: Mapping[int, int] | None = None
    lower_bounds: Mapping[int, bytes] | None = None
    upper_bounds: Mapping[int, bytes] | None = None
    key_metadata: bytes | None = None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    first_row_id: int | None = None
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None
    #: Id of the partition spec the file was written with (from its manifest; not stored
    #: in the data_file struct itself).
    spec_id: int = 0

    def __hash__(self) -> int:
        return hash((self.file_path, self.content_offset))

    def with_(self, **changes: Any) -> DataFile:
        return replace(self, **changes)

    @property
    def is_deletion_vector(self) -> bool:
        return self.file_format is FileFormat.PUFFIN


@dataclass(frozen=True)
class ManifestEntry:
    """One row of a manifest: a file and its status in the snapshot that wrote it.

    ``sequence_number`` is the data sequence number and ``file_sequence_number`` the
    sequence number of the snapshot that added the file; both are None for ADDED
    entries until inherited from the manifest-list entry.
    """

    status: ManifestEntryStatus
    snapshot_id: int | None
    sequence_number: int | None
    file_sequence_number: int | None
    data_file: DataFile

    def with_(self, **changes: Any) -> ManifestEntry:
        return replace(self, **changes)

    @property
    def is_live(self) -> bool:
        return self.status is not ManifestEntryStatus.DELETED


@dataclass(frozen=True)
class FieldSummary:
    """Partition field summary in a manifest-list entry (bounds are serialized)."""

    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None


@dataclass(frozen=True)
class ManifestFile:
    """One row of a manifest list."""

    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    content: ManifestContent
    sequence_number: int
    min_sequence_number: int
    added_snapshot_id: int
    added_files_count: int
    existing_files_count: int
    deleted_files_count: int
    added_rows_count: int
    existing_rows_count: int
    deleted_rows_count: int
    partitions: tuple[FieldSummary, ...] | None = None
    key_metadata: bytes | None = None
    first_row_id: int | None = None

    def with_(self, **changes: Any) -> ManifestFile:
        return replace(self, **changes)

    @property
    def has_added_files(self) -> bool:
        return self.added_files_count > 0

    @property
    def has_existing_files(self) -> bool:
        return self.existing_files_count > 0

    @property
    def has_deleted_files(self) -> bool:
        return self.deleted_files_count > 0


_FIELD_NAMES: dict[type, frozenset[str]] = {}


def assemble(cls: type[_T], values: dict[str, Any]) -> _T:
    """``cls(**values)`` for a frozen dataclass without ``__post_init__`` (this
    module's, ``FileScanTask``), ``values`` naming every field, in a fifth of the time:
    the generated ``__init__`` sets each field through ``object.__setattr__`` (about
    2 µs for a ManifestFile), where this sets the instance's attribute dict at once.
    The decoders build thousands of these per plan. ``values`` becomes the instance's
    own: the caller must not keep it."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in fields(cls))  # type: ignore[arg-type]
    if len(values) != len(names):
        raise TypeError(f"{cls.__name__} takes {sorted(names)}, got {sorted(values)}")
    obj = object.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    return obj
