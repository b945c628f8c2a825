"""Tests of partition evolution (spec "Partition Evolution") and spec_from_terms."""

from __future__ import annotations

import pytest

from neve.actions.update_spec import UpdateSpec, default_partition_name, spec_from_terms
from neve.errors import SchemaError
from neve.spec.partition import UNPARTITIONED, PartitionField, PartitionSpec
from neve.spec.schema import Schema
from neve.spec.sort_order import UNSORTED
from neve.spec.table_metadata import TableMetadata
from neve.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)
from neve.spec.types import (
    BOOLEAN,
    DATE,
    LONG,
    STRING,
    TIMESTAMP,
    DecimalType,
    ListType,
    NestedField,
    StructType,
)

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "ts", TIMESTAMP),
    NestedField(3, "name", STRING),
    NestedField(4, "category", STRING),
    NestedField(5, "d", DATE),
    NestedField(6, "flag", BOOLEAN),
    NestedField(7, "loc", StructType(NestedField(8, "city", STRING))),
    NestedField(9, "tags", ListType(10, STRING)),
    NestedField(11, "price", DecimalType(9, 2)),
)


def metadata(
    specs: tuple[PartitionSpec, ...] = (UNPARTITIONED,),
    default_spec_id: int | None = None,
    last_partition_id: int | None = None,
    version: int = 2,
    schema: Schema = SCHEMA,
) -> TableMetadata:
    last = max([999] + [s.last_assigned_field_id for s in specs])
    return TableMetadata(
        format_version=version,
        table_uuid="00000000-0000-0000-0000-000000000000",
        location="/tmp/t",
        last_sequence_number=0,
        last_updated_ms=0,
        last_column_id=schema.highest_field_id,
        schemas=(schema,),
        current_schema_id=schema.schema_id,
        partition_specs=specs,
        default_spec_id=specs[-1].spec_id if default_spec_id is None else default_spec_id,
        last_partition_id=last if last_partition_id is None else last_partition_id,
        sort_orders=(UNSORTED,),
        default_sort_order_id=0,
    )


def pf(source: int, fid: int, transform: object, name: str) -> PartitionField:
    return PartitionField(source, fid, transform, name)  # type: ignore[arg-type]


DAY_SPEC = PartitionSpec(1, (pf(2, 1000, DayTransform(), "ts_day"),))


# -- spec_from_terms ------------------------------------------------------------------


def test_spec_from_terms_default_names_and_ids() -> None:
    spec = spec_from_terms(SCHEMA, ["day(ts)", "bucket(16, id)", "truncate(4, name)", "category"])
    assert spec.spec_id == 0
    assert [(f.source_id, f.field_id, f.name) for f in spec.fields] == [
        (2, 1000, "ts_day"),
        (1, 1001, "id_bucket"),
        (3, 1002, "name_trunc"),
        (4, 1003, "category"),
    ]
    assert [f.transform for f in spec.fields] == [
        DayTransform(),
        BucketTransform(16),
        TruncateTransform(4),
        IdentityTransform(),
    ]


@pytest.mark.parametrize(
    ("term", "name"),
    [
        ("year(ts)", "ts_year"),
        ("month(ts)", "ts_month"),
        ("hour(ts)", "ts_hour"),
        ("year(d)", "d_year"),
        ("loc.city", "loc.city"),
        ("bucket(8, loc.city)", "loc.city_bucket"),
        ("truncate(10, price)", "price_trunc"),
    ],
)
def test_spec_from_terms_names(term: str, name: str) -> None:
    (f,) = spec_from_terms(SCHEMA, [term]).fields
    assert f.name == name


def test_spec_from_terms_void_name() -> None:
    (f,) = spec_from_terms(SCHEMA, ["void(flag)"]).fields
    assert (f.name, f.transform) == ("flag_null", VoidTransform())
    assert default_partition_name("x", VoidTransform(), with_param=False) == "x_null"
    assert default_partition_name("x", VoidTransform(), with_param=True) == "x_null"


def test_spec_from_terms_ids_and_spec_id_parameters() -> None:
    spec = spec_from_terms(SCHEMA, ["category", "d"], spec_id=3, last_partition_id=1010)
    assert spec.spec_id == 3
    assert [f.field_id for f in spec.fields] == [1011, 1012]


def test_spec_from_terms_empty_is_unpartitioned() -> None:
    assert spec_from_terms(SCHEMA, []) == UNPARTITIONED


