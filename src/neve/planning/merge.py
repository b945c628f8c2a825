"""Planning a MERGE (Spark SQL's ``MERGE INTO``) or an upsert, once for every engine.

A MERGE has WHEN clauses for source rows that match a target row, source rows that
match none, and target rows that no source row matches. :func:`plan_merge` decides
everything that does not need the rows themselves: whether the table's merge engine
resolves the rows (an upsert on the primary key: docs/MERGE-ENGINES.md) and how the
source is taken before the join, the clauses that apply, the candidate data files
(pruned by the source's keys, which the engine summarises as a filter), the target
columns to read, and whether two source rows matching one target row are refused (SQL
MERGE's rule: always, unless a merge engine resolves them). Engines then only join and
write (``Engine.execute_merge``), so they cannot differ in what a MERGE means.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from neve.errors import ValidationError
from neve.expressions import ALWAYS_FALSE, ALWAYS_TRUE, BooleanExpression
from neve.io.fileio import FileIO
from neve.planning.delete import rewrite_schema, whole_file_tasks
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spec.merge_engine import MergeEngine, merge_engine
from neve.spec.refs import MAIN_BRANCH
from neve.spec.schema import ROW_ID, Schema
from neve.spec.table_metadata import TableMetadata

__all__ = [
    "CLAUSE_KINDS",
    "SOURCE_ROWS",
    "Clause",
    "MergePlan",
    "needs_target_values",
    "plan_merge",
]

#: Clause kinds by the rows they apply to.
CLAUSE_KINDS = {
    "update_all": "matched",
    "update": "matched",
    "delete": "matched",
    "insert_all": "not_matched",
    "delete_by_source": "not_matched_by_source",
}

#: How an engine takes the source before the join: every row (MERGE), the last or first
#: row per key (an upsert through ``deduplicate`` / ``first-row``), or the merge engine
#: resolves the stored and incoming rows of each key (the other configurations).
SOURCE_ROWS = ("all", "last", "first", "resolve")


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


@dataclass(frozen=True)
class MergePlan:
    """A MERGE planned on one table version (module docstring).

    A target row takes the first clause of its group (``matched``, ``not_matched``,
    ``not_matched_by_source``) whose condition holds. Engines read ``target_schema``
    (plus each row's file and position) of the live rows of ``tasks`` (restricted to
    ``key_filter`` unless the merge has a ``not_matched_by_source`` clause) and take
    the source as ``source_rows`` says."""

    on: tuple[str, ...]
    clauses: tuple[Clause, ...]
    #: The merge engine resolving the rows of a key (an upsert on the primary key).
    engine: MergeEngine | None
    #: One of :data:`SOURCE_ROWS`.
    source_rows: str
    key_filter: BooleanExpression
    tasks: tuple[FileScanTask, ...]
    files_skipped: int
    target_schema: Schema
    merge_on_read: bool
    #: An upsert on the primary key: when it rebases, its keys are re-located in the
    #: files concurrent commits added (or, with a resolving engine, it runs again).
    upsert: bool

    @property
    def by_source(self) -> bool:
        """Whether target rows no source row matches are acted on (a full join)."""
        return any(c.group == "not_matched_by_source" for c in self.clauses)

    @property
    def inserts(self) -> bool:
        return any(c.kind == "insert_all" for c in self.clauses)

    @property
    def refuses_duplicates(self) -> bool:
        """SQL MERGE's rule: a target row matched by two source rows is refused (before
        anything is written), unless a merge engine keeps one row per key."""
        return self.source_rows == "all" and any(c.group == "matched" for c in self.clauses)

    @property
    def files_scanned(self) -> int:
        return len(self.tasks)

    @property
    def conflict_filter(self) -> BooleanExpression:
        """The rows the merge reads, validated against concurrent commits."""
        return self.key_filter

    @property
    def is_empty(self) -> bool:
        """No clause is left (``first-row`` without an insert): nothing can change."""
        return not self.clauses


def _check_keys(schema: Schema, on: Sequence[str], source_columns: Sequence[str]) -> None:
    if not on:
        raise ValidationError(
            "merge needs key columns: pass on=[...] or create the table with a primary_key"
        )
    top = [f.name for f in schema.fields]
    for name in on:
        if name not in top:
            raise ValidationError(f"merge key {name!r} is not a top-level column of the table")
        if name not in source_columns:
            raise ValidationError(f"the merge source has no key column {name!r}")


def _check_clauses(schema: Schema, clauses: Sequence[Clause]) -> None:
    if not clauses:
        raise ValidationError(
            "this merge has no clause; add when_matched_update_all(), "
            "when_not_matched_insert_all() or another when_... clause"
        )
    top = {f.name for f in schema.fields}
    for c in clauses:
        unknown = [n for n in (c.set or {}) if n not in top]
        if unknown:
            raise ValidationError(
                f"merge sets column {unknown[0]!r}, which the table does not have (top-level "
                f"columns: {', '.join(f.name for f in schema.fields)})"
            )


def _upsert_engine(md: TableMetadata, on: Sequence[str]) -> MergeEngine | None:
    """The table's merge engine, when it decides an upsert on ``on``: the primary key
    of a key table. Raises :class:`neve.errors.MergeEngineError` when the stored
    properties do not fit the table (another engine may have set them)."""
    schema = md.schema()
    pk = schema.identifier_field_names
    if not pk or sorted(on) != sorted(pk):
        return None
    return merge_engine(md.properties, schema)


def _target_schema(
    md: TableMetadata,
    on: Sequence[str],
    clauses: Sequence[Clause],
    engine: MergeEngine | None,
    source_rows: str,
) -> Schema:
    """The target columns a merge reads: the keys (and a deduplicate engine's sequence
    fields) unless a clause or a resolving engine needs whole rows; in v3 ``_row_id``,
    which an updated row keeps."""
    schema = md.schema()
    lineage = [ROW_ID] if md.format_version >= 3 else []
    if source_rows == "resolve" and engine is not None and engine.kind == "deduplicate":
        names = [*on, *engine.sequence_fields]
        return Schema(*[schema.find_field(n) for n in names], *lineage)
    if source_rows == "resolve" or needs_target_values(clauses):
        return rewrite_schema(md)
    return Schema(*[schema.find_field(n) for n in on], *lineage)


def plan_merge(
    md: TableMetadata,
    io: FileIO,
    on: Sequence[str],
    clauses: Sequence[Clause],
    *,
    source_columns: Sequence[str],
    key_filter: Callable[[Sequence[str]], BooleanExpression],
    merge_on_read: bool,
    upsert: bool = False,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
) -> MergePlan:
    """Plan a MERGE of a source with ``source_columns`` into the table at ``md`` on the
    columns ``on``. ``key_filter(on)`` is asked (only when the candidate files are
    pruned by key) for a filter that every source key satisfies (an IN list, or the
    keys' range: the engine looks at its rows). ``upsert``: the clauses are an upsert's
    (``update_all`` + ``insert_all``), which the table's merge engine decides on the
    primary key. Raises :class:`ValidationError` for keys, clauses or columns that do
    not fit, before anything is read."""
    schema = md.schema()
    _check_clauses(schema, clauses)
    _check_keys(schema, on, source_columns)
    engine = _upsert_engine(md, on) if upsert else None
    kept = list(clauses)
    source_rows = "all"
    if engine is not None:
        if engine.plain:  # the stored values are never needed: the last row per key wins
            source_rows = "last"
        elif engine.kind == "first-row":  # stored keys keep their rows: only inserts
            source_rows = "first"
            kept = [c for c in kept if c.kind == "insert_all"]
        else:
            source_rows = "resolve"
    by_source = any(c.group == "not_matched_by_source" for c in kept)
    if not kept:
        keys: BooleanExpression = ALWAYS_FALSE
    else:
        keys = ALWAYS_TRUE if by_source else key_filter(on)
    scan = ScanPlan(
        md,
        io,
        filter=keys,
        ref=branch if branch in md.refs else MAIN_BRANCH,
        case_sensitive=case_sensitive,
    )
    tasks = whole_file_tasks(scan.plan_files()) if keys is not ALWAYS_FALSE else []
    head = scan.snapshot()
    total = int(head.summary.get("total-data-files", "0") or 0) if head is not None else 0
    return MergePlan(
        on=tuple(on),
        clauses=tuple(kept),
        engine=engine,
        source_rows=source_rows,
        key_filter=keys,
        tasks=tuple(tasks),
        files_skipped=max(total - len(tasks), 0),
        target_schema=_target_schema(md, on, kept, engine, source_rows),
        merge_on_read=merge_on_read,
        upsert=upsert and engine is not None,
    )
