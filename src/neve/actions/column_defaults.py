"""Default values of columns in a schema change (spec "Default values", format v3).

A default is given in neve's Python value form or as Python's own dates, times and
datetimes; it is checked against the column type and made canonical by a round trip
through the JSON single-value form it is stored in, so a value that form cannot hold
is refused when the change is made rather than at commit.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from neve.errors import SchemaError, ValidationError
from neve.spec import temporal, values
from neve.spec.types import (
    DateType,
    DecimalType,
    IcebergType,
    NestedType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UnknownType,
    VariantType,
)

__all__ = ["coerce_default", "same_default"]


def _from_python(value: Any, t: IcebergType, where: str) -> Any:
    """Python's dates, times and datetimes in neve's value form (days, microseconds).
    A ``timestamp`` takes a naive datetime and a ``timestamptz`` an aware one, so no
    time zone is guessed."""
    if isinstance(t, DateType) and isinstance(value, dt.date):
        if isinstance(value, dt.datetime):
            raise SchemaError(
                f"default {value!r} of {where!r} is a datetime but the column is a date; "
                "give a datetime.date"
            )
        return temporal.date_to_days(value)
    if isinstance(t, TimeType) and isinstance(value, dt.time):
        return temporal.time_to_micros(value)
    if isinstance(t, (TimestampType, TimestamptzType)) and isinstance(value, dt.datetime):
        zoned = isinstance(t, TimestamptzType)
        if (value.tzinfo is not None) != zoned:
            want = "an aware datetime (with tzinfo)" if zoned else "a naive datetime"
            raise SchemaError(f"default {value!r} of {where!r} does not fit type {t}: give {want}")
        return temporal.datetime_to_micros(value)
    return value


def coerce_default(value: Any, t: IcebergType, where: str) -> Any:
    """Check a default value against its column type (neve's Python value form) and
    return it canonical. Defaults are stored in the JSON single-value form, so a value
    that form cannot hold is rejected here rather than at commit."""
    if isinstance(t, (NestedType, UnknownType, VariantType)):
        raise SchemaError(
            f"column {where!r} of type {t} cannot have a default value; "
            "give defaults to primitive fields only"
        )
    value = _from_python(value, t, where)
    try:
        out = values.from_json(t, values.to_json(t, value))
    except (ValidationError, TypeError, ValueError, ArithmeticError) as exc:
        raise SchemaError(
            f"default {value!r} of {where!r} does not fit type {t} ({exc}); give a value "
            "of the column's type (int for int/long, datetime.date for date, a naive "
            "datetime for timestamp and an aware one for timestamptz, or their int form "
            "in days / microseconds; Decimal for decimal, bytes for binary ...)"
        ) from exc
    if isinstance(t, DecimalType) and len(out.as_tuple().digits) > t.precision:
        raise SchemaError(
            f"default {value!r} of {where!r} does not fit type {t}: more than {t.precision} digits"
        )
    return out


def same_default(t: IcebergType, a: Any, b: Any) -> bool:
    """Whether two defaults are one value (by their JSON form, so -0.0 is not 0.0)."""
    if a is None or b is None:
        return a is None and b is None
    return json.dumps(values.to_json(t, a)) == json.dumps(values.to_json(t, b))
