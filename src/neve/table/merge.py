"""MERGE and upsert as the table layer offers them: a builder of WHEN clauses (Spark
SQL's ``MERGE INTO`` and Delta's merge builder), executed as one snapshot, and the
result it reports."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from neve.errors import ValidationError
from neve.planning.merge import Clause
from neve.spec.refs import MAIN_BRANCH

__all__ = ["MergeBuilder", "MergeResult"]


@dataclass(frozen=True)
class MergeResult:
    """What one MERGE did: rows inserted, updated and deleted; candidate data files read
    and files pruned without reading; files written; seconds per phase (plan, scan,
    join, write, commit, total); which engine path ran it (``executed_by``: ``pyarrow``,
    ``spark``, or ``spark-driver`` for a small merge a Spark engine ran on the driver;
    empty when nothing had to run)."""

    rows_inserted: int
    rows_updated: int
    rows_deleted: int
    files_scanned: int
    files_skipped: int
    data_files_added: int
    delete_files_added: int
    seconds: Mapping[str, float] = field(default_factory=dict)
    executed_by: str = ""


#: Runs the clauses: ``run(clauses, branch, case_sensitive, snapshot_properties)``
#: (a transaction's merge).
MergeRunner = Callable[[Sequence[Clause], str, bool, Mapping[str, str] | None], MergeResult]


class MergeBuilder:
    """WHEN clauses of a MERGE, in order; a row takes the first clause of its kind
    whose condition holds. Conditions and ``set`` values are SQL expressions over
    ``source.<column>`` and ``target.<column>`` (``"source.qty > target.qty"``)."""

    def __init__(self, run: MergeRunner) -> None:
        self._run = run
        self._clauses: list[Clause] = []

    def _add(self, clause: Clause) -> MergeBuilder:
        if clause.condition is not None and not isinstance(clause.condition, str):
            raise ValidationError(
                f"a merge condition is an SQL expression string, not {clause.condition!r}"
            )
        self._clauses.append(clause)
        return self

    def when_matched_update_all(self, condition: str | None = None) -> MergeBuilder:
        """Replace a matched target row by its source row."""
        return self._add(Clause("update_all", condition))

    def when_matched_update(
        self, set: Mapping[str, str], condition: str | None = None
    ) -> MergeBuilder:
        """Set columns of a matched target row to SQL expressions."""
        if not isinstance(set, Mapping) or not set:
            raise ValidationError(
                "when_matched_update needs set={column: sql, ...}, e.g. "
                'set={"qty": "target.qty + source.qty"}'
            )
        bad = [v for v in set.values() if not isinstance(v, str)]
        if bad:
            raise ValidationError(
                f"merge set values are SQL expression strings (quote text: \"'x'\"), not {bad[0]!r}"
            )
        return self._add(Clause("update", condition, dict(set)))

    def when_matched_delete(self, condition: str | None = None) -> MergeBuilder:
        """Delete a matched target row."""
        return self._add(Clause("delete", condition))

    def when_not_matched_insert_all(self, condition: str | None = None) -> MergeBuilder:
        """Insert a source row that matches no target row."""
        return self._add(Clause("insert_all", condition))

    def when_not_matched_by_source_delete(self, condition: str | None = None) -> MergeBuilder:
        """Delete a target row that no source row matches."""
        return self._add(Clause("delete_by_source", condition))

    def execute(
        self,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> MergeResult:
        """Run the merge as one snapshot (merge-on-read or copy-on-write, by
        ``write.merge.mode``)."""
        return self._run(list(self._clauses), branch, case_sensitive, snapshot_properties)
