"""The benchmark scripts still run (quick mode); their timings are not checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bench_scan_quick_runs() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_scan.py"), "--quick"],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    ).stdout
    assert "planning: 200 data files in 4 manifests" in out
    # planning in both layouts, then the TPC-H scan
    assert "ratio pyiceberg/neve (scattered)" in out
    assert "ratio pyiceberg/neve (aligned)" in out
    assert out.count("ratio pyiceberg/neve") == 3
    # per layout, both libraries planned the same, non-zero number of tasks
    tasks = [line.split("(")[-1] for line in out.splitlines() if "tasks)" in line]
    assert len(tasks) == 4
    assert tasks[0] == tasks[1] and tasks[2] == tasks[3]
    assert all(int(t.split()[0]) > 0 for t in tasks)
    assert "TPC-H lineitem SF0.01" in out


def test_bench_spark_quick_runs() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_spark.py"), "--quick", "--repeat", "1"],
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    ).stdout
    assert "TPC-H lineitem SF0.01: 60,175 rows" in out
    lines = [line for line in out.splitlines() if "neve/raw" in line]
    assert [line.split(" raw ")[0].strip() for line in lines] == [
        "unpartitioned write",
        "full-scan aggregate (Q1)",
        "month-partitioned write",
        "one-month aggregate",
    ]
    assert "neve month table:" in out  # the script's own result checks passed


def test_bench_merge_quick_runs() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_merge.py"), "--quick"],
        check=True,
        capture_output=True,
        text=True,
        timeout=1200,
    ).stdout
    sections = ("(a) Spark upsert", "(b) pyarrow upsert", "(c) delete 1%", "(d) concurrent")
    for section in (*sections, "(e) key-uniqueness check"):
        assert out.count(f"== {section}") == 1
    # (a) Spark: neve merge-on-read, Iceberg-Java MERGE INTO, neve copy-on-write
    lines = [line for line in out.splitlines() if "neve/Java" in line]
    assert [line.split("  ")[1].strip() for line in lines] == [
        "neve merge-on-read",
        "Iceberg-Java MERGE INTO",
        "neve copy-on-write",
    ]
    # (b) both libraries upserted 300 changed and 300 new rows into SF0.01 and agree
    assert "TPC-H lineitem SF0.01: 60,175 rows; upsert 600 rows" in out
    assert "  neve table.upsert" in out
    assert out.count("pyiceberg/neve") == 1
    assert "both end with 60,475 rows" in out
    # (c) ~1% deleted both ways, then the scans agreed
    assert "delete l_suppkey <= 1: 615 rows (1.02%)" in out
    assert "copy-on-write/merge-on-read" in out
    assert out.count("with-deletes/clean") == 1
    # (d) 4 writers per engine deleted from the same files for 5 s; neve rebased every
    # lost commit (no failed attempt), and both tables hold exactly the expected rows
    assert "SF0.01: 60,175 rows in 16 data files (v3, bucket(16, l_orderkey), merge-on-read" in out
    (neve_line,) = [line for line in out.splitlines() if line.startswith("  neve table.delete")]
    (java_line,) = [line for line in out.splitlines() if "  Iceberg-Java DELETE FROM" in line]
    assert "commits/min" in neve_line and "commits/min" in java_line
    assert " 0 failed attempts (conflicts)" in neve_line
    assert int(neve_line.split(" commits,")[0].split()[-1].replace(",", "")) > 0
    assert out.count("commits per minute, neve over Java") == 1
    assert "rows check passed: both tables, read by neve and by Iceberg-Java" in out
    # (e) 600 new keys appended with the check on and off, for both kinds of new keys;
    # every run added the rows, and with the check on an existing key was refused
    assert "table.append of 600 rows under new keys" in out
    assert out.count(" check off ") == 2 and out.count("on/off") == 2
    assert "key check passed: every run added 600 rows" in out


def test_bench_maintenance_quick_runs() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_maintenance.py"), "--quick"],
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    ).stdout
    for section in ("(a) compaction on Spark", "(c) orphan listing", "(b) expiration"):
        assert out.count(f"== {section}") == 1
    # (a) 50 small files with ~1% of rows deleted by DVs; both engines compacted them
    # into one file and hold the same rows (the script checks sums too)
    assert "TPC-H lineitem SF0.01: 60,175 rows in 50 data files (v3, unpartitioned)" in out
    assert "  neve rewrite_data_files (Spark)" in out and "50 -> 1 files" in out
    assert out.count("neve/Java") == 2
    assert "rows check passed: both tables hold 59,560 rows" in out
    # (c) both engines found the same old unreachable files among 2,000
    assert "2,000 files under the table location" in out
    assert out.count(" 12 orphans") == 2
    # (b) 50 appends of 10 files and an overwrite: everything but the head expires,
    # neve deletes the 500 replaced data files, pyiceberg only changes metadata
    assert "a v2 table of 51 snapshots" in out
    assert "deleted 500 data files, 50 manifest files, 50 manifest lists" in out
    assert "metadata only, 0 files deleted   neve/pyiceberg" in out


def test_bench_changelog_quick_runs() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_changelog.py"), "--quick"],
        check=True,
        capture_output=True,
        text=True,
        timeout=1200,
    ).stdout
    # the script checked that the changelog and both diffs found the same changes
    assert "TPC-H lineitem SF0.01: 60,175 rows" in out
    assert "upsert of 600 rows (300 changed, 300 new)" in out
    labels = [line.split("  ")[1].strip() for line in out.splitlines() if line.endswith(" s")]
    assert labels == [
        "changelog (neve.spark.changes)",
        "changelog on Spark tasks only",
        "diff of snapshots (exceptAll)",
        "diff of snapshots (outer join)",
    ]
    assert "ratio diff/changelog " in out and "ratio diff/changelog on Spark tasks only" in out
