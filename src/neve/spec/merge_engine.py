"""The merge engine of a primary-key table, as its properties describe it (Paimon's
option names, so a Paimon user recognises them; other engines ignore them).

``merge-engine`` says what happens when rows arrive for a key the table holds or that a
batch holds more than once: ``deduplicate`` (the last row wins; the default),
``partial-update`` (non-null fields overwrite, nulls never do), ``aggregation`` (one
function per column, ``fields.<col>.aggregate-function``) or ``first-row`` (the first
row stays). ``sequence.field`` orders the rows of a key, ``rowkind.field`` names the
source column of change kinds (``+I``, ``-U``, ``+U``, ``-D``) and ``ignore-delete``
drops retractions. docs/MERGE-ENGINES.md has the semantics.

The properties are checked against the schema whenever either changes
(:func:`check_merge_properties`, called by ``spec.metadata_builder.apply_updates`` and
table creation): a bad combination is a :class:`MergeEngineError` and the change is not
made. :func:`merge_engine` parses them for the engines that apply them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from neve.errors import MergeEngineError
from neve.spec.schema import Schema
from neve.spec.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
)

__all__ = [
    "AGGREGATE_FUNCTIONS",
    "MERGE_ENGINES",
    "RETRACTABLE_FUNCTIONS",
    "ROW_KINDS",
    "FieldAggregate",
    "MergeEngine",
    "check_merge_properties",
    "is_merge_property",
    "merge_engine",
]

#: The values of ``merge-engine``.
MERGE_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")

#: The values of the row-kind column: insert, update before, update after, delete.
ROW_KINDS = ("+I", "-U", "+U", "-D")

_NUMERIC: tuple[type[IcebergType], ...] = (
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
)
_TEMPORAL: tuple[type[IcebergType], ...] = (
    DateType,
    TimeType,
    TimestampType,
    TimestamptzType,
    TimestampNsType,
    TimestamptzNsType,
)
_ORDERED = (*_NUMERIC, *_TEMPORAL, StringType)

#: Aggregate functions and the column types they take (None: any type).
AGGREGATE_FUNCTIONS: Mapping[str, tuple[tuple[type[IcebergType], ...] | None, str]] = {
    "sum": (_NUMERIC, "a numeric column (int, long, float, double, decimal)"),
    "product": (_NUMERIC, "a numeric column (int, long, float, double, decimal)"),
    "count": ((IntegerType, LongType), "an int or long column"),
    "min": (_ORDERED, "a numeric, date, time, timestamp or string column"),
    "max": (_ORDERED, "a numeric, date, time, timestamp or string column"),
    "last_value": (None, "any column"),
    "last_non_null_value": (None, "any column"),
    "first_value": (None, "any column"),
    "first_non_null_value": (None, "any column"),
    "bool_and": ((BooleanType,), "a boolean column"),
    "bool_or": ((BooleanType,), "a boolean column"),
    "listagg": ((StringType,), "a string column"),
}

#: Functions that take a retraction (``-U``/``-D`` rows), as in Paimon.
RETRACTABLE_FUNCTIONS = frozenset({"sum", "product", "count", "last_value", "last_non_null_value"})

_DEFAULT_FUNCTION = "last_non_null_value"
_SEQUENCE_TYPES = (*_NUMERIC, *_TEMPORAL)

_KEYS = frozenset(
    {
        "merge-engine",
        "sequence.field",
        "sequence.field.sort-order",
        "rowkind.field",
        "ignore-delete",
        "fields.default-aggregate-function",
    }
)
_FIELD_SUFFIXES = (".aggregate-function", ".list-agg-delimiter", ".ignore-retract")


def is_merge_property(key: str) -> bool:
    """Whether ``key`` is one of the merge engine's properties."""
    return key in _KEYS or (key.startswith("fields.") and key.endswith(_FIELD_SUFFIXES))


@dataclass(frozen=True)
class FieldAggregate:
    """How the aggregation engine merges one column: ``function``, the ``delimiter`` of
    ``listagg``, and ``ignore_retract`` (retractions leave the column as it is)."""

    function: str
    delimiter: str = ","
    ignore_retract: bool = False


