"""Hypothesis strategies shared by the tests: Iceberg primitive types and their values in
neve's representation (dates as days, timestamps as micros or nanos, ...).

Import it as ``from strategies import ...``: pytest's default ("prepend") import mode puts
``tests/`` on ``sys.path`` because ``tests/conftest.py`` sits there without an
``__init__.py`` (so under pytest-xdist too).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from neve.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UUID,
    DecimalType,
    FixedType,
    PrimitiveType,
)

__all__ = ["INT32", "INT64", "SIMPLE_PRIMITIVES", "decimals", "values_of"]

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)

_FIXED_WIDTH: dict[PrimitiveType, st.SearchStrategy[Any]] = {
    BOOLEAN: st.booleans(),
    INT: INT32,
    LONG: INT64,
    FLOAT: st.floats(width=32, allow_nan=False),
    DOUBLE: st.floats(allow_nan=False),
    DATE: INT32,
    TIME: st.integers(0, 86_400_000_000 - 1),
    TIMESTAMP: INT64,
    TIMESTAMPTZ: INT64,
    TIMESTAMP_NS: INT64,
    TIMESTAMPTZ_NS: INT64,
}
#: Every primitive type without parameters that holds values, in the spec's order.
SIMPLE_PRIMITIVES: tuple[PrimitiveType, ...] = (*_FIXED_WIDTH, STRING, UUID, BINARY)


def decimals(t: DecimalType) -> st.SearchStrategy[Decimal]:
    """Every decimal of ``t``, with exponent ``-scale`` (built apart from neve's code)."""
    limit = 10**t.precision - 1
    return st.integers(-limit, limit).map(lambda u: Decimal(f"{u}E{-t.scale}"))


def values_of(t: PrimitiveType, max_size: int | None = None) -> st.SearchStrategy[Any]:
    """Values of ``t`` (NaN left out); ``max_size`` caps strings and binaries."""
    if t in _FIXED_WIDTH:
        return _FIXED_WIDTH[t]
    if t == STRING:
        return st.text(max_size=max_size)
    if t == UUID:
        return st.uuids()
    if t == BINARY:
        return st.binary(max_size=max_size)
    if isinstance(t, FixedType):
        return st.binary(min_size=t.length, max_size=t.length)
    if isinstance(t, DecimalType):
        return decimals(t)
    raise ValueError(f"no value strategy for {t}")
