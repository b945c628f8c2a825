"""Tests of the schema evolution builder (spec "Schema Evolution")."""

from __future__ import annotations

import decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neve.actions.update_schema import UpdateSchema, is_promotion_allowed
from neve.errors import SchemaError
from neve.spec.schema import Schema
from neve.spec.types import (
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIMESTAMP_NS,
    UNKNOWN,
    DecimalType,
    ListType,
    MapType,
    NestedField,
    StructType,
)


def base_schema() -> Schema:
    return Schema(
        NestedField(1, "id", LONG, required=True),
        NestedField(2, "data", STRING),
        NestedField(
            3, "loc", StructType(NestedField(4, "lat", FLOAT), NestedField(5, "lon", FLOAT))
        ),
        NestedField(
            6,
            "points",
            ListType(7, StructType(NestedField(8, "x", INT), NestedField(9, "y", INT)), True),
        ),
        NestedField(10, "props", MapType(11, STRING, 12, StructType(NestedField(13, "v", INT)))),
        NestedField(14, "tags", ListType(15, INT, False)),
        NestedField(16, "amount", DecimalType(9, 2)),
        schema_id=3,
        identifier_field_ids=[1],
    )


def update(version: int = 2, case_sensitive: bool = True, last: int = 16) -> UpdateSchema:
    return UpdateSchema(base_schema(), last, version, case_sensitive=case_sensitive)


def names(schema: Schema) -> list[str]:
    return [f.name for f in schema.fields]


# -- adding ---------------------------------------------------------------------------


def test_add_top_level_column_gets_next_id_and_goes_last() -> None:
    schema, last = update().add_column("note", "string", doc="free text").apply()
    f = schema.find_field("note")
    assert (f.field_id, f.field_type, f.required, f.doc) == (17, STRING, False, "free text")
    assert last == 17
    assert names(schema)[-1] == "note"
    assert schema.schema_id == 4  # placeholder: current id + 1


def test_ids_continue_after_last_column_id_not_highest_field() -> None:
    # ids of deleted columns are never reused: the table's last-column-id wins
    schema, last = update(last=40).add_column("x", LONG).apply()
    assert schema.find_field("x").field_id == 41
    assert last == 41


def test_add_parses_type_strings() -> None:
    schema, _ = update().add_column("price", "decimal(12, 3)").apply()
    assert schema.find_type("price") == DecimalType(12, 3)
    with pytest.raises(SchemaError, match="unknown type"):
        update().add_column("bad", "number")


def test_add_nested_type_gets_fresh_ids_in_java_order() -> None:
    t = StructType(
        NestedField(1, "a", INT),
        NestedField(2, "m", MapType(3, STRING, 4, StructType(NestedField(5, "z", INT)))),
        NestedField(6, "l", ListType(7, LONG)),
    )
    schema, last = update().add_column("s", t).apply()
    s = schema.find_field("s")
    assert s.field_id == 17
    # direct children first (18, 19, 20), then what is nested in them
    assert schema.find_field("s.a").field_id == 18
    assert schema.find_field("s.m").field_id == 19
    assert schema.find_field("s.l").field_id == 20
    m = schema.find_type("s.m")
    assert isinstance(m, MapType)
    assert (m.key_id, m.value_id) == (21, 22)
    assert schema.find_field("s.m.value.z").field_id == 23
    lt = schema.find_type("s.l")
    assert isinstance(lt, ListType)
    assert lt.element_id == 24
    assert last == 24


def test_add_inside_struct() -> None:
    schema, _ = update().add_column("loc.alt", DOUBLE).apply()
    assert schema.find_field("loc.alt").field_id == 17
    assert [f.name for f in schema.find_type("loc").children] == ["lat", "lon", "alt"]


@pytest.mark.parametrize("path", ["points.z", "points.element.z"])
def test_add_inside_list_element_struct(path: str) -> None:
    schema, _ = update().add_column(path, INT).apply()
    assert schema.find_field("points.element.z").field_id == 17


