"""Table properties neve reads: their defaults, the values they accept, and the two rules
that keep a bad value from harming a table.

1. **Checked when set.** ``create_table(properties=...)`` and ``set_properties`` refuse a
   value neve could not use (``commit.retry.num-retries = "abc"``) with a
   :class:`ValidationError` naming the property and the values it takes. Keys and values
   are strings. Properties neve does not know are stored as given (other engines have
   their own).
2. **Never a brick when read.** A value stored by another engine or an older neve may
   still be bad. Every reader reads properties through one typed view,
   :class:`TableProperties` (``TableMetadata.props``), parsed once per metadata version:
   a value it cannot use reads as the default (and is logged once, naming the property
   and what it takes), so writers, compaction and the commit path all behave alike, and
   the ``set_properties`` / ``remove_properties`` commit that repairs the value always
   goes through.

Reserved properties (Iceberg-Java's ``TableProperties.RESERVED_PROPERTIES``) are not
stored: ``format-version`` chooses the format version of a new table and upgrades an
existing one; the others (``uuid``, ``snapshot-count``, ``current-snapshot-id`` ...)
describe the table's state, so setting them is ignored, as in Iceberg-Java.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from neve.errors import UnsupportedFormatVersionError, ValidationError
from neve.spec.name_mapping import parse_name_mapping
from neve.spec.versions import SUPPORTED_FORMAT_VERSIONS

__all__ = [
    "AVRO_CODECS",
    "COLUMN_PROPERTIES",
    "FORMAT_VERSION",
    "PARQUET_LAYOUTS",
    "PROPERTIES",
    "RESERVED_PROPERTIES",
    "PropertyDef",
    "TableProperties",
    "check_property_keys",
    "split_reserved",
    "validate_properties",
]

_log = logging.getLogger("neve.properties")

FORMAT_VERSION = "format-version"

#: Never stored as table properties (Iceberg-Java's list).
RESERVED_PROPERTIES = frozenset(
    {
        FORMAT_VERSION,
        "uuid",
        "snapshot-count",
        "current-snapshot-id",
        "current-snapshot-summary",
        "current-snapshot-timestamp-ms",
        "current-schema",
        "default-partition-spec",
        "default-sort-order",
    }
)


@dataclass(frozen=True)
class PropertyDef:
    """A property neve reads: ``parse`` turns the text into the value (raising
    ValueError when it cannot), ``accepts`` says in words what it takes."""

    key: str
    default: Any
    parse: Callable[[str], Any]
    accepts: str


def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text.strip())
        if value < minimum:
            raise ValueError(f"{value} < {minimum}")
        return value

    return parse


def _boolean(text: str) -> bool:
    s = text.strip().lower()
    if s not in ("true", "false"):
        raise ValueError(text)
    return s == "true"


def _one_of(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        s = text.strip().lower()
        if s not in choices:
            raise ValueError(text)
        return s

    return parse


def _any_int(text: str) -> int:
    return int(text.strip())


_METRICS_MODE = re.compile(r"none|counts|full|truncate\(\s*([0-9]+)\s*\)")


def _metrics_mode(text: str) -> str:
    s = text.strip().lower()
    m = _METRICS_MODE.fullmatch(s)
    if m is None or (m.group(1) is not None and int(m.group(1)) <= 0):
        raise ValueError(text)
    return s


def _non_empty(text: str) -> str:
    if not text.strip():
        raise ValueError(text)
    return text


def _name_mapping(text: str) -> str:
    try:
        parse_name_mapping(text)
    except ValidationError as exc:
        raise ValueError(str(exc)) from exc
    return text


#: The Parquet layouts ``write.parquet.layout`` names.
PARQUET_LAYOUTS = ("default", "random-access")

_POSITIVE = "a positive integer"
_NON_NEGATIVE = "an integer >= 0"
_BOOLEAN = "true or false"
_MIB = 1024 * 1024
_CODECS = ("zstd", "snappy", "gzip", "lz4", "brotli", "uncompressed", "none")
#: ``write.avro.compression-codec``'s values (Iceberg's names), as Avro names the codecs.
AVRO_CODECS: Mapping[str, str] = {
    "gzip": "deflate",
    "zstd": "zstandard",
    "snappy": "snappy",
    "uncompressed": "null",
}
_FORMATS = ("parquet", "avro", "orc")
_ROW_LEVEL_MODES = ("copy-on-write", "merge-on-read")
_ISOLATION = ("serializable", "snapshot")


def _defs(*defs: PropertyDef) -> dict[str, PropertyDef]:
    return {d.key: d for d in defs}


#: Every property neve reads (defaults as in Iceberg-Java), by key.
PROPERTIES: Mapping[str, PropertyDef] = _defs(
    PropertyDef("commit.retry.num-retries", 4, _int_at_least(0), _NON_NEGATIVE),
    PropertyDef("commit.retry.min-wait-ms", 100, _int_at_least(0), _NON_NEGATIVE),
    PropertyDef("commit.retry.max-wait-ms", 60_000, _int_at_least(0), _NON_NEGATIVE),
    PropertyDef("commit.retry.total-timeout-ms", 1_800_000, _int_at_least(0), _NON_NEGATIVE),
    PropertyDef("commit.manifest-merge.enabled", True, _boolean, _BOOLEAN),
    PropertyDef("commit.manifest.min-count-to-merge", 100, _int_at_least(0), _NON_NEGATIVE),
    PropertyDef("commit.manifest.target-size-bytes", 8 * _MIB, _int_at_least(1), _POSITIVE),
    PropertyDef("write.metadata.previous-versions-max", 100, _int_at_least(0), _NON_NEGATIVE),
    PropertyDef(
        "history.expire.max-snapshot-age-ms", 5 * 24 * 3600 * 1000, _int_at_least(0), _NON_NEGATIVE
    ),
    PropertyDef("history.expire.min-snapshots-to-keep", 1, _int_at_least(1), _POSITIVE),
    PropertyDef("history.expire.max-ref-age-ms", 2**63 - 1, _int_at_least(0), _NON_NEGATIVE),
    PropertyDef("write.metadata.delete-after-commit.enabled", False, _boolean, _BOOLEAN),
    PropertyDef(
        "write.metadata.compression-codec", "none", _one_of("none", "gzip"), "none or gzip"
    ),
    PropertyDef(
        "write.metadata.metrics.default",
        "truncate(16)",
        _metrics_mode,
        "none, counts, truncate(N) with N > 0, or full",
    ),
    PropertyDef(
        "write.metadata.metrics.max-inferred-column-defaults", 100, _int_at_least(0), _NON_NEGATIVE
    ),
    PropertyDef("write.metadata.path", None, _non_empty, "a non-empty path"),
    # neve: appends to a primary-key table refuse keys the table holds (false: trusted loads)
    PropertyDef("write.primary-key.check", True, _boolean, _BOOLEAN),
    PropertyDef("write.data.path", None, _non_empty, "a non-empty path"),
    PropertyDef("write.target-file-size-bytes", 512 * _MIB, _int_at_least(1), _POSITIVE),
    PropertyDef("write.parquet.row-group-size-bytes", 128 * _MIB, _int_at_least(1), _POSITIVE),
    PropertyDef("write.parquet.page-size-bytes", _MIB, _int_at_least(1), _POSITIVE),
    PropertyDef("write.parquet.page-row-limit", 20_000, _int_at_least(1), _POSITIVE),
    PropertyDef("write.parquet.dict-size-bytes", 2 * _MIB, _int_at_least(1), _POSITIVE),
    PropertyDef("write.parquet.compression-codec", "zstd", _one_of(*_CODECS), ", ".join(_CODECS)),
    # the codec of manifests and manifest lists (Avro), as Iceberg-Java writes them
    PropertyDef(
        "write.avro.compression-codec",
        "gzip",
        _one_of(*AVRO_CODECS),
        ", ".join(AVRO_CODECS),
    ),
    PropertyDef("write.avro.compression-level", None, _any_int, "an integer"),
    PropertyDef("write.parquet.compression-level", None, _any_int, "an integer"),
    PropertyDef("write.parquet.bloom-filter-max-bytes", _MIB, _int_at_least(1), _POSITIVE),
    # neve: Parquet's page index (column and offset index), which random access and
    # page skipping read; on by default, as parquet-java writes it (measured to cost
    # neither write time nor size: docs/RANDOM-ACCESS.md)
    PropertyDef("write.parquet.page-index.enabled", True, _boolean, _BOOLEAN),
    # neve: a preset of the Parquet settings; random-access writes small pages with a
    # page index and no dictionary on string and binary columns (docs/RANDOM-ACCESS.md)
    PropertyDef(
        "write.parquet.layout",
        "default",
        _one_of(*PARQUET_LAYOUTS),
        " or ".join(PARQUET_LAYOUTS),
    ),
    PropertyDef("write.format.default", "parquet", _one_of(*_FORMATS), ", ".join(_FORMATS)),
    PropertyDef("write.delete.format.default", "parquet", _one_of(*_FORMATS), ", ".join(_FORMATS)),
    PropertyDef(
        "write.distribution-mode", None, _one_of("none", "hash", "range"), "none, hash or range"
    ),
    *(
        PropertyDef(
            f"write.{op}.mode",
            "copy-on-write",
            _one_of(*_ROW_LEVEL_MODES),
            " or ".join(_ROW_LEVEL_MODES),
        )
        for op in ("delete", "update", "merge")
    ),
    *(
        PropertyDef(
            f"write.{op}.isolation-level",
            "serializable",
            _one_of(*_ISOLATION),
            " or ".join(_ISOLATION),
        )
        for op in ("delete", "update", "merge")
    ),
    PropertyDef("read.split.target-size", 128 * _MIB, _int_at_least(1), _POSITIVE),
    # neve: compaction after appends and upserts (docs/MAINTENANCE.md)
    PropertyDef("write.auto-compact.enabled", False, _boolean, _BOOLEAN),
    PropertyDef("write.auto-compact.min-input-files", 5, _int_at_least(1), _POSITIVE),
    PropertyDef(
        "schema.name-mapping.default", None, _name_mapping, "a JSON name mapping (a list of fields)"
    ),
)


def _fraction(text: str) -> float:
    value = float(text.strip())
    if not 0.0 < value < 1.0:
        raise ValueError(text)
    return value


#: Per-column metrics modes: ``write.metadata.metrics.column.<column name>``.
_COLUMN_METRICS_PREFIX = "write.metadata.metrics.column."

#: Per-column properties by prefix (the column's name follows the prefix), with their
#: defaults.
COLUMN_PROPERTIES: Mapping[str, PropertyDef] = _defs(
    PropertyDef(
        _COLUMN_METRICS_PREFIX,
        None,
        _metrics_mode,
        "none, counts, truncate(N) with N > 0, or full",
    ),
    PropertyDef("write.parquet.bloom-filter-enabled.column.", False, _boolean, _BOOLEAN),
    PropertyDef(
        "write.parquet.bloom-filter-fpp.column.", 0.01, _fraction, "a number between 0 and 1"
    ),
)


def _definition(key: str) -> PropertyDef | None:
    found = PROPERTIES.get(key)
    if found is None:
        for prefix, d in COLUMN_PROPERTIES.items():
            if key.startswith(prefix) and len(key) > len(prefix):
                return PropertyDef(key, d.default, d.parse, d.accepts)
    return found


def check_property_keys(keys: Iterable[object]) -> list[str]:
    """Property names to remove, as a list; each must be a string."""
    out: list[str] = []
    for k in keys:
        if not isinstance(k, str):
            raise ValidationError(
                f"table property names are strings; got {k!r} (convert with str())"
            )
        out.append(k)
    return out


def validate_properties(properties: object) -> dict[str, str]:
    """Check properties to set (string keys and values, known properties with a value
    neve can use); returns them as a dict. Raises :class:`ValidationError` naming the
    first bad property and what it accepts."""
    if not isinstance(properties, Mapping):
        raise ValidationError(
            f"table properties are a mapping of strings to strings, not "
            f"{type(properties).__name__}; e.g. {{'write.target-file-size-bytes': '134217728'}}"
        )
    out: dict[str, str] = {}
    for k, v in properties.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ValidationError(
                f"table properties are strings; got {k!r}: {v!r} (convert with str())"
            )
        if k == FORMAT_VERSION:
            _format_version(v)
        else:
            d = _definition(k)
            if d is not None:
                try:
                    d.parse(v)
                except ValueError:
                    raise ValidationError(
                        f"table property {k}={v!r} is not valid: it takes {d.accepts}"
                    ) from None
        out[k] = v
    return out


def _format_version(text: str) -> int:
    try:
        version = int(text.strip())
    except ValueError:
        version = None
    if version is None or version not in SUPPORTED_FORMAT_VERSIONS:
        raise UnsupportedFormatVersionError(
            f"table property {FORMAT_VERSION}={text!r} is not a supported format version; "
            f"use one of {', '.join(map(str, SUPPORTED_FORMAT_VERSIONS))}"
        )
    return version


def split_reserved(properties: Mapping[str, str]) -> tuple[dict[str, str], int | None]:
    """Properties to store (reserved ones left out) and the format version the
    ``format-version`` property asks for (None when absent). Validates first."""
    checked = validate_properties(properties)
    version = checked.get(FORMAT_VERSION)
    kept = {k: v for k, v in checked.items() if k not in RESERVED_PROPERTIES}
    return kept, (_format_version(version) if version is not None else None)


class TableProperties:
    """A table's properties, parsed once: each property neve reads (:data:`PROPERTIES`)
    as its typed value, or its default when absent or unusable (rule 2 of the module
    docstring; ``invalid`` says which and why); properties neve does not read pass
    through as stored (``raw``). Readers ask by key, with the accessor of the value's
    type: ``props.as_int("write.target-file-size-bytes")``."""

    def __init__(self, raw: Mapping[str, str]) -> None:
        self.raw = raw
        values: dict[str, Any] = {}
        invalid: dict[str, str] = {}
        for key, text in raw.items():
            d = _definition(key)
            if d is None:
                continue
            try:
                values[key] = d.parse(text)
            except (ValueError, AttributeError, TypeError):
                invalid[key] = f"{key}={text!r} is not valid (it takes {d.accepts})"
        self._values = values
        #: The stored values neve cannot use, by key: each reads as its default.
        self.invalid: Mapping[str, str] = invalid
        for message in invalid.values():
            _log.warning("table property %s; using the default", message)

    def value(self, key: str) -> Any:
        """The parsed value of ``key`` (a property neve reads), or its default."""
        d = _definition(key)
        if d is None:
            raise KeyError(f"{key} is not a table property neve reads")
        return self._values.get(key, d.default)

    def as_int(self, key: str) -> int:
        v = self.value(key)
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"table property {key} is not an integer property")
        return v

    def as_optional_int(self, key: str) -> int | None:
        v = self.value(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            raise TypeError(f"table property {key} is not an integer property")
        return v

    def as_bool(self, key: str) -> bool:
        v = self.value(key)
        if not isinstance(v, bool):
            raise TypeError(f"table property {key} is not a boolean property")
        return v

    def as_text(self, key: str) -> str | None:
        v = self.value(key)
        if v is not None and not isinstance(v, str):
            raise TypeError(f"table property {key} is not a text property")
        return v

    def columns(self, prefix: str) -> dict[str, Any]:
        """The usable values of a per-column property (a key of
        :data:`COLUMN_PROPERTIES`), by column name; unusable values are left out (rule
        2)."""
        d = COLUMN_PROPERTIES[prefix]
        out: dict[str, Any] = {}
        for key, raw in self.raw.items():
            if key.startswith(prefix) and len(key) > len(prefix):
                try:
                    out[key[len(prefix) :]] = d.parse(raw)
                except (ValueError, AttributeError, TypeError):
                    continue
        return out
