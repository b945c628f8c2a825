"""Predicate operations and their algebra: negation and operand flipping."""

from __future__ import annotations

import enum

from neve.errors import ExpressionError

__all__ = ["Operation"]


class Operation(enum.Enum):
    """Predicate operations, named as in Iceberg-Java and the REST catalog spec."""

    IS_NULL = "is_null"
    NOT_NULL = "not_null"
    IS_NAN = "is_nan"
    NOT_NAN = "not_nan"
    LT = "lt"
    LT_EQ = "lt_eq"
    GT = "gt"
    GT_EQ = "gt_eq"
    EQ = "eq"
    NOT_EQ = "not_eq"
    IN = "in"
    NOT_IN = "not_in"
    STARTS_WITH = "starts_with"
    NOT_STARTS_WITH = "not_starts_with"

    @property
    def is_unary(self) -> bool:
        return self in _UNARY

    @property
    def is_set(self) -> bool:
        return self in _SET

    @property
    def is_literal(self) -> bool:
        return not (self in _UNARY or self in _SET)

    def negate(self) -> Operation:
        """The operation that holds exactly when this one does not (``lt`` -> ``gt_eq``)."""
        return _NEGATE[self]

    def flip(self) -> Operation:
        """The operation with its operands swapped (``5 < x`` is ``x > 5``)."""
        try:
            return _FLIP[self]
        except KeyError:
            raise ExpressionError(f"operation {self.value} has no flipped form") from None


_UNARY = frozenset({Operation.IS_NULL, Operation.NOT_NULL, Operation.IS_NAN, Operation.NOT_NAN})
_SET = frozenset({Operation.IN, Operation.NOT_IN})
_NEGATE = {
    Operation.IS_NULL: Operation.NOT_NULL,
    Operation.NOT_NULL: Operation.IS_NULL,
    Operation.IS_NAN: Operation.NOT_NAN,
    Operation.NOT_NAN: Operation.IS_NAN,
    Operation.LT: Operation.GT_EQ,
    Operation.LT_EQ: Operation.GT,
    Operation.GT: Operation.LT_EQ,
    Operation.GT_EQ: Operation.LT,
    Operation.EQ: Operation.NOT_EQ,
    Operation.NOT_EQ: Operation.EQ,
    Operation.IN: Operation.NOT_IN,
    Operation.NOT_IN: Operation.IN,
    Operation.STARTS_WITH: Operation.NOT_STARTS_WITH,
    Operation.NOT_STARTS_WITH: Operation.STARTS_WITH,
}
_FLIP = {
    Operation.LT: Operation.GT,
    Operation.LT_EQ: Operation.GT_EQ,
    Operation.GT: Operation.LT,
    Operation.GT_EQ: Operation.LT_EQ,
    Operation.EQ: Operation.EQ,
    Operation.NOT_EQ: Operation.NOT_EQ,
}
