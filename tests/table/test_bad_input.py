"""Bad input gets a typed error (a :class:`neve.NeveError`) that says what to do, and
leaves the table exactly as it was: same metadata version, no files left behind."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import neve
from neve.errors import NeveError, NeveIOError

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
    ]
)


def rows(start: int, n: int) -> pa.Table:
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "name": [f"n{i}" for i in range(start, start + n)],
            "ts": [base + dt.timedelta(hours=i) for i in range(n)],
        },
        schema=SCHEMA,
    )


@pytest.fixture()
def env(sqlite_catalog: neve.Catalog) -> tuple[neve.Catalog, neve.Table, Path]:
    t = sqlite_catalog.create_table("db.t", SCHEMA, partition_by=["day(ts)"])
    t.append(rows(0, 20))
    t.create_tag("v1")
    return sqlite_catalog, t, Path(sqlite_catalog.warehouse)


def _files(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file()}


#: (label, call) pairs; every call must raise a NeveError and change nothing.
BAD: list[tuple[str, Callable[[neve.Catalog, neve.Table], Any]]] = [
    ("append a dict", lambda c, t: t.append({"id": [1]})),  # type: ignore[arg-type]
    ("append None", lambda c, t: t.append(None)),  # type: ignore[arg-type]
    ("append a list", lambda c, t: t.append([1, 2])),  # type: ignore[arg-type]
    ("append wrong type", lambda c, t: t.append(pa.table({"id": ["x"]}))),
    (
        "append null into required",
        lambda c, t: t.append(pa.table({"id": pa.array([None], pa.int64())})),
    ),
    ("append unknown column", lambda c, t: t.append(pa.table({"id": [1], "zzz": [2]}))),
    ("overwrite a dict", lambda c, t: t.overwrite({"id": [1]})),  # type: ignore[arg-type]
    ("dynamic overwrite a dict", lambda c, t: t.dynamic_partition_overwrite({"id": [1]})),  # type: ignore[arg-type]
    ("delete int filter", lambda c, t: t.delete(123)),  # type: ignore[arg-type]
    ("delete None filter", lambda c, t: t.delete(None)),  # type: ignore[arg-type]
    ("delete unparsable", lambda c, t: t.delete("id = = 1")),
    ("delete unknown column", lambda c, t: t.delete("nope = 1")),
    ("delete bad literal", lambda c, t: t.delete("id = 'abc'")),
    ("delete bad timestamp", lambda c, t: t.delete("ts < 'yesterday'")),
    ("overwrite bad filter", lambda c, t: t.overwrite(rows(100, 1), filter=3.5)),  # type: ignore[arg-type]
    ("scan int filter", lambda c, t: t.scan(filter=7).to_arrow()),  # type: ignore[arg-type]
    ("scan unknown column", lambda c, t: t.scan(columns=["nope"]).to_arrow()),
    ("scan columns as a string", lambda c, t: t.scan(columns="id").to_arrow()),  # type: ignore[arg-type]
    ("scan unknown snapshot", lambda c, t: t.scan(snapshot_id=-1).to_arrow()),
    ("scan snapshot id as text", lambda c, t: t.scan(snapshot_id="abc").to_arrow()),  # type: ignore[arg-type]
    ("scan as_of words", lambda c, t: t.scan(as_of="last tuesday").to_arrow()),
    ("scan as_of float", lambda c, t: t.scan(as_of=1.5).to_arrow()),
    ("scan as_of before history", lambda c, t: t.scan(as_of=0).to_arrow()),
    ("scan unknown ref", lambda c, t: t.scan(ref="nope").to_arrow()),
    ("scan ref not a string", lambda c, t: t.scan(ref=3).to_arrow()),  # type: ignore[arg-type]
    ("scan two selectors", lambda c, t: t.scan(ref="v1", as_of=1).to_arrow()),
    ("tag name not a string", lambda c, t: t.create_tag(123)),  # type: ignore[arg-type]
    ("tag name empty", lambda c, t: t.create_tag("")),
    ("branch name not a string", lambda c, t: t.create_branch(None)),  # type: ignore[arg-type]
    ("tag exists", lambda c, t: t.create_tag("v1")),
    ("tag unknown snapshot", lambda c, t: t.create_tag("v2", snapshot_id=42)),
    ("tag snapshot id as text", lambda c, t: t.create_tag("v2", snapshot_id="1")),  # type: ignore[arg-type]
    ("remove missing tag", lambda c, t: t.remove_tag("v9")),
    ("remove tag as branch", lambda c, t: t.remove_branch("v1")),
    ("remove main", lambda c, t: t.remove_branch("main")),
    ("rollback to unknown", lambda c, t: t.rollback_to_snapshot(42)),
    ("rollback to text", lambda c, t: t.rollback_to_snapshot("abc")),  # type: ignore[arg-type]
    ("rollback to garbage time", lambda c, t: t.rollback_to_time("garbage")),
    ("rollback before history", lambda c, t: t.rollback_to_time(0)),
    ("set current unknown", lambda c, t: t.set_current_snapshot(42)),
    ("upgrade to 9", lambda c, t: t.upgrade_format_version(9)),
    ("downgrade to 1", lambda c, t: t.upgrade_format_version(1)),
    ("upgrade as text", lambda c, t: t.upgrade_format_version("3")),  # type: ignore[arg-type]
    (
        "snapshot property not a string",
        lambda c, t: t.append(rows(50, 1), snapshot_properties={"k": 1}),
    ),  # type: ignore[dict-item]
    ("delete on a tag", lambda c, t: t.delete("id = 1", branch="v1")),
    ("append to a tag", lambda c, t: t.append(rows(50, 1), branch="v1")),
    ("branch not a string", lambda c, t: t.append(rows(50, 1), branch=5)),  # type: ignore[arg-type]
    ("load missing table", lambda c, t: c.load_table("db.missing")),
    ("load name without namespace", lambda c, t: c.load_table("t")),
    ("load name not a string", lambda c, t: c.load_table(5)),  # type: ignore[arg-type]
    ("create existing", lambda c, t: c.create_table("db.t", SCHEMA)),
    ("create in missing namespace", lambda c, t: c.create_table("nope.x", SCHEMA)),
    ("create with a dict schema", lambda c, t: c.create_table("db.x", {"id": "long"})),  # type: ignore[arg-type]
    (
        "create with partition string",
        lambda c, t: c.create_table("db.x", SCHEMA, partition_by="day(ts)"),
    ),  # type: ignore[arg-type]
    (
        "create with bad transform",
        lambda c, t: c.create_table("db.x", SCHEMA, partition_by=["bogus(ts)"]),
    ),
    (
        "create with bad source",
        lambda c, t: c.create_table("db.x", SCHEMA, partition_by=["day(zz)"]),
    ),
    ("create with bad sort", lambda c, t: c.create_table("db.x", SCHEMA, sort_by=["zz"])),
    ("create with version 7", lambda c, t: c.create_table("db.x", SCHEMA, format_version=7)),
    ("drop missing", lambda c, t: c.drop_table("db.missing")),
    ("rename to existing", lambda c, t: c.rename_table("db.t", "db.t")),
    ("namespace not a string", lambda c, t: c.create_namespace(5)),  # type: ignore[arg-type]
    ("connect to a number", lambda c, t: neve.connect(5)),  # type: ignore[arg-type]
    ("connect unknown scheme", lambda c, t: neve.connect("mysql://x/y", warehouse="/tmp/x")),
]


@pytest.mark.parametrize(("label", "call"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_typed_and_changes_nothing(
    env: tuple[neve.Catalog, neve.Table, Path],
    label: str,
    call: Callable[[neve.Catalog, neve.Table], Any],
) -> None:
    cat, table, wh = env
    before_files = _files(wh)
    before_loc = table.metadata_location
    with pytest.raises(NeveError) as info:
        call(cat, table)
    assert str(info.value), f"{label}: the error has no message"
    assert cat.load_table("db.t").metadata_location == before_loc
    assert table.metadata_location == before_loc
    assert _files(wh) == before_files
    assert not cat.table_exists("db.x")


def test_schema_change_bad_input(env: tuple[neve.Catalog, neve.Table, Path]) -> None:
    cat, table, _wh = env
    before = table.metadata_location
    bad: list[Callable[[Any], Any]] = [
        lambda u: u.add_column("x", "notatype"),
        lambda u: u.add_column("id", "long"),
        lambda u: u.add_column(5, "long"),
        lambda u: u.rename_column("zz", "yy"),
        lambda u: u.rename_column("id", "name"),
        lambda u: u.delete_column("zz"),
        lambda u: u.update_column("id", "string"),
    ]
    for change in bad:
        with pytest.raises(NeveError), table.update_schema() as u:
            change(u)
        assert cat.load_table("db.t").metadata_location == before


def _only(paths: set[str], suffix: str) -> str:
    found = sorted(p for p in paths if p.endswith(suffix))
    assert found
    return found[0]


@pytest.mark.parametrize("damage", ["truncate", "garbage", "remove"])
@pytest.mark.parametrize("kind", ["manifest list", "manifest"])
def test_damaged_metadata_files_give_typed_errors_naming_the_file(
    env: tuple[neve.Catalog, neve.Table, Path], kind: str, damage: str
) -> None:
    cat, table, _wh = env
    snap = table.current_snapshot()
    assert snap is not None
    target = snap.manifest_list
    if kind == "manifest":
        from neve.planning.manifests import read_manifest_list

        target = read_manifest_list(table.io, snap.manifest_list)[0].manifest_path
    data = Path(target).read_bytes()
    if damage == "truncate":
        Path(target).write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        Path(target).write_bytes(b"not avro at all" * 10)
    else:
        os.remove(target)
    from neve.planning.manifest_cache import manifest_cache

    manifest_cache().clear()
    fresh = cat.load_table("db.t")
    for action in (
        lambda: fresh.scan().to_arrow(),
        lambda: fresh.scan(filter="id = 3").to_arrow(),
        lambda: fresh.inspect.files(),
        lambda: fresh.delete("id = 3"),
    ):
        with pytest.raises(NeveIOError) as info:
            action()
        assert os.path.basename(target) in str(info.value)


@pytest.mark.parametrize("cut", [0, 1, 40, None])
def test_damaged_metadata_json_is_an_io_error_naming_the_file(
    env: tuple[neve.Catalog, neve.Table, Path], cut: int | None
) -> None:
    cat, table, _wh = env
    target = Path(table.metadata_location)
    data = target.read_bytes()
    target.write_bytes(data[: len(data) // 2] if cut is None else data[:cut])
    # a reader that has not parsed the file yet (a catalog keeps files it parsed)
    reader = neve.connect(cat.uri, warehouse=cat.warehouse)  # type: ignore[attr-defined]
    with pytest.raises(NeveIOError) as info:
        reader.load_table("db.t")
    assert target.name in str(info.value)
