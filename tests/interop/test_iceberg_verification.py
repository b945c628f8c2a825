"""Read conformance: tables written by Iceberg-Java 1.11 and iceberg-go (the
iceberg-verification corpus, /work/shared/fixtures/iceberg-verification) read back
through neve as exactly the rows of each case's expected.json (a multiset).

Each table holds absolute paths below the folder named in ``bytes/ROOT``; the bytes
are materialized there once (under a file lock, copied to a temporary sibling and
renamed into place, so concurrent pytest-xdist workers and repeated runs are safe) and
the table is registered in a SQL catalog from its newest metadata file.

expected.json keys columns by the golden's own ordinals: columns are matched by NAME,
and neve's values are rendered as the golden's typed strings (Iceberg-Java's
renderings: ISO-8601 temporals as ``LocalTime``/``LocalDateTime`` print them, plain
decimal text, lowercase hyphenated UUIDs, lowercase hex for fixed and binary).
"""

from __future__ import annotations

import collections
import datetime as dt
import decimal
import fcntl
import hashlib
import json
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

from neve.catalog import Catalog
from neve.spec.types import parse_type
from neve.table.table import Table

FIXTURES = Path(os.environ.get("NEVE_FIXTURES", "/work/shared/fixtures")) / "iceberg-verification"
CASES = [
    "v2_types_temporal_read",
    "v2_types_decimal_uuid_binary_read",
    "v2_read_append_timetravel",
]


# -- materializing the bytes at their pinned root ----------------------------------------


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "ROOT"
    }


def materialize(case_dir: Path) -> Path:
    """Copy ``bytes/`` to the absolute path in ``bytes/ROOT`` unless it is there
    already with the same content; return that path."""
    src = case_dir / "bytes"
    root = Path((src / "ROOT").read_text().strip())
    wanted = _digests(src)
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not root.exists():
            tmp = root.parent / f".{root.name}.tmp-{os.getpid()}-{uuid.uuid4().hex}"
            shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("ROOT"))
            os.rename(tmp, root)
        have = {k: v for k, v in _digests(root).items() if k in wanted}
    if have != wanted:
        pytest.fail(
            f"{root} exists but does not hold the fixture bytes of {case_dir.name}; "
            "remove it and run again"
        )
    return root


def _newest_metadata(root: Path) -> Path:
    found = list(root.rglob("metadata/*.metadata.json"))
    assert found, f"no metadata file under {root}"
    return max(found, key=lambda p: int(p.name.split("-", 1)[0]))


def open_case(catalog: Catalog, case: str) -> tuple[Table, Path, dict[str, Any]]:
    case_dir = FIXTURES / case
    assert case_dir.is_dir(), f"fixture {case_dir} is missing"
    root = materialize(case_dir)
    metadata = _newest_metadata(root)
    table = catalog.register_table(("db", case), str(metadata))
    expected = json.loads((case_dir / "expected.json").read_text())
    return table, metadata, expected


# -- the golden's typed strings ----------------------------------------------------------


def _java_time(t: dt.time) -> str:
    """``java.time.LocalTime.toString()``: seconds only when non-zero (or a fraction
    is), the fraction in groups of three digits."""
    out = f"{t.hour:02d}:{t.minute:02d}"
    nanos = t.microsecond * 1000
    if t.second or nanos:
        out += f":{t.second:02d}"
        if nanos % 1_000_000 == 0:
            out += f".{nanos // 1_000_000:03d}" if nanos else ""
        elif nanos % 1000 == 0:
            out += f".{nanos // 1000:06d}"
        else:
            out += f".{nanos:09d}"
    return out


def typed_string(type_text: str, value: Any) -> str:
    """neve's Python value of an Iceberg ``type_text`` column as the golden renders it."""
    t = type_text.replace(" ", "")
    if t in ("int", "long", "string"):
        return str(value)
    if t == "boolean":
        return "true" if value else "false"
    if t == "date":
        assert isinstance(value, dt.date)
        return value.isoformat()
    if t == "time":
        return _java_time(value)
    if t == "timestamp":
        assert isinstance(value, dt.datetime) and value.tzinfo is None
        return f"{value.date().isoformat()}T{_java_time(value.time())}"
    if t == "timestamptz":
        assert isinstance(value, dt.datetime) and value.tzinfo is not None
        utc = value.astimezone(dt.timezone.utc)
        return f"{utc.date().isoformat()}T{_java_time(utc.time())}Z"
    if t.startswith("decimal("):
        assert isinstance(value, decimal.Decimal)
        return format(value, "f")
    if t == "uuid":
        return str(value if isinstance(value, uuid.UUID) else uuid.UUID(bytes=value))
    if t.startswith("fixed[") or t == "binary":
        assert isinstance(value, bytes)
        return value.hex()
    raise AssertionError(f"no golden rendering for type {type_text!r}; extend typed_string")


