"""The columnar manifest decoder (polars-avro's reader) against fastavro, entry by entry.

Planning decodes manifests with a compiled Avro reader and falls back to fastavro for
files it cannot read. Both must give identical entries: every field, the
partition tuple with the same Python types, inherited snapshot ids, sequence numbers
and first row ids. Checked on manifests neve writes (random partition types, values,
nulls and metrics, v1 to v3), on manifests Iceberg-Java wrote (the shared fixtures)
and on manifests pyiceberg wrote; and the tests assert that the columnar path really
was taken, so that a silent fallback cannot pass for it.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import pickle
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forked import run_forked
from neve.errors import NeveIOError
from neve.expressions.metric_arrays import MetricArrays
from neve.io.fileio import FileIO
from neve.planning import avro_reader
from neve.planning.arrow_values import LazyMap
from neve.planning.avro_reader import read_arrow, readable_schema
from neve.planning.manifest_batches import decode_entries_together
from neve.planning.manifest_columnar import metric_arrays_together
from neve.planning.manifests import (
    FEW_ENTRIES,
    LazyManifest,
    decode_manifest_lazy,
    decode_manifests_lazy,
    read_manifest_list,
)
from neve.spec.avro_container import read_header
from neve.spec.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from neve.spec.manifest_writer import write_manifest
from neve.spec.partition import PartitionField, PartitionSpec
from neve.spec.schema import Schema
from neve.spec.transforms import BucketTransform, IdentityTransform
from neve.spec.types import DATE, LONG, DecimalType, FixedType, NestedField, PrimitiveType
from strategies import INT64, SIMPLE_PRIMITIVES, values_of

FIXTURES = Path(os.environ.get("NEVE_FIXTURES", "/work/shared/fixtures")) / "iceberg-verification"

PARTITION_TYPES: tuple[PrimitiveType, ...] = (
    *SIMPLE_PRIMITIVES,
    DecimalType(9, 2),
    DecimalType(38, 10),
    FixedType(3),
)


def _both(
    data: bytes,
    m: ManifestFile,
    specs: dict[int, PartitionSpec] | None = None,
    schema: Schema | None = None,
) -> tuple[LazyManifest, LazyManifest]:
    col = decode_manifest_lazy(data, m, specs_by_id=specs, schema=schema, columnar=True)
    avro = decode_manifest_lazy(data, m, specs_by_id=specs, schema=schema, columnar=False)
    return col, avro


def _subset(m: Any, fids: set[int]) -> dict[int, Any] | None:
    return None if m is None else {k: v for k, v in m.items() if k in fids}


def _assert_metrics_at(col: LazyManifest, avro: LazyManifest) -> None:
    """What planning evaluates metrics on before decoding entries in full: the record
    count and each metric map limited to the filter's fields, as in the full entries."""
    entries = avro.entries()
    every = sorted({k for e in entries for k in (e.data_file.lower_bounds or {})} | {1, 2})
    for fids in ({every[0]}, set(every[::2]), set(every), {999}):
        indices = list(range(len(entries)))[::-1][::2]  # any order, not all
        got = col.metrics_at(indices, fids)
        assert got is not None
        assert got == [
            (
                entries[i].data_file.record_count,
                _subset(entries[i].data_file.value_counts, fids),
                _subset(entries[i].data_file.null_value_counts, fids),
                _subset(entries[i].data_file.nan_value_counts, fids),
                _subset(entries[i].data_file.lower_bounds, fids),
                _subset(entries[i].data_file.upper_bounds, fids),
            )
            for i in indices
        ]
        _assert_metric_arrays(col, entries, fids)
        # the arrays of some entries only, as planning builds them for the survivors of
        # partition pruning (maps laid out alike share their key positions there)
        assert col.columns is not None
        ((members, some),) = metric_arrays_together([(col.columns, indices)], [fids])
        assert members == [0]
        assert some is not None
        _assert_metric_arrays(col, [entries[i] for i in indices], fids, some)


