"""Verbs that change things: create (the schema language), create-namespace, drop,
rename, tag, branch, rollback; each checked through the Python API."""

from __future__ import annotations

import os

from cli_support import Catalog, Runner, rows

import neve
from neve.spec.types import DecimalType, ListType, LongType, MapType, StringType, StructType


def test_create(run: Runner, sqlite: Catalog) -> None:
    assert run(*sqlite.flags, "create-namespace", "db").code == 0
    r = run(
        *sqlite.flags,
        "create",
        "db.orders",
        "--schema",
        "id long not null, customer string comment 'who', price decimal(10, 2), "
        "tags list<string>, attrs map<string, struct<a: int not null, b: string>>, "
        "ts timestamptz",
        "--partition-by",
        "day(ts), bucket(8, id)",
        "--primary-key",
        "id",
        "--property",
        "owner=ops",
        "--sort-by",
        "customer",
        "--format-version",
        "3",
        "--json",
    )
    assert r.code == 0, r.err
    assert r.json()["format_version"] == 3
    t = sqlite.catalog.load_table("db.orders")
    s = t.schema()
    assert [f.name for f in s.fields] == ["id", "customer", "price", "tags", "attrs", "ts"]
    assert s.find_field("id").field_type == LongType() and s.find_field("id").required
    assert s.find_field("customer").doc == "who"
    assert s.find_field("price").field_type == DecimalType(10, 2)
    assert isinstance(s.find_field("tags").field_type, ListType)
    attrs = s.find_field("attrs").field_type
    assert isinstance(attrs, MapType) and isinstance(attrs.value_type, StructType)
    assert attrs.key_type == StringType()
    assert [s.find_field(i).name for i in s.identifier_field_ids] == ["id"]
    assert [str(f.transform) for f in t.spec().fields] == ["day", "bucket[8]"]
    assert t.properties["owner"] == "ops"
    assert len(t.sort_order().fields) == 1
    again = run(*sqlite.flags, "create", "db.orders", "--schema", "id long")
    assert again.code == 1 and "exists already" in again.err
    bad = run(*sqlite.flags, "create", "db.bad", "--schema", "id lng")
    assert bad.code == 1 and "unknown type 'lng'" in bad.err
    assert not sqlite.catalog.table_exists("db.bad")
    bad_prop = run(*sqlite.flags, "create", "db.bad", "--schema", "id long", "--property", "x")
    assert bad_prop.code == 2 and "KEY=VALUE" in bad_prop.err
    assert run(*sqlite.flags, "create-namespace", "db").code == 1
    assert run(*sqlite.flags, "create-namespace", "db", "--exist-ok").code == 0


def test_drop_and_rename(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    assert run(*sqlite.flags, "rename", "db.events", "db.renamed").code == 0
    assert sqlite.catalog.list_tables("db") == [("db", "renamed")]
    location = sqlite.catalog.load_table("db.renamed").location
    assert run(*sqlite.flags, "drop", "db.renamed").code == 0
    assert not sqlite.catalog.table_exists("db.renamed")
    assert os.path.isdir(location)  # files stay without --purge
    t = sqlite.catalog.create_table("db.gone", events.schema())
    t.append(rows(0, 5, 0))
    assert run(*sqlite.flags, "drop", "db.gone", "--purge").code == 0
    assert not os.path.exists(t.location)
    missing = run(*sqlite.flags, "drop", "db.gone")
    assert missing.code == 1 and "db.gone" in missing.err


def test_tags_branches_rollback(run: Runner, sqlite: Catalog, events: neve.Table) -> None:
    t = events.refresh()
    second = t.snapshots()[1].snapshot_id
    r = run(*sqlite.flags, "tag", "create", "db.events", "v2", "--snapshot", str(second), "--json")
    assert r.json() == {"table": "db.events", "name": "v2", "type": "tag", "snapshot_id": second}
    tags = run(*sqlite.flags, "tag", "list", "db.events", "--json").json()
    assert {x["name"] for x in tags} == {"first", "v2"}
    assert run(*sqlite.flags, "branch", "create", "db.events", "exp").code == 0
    branches = run(*sqlite.flags, "branch", "list", "db.events", "--json").json()
    assert {x["name"] for x in branches} == {"main", "dev", "exp"}
    assert run(*sqlite.flags, "branch", "remove", "db.events", "exp").code == 0
    assert run(*sqlite.flags, "tag", "remove", "db.events", "v2").code == 0
    assert set(t.refresh().refs()) == {"main", "dev", "first"}
    back = run(*sqlite.flags, "rollback", "db.events", "--ref", "first", "--json").json()
    first = t.snapshots()[0].snapshot_id
    assert back == {"table": "db.events", "branch": "main", "snapshot_id": first}
    assert t.refresh().current_snapshot().snapshot_id == first  # type: ignore[union-attr]
    assert run(*sqlite.flags, "rollback", "db.events").code == 2
    unknown = run(*sqlite.flags, "rollback", "db.events", "--ref", "nope")
    assert unknown.code == 1 and "known refs" in unknown.err
    # the branch dev still holds the later history: roll it back by snapshot id
    dev_head = t.refs()["dev"].snapshot_id
    parent = t.snapshot_by_id(dev_head).parent_snapshot_id
    out = run(*sqlite.flags, "rollback", "db.events", "--snapshot", str(parent), "--branch", "dev")
    assert out.code == 0, out.err
    assert t.refresh().refs()["dev"].snapshot_id == parent