@pytest.mark.parametrize("path", ["props.w", "props.value.w"])
def test_add_inside_map_value_struct(path: str) -> None:
    schema, _ = update().add_column(path, INT).apply()
    assert schema.find_field("props.value.w").field_id == 17


def test_add_with_tuple_path_allows_dots_in_name() -> None:
    schema, _ = update().add_column(("loc", "a.b"), INT).apply()
    loc = schema.find_type("loc")
    assert isinstance(loc, StructType)
    assert loc.field_by_name("a.b") is not None


def test_add_to_non_struct_is_rejected() -> None:
    with pytest.raises(SchemaError, match="not a struct"):
        update().add_column("data.x", INT)
    with pytest.raises(SchemaError, match="not a struct"):
        update().add_column("tags.x", INT)


def test_add_to_map_key_is_rejected() -> None:
    with pytest.raises(SchemaError, match="map keys"):
        update().add_column("props.key.x", INT)


def test_add_to_missing_parent_is_rejected() -> None:
    with pytest.raises(SchemaError, match="no such column"):
        update().add_column("nope.x", INT)


def test_add_existing_name_is_rejected() -> None:
    with pytest.raises(SchemaError, match="already has a field"):
        update().add_column("data", INT)
    with pytest.raises(SchemaError, match="already has a field"):
        update().add_column("loc.lat", INT)


def test_add_name_clash_respects_case_sensitivity() -> None:
    schema, _ = update().add_column("DATA", INT).apply()
    assert names(schema)[-1] == "DATA"
    with pytest.raises(SchemaError, match="already has a field"):
        update(case_sensitive=False).add_column("DATA", INT)


def test_add_empty_name_is_rejected() -> None:
    with pytest.raises(SchemaError, match="empty"):
        update().add_column("loc.", INT)


def test_add_required_without_default_is_rejected() -> None:
    for version in (1, 2, 3):
        with pytest.raises(SchemaError, match="optional"):
            update(version).add_column("req", LONG, required=True)


def test_add_required_with_default_in_v3() -> None:
    schema, _ = update(3).add_column("req", LONG, required=True, default=7).apply()
    f = schema.find_field("req")
    assert f.required
    assert (f.initial_default, f.write_default) == (7, 7)


def test_default_needs_v3() -> None:
    with pytest.raises(SchemaError, match="version 3"):
        update(2).add_column("req", LONG, required=True, default=7)
    with pytest.raises(SchemaError, match="version 3"):
        update(2).add_column("opt", LONG, default=7)


def test_default_must_fit_the_type() -> None:
    with pytest.raises(SchemaError, match="does not fit"):
        update(3).add_column("n", LONG, default="seven")
    with pytest.raises(SchemaError, match="does not fit"):
        update(3).add_column("n", INT, default=2**40)
    with pytest.raises(SchemaError, match="does not fit"):
        update(3).add_column("n", INT, default=True)
    with pytest.raises(SchemaError, match="does not fit"):
        update(3).add_column("d", DecimalType(5, 2), default=decimal.Decimal("1.234"))
    with pytest.raises(SchemaError, match="does not fit"):
        update(3).add_column("d", DecimalType(5, 2), default=decimal.Decimal("12345.6"))
    with pytest.raises(SchemaError, match="does not fit"):
        update(3).add_column("u", "uuid", default="not-a-uuid")
    with pytest.raises(SchemaError, match="default"):
        update(3).add_column("s", StructType(NestedField(1, "a", INT)), default={})


def test_default_is_canonicalised() -> None:
    schema, _ = (
        update(3)
        .add_column("d", DecimalType(5, 2), default=decimal.Decimal("1.5"))
        .add_column("f", DOUBLE, default=2)
        .apply()
    )
    assert schema.find_field("d").initial_default == decimal.Decimal("1.50")
    f = schema.find_field("f").write_default
    assert isinstance(f, float)
    assert f == 2.0


def test_required_without_default_allowed_when_incompatible_changes_allowed() -> None:
    schema, _ = update().allow_incompatible_changes().add_column("req", LONG, required=True).apply()
    assert schema.find_field("req").required


