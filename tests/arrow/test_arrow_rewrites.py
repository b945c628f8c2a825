"""Copy-on-write rewrites with pyarrow copy each surviving row exactly once, also when
planning splits a data file into several scan tasks (a file split into n tasks must
be rewritten once, not n times whole, which would multiply its rows).

Every table here has files of many row groups and a split size of one byte, so each
file is planned as one task per row group; results are compared as row multisets with
a Python model of the table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neve
from budget import examples
from neve.arrow.deletes import write_deletion_vector_puffin, write_position_delete_file
from neve.expressions import parse
from neve.planning.delete import plan_delete

ROWS = 3000
# copy-on-write: these tests are about rewrites (tables neve creates default to
# merge-on-read from v2)
COPY_ON_WRITE = {f"write.{op}.mode": "copy-on-write" for op in ("delete", "update", "merge")}
SPLIT_PROPS = {
    "write.parquet.row-group-size-bytes": "4096",
    "read.split.target-size": "1",
    **COPY_ON_WRITE,
}

Row = tuple[int, int, str]


def rows(start: int, n: int) -> list[Row]:
    return [(i, i % 4, f"value-{i:08d}-{i * 7919 % 10007}") for i in range(start, start + n)]


def arrow(data: Iterable[Row]) -> pa.Table:
    ids, grps, payloads = zip(*data, strict=True) if data else ((), (), ())
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "grp": pa.array(grps, pa.int32()),
            "payload": pa.array(payloads, pa.string()),
        }
    )


def content(t: neve.Table) -> Counter[Row]:
    out = t.refresh().scan().to_arrow()
    return Counter(
        zip(
            out.column("id").to_pylist(),
            out.column("grp").to_pylist(),
            out.column("payload").to_pylist(),
            strict=True,
        )
    )


def tasks_per_file(t: neve.Table) -> Counter[str]:
    return Counter(task.file.file_path for task in t.refresh().scan().plan_files())


@pytest.fixture(params=[2, 3], ids=["v2", "v3"])
def table(request: pytest.FixtureRequest, sqlite_catalog: neve.Catalog) -> neve.Table:
    t = sqlite_catalog.create_table(
        "db.t", arrow(rows(0, 1)).schema, properties=SPLIT_PROPS, format_version=request.param
    )
    t.append(arrow(rows(0, ROWS)))
    (n,) = tasks_per_file(t).values()
    assert n >= 6  # the premise: one file, planned as many tasks
    return t


def without(model: Iterable[Row], drop: object) -> Counter[Row]:
    return Counter(r for r in model if not drop(r))  # type: ignore[operator]


def test_delete_of_one_row_copies_the_others_once(table: neve.Table) -> None:
    table.delete("id = 5")
    assert content(table) == without(rows(0, ROWS), lambda r: r[0] == 5)


def test_delete_across_row_groups_then_again_on_the_rewritten_file(table: neve.Table) -> None:
    table.delete("grp = 1 or id > 2500")
    model = without(rows(0, ROWS), lambda r: r[1] == 1 or r[0] > 2500)
    assert content(table) == model
    # the rewritten file has many row groups too: rewriting it again copies once more
    assert max(tasks_per_file(table).values()) >= 4
    table.delete("id < 300")
    assert content(table) == without(model.elements(), lambda r: r[0] < 300)


def test_overwrite_by_filter_copies_each_row_once(table: neve.Table) -> None:
    new = rows(10_000, 7)
    table.overwrite(arrow(new), filter="id < 100 or id = 2999")
    model = without(rows(0, ROWS), lambda r: r[0] < 100 or r[0] == 2999) + Counter(new)
    assert content(table) == model


def test_dynamic_partition_overwrite_of_split_files(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table(
        "db.p", arrow(rows(0, 1)).schema, partition_by=["grp"], properties=SPLIT_PROPS
    )
    t.append(arrow(rows(0, 8000)))
    assert all(n >= 3 for n in tasks_per_file(t).values())
    new = [r for r in rows(20_000, 40) if r[1] in (1, 2)]
    t.dynamic_partition_overwrite(arrow(new))
    assert content(t) == without(rows(0, 8000), lambda r: r[1] in (1, 2)) + Counter(new)


def test_changes_in_a_transaction_copy_each_row_once(table: neve.Table) -> None:
    new = rows(50_000, 3)
    with table.transaction() as tx:
        tx.delete("id = 5")
        tx.overwrite(arrow(new), filter="id >= 2990")
    model = without(rows(0, ROWS), lambda r: r[0] == 5 or r[0] >= 2990) + Counter(new)
    assert content(table) == model


def test_merge_on_read_deletes_stay_applied_once(table: neve.Table) -> None:
    (f,) = {t.file.file_path: t.file for t in table.scan().plan_files()}.values()
    gone = [0, 1, 777, 1500, 2999]
    if table.format_version >= 3:
        dels = write_deletion_vector_puffin(
            table.io, f"{table.location}/data/dv.puffin", {f.file_path: gone}
        )
    else:
        dels = [
            write_position_delete_file(
                table.io, f"{table.location}/data/pos.parquet", {f.file_path: gone}
            )
        ]
    table.row_delta(delete_files=dels)
    table.delete("id = 1000")
    assert content(table) == without(rows(0, ROWS), lambda r: r[0] in {*gone, 1000})


def test_delete_planning_gives_one_whole_file_task_per_file(table: neve.Table) -> None:
    table.append(arrow(rows(ROWS, 500)))
    planned = table.scan().plan_files()
    files = list({t.file.file_path: t.file for t in planned}.values())
    assert len(planned) > len(files) == 2
    # each file holds one matching row among others: both are rewritten, once, whole
    plan = plan_delete(table.metadata, table.io, parse("id = 5 or id = 3005"))
    assert plan.remove == ()
    assert [t.file.file_path for t in plan.rewrite] == [f.file_path for f in files]
    assert all(t.start == 0 and t.length == t.file.file_size_in_bytes for t in plan.rewrite)
    assert all(t.data_sequence_number is not None for t in plan.rewrite)


def test_delete_planning_drops_files_the_filter_matches_entirely(table: neve.Table) -> None:
    table.append(arrow(rows(ROWS, 500)))
    plan = plan_delete(table.metadata, table.io, parse("id >= 3000"))
    assert plan.rewrite == ()
    assert [f.record_count for f in plan.remove] == [500]
    plan = plan_delete(table.metadata, table.io, parse("id > 10000"))
    assert (plan.remove, plan.rewrite) == ((), ())


# -- random layouts ----------------------------------------------------------------------

Change = tuple[str, int, int]  # (kind, a, b): delete or overwrite of "id < a or grp = b"


@pytest.mark.property
@settings(
    max_examples=examples(8, 300),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    n=st.integers(1, 1500),
    row_group_bytes=st.sampled_from([512, 2048, 8192, 1 << 20]),
    split=st.sampled_from([1, 3000, 20_000, 1 << 27]),
    version=st.sampled_from([1, 2, 3]),
    mode=st.sampled_from(["copy-on-write", "merge-on-read"]),
    changes=st.lists(
        st.tuples(
            st.sampled_from(["delete", "overwrite"]), st.integers(0, 1600), st.integers(-1, 3)
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_random_rewrites_copy_each_row_once_and_keep_lineage(
    tmp_path_factory: pytest.TempPathFactory,
    n: int,
    row_group_bytes: int,
    split: int,
    version: int,
    mode: str,
    changes: list[Change],
) -> None:
    """Rows equal a Python model after each change, for any row-group and split size;
    in v3 every surviving row keeps its ``_row_id`` and sequence number."""
    base = tmp_path_factory.mktemp("rw")
    cat = neve.connect(f"sqlite:///{base}/c.db", warehouse=str(base / "wh"))
    cat.create_namespace("db")
    props = {
        "write.parquet.row-group-size-bytes": str(row_group_bytes),
        "read.split.target-size": str(split),
        "write.delete.mode": mode,
    }
    t = cat.create_table("db.t", arrow(rows(0, 1)).schema, properties=props, format_version=version)
    model = rows(0, n)
    t.append(arrow(model))

    def lineage() -> dict[int, tuple[int, int]]:
        out = t.refresh().scan(columns=["id", "_row_id", "_last_updated_sequence_number"])
        got = out.to_arrow().to_pylist()
        return {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in got}

    before = lineage() if version >= 3 else {}
    next_id = 50_000
    for step, (kind, a, b) in enumerate(changes):
        flt = f"id < {a} or grp = {b}"
        model = [r for r in model if not (r[0] < a or r[1] == b)]
        if kind == "delete":
            t.refresh().delete(flt)
        else:
            new = rows(next_id, step + 1)
            next_id += 100
            t.refresh().overwrite(arrow(new), filter=flt)
            model += new
        assert content(t) == Counter(model)
    if version >= 3:
        after = lineage()
        assert {k: after[k] for k in before if k in after} == {
            k: v for k, v in before.items() if k in after
        }
        ids = [r for r, _ in after.values()]
        assert len(set(ids)) == len(ids) and None not in ids
