"""Shared helpers of the evaluators that read serialized bounds (Appendix D)."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from neve.expressions.operation import Operation
from neve.spec.types import PrimitiveType
from neve.spec.values import from_bytes

__all__ = ["BELOW", "COMPARE", "IN_PREDICATE_LIMIT", "decode", "is_nan", "prefix_cmp"]

#: Above this many values an ``in`` predicate is not checked against bounds
#: (Iceberg-Java's limit): a long list costs more than the pruning gains.
IN_PREDICATE_LIMIT = 200

#: The comparison predicates, as functions of (value or bound, literal).
COMPARE: dict[Operation, Callable[[Any, Any], Any]] = {
    Operation.LT: operator.lt,
    Operation.LT_EQ: operator.le,
    Operation.GT: operator.gt,
    Operation.GT_EQ: operator.ge,
}
#: The comparisons that hold for some value below the literal (decided by lower bounds).
BELOW = (Operation.LT, Operation.LT_EQ)


@lru_cache(maxsize=8192)
def decode(field_type: PrimitiveType, data: bytes) -> Any:
    """Decode a bound; cached, because neighbouring manifests and files share bounds."""
    return from_bytes(field_type, data)


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def prefix_cmp(bound: bytes, prefix: bytes) -> int:
    """Compare ``bound`` cut to the prefix's length with the prefix, as unsigned bytes.

    Bounds of string columns may be truncated; cutting them to the prefix length gives
    a valid bound of the values' prefixes, which is what ``starts_with`` needs.
    """
    cut = bound[: len(prefix)]
    return (cut > prefix) - (cut < prefix)
