"""Planning reads, for the metrics of the files it judges on arrays, only the fields
the partitions leave undecided.

For a filter of predicates joined by AND, a predicate that a file's partition proves
for all of its rows (``ts`` within a day, for a file of that day) cannot rule the file
out by its metrics, which agree with the partition: planning leaves those metrics
unread (``scan._undecided``). The planned tasks must be exactly those of the plan
that judges every predicate on full files (fastavro's path), for any filter (ANDs,
ORs, ranges that cut a day, predicates of other columns), files of two partition
specs, files of the null partition, and delete files.
"""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neve
from budget import examples
from manifest_decoder import manifest_decoder
from neve.expressions import (
    and_,
    greater_than,
    greater_than_or_equal,
    is_null,
    less_than,
    not_null,
    or_,
)
from neve.expressions.expressions import BooleanExpression
from neve.planning import manifest_batches
from neve.spec.manifest import DataFile, DataFileContent, FileFormat
from neve.table.table import Table

pytestmark = pytest.mark.property

SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us")), ("x", pa.float64())])
HOUR = 3_600_000_000
DAY = 24 * HOUR
DAYS = 3
FIRST_DAY = 20_000  # (time projections are conservative about the epoch's neighbourhood)
PER_DAY = 20  # files per day and spec: more than planning decodes without metrics first


def _file(
    table: Table, name: str, spec_id: int, partition: tuple[Any, ...], ts: tuple[int, int] | None
) -> DataFile:
    """A data file of a few rows whose metrics agree with its partition: ``ts``
    bounds inside it (None: the null partition, every ts null); ids and xs spread."""
    k = int(name.rsplit("-", 1)[-1])
    count = 1 + k % 4
    lower = {1: struct.pack("<q", k * 7 % 50), 3: struct.pack("<d", (k % 9) - 4.5)}
    upper = {1: struct.pack("<q", k * 7 % 50 + k % 6), 3: struct.pack("<d", (k % 9) - 2.0)}
    if ts is not None:
        lower[2], upper[2] = struct.pack("<q", ts[0]), struct.pack("<q", ts[1])
    return DataFile(
        file_path=f"{table.location}/data/{name}.parquet",
        file_format=FileFormat.PARQUET,
        partition=partition,
        record_count=count,
        file_size_in_bytes=100 + k,
        value_counts={1: count, 2: count, 3: count},
        null_value_counts={1: 0, 2: 0 if ts is not None else count, 3: k % 2},
        nan_value_counts={3: 0},
        lower_bounds=lower,
        upper_bounds=upper,
        spec_id=spec_id,
    )


def _table(tmp: str) -> Table:
    """Files of three days under day(ts) (spec 0, a manifest per day) and a few of the
    null partition, then files under hour(ts) (spec 1, one manifest), and a position
    delete file in the second day."""
    cat = neve.connect(f"sqlite:///{tmp}/c.db", warehouse=f"{tmp}/wh")
    cat.create_namespace("db")
    table = cat.create_table("db.t", SCHEMA, partition_by=["day(ts)"])
    for day in range(FIRST_DAY, FIRST_DAY + DAYS):  # a manifest per day
        with table.transaction() as tx:
            tx.add_files(
                [
                    _file(table, f"d-{day * PER_DAY + i}", 0, (day,), (start, start + HOUR))
                    for i in range(PER_DAY)
                    for start in [day * DAY + i * HOUR]
                ]
            )
    with table.transaction() as tx:
        tx.add_files([_file(table, f"n-{k}", 0, (None,), None) for k in range(3)])
    with table.update_spec() as u:
        u.remove_field("ts_day").add_field("ts", "hour")
    later = []
    for day in range(FIRST_DAY, FIRST_DAY + DAYS):
        for i in range(PER_DAY):
            hour = day * 24 + i
            start = hour * HOUR + 60_000_000
            later.append(_file(table, f"h-{day * PER_DAY + i}", 1, (hour,), (start, start + 1)))
    with table.transaction() as tx:  # one manifest of many partitions
        tx.add_files(later)
    deletes = DataFile(
        file_path=f"{table.location}/data/pos-0.parquet",
        file_format=FileFormat.PARQUET,
        partition=(FIRST_DAY + 1,),
        record_count=1,
        file_size_in_bytes=10,
        content=DataFileContent.POSITION_DELETES,
        spec_id=0,
    )
    table.row_delta([], [deletes])
    return table


