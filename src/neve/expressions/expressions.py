"""The filter expression tree: immutable, hashable, picklable.

Unbound expressions name columns (:class:`Reference`) and carry raw Python values;
:func:`neve.expressions.binding.bind` turns them into bound expressions that hold the
schema field and values converted to the field's type (neve's value representation).

Row semantics (the rule every evaluator in this package follows, as Iceberg-Java's
metrics evaluators do): ``NOT`` is pushed down to the predicates first
(:func:`neve.expressions.visitors.rewrite_not`); then a null value satisfies only
``is_null``, ``not_nan``, ``not_eq``, ``not_in`` and ``not_starts_with``, and a NaN
satisfies only ``not_null``, ``is_nan``, ``not_eq`` and ``not_in`` (comparisons with
NaN are false, as in IEEE 754; -0.0 and 0.0 are equal values, although bounds order
-0.0 first). A comparison with a value beyond the column's range holds for every
value but, like any comparison, not for nulls. Iceberg-Java's row ``Evaluator`` orders
null before every value, so it calls ``null < 5`` true; its own metrics evaluators
prune such files, so we follow the metrics evaluators and keep pruning and row
filtering consistent.

The builder functions (:func:`and_`, :func:`equal`, ...) simplify as they build:
``and_(x, ALWAYS_FALSE)`` is ``ALWAYS_FALSE``, ``is_in(c, [v])`` is ``equal(c, v)``.
The node classes themselves do not simplify.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from neve.errors import ExpressionError
from neve.expressions.operation import Operation
from neve.expressions.text import predicate_text, quote_name
from neve.spec.types import IcebergType, NestedField

__all__ = [
    "ALWAYS_FALSE",
    "ALWAYS_TRUE",
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BooleanExpression",
    "BoundPredicate",
    "BoundReference",
    "Not",
    "Operation",
    "Or",
    "Reference",
    "UnboundPredicate",
    "and_",
    "equal",
    "greater_than",
    "greater_than_or_equal",
    "is_in",
    "is_nan",
    "is_null",
    "less_than",
    "less_than_or_equal",
    "not_",
    "not_equal",
    "not_in",
    "not_nan",
    "not_null",
    "not_starts_with",
    "or_",
    "predicate",
    "starts_with",
]


class BooleanExpression:
    """Base of every expression node. ``&``, ``|`` and ``~`` build simplified trees."""

    __slots__ = ()

    @property
    def is_bound(self) -> bool:
        """True when no unbound predicate is left in the tree."""
        raise NotImplementedError

    def __and__(self, other: BooleanExpression) -> BooleanExpression:
        return and_(self, other)

    def __or__(self, other: BooleanExpression) -> BooleanExpression:
        return or_(self, other)

    def __invert__(self) -> BooleanExpression:
        return not_(self)


class AlwaysTrue(BooleanExpression):
    """The expression every row satisfies (a singleton)."""

    __slots__ = ()
    _instance: AlwaysTrue | None = None

    def __new__(cls) -> AlwaysTrue:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    @property
    def is_bound(self) -> bool:
        return True

    def __reduce__(self) -> tuple[Any, ...]:
        return (AlwaysTrue, ())

    def __repr__(self) -> str:
        return "AlwaysTrue()"

    def __str__(self) -> str:
        return "true"


class AlwaysFalse(BooleanExpression):
    """The expression no row satisfies (a singleton)."""

    __slots__ = ()
    _instance: AlwaysFalse | None = None

    def __new__(cls) -> AlwaysFalse:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    @property
    def is_bound(self) -> bool:
        return True

    def __reduce__(self) -> tuple[Any, ...]:
        return (AlwaysFalse, ())

    def __repr__(self) -> str:
        return "AlwaysFalse()"

    def __str__(self) -> str:
        return "false"


ALWAYS_TRUE = AlwaysTrue()
ALWAYS_FALSE = AlwaysFalse()


@dataclass(frozen=True)
class And(BooleanExpression):
    left: BooleanExpression
    right: BooleanExpression

    @property
    def is_bound(self) -> bool:
        return self.left.is_bound and self.right.is_bound

    def __str__(self) -> str:
        return f"{_paren(self.left, Or)} AND {_paren(self.right, Or)}"


@dataclass(frozen=True)
class Or(BooleanExpression):
    left: BooleanExpression
    right: BooleanExpression

    @property
    def is_bound(self) -> bool:
        return self.left.is_bound and self.right.is_bound

    def __str__(self) -> str:
        return f"{self.left} OR {self.right}"


@dataclass(frozen=True)
class Not(BooleanExpression):
    child: BooleanExpression

    @property
    def is_bound(self) -> bool:
        return self.child.is_bound

    def __str__(self) -> str:
        return f"NOT {_paren(self.child, And, Or)}"


def _paren(expr: BooleanExpression, *kinds: type) -> str:
    return f"({expr})" if isinstance(expr, kinds) else str(expr)


# -- terms ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """An unbound column reference by (dotted) name."""

    name: str

    def __str__(self) -> str:
        return quote_name(self.name)


@dataclass(frozen=True)
class BoundReference:
    """A column bound to a schema field.

    ``accessor`` is the position of the field in each enclosing struct, outermost first,
    so a value is found in a row of nested tuples; ``path`` holds the field names along
    the same way (used to address nested Arrow columns). ``produces_null`` is False when
    the field and all its parents are required.
    """

    field: NestedField
    accessor: tuple[int, ...]
    path: tuple[str, ...]
    produces_null: bool = True

    @property
    def field_id(self) -> int:
        return self.field.field_id

    @property
    def field_type(self) -> IcebergType:
        return self.field.field_type

    @property
    def name(self) -> str:
        return ".".join(self.path)

    def eval(self, row: tuple[Any, ...]) -> Any:
        """The value of this field in a row of (nested) tuples in struct order."""
        value: Any = row
        for pos in self.accessor:
            if value is None:
                return None
            value = value[pos]
        return value

    def __str__(self) -> str:
        return quote_name(self.name)


# -- predicates -------------------------------------------------------------------------


@dataclass(frozen=True)
class UnboundPredicate(BooleanExpression):
    """A predicate on a named column with raw Python values.

    ``literals`` is empty for unary operations, one value for comparisons and
    ``starts_with``, and the distinct values (in given order) for ``in``/``not_in``.
    """

    op: Operation
    term: Reference
    literals: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        _check_arity(self.op, self.literals)

    @property
    def literal(self) -> Any:
        """The single value of a comparison or ``starts_with`` predicate."""
        return self.literals[0]

    @property
    def is_bound(self) -> bool:
        return False

    def negate(self) -> UnboundPredicate:
        return UnboundPredicate(self.op.negate(), self.term, self.literals)

    def __str__(self) -> str:
        return predicate_text(self.op, str(self.term), self.literals, None)


@dataclass(frozen=True)
class BoundPredicate(BooleanExpression):
    """A predicate on a bound field; values are in the field type's representation.

    For ``in``/``not_in`` the literals are distinct and sorted, so equal predicates
    compare equal; :attr:`literal_set` gives them as a set for membership tests.
    """

    op: Operation
    term: BoundReference
    literals: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        _check_arity(self.op, self.literals)

    @property
    def literal(self) -> Any:
        return self.literals[0]

    @cached_property
    def literal_set(self) -> frozenset[Any]:
        return frozenset(self.literals)

    @property
    def is_bound(self) -> bool:
        return True

    def negate(self) -> BoundPredicate:
        return BoundPredicate(self.op.negate(), self.term, self.literals)

    def __str__(self) -> str:
        return predicate_text(self.op, str(self.term), self.literals, self.term.field_type)


def _check_arity(op: Operation, literals: tuple[Any, ...]) -> None:
    if op.is_unary:
        ok = not literals
    elif op.is_set:
        ok = len(literals) >= 1
    else:
        ok = len(literals) == 1
    if not ok:
        raise ExpressionError(
            f"operation {op.value} takes "
            + ("no value" if op.is_unary else "one or more values" if op.is_set else "one value")
            + f", got {len(literals)}"
        )


# -- builders ---------------------------------------------------------------------------


def and_(*exprs: BooleanExpression) -> BooleanExpression:
    """Conjunction of the expressions, simplified (``and_()`` is ALWAYS_TRUE).

    Many operands give a balanced tree, so long conjunctions stay shallow.
    """
    kept: list[BooleanExpression] = []
    for e in exprs:
        _check_expr(e)
        if e is ALWAYS_FALSE:
            return ALWAYS_FALSE
        if e is not ALWAYS_TRUE:
            kept.append(e)
    return _balanced(kept, And) if kept else ALWAYS_TRUE


def or_(*exprs: BooleanExpression) -> BooleanExpression:
    """Disjunction of the expressions, simplified (``or_()`` is ALWAYS_FALSE).

    Many operands give a balanced tree, so long disjunctions stay shallow.
    """
    kept: list[BooleanExpression] = []
    for e in exprs:
        _check_expr(e)
        if e is ALWAYS_TRUE:
            return ALWAYS_TRUE
        if e is not ALWAYS_FALSE:
            kept.append(e)
    return _balanced(kept, Or) if kept else ALWAYS_FALSE


def _balanced(items: list[BooleanExpression], node: type[And] | type[Or]) -> BooleanExpression:
    while len(items) > 1:
        paired: list[BooleanExpression] = [
            node(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)
        ]
        if len(items) % 2:
            paired.append(items[-1])
        items = paired
    return items[0]


def not_(expr: BooleanExpression) -> BooleanExpression:
    """Negation, simplified: constants flip and a double negation cancels."""
    _check_expr(expr)
    if expr is ALWAYS_TRUE:
        return ALWAYS_FALSE
    if expr is ALWAYS_FALSE:
        return ALWAYS_TRUE
    if isinstance(expr, Not):
        return expr.child
    return Not(expr)


def _check_expr(e: object) -> None:
    if not isinstance(e, BooleanExpression):
        raise ExpressionError(
            f"expected a filter expression, got {type(e).__name__} {e!r}; build one with "
            "neve.expressions functions such as equal('x', 1) or parse('x = 1')"
        )


def _ref(name: str | Reference) -> Reference:
    if isinstance(name, Reference):
        return name
    if not isinstance(name, str) or not name:
        raise ExpressionError(f"a column name must be a non-empty string, got {name!r}")
    return Reference(name)


def _check_value(op: Operation, name: str, value: Any) -> Any:
    if value is None:
        hint = "is_null" if op in (Operation.EQ, Operation.IN) else "not_null"
        raise ExpressionError(
            f"cannot use null as a value in {op.value} on {name!r}; use {hint}({name!r}) "
            "to test for nulls"
        )
    if isinstance(value, float) and math.isnan(value):
        hint = "is_nan" if op in (Operation.EQ, Operation.IN) else "not_nan"
        raise ExpressionError(
            f"cannot use NaN as a value in {op.value} on {name!r}; use {hint}({name!r}) "
            "to test for NaN"
        )
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def predicate(
    op: Operation, name: str | Reference, values: Iterable[Any] = ()
) -> BooleanExpression:
    """Build an unbound predicate of any operation, simplified like the named builders."""
    ref = _ref(name)
    if op.is_unary:
        vals = tuple(values)
        if vals:
            raise ExpressionError(f"{op.value} takes no value, got {vals!r}")
        return UnboundPredicate(op, ref)
    if op.is_set:
        if isinstance(values, (str, bytes, bytearray)):
            raise ExpressionError(
                f"{op.value} on {ref.name!r} needs a collection of values, got the single "
                f"value {values!r}; wrap it in a list"
            )
        distinct: dict[Any, None] = {}
        for v in values:
            v = _check_value(op, ref.name, v)
            try:
                distinct[v] = None
            except TypeError:
                raise ExpressionError(
                    f"value {v!r} in {op.value} on {ref.name!r} is not a single value"
                ) from None
        if not distinct:
            return ALWAYS_FALSE if op is Operation.IN else ALWAYS_TRUE
        if len(distinct) == 1:
            single = Operation.EQ if op is Operation.IN else Operation.NOT_EQ
            return UnboundPredicate(single, ref, tuple(distinct))
        return UnboundPredicate(op, ref, tuple(distinct))
    vals = tuple(values)
    if len(vals) != 1:
        raise ExpressionError(f"{op.value} on {ref.name!r} takes one value, got {len(vals)}")
    value = _check_value(op, ref.name, vals[0])
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH) and not isinstance(value, str):
        raise ExpressionError(
            f"{op.value} on {ref.name!r} needs a string prefix, got {type(value).__name__} "
            f"{value!r}"
        )
    return UnboundPredicate(op, ref, (value,))


def is_null(name: str | Reference) -> BooleanExpression:
    return predicate(Operation.IS_NULL, name)


def not_null(name: str | Reference) -> BooleanExpression:
    return predicate(Operation.NOT_NULL, name)


def is_nan(name: str | Reference) -> BooleanExpression:
    return predicate(Operation.IS_NAN, name)


def not_nan(name: str | Reference) -> BooleanExpression:
    return predicate(Operation.NOT_NAN, name)


def less_than(name: str | Reference, value: Any) -> BooleanExpression:
    return predicate(Operation.LT, name, (value,))


def less_than_or_equal(name: str | Reference, value: Any) -> BooleanExpression:
    return predicate(Operation.LT_EQ, name, (value,))


def greater_than(name: str | Reference, value: Any) -> BooleanExpression:
    return predicate(Operation.GT, name, (value,))


def greater_than_or_equal(name: str | Reference, value: Any) -> BooleanExpression:
    return predicate(Operation.GT_EQ, name, (value,))


def equal(name: str | Reference, value: Any) -> BooleanExpression:
    return predicate(Operation.EQ, name, (value,))


def not_equal(name: str | Reference, value: Any) -> BooleanExpression:
    return predicate(Operation.NOT_EQ, name, (value,))


def is_in(name: str | Reference, values: Iterable[Any]) -> BooleanExpression:
    return predicate(Operation.IN, name, values)


def not_in(name: str | Reference, values: Iterable[Any]) -> BooleanExpression:
    return predicate(Operation.NOT_IN, name, values)


def starts_with(name: str | Reference, prefix: str) -> BooleanExpression:
    return predicate(Operation.STARTS_WITH, name, (prefix,))


def not_starts_with(name: str | Reference, prefix: str) -> BooleanExpression:
    return predicate(Operation.NOT_STARTS_WITH, name, (prefix,))
