"""Merge-on-read tables cross engines: what neve writes, Iceberg-Java 1.10.2 and
pyiceberg 0.12 read; what Iceberg-Java writes, neve reads.

One sequence of row-level changes (append, a partial delete, an update, an upsert, a
second delete, a conditional merge) runs against a Python model keyed by ``id`` and
against a table written by neve or by Iceberg-Java (``DELETE``/``UPDATE``/``MERGE INTO``
in merge-on-read mode), at format v2 (position delete files) and v3 (deletion vectors).
At every snapshot, unfiltered and filtered, each engine's rows equal the model's. The
sequence deletes rows of one data file three times, so on v3 that file's deletion
vector is replaced twice. Java's ``delete_files`` metadata table agrees with neve's plan
on the kinds and counts of live delete files, and both engines keep at most one
deletion vector per data file, also when neve changes rows of a Java-written table.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergCatalog

from javaengine import IcebergJava, canon_rows
from javaengine.sql import row_literal
from neve.catalog import SqlCatalog
from neve.spec.manifest import DataFile
from neve.table.table import Table

pytestmark = pytest.mark.java

TYPES = ["bigint", "string", "int", "double"]
NAMES = ["id", "cat", "v", "d"]
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("cat", pa.string()),
        pa.field("v", pa.int32()),
        pa.field("d", pa.float64()),
    ]
)
MOR = {f"write.{op}.mode": "merge-on-read" for op in ("delete", "update", "merge")}
Row = tuple[Any, ...]
Model = dict[int, Row]


def make_row(i: int, v: int | None = None) -> Row:
    d = math.nan if i % 10 == 3 else (-0.0 if i % 10 == 7 else i / 4)
    value = None if i % 11 == 5 else (i * 7) % 50
    return (i, ["a", "b", "c"][i % 3], value if v is None else v, d)


def to_arrow(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(NAMES, r, strict=True)) for r in rows], schema=SCHEMA)


@dataclass(frozen=True)
class Filter:
    """One filter as each engine spells it, and as a predicate on a model row."""

    neve: str
    pyiceberg: str
    java: str
    pred: Callable[[Row], bool]


FILTERS = [
    Filter("cat = 'a'", "cat = 'a'", "cat = 'a'", lambda r: r[1] == "a"),
    Filter("v >= 20", "v >= 20", "v >= 20", lambda r: r[2] is not None and r[2] >= 20),
    Filter("d is nan", "d is nan", "isnan(d)", lambda r: math.isnan(r[3])),
    Filter(
        "id < 30 and cat != 'b'",
        "id < 30 and cat != 'b'",
        "id < 30 and cat != 'b'",
        lambda r: r[0] < 30 and r[1] is not None and r[1] != "b",
    ),
]

# The sequence: each step changes the model and says how neve and Java do it.
UPSERT = [make_row(1, 200), make_row(4, 201), make_row(35, 202), make_row(70), make_row(71)]
MERGE = [make_row(9, -1), make_row(12, 300), make_row(80)]  # v < 0: delete the target row


def step_delete_small_v(m: Model) -> None:
    for k in [k for k, r in m.items() if r[2] is not None and r[2] < 8]:
        del m[k]


def step_update(m: Model) -> None:
    for k, r in list(m.items()):
        if r[1] == "a" and k >= 30:
            m[k] = (r[0], r[1], 100, r[3])


def step_upsert(m: Model) -> None:
    m.update({r[0]: r for r in UPSERT})


def step_delete_ids(m: Model) -> None:
    for k in (0, 3, 6, 33):
        m.pop(k, None)


def step_merge(m: Model) -> None:
    for r in MERGE:
        if r[0] in m and r[2] is not None and r[2] < 0:
            del m[r[0]]
        else:
            m[r[0]] = r


def source_sql(rows: list[Row]) -> str:
    values = ", ".join(row_literal(r, TYPES) for r in rows)
    return f"(SELECT * FROM VALUES {values} AS s({', '.join(NAMES)}))"


def neve_steps(load: Callable[[], Table]) -> list[Callable[[], None]]:
    def upsert() -> None:
        load().upsert(to_arrow(UPSERT))

    def merge() -> None:
        (
            load()
            .merge(to_arrow(MERGE))
            .when_matched_delete("source.v < 0")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )

    return [
        lambda: load().delete("v < 8"),
        lambda: load().update({"v": 100}, "cat = 'a' and id >= 30"),
        upsert,
        lambda: load().delete("id in (0, 3, 6, 33)"),
        merge,
    ]


def java_steps(java: IcebergJava, name: str) -> list[Callable[[], None]]:
    def run(sql: str) -> Callable[[], None]:
        def go() -> None:
            java.sql(sql)

        return go

    return [
        run(f"DELETE FROM {name} WHERE v < 8"),
        run(f"UPDATE {name} SET v = 100 WHERE cat = 'a' AND id >= 30"),
        run(
            f"MERGE INTO {name} t USING {source_sql(UPSERT)} s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        ),
        run(f"DELETE FROM {name} WHERE id IN (0, 3, 6, 33)"),
        run(
            f"MERGE INTO {name} t USING {source_sql(MERGE)} s ON t.id = s.id "
            "WHEN MATCHED AND s.v < 0 THEN DELETE WHEN MATCHED THEN UPDATE SET * "
            "WHEN NOT MATCHED THEN INSERT *"
        ),
    ]


MODEL_STEPS = [step_delete_small_v, step_update, step_upsert, step_delete_ids, step_merge]
FIRST = [make_row(i) for i in range(60)]


def snapshot_models() -> list[Model]:
    """The model after the append and after each step."""
    m: Model = {r[0]: r for r in FIRST}
    out = [dict(m)]
    for step in MODEL_STEPS:
        step(m)
        out.append(dict(m))
    return out


def want(model: Model, f: Filter | None) -> Counter[Any]:
    return canon_rows(r for r in model.values() if f is None or f.pred(r))


def neve_rows(t: Table, snapshot_id: int, f: Filter | None) -> Counter[Any]:
    scan = t.scan(filter=None if f is None else f.neve, snapshot_id=snapshot_id)
    return canon_rows(scan.to_arrow().select(NAMES).to_pylist())


def java_rows(java: IcebergJava, name: str, snapshot_id: int, f: Filter | None) -> Counter[Any]:
    where = "" if f is None else f" WHERE {f.java}"
    return canon_rows(
        java.sql(f"SELECT id, cat, v, d FROM {name} VERSION AS OF {snapshot_id}{where}").rows
    )


def pyiceberg_rows(
    catalog: PyIcebergCatalog, ident: str, snapshot_id: int, f: Filter | None
) -> Counter[Any]:
    table = catalog.load_table(ident)
    scan = table.scan(row_filter="true" if f is None else f.pyiceberg, snapshot_id=snapshot_id)
    return canon_rows(scan.to_arrow().select(NAMES).to_pylist())


def live_delete_files(t: Table) -> dict[str, DataFile]:
    """The current snapshot's delete files, by (path, DV offset)."""
    out = {}
    for task in t.scan().plan_files():
        for d in task.delete_files:
            out[f"{d.file_path}@{d.content_offset}"] = d
    return out