def canonical_rows(rows: list[dict[str, Any]], types: dict[str, str]) -> collections.Counter[Any]:
    """Rows as a multiset of frozensets of (name, type, text); nulls are left out, as
    the golden leaves them out."""
    return collections.Counter(
        frozenset(
            (name, types[name], typed_string(types[name], row[name]))
            for name in types
            if row[name] is not None
        )
        for row in rows
    )


def expected_rows(observation: dict[str, Any]) -> tuple[dict[str, str], collections.Counter[Any]]:
    by_ordinal = {str(c["field-id"]): c for c in observation["iceberg-schema"]}
    types = {c["name"]: c["type"] for c in observation["iceberg-schema"]}
    out: collections.Counter[Any] = collections.Counter()
    for row in observation["decoded-rows"]:
        assert row is not None, "a whole-row null is not expected in these cases"
        cells = set()
        for ordinal, node in row.items():
            col = by_ordinal[ordinal]
            if node is None or node.get("type") == "null":
                continue
            assert node["type"] == col["type"]
            cells.add((col["name"], col["type"], str(node["value"])))
        out[frozenset(cells)] += 1
    return types, out


def _observation_points(case: str) -> list[str]:
    """The ``at:`` of every ``op: observe`` entry in fixture.yaml."""
    text = (FIXTURES / case / "fixture.yaml").read_text()
    return re.findall(r"-\s*op:\s*observe\s*\n\s*at:\s*(\S+)", text)


def _snapshot_at(table: Table, at: str | int) -> int:
    if at == "latest":
        snap = table.current_snapshot()
        assert snap is not None
        return snap.snapshot_id
    ordered = sorted(table.snapshots(), key=lambda s: s.sequence_number)
    return ordered[int(at)].snapshot_id


# -- tests -------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_rows_match_golden(sqlite_catalog: Catalog, case: str) -> None:
    table, _, expected = open_case(sqlite_catalog, case)
    assert expected["accept"] is True
    observations = expected["observations"]
    assert [str(o["at"]) for o in observations] == _observation_points(case)
    for obs in observations:
        types, want = expected_rows(obs)
        schema = table.schema()
        for name, type_text in types.items():  # the golden's schema is the table's
            assert schema.find_field(name).field_type == parse_type(type_text), name
        rows = table.scan(snapshot_id=_snapshot_at(table, obs["at"])).to_arrow().to_pylist()
        assert sum(want.values()) == len(rows)
        assert canonical_rows(rows, types) == want


@pytest.mark.parametrize("case", CASES)
def test_projection_and_filter_agree_with_golden(sqlite_catalog: Catalog, case: str) -> None:
    """A projected, filtered scan returns the golden's rows restricted the same way."""
    table, _, expected = open_case(sqlite_catalog, case)
    obs = expected["observations"][-1]
    types, want = expected_rows(obs)
    names = [n for n in types if n != "__rowkey"]
    for key in ("r1", "r2"):
        got = table.scan(filter=f"__rowkey = '{key}'", columns=["__rowkey", *names]).to_arrow()
        assert got.column_names == ["__rowkey", *names]
        expect = collections.Counter(
            {c: n for c, n in want.items() if ("__rowkey", "string", key) in c}
        )
        assert canonical_rows(got.to_pylist(), types) == expect


def test_time_travel_to_first_append(sqlite_catalog: Catalog) -> None:
    """iceberg-go's two appends: the first snapshot holds the rows of the first data
    file only (checked against pyiceberg and against the Parquet file itself), by
    snapshot id and by timestamp."""
    table, metadata, expected = open_case(sqlite_catalog, "v2_read_append_timetravel")
    first, second = sorted(table.snapshots(), key=lambda s: s.sequence_number)
    assert second.parent_snapshot_id == first.snapshot_id
    types, latest = expected_rows(expected["observations"][0])

    by_id = table.scan(snapshot_id=first.snapshot_id).to_arrow()
    by_time = table.scan(as_of=first.timestamp_ms).to_arrow()
    assert canonical_rows(by_time.to_pylist(), types) == canonical_rows(by_id.to_pylist(), types)

    (task,) = table.scan(snapshot_id=first.snapshot_id).plan_files()
    raw = pq.read_table(task.file.file_path.removeprefix("file://")).to_pylist()
    ours = canonical_rows(by_id.to_pylist(), types)
    assert ours == canonical_rows(raw, types)
    assert sum(ours.values()) == 2 and not ours - latest  # a strict part of the latest rows

    theirs = StaticTable.from_metadata(str(metadata)).scan(snapshot_id=first.snapshot_id)
    assert canonical_rows(theirs.to_arrow().to_pylist(), types) == ours
    # the second snapshot adds exactly the rest
    assert (
        canonical_rows(table.scan(snapshot_id=second.snapshot_id).to_arrow().to_pylist(), types)
        == latest
    )
