"""The process-wide manifest cache and lazy manifest decoding used by scan planning."""

from __future__ import annotations

import io
import os
from dataclasses import replace
from typing import Any

import fastavro
import pyarrow as pa
import pytest

import neve
from neve.errors import NeveIOError, ValidationError
from neve.planning import manifest_cache as manifest_cache_module
from neve.planning.manifest_cache import (
    ManifestCache,
    holds_one_partition,
    load_manifests,
    manifest_cache,
)
from neve.planning.manifests import decode_manifest, decode_manifest_lazy, read_manifest_list
from neve.spec import manifest_io


def batch(day: int, n: int = 20) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(day * 100, day * 100 + n), pa.int64()),
            "day": pa.array([day] * n, pa.int32()),
            "name": [f"n{i}" for i in range(n)],
        }
    )


@pytest.fixture()
def table(sqlite_catalog: neve.Catalog) -> neve.Table:
    t = sqlite_catalog.create_table("db.t", batch(0).schema, partition_by=["day"])
    for day in range(6):
        t.append(pa.concat_tables([batch(day), batch(day + 10, 5)]))
    return t


def manifest_paths(t: neve.Table) -> list[str]:
    snap = t.current_snapshot()
    assert snap is not None
    return [m.manifest_path for m in read_manifest_list(t.io, snap.manifest_list)]


def test_warm_plans_do_not_read_manifests(table: neve.Table) -> None:
    manifest_cache().clear()
    every = sorted(t.file.file_path for t in table.scan().plan_files())
    assert len(every) == 12
    day3 = sorted(t.file.file_path for t in table.scan(filter="day = 3").plan_files())
    assert len(day3) == 1
    for path in manifest_paths(table):
        os.remove(path)
    # the same and other filters are planned from the cache alone
    assert sorted(t.file.file_path for t in table.scan(filter="day = 3").plan_files()) == day3
    assert len(table.scan(filter="day >= 12").plan_files()) == 4
    assert sorted(t.file.file_path for t in table.scan().plan_files()) == every
    manifest_cache().clear()
    with pytest.raises(NeveIOError):
        table.scan(filter="day = 3").plan_files()


def test_cache_is_bounded_by_entries_least_recently_used_first(table: neve.Table) -> None:
    snap = table.current_snapshot()
    assert snap is not None
    manifests = read_manifest_list(table.io, snap.manifest_list)
    assert len(manifests) == 6 and all(m.added_files_count == 2 for m in manifests)
    cache = ManifestCache(max_entries=5)
    specs = table.metadata.specs_by_id
    load_manifests(table.io, manifests[:2], specs, cache=cache)
    assert len(cache) == 2 and cache.entry_count == 4
    cache.get(table.io, manifests[0], specs)  # touch: manifests[1] is now the oldest
    cache.get(table.io, manifests[2], specs)
    assert cache.entry_count == 4
    assert cache.lookup(cache.key(manifests[1], specs)) is None
    assert cache.lookup(cache.key(manifests[0], specs)) is not None
    assert ManifestCache(max_entries=1).get(table.io, manifests[0], specs) is not None


def kv_dict(kvs: list[dict[str, Any]] | None) -> dict[int, Any] | None:
    return None if kvs is None else {kv["key"]: kv["value"] for kv in kvs}


