"""The neve data source finds its catalog as neve.connect() does: the ``catalog``
option without ``uri`` names a configured catalog, and with neither option the
configured default is used. Run in a fresh process whose environment names the config
file, so Spark's Python workers see the same file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

import neve

pytestmark = pytest.mark.spark

SCRIPT = """
import json
from neve.spark import local_session, register_datasource
spark = local_session("local[1]", "neve-config-test")
register_datasource(spark)
named = spark.read.format("neve").option("catalog", "lake").load("db.t")
default = spark.read.format("neve").load("db.t")
(spark.createDataFrame([(10,)], "id long").write.format("neve")
    .option("catalog", "lake").mode("append").save("db.t"))
try:
    spark.read.format("neve").option("catalog", "nope").load("db.t").count()
    unknown = ""
except Exception as exc:
    unknown = str(exc)
print(json.dumps({"named": sorted(r.id for r in named.collect()),
                  "default": default.count(), "unknown": unknown}))
spark.stop()
"""


def test_catalog_option_resolves_like_connect(tmp_path: Path) -> None:
    uri, wh = f"sqlite:///{tmp_path}/c.db", str(tmp_path / "wh")
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {"default": "lake", "catalogs": {"lake": {"uri": uri, "warehouse": wh, "name": "lake"}}}
        )
    )
    cat = neve.connect(uri, wh, name="lake")
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
    t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEVE_", "PYICEBERG_"))}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env={**env, "NEVE_CONFIG": str(config), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["named"] == [1, 2, 3] and got["default"] == 3
    assert "no catalog named 'nope'" in got["unknown"] and "lake" in got["unknown"]
    assert sorted(t.refresh().scan().to_arrow().column("id").to_pylist()) == [1, 2, 3, 10]