@pytest.mark.parametrize(
    ("terms", "keyword"),
    [
        (["nope"], "no such column"),
        (["tags.element"], "list or map"),
        (["loc"], "not a primitive"),
        (["bucket(4, flag)"], "does not apply"),
        (["day(name)"], "does not apply"),
        (["hour(d)"], "does not apply"),
        (["bucket(16, id)", "bucket(16, id)"], "twice"),
        (["day(ts)", "hour(ts)"], "redundant"),
        (["category", "category"], "twice"),
    ],
)
def test_spec_from_terms_errors(terms: list[str], keyword: str) -> None:
    with pytest.raises(SchemaError, match=keyword):
        spec_from_terms(SCHEMA, terms)


def test_spec_from_terms_same_default_name_twice() -> None:
    # two bucket widths both default to "id_bucket": a duplicate name, not silently renamed
    with pytest.raises(SchemaError, match="twice"):
        spec_from_terms(SCHEMA, ["bucket(16, id)", "bucket(8, id)"])


def test_spec_from_terms_name_taken_by_other_column() -> None:
    schema = Schema(NestedField(1, "ts", TIMESTAMP), NestedField(2, "ts_day", DATE))
    with pytest.raises(SchemaError, match="name of a table column"):
        spec_from_terms(schema, ["day(ts)"])


# -- UpdateSpec: adding ---------------------------------------------------------------


def test_add_to_unpartitioned_v2() -> None:
    spec = UpdateSpec(metadata()).add_field("ts", "day").apply()
    assert spec.spec_id == 1
    assert spec.fields == (pf(2, 1000, DayTransform(), "ts_day"),)


def test_added_field_names_carry_parameters() -> None:
    spec = (
        UpdateSpec(metadata())
        .add_field("id", BucketTransform(16))
        .add_field("name", "truncate[4]")
        .add_identity("category")
        .add_field("hour(ts)")
        .apply()
    )
    assert [f.name for f in spec.fields] == ["id_bucket_16", "name_trunc_4", "category", "ts_hour"]
    assert [f.field_id for f in spec.fields] == [1000, 1001, 1002, 1003]


def test_add_with_term_and_name() -> None:
    spec = UpdateSpec(metadata()).add_field("bucket(16, id)", name="shard").apply()
    assert spec.fields == (pf(1, 1000, BucketTransform(16), "shard"),)


def test_ids_continue_from_last_partition_id() -> None:
    spec = (
        UpdateSpec(metadata((DAY_SPEC,), last_partition_id=1005)).add_identity("category").apply()
    )
    assert spec.fields[-1].field_id == 1006


def test_v2_reuses_field_id_from_an_earlier_spec() -> None:
    old = PartitionSpec(0, (pf(1, 1000, BucketTransform(16), "id_bucket"),))
    current = PartitionSpec(1, (pf(2, 1001, DayTransform(), "ts_day"),))
    md = metadata((old, current))
    spec = UpdateSpec(md).add_field("id", BucketTransform(16)).apply()
    assert spec.fields[-1] == pf(1, 1000, BucketTransform(16), "id_bucket")
    assert spec.spec_id == 2
    # a different name asked for: a new field
    spec = UpdateSpec(md).add_field("id", BucketTransform(16), name="b").apply()
    assert spec.fields[-1] == pf(1, 1002, BucketTransform(16), "b")
    # a different transform: a new field
    spec = UpdateSpec(md).add_field("id", BucketTransform(8)).apply()
    assert spec.fields[-1] == pf(1, 1002, BucketTransform(8), "id_bucket_8")


def test_v2_does_not_reuse_an_id_the_current_spec_holds() -> None:
    # a table upgraded from v1: the old bucket field lives on as a void with id 1000
    old = PartitionSpec(0, (pf(1, 1000, BucketTransform(16), "id_bucket"),))
    current = PartitionSpec(1, (pf(1, 1000, VoidTransform(), "id_bucket"),))
    spec = UpdateSpec(metadata((old, current))).add_field("id", BucketTransform(16)).apply()
    assert spec.fields[-1] == pf(1, 1001, BucketTransform(16), "id_bucket_16")


