"""v3 row lineage with pyarrow: ``_row_id`` and ``_last_updated_sequence_number`` are
readable metadata columns, inherited from the data file (``first_row_id`` + position,
data sequence number) unless stored; rows a copy-on-write delete or overwrite copies
keep both values, stored in the new files; new rows get fresh ids and the sequence
number of the commit that added them."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neve
from neve.arrow.deletes import write_deletion_vector_puffin
from neve.arrow.schema import field_id
from neve.errors import SchemaError

ROW_ID = "_row_id"
SEQ = "_last_updated_sequence_number"
ROW_ID_FIELD = 2147483540
SEQ_FIELD = 2147483539
COPY_ON_WRITE = {f"write.{op}.mode": "copy-on-write" for op in ("delete", "update", "merge")}
SPLIT_PROPS = {
    "write.parquet.row-group-size-bytes": "4096",
    "read.split.target-size": "1",
    **COPY_ON_WRITE,
}

Lineage = dict[int, tuple[int | None, int | None]]  # id -> (_row_id, seq)


def rows(start: int, n: int) -> pa.Table:
    ids = range(start, start + n)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "grp": pa.array([i % 4 for i in ids], pa.int32()),
            "payload": pa.array([f"value-{i:08d}-{i * 7919 % 10007}" for i in ids]),
        }
    )


def lineage(t: neve.Table, **scan: object) -> Lineage:
    out = t.scan(columns=["id", ROW_ID, SEQ], **scan).to_arrow()  # type: ignore[arg-type]
    assert out.column_names == ["id", ROW_ID, SEQ]
    ids = out.column("id").to_pylist()
    assert len(set(ids)) == len(ids)
    return dict(
        zip(
            ids,
            zip(out.column(ROW_ID).to_pylist(), out.column(SEQ).to_pylist(), strict=True),
            strict=True,
        )
    )


def assert_unique_ids(found: Lineage) -> None:
    ids = [r for r, _ in found.values()]
    assert None not in ids
    assert len(set(ids)) == len(ids)


def stored_lineage(t: neve.Table) -> dict[str, tuple[list[int | None], list[int | None]] | None]:
    """Per live data file: the lineage columns stored in it (by field id), or None."""
    out: dict[str, tuple[list[int | None], list[int | None]] | None] = {}
    for task in t.refresh().scan().plan_files():
        path = task.file.file_path
        if path in out:
            continue
        schema = pq.read_schema(path)
        by_id = {field_id(f): f.name for f in schema}
        if ROW_ID_FIELD not in by_id and SEQ_FIELD not in by_id:
            out[path] = None
            continue
        data = pq.read_table(path, columns=[by_id[ROW_ID_FIELD], by_id[SEQ_FIELD]])
        out[path] = (data.column(0).to_pylist(), data.column(1).to_pylist())
    return out


def seq(t: neve.Table) -> int:
    snap = t.refresh().current_snapshot()
    assert snap is not None
    return snap.sequence_number


def test_lineage_columns_are_inherited_from_the_files(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", rows(0, 1).schema, format_version=3)
    t.append(rows(0, 30))
    t.append(rows(30, 20))
    # one file per append, rows in order: ids count from next-row-id 0
    assert lineage(t) == {i: (i, 1 if i < 30 else 2) for i in range(50)}
    assert t.refresh().metadata.next_row_id == 50
    # appends store no lineage columns: every value is inherited
    assert set(stored_lineage(t).values()) == {None}


def test_select_star_leaves_the_lineage_columns_out(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", rows(0, 1).schema, format_version=3)
    t.append(rows(0, 5))
    assert t.scan().to_arrow().column_names == ["id", "grp", "payload"]
    out = t.scan(columns=[SEQ, "grp"], filter="id >= 3").to_arrow()
    assert out.column_names == [SEQ, "grp"]
    assert out.column(SEQ).to_pylist() == [1, 1]
    assert out.schema.field(SEQ).type == pa.int64()


@pytest.mark.parametrize("version", [1, 2])
def test_lineage_columns_on_older_tables_are_a_schema_error(
    sqlite_catalog: neve.Catalog, version: int
) -> None:
    t = sqlite_catalog.create_table("db.t", rows(0, 1).schema, format_version=version)
    t.append(rows(0, 5))
    with pytest.raises(SchemaError, match="v3"):
        t.scan(columns=["id", ROW_ID]).to_arrow()
    with pytest.raises(SchemaError, match="v3"):
        t.scan(columns=[SEQ]).to_arrow()


@pytest.mark.parametrize("partition_by", [None, ["grp"]], ids=["unpartitioned", "by-grp"])
def test_copy_on_write_delete_keeps_lineage(
    sqlite_catalog: neve.Catalog, partition_by: list[str] | None
) -> None:
    t = sqlite_catalog.create_table(
        "db.t",
        rows(0, 1).schema,
        partition_by=partition_by,
        properties=SPLIT_PROPS,
        format_version=3,
    )
    t.append(rows(0, 2000))
    t.append(rows(2000, 300))
    before = lineage(t)
    assert_unique_ids(before)

    t.delete("id < 40 or (id > 1500 and id < 2100)")
    after = lineage(t.refresh())
    assert after == {k: v for k, v in before.items() if not (k < 40 or 1500 < k < 2100)}
    # rewritten files store the original values, never null
    stored = [s for s in stored_lineage(t).values() if s is not None]
    assert stored
    for ids, seqs in stored:
        assert None not in ids and None not in seqs

    # and once more: ids stay stable across rewrites of rewritten files
    t.delete("id = 1000")
    assert lineage(t.refresh()) == {k: v for k, v in after.items() if k != 1000}
    # a time-travel read of the older snapshot sees the same ids
    assert lineage(t, snapshot_id=t.snapshots()[-2].snapshot_id) == after


def test_overwrite_keeps_lineage_and_new_rows_get_fresh_ids(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table(
        "db.t", rows(0, 1).schema, properties=SPLIT_PROPS, format_version=3
    )
    t.append(rows(0, 1000))
    before = lineage(t)
    next_id = t.refresh().metadata.next_row_id
    assert next_id is not None

    t.overwrite(rows(5000, 25), filter="id >= 900 or id = 7")
    after = lineage(t.refresh())
    kept = {k: v for k, v in before.items() if not (k >= 900 or k == 7)}
    assert {k: after[k] for k in kept} == kept
    new = {k: v for k, v in after.items() if k >= 5000}
    assert sorted(new) == list(range(5000, 5025))
    assert all(r is not None and r >= next_id for r, _ in new.values())
    assert {s for _, s in new.values()} == {seq(t)}
    assert_unique_ids(after)
    # the new rows' file stores no lineage (its rows inherit); the rewritten one does
    stored = list(stored_lineage(t).values())
    assert stored.count(None) == 1 and len(stored) == 2

    t.append(rows(9000, 5))
    appended = {k: v for k, v in lineage(t.refresh()).items() if k >= 9000}
    assert all(r is not None and r >= next_id + 25 for r, _ in appended.values())
    assert_unique_ids(lineage(t))


def test_changes_in_one_transaction_keep_lineage(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table(
        "db.t", rows(0, 1).schema, properties=SPLIT_PROPS, format_version=3
    )
    t.append(rows(0, 500))
    before = lineage(t)
    with t.transaction() as tx:
        tx.delete("id = 3")
        tx.overwrite(rows(700, 2), filter="id = 400")
    after = lineage(t.refresh())
    assert {k: v for k, v in after.items() if k < 700} == {
        k: v for k, v in before.items() if k not in (3, 400)
    }
    assert_unique_ids(after)


def test_deleted_rows_do_not_shift_the_ids_of_the_others(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", rows(0, 1).schema, format_version=3)
    t.append(rows(0, 100))
    (task,) = t.scan().plan_files()
    dv = write_deletion_vector_puffin(
        t.io, f"{t.location}/data/dv.puffin", {task.file.file_path: [0, 10, 11, 50]}
    )
    t.row_delta(delete_files=dv)
    assert lineage(t.refresh()) == {i: (i, 1) for i in range(100) if i not in (0, 10, 11, 50)}
    # a copy-on-write delete over the deletion vector keeps them too
    t.delete("id = 20")
    assert lineage(t.refresh()) == {i: (i, 1) for i in range(100) if i not in (0, 10, 11, 20, 50)}


def test_rows_of_a_table_upgraded_to_v3(sqlite_catalog: neve.Catalog) -> None:
    t = sqlite_catalog.create_table("db.t", rows(0, 1).schema, format_version=2)
    t.append(rows(0, 10))
    t.upgrade_format_version(3)
    t = t.refresh()
    # snapshots from before the upgrade assign no ids (spec "Row Lineage for
    # Upgraded Tables"); sequence numbers are inherited as always
    assert lineage(t) == {i: (None, 1) for i in range(10)}
    t.append(rows(10, 5))
    after = lineage(t.refresh())
    assert {s for _, s in after.values()} == {1, 2}
    assert_unique_ids(after)  # the next snapshot gave the old file ids too
    t.delete("id = 4")
    assert lineage(t.refresh()) == {k: v for k, v in after.items() if k != 4}


def test_a_table_column_named_like_a_lineage_column(sqlite_catalog: neve.Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("_ROW_ID", pa.string())])
    t = sqlite_catalog.create_table("db.t", schema, format_version=3, properties=COPY_ON_WRITE)
    data = pa.table({"id": pa.array(range(6), pa.int64()), "_ROW_ID": [f"r{i}" for i in range(6)]})
    t.append(data)
    before = t.scan(columns=["id", SEQ]).to_arrow()
    t.delete("id = 2")
    t = t.refresh()
    # the table's column keeps its name and values; lineage is stored beside it
    out = t.scan().to_arrow().sort_by("id")
    assert out.column_names == ["id", "_ROW_ID"]
    assert out.to_pylist() == [r for r in data.to_pylist() if r["id"] != 2]
    assert t.scan(columns=["id", SEQ]).to_arrow().sort_by("id").to_pylist() == [
        r for r in before.sort_by("id").to_pylist() if r["id"] != 2
    ]
    stored = [s for s in stored_lineage(t).values() if s is not None]
    assert len(stored) == 1 and stored[0][0] == [0, 1, 3, 4, 5]