def dvs_by_data_file(t: Table) -> dict[str, set[str]]:
    """For each data file, the delete files that apply to it in the current snapshot."""
    out: dict[str, set[str]] = {}
    for task in t.scan().plan_files():
        out.setdefault(task.file.file_path, set()).update(
            f"{d.file_path}@{d.content_offset}" for d in task.delete_files
        )
    return out


def java_delete_files(java: IcebergJava, name: str) -> Counter[tuple[int, str, str | None]]:
    rows = java.sql(
        f"SELECT content, file_format, referenced_data_file, content_offset "
        f"FROM {name}.delete_files"
    ).rows
    return Counter((int(c), str(fmt), ref) for c, fmt, ref, _ in rows)


def neve_delete_kinds(t: Table) -> Counter[tuple[int, str, str | None]]:
    return Counter(
        (int(d.content), d.file_format.value, d.referenced_data_file)
        for d in live_delete_files(t).values()
    )


def check_delete_files(java: IcebergJava, name: str, t: Table, version: int) -> None:
    """Java's delete_files table and neve's plan list the same delete files; v3 keeps
    one deletion vector per data file and no position delete file; v2 no DV."""
    kinds = neve_delete_kinds(t)
    assert java_delete_files(java, name) == kinds
    assert kinds, "the sequence leaves delete files behind"
    formats = {fmt for _, fmt, _ in kinds}
    assert formats == ({"PUFFIN"} if version == 3 else {"PARQUET"})
    if version == 3:
        assert all(len(d) <= 1 for d in dvs_by_data_file(t).values())
    data_kinds = Counter(int(c) for (c,) in java.sql(f"SELECT content FROM {name}.files").rows)
    assert data_kinds[0] == len(t.scan().plan_files())
    assert data_kinds[1] == sum(kinds.values())


def compare_everywhere(
    java: IcebergJava,
    name: str,
    t: Table,
    pyice: PyIcebergCatalog,
    ident: str,
    snapshots: list[int],
    models: list[Model],
) -> None:
    assert len(snapshots) == len(models)
    for snapshot_id, model in zip(snapshots, models, strict=True):
        for f in [None, *FILTERS]:
            expected = want(model, f)
            label = (snapshot_id, None if f is None else f.neve)
            assert neve_rows(t, snapshot_id, f) == expected, ("neve", *label)
            assert java_rows(java, name, snapshot_id, f) == expected, ("java", *label)
            assert pyiceberg_rows(pyice, ident, snapshot_id, f) == expected, ("pyiceberg", *label)


