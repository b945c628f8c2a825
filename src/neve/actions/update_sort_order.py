"""Sort order changes as a pure builder (spec "Sorting").

:class:`UpdateSortOrder` collects sort fields — a column or a transform of one, a
direction and a null order — and :meth:`UpdateSortOrder.apply` returns the new
:class:`SortOrder` that replaces the table's default order. No I/O, no commit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from neve.actions.base import ChangeBuilder
from neve.actions.update_spec import resolve_transform_source
from neve.errors import SchemaError
from neve.spec.schema import Schema
from neve.spec.sort_order import UNSORTED, NullOrder, SortDirection, SortField, SortOrder
from neve.spec.table_metadata import TableMetadata
from neve.spec.transforms import parse_partition_term

__all__ = ["UpdateSortOrder", "sort_order_from_terms"]

_SORT_TERM = re.compile(
    r"^(?P<term>.+?)(?:\s+(?P<dir>asc|desc))?(?:\s+nulls\s+(?P<nulls>first|last))?$",
    re.IGNORECASE,
)


def _null_order(value: NullOrder | str) -> NullOrder:
    if isinstance(value, NullOrder):
        return value
    key = value.strip().lower().replace("_", "-").replace(" ", "-")
    for order in NullOrder:
        if key in (order.value, order.value.removeprefix("nulls-")):
            return order
    raise SchemaError(f"unknown null order {value!r}; use 'nulls-first' or 'nulls-last'")


def _sort_field(
    schema: Schema,
    term: str,
    direction: SortDirection,
    null_order: NullOrder,
    case_sensitive: bool,
) -> SortField:
    transform, column = parse_partition_term(term)
    src = resolve_transform_source(schema, column, transform, case_sensitive, purpose="sort")
    return SortField(src.field_id, transform, direction, null_order)


def _append(fields: list[SortField], new: SortField, term: str) -> None:
    for f in fields:
        if f.source_id == new.source_id and f.transform == new.transform:
            raise SchemaError(f"cannot sort by {term!r} twice; each sort key may appear once")
    fields.append(new)


def sort_order_from_terms(schema: Schema, terms: Iterable[str], order_id: int = 1) -> SortOrder:
    """A sort order from terms such as ``"id"``, ``"ts desc"``, ``"bucket(4, id) asc nulls
    last"``: a column or transform term, then optionally ``asc``/``desc`` (default asc)
    and ``nulls first``/``nulls last`` (default first for asc, last for desc). No terms
    give the unsorted order (id 0)."""
    fields: list[SortField] = []
    for text in terms:
        m = _SORT_TERM.match(text.strip())
        if m is None:
            raise SchemaError(f"cannot parse sort term {text!r}; write e.g. 'ts desc nulls last'")
        desc = (m.group("dir") or "asc").lower() == "desc"
        direction = SortDirection.DESC if desc else SortDirection.ASC
        nulls = m.group("nulls")
        if nulls is None:
            null_order = NullOrder.NULLS_LAST if desc else NullOrder.NULLS_FIRST
        else:
            null_order = _null_order(nulls)
        _append(fields, _sort_field(schema, m.group("term"), direction, null_order, True), text)
    if not fields:
        return UNSORTED
    return SortOrder(order_id, tuple(fields))


class UpdateSortOrder(ChangeBuilder):
    """Builds a new sort order for ``metadata``'s current schema. Fields are added in
    call order; no call at all gives the unsorted order (id 0). A context manager: on a
    normal exit ``on_commit(self)`` is called (without a callback the order is only
    validated); on an exception nothing happens."""

    def __init__(
        self,
        metadata: TableMetadata,
        case_sensitive: bool = True,
        on_commit: Callable[[UpdateSortOrder], None] | None = None,
    ) -> None:
        self._md = metadata
        self._schema = metadata.schema()
        self._case_sensitive = case_sensitive
        self._on_commit = on_commit
        self._fields: list[SortField] = []

    def asc(
        self, term: str, null_order: NullOrder | str = NullOrder.NULLS_FIRST
    ) -> UpdateSortOrder:
        """Sort ascending by a column (``"id"``) or a transform term (``"bucket(4, id)"``)."""
        return self._add(term, SortDirection.ASC, _null_order(null_order))

    def desc(
        self, term: str, null_order: NullOrder | str = NullOrder.NULLS_LAST
    ) -> UpdateSortOrder:
        """Sort descending by a column or a transform term."""
        return self._add(term, SortDirection.DESC, _null_order(null_order))

    def _add(self, term: str, direction: SortDirection, null_order: NullOrder) -> UpdateSortOrder:
        new = _sort_field(self._schema, term, direction, null_order, self._case_sensitive)
        _append(self._fields, new, term)
        return self

    def apply(self) -> SortOrder:
        """The new sort order: id 0 when unsorted, the id of an equal existing order, or
        the highest order id + 1."""
        fields = tuple(self._fields)
        if not fields:
            return UNSORTED
        for order in self._md.sort_orders:
            if order.fields == fields:
                return SortOrder(order.order_id, fields)
        next_id = max((o.order_id for o in self._md.sort_orders), default=0) + 1
        return SortOrder(next_id, fields)