def test_v1_does_not_reuse_field_ids() -> None:
    old = PartitionSpec(0, (pf(1, 1000, BucketTransform(16), "id_bucket"),))
    current = PartitionSpec(1, (pf(1, 1000, VoidTransform(), "id_bucket"),))
    spec = (
        UpdateSpec(metadata((old, current), version=1)).add_field("id", BucketTransform(16)).apply()
    )
    assert spec.fields == (
        pf(1, 1000, VoidTransform(), "id_bucket"),
        pf(1, 1001, BucketTransform(16), "id_bucket_16"),
    )


def test_add_existing_field_is_rejected() -> None:
    with pytest.raises(SchemaError, match="already has it"):
        UpdateSpec(metadata((DAY_SPEC,))).add_field("ts", "day")


def test_add_twice_is_rejected() -> None:
    with pytest.raises(SchemaError, match="twice"):
        UpdateSpec(metadata()).add_identity("category").add_identity("category")
    with pytest.raises(SchemaError, match="twice"):
        UpdateSpec(metadata()).add_field("ts", "day", name="p").add_field("d", "day", name="p")


def test_add_redundant_time_transform_is_rejected() -> None:
    with pytest.raises(SchemaError, match="redundant"):
        UpdateSpec(metadata()).add_field("ts", "day").add_field("ts", "hour")
    with pytest.raises(SchemaError, match="redundant"):
        UpdateSpec(metadata((DAY_SPEC,))).add_field("ts", "month").apply()


def test_replace_day_by_hour_in_one_change() -> None:
    spec = UpdateSpec(metadata((DAY_SPEC,))).remove_field("ts_day").add_field("ts", "hour").apply()
    assert spec.fields == (pf(2, 1001, HourTransform(), "ts_hour"),)
    assert spec.spec_id == 2


def test_add_name_clash_with_spec_field_is_rejected() -> None:
    with pytest.raises(SchemaError, match="already has a field"):
        UpdateSpec(metadata((DAY_SPEC,))).add_field("d", "day", name="ts_day")


def test_add_name_clash_with_schema_column() -> None:
    with pytest.raises(SchemaError, match="name of a table column"):
        UpdateSpec(metadata()).add_field("ts", "day", name="name").apply()
    with pytest.raises(SchemaError, match="name of a table column"):
        UpdateSpec(metadata()).add_field("name", "identity", name="category").apply()
    spec = UpdateSpec(metadata()).add_field("category", "identity", name="category").apply()
    assert spec.fields[0].name == "category"


@pytest.mark.parametrize(
    ("source", "transform", "keyword"),
    [
        ("nope", "identity", "no such column"),
        ("tags.element", "identity", "list or map"),
        ("flag", "bucket[4]", "does not apply"),
        ("name", "year", "does not apply"),
        ("loc", "identity", "not a primitive"),
        ("id", "bogus[3]", "unknown transform"),
    ],
)
def test_add_invalid_source(source: str, transform: str, keyword: str) -> None:
    with pytest.raises(SchemaError, match=keyword):
        UpdateSpec(metadata()).add_field(source, transform)


def test_add_nested_struct_source() -> None:
    spec = UpdateSpec(metadata()).add_field("loc.city", BucketTransform(4)).apply()
    assert spec.fields == (pf(8, 1000, BucketTransform(4), "loc.city_bucket_4"),)


def test_case_insensitive_source() -> None:
    spec = UpdateSpec(metadata(), case_sensitive=False).add_field("TS", "day").apply()
    assert spec.fields[0].source_id == 2
    with pytest.raises(SchemaError, match="no such column"):
        UpdateSpec(metadata()).add_field("TS", "day")


# -- UpdateSpec: removing and renaming ------------------------------------------------


def test_remove_in_v2_drops_the_field_and_reuses_equal_spec_id() -> None:
    md = metadata((UNPARTITIONED, DAY_SPEC))
    spec = UpdateSpec(md).remove_field("ts_day").apply()
    assert spec == UNPARTITIONED  # equal to spec 0, so its id comes back


def test_remove_by_term() -> None:
    spec = UpdateSpec(metadata((UNPARTITIONED, DAY_SPEC))).remove_field("day(ts)").apply()
    assert spec.fields == ()


def test_remove_in_v1_keeps_a_void_field() -> None:
    spec = UpdateSpec(metadata((UNPARTITIONED, DAY_SPEC), version=1)).remove_field("ts_day").apply()
    assert spec.fields == (pf(2, 1000, VoidTransform(), "ts_day"),)
    assert spec.spec_id == 2