def _assert_metric_arrays(
    col: LazyManifest,
    entries: list[ManifestEntry],
    fids: set[int],
    arrays: MetricArrays | None = None,
) -> None:
    """The same metrics as arrays over all entries (or ``arrays``, those of
    ``entries``), for the vectorized evaluator."""
    arrays = col.metric_arrays(fids) if arrays is None else arrays
    assert arrays is not None
    files = [e.data_file for e in entries]
    assert arrays.record_counts.tolist() == [f.record_count for f in files]
    for name in ("value_counts", "null_value_counts", "nan_value_counts"):
        for fid in fids:
            maps = [getattr(f, name) or {} for f in files]
            known, counts = getattr(arrays, name).get(fid, ([False] * len(files), [0] * len(files)))
            assert list(known) == [fid in m for m in maps], (name, fid)
            assert list(counts) == [m.get(fid, 0) for m in maps], (name, fid)
    for name in ("lower_bounds", "upper_bounds"):
        for fid in fids:
            maps = [getattr(f, name) or {} for f in files]
            known, bounds = getattr(arrays, name).get(fid, ([False] * len(files), []))
            assert list(known) == [fid in m for m in maps], (name, fid)
            assert bounds == [m[fid] for m in maps if fid in m], (name, fid)


def _assert_same(col: LazyManifest, avro: LazyManifest, *, columnar: bool = True) -> None:
    assert (col._columns is not None) is columnar
    assert avro._columns is None
    if columnar:
        _assert_metrics_at(col, avro)
    else:
        assert col.metrics_at([0], {1}) is None
        assert col.metric_arrays({1}) is None
    assert col.statuses == avro.statuses
    assert col.contents == avro.contents
    assert col.partitions == avro.partitions
    for a, b in zip(col.partitions, avro.partitions, strict=True):
        assert [type(v) for v in a] == [type(v) for v in b]
    n = len(avro)
    # a few entries first (row-wise conversion), then all (column-wise conversion)
    some = list(range(0, n, 3))
    assert col.entries_at(some) == [avro.entry(i) for i in some]
    assert col.entries() == avro.entries()
    for a, b in zip(col.entries(), avro.entries(), strict=True):
        assert [type(v) for v in a.data_file.partition] == [type(v) for v in b.data_file.partition]


# -- manifests neve writes -------------------------------------------------------------


