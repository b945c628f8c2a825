"""v3 column defaults on the pyarrow engine (spec "Default values").

``initial-default`` is what rows written before a column existed read as;
``write-default`` is what a write that omits the column stores, and
``update_column_default`` changes it for later writes only. The history and the
expected rows are in ``tests/default_values.py``; Spark and the other engines read the
same history in ``tests/spark`` and ``tests/interop``.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import neve
from default_values import (
    BEFORE,
    CASES,
    GIVEN,
    LATER,
    NULLS,
    OMITTED,
    add_columns,
    build,
    column_names,
    expected,
    full_table,
    ids_table,
)
from javaengine import canon_rows
from neve.errors import DataSchemaMismatchError, SchemaError, ValidationError
from neve.spec.types import IntegerType, ListType, NestedField, StructType

UTC = dt.timezone.utc
ID_ONLY = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def v3_table(catalog: neve.Catalog, name: str = "db.t", **kwargs: Any) -> neve.Table:
    return catalog.create_table(name, ID_ONLY, format_version=3, primary_key=["id"], **kwargs)


def rows_of(table: neve.Table, **scan: Any) -> Any:
    out = table.scan(**scan).to_arrow().select(column_names())
    return canon_rows(out.to_pylist())


def metadata_json(table: neve.Table) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(Path(table.metadata_location).read_text())
    return doc


def test_defaults_on_read_and_write(sqlite_catalog: neve.Catalog) -> None:
    t = v3_table(sqlite_catalog)
    build(lambda: t, t.append)
    assert rows_of(t) == expected()
    # a filter on the defaulted columns sees the initial defaults of the old files
    # (planning and row-group pruning must not drop them)
    assert rows_of(t, filter="i = -2147483648 and s = ''") == expected(BEFORE)
    assert rows_of(t, filter="i is null") == expected(NULLS)
    assert rows_of(t, filter="i = -1") == expected(LATER)


def test_defaults_in_metadata_json(sqlite_catalog: neve.Catalog) -> None:
    t = v3_table(sqlite_catalog)
    build(lambda: t, t.append)
    fields = {f["name"]: f for f in metadata_json(t)["schemas"][-1]["fields"]}
    # spec "JSON single-value serialization"
    assert (fields["dec"]["initial-default"], fields["dec"]["write-default"]) == (
        "-9999999.99",
        "-0.50",
    )
    assert (fields["d"]["initial-default"], fields["d"]["write-default"]) == (
        "1969-12-31",
        "2038-01-19",
    )
    assert fields["ts"]["initial-default"] == "1969-12-31T23:59:59.999999"
    assert fields["tz"]["initial-default"] == "1960-01-01T00:00:00.000001+00:00"
    assert (fields["l"]["initial-default"], fields["l"]["write-default"]) == (-(2**63), -5)
    assert (fields["b"]["initial-default"], fields["b"]["write-default"]) == (False, False)
    assert str(fields["f"]["initial-default"]) == "-0.0"
    # the earlier schema keeps the earlier write default
    first = {f["name"]: f for f in metadata_json(t)["schemas"][-2]["fields"]}
    assert first["s"]["write-default"] == "héllo wörld 😀"
    # and a reload reads the same defaults back
    again = sqlite_catalog.load_table("db.t").schema()
    for c in CASES:
        f = again.find_field(c.name)
        assert f.write_default is not None and f.initial_default is not None


def test_update_column_default_keeps_written_rows(sqlite_catalog: neve.Catalog) -> None:
    t = v3_table(sqlite_catalog)
    t.append(ids_table([1]))
    with t.update_schema() as u:
        u.add_column("n", "long", default=5)
    t.append(ids_table([2]))
    with t.update_schema() as u:
        u.update_column_default("n", 6)
    t.append(ids_table([3]))
    with t.update_schema() as u:
        u.update_column_default("n", None)  # cleared: an optional column gets nulls
    t.append(ids_table([4]))
    got = {r["id"]: r["n"] for r in t.scan().to_arrow().to_pylist()}
    assert got == {1: 5, 2: 5, 3: 6, 4: None}
    f = t.schema().find_field("n")
    assert (f.initial_default, f.write_default) == (5, None)
    assert "write-default" not in metadata_json(t)["schemas"][-1]["fields"][1]


def test_overwrite_upsert_and_merge_use_the_write_default(sqlite_catalog: neve.Catalog) -> None:
    t = v3_table(sqlite_catalog)
    t.append(ids_table([1, 2, 3]))
    add_columns(t)
    t.overwrite(ids_table([2]), "id = 2")
    t.upsert(ids_table([3, 4]))  # 3 matched (rewritten), 4 inserted
    (
        t.merge(full_table([5], nulls=True))
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    got = {r["id"]: r for r in t.scan().to_arrow().to_pylist()}
    assert canon_rows([[got[1][c.name] for c in CASES]]) == canon_rows([[c.initial for c in CASES]])
    for i in (2, 3, 4):
        assert canon_rows([[got[i][c.name] for c in CASES]]) == canon_rows(
            [[c.write for c in CASES]]
        )
    assert all(got[5][c.name] is None for c in CASES)


def test_required_column_defaults(sqlite_catalog: neve.Catalog) -> None:
    t = v3_table(sqlite_catalog)
    t.append(ids_table([1]))
    with t.update_schema() as u:
        u.add_column("r", "string", required=True, initial_default="old", write_default="new")
    t.append(ids_table([2]))
    with t.update_schema() as u:
        u.update_column_default("r", None)  # allowed (as in Iceberg-Java) ...
    location = t.metadata_location
    with pytest.raises(DataSchemaMismatchError, match="required column 'r'"):
        t.append(ids_table([3]))  # ... but then a write must give the column
    with pytest.raises(ValidationError, match="no write default"):
        t.upsert(ids_table([3]))
    assert sqlite_catalog.load_table("db.t").metadata_location == location
    t.append(pa.table({"id": pa.array([3], pa.int64()), "r": ["given"]}))
    got = {r["id"]: r["r"] for r in t.scan().to_arrow().to_pylist()}
    assert got == {1: "old", 2: "new", 3: "given"}


def test_required_column_needs_both_defaults(sqlite_catalog: neve.Catalog) -> None:
    t = v3_table(sqlite_catalog)
    location = t.metadata_location
    with pytest.raises(SchemaError, match="without a default"), t.update_schema() as u:
        u.add_column("r", "int", required=True, write_default=1)
    with pytest.raises(SchemaError, match="write default"), t.update_schema() as u:
        u.add_column("r", "int", required=True, initial_default=1)
    assert sqlite_catalog.load_table("db.t").metadata_location == location
    # an optional column may have either one alone
    with t.update_schema() as u:
        u.add_column("only_initial", "int", initial_default=1)
        u.add_column("only_write", "int", write_default=2)
    t.append(ids_table([1]))
    row = t.scan().to_arrow().to_pylist()[0]
    assert (row["only_initial"], row["only_write"]) == (None, 2)


def test_nested_struct_field_defaults(sqlite_catalog: neve.Catalog) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("p", pa.struct([pa.field("x", pa.int32())])),
        ]
    )
    t = sqlite_catalog.create_table("db.n", schema, format_version=3)
    t.append(pa.table({"id": [1, 2], "p": [{"x": 1}, None]}, schema=schema))
    with t.update_schema() as u:
        u.add_column("p.y", "int", initial_default=-3, write_default=4)
    t.append(pa.table({"id": [3], "p": [{"x": 3}]}, schema=schema))
    got = {r["id"]: r["p"] for r in t.scan().to_arrow().to_pylist()}
    assert got == {1: {"x": 1, "y": -3}, 2: None, 3: {"x": 3, "y": 4}}


def test_v2_tables_refuse_defaults(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.v2", ID_ONLY)
    with t.update_schema() as u:
        u.add_column("n", "int")
    location = t.metadata_location
    for change in (
        lambda u: u.add_column("m", "int", default=1),
        lambda u: u.add_column("m", "int", initial_default=1),
        lambda u: u.add_column("m", "int", write_default=1),
        lambda u: u.update_column_default("n", 1),
        lambda u: u.update_column_default("n", None),
    ):
        with pytest.raises(SchemaError, match=r"format version 3.*upgrade"), t.update_schema() as u:
            change(u)
    assert sqlite_catalog.load_table("db.v2").metadata_location == location
    # after the upgrade the same change works
    t.set_properties({"format-version": "3"})
    with t.update_schema() as u:
        u.update_column_default("n", 1)
    t.append(ids_table([1]))
    assert t.scan().to_arrow().column("n").to_pylist() == [1]


@pytest.mark.parametrize(
    ("column", "value", "match"),
    [
        ("i", "seven", "does not fit"),
        ("i", 2**31, "does not fit"),
        ("i", True, "does not fit"),
        ("l", 1.5, "does not fit"),
        ("dec", Decimal("1.234"), "does not fit"),
        ("dec", Decimal("12345678.9"), "does not fit"),
        ("d", dt.datetime(2020, 1, 1), "datetime.date"),
        ("ts", dt.datetime(2020, 1, 1, tzinfo=UTC), "naive datetime"),
        ("tz", dt.datetime(2020, 1, 1), "aware datetime"),
        ("b", 1, "does not fit"),
        ("f", "1.5", "does not fit"),
        ("s", b"bytes", "does not fit"),
        ("st", {}, "primitive fields only"),
        ("lst.element", 1, "struct fields"),
        ("nope", 1, "no such column"),
    ],
)
def test_bad_defaults_change_nothing(
    sqlite_catalog: neve.Catalog, column: str, value: Any, match: str
) -> None:
    t = v3_table(sqlite_catalog)
    add_columns(t)
    with t.update_schema() as u:
        u.add_column("st", StructType(NestedField(1, "a", IntegerType())))
        u.add_column("lst", ListType(1, IntegerType()))
    location = t.metadata_location
    with pytest.raises(SchemaError, match=match), t.update_schema() as u:
        u.update_column_default(column, value)
    if column != "st" and not column.startswith(("lst", "nope")):
        with pytest.raises(SchemaError, match=match), t.update_schema() as u:
            u.add_column("fresh", t.schema().find_field(column).field_type, default=value)
    assert sqlite_catalog.load_table("db.t").metadata_location == location


def test_default_with_initial_or_write_default_is_refused(sqlite_catalog: neve.Catalog) -> None:
    t = v3_table(sqlite_catalog)
    for kwargs in ({"initial_default": 1}, {"write_default": 1}):
        with pytest.raises(SchemaError, match="not both"), t.update_schema() as u:
            u.add_column("n", "int", default=1, **kwargs)
    assert [f.name for f in sqlite_catalog.load_table("db.t").schema().fields] == ["id"]


def test_default_change_and_delete_in_one_update_is_refused(sqlite_catalog: neve.Catalog) -> None:
    t = v3_table(sqlite_catalog)
    with t.update_schema() as u:
        u.add_column("n", "int", default=1)
    with pytest.raises(SchemaError, match="other changes"), t.update_schema() as u:
        u.update_column_default("n", 2)
        u.delete_column("n")
    with pytest.raises(SchemaError, match="deleted earlier"), t.update_schema() as u:
        u.delete_column("n")
        u.update_column_default("n", 2)
    # a column added in the same update: its write default changes, the initial stays
    with t.update_schema() as u:
        u.add_column("m", "int", default=1)
        u.update_column_default("m", 2)
    f = sqlite_catalog.load_table("db.t").schema().find_field("m")
    assert (f.initial_default, f.write_default) == (1, 2)


def test_python_date_and_datetime_values_are_accepted(sqlite_catalog: neve.Catalog) -> None:
    t = v3_table(sqlite_catalog)
    with t.update_schema() as u:
        u.add_column("d", "date", default=dt.date(1900, 1, 1))
        u.add_column("d_int", "date", default=-25567)  # the same day as days since 1970
    f, g = t.schema().find_field("d"), t.schema().find_field("d_int")
    assert f.initial_default == g.initial_default == -25567


def test_rows_before_and_after_by_group(sqlite_catalog: neve.Catalog) -> None:
    """Each write of the history, read alone through its snapshot's files."""
    t = v3_table(sqlite_catalog)
    build(lambda: t, t.append)
    for ids in (BEFORE, OMITTED, NULLS, GIVEN, LATER):
        lo, hi = min(ids), max(ids)
        assert rows_of(t, filter=f"id >= {lo} and id <= {hi}") == expected(ids)
