"""Tests of the sort order builder (spec "Sorting") and sort_order_from_terms."""

from __future__ import annotations

import pytest

from neve.actions.update_sort_order import UpdateSortOrder, sort_order_from_terms
from neve.errors import SchemaError
from neve.spec.partition import UNPARTITIONED
from neve.spec.schema import Schema
from neve.spec.sort_order import UNSORTED, NullOrder, SortDirection, SortField, SortOrder
from neve.spec.table_metadata import TableMetadata
from neve.spec.transforms import BucketTransform, DayTransform, IdentityTransform
from neve.spec.types import (
    BOOLEAN,
    LONG,
    STRING,
    TIMESTAMP,
    ListType,
    NestedField,
    StructType,
)

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "ts", TIMESTAMP),
    NestedField(3, "name", STRING),
    NestedField(4, "flag", BOOLEAN),
    NestedField(5, "loc", StructType(NestedField(6, "city", STRING))),
    NestedField(7, "tags", ListType(8, STRING)),
)

ASC, DESC = SortDirection.ASC, SortDirection.DESC
FIRST, LAST = NullOrder.NULLS_FIRST, NullOrder.NULLS_LAST


def metadata(orders: tuple[SortOrder, ...] = (UNSORTED,)) -> TableMetadata:
    return TableMetadata(
        format_version=2,
        table_uuid="00000000-0000-0000-0000-000000000000",
        location="/tmp/t",
        last_sequence_number=0,
        last_updated_ms=0,
        last_column_id=8,
        schemas=(SCHEMA,),
        current_schema_id=0,
        partition_specs=(UNPARTITIONED,),
        default_spec_id=0,
        last_partition_id=999,
        sort_orders=orders,
        default_sort_order_id=orders[-1].order_id,
    )


def test_asc_desc_default_null_orders() -> None:
    order = UpdateSortOrder(metadata()).asc("id").desc("ts").apply()
    assert order == SortOrder(
        1,
        (
            SortField(1, IdentityTransform(), ASC, FIRST),
            SortField(2, IdentityTransform(), DESC, LAST),
        ),
    )


def test_explicit_null_orders_and_transform_terms() -> None:
    order = (
        UpdateSortOrder(metadata())
        .asc("bucket(4, id)", NullOrder.NULLS_LAST)
        .desc("day(ts)", "nulls-first")
        .asc("loc.city", "last")
        .apply()
    )
    assert order.fields == (
        SortField(1, BucketTransform(4), ASC, LAST),
        SortField(2, DayTransform(), DESC, FIRST),
        SortField(6, IdentityTransform(), ASC, LAST),
    )


def test_unknown_null_order_is_rejected() -> None:
    with pytest.raises(SchemaError, match="null order"):
        UpdateSortOrder(metadata()).asc("id", "sometimes")


def test_no_fields_is_unsorted() -> None:
    assert UpdateSortOrder(metadata()).apply() == UNSORTED


def test_equal_existing_order_id_is_reused() -> None:
    existing = SortOrder(3, (SortField(1, IdentityTransform(), DESC, LAST),))
    md = metadata((UNSORTED, existing))
    assert UpdateSortOrder(md).desc("id").apply() == existing
    # direction or null order differ: a new order with max id + 1
    assert UpdateSortOrder(md).asc("id").apply().order_id == 4
    assert UpdateSortOrder(md).desc("id", NullOrder.NULLS_FIRST).apply().order_id == 4


@pytest.mark.parametrize(
    ("term", "keyword"),
    [
        ("nope", "no such column"),
        ("loc", "not a primitive"),
        ("tags.element", "list or map"),
        ("bucket(4, flag)", "does not apply"),
        ("day(name)", "does not apply"),
    ],
)
def test_invalid_terms(term: str, keyword: str) -> None:
    with pytest.raises(SchemaError, match=keyword):
        UpdateSortOrder(metadata()).asc(term)


def test_duplicate_sort_key_is_rejected() -> None:
    with pytest.raises(SchemaError, match="twice"):
        UpdateSortOrder(metadata()).asc("id").desc("id")


def test_case_insensitive() -> None:
    order = UpdateSortOrder(metadata(), case_sensitive=False).asc("ID").apply()
    assert order.fields[0].source_id == 1
    with pytest.raises(SchemaError, match="no such column"):
        UpdateSortOrder(metadata()).asc("ID")


def test_context_manager() -> None:
    seen: list[UpdateSortOrder] = []
    with UpdateSortOrder(metadata(), on_commit=seen.append) as u:
        u.asc("id")
    assert seen == [u]
    seen.clear()
    with pytest.raises(ValueError), UpdateSortOrder(metadata(), on_commit=seen.append) as u:
        u.asc("id")
        raise ValueError("boom")
    assert seen == []


def test_sort_order_from_terms() -> None:
    order = sort_order_from_terms(
        SCHEMA, ["id", "ts DESC", "bucket(4, name) asc nulls last", "loc.city desc nulls first"]
    )
    assert order == SortOrder(
        1,
        (
            SortField(1, IdentityTransform(), ASC, FIRST),
            SortField(2, IdentityTransform(), DESC, LAST),
            SortField(3, BucketTransform(4), ASC, LAST),
            SortField(6, IdentityTransform(), DESC, FIRST),
        ),
    )
    assert sort_order_from_terms(SCHEMA, []) == UNSORTED
    with pytest.raises(SchemaError, match="no such column"):
        sort_order_from_terms(SCHEMA, ["nope desc"])
    with pytest.raises(SchemaError, match="twice"):
        sort_order_from_terms(SCHEMA, ["id", "id desc"])
