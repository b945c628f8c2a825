"""Iceberg's Parquet write properties and neve's layout preset reach the files neve
writes (pyarrow) and the options Spark's writer gets (issue 26): page size and row
limit, dictionary size, row-group size, codec and level, bloom filter columns, the page
index, and the random-access preset; a bad value is refused when set."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neve
from neve.arrow.layout import spark_parquet_options
from neve.arrow.pages import describe_pages
from neve.errors import ValidationError
from neve.io.fileio import FileIO


def _table(tmp_path: Path, props: dict[str, str]) -> neve.Table:
    catalog = neve.connect(f"sqlite:///{tmp_path}/c.db", str(tmp_path / "wh"))
    catalog.create_namespace("db")
    t = catalog.create_table(
        "db.t",
        pa.schema([("id", pa.int64()), ("s", pa.string()), ("n", pa.int32())]),
        properties=props,
    )
    n = 20_000
    t.append(
        pa.table(
            {
                "id": list(range(n)),
                "s": [random.Random(i).randbytes(48).hex() for i in range(n)],
                "n": [i % 7 for i in range(n)],
            }
        )
    )
    return t.refresh()


def _pages(t: neve.Table) -> dict[str, dict[str, object]]:
    (task,) = t.scan().plan_files()
    return {r["column"]: r for r in describe_pages(FileIO(), task.file.file_path)}  # type: ignore[misc]


def test_neve_writes_the_page_index_by_default(tmp_path: Path) -> None:
    pages = _pages(_table(tmp_path, {}))
    assert all(p["offset_index"] and p["column_index"] for p in pages.values())
    assert pages["n"]["dictionary"]


def test_the_page_index_can_be_left_out(tmp_path: Path) -> None:
    pages = _pages(_table(tmp_path, {"write.parquet.page-index.enabled": "false"}))
    assert not any(p["offset_index"] or p["column_index"] for p in pages.values())


def test_the_random_access_layout(tmp_path: Path) -> None:
    pages = _pages(_table(tmp_path, {"write.parquet.layout": "random-access"}))
    assert all(p["offset_index"] for p in pages.values())
    assert not any(p["dictionary"] for p in pages.values())  # a take reads no dictionary
    # pages of about 8 KiB, also for the 96-byte strings (a page ends at the first
    # batch of 32 values that takes it past 8 KiB)
    assert 8 * 1024 <= pages["s"]["page_bytes_median"] <= 10 * 1024  # type: ignore[operator]
    assert pages["id"]["pages"] >= 20_000 * 8 // (8 * 1024)  # type: ignore[operator]


def test_the_random_access_layout_leaves_pages_uncompressed(tmp_path: Path) -> None:
    """A small page compressed with zstd costs a take more to decode than it saves in
    bytes: the preset writes pages uncompressed, the default layout with zstd."""
    for props, codec in (
        ({"write.parquet.layout": "random-access"}, "UNCOMPRESSED"),
        ({}, "ZSTD"),
        ({"write.parquet.compression-codec": "snappy"}, "SNAPPY"),
    ):
        (tmp_path / codec).mkdir()
        (task,) = _table(tmp_path / codec, props).scan().plan_files()
        meta = pq.ParquetFile(task.file.file_path.removeprefix("file://")).metadata
        assert {meta.row_group(0).column(i).compression for i in range(3)} == {codec}


def test_explicit_properties_win_over_the_preset(tmp_path: Path) -> None:
    props = {
        "write.parquet.layout": "random-access",
        "write.parquet.page-size-bytes": str(64 * 1024),
        "write.parquet.page-row-limit": "1000",
        "write.parquet.compression-codec": "gzip",
    }
    t = _table(tmp_path, props)
    pages = _pages(t)
    assert 20 <= pages["id"]["pages"] <= 21  # type: ignore[operator]  # <= 1,000 rows a page
    (task,) = t.scan().plan_files()
    meta = pq.ParquetFile(task.file.file_path.removeprefix("file://")).metadata
    assert meta.row_group(0).column(0).compression == "GZIP"


def test_bloom_filter_columns(tmp_path: Path) -> None:
    props = {
        "write.parquet.bloom-filter-enabled.column.id": "true",
        "write.parquet.bloom-filter-fpp.column.id": "0.05",
        "write.parquet.bloom-filter-max-bytes": "65536",
    }
    t = _table(tmp_path, props)
    (task,) = t.scan().plan_files()
    meta = pq.ParquetFile(task.file.file_path.removeprefix("file://")).metadata
    columns = {
        meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i) for i in range(3)
    }
    assert columns["id"].bloom_filter_offset is not None
    assert 0 < columns["id"].bloom_filter_length <= 65536 + 64
    assert columns["s"].bloom_filter_offset is None


def test_bad_layout_values_are_refused(tmp_path: Path) -> None:
    for key, value in (
        ("write.parquet.layout", "fast"),
        ("write.parquet.page-index.enabled", "yes"),
        ("write.parquet.bloom-filter-enabled.column.id", "1"),
        ("write.parquet.bloom-filter-fpp.column.id", "1.5"),
        ("write.parquet.bloom-filter-max-bytes", "0"),
    ):
        where = tmp_path / key
        where.mkdir()
        with pytest.raises(ValidationError, match=key.replace(".", r"\.")):
            _table(where, {key: value})


def test_spark_gets_the_same_settings_as_hadoop_options() -> None:
    schema = pa.schema(
        [("id", pa.int64()), ("s", pa.string()), ("st", pa.struct([("b", pa.binary())]))]
    )
    options = spark_parquet_options(
        {
            "write.parquet.layout": "random-access",
            "write.parquet.page-row-limit": "500",
            "write.parquet.bloom-filter-enabled.column.id": "true",
        },
        schema,
    )
    assert options["parquet.page.size"] == "8192"
    assert options["parquet.page.row.count.limit"] == "500"
    assert options["parquet.enable.dictionary"] == "false"
    assert options["parquet.bloom.filter.enabled#id"] == "true"
    assert options["parquet.bloom.filter.fpp#id"] == "0.01"
    explicit = spark_parquet_options(
        {"write.parquet.layout": "random-access", "write.parquet.page-size-bytes": "65536"},
        schema,
    )
    assert "parquet.page.size" not in explicit  # the job's own setting stands


def test_upserts_and_compaction_write_the_layout(tmp_path: Path) -> None:
    catalog = neve.connect(f"sqlite:///{tmp_path}/c.db", str(tmp_path / "wh"))
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string())])
    t = catalog.create_table(
        "db.k",
        schema,
        primary_key=["id"],
        properties={"write.parquet.layout": "random-access", "write.update.mode": "merge-on-read"},
        format_version=3,
    )
    t.append(pa.table({"id": list(range(3000)), "s": ["a" * 90] * 3000}, schema=schema))
    t.refresh().upsert(pa.table({"id": [5, 7000], "s": ["b", "c"]}, schema=schema))
    t = t.refresh()
    t.maintenance.rewrite_data_files(options={"rewrite-all": "true"})
    for task in t.refresh().scan().plan_files():
        pages = {r["column"]: r for r in describe_pages(FileIO(), task.file.file_path)}
        assert pages["id"]["offset_index"] and not pages["s"]["dictionary"]