def _maybe_map(keys: list[int], values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | st.fixed_dictionaries({k: values for k in keys})


@st.composite
def _manifests(draw: st.DrawFn) -> tuple[int, Schema, PartitionSpec, list[ManifestEntry]]:
    version = draw(st.sampled_from([1, 2, 3]))
    types = draw(st.lists(st.sampled_from(PARTITION_TYPES), min_size=0, max_size=3))
    schema = Schema(*(NestedField(i + 1, f"c{i}", t) for i, t in enumerate(types)))
    spec = PartitionSpec(
        0,
        tuple(
            PartitionField(i + 1, 1000 + i, IdentityTransform(), f"c{i}_p")
            for i in range(len(types))
        ),
    )
    ids = [i + 1 for i in range(len(types))] or [1]
    n = draw(st.integers(1, 12))
    entries = []
    for k in range(n):
        partition = tuple(draw(st.none() | values_of(t, max_size=8)) for t in types)
        status = draw(st.sampled_from(list(ManifestEntryStatus)))
        seq = None if status is ManifestEntryStatus.ADDED else draw(st.integers(0, 50))
        snapshot_id = draw(st.none() | INT64) if version > 1 else draw(INT64)
        f = DataFile(
            file_path=f"/wh/t/data/f-{k}-{draw(st.text(max_size=5))}.parquet",
            file_format=draw(st.sampled_from([FileFormat.PARQUET, FileFormat.AVRO])),
            partition=partition,
            record_count=draw(st.integers(0, 10**6)),
            file_size_in_bytes=draw(st.integers(1, 10**9)),
            column_sizes=draw(_maybe_map(ids, st.integers(0, 10**6))),
            value_counts=draw(_maybe_map(ids, st.integers(0, 10**6))),
            null_value_counts=draw(_maybe_map(ids, st.integers(0, 10**6))),
            nan_value_counts=draw(_maybe_map(ids[:1], st.integers(0, 10))),
            # a binary view keeps values up to 12 bytes inline, longer ones apart
            lower_bounds=draw(_maybe_map(ids, st.binary(max_size=20))),
            upper_bounds=draw(_maybe_map(ids, st.binary(max_size=20))),
            key_metadata=draw(st.none() | st.binary(max_size=4)),
            split_offsets=draw(st.none() | st.lists(st.integers(4, 10**6), max_size=3).map(tuple)),
            sort_order_id=draw(st.none() | st.integers(0, 3)) if version > 1 else None,
            first_row_id=draw(st.none() | st.integers(0, 10**6)) if version >= 3 else None,
        )
        entries.append(ManifestEntry(status, snapshot_id, seq, seq, f))
    return version, schema, spec, entries


@settings(max_examples=100)
@given(case=_manifests(), manifest_seq=st.integers(0, 20), first_row_id=st.integers(0, 99))
def test_columnar_equals_fastavro_on_random_manifests(
    case: tuple[int, Schema, PartitionSpec, list[ManifestEntry]],
    manifest_seq: int,
    first_row_id: int,
) -> None:
    version, schema, spec, entries = case
    fio = FileIO()
    with tempfile.TemporaryDirectory() as tmp:
        m = write_manifest(
            fio,
            f"{tmp}/m.avro",
            format_version=version,
            spec=spec,
            schema=schema,
            content=ManifestContent.DATA,
            snapshot_id=7,
            entries=entries,
        )
        data = fio.read_bytes(m.manifest_path)
    m = m.with_(
        sequence_number=manifest_seq if version > 1 else 0,
        first_row_id=first_row_id if version >= 3 else None,
    )
    specs = {0: spec}
    _assert_same(*_both(data, m, specs, schema))  # converted by Iceberg types
    _assert_same(*_both(data, m, specs))  # by the file's Avro types
    _assert_same(*_both(data, m))  # the spec from the file itself


@settings(max_examples=40)
@given(case=_manifests(), cuts=st.lists(st.integers(0, 12), min_size=2, max_size=2))
def test_manifests_read_together_equal_each_read_by_fastavro(
    case: tuple[int, Schema, PartitionSpec, list[ManifestEntry]], cuts: list[int]
) -> None:
    """Manifests of one writer schema are read by the reader in one call; split back, each
    equals its fastavro decoding (empty manifests included)."""
    version, schema, spec, entries = case
    a, b = sorted(cuts)
    parts = [entries[:a], entries[a:b], entries[b:]]
    fio = FileIO()
    datas, manifests = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for k, part in enumerate(parts):
            m = write_manifest(
                fio,
                f"{tmp}/m{k}.avro",
                format_version=version,
                spec=spec,
                schema=schema,
                content=ManifestContent.DATA,
                snapshot_id=7 + k,
                entries=part,
            )
            datas.append(fio.read_bytes(m.manifest_path))
            manifests.append(m.with_(sequence_number=3 + k if version > 1 else 0))
    together = decode_manifests_lazy(datas, manifests, specs_by_id={0: spec}, columnar=True)
    # one read: each manifest's columns are a slice of the same arrays
    offsets = [lz._columns._data_file.offset for lz in together if lz._columns is not None]
    assert offsets == [0, len(parts[0]), len(parts[0]) + len(parts[1])]
    for data, m, col in zip(datas, manifests, together, strict=True):
        avro = decode_manifest_lazy(data, m, specs_by_id={0: spec}, columnar=False)
        _assert_same(col, avro)


@settings(max_examples=40)
@given(
    case=_manifests(),
    cut=st.integers(0, 12),
    picks=st.lists(st.lists(st.integers(0, 11), max_size=6), min_size=2, max_size=2),
)
def test_entries_decoded_together_equal_fastavro(
    case: tuple[int, Schema, PartitionSpec, list[ManifestEntry]],
    cut: int,
    picks: list[list[int]],
) -> None:
    """Planning decodes the survivors of all manifests of one columnar read in one pass
    over the arrays they share (decode_entries_together): any entries, in any order,
    repeated or not, equal fastavro's; the others stay undecoded."""
    version, schema, spec, entries = case
    parts = [entries[:cut], entries[cut:]]
    fio = FileIO()
    datas, manifests = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for k, part in enumerate(parts):
            m = write_manifest(
                fio,
                f"{tmp}/m{k}.avro",
                format_version=version,
                spec=spec,
                schema=schema,
                content=ManifestContent.DATA,
                snapshot_id=7 + k,
                entries=part,
            )
            datas.append(fio.read_bytes(m.manifest_path))
            manifests.append(m.with_(sequence_number=3 + k if version > 1 else 0))
    together = decode_manifests_lazy(datas, manifests, specs_by_id={0: spec}, columnar=True)
    assert all(lz._columns is not None for lz in together)
    wanted = [[i for i in pick if i < len(part)] for pick, part in zip(picks, parts, strict=True)]
    decode_entries_together(list(zip(together, wanted, strict=True)))
    for data, m, col, indices in zip(datas, manifests, together, wanted, strict=True):
        avro = decode_manifest_lazy(data, m, specs_by_id={0: spec}, columnar=False)
        assert [i for i in range(len(col)) if col.is_decoded(i)] == sorted(set(indices))
        assert [col.entry(i) for i in indices] == [avro.entry(i) for i in indices]


def test_manifests_of_different_schemas_and_codecs_read_together(tmp_path: Path) -> None:
    data, m, specs = _small_manifest(tmp_path)
    schema = Schema(NestedField(1, "id", LONG))
    spec = PartitionSpec(0, (PartitionField(1, 1000, BucketTransform(4), "id_b"),))
    fio = FileIO()
    om = write_manifest(
        fio,
        f"{tmp_path}/other.avro",
        format_version=2,
        spec=spec,
        schema=schema,
        content=ManifestContent.DATA,
        snapshot_id=5,
        entries=[
            ManifestEntry(
                ManifestEntryStatus.EXISTING,
                4,
                1,
                1,
                DataFile(
                    file_path=f"{tmp_path}/o.parquet",
                    file_format=FileFormat.PARQUET,
                    partition=(3,),
                    record_count=9,
                    file_size_in_bytes=99,
                ),
            )
        ],
    ).with_(sequence_number=2)
    other = fio.read_bytes(om.manifest_path)
    datas = [data, _reencoded(data, "bzip2"), other, _reencoded(data, "null"), data]
    manifests = [m, m, om, m, m]
    together = decode_manifests_lazy(datas, manifests, columnar=True)
    assert [lz._columns is not None for lz in together] == [True, False, True, True, True]
    # the first and last share schema and codec: read together, the last one a slice
    assert [lz._columns._data_file.offset for lz in together if lz._columns] == [0, 0, 0, 5]
    for d, mf, lz in zip(datas, manifests, together, strict=True):
        assert lz.entries() == decode_manifest_lazy(d, mf, columnar=False).entries()
    expected = decode_manifest_lazy(data, m, specs_by_id=specs, columnar=False).entries()
    # a damaged file among them: the others still read (each on its own), it raises
    with pytest.raises(NeveIOError, match="damaged"):
        decode_manifests_lazy([data, data[:-30], data], [m, m, m], specs_by_id=specs, columnar=True)
    good = decode_manifests_lazy([data, data], [m, m], specs_by_id=specs, columnar=True)
    assert [lz.entries() for lz in good] == [expected, expected]


def test_delete_manifests_agree(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LONG))
    spec = PartitionSpec(0, (PartitionField(1, 1000, BucketTransform(4), "id_b"),))
    deletes = [
        ManifestEntry(
            ManifestEntryStatus.ADDED,
            None,
            None,
            None,
            DataFile(
                file_path=f"{tmp_path}/d-{k}.puffin",
                file_format=FileFormat.PUFFIN,
                partition=(k,),
                record_count=3,
                file_size_in_bytes=100,
                content=DataFileContent.POSITION_DELETES,
                referenced_data_file=f"{tmp_path}/data-{k}.parquet",
                content_offset=4 + k,
                content_size_in_bytes=40,
            ),
        )
        for k in range(4)
    ] + [
        ManifestEntry(
            ManifestEntryStatus.EXISTING,
            5,
            2,
            2,
            DataFile(
                file_path=f"{tmp_path}/eq.parquet",
                file_format=FileFormat.PARQUET,
                partition=(None,),
                record_count=3,
                file_size_in_bytes=100,
                content=DataFileContent.EQUALITY_DELETES,
                equality_ids=(1,),
            ),
        )
    ]
    fio = FileIO()
    m = write_manifest(
        fio,
        f"{tmp_path}/d.avro",
        format_version=3,
        spec=spec,
        schema=schema,
        content=ManifestContent.DELETES,
        snapshot_id=9,
        entries=deletes,
    ).with_(sequence_number=4)
    col, avro = _both(fio.read_bytes(m.manifest_path), m, {0: spec}, schema)
    _assert_same(col, avro)
    assert [e.data_file.content_offset for e in col.entries()] == [4, 5, 6, 7, None]


