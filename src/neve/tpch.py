"""TPC-H data for the demo and the benchmarks, generated with the ``tpchgen-cli``
package (installed with neve's ``test`` extra), plus the two queries and the refresh
functions the demo runs.

The generator is a separate program; it is found next to this Python interpreter or on
``PATH``. Generated files are cached per scale factor under the directory given.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

from neve.errors import NeveError

__all__ = ["Q1", "Q6", "generate", "tpchgen_path"]


def tpchgen_path() -> str:
    """The ``tpchgen-cli`` executable, or a NeveError saying how to install it."""
    here = Path(sys.executable).parent / "tpchgen-cli"
    if here.exists():
        return str(here)
    found = shutil.which("tpchgen-cli")
    if found:
        return found
    raise NeveError("tpchgen-cli is not installed: pip install tpchgen-cli (or neve[test])")


def _scale_name(scale: float) -> str:
    return f"sf{scale:g}".replace(".", "_")


def generate(
    root: Path | str, scale: float, tables: tuple[str, ...] = ("orders", "lineitem"), parts: int = 1
) -> dict[str, Path]:
    """Parquet files of the given TPC-H tables at ``scale``, generated once into
    ``root/sf<scale>/<table>/``; returns each table's folder. ``parts`` (files per
    table) applies when a table is generated, not to a folder already there: read the
    folder, not a file name."""
    base = Path(root) / _scale_name(scale)
    base.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for table in tables:
        folder = base / table
        marker = folder / ".complete"
        with open(base / f".{table}.lock", "w") as lock:
            # processes asking at once (test workers, benchmark workers) generate once
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not marker.exists():
                _generate(base, table, scale, parts)
        out[table] = folder
    return out


def _generate(base: Path, table: str, scale: float, parts: int) -> None:
    """Run tpchgen-cli for ``table`` into a scratch folder, then move it into place and
    mark it complete (the caller holds the table's lock)."""
    folder = base / table
    tmp = base / f".{table}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    cmd = [
        tpchgen_path(),
        "parquet",
        "-s",
        f"{scale:g}",
        f"--tables={table}",
        f"--parts={parts}",
        f"--output-dir={tmp}",
        "--compression=SNAPPY",
    ]
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ})
    produced = tmp / table if (tmp / table).is_dir() else tmp
    shutil.rmtree(folder, ignore_errors=True)
    produced.rename(folder)
    shutil.rmtree(tmp, ignore_errors=True)
    (folder / ".complete").touch()


#: TPC-H Q1 (pricing summary report) over a view named ``lineitem``; DELTA = 90 days.
Q1 = """
SELECT l_returnflag, l_linestatus,
       sum(l_quantity) AS sum_qty,
       sum(l_extendedprice) AS sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
       avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price,
       avg(l_discount) AS avg_disc, count(*) AS count_order
FROM lineitem
WHERE l_shipdate <= date '1998-12-01' - interval 90 days
GROUP BY l_returnflag, l_linestatus
ORDER BY l_returnflag, l_linestatus
"""

#: TPC-H Q6 (forecasting revenue change) over a view named ``lineitem``.
Q6 = """
SELECT sum(l_extendedprice * l_discount) AS revenue
FROM lineitem
WHERE l_shipdate >= date '1994-01-01' AND l_shipdate < date '1995-01-01'
  AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24
"""