def test_v3_types_need_v3() -> None:
    with pytest.raises(SchemaError, match="format version 3"):
        update(2).add_column("ts", TIMESTAMP_NS)
    with pytest.raises(SchemaError, match="format version 3"):
        update(2).add_column("l", ListType(1, UNKNOWN, False))
    schema, _ = update(3).add_column("ts", TIMESTAMP_NS).apply()
    assert schema.find_type("ts") == TIMESTAMP_NS


# -- deleting -------------------------------------------------------------------------


def test_delete_top_level_and_nested() -> None:
    schema, last = update().delete_column("data").drop_column("loc.lon").apply()
    assert "data" not in names(schema)
    assert schema.find_field_or_none("loc.lon") is None
    assert schema.find_field("loc.lat").field_id == 4
    assert last == 16


def test_delete_via_short_name_in_list() -> None:
    schema, _ = update().delete_column("points.y").apply()
    assert schema.find_field_or_none("points.element.y") is None


def test_delete_missing_is_rejected() -> None:
    with pytest.raises(SchemaError, match="no such column"):
        update().delete_column("nope")


def test_delete_identifier_field_is_rejected() -> None:
    with pytest.raises(SchemaError, match="identifier"):
        update().delete_column("id").apply()


def test_delete_identifier_field_after_changing_identifiers() -> None:
    schema, _ = (
        update()
        .allow_incompatible_changes()
        .require_column("data")
        .delete_column("id")
        .set_identifier_fields("data")
        .apply()
    )
    assert schema.identifier_field_ids == (2,)


def test_delete_struct_holding_identifier_field_is_rejected() -> None:
    s = Schema(
        NestedField(1, "k", StructType(NestedField(2, "a", LONG, required=True)), required=True),
        NestedField(3, "v", STRING),
        identifier_field_ids=[2],
    )
    with pytest.raises(SchemaError, match="identifier"):
        UpdateSchema(s, 3, 2).delete_column("k").apply()


def test_delete_list_element_or_map_parts_is_rejected() -> None:
    for path in ("tags.element", "props.key", "props.value"):
        with pytest.raises(SchemaError, match="cannot be"):
            update().delete_column(path)


def test_delete_then_update_conflicts() -> None:
    u = update().delete_column("data")
    with pytest.raises(SchemaError, match="deleted"):
        u.update_column("data", doc="x")
    with pytest.raises(SchemaError, match="deleted"):
        u.rename_column("data", "d2")
    with pytest.raises(SchemaError, match="deleted"):
        update().delete_column("loc").update_column("loc.lat", "double")


def test_update_then_delete_conflicts() -> None:
    with pytest.raises(SchemaError, match="other changes"):
        update().update_column("loc.lat", "double").delete_column("loc.lat")
    with pytest.raises(SchemaError, match="other changes"):
        update().update_column("loc.lat", "double").delete_column("loc")
    with pytest.raises(SchemaError, match="other changes"):
        update().add_column("loc.alt", INT).delete_column("loc")
    with pytest.raises(SchemaError, match="other changes"):
        update().rename_column("data", "d2").delete_column("d2")


def test_delete_added_column_is_rejected() -> None:
    with pytest.raises(SchemaError, match="added in this same change"):
        update().add_column("x", INT).delete_column("x")


def test_delete_then_add_same_name_gets_new_id() -> None:
    schema, _ = update().delete_column("data").add_column("data", LONG).apply()
    f = schema.find_field("data")
    assert (f.field_id, f.field_type) == (17, LONG)


# -- renaming -------------------------------------------------------------------------


def test_rename_keeps_id() -> None:
    schema, last = (
        update().rename_column("data", "payload").rename_column("loc.lat", "latitude").apply()
    )
    assert schema.find_field("payload").field_id == 2
    assert schema.find_field("loc.latitude").field_id == 4
    assert schema.find_field_or_none("data") is None
    assert names(schema)[1] == "payload"  # position kept
    assert last == 16