@dataclass(frozen=True)
class MergeEngine:
    """A table's configured merge engine. ``kind`` is one of :data:`MERGE_ENGINES`;
    ``sequence_fields`` order the rows of a key (compared in order; ``descending``
    reverses the order); ``rowkind_field`` names the source column of row kinds;
    ``ignore_delete`` drops ``-U``/``-D`` rows; ``aggregates`` holds the function of
    every non-key, non-sequence column (aggregation only)."""

    kind: str = "deduplicate"
    sequence_fields: tuple[str, ...] = ()
    descending: bool = False
    rowkind_field: str | None = None
    ignore_delete: bool = False
    aggregates: Mapping[str, FieldAggregate] = field(default_factory=dict)

    @property
    def plain(self) -> bool:
        """Deduplicate without sequence or row kinds: the last row of a batch wins and
        the stored rows' values are never needed."""
        return self.kind == "deduplicate" and not self.sequence_fields and not self.rowkind_field

    @property
    def needs_stored_values(self) -> bool:
        """Whether resolving needs the stored rows' values (not just their keys):
        partial-update and aggregation merge them, deduplicate with a sequence compares
        their sequence."""
        return self.kind in ("partial-update", "aggregation") or bool(self.sequence_fields)


def _boolean(properties: Mapping[str, str], key: str) -> bool:
    raw = properties.get(key)
    if raw is None:
        return False
    s = raw.strip().lower()
    if s not in ("true", "false"):
        raise MergeEngineError(f"table property {key}={raw!r} is not valid: it takes true or false")
    return s == "true"


def _function(properties: Mapping[str, str], key: str) -> str | None:
    raw = properties.get(key)
    if raw is None:
        return None
    s = raw.strip().lower()
    if s not in AGGREGATE_FUNCTIONS:
        raise MergeEngineError(
            f"table property {key}={raw!r} is not an aggregate function neve knows; use one "
            f"of {', '.join(AGGREGATE_FUNCTIONS)}"
        )
    return s


def merge_engine(properties: Mapping[str, str], schema: Schema) -> MergeEngine:
    """The merge engine ``properties`` configure for a table of ``schema``; the default
    (``deduplicate``) when none is set. Raises :class:`MergeEngineError` saying what to
    change when the properties do not fit the schema."""
    keys = [k for k in properties if is_merge_property(k)]
    if not keys:
        return MergeEngine()
    names = [f.name for f in schema.fields]
    pk = schema.identifier_field_names
    if not pk:
        raise MergeEngineError(
            f"table properties {sorted(keys)} configure a merge engine, which needs a primary "
            "key; create the table with primary_key=[...] (or remove the properties)"
        )
    raw_kind = properties.get("merge-engine", "deduplicate")
    kind = raw_kind.strip().lower()
    if kind not in MERGE_ENGINES:
        raise MergeEngineError(
            f"table property merge-engine={raw_kind!r} is not a merge engine; use one of "
            f"{', '.join(MERGE_ENGINES)}"
        )
    sequence = _sequence_fields(properties, schema, kind)
    raw_order = properties.get("sequence.field.sort-order", "ascending")
    order = raw_order.strip().lower()
    if order not in ("ascending", "descending"):
        raise MergeEngineError(
            f"table property sequence.field.sort-order={raw_order!r} is not valid: it takes "
            "ascending or descending"
        )
    rowkind = _rowkind_field(properties, names)
    ignore_delete = _boolean(properties, "ignore-delete")
    default = _function(properties, "fields.default-aggregate-function")
    _check_field_properties(keys, schema, sequence)
    aggregates: dict[str, FieldAggregate] = {}
    if kind == "aggregation":
        aggregates = _aggregates(properties, schema, sequence, default)
    return MergeEngine(
        kind=kind,
        sequence_fields=sequence,
        descending=order == "descending",
        rowkind_field=rowkind,
        ignore_delete=ignore_delete,
        aggregates=aggregates,
    )


