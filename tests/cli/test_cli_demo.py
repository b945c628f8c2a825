"""The README's quick start: `neve demo` runs the main job and registers its catalog,
after which the command finds the demo's tables without flags."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cli_support import Runner


@pytest.mark.spark
def test_demo_then_browse_without_flags(run: Runner, home: Path, tmp_path: Path) -> None:
    root = tmp_path / "demo"
    r = run("demo", "--scale", "0.01", "--root", str(root))
    assert r.code == 0, r.err[-3000:]
    config = home / ".config" / "neve" / "config.yaml"
    assert "registered the demo catalog as 'demo'" in r.err and str(config) in r.err
    assert yaml.safe_load(config.read_text()) == {
        "catalogs": {
            "demo": {"uri": f"sqlite:///{root}/catalog.db", "warehouse": str(root / "warehouse")}
        },
        "default": "demo",
    }
    assert run("tables", "tpch", "--json").json() == ["tpch.lineitem", "tpch.orders"]
    doc = run("describe", "tpch.orders", "--json").json()
    assert doc["primary_key"] == ["o_orderkey"] and doc["rows"] > 0
    sql = (
        "select o_orderpriority, count(*) as n from tpch.orders "
        "where o_orderdate >= DATE '1995-01-01' and o_orderdate < DATE '1995-04-01' "
        "group by 1 order by 1"
    )
    plan = run("sql", sql, "--explain", "--json").json()[0]
    assert plan["planned_files"] < plan["total_files"]
    result = run("sql", sql, "--json").json()
    assert len(result) == 5 and all(r["n"] > 0 for r in result)