def snapshot_chain(t: Table) -> list[int]:
    """Snapshot ids of the current branch, oldest first."""
    out = []
    s = t.current_snapshot()
    while s is not None:
        out.append(s.snapshot_id)
        s = t.snapshot_by_id(s.parent_snapshot_id) if s.parent_snapshot_id is not None else None
    return out[::-1]


@pytest.fixture
def pyice(java_setup: Any) -> PyIcebergCatalog:
    return PyIcebergCatalog("neve", uri=java_setup.uri, warehouse=f"file://{java_setup.warehouse}")


@pytest.mark.parametrize("version", [2, 3])
def test_java_and_pyiceberg_read_neves_merge_on_read_tables(
    iceberg_java: IcebergJava,
    java_catalog: SqlCatalog,
    java_ns: str,
    pyice: PyIcebergCatalog,
    version: int,
) -> None:
    t = java_catalog.create_table(
        (java_ns, "t"), SCHEMA, partition_by=["cat"], primary_key=["id"], format_version=version
    )
    assert {k: t.properties[k] for k in MOR} == MOR  # neve's default at v2+
    t.append(to_arrow(FIRST))

    def load() -> Table:
        return java_catalog.load_table((java_ns, "t"))

    history: list[dict[str, set[str]]] = [dvs_by_data_file(load())]
    for step in neve_steps(load):
        step()
        history.append(dvs_by_data_file(load()))
    t = load()
    name = f"neve.{java_ns}.t"
    assert t.current_snapshot() is not None
    for s in t.snapshots():  # no snapshot rewrote a data file it only changed rows of
        assert s.operation.value in ("append", "delete", "overwrite")

    compare_everywhere(
        iceberg_java, name, t, pyice, f"{java_ns}.t", snapshot_chain(t), snapshot_models()
    )
    check_delete_files(iceberg_java, name, t, version)

    # The first data file of partition 'a' had rows deleted by three steps: on v3 its
    # deletion vector was written, then replaced twice, each time holding every
    # position deleted so far (one DV per data file at every snapshot).
    (file_a,) = [p for p in history[0] if "cat=a" in p]
    seen = [frozenset(h[file_a]) for h in history if h.get(file_a)]
    distinct = list(dict.fromkeys(seen))
    assert len(distinct) >= 3, distinct
    if version == 3:
        assert all(len(s) == 1 for s in distinct)


@pytest.mark.parametrize("version", [2, 3])
def test_neve_reads_javas_merge_on_read_tables_and_changes_them(
    iceberg_java: IcebergJava,
    java_catalog: SqlCatalog,
    java_ns: str,
    pyice: PyIcebergCatalog,
    version: int,
) -> None:
    name = f"neve.{java_ns}.t"
    props = ", ".join(f"'{k}'='{v}'" for k, v in {"format-version": str(version), **MOR}.items())
    iceberg_java.sql(
        f"CREATE TABLE {name} (id bigint NOT NULL, cat string, v int, d double) "
        f"USING iceberg PARTITIONED BY (cat) TBLPROPERTIES ({props})"
    )
    iceberg_java.sql(
        f"INSERT INTO {name} VALUES " + ", ".join(row_literal(r, TYPES) for r in FIRST)
    )
    for step in java_steps(iceberg_java, name):
        step()
    t = java_catalog.load_table((java_ns, "t"))
    ops = [s.operation.value for s in t.snapshots()]
    assert ops.count("append") == 1 and len(ops) == 6  # Java wrote every change as deletes
    models = snapshot_models()
    compare_everywhere(iceberg_java, name, t, pyice, f"{java_ns}.t", snapshot_chain(t), models)
    check_delete_files(iceberg_java, name, t, version)

    # neve changes rows of files Java already wrote deletes for: it merges them (v3: the
    # file's one DV is replaced; v2: file-scoped position deletes are merged), and Java
    # and pyiceberg read the result.
    model = dict(models[-1])
    t.delete("id in (1, 2, 10, 11)")
    for k in (1, 2, 10, 11):
        model.pop(k, None)
    more = [make_row(4, 400), make_row(90)]
    java_catalog.load_table((java_ns, "t")).upsert(to_arrow(more), on=["id"])
    model.update({r[0]: r for r in more})
    t = java_catalog.load_table((java_ns, "t"))
    chain = snapshot_chain(t)
    compare_everywhere(iceberg_java, name, t, pyice, f"{java_ns}.t", chain[-1:], [model])
    check_delete_files(iceberg_java, name, t, version)