# -- manifests other writers wrote ------------------------------------------------------


def _fixture_metadata_dirs() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*/bytes/**/metadata") if p.is_dir())


def test_fixture_manifests_from_iceberg_java_agree() -> None:
    dirs = _fixture_metadata_dirs()
    assert len(dirs) == 3, f"expected the three iceberg-verification tables under {FIXTURES}"
    fio = FileIO()
    checked = 0
    for d in dirs:
        for listing in sorted(d.glob("snap-*.avro")):
            for m in read_manifest_list(fio, str(listing)):
                data = (d / Path(m.manifest_path).name).read_bytes()
                _assert_same(*_both(data, m))
                checked += 1
    assert checked >= 3


def test_pyiceberg_manifests_agree(tmp_path: Path) -> None:
    from pyiceberg import transforms as pt
    from pyiceberg.catalog.sql import SqlCatalog

    cat = SqlCatalog("py", uri=f"sqlite:///{tmp_path}/py.db", warehouse=f"file://{tmp_path}/wh")
    cat.create_namespace("db")
    rows = pa.table(
        {
            "id": pa.array([1, 2, None, 4], pa.int64()),
            "name": pa.array(["a", None, "ccc", "dd"], pa.string()),
            "day": pa.array(
                [dt.date(2024, 1, 1), dt.date(1969, 12, 31), None, dt.date(2024, 3, 1)],
                pa.date32(),
            ),
            "ts": pa.array(
                [
                    dt.datetime(2024, 1, 1, 5),
                    None,
                    dt.datetime(1960, 1, 1),
                    dt.datetime(2024, 1, 2),
                ],
                pa.timestamp("us"),
            ),
            "price": pa.array(
                [Decimal("1.50"), Decimal("-2.25"), None, Decimal("0.01")], pa.decimal128(9, 2)
            ),
        }
    )
    table = cat.create_table("db.p", rows.schema)
    with table.update_spec() as update:
        update.add_field("id", pt.BucketTransform(4), "id_bucket")
        update.add_field("name", pt.TruncateTransform(2), "name_trunc")
        update.add_field("day", pt.IdentityTransform(), "day")
        update.add_field("ts", pt.DayTransform(), "ts_day")
        update.add_field("price", pt.IdentityTransform(), "price")
    table.append(rows)
    table.append(rows.slice(1, 2))
    snap = table.current_snapshot()
    assert snap is not None
    fio = FileIO()
    manifests = read_manifest_list(fio, snap.manifest_list.removeprefix("file://"))
    assert len(manifests) >= 1
    for m in manifests:
        data = fio.read_bytes(m.manifest_path.removeprefix("file://"))
        _assert_same(*_both(data, m))


