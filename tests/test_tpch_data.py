"""TPC-H data for the demo and the benchmarks (neve.tpch): processes asking for the same
table at once (pytest workers, benchmark workers, on a fresh clone) generate it once,
and each gets the complete folder."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq

from neve.tpch import generate


def test_callers_at_once_get_one_complete_folder(tmp_path: Path) -> None:
    with ThreadPoolExecutor(4) as pool:
        folders = list(pool.map(lambda _: generate(tmp_path, 0.001, ("nation",)), range(4)))
    assert len({str(f["nation"]) for f in folders}) == 1
    folder = folders[0]["nation"]
    assert (folder / ".complete").exists()
    assert pq.read_table(folder).num_rows == 25  # TPC-H's nation table at every scale
    assert not list(tmp_path.glob("sf0_001/.nation.tmp"))
