"""Conversions between Python dates/times and Iceberg's integer representations.

Iceberg stores dates as days since 1970-01-01, times as microseconds since midnight,
timestamps as microseconds (or nanoseconds for the ``_ns`` types) since the epoch.
Naive datetimes are read as UTC wall-clock time.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from neve.errors import ValidationError

__all__ = [
    "EPOCH_DATE",
    "EPOCH_UTC",
    "date_to_days",
    "datetime_to_micros",
    "datetime_to_nanos",
    "days_to_date",
    "micros_to_datetime",
    "micros_to_time",
    "nanos_to_datetime",
    "parse_iso_date",
    "parse_iso_time",
    "parse_iso_timestamp",
    "parse_iso_timestamp_ns",
    "time_to_micros",
    "timestamp_millis",
]

EPOCH_DATE = _dt.date(1970, 1, 1)
EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
_US = _dt.timedelta(microseconds=1)


def date_to_days(d: _dt.date) -> int:
    if isinstance(d, _dt.datetime):
        d = d.date()
    return (d - EPOCH_DATE).days


def days_to_date(days: int) -> _dt.date:
    return EPOCH_DATE + _dt.timedelta(days=days)


def time_to_micros(t: _dt.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond


def micros_to_time(micros: int) -> _dt.time:
    seconds, us = divmod(micros, 1_000_000)
    minutes, s = divmod(seconds, 60)
    h, m = divmod(minutes, 60)
    return _dt.time(h, m, s, us)


def datetime_to_micros(ts: _dt.datetime) -> int:
    """Microseconds since the epoch; aware datetimes are converted to UTC first."""
    if ts.tzinfo is not None:
        return (ts - EPOCH_UTC) // _US
    return (ts - _EPOCH_NAIVE) // _US


def datetime_to_nanos(ts: _dt.datetime) -> int:
    return datetime_to_micros(ts) * 1000


def micros_to_datetime(micros: int, with_tz: bool = False) -> _dt.datetime:
    if with_tz:
        return EPOCH_UTC + _dt.timedelta(microseconds=micros)
    return _EPOCH_NAIVE + _dt.timedelta(microseconds=micros)


def nanos_to_datetime(nanos: int, with_tz: bool = False) -> _dt.datetime:
    """Loses the sub-microsecond part (Python datetimes stop at microseconds)."""
    return micros_to_datetime(nanos // 1000, with_tz)


def parse_iso_date(text: str) -> int:
    return date_to_days(_dt.date.fromisoformat(text.strip()))


def parse_iso_time(text: str) -> int:
    return time_to_micros(_dt.time.fromisoformat(text.strip()))


def _parse_datetime(text: str) -> _dt.datetime:
    s = text.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    if len(s) == 10:  # a bare date means midnight
        return _dt.datetime.fromisoformat(s + "T00:00:00")
    return _dt.datetime.fromisoformat(s)


def parse_iso_timestamp(text: str, with_tz: bool) -> int:
    """Microseconds since the epoch for an ISO-8601 timestamp string.

    For ``timestamptz`` a string without an offset is taken as UTC; for ``timestamp``
    an offset is rejected by raising ValueError, since the value has no zone.
    """
    ts = _parse_datetime(text)
    if with_tz:
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=_dt.timezone.utc)
    elif ts.tzinfo is not None:
        raise ValueError(f"timestamp without time zone cannot carry an offset: {text!r}")
    return datetime_to_micros(ts)


def parse_iso_timestamp_ns(text: str, with_tz: bool) -> int:
    """Nanoseconds since the epoch; keeps up to 9 fractional digits."""
    s = text.strip()
    frac_ns = 0
    dot = s.find(".")
    if dot != -1:
        end = dot + 1
        while end < len(s) and s[end].isdigit():
            end += 1
        digits = s[dot + 1 : end]
        frac_ns = int((digits + "000000000")[:9])
        s = s[:dot] + s[end:]
    return parse_iso_timestamp(s, with_tz) * 1000 + frac_ns


def timestamp_millis(value: Any) -> int:
    """Milliseconds since the epoch from an int (ms), a datetime or an ISO string."""
    if isinstance(value, bool):
        raise ValidationError("as_of must be a timestamp, not a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return parse_iso_timestamp(value, with_tz=True) // 1000
        except ValueError as exc:
            raise ValidationError(
                f"cannot read {value!r} as a time: give an ISO-8601 timestamp such as "
                "'2024-05-01T12:00:00+00:00', epoch milliseconds, or a datetime"
            ) from exc
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return int(value.timestamp() * 1000)
    raise ValidationError(f"as_of must be epoch millis, a datetime or an ISO string, not {value!r}")