# -- what the reader cannot read goes to fastavro -------------------------------------


def _reencoded(data: bytes, codec: str) -> bytes:
    """The same manifest written again by fastavro with another codec."""
    reader = fastavro.reader(io.BytesIO(data))
    records = list(reader)
    meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
    out = io.BytesIO()
    fastavro.writer(out, reader.writer_schema, records, codec=codec, metadata=meta)
    return out.getvalue()


def _small_manifest(
    tmp_path: Path, count: int = 5, *, partitioned: bool = True
) -> tuple[bytes, ManifestFile, dict[int, PartitionSpec]]:
    """A manifest of ``count`` data files, partitioned by identity on a date (or not)."""
    schema = Schema(NestedField(1, "d", DATE))
    fields = (PartitionField(1, 1000, IdentityTransform(), "d"),) if partitioned else ()
    spec = PartitionSpec(0, fields)
    entries = [
        ManifestEntry(
            ManifestEntryStatus.ADDED,
            None,
            None,
            None,
            DataFile(
                file_path=f"{tmp_path}/f{k}.parquet",
                file_format=FileFormat.PARQUET,
                partition=(k - 2,) if partitioned else (),
                record_count=k,
                file_size_in_bytes=10 + k,
                lower_bounds={1: bytes([k % 256])},
            ),
        )
        for k in range(count)
    ]
    fio = FileIO()
    m = write_manifest(
        fio,
        f"{tmp_path}/m.avro",
        format_version=2,
        spec=spec,
        schema=schema,
        content=ManifestContent.DATA,
        snapshot_id=3,
        entries=entries,
    ).with_(sequence_number=2)
    return fio.read_bytes(m.manifest_path), m, {0: spec}


