"""Random access on an object store (issue 26): takes by row id and by position read
pages through pyarrow's S3 filesystem (coalesced ranges, several requests at once), a
file without a page index by whole row groups; the rows equal a full scan's, after a
delete too, in every layout."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import neve
from neve.errors import NoSuchRowError
from s3server import S3Warehouse

LAYOUTS = {
    "random-access": {"write.parquet.layout": "random-access"},
    "default": {},
    "no page index": {"write.parquet.page-index.enabled": "false"},
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_takes_on_s3_equal_a_scan(layout: str, s3_warehouse: S3Warehouse, tmp_path: Path) -> None:
    catalog = neve.connect(
        f"sqlite:///{tmp_path}/c.db", warehouse=s3_warehouse.uri, **s3_warehouse.properties
    )
    catalog.create_namespace("db")
    n = 30_000
    rnd = np.random.default_rng(3)
    rows = pa.table(
        {
            "id": np.arange(n, dtype=np.int64),
            "v": rnd.random(n),
            "s": [f"{i}-" + "x" * (i % 90) for i in range(n)],
        }
    )
    props = {
        **LAYOUTS[layout],
        "write.delete.mode": "merge-on-read",
        "write.parquet.row-group-size-bytes": str(256 * 1024),
    }
    t = catalog.create_table("db.t", rows.schema, properties=props, format_version=3)
    t.append(rows.slice(0, n // 2))
    t.append(rows.slice(n // 2))
    t.delete("id >= 100 and id < 200")
    full = t.scan(columns=["id", "v", "s", "_row_id"]).to_arrow()
    by_row_id = {r: i for i, r in enumerate(full.column("_row_id").to_pylist())}
    pick = random.Random(5)
    for size in (1, 10, 500):
        asked = pick.sample(sorted(by_row_id), size)
        got = t.take(asked, columns=["id", "v", "s"])
        expected = full.take(pa.array([by_row_id[r] for r in asked], pa.int64()))
        assert got.to_pylist() == expected.select(["id", "v", "s"]).to_pylist()
        places = [pick.randrange(full.num_rows) for _ in range(size)]
        by_place = t.take_rows(places, columns=["id"])
        assert by_place.column("id").to_pylist() == [full.column("id")[p].as_py() for p in places]
    with pytest.raises(NoSuchRowError):
        t.take([150], columns=["id"])  # deleted
