"""Differential scan tests through Spark.

The same random tables and oracle as :mod:`differential.test_scan_arrow`, restricted
to the types Spark holds: rows of spec A are written with pyarrow, rows of spec B with
Spark (so files written by parquet-mr are read too). ``neve.spark.read`` with a filter
returns exactly the oracle's rows, files the planner leaves out hold none of them, and
``neve.spark.delete`` on a copy of the table leaves exactly the rows it does not match.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from budget import examples
from differential.model import Filter, filters, matches, to_neve
from differential.tables import (
    Case,
    arrow_table,
    cases,
    create,
    evolve,
    expected_by_id,
    file_ids,
    rows_by_id,
    schema_of,
)
from differential.test_scan_arrow import decimal_truncate_overflow
from neve.catalog import Catalog
from neve.errors import NeveError, ValidationError
from neve.spark import delete, read, to_spark_schema, write
from neve.table.table import Table

pytestmark = [pytest.mark.spark, pytest.mark.property]

SPARK_COLUMNS = ("bo", "i", "l", "f", "d", "dec", "dt", "ts", "tz", "s", "bi", "fx")
FILTERS_PER_TABLE = 4


def write_both(spark: Any, catalog: Catalog, case: Case) -> Table:
    table = create(catalog, case)
    try:
        if case.rows_a:
            table.append(arrow_table(case.cols, case.rows_a))
        table = evolve(table.refresh(), case)
        if case.rows_b:
            schema = to_spark_schema(schema_of(case.cols))
            df = spark.createDataFrame(arrow_table(case.cols, case.rows_b), schema=schema)
            write(df, table)
    except ValidationError as exc:
        assume(not decimal_truncate_overflow(exc))
        raise
    return table.refresh()


def ids(df: Any) -> list[int]:
    return [row[0] for row in df.collect()]


def check_filter(
    spark: Any, table: Table, case: Case, f: Filter, files: dict[str, list[int]]
) -> None:
    expr = to_neve(f)
    expected = matches(f, case.all_rows)
    got = ids(read(spark, table, filter=expr, columns=["id"]))
    twice = [i for i, n in Counter(got).items() if n > 1]
    assert not twice, f"{f}: rows read more than once: {twice}"
    assert set(got) == expected, (
        f"{f} ({expr}): missing {sorted(expected - set(got))}, extra {sorted(set(got) - expected)}"
    )
    kept = {t.file.file_path for t in table.scan(filter=expr).plan_files()}
    for path, held in files.items():
        if path not in kept:
            assert not expected.intersection(held), f"{f}: pruned {path} holds matching rows"


def check_delete(spark: Any, catalog: Catalog, table: Table, case: Case, f: Filter) -> None:
    expected = matches(f, case.all_rows)
    copy_name = f"{'.'.join(table.name) if isinstance(table.name, tuple) else table.name}_copy"
    copy = catalog.register_table(copy_name, table.metadata_location)
    all_ids = {r["id"] for r in case.all_rows}
    try:
        try:
            delete(spark, copy, to_neve(f))
        except ValidationError as exc:
            # rewritten rows go to the current spec, where such a decimal cannot be
            # stored: the delete is refused and the table is left as it was
            if not decimal_truncate_overflow(exc):
                raise
            expected = set()
        left = copy.refresh().scan(columns=["id"]).to_arrow().column("id").to_pylist()
        assert Counter(left) == Counter(all_ids - expected), (
            f"delete {f}: kept matching {sorted(expected & set(left))}, "
            f"lost {sorted((all_ids - expected) - set(left))}"
        )
    finally:
        catalog.drop_table(copy_name)


@settings(
    max_examples=examples(3, 40),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=cases(max_rows=10, versions=(1, 2), restrict=SPARK_COLUMNS), data=st.data())
def test_spark_scan_matches_oracle(
    spark: Any, diff_catalog: Catalog, case: Case, data: st.DataObject
) -> None:
    note(case.describe())
    table = write_both(spark, diff_catalog, case)
    everything = table.scan().to_arrow()
    assert rows_by_id(case.cols, everything) == expected_by_id(case.cols, case.all_rows)
    files = {path: file_ids(path) for path in {t.file.file_path for t in table.scan().plan_files()}}
    chosen = data.draw(
        st.lists(
            filters(case.cols, case.all_rows),
            min_size=FILTERS_PER_TABLE,
            max_size=FILTERS_PER_TABLE,
        ),
        label="filters",
    )
    for f in chosen:
        try:
            check_filter(spark, table, case, f, files)
        except NeveError as exc:
            raise AssertionError(f"{f}: {exc}") from exc
    check_delete(spark, diff_catalog, table, case, chosen[0])