def _plan(table: Table, row_filter: BooleanExpression, decoder: str) -> list[tuple[Any, ...]]:
    with manifest_decoder(decoder):
        tasks = table.scan(filter=row_filter).plan_files()
    return sorted(
        (t.file.file_path, str(t.residual), sorted(d.file_path for d in t.delete_files))
        for t in tasks
    )


@pytest.fixture(scope="module")
def table() -> Iterator[Table]:
    with tempfile.TemporaryDirectory() as tmp:
        yield _table(tmp)


def _fields_read(monkeypatch: pytest.MonkeyPatch) -> list[list[list[int]]]:
    """The field ids of each call of ``metric_arrays_together``, per part."""
    calls: list[list[list[int]]] = []
    real = manifest_batches.metric_arrays_together

    def spy(parts: Any, field_ids: Sequence[Any]) -> Any:
        calls.append([sorted(f) for f in field_ids])
        return real(parts, field_ids)

    monkeypatch.setattr(manifest_batches, "metric_arrays_together", spy)
    return calls


def test_a_day_of_a_day_partitioned_table_reads_the_metrics_of_the_other_columns(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _fields_read(monkeypatch)
    day = (FIRST_DAY + 1) * DAY
    whole_day = and_(
        and_(greater_than_or_equal("ts", day), less_than("ts", day + DAY)), less_than("id", 30)
    )
    planned = _plan(table, whole_day, "columnar")
    assert calls and all(f == [1] for call in calls for f in call)  # ts decided
    calls.clear()
    assert planned == _plan(table, whole_day, "fastavro")
    assert any(p[2] for p in planned)  # the delete file goes with the day's files
    # a range that cuts the day: the partitions decide ts for some hours only
    cut = and_(
        and_(greater_than_or_equal("ts", day + 5 * HOUR), less_than("ts", day + DAY)),
        less_than("id", 30),
    )
    assert _plan(table, cut, "columnar") == _plan(table, cut, "fastavro")
    assert any(f == [1, 2] for call in calls for f in call)


_HOURS = st.integers(FIRST_DAY * 24 - 1, (FIRST_DAY + DAYS) * 24 + 1)
_LEAVES = [
    _HOURS.map(lambda h: greater_than_or_equal("ts", h * HOUR)),
    _HOURS.map(lambda h: less_than("ts", h * HOUR + 30_000_000)),
    st.integers(FIRST_DAY, FIRST_DAY + DAYS).map(lambda d: less_than("ts", d * DAY)),
    st.integers(-5, 60).map(lambda v: less_than("id", v)),
    st.integers(-5, 60).map(lambda v: greater_than_or_equal("id", v)),
    st.floats(-6, 6).map(lambda v: greater_than("x", v)),
    st.sampled_from([not_null("ts"), is_null("ts"), is_null("x")]),
]
_FILTERS: st.SearchStrategy[BooleanExpression] = st.recursive(
    st.one_of(_LEAVES),
    lambda inner: st.one_of(
        st.tuples(inner, inner).map(lambda ab: and_(*ab)),
        st.tuples(inner, inner).map(lambda ab: or_(*ab)),
    ),
    max_leaves=4,
)


@settings(
    max_examples=examples(40, 400),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(row_filter=_FILTERS)
def test_planned_tasks_are_those_of_full_files(table: Table, row_filter: BooleanExpression) -> None:
    assert _plan(table, row_filter, "columnar") == _plan(table, row_filter, "fastavro")
