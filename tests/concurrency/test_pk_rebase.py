"""Eight writer processes upserting overlapping keys of one primary-key table, and
deleting keys from the same data files, on SQLite, PostgreSQL and the filesystem
catalog: every operation commits (the rebase matrix says these rebase, so no conflict
error and no give-up), no key is held twice, and the table equals a replay of the
committed operations in commit order (no lost update, no lost delete)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.compute
import pytest

from budget import LONG, examples
from concurrency.pk_workers import (
    INITIAL,
    PARTIAL_PROPERTIES,
    PARTIAL_SCHEMA,
    SCHEMA,
    TABLE_PROPERTIES,
    PkOp,
    committed,
    initial_partial_rows,
    plan_pk_ops,
    replay,
    replay_partial,
    run_pk_writer,
)
from concurrency.workers import process_context, warm_up
from neve.catalog import Catalog
from neve.table.maintenance import reachable_files

WRITERS = 8


@pytest.fixture(scope="module")
def writer_pool() -> Iterator[ProcessPoolExecutor]:
    with ProcessPoolExecutor(max_workers=WRITERS, mp_context=process_context()) as pool:
        list(pool.map(warm_up, range(WRITERS)))
        yield pool


def run_round(
    catalog: Catalog,
    pool: ProcessPoolExecutor,
    name: str,
    version: int,
    ops_per_writer: int,
    seed: int,
    partial: bool = False,
    spark_writers: int = 0,
) -> Counter[str]:
    catalog.create_namespace_if_not_exists(name.split(".")[0])
    table = catalog.create_table(
        name,
        PARTIAL_SCHEMA if partial else SCHEMA,
        primary_key=["k"],
        format_version=version,
        properties=PARTIAL_PROPERTIES if partial else TABLE_PROPERTIES,
    )
    # the initial keys in four data files, so deletes and upserts share files
    initial = (
        initial_partial_rows()
        if partial
        else pa.table(
            {"k": range(INITIAL), "v": [f"load:{k}" for k in range(INITIAL)]}, schema=SCHEMA
        )
    )
    for part in range(4):
        table.append(
            initial.filter(pa.compute.equal(pa.compute.bit_wise_and(initial["k"], 3), part))
        )
    plans = [plan_pk_ops(w, ops_per_writer, seed, partial) for w in range(WRITERS)]
    ops: dict[str, PkOp] = {op.op_id: op for plan in plans for op in plan}
    start_at = time.time() + 0.5
    if spark_writers:
        start_at += 30  # a Spark writer starts its session first
    futures = [
        pool.submit(run_pk_writer, catalog, name, plan, start_at, w < spark_writers)
        for w, plan in enumerate(plans)
    ]
    outcomes = dict(pair for f in futures for pair in f.result(timeout=900))
    assert set(outcomes) == set(ops)
    not_ok = {i: o for i, o in outcomes.items() if o != "ok"}
    assert not not_ok, not_ok  # no conflict, no give-up, no error

    table = catalog.load_table(name)
    order = committed(table)
    assert len(order) == len(set(order)), "an operation committed twice"
    assert set(order) <= set(ops)
    # an operation that changed nothing may commit nothing; every other one committed
    missing = set(ops) - set(order)
    assert all(ops[i].kind == "delete" for i in missing), missing
    rows = table.scan().to_arrow().to_pylist()
    keys = Counter(r["k"] for r in rows)
    assert [k for k, c in keys.items() if c > 1] == [], "duplicate keys"
    if partial:
        got = {r["k"]: (r["a"], r["b"], r["seq"]) for r in rows}
        assert got == replay_partial(ops[i] for i in order)
    else:
        assert {r["k"]: r["v"] for r in rows} == replay(ops[i] for i in order)
    # what a lost attempt wrote is gone: every delete file on disk is reachable
    on_disk = {str(p) for p in Path(table.location, "data").rglob("*-deletes.*")}
    assert on_disk <= {p.removeprefix("file:") for p in reachable_files(table)}
    return Counter(o for o in outcomes.values())


#: The filesystem and PostgreSQL rounds run in ``make test-long`` only (make test's
#: time budget): the rebase does not depend on the catalog, and the concurrent-writer
#: tests of tests/concurrency run every catalog's compare-and-swap in make test.
CATALOGS = [
    "sqlite",
    pytest.param("filesystem", marks=pytest.mark.long),
    pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.long]),
]


@pytest.mark.parametrize("kind", CATALOGS)
def test_eight_writers_upsert_and_delete_overlapping_keys(
    kind: str, catalog_factory: Callable[[str], Catalog], writer_pool: ProcessPoolExecutor
) -> None:
    """8 writers x 12 operations (upserts and deletes of overlapping keys), v3: DVs;
    25 operations per writer in ``make test-long``."""
    ops = 25 if LONG else 12
    run_round(catalog_factory(kind), writer_pool, "db.pk", 3, ops, seed=1)


@pytest.mark.spark
@pytest.mark.long  # two Spark sessions among the writers: minutes (make test-long)
def test_eight_writers_with_spark_writers_mixed_in(
    catalog_factory: Callable[[str], Catalog], writer_pool: ProcessPoolExecutor
) -> None:
    """Two of the eight writers upsert and delete with the Spark verbs (Spark jobs, a
    session each): a Spark upsert rebases as the pyarrow engine's does, so every
    operation still commits and the table equals the replay in commit order."""
    run_round(catalog_factory("sqlite"), writer_pool, "db.sp", 3, 8, seed=11, spark_writers=2)


def test_eight_writers_on_a_partial_update_table_with_a_sequence_field(
    catalog_factory: Callable[[str], Catalog], writer_pool: ProcessPoolExecutor
) -> None:
    """Rows merge with the concurrent commits' rows: a rebase merges again at the new
    head, so fields neither writer set survive and the higher sequence wins whichever
    commits last."""
    ops = 12 if LONG else 6
    run_round(catalog_factory("sqlite"), writer_pool, "db.pu", 3, ops, seed=7, partial=True)


@pytest.mark.property
# v3 rounds (DVs) run in make test through the eight-writer tests above; their longer
# form here is in ``make test-long``
@pytest.mark.parametrize("version", [2, pytest.param(3, marks=pytest.mark.long)])
def test_more_rounds_and_v2_position_deletes(
    version: int, catalog_factory: Callable[[str], Catalog], writer_pool: ProcessPoolExecutor
) -> None:
    catalog = catalog_factory("sqlite")
    for seed in range(2, 2 + examples(1, 5)):
        run_round(catalog, writer_pool, f"db.pk{version}_{seed}", version, 25 if LONG else 8, seed)