def test_codec_the_columnar_path_does_not_read_falls_back_to_fastavro(tmp_path: Path) -> None:
    data, m, specs = _small_manifest(tmp_path)
    bz = _reencoded(data, "bzip2")  # the columnar path reads null, deflate and snappy
    col, avro = _both(bz, m, specs)
    _assert_same(col, avro, columnar=False)
    assert col.entries() == decode_manifest_lazy(data, m, specs_by_id=specs).entries()
    # the null codec is one it reads
    _assert_same(*_both(_reencoded(data, "null"), m, specs))


def test_the_reader_reads_python_files_where_there_are_no_in_memory_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Linux the reader opens the bytes as an in-memory file by its /proc path;
    elsewhere it reads a Python file: both read the same columns."""
    data, m, specs = _small_manifest(tmp_path, 40)
    by_memfd = decode_manifest_lazy(data, m, specs_by_id=specs, columnar=True)
    monkeypatch.setattr(avro_reader, "_MEMFD", False)
    by_python_file = decode_manifest_lazy(data, m, specs_by_id=specs, columnar=True)
    _assert_same(by_python_file, decode_manifest_lazy(data, m, specs_by_id=specs, columnar=False))
    assert by_memfd.entries() == by_python_file.entries()


def test_a_failing_reader_leaves_the_manifest_to_fastavro(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader is reached through a private module of its package: whatever it
    raises, the manifest is decoded by fastavro and planning goes on."""
    data, m, specs = _small_manifest(tmp_path, 40)

    class Broken:
        def __init__(self, *args: Any) -> None:
            raise AttributeError("no such thing in this version")

    monkeypatch.setattr(avro_reader, "AvroSource", Broken)
    col, avro = _both(data, m, specs)
    _assert_same(col, avro, columnar=False)
    assert col.entries() == avro.entries()


def test_unpartitioned_manifests_are_read_without_their_empty_partition(
    tmp_path: Path,
) -> None:
    """An unpartitioned table's manifests hold a partition record of no fields, which
    the reader cannot make a column of: the schema it reads leaves that field out (it
    encodes as nothing), a reference to the record by name too, and the columns still
    line up with fastavro's entries."""
    empty = {"type": "record", "name": "r102", "fields": []}
    schema = {
        "type": "record",
        "name": "e",
        "fields": [
            {"name": "a", "type": "int"},
            {"name": "partition", "type": empty},
            {"name": "again", "type": "r102"},
            {"name": "b", "type": {"type": "array", "items": "long"}, "default": []},
        ],
    }
    found = readable_schema(json.dumps(schema))
    assert found is not None
    assert json.loads(found)["fields"] == [
        {"name": "a", "type": "int"},
        {"name": "b", "type": {"type": "array", "items": "long"}},
    ]
    records = [{"a": k, "partition": {}, "again": {}, "b": [k, -k]} for k in range(3)]
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records)
    header = read_header(buf.getvalue())
    read = read_arrow(header.with_schema(buf.getvalue(), found))
    assert read.to_pylist() == [{"a": k, "b": [k, -k]} for k in range(3)]
    # and a manifest of an unpartitioned spec goes the columnar way
    _assert_same(*_both(*_small_manifest(tmp_path, 20, partitioned=False)))


