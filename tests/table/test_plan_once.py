"""A filtered copy-on-write delete plans the table once, on the pyarrow engine and on
Spark: planning reads only the manifests the filter may match, once each, and hands
the engine the tasks it planned; the engine plans nothing (no second planning of the
whole table to find the tasks of the files to rewrite).

Reads are counted on the real FileIO with the process-wide manifest cache turned off,
so that every planning pass shows up as reads. The commit itself still reads each data
manifest once, to write the new manifests without the removed files."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import neve
from neve.io.fileio import FileIO
from neve.planning.manifest_cache import manifest_cache
from neve.planning.manifests import read_manifest_list
from neve.spark import delete as spark_delete
from neve.spec.manifest import ManifestContent

GROUPS = 8


@pytest.fixture
def table(sqlite_catalog: neve.Catalog) -> neve.Table:
    schema = pa.schema([("id", pa.int64()), ("grp", pa.int32())])
    t = sqlite_catalog.create_table(
        "db.t",
        schema,
        partition_by=["grp"],
        # copy-on-write: the rewrite path is what is counted here
        properties={"commit.manifest-merge.enabled": "false", "write.delete.mode": "copy-on-write"},
    )
    for g in range(GROUPS):  # one manifest per group
        ids = list(range(g * 100, g * 100 + 100))
        t.append(pa.table({"id": ids, "grp": [g] * 100}, schema=schema))
    return t


@pytest.fixture
def manifest_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Reads of manifest files (not manifest lists) by path, cache off."""
    reads: Counter[str] = Counter()
    real = FileIO.read_bytes

    def counting(self: FileIO, path: str) -> bytes:
        name = path.rsplit("/", 1)[-1]
        if name.endswith(".avro") and not name.startswith("snap-"):
            reads[name] += 1
        return real(self, path)

    cache = manifest_cache()
    size = cache.max_entries
    cache.clear()
    cache.max_entries = 0
    monkeypatch.setattr(FileIO, "read_bytes", counting)
    try:
        yield reads
    finally:
        cache.max_entries = size


def _check(table: neve.Table, reads: Counter[str], delete: Callable[[], None]) -> None:
    head = table.current_snapshot()
    assert head is not None
    lists = read_manifest_list(table.io, head.manifest_list)
    data = [m for m in lists if m.content is ManifestContent.DATA]
    assert len(data) == GROUPS
    reads.clear()
    delete()
    # the manifest of group 3 is read twice: once to plan, once by the commit's rewrite
    # of it; every other manifest once, by the commit only (planning pruned it)
    by_path = {m.manifest_path.rsplit("/", 1)[-1]: m for m in data}
    expected = Counter({name: 1 for name in by_path})
    (planned,) = [n for n, m in by_path.items() if m.partitions[0].lower_bound == b"\x03\0\0\0"]
    expected[planned] = 2
    assert reads == expected
    t = table.refresh()
    assert t.scan().count() == GROUPS * 100 - 1
    assert t.scan(filter="id = 335").count() == 0


def test_a_filtered_delete_plans_once_on_pyarrow(
    table: neve.Table, manifest_reads: Counter[str]
) -> None:
    _check(table, manifest_reads, lambda: table.delete("grp = 3 and id = 335"))


@pytest.mark.spark
def test_a_filtered_delete_plans_once_on_spark(
    spark: SparkSession, table: neve.Table, manifest_reads: Counter[str]
) -> None:
    _check(table, manifest_reads, lambda: spark_delete(spark, table, "grp = 3 and id = 335"))
