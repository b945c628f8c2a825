"""Manifests and manifest lists compressed with Avro's ``zstandard`` codec, as engines
write them when ``write.avro.compression-codec`` is ``zstd``: neve plans and reads such
a table as it reads the same table with deflate manifests (fastavro decodes the codec,
with ``backports.zstd`` before Python 3.14; the columnar reader leaves it to fastavro).
Here the files neve wrote are re-encoded with the other codec, record for record."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

import neve
from neve.planning.manifest_cache import manifest_cache

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("day", pa.date32()),
        pa.field("v", pa.string()),
    ]
)


def _reencode(path: str, codec: str, fix: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        schema = reader.writer_schema
        meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
        records = [fix(r) for r in reader]
    with open(path, "wb") as f:
        fastavro.writer(f, schema, records, codec=codec, metadata=meta)
    with open(path, "rb") as f:
        assert fastavro.reader(f).codec == codec


def _rows(table: Any) -> list[tuple[Any, ...]]:
    got = table.scan().to_arrow().sort_by("id")
    return list(zip(*(got.column(n).to_pylist() for n in got.column_names), strict=True))


@pytest.mark.parametrize("decoder", ["columnar", "fastavro"])
def test_a_table_with_zstd_manifests_reads_the_same(
    tmp_path: Path, decoder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEVE_MANIFEST_DECODER", decoder)
    cat = neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table(
        "db.t",
        SCHEMA,
        partition_by=["day"],
        properties={"write.delete.mode": "merge-on-read"},
    )
    for k in range(3):
        day = dt.date(2024, 1, 1 + k)
        ids = list(range(k * 10, k * 10 + 10))
        t.append(
            pa.table({"id": ids, "day": [day] * 10, "v": [f"r{i}" for i in ids]}, schema=SCHEMA)
        )
    t.delete("id = 3 or id = 25")  # a delete manifest too
    t = cat.load_table("db.t")
    expected = _rows(t)
    assert len(expected) == 28
    snap = t.metadata.current_snapshot()
    assert snap is not None
    lengths: dict[str, int] = {}
    with open(snap.manifest_list, "rb") as f:
        paths = [r["manifest_path"] for r in fastavro.reader(f)]
    assert len(paths) >= 2
    for path in paths:
        _reencode(path, "zstandard", lambda r: r)
        lengths[path] = Path(path).stat().st_size
    _reencode(
        snap.manifest_list,
        "zstandard",
        lambda r: {**r, "manifest_length": lengths[r["manifest_path"]]},
    )
    manifest_cache().clear()
    assert _rows(cat.load_table("db.t")) == expected
    files = cat.load_table("db.t").scan(filter="day = '2024-01-02'").plan_files()
    assert len(files) == 1
