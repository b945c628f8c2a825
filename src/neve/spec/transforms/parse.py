"""Reading transform names ("bucket[16]") and user partition terms ("day(ts)", "bucket(16, id)")."""

from __future__ import annotations

import re

from neve.errors import ValidationError
from neve.spec.transforms.base import Transform
from neve.spec.transforms.bucket import BucketTransform
from neve.spec.transforms.identity import IdentityTransform
from neve.spec.transforms.temporal import DayTransform, HourTransform, MonthTransform, YearTransform
from neve.spec.transforms.truncate import TruncateTransform
from neve.spec.transforms.void import UnknownTransform, VoidTransform

__all__ = ["parse_partition_term", "parse_transform"]


_SIMPLE: dict[str, Transform] = {
    "identity": IdentityTransform(),
    "year": YearTransform(),
    "month": MonthTransform(),
    "day": DayTransform(),
    "hour": HourTransform(),
    "void": VoidTransform(),
}
_PARAMETERIZED = re.compile(r"^(bucket|truncate)\s*\[\s*(\d+)\s*\]$")


def parse_transform(text: str) -> Transform:
    """Read a transform's spec name ("identity", "bucket[16]", "day", ...). A name
    neve does not know gives an :class:`UnknownTransform`, so the table stays readable."""
    key = text.strip().lower()
    simple = _SIMPLE.get(key)
    if simple is not None:
        return simple
    m = _PARAMETERIZED.match(key)
    if m is not None:
        n = int(m.group(2))
        return BucketTransform(n) if m.group(1) == "bucket" else TruncateTransform(n)
    return UnknownTransform(text)


_TERM_FUNCTIONS: dict[str, Transform] = {
    "identity": IdentityTransform(),
    "year": YearTransform(),
    "years": YearTransform(),
    "month": MonthTransform(),
    "months": MonthTransform(),
    "day": DayTransform(),
    "days": DayTransform(),
    "date": DayTransform(),
    "hour": HourTransform(),
    "hours": HourTransform(),
    "date_hour": HourTransform(),
    "void": VoidTransform(),
}
_CALL = re.compile(r"^([A-Za-z_]\w*)\s*\((.*)\)$", re.DOTALL)
_TERM_HELP = (
    "use a column name or one of year(col), month(col), day(col), hour(col), "
    "bucket(N, col), truncate(W, col), identity(col), void(col)"
)


def _column_name(text: str, term: str) -> str:
    name = text.strip()
    if len(name) >= 2 and name[0] == name[-1] == "`":
        name = name[1:-1].replace("``", "`")
    elif "`" in name or "(" in name or ")" in name or "," in name:
        raise ValidationError(f"invalid column name {text.strip()!r} in {term!r}; {_TERM_HELP}")
    if not name:
        raise ValidationError(f"missing column name in partition term {term!r}; {_TERM_HELP}")
    return name


def _split_args(args: str) -> list[str]:
    """Split on commas outside backquotes."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in args:
        if ch == "`":
            quoted = not quoted
        if ch == "," and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def parse_partition_term(text: str) -> tuple[Transform, str]:
    """Read a partition term as users write it: ``"category"``, ``"day(ts)"``,
    ``"bucket(16, id)"``, ``"truncate(4, name)"`` (the number may also come second, as
    in Spark's ``truncate(name, 4)``). Returns the transform and the column name."""
    term = text.strip()
    m = _CALL.match(term)
    if m is None:
        return IdentityTransform(), _column_name(term, text)
    func = m.group(1).lower()
    args = _split_args(m.group(2))
    if func in ("bucket", "truncate"):
        if len(args) != 2:
            raise ValidationError(
                f"{func} takes a number and a column, got {text.strip()!r}; "
                f"write e.g. {func}(16, col)"
            )
        first, second = (a.strip() for a in args)
        if first.isdigit():
            number, column = int(first), second
        elif second.isdigit():
            number, column = int(second), first
        else:
            raise ValidationError(
                f"{func} needs a positive whole number in {text.strip()!r}; "
                f"write e.g. {func}(16, col)"
            )
        transform: Transform = (
            BucketTransform(number) if func == "bucket" else TruncateTransform(number)
        )
        return transform, _column_name(column, text)
    found = _TERM_FUNCTIONS.get(func)
    if found is None:
        raise ValidationError(
            f"unknown partition transform {func!r} in {text.strip()!r}; {_TERM_HELP}"
        )
    if len(args) != 1:
        raise ValidationError(f"{func} takes exactly one column, got {text.strip()!r}")
    return found, _column_name(args[0], text)
