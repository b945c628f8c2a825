"""Merge engines on primary-key tables (docs/MERGE-ENGINES.md): random batches with
repeated keys, nulls, out-of-order sequence values and row kinds, upserted one after
another; after every commit the table equals the reference model of Paimon's documented
semantics (tests/merge_engine_model.py), and a batch the model refuses is refused with a
typed error and leaves the table as it was. Then the properties' checks, the merge
paths the engines do not decide, and the row-kind column's rules."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import neve
from budget import examples
from merge_engine_model import SCHEMA, Config, Refused, apply_batch, batches, configs, to_arrow
from neve import MergeEngineError, SqlCatalog, ValidationError

ENGINES = ["deduplicate", "partial-update", "aggregation", "first-row"]


def sorted_rows(table: neve.Table) -> list[dict[str, object]]:
    return sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["k"])


def run_against_model(
    table: neve.Table, config: Config, drawn: list[list[dict[str, object]]]
) -> None:
    state: dict[int, dict[str, object]] = {}
    for i, batch in enumerate(drawn):
        note(f"batch {i}: {batch}")
        try:
            expected = apply_batch(config, state, batch)
        except Refused:
            before = table.refresh().metadata_location
            with pytest.raises(MergeEngineError):
                table.upsert(to_arrow(batch, config))
            assert table.refresh().metadata_location == before
            continue
        table.upsert(to_arrow(batch, config))
        state = expected
        assert sorted_rows(table.refresh()) == [state[k] for k in sorted(state)]


@pytest.mark.property
@pytest.mark.parametrize("engine", ENGINES)
def test_engine_equals_the_model(engine: str) -> None:
    @settings(
        max_examples=examples(12, 300),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data(), version=st.sampled_from([2, 3]))
    def check(data: st.DataObject, version: int) -> None:
        config = data.draw(configs(engine), label="config")
        drawn = data.draw(batches(config), label="batches")
        where = tempfile.mkdtemp()
        try:
            cat = SqlCatalog("m", f"sqlite:///{where}/c.db", f"{where}/wh")
            cat.create_namespace("db")
            table = cat.create_table(
                "db.t",
                SCHEMA,
                primary_key=["k"],
                format_version=version,
                properties=config.properties(),
            )
            run_against_model(table, config, drawn)
            cat.dispose()
        finally:
            shutil.rmtree(where, ignore_errors=True)

    check()


# -- fixed cases ------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("rest", marks=pytest.mark.rest)])
def cat(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    catalog_factory: Callable[[str], neve.Catalog],
) -> neve.Catalog:
    """A SQLite catalog, and neve's REST client against ``neve serve``."""
    c = (
        catalog_factory("rest")
        if request.param == "rest"
        else SqlCatalog("m", f"sqlite:///{tmp_path}/c.db", str(tmp_path / "wh"))
    )
    c.create_namespace("db")
    return c


def rows(**columns: list[object]) -> pa.Table:
    n = len(next(iter(columns.values())))
    base: dict[str, list[object]] = {c: [None] * n for c in SCHEMA.names}
    return pa.Table.from_pydict({**base, **columns}, schema=SCHEMA)


def test_a_lower_sequence_loses_also_across_commits(cat: neve.Catalog) -> None:
    t = cat.create_table("db.t", SCHEMA, primary_key=["k"], properties={"sequence.field": "s"})
    t.upsert(rows(k=[1, 2], s=[5, 5], t=["five", "five"]))
    t.upsert(rows(k=[1, 2, 2], s=[4, 7, 6], t=["four", "seven", "six"]))
    assert [(r["k"], r["t"]) for r in sorted_rows(t)] == [(1, "five"), (2, "seven")]


def test_partial_update_keeps_the_stored_fields_a_batch_leaves_null(cat: neve.Catalog) -> None:
    t = cat.create_table(
        "db.t", SCHEMA, primary_key=["k"], properties={"merge-engine": "partial-update"}
    )
    t.upsert(rows(k=[1], n=[10], t=["x"]))
    t.upsert(pa.table({"k": [1, 1], "b": [True, None], "n": [None, 11]}))
    assert sorted_rows(t) == [{"k": 1, "s": None, "n": 11, "t": "x", "b": True}]


