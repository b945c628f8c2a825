"""A Spark read of a table with 10 million deleted positions keeps the driver's memory
bounded: the deletion vectors are decoded on the executors, and their join keys are
shuffled, not collected (only a few keys are broadcast). The driver program runs in a
fresh process that reads the same table twice, once without its deletes and once with
them, and reports its peak resident memory after each read; the read with 10M deleted
positions may add at most :data:`BOUND_MB` to the peak (decoding them on the driver,
as reads once did, costs several times that: 8 bytes per position, held at least twice).

Run as a script (``python test_spark_delete_memory.py <folder>``) this file is the
driver program.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROWS = 12_000_000
KEEP = 2_000_000  # ids below this stay: 10M positions deleted, spread over every file
BOUND_MB = 48
MARK = "NEVE-MEMORY "


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def driver(folder: str) -> dict[str, Any]:
    import numpy as np
    import pyarrow as pa

    import neve
    import neve.spark as ns

    cat = neve.connect(f"sqlite:///{folder}/c.db", warehouse=f"{folder}/wh")
    cat.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    props = {"write.delete.mode": "merge-on-read", "write.target-file-size-bytes": str(1 << 30)}
    table = cat.create_table("db.t", schema, format_version=3, properties=props)
    ids = np.arange(ROWS, dtype=np.int64)
    for k in range(4):  # four data files, each holding every 4th id: all partly deleted
        table.append(pa.table({"id": ids[k::4]}, schema=schema))
    clean = table.refresh().metadata.current_snapshot_id
    # one DV per file, 10M positions in all (written by the pyarrow engine, in a child
    # process, so this process's peak is the reads')
    uri, wh = f"sqlite:///{folder}/c.db", f"{folder}/wh"
    script = (
        f"import neve; t = neve.connect({uri!r}, warehouse={wh!r}).load_table('db.t'); "
        f"t.delete('id >= {KEEP}')"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    spark = ns.local_session(
        "local[2]",
        "neve-memory",
        conf={
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "4",
            "spark.driver.memory": "2g",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    table = table.refresh()
    deleted = sum(d.record_count for task in table.scan().plan_files() for d in task.delete_files)
    n_clean = ns.read(spark, table, snapshot_id=clean).count()
    before = _peak_mb()
    n_live = ns.read(spark, table).count()
    after = _peak_mb()
    spark.stop()
    return {
        "deleted": deleted,
        "clean_rows": n_clean,
        "live_rows": n_live,
        "peak_before_mb": before,
        "peak_after_mb": after,
    }


@pytest.mark.spark
def test_a_read_with_ten_million_deleted_positions_keeps_the_driver_small(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-5000:]
    r = json.loads(lines[-1][len(MARK) :])
    live = KEEP
    assert r["deleted"] == ROWS - live >= 10_000_000
    assert (r["clean_rows"], r["live_rows"]) == (ROWS, live)
    assert r["peak_after_mb"] - r["peak_before_mb"] <= BOUND_MB, r


if __name__ == "__main__":
    print(MARK + json.dumps(driver(sys.argv[1])), flush=True)
