"""Streaming consumers: how far a named reader of a table's changes has read, kept in
the table itself so that expiring snapshots leaves it what it still has to read.

A consumer is a tag ``neve-consumer-<name>`` on the last snapshot it has consumed. A
tag is a ref every Iceberg engine knows: Iceberg-Java's, pyiceberg's and neve's
``expire_snapshots`` keep a tagged snapshot, and neve's expiration also keeps the
snapshots after it on a branch (what the consumer reads next). The consumer's
expiration time is the tag's ``max-ref-age-ms``, so every engine that expires
snapshots forgets a consumer whose tagged snapshot is older than that, and with it
what it held back (docs/STREAMING.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from neve.errors import ValidationError
from neve.spec.refs import CONSUMER_TAG_PREFIX
from neve.spec.table_metadata import TableMetadata

__all__ = [
    "Consumer",
    "consumer_tag",
    "find_consumer",
    "list_consumers",
    "parse_duration_ms",
]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$")
_UNITS = {
    "ms": 1,
    "s": 1000,
    "sec": 1000,
    "min": 60_000,
    "m": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
}
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|sec|min|m|h|d)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Consumer:
    """A consumer: its name, the last snapshot it consumed, and after how many
    milliseconds past that snapshot's commit it is forgotten (None: never)."""

    name: str
    snapshot_id: int
    expiration_ms: int | None

    @property
    def tag(self) -> str:
        return consumer_tag(self.name)


def consumer_tag(name: str) -> str:
    """The tag that records consumer ``name``."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValidationError(
            f"consumer id {name!r}: use letters, digits, '.', '_' and '-' "
            "(starting with a letter or digit, at most 200 characters)"
        )
    return CONSUMER_TAG_PREFIX + name


def parse_duration_ms(text: str | int) -> int:
    """``consumer.expiration-time`` as milliseconds: ``"7d"``, ``"12 h"``, ``"30min"``,
    ``"45s"``, ``"500ms"`` or a number of milliseconds."""
    if isinstance(text, int) and not isinstance(text, bool):
        value, unit = text, "ms"
    else:
        m = _DURATION.match(str(text))
        if m is None:
            raise ValidationError(
                f"consumer.expiration-time={text!r} is not a duration; write e.g. '7d', "
                "'12h', '30min', '45s', '500ms' or a number of milliseconds"
            )
        value, unit = int(m.group(1)), (m.group(2) or "ms").lower()
    if value <= 0:
        raise ValidationError(f"consumer.expiration-time={text!r} must be positive")
    return value * _UNITS[unit]


def list_consumers(metadata: TableMetadata) -> list[Consumer]:
    """The table's consumers, by name."""
    return [
        Consumer(name[len(CONSUMER_TAG_PREFIX) :], ref.snapshot_id, ref.max_ref_age_ms)
        for name, ref in sorted(metadata.refs.items())
        if name.startswith(CONSUMER_TAG_PREFIX) and not ref.is_branch
    ]


def find_consumer(metadata: TableMetadata, name: str) -> Consumer | None:
    """Consumer ``name``, or None when the table has none of that name (never recorded,
    removed, or expired)."""
    tag = consumer_tag(name)
    return next((c for c in list_consumers(metadata) if c.tag == tag), None)