def test_rename_in_list_element_and_map_value() -> None:
    schema, _ = (
        update().rename_column("points.x", "px").rename_column("props.value.v", "vv").apply()
    )
    assert schema.find_field("points.element.px").field_id == 8
    assert schema.find_field("props.value.vv").field_id == 13


def test_rename_conflict_is_rejected() -> None:
    with pytest.raises(SchemaError, match="already has a field"):
        update().rename_column("data", "id")
    with pytest.raises(SchemaError, match="already has a field"):
        update().rename_column("loc.lat", "lon")
    with pytest.raises(SchemaError, match="already has a field"):
        update(case_sensitive=False).rename_column("data", "ID")


def test_rename_swap_via_intermediate_name() -> None:
    schema, _ = (
        update()
        .rename_column("loc.lat", "tmp")
        .rename_column("loc.lon", "lat")
        .rename_column("loc.tmp", "lon")
        .apply()
    )
    assert schema.find_field("loc.lat").field_id == 5
    assert schema.find_field("loc.lon").field_id == 4


def test_old_name_after_rename_points_to_new_name() -> None:
    with pytest.raises(SchemaError, match="renamed to 'payload'"):
        update().rename_column("data", "payload").update_column("data", doc="d")


def test_rename_element_is_rejected() -> None:
    with pytest.raises(SchemaError, match="fixed"):
        update().rename_column("tags.element", "item")


def test_rename_identifier_field_keeps_it_identifier() -> None:
    schema, _ = update().rename_column("id", "key").apply()
    assert schema.identifier_field_ids == (1,)
    assert schema.find_field("key").field_id == 1


def test_case_insensitive_lookup() -> None:
    schema, _ = update(case_sensitive=False).rename_column("LOC.LAT", "latitude").apply()
    assert schema.find_field("loc.latitude").field_id == 4
    with pytest.raises(SchemaError, match="no such column"):
        update().rename_column("LOC.LAT", "latitude")


# -- updating -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        ("points.x", INT, LONG),
        ("loc.lat", FLOAT, DOUBLE),
        ("amount", DecimalType(9, 2), DecimalType(18, 2)),
        ("tags.element", INT, LONG),
        ("props.v", INT, LONG),
    ],
)
def test_allowed_promotions(path: str, old: object, new: object) -> None:
    full = {"points.x": "points.element.x", "props.v": "props.value.v"}.get(path, path)
    assert base_schema().find_type(full) == old
    schema, _ = update().update_column(path, field_type=new).apply()  # type: ignore[arg-type]
    assert schema.find_type(full) == new


def test_promotion_from_type_string() -> None:
    schema, _ = update().update_column("amount", "decimal(10, 2)").apply()
    assert schema.find_type("amount") == DecimalType(10, 2)


@pytest.mark.parametrize(
    ("path", "new"),
    [
        ("id", INT),
        ("id", STRING),
        ("data", LONG),
        ("amount", DecimalType(12, 3)),
        ("amount", DecimalType(8, 2)),
        ("loc.lat", LONG),
    ],
)
def test_disallowed_promotions_name_both_types(path: str, new: object) -> None:
    old = base_schema().find_type(path)
    with pytest.raises(SchemaError) as info:
        update().update_column(path, field_type=new)  # type: ignore[arg-type]
    assert str(old) in str(info.value)
    assert str(new) in str(info.value)


def test_nested_type_change_is_rejected() -> None:
    with pytest.raises(SchemaError, match="only primitive"):
        update().update_column("loc", STRING)
    with pytest.raises(SchemaError, match="only primitive"):
        update().update_column("data", StructType(NestedField(1, "a", INT)))


def test_map_key_update_is_rejected() -> None:
    with pytest.raises(SchemaError, match="map key"):
        update().update_column("props.key", doc="k")


def test_unknown_promotes_to_anything_in_v3_only() -> None:
    s = Schema(NestedField(1, "u", UNKNOWN))
    schema, _ = UpdateSchema(s, 1, 3).update_column("u", LONG).apply()
    assert schema.find_type("u") == LONG
    assert not is_promotion_allowed(UNKNOWN, LONG, 2)


