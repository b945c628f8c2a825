"""The benchmark scripts still run (small scale, one run per side) and check their
results; their timings are not checked. The harness's arithmetic is tested on known
runs. The scripts that start Spark or Iceberg-Java sessions take minutes even at small
scale: they are marked ``long`` and run in ``make test-long``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness  # noqa: E402  (benchmarks/ is not a package)


def run_script(name: str, *args: str, timeout: int) -> str:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / name), "--quick", "--runs", "1", *args],
        check=True,
        capture_output=True,
        text=True,
        timeout=timeout,
    ).stdout
    # every script states its runs and the load it ran under
    assert "runs: 1 per side, alternating" in out
    assert "at start: load average" in out and "at end: load average" in out
    return out


def labels(out: str, ratio: str) -> list[str]:
    """The step labels of the lines that print the ratio ``ratio`` (e.g. "neve/raw")."""
    return [line[2:].split("  ")[0].strip() for line in out.splitlines() if f"  {ratio} " in line]


# -- the harness ------------------------------------------------------------------------


def test_ratios_of_paired_runs() -> None:
    # per-round ratios 2, 4, 3, 4, 2
    r = harness.ratio_of([2.0, 4.0, 6.0, 8.0, 10.0], [1.0, 1.0, 2.0, 2.0, 5.0])
    assert (r.median, r.low, r.high, r.q1, r.q3, r.n) == (3.0, 2.0, 4.0, 2.0, 4.0, 5)
    # fewer than 5 pairs: no quartiles
    r = harness.ratio_of([3.0, 1.0], [1.0, 1.0])
    assert (r.median, r.low, r.high, r.q1, r.q3) == (2.0, 1.0, 3.0, None, None)
    with pytest.raises(ValueError):
        harness.ratio_of([1.0], [1.0, 2.0])


def test_sides_take_turns_and_report(capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[str] = []

    def side(name: str, value: float) -> Callable[[], float]:
        def one() -> float:
            calls.append(name)
            return value

        return one

    runs = harness.alternate({"a": side("a", 1.0), "b": side("b", 4.0)}, 3, warmup=True)
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]  # warm-up, then a b, b a, a b
    assert runs.values == {"a": [1.0, 1.0, 1.0], "b": [4.0, 4.0, 4.0]}
    r = harness.report("step", runs, "a", "b", invert=True)
    line = capsys.readouterr().out
    assert r.median == 4.0
    assert "  step  a 1.00 s, b 4.00 s  b/a 4.00 (range 4.00-4.00; 3 runs; load " in line


# -- the scripts ------------------------------------------------------------------------


def test_bench_commits_quick_runs() -> None:
    out = run_script("bench_commits.py", timeout=600)
    assert "20 sequential appends of 1000 rows per run" in out
    assert labels(out, "pyiceberg/neve") == ["commit"]
    assert labels(out, "neve/floor") == ["commit"]
    assert "the floor's parts (medians): manifests" in out
    # neve's, pyiceberg's and the floor's tables read back the same rows
    assert "rows check passed: every table holds the same 20,000 rows" in out


def test_bench_scan_quick_runs() -> None:
    out = run_script("bench_scan.py", timeout=600)
    assert "planning: 200 data files in 4 manifests" in out
    # planning in both layouts, cold and warm, then the TPC-H scan
    assert labels(out, "pyiceberg/neve") == [
        "scattered cold",
        "scattered warm",
        "aligned cold",
        "aligned warm",
        "full scan",
    ]
    # per layout, both libraries planned the same, non-empty set of files
    planned = [line for line in out.splitlines() if "both libraries planned the same" in line]
    assert len(planned) == 2
    assert all(int(line.split("the same ")[1].split()[0]) > 0 for line in planned)
    assert "TPC-H lineitem SF0.01" in out
    assert "rows check passed: every scan read the 60,175 rows" in out


def test_bench_take_quick_runs() -> None:
    out = run_script("bench_take.py", "--cold", "1", "--sizes", "1,100", timeout=600)
    # both sizes, each comparison in its rounds: the random-access layout against Lance,
    # the 1 MiB layouts and their floor against Lance again, pyarrow's row groups
    for k in ("1", "100"):
        assert f"take {k:>6}: Lance" in out
    warm = [line.strip().split()[:2] for line in out.splitlines() if "B read/row" in line]
    assert warm.count(["neve", "take"]) == 2 and warm.count(["neve", "java"]) == 2
    assert out.count("floor/Lance median") == 2
    assert "cold-ish takes" in out and "skipping/row groups" in out
    assert "on/off median" in out  # DuckDB with and without the page index


@pytest.mark.long  # Spark or Iceberg-Java sessions: minutes (make test-long)
def test_bench_spark_quick_runs() -> None:
    out = run_script("bench_spark.py", timeout=900)
    assert "TPC-H lineitem SF0.01: 60,175 rows" in out
    assert labels(out, "neve/raw") == [
        "unpartitioned write",
        "full-scan aggregate (Q1)",
        "month-partitioned write",
        "one-month aggregate",
        "append of 1,000 rows",
    ]
    # the month write also against the side doing the same work: raw Spark shuffling by
    # month first, as neve does; neve without the shuffle, as raw partitionBy
    assert labels(out, "neve/raw-hash") == ["month-partitioned write: neve against raw-hash"]
    assert labels(out, "neve-none/raw") == ["month-partitioned write: neve-none against raw"]
    assert "neve month table:" in out  # the script's own result checks passed


@pytest.mark.long  # Spark or Iceberg-Java sessions: minutes (make test-long)
def test_bench_merge_quick_runs() -> None:
    out = run_script("bench_merge.py", timeout=1200)
    sections = ("(a) Spark upsert", "(b) pyarrow upsert", "(c) delete 1%", "(d) concurrent")
    for section in (*sections, "(e) key-uniqueness check"):
        assert out.count(f"== {section}") == 1
    # (a) Spark: a 150-row upsert, then neve merge-on-read and copy-on-write, each
    # against Iceberg-Java MERGE INTO; (d) commits per minute of concurrent deletes
    assert labels(out, "neve/Java") == [
        "150-row upsert",
        "neve merge-on-read",
        "neve copy-on-write",
        "commits per minute",
    ]
    assert "rows check passed: every run of both engines ends with 60,475 rows" in out
    # (b) both libraries upserted 300 changed and 300 new rows into SF0.01 and agree
    assert "TPC-H lineitem SF0.01: 60,175 rows; upsert 600 rows" in out
    assert labels(out, "pyiceberg/neve") == ["table.upsert"]
    assert "rows check passed: every run of both ends with 60,475 rows" in out
    # (c) ~1% deleted both ways, then the scans agreed
    assert "delete l_suppkey <= 1: 615 rows (1.02%)" in out
    assert labels(out, "copy-on-write/merge-on-read") == ["delete"]
    assert labels(out, "with-deletes/clean") == ["full-scan aggregate"]
    assert "rows check passed: every scan of both tables gave the same sums" in out
    # (d) 4 writers per engine deleted from the same files for 5 s; neve rebased every
    # lost commit (no failed attempt), and both tables hold exactly the expected rows
    assert "SF0.01: 60,175 rows in 16 data files (v3, bucket(16, l_orderkey), merge-on-read" in out
    (neve_line,) = [line for line in out.splitlines() if line.startswith("  neve table.delete")]
    (java_line,) = [line for line in out.splitlines() if "  Iceberg-Java DELETE FROM" in line]
    assert "commits/min" in neve_line and "commits/min" in java_line
    assert " 0 failed attempts (conflicts)" in neve_line
    # per engine: p50 and p99 statement latency, the least served writer's share
    assert out.count("    statement latency p50 ") == 2
    assert int(neve_line.split(" commits,")[0].split()[-1].replace(",", "")) > 0
    assert "rows check passed: after every window both engines read exactly" in out
    # (e) 600 new keys appended with the check on (cache kept and cleared) and off, for
    # both kinds of new keys; every run added the rows, and an existing key was refused
    assert "table.append of 600 rows under new keys" in out
    assert labels(out, "on/off") == ["inside the key range", "above the largest key"]
    assert out.count("  on-cleared/off ") == 2
    assert "key check passed: every run added 600 rows" in out


@pytest.mark.long  # Spark or Iceberg-Java sessions: minutes (make test-long)
def test_bench_maintenance_quick_runs() -> None:
    out = run_script("bench_maintenance.py", timeout=900)
    for section in ("(a) compaction on Spark", "(c) orphan listing", "(b) expiration"):
        assert out.count(f"== {section}") == 1
    # (a) 50 small files with ~1% of rows deleted by DVs; both engines compacted them
    # into one file and hold the same rows (the script checks sums too)
    assert "TPC-H lineitem SF0.01: 60,175 rows in 50 data files (v3, unpartitioned)" in out
    assert "both rewrote all 50 files in every run, into 1 (neve) and 1 (Java) files" in out
    assert "rows check passed: both tables hold 59,560 rows" in out
    assert labels(out, "neve/Java") == ["rewrite_data_files", "remove_orphan_files"]
    # (c) both engines found the same old unreachable files among 2,000
    assert "2,000 files under the table location" in out
    assert "both found the same 12 orphans in every run" in out
    # (b) 50 appends of 10 files and an overwrite: everything but the head expires,
    # neve deletes the 500 replaced data files, pyiceberg only changes metadata
    assert "a v2 table of 51 snapshots" in out
    assert "every neve run deleted 500 data files, 50 manifest files, 50 manifest lists" in out
    assert labels(out, "neve/pyiceberg") == ["expire_snapshots"]


@pytest.mark.long  # Spark or Iceberg-Java sessions: minutes (make test-long)
def test_bench_changelog_quick_runs() -> None:
    out = run_script("bench_changelog.py", timeout=1200)
    # the script checked that the changelog and both diffs found the same changes
    assert "TPC-H lineitem SF0.01: 60,175 rows" in out
    assert "upsert of 600 rows (300 changed, 300 new)" in out
    assert "the diffs: exceptAll" in out
    assert labels(out, "diff/changelog") == ["neve.spark.changes"]
    assert labels(out, "diff/tasks-only") == ["on Spark tasks only"]


@pytest.mark.long  # Spark or Iceberg-Java sessions: minutes (make test-long)
def test_bench_scale_quick_runs() -> None:
    out = run_script("bench_scale.py", "--repeat", "1", timeout=900)
    # 100 appends of 100 files merged into 10 manifests, every tenth compared
    assert "100 snapshots, 10 manifests in the head, 10,000 data files" in out
    tenths = [line for line in out.splitlines() if line.startswith("  at ")]
    assert len(tenths) == 10 and tenths[-1].startswith("  at 100 snapshots, metadata JSON")
    assert labels(out, "pyiceberg/neve") == [
        *(["append", "load"] * 10),
        *(["cold", "warm"] * 2),
        "load",
    ]
    assert "neve commit latency, first 10%: mean" in out
    # both libraries planned the same files: one day's 100, and the one file of the ids
    assert "one day (day 10050): both planned the same 100 files" in out
    assert "both planned the same 1 files" in out
    assert "90 expired, 10 left" in out


@pytest.mark.long  # Spark or Iceberg-Java sessions: minutes (make test-long)
def test_bench_stream_upsert_quick_runs() -> None:
    out = run_script("bench_stream_upsert.py", timeout=900)
    assert "table 100,000 rows; 2 micro-batches of 50,000 rows" in out
    assert labels(out, "spark/driver") == ["upsert per micro-batch"]
    assert "both paths ended every run with the same rows" in out


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        (
            "plan,scan,upsert,orphans",
            ["plan cold", "plan warm", "scan to Arrow", "upsert 600 rows", "orphan listing"],
        ),
        pytest.param(
            "spark",
            ["spark write", "spark full scan Q1", "spark month write", "spark one month Q1"],
            marks=pytest.mark.long,  # a Spark session per process: minutes (make test-long)
        ),
        pytest.param(
            "changelog",
            ["changelog", "changelog on tasks"],
            marks=pytest.mark.long,  # a Spark session per process: minutes (make test-long)
        ),
    ],
)
def test_bench_versions_quick_runs(steps: str, expected: list[str]) -> None:
    """The version comparison runs each step in both versions' fresh processes (here
    the same code on both sides) and checks they return the same rows."""
    out = run_script(
        "bench_versions.py", "--other", str(ROOT / "src"), "--only", steps, timeout=900
    )
    assert labels(out, "this/other") == expected
