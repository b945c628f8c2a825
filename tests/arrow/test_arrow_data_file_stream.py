"""The streaming writer a Spark task uses (``DataFileStream``): batches of rows
clustered by partition become one file per partition (not one per batch) with row
groups of the configured size, unclustered rows are still written right, and the
passenger columns come back per file in row order; plus ``RowOrigins``, the
run-length form of where compacted rows came from, against a row-by-row model."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neve.arrow.write import RowOrigins
from neve.arrow.writer import DataFileStream
from neve.io.fileio import FileIO
from neve.io.locations import LocationProvider
from neve.spec.partition import PartitionField, PartitionSpec
from neve.spec.schema import Schema
from neve.spec.transforms import parse_transform
from neve.spec.types import INT, LONG, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, True), NestedField(2, "day", INT, False))
SPEC = PartitionSpec(0, (PartitionField(2, 1000, parse_transform("identity"), "day"),))


def batches(ids: list[int], size: int) -> list[pa.Table]:
    out = []
    for i in range(0, len(ids), size):
        chunk = ids[i : i + size]
        out.append(
            pa.table(
                {
                    "id": pa.array(chunk, pa.int64()),
                    "day": pa.array([k % 3 for k in chunk], pa.int32()),
                    "src": pa.array([k // 100 for k in chunk], pa.int32()),
                    "pos": pa.array([k % 100 for k in chunk], pa.int64()),
                }
            )
        )
    return out


@pytest.mark.parametrize("clustered", [True, False])
def test_stream_writes_files_per_partition_with_passengers(tmp_path: Path, clustered: bool) -> None:
    ids = list(range(3000))
    ids.sort(key=lambda k: (k % 3, k) if clustered else (random.Random(k).random(), k))
    seen: dict[str, list[pa.Table]] = {}
    stream = DataFileStream(
        FileIO(),
        SCHEMA,
        SPEC,
        LocationProvider(str(tmp_path)),
        passengers=["src", "pos"],
        on_rows=lambda path, rows: seen.setdefault(path, []).append(rows),
    )
    for b in batches(ids, 128):
        stream.write(b)
    files = stream.close()
    if clustered:
        assert len(files) == 3  # one per partition, not one per batch
    got: list[int] = []
    for f in files:
        data = pq.read_table(f.file_path)
        assert data.column_names == ["id", "day"]  # passengers are not written
        if clustered:  # batches gathered into one row group
            assert pq.ParquetFile(f.file_path).metadata.num_row_groups == 1
        file_ids = data.column("id").to_pylist()
        assert {k % 3 for k in file_ids} == {f.partition[0]} and f.record_count == len(file_ids)
        passengers = pa.concat_tables(seen[f.file_path])
        assert passengers.column("src").to_pylist() == [k // 100 for k in file_ids]
        assert passengers.column("pos").to_pylist() == [k % 100 for k in file_ids]
        got += file_ids
    assert sorted(got) == sorted(ids)
    assert sorted(got) == list(range(3000))


def test_stream_abort_removes_its_files(tmp_path: Path) -> None:
    stream = DataFileStream(FileIO(), SCHEMA, SPEC, LocationProvider(str(tmp_path)))
    for b in batches(list(range(300)), 50):
        stream.write(b.drop_columns(["src", "pos"]))
    stream.abort()
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_row_origins_against_a_row_by_row_model() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(0, 80))
        pairs = list({(int(rng.integers(0, 4)), int(rng.integers(0, 60))) for _ in range(n)})
        rng.shuffle(pairs)  # type: ignore[arg-type]
        if rng.random() < 0.5:
            pairs.sort()  # long runs, as bin-packing makes them
        src = np.array([s for s, _ in pairs], dtype=np.int32)
        pos = np.array([p for _, p in pairs], dtype=np.int64)
        origins = RowOrigins.of(src, pos)
        back_src, back_pos = origins.expand()
        assert back_src.tolist() == src.tolist() and back_pos.tolist() == pos.tolist()
        assert origins.rows == len(pairs)
        cut = int(rng.integers(0, len(pairs) + 1))
        joined = RowOrigins.concat(
            [RowOrigins.of(src[:cut], pos[:cut]), RowOrigins.of(src[cut:], pos[cut:])]
        )
        assert joined.count.tolist() == origins.count.tolist()
        assert joined.first.tolist() == origins.first.tolist()
        marked = {s: np.unique(rng.integers(0, 60, 15)).astype(np.int64) for s in range(4)}
        want = [k for k, (s, p) in enumerate(pairs) if p in set(marked[s].tolist())]
        assert origins.rows_at(marked).tolist() == want