def test_same_type_is_a_no_op() -> None:
    schema, _ = update().update_column("id", LONG).apply()
    assert schema.fields == base_schema().fields


def test_update_doc() -> None:
    schema, _ = update().update_column("loc.lon", doc="degrees east").apply()
    assert schema.find_field("loc.lon").doc == "degrees east"


def test_require_column_needs_incompatible_flag() -> None:
    with pytest.raises(SchemaError, match="allow_incompatible_changes"):
        update().require_column("data")
    schema, _ = update().allow_incompatible_changes().require_column("data").apply()
    assert schema.find_field("data").required


def test_require_added_column_with_default() -> None:
    schema, _ = update(3).add_column("n", LONG, default=1).require_column("n").apply()
    assert schema.find_field("n").required


def test_make_optional_is_always_allowed() -> None:
    schema, _ = (
        update()
        .set_identifier_fields()
        .make_column_optional("id")
        .make_column_optional("points.element")
        .apply()
    )
    assert not schema.find_field("id").required
    pts = schema.find_type("points")
    assert isinstance(pts, ListType)
    assert not pts.element_required


def test_make_identifier_optional_fails_validation() -> None:
    with pytest.raises(SchemaError, match="required"):
        update().make_column_optional("id").apply()


def test_require_list_element_and_map_value() -> None:
    schema, _ = (
        update()
        .allow_incompatible_changes()
        .require_column("tags.element")
        .require_column("props.value")
        .apply()
    )
    tags = schema.find_type("tags")
    props = schema.find_type("props")
    assert isinstance(tags, ListType)
    assert isinstance(props, MapType)
    assert tags.element_required and tags.element_id == 15
    assert props.value_required and props.value_id == 12


def test_update_and_rename_combine() -> None:
    schema, _ = (
        update().update_column("loc.lat", "double").rename_column("loc.lat", "latitude").apply()
    )
    f = schema.find_field("loc.latitude")
    assert (f.field_id, f.field_type) == (4, DOUBLE)


def test_update_added_column() -> None:
    schema, _ = update().add_column("n", INT).update_column("n", LONG, doc="d").apply()
    f = schema.find_field("n")
    assert (f.field_type, f.doc) == (LONG, "d")


# -- moving ---------------------------------------------------------------------------


def test_move_first_before_after_top_level() -> None:
    schema, _ = update().move_first("amount").apply()
    assert names(schema)[0] == "amount"
    schema, _ = update().move_before("tags", "data").apply()
    assert names(schema)[:3] == ["id", "tags", "data"]
    schema, _ = update().move_after("id", "loc").apply()
    assert names(schema)[:3] == ["data", "loc", "id"]
    schema, _ = update().move_after("data", "amount").apply()
    assert names(schema)[-1] == "data"


def test_move_nested() -> None:
    schema, _ = update().move_first("loc.lon").move_before("points.y", "points.x").apply()
    assert [f.name for f in schema.find_type("loc").children] == ["lon", "lat"]
    elem = schema.find_type("points.element")
    assert [f.name for f in elem.children] == ["y", "x"]


def test_move_added_column() -> None:
    schema, _ = update().add_column("loc.alt", INT).move_first("loc.alt").apply()
    assert [f.name for f in schema.find_type("loc").children] == ["alt", "lat", "lon"]
    schema, _ = update().add_column("z", INT).move_after("z", "id").apply()
    assert names(schema)[:3] == ["id", "z", "data"]


def test_move_across_structs_is_rejected() -> None:
    with pytest.raises(SchemaError, match="different structs"):
        update().move_before("loc.lat", "data")
    with pytest.raises(SchemaError, match="different structs"):
        update().move_after("points.x", "loc.lat")


def test_move_relative_to_itself_is_rejected() -> None:
    with pytest.raises(SchemaError, match="itself"):
        update().move_after("data", "data")


def test_move_element_is_rejected() -> None:
    with pytest.raises(SchemaError, match="only fields of a struct"):
        update().move_first("tags.element")


