"""The ``changes`` verb through the installed command: ranges, net changes, keys,
filters, columns and every output format, compared with ``table.changes``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow.parquet as pq
from cli_support import Catalog, Runner

import neve


def _kinds(rows: list[dict[str, object]]) -> list[tuple[str, int]]:
    return sorted((str(r["_change_type"]), int(r["id"])) for r in rows)  # type: ignore[call-overload]


def test_changes_equal_the_python_api(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    t = events.refresh()
    t.update({"name": "renamed"}, "id IN (50, 51)")
    t.refresh()
    snaps = [s.snapshot_id for s in t.snapshots()]
    got = run(*sqlite.flags, "changes", "db.events", "--from", str(snaps[2]), "--json").json()
    want = t.changes(start_snapshot_id=snaps[2]).to_pylist()
    assert _kinds(got) == _kinds(want)
    assert ("UPDATE_AFTER", 50) in _kinds(got) and ("DELETE", 4) in _kinds(got)
    assert got[0].keys() == {
        "id",
        "name",
        "ts",
        "amount",
        "day",
        "_change_type",
        "_change_ordinal",
        "_commit_snapshot_id",
    }
    # a range, net changes, no pairing, a filter, columns
    one = run(
        *sqlite.flags,
        "changes",
        "db.events",
        "--from",
        str(snaps[0]),
        "--to",
        str(snaps[1]),
        "--json",
    ).json()
    assert _kinds(one) == [("INSERT", i) for i in range(40, 80)]
    net = run(*sqlite.flags, "changes", "db.events", "--net", "--json").json()
    assert _kinds(net) == _kinds(t.changes(net_changes=True).to_pylist())
    plain = run(
        *sqlite.flags,
        "changes",
        "db.events",
        "--from",
        str(snaps[3]),
        "--no-updates",
        "-w",
        "id = 50",
        "-c",
        "id,name",
        "--json",
    ).json()
    assert sorted((r["_change_type"], r["name"]) for r in plain) == [
        ("DELETE", "name-1"),
        ("INSERT", "renamed"),
    ]
    assert set(plain[0]) == {"id", "name", "_change_type", "_change_ordinal", "_commit_snapshot_id"}


def test_changes_formats_and_errors(
    run: Runner, sqlite: Catalog, events: neve.Table, tmp_path: Path
) -> None:
    t = events.refresh()
    last = t.current_snapshot().parent_snapshot_id
    out = run(*sqlite.flags, "changes", "db.events", "--from", str(last), "-f", "csv").out
    assert sorted(int(r["id"]) for r in csv.DictReader(io.StringIO(out))) == list(range(5))
    lines = run(*sqlite.flags, "changes", "db.events", "--from", str(last), "-f", "jsonl").out
    assert {json.loads(line)["_change_type"] for line in lines.splitlines()} == {"DELETE"}
    table = run(*sqlite.flags, "changes", "db.events", "--from", str(last)).out
    assert "5 changed rows" in table and "DELETE" in table
    target = tmp_path / "changes.parquet"
    r = run(*sqlite.flags, "changes", "db.events", "-o", str(target))
    assert r.code == 0, r.err
    assert pq.read_table(target).num_rows == 120 + 5  # three appends of 40, a delete of 5
    bad = run(*sqlite.flags, "changes", "db.events", "--from", "12345")
    assert bad.code == 1 and bad.err.startswith("error: ") and "snapshot" in bad.err
