"""Partition transforms (spec "Partition Transforms", Appendix B hashing).

Transforms are frozen value objects, not bound to a source type: ``apply(source, value)``
and ``transformer(source)`` take the source type. Values use neve's representation (see
:mod:`neve.spec.values`). ``str(t)`` is the spec name ("bucket[16]") and
:func:`parse_transform` reads it back; :func:`parse_partition_term` reads user terms
such as ``"day(ts)"`` or ``"bucket(16, id)"``.

Where Iceberg-Java's behaviour is observable on disk (bucket numbers, truncation with
32/64-bit overflow, hours beyond 2**31 cast to int, partition directory names) it is
followed exactly; :func:`wrapped_ranges` and :func:`exact_transformer` describe where
the overflow makes stored values differ from the exact ones.
"""

from neve.spec.transforms.base import Transform, WrappedRange
from neve.spec.transforms.bucket import BucketTransform, hash_value
from neve.spec.transforms.human import to_human_string
from neve.spec.transforms.identity import IdentityTransform
from neve.spec.transforms.parse import parse_partition_term, parse_transform
from neve.spec.transforms.ranges import exact_transformer, wrapped_ranges
from neve.spec.transforms.temporal import DayTransform, HourTransform, MonthTransform, YearTransform
from neve.spec.transforms.truncate import TruncateTransform, decimal_truncate_overflow
from neve.spec.transforms.void import UnknownTransform, VoidTransform

__all__ = [
    "BucketTransform",
    "DayTransform",
    "HourTransform",
    "IdentityTransform",
    "MonthTransform",
    "Transform",
    "TruncateTransform",
    "UnknownTransform",
    "VoidTransform",
    "WrappedRange",
    "YearTransform",
    "decimal_truncate_overflow",
    "exact_transformer",
    "hash_value",
    "parse_partition_term",
    "parse_transform",
    "to_human_string",
    "wrapped_ranges",
]
