"""Random access against a full scan (issue 26): on random v3 (and v2) tables of every
column type (edge values, nulls), written with or without a page index and with tiny
pages, after merge-on-read deletes (deletion vectors; position delete files in v2),
updates (rows copied with their ``_row_id`` stored) and compaction (every row copied),
``table.take(row_ids)`` returns
the rows a full scan holds under those ids, in the order asked; unknown or deleted ids
raise NoSuchRowError or are skipped; ``take_rows(positions)`` returns the scan's rows
at those places; ``live_row_count`` is the scan's row count."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from budget import examples
from differential.tables import Case, arrow_table, cases, create, evolve, rows_by_id
from differential.test_scan_arrow import decimal_truncate_overflow
from neve.catalog import Catalog
from neve.errors import NoSuchRowError, ValidationError
from neve.table.table import Table

pytestmark = pytest.mark.property

LAYOUTS = (
    {},
    {"write.parquet.layout": "random-access"},
    {"write.parquet.page-index.enabled": "true", "write.parquet.page-row-limit": "2"},
    {"write.parquet.page-index.enabled": "true", "write.parquet.page-size-bytes": "64"},
)


def _build(catalog: Catalog, case: Case, data: st.DataObject) -> Table | None:
    layout = data.draw(st.sampled_from(LAYOUTS), label="layout")
    props = {**case.properties, **layout, "write.delete.mode": "merge-on-read"}
    props["write.update.mode"] = data.draw(
        st.sampled_from(["merge-on-read", "copy-on-write"]), label="update mode"
    )
    case = Case(case.version, case.cols, case.spec_a, case.spec_b, case.rows_a, case.rows_b, props)
    note(case.describe())
    table = create(catalog, case)
    try:
        if case.rows_a:
            table.append(arrow_table(case.cols, case.rows_a))
        table = evolve(table.refresh(), case)
        if case.rows_b:
            table.append(arrow_table(case.cols, case.rows_b))
    except ValidationError:
        return None  # a value the partition transform cannot store (test_scan_arrow)
    n = len(case.all_rows)
    table = table.refresh()
    for step in data.draw(
        st.lists(st.sampled_from(["delete", "update", "compact"]), max_size=3), label="steps"
    ):
        lo = data.draw(st.integers(0, max(n, 1)), label=f"{step} from")
        hi = data.draw(st.integers(lo, max(n, 1)), label=f"{step} to")
        where = f"id >= {lo} and id < {hi}"
        before = table.metadata.current_snapshot_id
        try:
            if step == "delete":
                table.delete(where)
            elif step == "update" and case.cols:
                table.update({case.cols[0].name: None}, where)
            elif step == "compact":
                table.maintenance.rewrite_data_files(options={"rewrite-all": "true"})
        except ValidationError as exc:
            # rows of an older spec rewritten into spec B, whose truncated decimal does
            # not fit its type: refused, and the table stays as it was
            if not decimal_truncate_overflow(exc):
                raise
            assert table.refresh().metadata.current_snapshot_id == before
        table = table.refresh()
    return table


def _ids(values: list[Any]) -> list[int]:
    return [int(v) for v in values]


@settings(
    max_examples=examples(12, 500),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=cases(max_rows=40, versions=(2, 3, 3)), data=st.data())
def test_take_equals_the_scan(diff_catalog: Catalog, case: Case, data: st.DataObject) -> None:
    table = _build(diff_catalog, case, data)
    if table is None:
        return
    names = ["id", *(c.name for c in case.cols)]
    if table.metadata.format_version < 3:  # position delete files, no row ids
        full = table.scan(columns=names).to_arrow()
        assert table.live_row_count() == full.num_rows
        _check_places(table, full, names, case, data)
        with pytest.raises(ValidationError):
            table.take([0])
        return
    full = table.scan(columns=[*names, "_row_id"]).to_arrow()
    by_row_id = {rid: i for i, rid in enumerate(full.column("_row_id").to_pylist())}
    assert len(by_row_id) == full.num_rows  # live row ids are unique
    assert table.live_row_count() == full.num_rows

    # ids of live rows, deleted rows and ids never assigned, in a random order
    next_id = table.metadata.next_row_id or 0
    pool = st.integers(0, next_id + 3)
    asked = data.draw(st.lists(pool, max_size=12), label="row ids")
    live = [i for i in asked if i in by_row_id]
    got = table.take(live, columns=[*names, "_row_id"])
    assert _ids(got.column("_row_id").to_pylist()) == live
    expected = full.take(pa.array([by_row_id[i] for i in live], pa.int64()))
    assert rows_by_id(case.cols, got) == rows_by_id(case.cols, expected)
    assert got.column("id").to_pylist() == expected.column("id").to_pylist()
    assert got.schema == expected.schema
    if len(live) < len(asked):
        with pytest.raises(NoSuchRowError):
            table.take(asked)
        skipped = table.take(asked, columns=["id"], missing="skip")
        assert skipped.column("id").to_pylist() == expected.column("id").to_pylist()

    _check_places(table, full, names, case, data)


def _check_places(
    table: Table, full: pa.Table, names: list[str], case: Case, data: st.DataObject
) -> None:
    """The i-th live rows, in scan order."""
    if full.num_rows:
        places = data.draw(
            st.lists(st.integers(0, full.num_rows - 1), max_size=12), label="positions"
        )
        rows = table.take_rows(places, columns=names)
        assert rows.column("id").to_pylist() == [full.column("id")[p].as_py() for p in places]
        assert rows_by_id(case.cols, rows) == rows_by_id(
            case.cols, full.take(pa.array(places, pa.int64()))
        )
    with pytest.raises(NoSuchRowError):
        table.take_rows([full.num_rows])