def test_damaged_manifest_raises_neve_error_through_the_columnar_path(tmp_path: Path) -> None:
    data, m, specs = _small_manifest(tmp_path)
    with pytest.raises(NeveIOError, match="damaged"):
        decode_manifest_lazy(data[: len(data) - 30], m, specs_by_id=specs, columnar=True)


def test_the_environment_variable_chooses_the_decoder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, m, specs = _small_manifest(tmp_path, FEW_ENTRIES)
    monkeypatch.setenv("NEVE_MANIFEST_DECODER", "fastavro")
    assert decode_manifest_lazy(data, m, specs_by_id=specs)._columns is None
    monkeypatch.setenv("NEVE_MANIFEST_DECODER", "columnar")
    assert decode_manifest_lazy(data, m, specs_by_id=specs)._columns is not None
    monkeypatch.delenv("NEVE_MANIFEST_DECODER")
    assert decode_manifest_lazy(data, m, specs_by_id=specs)._columns is not None


def test_manifests_of_few_entries_are_decoded_by_fastavro(tmp_path: Path) -> None:
    """The reader's set-up costs more than fastavro's whole decode of a small manifest
    (one entry per commit is the common case): by default they go to fastavro, by the
    manifest list's counts, and decode the same."""
    data, m, specs = _small_manifest(tmp_path, FEW_ENTRIES - 1)
    default = decode_manifest_lazy(data, m, specs_by_id=specs)
    assert default._columns is None
    forced = decode_manifest_lazy(data, m, specs_by_id=specs, columnar=True)
    assert forced._columns is not None
    assert default.entries() == forced.entries()


def _decode_in_child(data: bytes, m: ManifestFile, specs: dict[int, PartitionSpec]) -> None:
    lazy = decode_manifest_lazy(data, m, specs_by_id=specs, columnar=True)
    expected = decode_manifest_lazy(data, m, specs_by_id=specs, columnar=False).entries()
    # fastavro, not the reader: native thread pools deadlock a child forked after use
    os._exit(0 if lazy._columns is None and lazy.entries() == expected else 3)


def test_a_process_forked_after_the_reader_was_used_decodes_with_fastavro(tmp_path: Path) -> None:
    data, m, specs = _small_manifest(tmp_path)
    used = decode_manifest_lazy(data, m, specs_by_id=specs, columnar=True)
    assert used._columns is not None  # the reader was used
    assert run_forked(_decode_in_child, (data, m, specs), "decoding a manifest") == 0
    # this process still decodes with the reader
    assert decode_manifest_lazy(data, m, specs_by_id=specs, columnar=True)._columns is not None


def test_metric_maps_of_columnar_entries_are_built_when_read(tmp_path: Path) -> None:
    """The columnar decoder gives data files whose metric maps are built from the
    Arrow columns on first read (planning judges metrics on arrays and never reads
    them): equal to fastavro's dicts, and plain dicts once pickled (tasks sent to
    Spark executors)."""
    data, m, specs = _small_manifest(tmp_path, 40)
    lazy = decode_manifest_lazy(data, m, specs_by_id=specs, columnar=True)
    files = [e.data_file for e in lazy.entries()]
    assert all(isinstance(f.lower_bounds, LazyMap) for f in files)
    assert all(f.lower_bounds._dict is None for f in files)  # type: ignore[union-attr]
    assert all(f.column_sizes is None for f in files)
    expected = [
        e.data_file
        for e in decode_manifest_lazy(data, m, specs_by_id=specs, columnar=False).entries()
    ]
    assert files == expected and expected == files
    assert [dict(f.lower_bounds or {}) for f in files] == [f.lower_bounds for f in expected]
    for f, e in zip(files, expected, strict=True):
        clone = pickle.loads(pickle.dumps(f))
        assert clone == e and type(clone.lower_bounds) is dict
