"""Table properties: reserved ones (``format-version``) act instead of being stored,
known ones are checked when set, keys and values that are not strings are typed errors,
and a bad stored value never blocks the commit that repairs it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from neve.catalog import Catalog
from neve.errors import UnsupportedFormatVersionError, ValidationError
from neve.spec.metadata_builder import next_metadata
from neve.table.table import Table

#: What neve stores on every table it creates at format v2 or later.
MOR = {f"write.{op}.mode": "merge-on-read" for op in ("delete", "update", "merge")}

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])


def rows(start: int, n: int = 3) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [str(i) for i in ids]}, schema=SCHEMA)


def files_under(root: str) -> set[str]:
    return {str(p) for p in Path(root).rglob("*") if p.is_file()}


# -- format-version is reserved -----------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3])
def test_format_version_property_sets_the_version_and_is_not_stored(
    sqlite_catalog: Catalog, version: int
) -> None:
    t = sqlite_catalog.create_table(
        "db.t", SCHEMA, properties={"format-version": str(version), "owner": "me"}
    )
    for table in (t, sqlite_catalog.load_table("db.t")):
        assert table.format_version == version
        assert dict(table.properties) == {**(MOR if version >= 2 else {}), "owner": "me"}
    t.append(rows(0))
    assert sqlite_catalog.load_table("db.t").scan().to_arrow().num_rows == 3


def test_format_version_argument_and_property(sqlite_catalog: Catalog) -> None:
    same = sqlite_catalog.create_table(
        "db.same", SCHEMA, format_version=3, properties={"format-version": "3"}
    )
    assert same.format_version == 3 and "format-version" not in same.properties
    with pytest.raises(ValidationError, match="disagree"):
        sqlite_catalog.create_table(
            "db.t", SCHEMA, format_version=2, properties={"format-version": "3"}
        )
    for bad in ("4", "abc", "", "2.0"):
        with pytest.raises(UnsupportedFormatVersionError, match="format-version"):
            sqlite_catalog.create_table("db.t", SCHEMA, properties={"format-version": bad})
    assert not sqlite_catalog.table_exists("db.t")


def test_other_reserved_properties_are_not_stored(sqlite_catalog: Catalog) -> None:
    reserved = {"uuid": "x", "snapshot-count": "7", "current-snapshot-id": "5"}
    t = sqlite_catalog.create_table("db.t", SCHEMA, properties={**reserved, "a": "b"})
    assert dict(t.properties) == {**MOR, "a": "b"}
    assert t.metadata.table_uuid != "x"
    t.set_properties(reserved)
    assert dict(sqlite_catalog.load_table("db.t").properties) == {**MOR, "a": "b"}


def test_set_properties_upgrades_and_refuses_downgrades(sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA)
    t.append(rows(0))
    t.set_properties({"format-version": "2", "a": "1"})  # the same version: no change
    assert t.format_version == 2
    location = t.metadata_location
    with pytest.raises(UnsupportedFormatVersionError, match="downgrade"):
        t.set_properties({"format-version": "1"})
    with pytest.raises(UnsupportedFormatVersionError, match="format-version"):
        t.set_properties({"format-version": "9"})
    assert sqlite_catalog.load_table("db.t").metadata_location == location
    t.set_properties({"format-version": "3", "b": "2"})
    loaded = sqlite_catalog.load_table("db.t")
    assert loaded.format_version == 3
    assert loaded.metadata.next_row_id == 0
    assert dict(loaded.properties) == {**MOR, "a": "1", "b": "2"}
    loaded.append(rows(10))
    assert loaded.scan().to_arrow().num_rows == 6


def test_a_stored_format_version_property_can_be_removed(sqlite_catalog: Catalog) -> None:
    """Tables made by older neve stored ``format-version`` as a plain property."""
    t = sqlite_catalog.create_table("db.t", SCHEMA)
    md = t.metadata.with_(properties={"format-version": "3", "k": "v"})
    sqlite_catalog.commit_metadata(t.identifier, t.metadata_location, md)
    old = sqlite_catalog.load_table("db.t")
    assert old.format_version == 2
    old.remove_properties("format-version")
    assert dict(sqlite_catalog.load_table("db.t").properties) == {"k": "v"}


# -- known properties are checked when set ---------------------------------------------------

BAD_VALUES = [
    ("commit.retry.num-retries", "abc"),
    ("commit.retry.num-retries", "-1"),
    ("commit.retry.min-wait-ms", "1.5"),
    ("commit.retry.max-wait-ms", ""),
    ("commit.retry.total-timeout-ms", "soon"),
    ("commit.manifest-merge.enabled", "yes"),
    ("write.primary-key.check", "sometimes"),
    ("commit.manifest.min-count-to-merge", "many"),
    ("commit.manifest.target-size-bytes", "0"),
    ("write.metadata.previous-versions-max", "-3"),
    ("history.expire.max-snapshot-age-ms", "5 days"),
    ("history.expire.min-snapshots-to-keep", "0"),
    ("history.expire.max-ref-age-ms", "-1"),
    ("write.metadata.delete-after-commit.enabled", "1"),
    ("write.metadata.compression-codec", "zstd"),
    ("write.metadata.metrics.default", "truncate(0)"),
    ("write.metadata.metrics.column.id", "some"),
    ("write.metadata.metrics.max-inferred-column-defaults", "x"),
    ("write.target-file-size-bytes", "0"),
    ("write.parquet.row-group-size-bytes", "big"),
    ("write.parquet.page-size-bytes", "-1"),
    ("write.parquet.page-row-limit", "1e3"),
    ("write.parquet.dict-size-bytes", "2MB"),
    ("write.parquet.compression-codec", "lzma"),
    ("write.parquet.compression-level", "high"),
    ("write.avro.compression-codec", "deflate"),
    ("write.avro.compression-level", "9.5"),
    ("write.parquet.bloom-filter-max-bytes", "1MB"),
    ("write.parquet.bloom-filter-enabled.column.id", "on"),
    ("write.parquet.bloom-filter-fpp.column.id", "0"),
    ("write.parquet.page-index.enabled", "maybe"),
    ("write.parquet.layout", "lance"),
    ("write.format.default", "csv"),
    ("write.delete.format.default", "json"),
    ("write.distribution-mode", "random"),
    ("write.delete.mode", "merge-on-write"),
    ("write.update.mode", "cow"),
    ("write.merge.mode", "copy"),
    ("write.delete.isolation-level", "none"),
    ("write.update.isolation-level", "read-committed"),
    ("write.merge.isolation-level", "strict"),
    ("read.split.target-size", "0"),
    ("schema.name-mapping.default", "{not json"),
    ("write.data.path", " "),
    ("write.metadata.path", ""),
    ("write.auto-compact.enabled", "sometimes"),
    ("write.auto-compact.min-input-files", "0"),
]


def test_every_property_neve_reads_is_checked() -> None:
    """The list above covers every property of the registry (a new one needs a case)."""
    from neve.spec.properties import PROPERTIES

    assert set(PROPERTIES) <= {k for k, _ in BAD_VALUES}


@pytest.mark.parametrize(("key", "value"), BAD_VALUES)
def test_bad_values_are_refused_when_set(sqlite_catalog: Catalog, key: str, value: str) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA)
    location = t.metadata_location
    with pytest.raises(ValidationError, match=re.escape(f"{key}={value!r}")) as info:
        t.set_properties({key: value})
    assert "takes" in str(info.value)  # says what the property accepts
    assert sqlite_catalog.load_table("db.t").metadata_location == location
    with pytest.raises(ValidationError, match=re.escape(key)):
        sqlite_catalog.create_table("db.u", SCHEMA, properties={key: value})
    assert not sqlite_catalog.table_exists("db.u")


GOOD_VALUES = {
    "commit.retry.num-retries": "0",
    "commit.manifest-merge.enabled": "FALSE",
    "write.metadata.metrics.default": "Truncate( 8 )",
    "write.metadata.metrics.column.s": "counts",
    "write.parquet.compression-codec": "SNAPPY",
    "write.distribution-mode": "hash",
    "write.delete.mode": "merge-on-read",
    "schema.name-mapping.default": '[{"field-id": 1, "names": ["id"]}]',
    "some.other.engine.setting": "anything at all",
}


def test_good_values_and_unknown_properties_are_stored(sqlite_catalog: Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA, properties=GOOD_VALUES)
    assert dict(sqlite_catalog.load_table("db.t").properties) == {**MOR, **GOOD_VALUES}
    t.append(rows(0))
    t.set_properties({"commit.retry.num-retries": "7"})
    assert sqlite_catalog.load_table("db.t").properties["commit.retry.num-retries"] == "7"


# -- non-string keys and values are typed errors ----------------------------------------------

NOT_STRINGS: list[tuple[str, Callable[[Catalog, Table], Any]]] = [
    ("int value", lambda c, t: t.set_properties({"a": 1})),
    ("int key", lambda c, t: t.set_properties({1: "a"})),
    ("None value", lambda c, t: t.set_properties({"a": None})),
    ("bool value", lambda c, t: t.set_properties({"commit.manifest-merge.enabled": True})),
    ("remove int key", lambda c, t: t.remove_properties(1)),
    ("remove None", lambda c, t: t.remove_properties(None)),
    ("create with int value", lambda c, t: c.create_table("db.u", SCHEMA, properties={"a": 1})),
    ("create with int key", lambda c, t: c.create_table("db.u", SCHEMA, properties={2: "b"})),
    ("create with a list", lambda c, t: c.create_table("db.u", SCHEMA, properties=["a"])),
    ("format_version as text", lambda c, t: c.create_table("db.u", SCHEMA, format_version="3")),
]


@pytest.mark.parametrize(("label", "call"), NOT_STRINGS, ids=[n[0] for n in NOT_STRINGS])
def test_non_string_properties_are_typed_errors(
    sqlite_catalog: Catalog, label: str, call: Callable[[Catalog, Table], Any]
) -> None:
    t = sqlite_catalog.create_table("db.t", SCHEMA, properties={"keep": "me"})
    location = t.metadata_location
    with pytest.raises(ValidationError):
        call(sqlite_catalog, t)
    loaded = sqlite_catalog.load_table("db.t")
    assert loaded.metadata_location == location
    assert dict(loaded.properties) == {**MOR, "keep": "me"}
    assert not sqlite_catalog.table_exists("db.u")


# -- a bad stored value never bricks the table ------------------------------------------------

STORED_BAD = {
    "commit.retry.num-retries": "abc",
    "commit.retry.min-wait-ms": "-",
    "commit.retry.max-wait-ms": "x",
    "commit.retry.total-timeout-ms": "forever",
    "commit.manifest-merge.enabled": "perhaps",
    "commit.manifest.min-count-to-merge": "lots",
    "commit.manifest.target-size-bytes": "8MB",
    "write.metadata.previous-versions-max": "all",
    "write.metadata.delete-after-commit.enabled": "sure",
}


def store_as_another_engine(catalog: Catalog, table: Table, props: dict[str, str]) -> Table:
    """Write properties the way another engine (or an older neve) could: straight into
    a new metadata version, without neve's checks."""
    md = table.metadata.with_(properties={**table.properties, **props})
    catalog.commit_metadata(
        table.identifier,
        table.metadata_location,
        next_metadata(md, table.metadata, table.metadata_location),
    )
    return catalog.load_table(table.name)


