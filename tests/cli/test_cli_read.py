"""head and scan through the installed command: filters, columns, limits, time travel
and every output format, compared with the Python API's scan."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow.parquet as pq
from cli_support import Catalog, Runner

import neve


def _ids(rows: list[dict[str, object]]) -> list[int]:
    return sorted(int(r["id"]) for r in rows)  # type: ignore[call-overload]


def test_scan_filter_columns_limit(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    where = "id >= 30 and name = 'name-3'"
    got = run(*sqlite.flags, "scan", "db.events", "--where", where, "--json").json()
    want = events.scan(filter=where).to_arrow().to_pylist()
    assert _ids(got) == sorted(r["id"] for r in want) and got
    assert got[0].keys() == {"id", "name", "ts", "amount", "day"}
    cols = run(*sqlite.flags, "scan", "db.events", "-c", "id,name", "--json").json()
    assert {tuple(r) for r in cols} == {("id", "name")}
    assert _ids(cols) == list(range(5, 120))  # the delete of id < 5 applied
    head = run(*sqlite.flags, "head", "db.events", "--json").json()
    assert len(head) == 10
    three = run(*sqlite.flags, "head", "db.events", "-n", "3", "--json").json()
    assert len(three) == 3
    many = run(*sqlite.flags, "scan", "db.events", "--limit", "55", "--json").json()
    assert len(many) == 55 and len(set(_ids(many))) == 55


def test_time_travel(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    t = events.refresh()
    first, second = t.snapshots()[0], t.snapshots()[1]
    by_id = run(*sqlite.flags, "scan", "db.events", "--snapshot", str(second.snapshot_id), "--json")
    assert _ids(by_id.json()) == list(range(80))
    by_tag = run(*sqlite.flags, "scan", "db.events", "--ref", "first", "--json").json()
    assert _ids(by_tag) == list(range(40))
    by_time = run(
        *sqlite.flags, "scan", "db.events", "--as-of", str(first.timestamp_ms), "--json"
    ).json()
    want = t.scan(as_of=first.timestamp_ms).to_arrow().column("id").to_pylist()
    assert _ids(by_time) == sorted(want)
    iso = run(*sqlite.flags, "scan", "db.events", "--as-of", "2000-01-01T00:00:00+00:00")
    assert iso.code == 1 and iso.err.startswith("error: ")


def test_formats(run: Runner, sqlite: Catalog, events: neve.Table, tmp_path: Path) -> None:
    where = "id < 20"
    want = sorted(events.scan(filter=where).to_arrow().column("id").to_pylist())
    out = run(*sqlite.flags, "scan", "db.events", "-w", where, "-f", "csv").out
    assert sorted(int(r["id"]) for r in csv.DictReader(io.StringIO(out))) == want
    lines = run(*sqlite.flags, "scan", "db.events", "-w", where, "-f", "jsonl").out.splitlines()
    assert sorted(json.loads(line)["id"] for line in lines) == want
    table = run(*sqlite.flags, "scan", "db.events", "-w", where, "-f", "table").out
    assert "15 rows" in table and "name-3" in table
    target = tmp_path / "out.parquet"
    r = run(*sqlite.flags, "scan", "db.events", "-w", where, "-o", str(target))
    assert r.code == 0, r.err
    assert f"wrote {len(want)} rows" in r.err
    data = pq.read_table(target)
    assert sorted(data.column("id").to_pylist()) == want
    # field ids travel with the Parquet file
    assert data.schema.field("id").metadata[b"PARQUET:field_id"] == b"1"
    for fmt, suffix in (("csv", "csv"), ("jsonl", "jsonl")):
        path = tmp_path / f"out.{suffix}"
        assert run(*sqlite.flags, "scan", "db.events", "-w", where, "-o", str(path)).code == 0
        assert path.read_text().count("\n") == len(want) + (fmt == "csv")
    empty = tmp_path / "empty.parquet"
    assert run(*sqlite.flags, "scan", "db.events", "-w", "id < 0", "-o", str(empty)).code == 0
    assert pq.read_table(empty).num_rows == 0
    assert pq.read_table(empty).schema.names == events.scan().to_arrow().schema.names


def test_usage_errors(run: Runner, sqlite: Catalog, events: neve.Table, tmp_path: Path) -> None:
    r = run(*sqlite.flags, "scan", "db.events", "-f", "parquet")
    assert r.code == 2 and "--output" in r.err
    r = run(*sqlite.flags, "scan", "db.events", "-f", "xml")
    assert r.code == 2
    r = run(*sqlite.flags, "scan", "db.events", "--where", "nope > 1")
    assert r.code == 1 and r.err.startswith("error: ") and "nope" in r.err
    target = tmp_path / "never.parquet"
    r = run(*sqlite.flags, "scan", "db.events", "--where", "nope > 1", "-o", str(target))
    assert r.code == 1 and not target.exists()  # bad input leaves no file
