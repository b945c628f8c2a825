"""Sort orders (spec "Sorting"): a list of transformed source columns with direction
and null order. Order id 0 is reserved for the unsorted order."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from neve.spec.transforms import Transform

__all__ = ["UNSORTED", "NullOrder", "SortDirection", "SortField", "SortOrder"]


class SortDirection(enum.Enum):
    ASC = "asc"
    DESC = "desc"


class NullOrder(enum.Enum):
    NULLS_FIRST = "nulls-first"
    NULLS_LAST = "nulls-last"


@dataclass(frozen=True)
class SortField:
    source_id: int
    transform: Transform
    direction: SortDirection = SortDirection.ASC
    null_order: NullOrder = NullOrder.NULLS_FIRST


@dataclass(frozen=True)
class SortOrder:
    order_id: int = 0
    fields: tuple[SortField, ...] = ()

    @property
    def is_unsorted(self) -> bool:
        return not self.fields


UNSORTED = SortOrder(0, ())
