"""The README's quick start as `make demo` runs it: `neve demo` in a real terminal runs
the main job (a TPC-H pipeline on Spark) and registers its catalog, after which the
command finds the demo's tables without flags."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml
from cli_support import NEVE, Runner

import neve
from terminal import run_in_terminal


def _check_demo_output(out: str, screens: list[str]) -> None:
    """What a person sees while the demo runs and when it ends."""
    # every step starts on a line of its own, and Spark's console bar never shows
    steps = [line for line in out.splitlines() if "> " in line and not line.startswith("WARN")]
    assert steps and all(line.startswith("> ") for line in steps), steps
    assert "[Stage" not in out and not any("[Stage" in screen for screen in screens)
    # long steps show their own progress while they run (Spark's stages, tasks done/all)
    assert any("Spark stage" in screen for screen in screens)
    for step in ("load orders", "load lineitem", "RF1: upsert 15 new orders", "RF2: delete 15"):
        assert step in out
    # RF1's two upserts are small: the driver path runs them, and the demo says so
    rf1 = out[out.index("RF1: upsert 15 new orders") : out.index("RF2: delete 15")]
    assert rf1.count("(ran on the driver: a small change)") == 2, rf1
    # RF2 is merge-on-read: rows marked in delete files, no data file rewritten
    rf2 = out[out.index("RF2: delete 15") :]
    assert "0 data files removed" in rf2 and "+0 rows in 0 data files" in rf2
    assert "rows marked deleted in 0 delete files" not in rf2.split("> TPC-H")[0]
    assert "Q6 revenue:" in out and "planned" in out
    assert "history of" in out and "time travel: lineitem had 60,175 rows after the load" in out
    # upkeep: compaction rewrites the touched partitions and drops the delete files;
    # expiration deletes the superseded files; the tag still reads the loaded rows
    upkeep = out[out.index("tpch.lineitem before upkeep") :]
    assert "rewrote 0 data files" not in upkeep
    assert "after upkeep: 83 data files, 0 delete files" in upkeep
    assert "expired 2 snapshots" in upkeep and "deleted 0 data files" not in upkeep
    assert "60,175 rows now (were 60,175); time travel to the tag 'loaded'" in upkeep
    # a summary of the steps and their durations closes the run
    summary = out[out.index("what the demo did") :]
    for step in ("load orders through Spark", "TPC-H Q6", "compact tpch.lineitem", "total"):
        assert step in summary
    assert len([line for line in summary.splitlines() if line.startswith("│")]) == 13


@pytest.mark.spark
def test_demo_then_browse_without_flags(run: Runner, home: Path, tmp_path: Path) -> None:
    root = tmp_path / "demo"
    # in a real terminal, as a person runs it: Spark's own progress bar would draw there
    demo = run_in_terminal(
        [str(NEVE), "demo", "--scale", "0.01", "--root", str(root)],
        cwd=home,
        env={"HOME": str(home)},
        width=250,
        sample_every=0.2,
    )
    assert demo.exit_code == 0, demo.text[-3000:]
    _check_demo_output(demo.text, demo.screens)
    config = home / ".config" / "neve" / "config.yaml"
    assert "registered the demo catalog as 'demo'" in demo.text
    assert yaml.safe_load(config.read_text()) == {
        "catalogs": {
            "demo": {"uri": f"sqlite:///{root}/catalog.db", "warehouse": str(root / "warehouse")}
        },
        "default": "demo",
    }
    assert run("tables", "tpch", "--json").json() == ["tpch.lineitem", "tpch.orders"]
    doc = run("describe", "tpch.orders", "--json").json()
    orders = neve.connect(f"sqlite:///{root}/catalog.db", warehouse=str(root / "warehouse"))
    orders_table = orders.load_table("tpch.orders")
    assert doc["primary_key"] == ["o_orderkey"] and doc["rows"] == orders_table.scan().count()
    sql = (
        "select o_orderpriority, count(*) as n from tpch.orders "
        "where o_orderdate >= DATE '1995-01-01' and o_orderdate < DATE '1995-04-01' "
        "group by 1 order by 1"
    )
    plan = run("sql", sql, "--explain", "--json").json()[0]
    assert plan["planned_files"] < plan["total_files"]
    result = run("sql", sql, "--json").json()
    # the same count per priority from a scan, grouped here
    quarter = orders_table.scan(
        filter="o_orderdate >= '1995-01-01' and o_orderdate < '1995-04-01'",
        columns=["o_orderpriority"],
    )
    per_priority = Counter(quarter.to_arrow().column("o_orderpriority").to_pylist())
    assert result == [{"o_orderpriority": p, "n": n} for p, n in sorted(per_priority.items())]
    assert len(result) == 5