@pytest.mark.primitives
def test_bad_stored_values_fall_back_to_defaults_in_the_commit_path(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows(0))
    bricked = store_as_another_engine(catalog, t, STORED_BAD)
    bricked.append(rows(10))  # commits despite the unusable retry and merge settings
    bricked.delete("id = 1")
    assert sorted(catalog.load_table("db.t").scan().to_arrow().column("id").to_pylist()) == [
        0,
        2,
        10,
        11,
        12,
    ]
    # the repair: set one, remove the others
    bricked.set_properties({"commit.retry.num-retries": "3"})
    bricked.remove_properties(*[k for k in STORED_BAD if k != "commit.retry.num-retries"])
    repaired = catalog.load_table("db.t")
    assert dict(repaired.properties) == {**MOR, "commit.retry.num-retries": "3"}


@pytest.mark.primitives
def test_repair_commit_of_a_bad_value_goes_through(catalog: Catalog) -> None:
    """An unusable retry count stored by another engine: the set_properties (or
    remove_properties) that fixes it commits, and an append commits meanwhile without
    leaving files behind."""
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA)
    bricked = store_as_another_engine(catalog, t, {"commit.retry.num-retries": "abc"})
    bricked.append(rows(0))
    live = {x.file.file_path.removeprefix("file:") for x in bricked.scan().plan_files()}
    assert {p for p in files_under(t.location) if p.endswith(".parquet")} == live
    bricked.set_properties({"commit.retry.num-retries": "2"})
    assert catalog.load_table("db.t").properties["commit.retry.num-retries"] == "2"
    bricked = store_as_another_engine(
        catalog, catalog.load_table("db.t"), {"commit.retry.num-retries": "abc"}
    )
    bricked.remove_properties("commit.retry.num-retries")
    assert "commit.retry.num-retries" not in catalog.load_table("db.t").properties