def test_merge_on_a_key_table_keeps_the_rules_of_merge(cat: neve.Catalog) -> None:
    """The merge engine decides upserts; a MERGE keeps SQL's rules on every table, key
    tables included: two source rows for one target row are refused before anything is
    written, and ``update_all`` replaces the matched row (it is not aggregated)."""
    t = cat.create_table(
        "db.t",
        SCHEMA,
        primary_key=["k"],
        properties={"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
    )
    t.upsert(rows(k=[1], n=[1]))
    before = t.refresh().metadata.current_snapshot_id
    with pytest.raises(ValidationError, match="more than one source row"):
        t.merge(rows(k=[1, 1, 2], n=[2, 3, 4])).when_matched_update_all().execute()
    assert t.refresh().metadata.current_snapshot_id == before
    assert [(r["k"], r["n"]) for r in sorted_rows(t)] == [(1, 1)]
    t.merge(rows(k=[1, 2], n=[5, 4])).when_matched_update_all().execute()
    assert [(r["k"], r["n"]) for r in sorted_rows(t)] == [(1, 5)]
    t.upsert(rows(k=[1, 1], n=[2, 3]))  # the engine sums an upsert's rows in
    assert [(r["k"], r["n"]) for r in sorted_rows(t)] == [(1, 10)]


def test_other_merges_keep_merge_rules(cat: neve.Catalog) -> None:
    """Only an upsert on the primary key goes through the engine: another key, a
    condition, or a table without a primary key still refuses two source rows for one
    target row."""
    t = cat.create_table("db.t", SCHEMA, primary_key=["k"])
    t.upsert(rows(k=[1, 2], n=[1, 2]))
    dup = rows(k=[1, 1], n=[1, 1])
    with pytest.raises(ValidationError, match="more than one source row"):
        t.upsert(dup, on=["n"])
    with pytest.raises(ValidationError, match="more than one source row"):
        t.merge(dup).when_matched_update_all("source.n > 0").execute()
    plain = cat.create_table("db.p", SCHEMA)
    plain.append(rows(k=[1]))
    with pytest.raises(ValidationError, match="more than one source row"):
        plain.upsert(dup, on=["k"])
    t.upsert(dup)  # the default engine, deduplicate: the last row wins
    assert [(r["k"], r["n"]) for r in sorted_rows(t)] == [(1, 1), (2, 2)]


@pytest.mark.parametrize(
    ("props", "says"),
    [
        ({"merge-engine": "newest"}, "not a merge engine"),
        (
            {"merge-engine": "aggregation", "fields.t.aggregate-function": "sum"},
            "takes a numeric column",
        ),
        ({"merge-engine": "aggregation", "fields.b.aggregate-function": "listagg"}, "string"),
        ({"merge-engine": "aggregation", "fields.n.aggregate-function": "bool_or"}, "boolean"),
        ({"merge-engine": "aggregation", "fields.n.aggregate-function": "avg"}, "use one of"),
        (
            {"merge-engine": "aggregation", "fields.default-aggregate-function": "sum"},
            "'t' is string",
        ),
        ({"fields.k.aggregate-function": "sum"}, "primary-key column 'k'"),
        ({"sequence.field": "k"}, "primary-key column 'k'"),
        ({"sequence.field": "nope"}, "not a top-level column"),
        ({"sequence.field": "t"}, "a sequence is a numeric"),
        ({"sequence.field": "s", "fields.s.aggregate-function": "max"}, "sequence column"),
        ({"merge-engine": "first-row", "sequence.field": "s"}, "takes no\nsequence.field"),
        ({"sequence.field.sort-order": "up"}, "ascending or descending"),
        ({"rowkind.field": "t"}, "a column of the table"),
        ({"ignore-delete": "yes"}, "true or false"),
        ({"fields.zz.aggregate-function": "sum"}, "column 'zz'"),
    ],
)
def test_bad_properties_are_refused_and_change_nothing(
    cat: neve.Catalog, props: dict[str, str], says: str
) -> None:
    with pytest.raises(MergeEngineError, match=says.replace("\n", " ")):
        cat.create_table("db.c", SCHEMA, primary_key=["k"], properties=props)
    assert not cat.table_exists("db.c")
    t = cat.create_table("db.t", SCHEMA, primary_key=["k"])
    before = t.metadata_location
    with pytest.raises(MergeEngineError, match=says.replace("\n", " ")):
        t.set_properties(props)
    assert t.refresh().metadata_location == before
    assert not any(k in t.metadata.properties for k in props)


def test_merge_properties_need_a_primary_key(cat: neve.Catalog) -> None:
    with pytest.raises(MergeEngineError, match="primary_key"):
        cat.create_table("db.t", SCHEMA, properties={"merge-engine": "first-row"})
    t = cat.create_table("db.t", SCHEMA)
    with pytest.raises(MergeEngineError, match="primary_key"):
        t.set_properties({"sequence.field": "s"})


def test_a_schema_change_under_the_properties_is_refused(cat: neve.Catalog) -> None:
    t = cat.create_table(
        "db.t",
        SCHEMA,
        primary_key=["k"],
        properties={"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
    )
    before = t.metadata_location
    # 'n' (sum) comes back as a string
    with pytest.raises(MergeEngineError, match="'n' is string"), t.update_schema() as u:
        u.delete_column("n")
        u.add_column("n", "string")
    with pytest.raises(MergeEngineError, match="column 'n', which is not"), t.update_schema() as u:
        u.delete_column("n")
    t.set_properties({"sequence.field": "s"})
    assert t.refresh().metadata_location != before
    before = t.metadata_location
    with (
        pytest.raises(MergeEngineError, match=r"sequence\.field names 's'"),
        t.update_schema() as u,
    ):
        u.delete_column("s")
    assert t.refresh().metadata_location == before
    assert t.metadata.schema().column_names == SCHEMA.names


def test_bad_row_kinds_are_refused_and_change_nothing(cat: neve.Catalog) -> None:
    t = cat.create_table("db.t", SCHEMA, primary_key=["k"], properties={"rowkind.field": "op"})
    t.upsert(rows(k=[1]))
    before = t.refresh().metadata_location
    for kinds in (["+I", "D"], ["+I", None]):
        bad = rows(k=[2, 3]).append_column("op", pa.array(kinds, pa.string()))
        with pytest.raises(MergeEngineError, match="row-kind column 'op'"):
            t.upsert(bad)
    with pytest.raises(MergeEngineError, match="holds int64"):
        t.upsert(rows(k=[2]).append_column("op", pa.array([1])))
    assert t.refresh().metadata_location == before


def test_row_kinds_delete_and_are_not_stored(cat: neve.Catalog) -> None:
    t = cat.create_table("db.t", SCHEMA, primary_key=["k"], properties={"rowkind.field": "op"})
    t.upsert(rows(k=[1, 2, 3], n=[1, 2, 3]))
    change = rows(k=[1, 2, 2, 4], n=[None, 2, 20, 4]).append_column(
        "op", pa.array(["-D", "-U", "+U", "+I"])
    )
    t.upsert(change)
    assert [(r["k"], r["n"]) for r in sorted_rows(t)] == [(2, 20), (3, 3), (4, 4)]
    assert "op" not in t.refresh().metadata.schema().column_names
    t.set_properties({"ignore-delete": "true"})
    t.upsert(rows(k=[3]).append_column("op", pa.array(["-D"])))
    assert [r["k"] for r in sorted_rows(t)] == [2, 3, 4]


def test_retraction_a_function_cannot_take_is_refused(cat: neve.Catalog) -> None:
    t = cat.create_table(
        "db.t",
        SCHEMA,
        primary_key=["k"],
        properties={
            "merge-engine": "aggregation",
            "rowkind.field": "op",
            "fields.n.aggregate-function": "sum",
            "fields.t.aggregate-function": "max",
        },
    )
    t.upsert(rows(k=[1], n=[5], t=["a"]).append_column("op", pa.array(["+I"])))
    retract = rows(k=[1], n=[2], t=["a"]).append_column("op", pa.array(["-U"]))
    with pytest.raises(MergeEngineError, match=r"\['t'\]"):
        t.upsert(retract)
    t.set_properties({"fields.t.ignore-retract": "true"})
    t.upsert(retract)
    assert sorted_rows(t) == [{"k": 1, "s": None, "n": 3, "t": "a", "b": None}]


@pytest.mark.parametrize("engine", ["partial-update", "aggregation", "deduplicate"])
def test_a_merged_row_keeps_its_row_id(cat: neve.Catalog, engine: str) -> None:
    """v3 row lineage: a key's merged row is an update of its stored row (same
    ``_row_id``, the new sequence number); a new key gets a fresh one."""
    props = {"merge-engine": engine, "sequence.field": "s"}
    t = cat.create_table("db.t", SCHEMA, primary_key=["k"], format_version=3, properties=props)
    t.upsert(rows(k=[1, 2, 3], s=[1, 1, 1], n=[1, 2, 3]))

    def ids() -> dict[int, tuple[int, int]]:
        out = t.refresh().scan(columns=["k", "_row_id", "_last_updated_sequence_number"])
        return {
            r["k"]: (r["_row_id"], r["_last_updated_sequence_number"])
            for r in out.to_arrow().to_pylist()
        }

    before = ids()
    t.upsert(rows(k=[2, 4], s=[2, 2], n=[20, 4]))
    after = ids()
    assert after[1] == before[1] and after[3] == before[3]
    assert after[2][0] == before[2][0] and after[2][1] > before[2][1]
    assert after[4][0] not in {r for r, _ in before.values()}


def test_retracting_zero_from_a_product_is_refused(cat: neve.Catalog) -> None:
    props = {
        "merge-engine": "aggregation",
        "fields.n.aggregate-function": "product",
        "rowkind.field": "op",
    }
    t = cat.create_table("db.t", SCHEMA, primary_key=["k"], properties=props)
    t.upsert(rows(k=[1, 2], n=[6, 7]))
    before = t.refresh().metadata_location
    with pytest.raises(MergeEngineError, match="divided by zero"):
        t.upsert(rows(k=[1, 2], n=[0, 0]).append_column("op", pa.array(["+I", "-U"])))
    assert t.refresh().metadata_location == before
    t.upsert(rows(k=[1, 2, 2], n=[-4, 2, -3]).append_column("op", pa.array(["-U", "-U", "+U"])))
    assert [(r["k"], r["n"]) for r in sorted_rows(t)] == [(1, -1), (2, -9)]  # 6 / -4 truncates