def _sequence_fields(properties: Mapping[str, str], schema: Schema, kind: str) -> tuple[str, ...]:
    """The columns ``sequence.field`` names, checked against the schema and the engine."""
    raw_seq = properties.get("sequence.field")
    if raw_seq is None:
        return ()
    names, pk = [f.name for f in schema.fields], schema.identifier_field_names
    sequence = tuple(s.strip() for s in raw_seq.split(","))
    if not all(sequence) or len(set(sequence)) != len(sequence):
        raise MergeEngineError(
            f"table property sequence.field={raw_seq!r} is not a comma-separated list of "
            "distinct column names"
        )
    for s in sequence:
        f = schema.find_field_or_none(s)
        if f is None or s not in names:
            raise MergeEngineError(
                f"sequence.field names {s!r}, which is not a top-level column of the "
                f"table (columns: {', '.join(names)})"
            )
        if s in pk:
            raise MergeEngineError(
                f"sequence.field names the primary-key column {s!r}; a sequence orders the "
                "rows of one key, so name another column"
            )
        if not isinstance(f.field_type, _SEQUENCE_TYPES):
            raise MergeEngineError(
                f"sequence.field column {s!r} is {f.field_type}; a sequence is a numeric, "
                "date, time or timestamp column"
            )
    if kind == "first-row":
        raise MergeEngineError(
            "merge-engine=first-row keeps the first row to arrive and takes no "
            "sequence.field; remove sequence.field or choose another engine"
        )
    return sequence


def _rowkind_field(properties: Mapping[str, str], names: list[str]) -> str | None:
    """The column of the incoming rows ``rowkind.field`` names, if any."""
    rowkind = properties.get("rowkind.field")
    if rowkind is None:
        return None
    rowkind = rowkind.strip()
    if not rowkind:
        raise MergeEngineError("table property rowkind.field needs a column name")
    if rowkind in names:
        raise MergeEngineError(
            f"rowkind.field names {rowkind!r}, a column of the table; the row kind is "
            "read from the incoming rows and never stored, so name a column only the "
            "incoming rows have (e.g. 'op')"
        )
    return rowkind


def _check_field_properties(keys: list[str], schema: Schema, sequence: tuple[str, ...]) -> None:
    """Refuse ``fields.<column>.*`` properties of a column that is not merged."""
    names = [f.name for f in schema.fields]
    pk = schema.identifier_field_names
    for k in keys:
        if not k.startswith("fields.") or k == "fields.default-aggregate-function":
            continue
        suffix = next(s for s in _FIELD_SUFFIXES if k.endswith(s))
        column = k[len("fields.") : -len(suffix)]
        if column not in names:
            raise MergeEngineError(
                f"table property {k} names column {column!r}, which is not a top-level column "
                f"of the table (columns: {', '.join(names)})"
            )
        if column in pk:
            raise MergeEngineError(
                f"table property {k} configures the primary-key column {column!r}; key columns "
                "are never merged, so remove it"
            )
        if column in sequence:
            raise MergeEngineError(
                f"table property {k} configures the sequence column {column!r}; a sequence "
                "column keeps the highest sequence and is never aggregated, so remove it"
            )


def _aggregates(
    properties: Mapping[str, str], schema: Schema, sequence: tuple[str, ...], default: str | None
) -> dict[str, FieldAggregate]:
    """The aggregate of each column that is neither key nor sequence (aggregation engine)."""
    pk = schema.identifier_field_names
    aggregates: dict[str, FieldAggregate] = {}
    for f in schema.fields:
        if f.name in pk or f.name in sequence:
            continue
        prefix = f"fields.{f.name}."
        fn = _function(properties, prefix + "aggregate-function") or default
        fn = fn or _DEFAULT_FUNCTION
        types, accepts = AGGREGATE_FUNCTIONS[fn]
        if types is not None and not isinstance(f.field_type, types):
            raise MergeEngineError(
                f"aggregate function {fn} of column {f.name!r} takes {accepts}, and "
                f"{f.name!r} is {f.field_type}; set fields.{f.name}.aggregate-function to a "
                "function that fits (e.g. last_non_null_value)"
            )
        aggregates[f.name] = FieldAggregate(
            fn,
            properties.get(prefix + "list-agg-delimiter", ","),
            _boolean(properties, prefix + "ignore-retract"),
        )
    return aggregates


def check_merge_properties(properties: Mapping[str, str], schema: Schema) -> None:
    """Refuse merge-engine properties that do not fit ``schema`` (see :func:`merge_engine`)."""
    merge_engine(properties, schema)