def test_move_missing_is_rejected() -> None:
    with pytest.raises(SchemaError, match="no such column"):
        update().move_before("data", "nope")


# -- identifier fields ----------------------------------------------------------------


def test_set_identifier_fields() -> None:
    s = Schema(
        NestedField(1, "a", LONG, required=True),
        NestedField(2, "b", STRING, required=True),
        NestedField(3, "s", StructType(NestedField(4, "c", INT, required=True)), required=True),
    )
    schema, _ = UpdateSchema(s, 4, 2).set_identifier_fields("b", "s.c").apply()
    assert schema.identifier_field_ids == (2, 4)


def test_identifier_on_added_required_column_v3() -> None:
    schema, _ = (
        update(3)
        .add_column("k", STRING, required=True, default="x")
        .set_identifier_fields("id", "k")
        .apply()
    )
    assert schema.identifier_field_ids == (1, 17)


@pytest.mark.parametrize(
    ("path", "keyword"),
    [("data", "required"), ("loc", "primitive"), ("points.x", "list or map")],
)
def test_invalid_identifier_fields(path: str, keyword: str) -> None:
    u = update().allow_incompatible_changes()
    if path == "points.x":
        u.require_column(path)
    with pytest.raises(SchemaError, match=keyword):
        u.set_identifier_fields(path).apply()


def test_float_identifier_rejected() -> None:
    s = Schema(NestedField(1, "f", DOUBLE, required=True))
    with pytest.raises(SchemaError, match="float or double"):
        UpdateSchema(s, 1, 2).set_identifier_fields("f").apply()


def test_identifier_missing_column() -> None:
    with pytest.raises(SchemaError, match="no such column"):
        update().set_identifier_fields("nope")


# -- union by name --------------------------------------------------------------------


def test_union_by_name_adds_promotes_and_relaxes() -> None:
    incoming = Schema(
        NestedField(100, "id", INT, required=False),  # narrower, and optional
        NestedField(
            101, "loc", StructType(NestedField(102, "lat", DOUBLE), NestedField(103, "alt", INT))
        ),
        NestedField(104, "points", ListType(105, StructType(NestedField(106, "z", LONG)))),
        NestedField(107, "new_col", StructType(NestedField(108, "q", STRING)), doc="added"),
        NestedField(109, "amount", DecimalType(9, 2), doc="money"),
    )
    schema, last = update().set_identifier_fields().union_by_name(incoming).apply()
    assert schema.find_type("id") == LONG  # the narrower type is ignored
    assert not schema.find_field("id").required
    assert schema.find_type("loc.lat") == DOUBLE  # float widened
    assert schema.find_field("loc.alt").field_id == 17
    assert schema.find_field("points.element.z").field_id == 18
    new_col = schema.find_field("new_col")
    assert (new_col.field_id, new_col.doc, new_col.required) == (19, "added", False)
    assert schema.find_field("new_col.q").field_id == 20
    assert schema.find_field("amount").doc == "money"
    assert last == 20


def test_union_by_name_is_idempotent_for_same_schema() -> None:
    schema, last = update().union_by_name(base_schema()).apply()
    assert schema.fields == base_schema().fields
    assert last == 16


def test_union_by_name_rejects_incompatible_types() -> None:
    with pytest.raises(SchemaError, match="from string to long"):
        update().union_by_name(Schema(NestedField(1, "data", LONG)))
    with pytest.raises(SchemaError, match="different kinds"):
        update().union_by_name(Schema(NestedField(1, "loc", STRING)))


def test_union_by_name_through_lists_and_maps() -> None:
    incoming = Schema(
        NestedField(1, "props", MapType(2, STRING, 3, StructType(NestedField(4, "w", INT)))),
        NestedField(5, "tags", ListType(6, LONG, False)),
    )
    schema, _ = update().union_by_name(incoming).apply()
    assert schema.find_field("props.value.w").field_id == 17
    assert schema.find_field("props.value.v").field_id == 13
    assert schema.find_type("tags.element") == LONG
    with pytest.raises(SchemaError, match="map keys cannot change"):
        update().union_by_name(Schema(NestedField(1, "props", MapType(2, LONG, 3, INT))))


