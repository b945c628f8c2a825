"""Changelog reads against Iceberg-Java 1.10.2's ``create_changelog_view``.

On tables Java can read a changelog of (appends and copy-on-write rewrites, written by
Java or by neve) neve's ``table.changes`` returns the same rows: with update pairing by
``identifier_columns``, without it (carry-over rows removed), and with ``net_changes``.
On a merge-on-read table Java refuses ("Delete files are currently not supported in
changelog scans") and neve answers, checked against the difference of the table's
states that Java itself reads at each snapshot (``VERSION AS OF``).
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

from javaengine import IcebergJava, JavaSqlError, canon
from neve.catalog import SqlCatalog

pytestmark = pytest.mark.java

COLUMNS = ["id", "v", "_change_type", "_change_ordinal", "_commit_snapshot_id"]


def java_changes(
    java: IcebergJava,
    table: str,
    start: int | None,
    end: int | None,
    *,
    identifier: bool,
    net: bool = False,
) -> Counter[Any]:
    view = f"cv_{uuid.uuid4().hex[:8]}"
    options = []
    if start is not None:
        options += ["'start-snapshot-id'", f"'{start}'"]
    if end is not None:
        options += ["'end-snapshot-id'", f"'{end}'"]
    args = [f"table => '{table}'", f"changelog_view => '{view}'"]
    if options:
        args.append(f"options => map({', '.join(options)})")
    if identifier:
        args.append("identifier_columns => array('id')")
    if net:
        args.append("net_changes => true")
    java.sql(f"CALL neve.system.create_changelog_view({', '.join(args)})")
    rows = java.sql(f"SELECT {', '.join(COLUMNS)} FROM {view}").rows
    return Counter(tuple(canon(v) for v in r) for r in rows)


def neve_changes(
    catalog: SqlCatalog,
    ns: str,
    start: int | None,
    end: int | None,
    *,
    identifier: bool,
    net: bool = False,
) -> Counter[Any]:
    t = catalog.load_table((ns, "t"))
    out = t.changes(
        start_snapshot_id=start,
        end_snapshot_id=end,
        identifier_columns=["id"] if identifier else [],
        compute_updates=identifier,
        net_changes=net,
    )
    return Counter(tuple(canon(r[c]) for c in COLUMNS) for r in out.to_pylist())


def snapshot_ids(catalog: SqlCatalog, ns: str) -> list[int]:
    t = catalog.load_table((ns, "t"))
    return [s.snapshot_id for s in t.metadata.ancestors(t.current_snapshot().snapshot_id)][::-1]


def assert_same_as_java(java: IcebergJava, catalog: SqlCatalog, ns: str) -> None:
    table = f"neve.{ns}.t"
    ids = snapshot_ids(catalog, ns)
    ranges = [(None, None), (ids[0], None), (ids[1], ids[-2]), (ids[-2], ids[-1])]
    for start, end in ranges:
        for identifier in (True, False):
            want = java_changes(java, table, start, end, identifier=identifier)
            got = neve_changes(catalog, ns, start, end, identifier=identifier)
            assert got == want, (start, end, identifier, got - want, want - got)
        # Java refuses net changes with update images: compare them without
        want = java_changes(java, table, start, end, identifier=False, net=True)
        got = neve_changes(catalog, ns, start, end, identifier=False, net=True)
        assert got == want, (start, end, "net", got - want, want - got)


COW = (
    "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='copy-on-write', "
    "'write.update.mode'='copy-on-write', 'write.merge.mode'='copy-on-write')"
)


def test_java_written_copy_on_write_table(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    table = f"neve.{java_ns}.t"
    java = iceberg_java
    java.sql(f"CREATE TABLE {table} (id int, v string) USING iceberg {COW}")
    java.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")
    java.sql(f"INSERT INTO {table} VALUES (5, 'e'), (6, 'f')")
    java.sql(f"DELETE FROM {table} WHERE id = 2")
    java.sql(f"UPDATE {table} SET v = 'x' WHERE id IN (3, 5)")
    java.sql(
        f"MERGE INTO {table} t USING (SELECT 4 AS id, 'dd' AS v UNION ALL "
        "SELECT 7, 'g') s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    )
    java.sql(f"UPDATE {table} SET v = 'x' WHERE id = 3")  # the same value: carry-over
    java.sql(f"INSERT INTO {table} VALUES (8, 'h')")
    assert_same_as_java(java, java_catalog, java_ns)


def test_neve_written_copy_on_write_table(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.string())])
    t = java_catalog.create_table(
        (java_ns, "t"),
        schema,
        primary_key=["id"],
        properties={f"write.{op}.mode": "copy-on-write" for op in ("delete", "update", "merge")},
    )

    def rows(ids: list[int], v: str) -> pa.Table:
        return pa.table({"id": ids, "v": [f"{v}{i}" for i in ids]}, schema=schema)

    t.append(rows([1, 2, 3, 4], "a"))
    t.append(rows([5, 6], "b"))
    t.delete("id = 2")
    t.update({"v": "x"}, "id IN (3, 5)")
    t.upsert(rows([4, 7], "c"))
    t.upsert(rows([4], "c"))  # the same row again: carry-over only
    t.overwrite(rows([1, 9], "d"), "id = 1")
    t.append(rows([10], "e"))
    assert_same_as_java(iceberg_java, java_catalog, java_ns)


def test_merge_on_read_java_refuses_and_neve_answers(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str
) -> None:
    table = f"neve.{java_ns}.t"
    java = iceberg_java
    java.sql(
        f"CREATE TABLE {table} (id int, v string) USING iceberg TBLPROPERTIES "
        "('format-version'='2', 'write.delete.mode'='merge-on-read', "
        "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')"
    )
    java.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")
    java.sql(f"DELETE FROM {table} WHERE id = 2")
    java.sql(f"UPDATE {table} SET v = 'x' WHERE id IN (3, 4)")
    java.sql(f"DELETE FROM {table} WHERE id = 3")
    t = java_catalog.load_table((java_ns, "t"))
    t.upsert(pa.table({"id": [1, 5], "v": ["aa", "e"]}, schema=t.scan().arrow_schema()), on=["id"])
    with pytest.raises(JavaSqlError, match="Delete files are currently not supported"):
        java_changes(java, table, None, None, identifier=True)

    ids = snapshot_ids(java_catalog, java_ns)
    states = [{}] + [
        {r[0]: r for r in java.sql(f"SELECT id, v FROM {table} VERSION AS OF {s}").rows}
        for s in ids
    ]
    want: Counter[Any] = Counter()
    for ordinal, sid in enumerate(ids):
        before, after = states[ordinal], states[ordinal + 1]
        for k in set(before) | set(after):
            old, new = before.get(k), after.get(k)
            if old == new:
                continue
            if old is not None and new is not None:
                want[(k, old[1], "UPDATE_BEFORE", ordinal, sid)] += 1
                want[(k, new[1], "UPDATE_AFTER", ordinal, sid)] += 1
            elif old is not None:
                want[(k, old[1], "DELETE", ordinal, sid)] += 1
            else:
                want[(k, new[1], "INSERT", ordinal, sid)] += 1
    got = neve_changes(java_catalog, java_ns, None, None, identifier=True)
    assert got == want
    assert any(key[2] == "UPDATE_BEFORE" for key in want)  # the Java updates are paired