def test_the_properties_view_falls_back_to_defaults() -> None:
    from neve.spec.properties import PROPERTIES, TableProperties

    for key, value in STORED_BAD.items():
        view = TableProperties({key: value})
        assert view.value(key) == PROPERTIES[key].default
        assert key in view.invalid
    assert TableProperties({}).as_int("commit.retry.num-retries") == 4
    assert (
        TableProperties({"commit.retry.num-retries": " 9 "}).as_int("commit.retry.num-retries") == 9
    )
    assert (
        TableProperties({"commit.retry.num-retries": "-2"}).as_int("commit.retry.num-retries") == 4
    )
    view = TableProperties({"commit.manifest-merge.enabled": "False"})
    assert view.as_bool("commit.manifest-merge.enabled") is False


@pytest.mark.parametrize("version", [1, 2, 3])
def test_new_tables_change_rows_merge_on_read_from_v2(
    sqlite_catalog: Catalog, version: int
) -> None:
    """v2+ tables neve creates carry merge-on-read modes (so Iceberg-Java writes delete
    files to them too); v1 has no delete files; a mode the user gives wins."""
    t = sqlite_catalog.create_table("db.t", SCHEMA, format_version=version)
    assert dict(t.properties) == (MOR if version >= 2 else {})
    cow = {"write.delete.mode": "copy-on-write"}
    u = sqlite_catalog.create_table("db.u", SCHEMA, format_version=version, properties=cow)
    assert u.properties["write.delete.mode"] == "copy-on-write"