def test_lazy_entries_equal_eager_and_plain_fastavro_decoding(
    table: neve.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = table.current_snapshot()
    assert snap is not None
    specs = table.metadata.specs_by_id
    for m in read_manifest_list(table.io, snap.manifest_list):
        data = table.io.read_bytes(m.manifest_path)
        eager = decode_manifest(data, m, specs_by_id=specs)
        lazy = decode_manifest_lazy(data, m, specs_by_id=specs)
        assert lazy.partitions == [e.data_file.partition for e in eager]
        assert lazy.statuses == [e.status for e in eager]
        assert [lazy.entry(i) for i in reversed(range(len(lazy)))] == eager[::-1]
        assert lazy.entries() == eager
        # fastavro reading the file on its own, with the writer schema, agrees
        plain: list[Any] = list(fastavro.reader(io.BytesIO(data)))
        assert len(plain) == len(eager) == 2
        for rec, e in zip(plain, eager, strict=True):
            df, f = rec["data_file"], e.data_file
            assert rec["status"] == e.status
            assert e.snapshot_id == (rec["snapshot_id"] or m.added_snapshot_id)
            assert e.sequence_number == (rec["sequence_number"] or m.sequence_number)
            assert (df["file_path"], df["record_count"], df["file_size_in_bytes"]) == (
                f.file_path,
                f.record_count,
                f.file_size_in_bytes,
            )
            assert (df["partition"]["day"],) == f.partition
            assert kv_dict(df["value_counts"]) == f.value_counts
            assert kv_dict(df["lower_bounds"]) == f.lower_bounds
            assert kv_dict(df["upper_bounds"]) == f.upper_bounds
            assert df["split_offsets"] == (
                None if f.split_offsets is None else list(f.split_offsets)
            )
        # without a head schema, or with one fastavro cannot resolve the file's schema
        # to, entries decode in full at once
        unrelated = fastavro.parse_schema({"type": "record", "name": "other", "fields": []})
        for head in (None, unrelated):
            monkeypatch.setattr(manifest_io, "_head_schema", lambda _schema, h=head: h)
            manifest_io.entry_plan.cache_clear()
            manifest_io._head_schema_of.cache_clear()
            try:
                whole = decode_manifest_lazy(data, m, specs_by_id=specs, columnar=False)
                assert whole._entries == eager
                assert whole.entries() == eager
            finally:
                monkeypatch.undo()
                manifest_io.entry_plan.cache_clear()
                manifest_io._head_schema_of.cache_clear()


def test_head_decoding_skips_metrics(table: neve.Table) -> None:
    snap = table.current_snapshot()
    assert snap is not None
    m = read_manifest_list(table.io, snap.manifest_list)[0]
    lazy = decode_manifest_lazy(table.io.read_bytes(m.manifest_path), m, columnar=False)
    assert lazy._entries == [None, None]  # nothing decoded in full yet
    plan = manifest_io.entry_plan(
        fastavro.reader(io.BytesIO(table.io.read_bytes(m.manifest_path))).metadata["avro.schema"],
        None,
        None,
    )
    data_file = next(f for f in plan.head["fields"] if f["name"] == "data_file")["type"]
    assert {f["name"] for f in data_file["fields"]} == {"content", "partition", "record_count"}
    lazy.entry(1)
    assert lazy._entries[0] is None and lazy._entries[1] is not None


def test_per_manifest_eager_flags(table: neve.Table) -> None:
    snap = table.current_snapshot()
    assert snap is not None
    manifests = read_manifest_list(table.io, snap.manifest_list)[:3]
    specs = table.metadata.specs_by_id
    cache = ManifestCache()
    loaded = load_manifests(table.io, manifests, specs, eager=[True, False, True], cache=cache)
    assert [lz._entries[0] is not None for lz in loaded] == [True, False, True]
    with pytest.raises(ValidationError, match="one per manifest"):
        load_manifests(table.io, manifests, specs, eager=[True], cache=ManifestCache())


def test_holds_one_partition(table: neve.Table) -> None:
    snap = table.current_snapshot()
    assert snap is not None
    m = read_manifest_list(table.io, snap.manifest_list)[0]
    assert m.partitions is not None and len(m.partitions) == 1
    assert not holds_one_partition(m)  # days d and d + 10
    one = m.partitions[0]
    assert holds_one_partition(m.with_(partitions=(replace(one, upper_bound=one.lower_bound),)))
    assert not holds_one_partition(
        m.with_(partitions=(replace(one, upper_bound=one.lower_bound, contains_null=True),))
    )
    assert holds_one_partition(m.with_(partitions=()))  # unpartitioned
    assert not holds_one_partition(m.with_(partitions=None))


def test_damaged_manifest_entry_raises_neve_error(table: neve.Table) -> None:
    snap = table.current_snapshot()
    assert snap is not None
    m = read_manifest_list(table.io, snap.manifest_list)[0]
    lazy = decode_manifest_lazy(table.io.read_bytes(m.manifest_path), m, columnar=False)
    lazy._blocks[0] = lazy._blocks[0][:40]  # a damaged block
    with pytest.raises(NeveIOError, match="damaged"):
        lazy.entry(0)


def test_small_reads_stay_on_the_planning_thread(
    table: neve.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The columnar reader reads manifests of fewer than PARALLEL_READS_FROM bytes in all
    on the planning thread (a hand-over to the pool costs more than it saves); more are
    shared with the pool's threads. Both decode the same."""
    snap = table.current_snapshot()
    assert snap is not None
    manifests = read_manifest_list(table.io, snap.manifest_list)
    assert len(manifests) > 2
    specs = table.metadata.specs_by_id
    used: list[int] = []
    real_pool = manifest_cache_module._shared_pool

    class Spy:
        def submit(self, *args: Any) -> Any:
            used.append(1)
            return real_pool().submit(*args)

        def map(self, *args: Any) -> Any:
            used.append(1)
            return real_pool().map(*args)

    def spy() -> Any:
        return Spy()

    monkeypatch.setattr(manifest_cache_module, "_shared_pool", spy)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    alone = load_manifests(table.io, manifests, specs, cache=ManifestCache())
    assert used == []
    assert all(lz.columns is not None for lz in alone)
    monkeypatch.setattr(manifest_cache_module, "PARALLEL_READS_FROM", 0)
    shared = load_manifests(table.io, manifests, specs, cache=ManifestCache())
    assert used
    assert all(lz.columns is not None for lz in shared)
    assert [lz.entries() for lz in alone] == [lz.entries() for lz in shared]