def test_v1_re_add_after_void() -> None:
    voided = PartitionSpec(2, (pf(4, 1000, VoidTransform(), "category"),))
    spec = UpdateSpec(metadata((voided,), version=1)).add_identity("category").apply()
    assert spec.fields == (
        pf(4, 1000, VoidTransform(), "category_1000"),
        pf(4, 1001, IdentityTransform(), "category"),
    )


def test_remove_and_re_add_in_one_change_is_a_no_op() -> None:
    md = metadata((UNPARTITIONED, DAY_SPEC))
    spec = UpdateSpec(md).remove_field("ts_day").add_field("ts", "day").apply()
    assert spec == DAY_SPEC


def test_remove_and_re_add_with_new_name_renames() -> None:
    md = metadata((UNPARTITIONED, DAY_SPEC))
    spec = UpdateSpec(md).remove_field("ts_day").add_field("ts", "day", name="day").apply()
    assert spec.fields == (pf(2, 1000, DayTransform(), "day"),)


def test_remove_missing_is_rejected() -> None:
    with pytest.raises(SchemaError, match="no such field"):
        UpdateSpec(metadata((DAY_SPEC,))).remove_field("nope")


def test_remove_added_field_is_rejected() -> None:
    with pytest.raises(SchemaError, match="added in this same change"):
        UpdateSpec(metadata()).add_identity("category").remove_field("category")


def test_remove_twice_is_rejected() -> None:
    with pytest.raises(SchemaError, match="already removed"):
        UpdateSpec(metadata((DAY_SPEC,))).remove_field("ts_day").remove_field("ts_day")


def test_rename_field() -> None:
    spec = UpdateSpec(metadata((DAY_SPEC,))).rename_field("ts_day", "day").apply()
    assert spec.fields == (pf(2, 1000, DayTransform(), "day"),)
    assert spec.spec_id == 2


def test_rename_conflicts() -> None:
    two = PartitionSpec(
        1, (pf(2, 1000, DayTransform(), "ts_day"), pf(4, 1001, IdentityTransform(), "category"))
    )
    with pytest.raises(SchemaError, match="already has a field"):
        UpdateSpec(metadata((two,))).rename_field("ts_day", "category")
    with pytest.raises(SchemaError, match="renamed in this same change"):
        UpdateSpec(metadata((two,))).rename_field("ts_day", "day").remove_field("day")
    with pytest.raises(SchemaError, match="removed in this same change"):
        UpdateSpec(metadata((two,))).remove_field("ts_day").rename_field("ts_day", "x")
    with pytest.raises(SchemaError, match="added in this same change"):
        UpdateSpec(metadata((two,))).add_field("d", "month").rename_field("d_month", "m")
    with pytest.raises(SchemaError, match="name of a table column"):
        UpdateSpec(metadata((two,))).rename_field("ts_day", "name").apply()


def test_rename_swap_through_temporary_name() -> None:
    two = PartitionSpec(1, (pf(2, 1000, DayTransform(), "a"), pf(5, 1001, MonthTransform(), "b")))
    spec = (
        UpdateSpec(metadata((two,)))
        .rename_field("a", "tmp")
        .rename_field("b", "a")
        .rename_field("tmp", "b")
        .apply()
    )
    assert [(f.field_id, f.name) for f in spec.fields] == [(1000, "b"), (1001, "a")]


def test_year_and_identity_on_same_column_are_fine() -> None:
    spec = UpdateSpec(metadata()).add_field("d", YearTransform()).add_identity("d").apply()
    assert [f.name for f in spec.fields] == ["d_year", "d"]


# -- builder behaviour ----------------------------------------------------------------


def test_no_change_keeps_the_current_spec_id() -> None:
    md = metadata((UNPARTITIONED, DAY_SPEC))
    assert UpdateSpec(md).apply() == DAY_SPEC


def test_new_spec_id_is_max_plus_one() -> None:
    specs = (UNPARTITIONED, PartitionSpec(4, (pf(2, 1000, DayTransform(), "ts_day"),)))
    spec = UpdateSpec(metadata(specs)).add_identity("category").apply()
    assert spec.spec_id == 5


def test_context_manager() -> None:
    seen: list[UpdateSpec] = []
    with UpdateSpec(metadata(), on_commit=seen.append) as u:
        u.add_identity("category")
    assert seen == [u]
    seen.clear()
    with pytest.raises(KeyError), UpdateSpec(metadata(), on_commit=seen.append) as u:
        u.add_identity("category")
        raise KeyError("boom")
    assert seen == []
