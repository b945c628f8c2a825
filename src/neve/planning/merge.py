"""The clauses of a MERGE (Spark SQL's ``MERGE INTO``): what happens to source rows
that match a target row, to source rows that match none, and to target rows that no
source row matches. Engines execute them; the table layer builds them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from neve.spec.merge_engine import MergeEngine, merge_engine
from neve.spec.table_metadata import TableMetadata

__all__ = ["CLAUSE_KINDS", "Clause", "engine_for_merge", "needs_target_values"]

#: Clause kinds by the rows they apply to.
CLAUSE_KINDS = {
    "update_all": "matched",
    "update": "matched",
    "delete": "matched",
    "insert_all": "not_matched",
    "delete_by_source": "not_matched_by_source",
}


@dataclass(frozen=True)
class Clause:
    """One WHEN clause of a MERGE. ``kind``: ``update_all``, ``update``, ``delete``
    (matched), ``insert_all`` (not matched), ``delete_by_source`` (not matched by
    source). ``condition`` and the values of ``set`` are SQL expressions."""

    kind: str
    condition: str | None = None
    set: Mapping[str, str] | None = None

    @property
    def group(self) -> str:
        """``matched``, ``not_matched`` or ``not_matched_by_source``."""
        return CLAUSE_KINDS[self.kind]


def needs_target_values(clauses: Sequence[Clause]) -> bool:
    """Whether some clause reads the target row's values (a ``set``, or a condition or
    value naming ``target.``), so whole target rows must be read, not just keys."""
    texts = [c.condition or "" for c in clauses]
    texts += [v for c in clauses for v in (c.set or {}).values()]
    return any(c.kind == "update" for c in clauses) or any("target." in t.lower() for t in texts)


def engine_for_merge(
    md: TableMetadata, on: Sequence[str], clauses: Sequence[Clause]
) -> MergeEngine | None:
    """The table's merge engine when it decides this MERGE: an upsert on the primary key
    (``update_all``, with or without ``insert_all``, neither with a condition). Other
    merges (another key, conditions, other clauses, no primary key) keep MERGE's rules:
    None. Raises :class:`neve.errors.MergeEngineError` when the stored properties do
    not fit the table (another engine may have set them)."""
    schema = md.schema()
    pk = schema.identifier_field_names
    kinds = {c.kind for c in clauses}
    if (
        not pk
        or sorted(on) != sorted(pk)
        or "update_all" not in kinds
        or not kinds <= {"update_all", "insert_all"}
        or any(c.condition is not None for c in clauses)
    ):
        return None
    return merge_engine(md.properties, schema)
