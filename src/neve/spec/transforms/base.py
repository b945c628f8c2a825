"""The transform contract: a frozen value object applied to a value of a source type (spec "Partition Transforms"), and the constants the transforms share."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from neve.errors import ValidationError
from neve.spec.transforms.human import to_human_string
from neve.spec.types import (
    IcebergType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
)

__all__ = [
    "EPOCH_YEAR",
    "INT_MAX",
    "MICROS_PER_DAY",
    "MICROS_PER_HOUR",
    "MICRO_TYPES",
    "NANOS_PER_DAY",
    "NANOS_PER_HOUR",
    "NANO_TYPES",
    "TIMESTAMP_TYPES",
    "Transform",
    "Transformer",
    "WrappedRange",
    "check_param",
]


MICROS_PER_HOUR = 3_600_000_000
MICROS_PER_DAY = 86_400_000_000
NANOS_PER_HOUR = MICROS_PER_HOUR * 1000
NANOS_PER_DAY = MICROS_PER_DAY * 1000
EPOCH_YEAR = 1970

TIMESTAMP_TYPES = (TimestampType, TimestamptzType, TimestampNsType, TimestamptzNsType)
NANO_TYPES = (TimestampNsType, TimestamptzNsType)
MICRO_TYPES = (TimestampType, TimestamptzType)

INT_MAX = 0x7FFFFFFF

Transformer = Callable[[Any], Any]


class Transform(ABC):
    """A partition (or sort) transform. Subclasses are frozen dataclasses."""

    __slots__ = ()

    @abstractmethod
    def __str__(self) -> str: ...

    @abstractmethod
    def can_transform(self, source: IcebergType) -> bool:
        """Whether the spec allows this transform on a column of type ``source``."""

    def result_type(self, source: IcebergType) -> IcebergType:
        """Type of the transformed values (the partition field's type)."""
        return source

    @abstractmethod
    def _make_transformer(self, source: IcebergType) -> Transformer: ...

    def transformer(self, source: IcebergType) -> Transformer:
        """A per-value function bound to ``source``; null in gives null out."""
        key = (self, source)
        fn = _TRANSFORMERS.get(key)
        if fn is None:
            if not self.can_transform(source):
                raise ValidationError(
                    f"transform {self} cannot be applied to a {source} column; "
                    f"choose a transform the spec allows for {source}"
                )
            fn = self._make_transformer(source)
            _TRANSFORMERS[key] = fn
        return fn

    def apply(self, source: IcebergType, value: Any) -> Any:
        """Transform one value of type ``source`` (None gives None)."""
        if value is None:
            return None
        return self.transformer(source)(value)

    @property
    def preserves_order(self) -> bool:
        """True when a < b implies apply(a) <= apply(b)."""
        return False

    def satisfies_order_of(self, other: Transform) -> bool:
        """Whether data ordered by this transform is also ordered by ``other``."""
        return self == other

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        """The value as Iceberg-Java prints it in partition paths ("null" for None)."""
        return to_human_string(result_type, value)

    def dedup_name(self) -> str:
        """Name used to find redundant partition fields on one column (time transforms
        share "time": day(ts) and hour(ts) on one column are redundant)."""
        return str(self)


_TRANSFORMERS: dict[tuple[Transform, IcebergType], Transformer] = {}


# --------------------------------------------------------------------------- hashing


def check_param(kind: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= INT_MAX:
        raise ValidationError(
            f"{kind} must be a positive 32-bit integer, got {value!r}; e.g. {kind}=16"
        )


@dataclass(frozen=True)
class WrappedRange:
    """Source values ``lo..hi`` (inclusive) whose stored partition value is their exact
    transform result plus ``offset``: where Iceberg-Java's int or long arithmetic
    wraps, neve writes the same wrapped value (see :func:`wrapped_ranges`)."""

    lo: int
    hi: int
    offset: int
