"""One row-level suite, run through each engine object (``ArrowEngine()``,
``SparkEngine(spark)``) by the same transaction code: appends, copy-on-write and
merge-on-read deletes and updates, MERGE with every clause kind, upserts through the
merge engine, overwrites, dynamic partition overwrites, and maintenance (compaction,
position delete merges, snapshot expiration with file deletion), each checked against a
Python model of the table's rows, in v2 and v3. The engines differ only in how their
rows come (pyarrow Tables or DataFrames) and in an UPDATE's values (literals or SQL).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import neve
from neve.engine import Engine
from neve.errors import DuplicateKeyError, ValidationError
from neve.spark import SparkEngine
from neve.table.maintenance import Maintenance

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("grp", pa.int32()),
        pa.field("qty", pa.int64()),
        pa.field("name", pa.string()),
    ]
)

Model = dict[int, tuple[int, int, str]]


def _rows(ids: list[int], qty: Callable[[int], int] = lambda i: i % 10, tag: str = "r") -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "grp": [i % 3 for i in ids],
            "qty": [qty(i) for i in ids],
            "name": [f"{tag}{i}" for i in ids],
        },
        schema=SCHEMA,
    )


def _model(rows: pa.Table) -> Model:
    return {r["id"]: (r["grp"], r["qty"], r["name"]) for r in rows.to_pylist()}


class Runner:
    """An engine object, with how its rows and UPDATE values are written."""

    def __init__(
        self, engine: Engine[Any], rows: Callable[[pa.Table], Any], literal: bool, upsert_path: str
    ) -> None:
        self.engine = engine
        self.rows = rows
        self.literal = literal
        #: Which path runs an upsert (MergeResult.executed_by).
        self.upsert_path = upsert_path

    def value(self, v: int) -> Any:
        return v if self.literal else str(v)


@pytest.fixture(params=["pyarrow", "spark", "spark-driver"])
def runner(request: pytest.FixtureRequest) -> Runner:
    """The pyarrow engine; the Spark engine with Spark jobs for every change (the test
    session's setting); the Spark engine running small changes on the driver."""
    if request.param == "pyarrow":
        return Runner(neve.ArrowEngine(), lambda t: t, literal=True, upsert_path="pyarrow")
    spark = request.getfixturevalue("spark")
    if request.param == "spark":
        return Runner(SparkEngine(spark), spark.createDataFrame, literal=False, upsert_path="spark")
    small = SparkEngine(spark, local_rows_max=10_000, local_bytes_max=1 << 30)
    return Runner(small, spark.createDataFrame, literal=False, upsert_path="spark-driver")


@pytest.fixture
def cat(tmp_path: Path) -> neve.Catalog:
    c = neve.connect(f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    c.create_namespace("db")
    return c


def _content(t: neve.Table) -> Model:
    return _model(t.refresh().scan().to_arrow())


def _files(t: neve.Table) -> set[str]:
    """Every file under the table's folder (local or on an object store)."""
    return set(t.io.list_files(t.location))


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_row_level_suite(cat: neve.Catalog, runner: Runner, version: int, mode: str) -> None:
    run_suite(cat, runner, version, mode)


def run_suite(cat: neve.Catalog, runner: Runner, version: int, mode: str) -> None:
    """The suite on a fresh table ``db.t`` of ``cat`` (module docstring)."""
    props = {f"write.{op}.mode": mode for op in ("delete", "update", "merge")}
    t = cat.create_table(
        "db.t",
        SCHEMA,
        partition_by=["grp"],
        primary_key=["id"],
        format_version=version,
        properties=props,
    )
    model: Model = {}

    def txn() -> neve.Transaction[Any]:
        return t.refresh().transaction(runner.engine)

    first = _rows(list(range(60)))
    with txn() as tx:
        tx.append(runner.rows(first))
    model.update(_model(first))
    assert _content(t) == model

    with txn() as tx:  # keys the table holds are refused, nothing written
        before = _files(t)
        with pytest.raises(DuplicateKeyError):
            tx.append(runner.rows(_rows([5, 100])))
    assert _files(t) == before and _content(t) == model

    with txn() as tx:
        tx.delete("id < 8 or qty = 9")
    model = {k: v for k, v in model.items() if not (k < 8 or v[1] == 9)}
    assert _content(t) == model

    with txn() as tx:
        assert tx.update({"qty": runner.value(100)}, "grp = 1 and id >= 30") == sum(
            1 for k, v in model.items() if v[0] == 1 and k >= 30
        )
    model = {k: (g, 100 if g == 1 and k >= 30 else q, n) for k, (g, q, n) in model.items()}
    assert _content(t) == model

    source = _rows([10, 11, 12, 13, 200, 201], qty=lambda i: 7, tag="m")
    with txn() as tx:
        result = (
            tx.merge(runner.rows(source))
            .when_matched_delete("target.grp = 2")
            .when_matched_update({"name": "source.name"}, "source.qty > target.qty")
            .when_not_matched_insert_all("source.id < 201")
            .execute()
        )
    for k in (10, 11, 12, 13, 200, 201):
        row = _model(source)[k]
        if k in model and model[k][0] == 2:
            del model[k]
        elif k in model and row[1] > model[k][1]:
            model[k] = (model[k][0], model[k][1], row[2])
        elif k not in model and k < 201:
            model[k] = row
    assert _content(t) == model
    assert result.rows_inserted == 1 and result.executed_by in ("pyarrow", "spark")

    twice = _rows([20, 20])
    with txn() as tx, pytest.raises(ValidationError, match="more than one source row"):
        tx.merge(runner.rows(twice)).when_matched_update_all().execute()
    assert _content(t) == model

    upsert = _rows([20, 20, 21, 300], qty=lambda i: 55, tag="u")
    with txn() as tx:  # deduplicate: the last row of a key wins
        done = tx.upsert(runner.rows(upsert))
    assert done.executed_by == runner.upsert_path
    model.update(_model(upsert))
    assert _content(t) == model

    with txn() as tx:
        tx.overwrite(runner.rows(_rows([400, 401])), "grp = 0")
    model = {k: v for k, v in model.items() if v[0] != 0}
    model.update(_model(_rows([400, 401])))
    assert _content(t) == model

    replacement = _rows([501, 504], qty=lambda i: 1, tag="p")  # grp 0
    with txn() as tx:
        tx.dynamic_partition_overwrite(runner.rows(replacement))
    model = {k: v for k, v in model.items() if v[0] != 0}
    model.update(_model(replacement))
    assert _content(t) == model

    maintenance = Maintenance(t.refresh(), runner.engine)
    if version >= 2:
        maintenance.rewrite_position_delete_files()
        assert _content(t) == model
    done = Maintenance(t.refresh(), runner.engine).rewrite_data_files(
        options={"min-input-files": "1", "delete-file-threshold": "1"}
    )
    assert done.rewritten_data_files_count > 0
    assert _content(t) == model
    assert all(not task.delete_files for task in t.refresh().scan().plan_files())
    head = t.refresh().metadata.current_snapshot_id
    Maintenance(t.refresh(), runner.engine).expire_snapshots(retain_last=1, older_than=2**62)
    t = t.refresh()
    assert [s.snapshot_id for s in t.snapshots()] == [head]
    live = {task.file.file_path for task in t.scan().plan_files()}
    assert {p for p in _files(t) if "/data/" in p} == live
    assert _content(t) == model
