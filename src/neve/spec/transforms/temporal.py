"""The year, month, day and hour transforms of dates and timestamps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from neve.spec.transforms.base import (
    EPOCH_YEAR,
    MICROS_PER_DAY,
    MICROS_PER_HOUR,
    NANO_TYPES,
    NANOS_PER_DAY,
    NANOS_PER_HOUR,
    TIMESTAMP_TYPES,
    Transform,
    Transformer,
)
from neve.spec.transforms.human import human_day
from neve.spec.transforms.identity import identity_value
from neve.spec.transforms.truncate import wrap_int
from neve.spec.types import (
    DATE,
    INT,
    DateType,
    IcebergType,
)
from neve.spec.values import (
    days_to_civil,
)

__all__ = ["DayTransform", "HourTransform", "MonthTransform", "YearTransform"]


def _to_days(source: IcebergType) -> Callable[[int], int]:
    if isinstance(source, DateType):
        return identity_value
    per_day = NANOS_PER_DAY if isinstance(source, NANO_TYPES) else MICROS_PER_DAY
    return lambda v: v // per_day


class _TimeTransform(Transform):
    """year, month, day and hour: whole units since 1970-01-01, rounded down (floor)
    so that pre-1970 values fall in the unit they belong to."""

    __slots__ = ()
    _rank: ClassVar[int]  # hour 0 < day 1 < month 2 < year 3
    _name: ClassVar[str]

    def __str__(self) -> str:
        return self._name

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, (DateType, *TIMESTAMP_TYPES))

    def result_type(self, source: IcebergType) -> IcebergType:
        return INT

    def _make_transformer(self, source: IcebergType) -> Transformer:
        to_days = _to_days(source)
        unit = self._unit

        def transform(value: Any) -> Any:
            if value is None:
                return None
            return unit(to_days(value))

        return transform

    @staticmethod
    def _unit(days: int) -> int:
        raise NotImplementedError

    @property
    def preserves_order(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform) -> bool:
        # A finer unit orders by any coarser one: hour satisfies day, month and year.
        return isinstance(other, _TimeTransform) and self._rank <= other._rank

    def dedup_name(self) -> str:
        return "time"


def _same_day(days: int) -> int:
    return days


def _years(days: int) -> int:
    return days_to_civil(days)[0] - EPOCH_YEAR


def _months(days: int) -> int:
    year, month, _ = days_to_civil(days)
    return (year - EPOCH_YEAR) * 12 + month - 1


@dataclass(frozen=True)
class YearTransform(_TimeTransform):
    """Years since 1970."""

    _rank: ClassVar[int] = 3
    _name: ClassVar[str] = "year"
    _unit = staticmethod(_years)

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null" if value is None else f"{EPOCH_YEAR + value:04d}"


@dataclass(frozen=True)
class MonthTransform(_TimeTransform):
    """Months since 1970-01."""

    _rank: ClassVar[int] = 2
    _name: ClassVar[str] = "month"
    _unit = staticmethod(_months)

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        if value is None:
            return "null"
        return f"{EPOCH_YEAR + value // 12:04d}-{value % 12 + 1:02d}"


@dataclass(frozen=True)
class DayTransform(_TimeTransform):
    """Days since 1970-01-01; the result type is ``date`` (v3 spec; readers accept int)."""

    _rank: ClassVar[int] = 1
    _name: ClassVar[str] = "day"
    _unit = staticmethod(_same_day)

    def result_type(self, source: IcebergType) -> IcebergType:
        return DATE

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null" if value is None else human_day(value)


@dataclass(frozen=True)
class HourTransform(_TimeTransform):
    """Hours since 1970-01-01 00:00 (timestamps only)."""

    _rank: ClassVar[int] = 0
    _name: ClassVar[str] = "hour"

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, TIMESTAMP_TYPES)

    def _make_transformer(self, source: IcebergType) -> Transformer:
        if isinstance(source, NANO_TYPES):  # at most 2.6 million hours: no overflow
            return lambda v: None if v is None else v // NANOS_PER_HOUR
        # Iceberg-Java casts the hours of a microsecond timestamp to int: beyond 2**31
        # hours from 1970 the value wraps, and neve writes the same (wrapped_ranges)
        return lambda v: None if v is None else wrap_int(32, v // MICROS_PER_HOUR)

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        if value is None:
            return "null"
        days, hour = divmod(value, 24)
        return f"{human_day(days)}-{hour:02d}"
