"""Eight writer processes on one table, on SQLite, PostgreSQL and the filesystem catalog,
and on the filesystem catalog on s3 (the test server): appends, deletes and overwrites
on disjoint and overlapping key ranges. Afterwards no acknowledged append is lost, no
row is duplicated, no append failed, every delete or overwrite either committed or
failed without a trace, and the table's rows equal a replay of the committed operations
in commit order. On s3 the version files also form one chain."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import neve
from budget import LONG, examples
from concurrency.workers import (
    SCHEMA,
    TABLE_PROPERTIES,
    Op,
    committed_op_ids,
    plan_ops,
    process_context,
    replay,
    run_writer,
    table_rows,
    warm_up,
)
from neve.catalog import Catalog
from neve.io.fileio import FileIO
from neve.spec.metadata_json import metadata_from_bytes
from neve.table.maintenance import reachable_files
from s3server import S3Warehouse

WRITERS = 8


@pytest.fixture(scope="module")
def writer_pool() -> Iterator[ProcessPoolExecutor]:
    """Eight writer processes for the module."""
    with ProcessPoolExecutor(max_workers=WRITERS, mp_context=process_context()) as pool:
        pids = set(pool.map(warm_up, range(WRITERS)))
        assert os.getpid() not in pids
        yield pool


def run_round(
    catalog: Catalog,
    pool: ProcessPoolExecutor,
    name: str,
    appends: int,
    others: int,
    seed: int,
) -> dict[str, object]:
    """Run 8 writers concurrently on a new table ``name`` and check the outcome."""
    ns = name.split(".")[0]
    catalog.create_namespace_if_not_exists(ns)
    catalog.create_table(name, SCHEMA, partition_by=["grp"], properties=TABLE_PROPERTIES)
    plans = [plan_ops(w, appends, others, seed, prefix=f"s{seed}-") for w in range(WRITERS)]
    ops: dict[str, Op] = {op.op_id: op for plan in plans for op in plan}
    start_at = time.time() + 0.5
    futures = [pool.submit(run_writer, catalog, name, plan, start_at) for plan in plans]
    outcomes = dict(pair for f in futures for pair in f.result(timeout=600))
    assert set(outcomes) == set(ops)

    errors = {i: o for i, o in outcomes.items() if o.startswith("error")}
    assert not errors, errors
    failed_appends = {i: o for i, o in outcomes.items() if ops[i].kind == "append" and o != "ok"}
    assert not failed_appends, failed_appends

    table = catalog.load_table(name)
    order = committed_op_ids(table)
    assert len(order) == len(set(order)), "an operation committed twice"
    acknowledged = {i for i, o in outcomes.items() if o == "ok"}
    # every acknowledged operation committed, and nothing else did
    assert set(order) == acknowledged
    # the rows are exactly a replay of the committed operations in commit order
    actual = table_rows(table)
    assert all(c == 1 for c in actual.values()), "duplicated rows"
    assert actual == replay(ops[i] for i in order)
    # no failed operation left a data file behind
    on_disk = {str(p) for p in Path(table.location, "data").rglob("*.parquet")}
    assert on_disk <= {p.removeprefix("file:") for p in reachable_files(table)}
    return {
        "commits": len(order),
        "outcomes": Counter(outcomes.values()),
        "rows": sum(actual.values()),
    }


CATALOGS = ["sqlite", "filesystem", pytest.param("postgres", marks=pytest.mark.postgres)]
#: (appends, deletes + overwrites) per writer in ``make test``
SHORT = {"sqlite": (25, 3), "filesystem": (12, 3), "postgres": (6, 2)}


@pytest.mark.parametrize("kind", CATALOGS)
def test_eight_writers(
    kind: str,
    catalog_factory: Callable[[str], Catalog],
    writer_pool: ProcessPoolExecutor,
) -> None:
    catalog = catalog_factory(kind)
    appends, others = SHORT[kind]
    stats = run_round(catalog, writer_pool, "db.t", appends, others, seed=1)
    assert stats["commits"] >= WRITERS * appends


@pytest.mark.property
@pytest.mark.parametrize("kind", CATALOGS)
def test_eight_writers_long(
    kind: str,
    catalog_factory: Callable[[str], Catalog],
    writer_pool: ProcessPoolExecutor,
) -> None:
    """Rounds with other seeds and as many deletes and overwrites as appends: one
    small round in ``make test``, six of 8 x 20 operations in ``make test-long``."""
    catalog = catalog_factory(kind)
    ops = 10 if LONG else 2
    for seed in range(2, 2 + examples(1, 6)):
        run_round(catalog, writer_pool, f"db.t{seed}", ops, ops, seed=seed)


def _check_chain(io: FileIO, location: str) -> int:
    """The version files of the table at ``location`` form one chain; returns N."""
    names = [p.rsplit("/", 1)[-1] for p in io.list_files(f"{location}/metadata")]
    versions = sorted(
        int(n[1:].split(".")[0])
        for n in names
        if n.endswith(".metadata.json") and n.startswith("v")
    )
    assert versions == list(range(1, len(versions) + 1)), "a gap in the versions"
    previous = None
    for v in versions:
        path = f"{location}/metadata/v{v}.metadata.json"
        md = metadata_from_bytes(io.read_bytes(path))
        if previous is not None:
            prev_path, prev = previous
            assert md.metadata_log[-1].metadata_file == prev_path
            assert {s.snapshot_id for s in prev.snapshots} <= {s.snapshot_id for s in md.snapshots}
            head = md.snapshot_by_id(md.current_snapshot_id) if md.current_snapshot_id else None
            if head is not None and head.snapshot_id != prev.current_snapshot_id:
                assert head.parent_snapshot_id == prev.current_snapshot_id
        previous = (path, md)
    return len(versions)


@pytest.mark.property
def test_eight_writers_on_s3(s3_warehouse: S3Warehouse, writer_pool: ProcessPoolExecutor) -> None:
    commits = examples(8, 25)
    others = 5 if LONG else 0  # deletes and overwrites too in make test-long
    cat = neve.connect(s3_warehouse.uri, **s3_warehouse.properties)
    cat.create_namespace("db")
    cat.create_table("db.t", SCHEMA, partition_by=["grp"], properties=TABLE_PROPERTIES)
    plans = [plan_ops(w, commits, others, seed=3, prefix="s3-") for w in range(WRITERS)]
    ops: dict[str, Op] = {op.op_id: op for plan in plans for op in plan}
    start_at = time.time() + 0.5
    futures = [writer_pool.submit(run_writer, cat, "db.t", plan, start_at) for plan in plans]
    outcomes = dict(pair for f in futures for pair in f.result(timeout=900))
    assert set(outcomes) == set(ops)
    errors = {i: o for i, o in outcomes.items() if o.startswith("error")}
    assert not errors, errors
    lost = {i: o for i, o in outcomes.items() if ops[i].kind == "append" and o != "ok"}
    assert not lost, lost

    table = cat.load_table("db.t")
    order = committed_op_ids(table)
    assert len(order) == len(set(order)), "an operation committed twice"
    assert set(order) == {i for i, o in outcomes.items() if o == "ok"}
    rows = table_rows(table)
    assert all(c == 1 for c in rows.values()), "duplicated rows"
    assert rows == replay(ops[i] for i in order)
    versions = _check_chain(FileIO(s3_warehouse.properties), table.location)
    assert versions == 1 + len(order)  # the creation, then one version per commit
    # the race was real: writers lost puts and retried
    lost_puts = [
        e
        for e in s3_warehouse.log()
        if e["op"] == "PUT" and e["if_none_match"] and e["status"] == 412
    ]
    assert lost_puts