def test_union_by_name_required_incoming_field_added_as_optional() -> None:
    schema, _ = update().union_by_name(Schema(NestedField(1, "r", INT, required=True))).apply()
    assert not schema.find_field("r").required


# -- builder behaviour ----------------------------------------------------------------


def test_context_manager_calls_on_commit_on_success() -> None:
    seen: list[UpdateSchema] = []
    with UpdateSchema(base_schema(), 16, 2, on_commit=seen.append) as u:
        u.add_column("x", INT)
    assert seen == [u]
    assert seen[0].apply()[0].find_field("x").field_id == 17


def test_context_manager_does_nothing_on_exception() -> None:
    seen: list[UpdateSchema] = []
    with (
        pytest.raises(RuntimeError),
        UpdateSchema(base_schema(), 16, 2, on_commit=seen.append) as u,
    ):
        u.add_column("x", INT)
        raise RuntimeError("boom")
    assert seen == []


def test_context_manager_without_callback_validates() -> None:
    with pytest.raises(SchemaError, match="identifier"), UpdateSchema(base_schema(), 16, 2) as u:
        u.delete_column("id")


def test_apply_does_not_change_the_base_and_is_repeatable() -> None:
    base = base_schema()
    u = UpdateSchema(base, 16, 2).add_column("x", INT).rename_column("data", "d")
    first = u.apply()
    assert u.apply() == first
    assert base == base_schema()
    assert base.find_field("data").field_id == 2


def test_no_changes_gives_equal_structure() -> None:
    schema, last = update().apply()
    assert schema.same_structure(base_schema())
    assert last == 16


def test_round_trip_ids_after_many_changes() -> None:
    schema, last = (
        update()
        .add_column("a", INT)
        .add_column("loc.b", INT)
        .delete_column("data")
        .rename_column("tags", "labels")
        .add_column("data", STRING)
        .apply()
    )
    # a second update on the result continues from the new last id
    schema2, last2 = UpdateSchema(schema, last, 2).add_column("c", INT).apply()
    assert schema2.find_field("c").field_id == last + 1 == last2 == 20
    ids = schema2.field_ids()
    assert len(ids) == len(set(ids))
    assert schema2.find_field("labels").field_id == 14


# -- properties -----------------------------------------------------------------------

_OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "add_nested", "rename", "delete", "promote", "move"]),
        st.integers(min_value=0, max_value=30),
    ),
    max_size=12,
)


@settings(max_examples=60)
@given(_OPS)
def test_random_changes_keep_ids_unique_and_stable(ops: list[tuple[str, int]]) -> None:
    """Whatever sequence of changes is accepted, field ids stay unique, surviving columns
    keep their ids and kinds, and new ids are above the old last-column-id."""
    base = base_schema()
    u = UpdateSchema(base, 16, 2).set_identifier_fields()
    for counter, (op, n) in enumerate(ops):
        top = [f.name for f in u.apply()[0].fields]
        name = top[n % len(top)] if top else "x"
        try:
            if op == "add":
                u.add_column(f"c{counter}", INT)
            elif op == "add_nested":
                u.add_column(f"{name}.c{counter}", StructType(NestedField(1, "q", LONG)))
            elif op == "rename":
                u.rename_column(name, f"r{counter}")
            elif op == "delete":
                u.delete_column(name)
            elif op == "promote":
                u.update_column(name, LONG)
            else:
                u.move_first(name)
        except SchemaError:
            pass  # a rejected change leaves the builder as it was
    schema, last = u.apply()
    ids = schema.field_ids()
    assert len(ids) == len(set(ids))
    assert max(ids, default=0) <= last
    for fid in ids:
        old = base.find_field_or_none(fid)
        if old is None:
            assert fid > 16
        else:
            new_type = schema.find_field(fid).field_type
            assert new_type.is_nested == old.field_type.is_nested
