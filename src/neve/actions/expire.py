"""Snapshot expiration: which snapshots and refs go, decided on one metadata version
by Iceberg's retention rules, and the action that removes them.

The rules (as Iceberg-Java's ``ExpireSnapshots``):

- A tag or branch other than ``main`` whose snapshot is older than its
  ``max-ref-age-ms`` (default: the table's ``history.expire.max-ref-age-ms``, forever)
  is removed; ``main`` never is.
- Each remaining branch keeps its head's ancestors while fewer than its
  ``min-snapshots-to-keep`` are kept or while they are newer than the cut-off (its own
  ``max-snapshot-age-ms``, else ``older_than``, else the table's
  ``history.expire.max-snapshot-age-ms``, 5 days); ``retain_last`` stands in for the
  table's ``history.expire.min-snapshots-to-keep`` (1).
- Each remaining tag keeps its snapshot. A consumer's tag (``neve-consumer-<name>``,
  docs/STREAMING.md) also keeps the snapshots after it on every branch that descends
  from it: the consumer has still to read them (an explicit id among them is an error).
- A snapshot no ref reaches is kept while it is newer than the cut-off.
- ``snapshot_ids`` expire whatever their age, unless a ref points at one (an error).

With ``clean_expired_metadata`` the partition specs no kept snapshot's manifests use
and the schemas no kept snapshot names are removed too (never the default spec or the
current schema), as Iceberg-Java's ``cleanExpiredMetadata`` does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from neve.actions.base import Action
from neve.errors import ValidationError
from neve.io.fileio import FileIO
from neve.planning.manifests import read_manifest_list
from neve.spec.refs import CONSUMER_TAG_PREFIX, MAIN_BRANCH
from neve.spec.requirements import (
    AssertCurrentSchemaId,
    AssertDefaultSpecId,
    AssertRefSnapshotId,
    TableRequirement,
)
from neve.spec.table_metadata import TableMetadata
from neve.spec.updates import (
    RemovePartitionSpecs,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    TableUpdate,
)

__all__ = ["ExpirePlan", "ExpireSnapshots", "plan_expiration"]


@dataclass(frozen=True)
class ExpirePlan:
    """What an expiration removes from one metadata version."""

    snapshot_ids: tuple[int, ...]
    refs: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.snapshot_ids and not self.refs


def plan_expiration(
    md: TableMetadata,
    now_ms: int,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
    snapshot_ids: Iterable[int] = (),
) -> ExpirePlan:
    """The snapshots and refs that expire from ``md`` at ``now_ms`` (module rules)."""
    if retain_last is not None and retain_last < 1:
        raise ValidationError(f"retain_last must be at least 1, not {retain_last}")
    explicit = set(snapshot_ids)
    unknown = sorted(explicit - {s.snapshot_id for s in md.snapshots})
    if unknown:
        raise ValidationError(f"snapshots {unknown} are not in the table; list them with history")
    max_age = md.props.as_int("history.expire.max-snapshot-age-ms")
    cutoff = older_than_ms if older_than_ms is not None else now_ms - max_age
    min_keep = (
        retain_last
        if retain_last is not None
        else md.props.as_int("history.expire.min-snapshots-to-keep")
    )
    max_ref_age = md.props.as_int("history.expire.max-ref-age-ms")

    expired_refs: list[str] = []
    kept_refs = {}
    for name, ref in sorted(md.refs.items()):
        snap = md.snapshot_by_id(ref.snapshot_id) if md.has_snapshot(ref.snapshot_id) else None
        age_limit = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else max_ref_age
        too_old = snap is not None and now_ms - snap.timestamp_ms > age_limit
        if name != MAIN_BRANCH and too_old:
            expired_refs.append(name)
        else:
            kept_refs[name] = ref

    retained: set[int] = set()
    for ref in kept_refs.values():
        if not ref.is_branch:
            retained.add(ref.snapshot_id)
            continue
        keep = ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None else min_keep
        branch_cutoff = now_ms - ref.max_snapshot_age_ms if ref.max_snapshot_age_ms else cutoff
        kept = 0
        for s in md.ancestors(ref.snapshot_id):
            if kept < keep or s.timestamp_ms >= branch_cutoff:
                retained.add(s.snapshot_id)
                kept += 1
            else:
                break

    # A consumer's tag marks what it has read; what it has still to read are the
    # snapshots after the tag on a branch: keep those too (docs/STREAMING.md).
    needed: dict[int, str] = {}
    for name, ref in kept_refs.items():
        if name.startswith(CONSUMER_TAG_PREFIX) and not ref.is_branch:
            for branch in kept_refs.values():
                if not branch.is_branch:
                    continue
                line = md.ancestors(branch.snapshot_id)
                ids = [s.snapshot_id for s in line]
                if ref.snapshot_id in ids:
                    for i in ids[: ids.index(ref.snapshot_id) + 1]:
                        needed.setdefault(i, name[len(CONSUMER_TAG_PREFIX) :])
    retained.update(needed)

    referenced = {s.snapshot_id for r in md.refs.values() for s in md.ancestors(r.snapshot_id)}
    for s in md.snapshots:
        if s.snapshot_id not in referenced and s.timestamp_ms >= cutoff:
            retained.add(s.snapshot_id)

    heads = {r.snapshot_id: n for n, r in kept_refs.items()}
    pinned = sorted(explicit & set(heads))
    if pinned:
        names = sorted(heads[i] for i in pinned)
        raise ValidationError(
            f"cannot expire snapshots {pinned}: refs {names} point at them; "
            "remove or move those refs first"
        )
    held = sorted(explicit & set(needed))
    if held:
        names = sorted({needed[i] for i in held})
        raise ValidationError(
            f"cannot expire snapshots {held}: streaming consumers {names} have not read "
            "past them yet; let them catch up, or reset them with "
            "table.remove_consumer(name)"
        )
    retained -= explicit
    gone = tuple(sorted(s.snapshot_id for s in md.snapshots if s.snapshot_id not in retained))
    return ExpirePlan(snapshot_ids=gone, refs=tuple(expired_refs))


class ExpireSnapshots(Action):
    """Remove the expired snapshots and refs. Planned again on every attempt, on the
    metadata it commits against; it requires every ref to be where it was planned, so
    a concurrent ref change makes it plan again rather than remove something a new
    ref reaches."""

    def __init__(
        self,
        now_ms: int,
        older_than_ms: int | None = None,
        retain_last: int | None = None,
        snapshot_ids: Iterable[int] = (),
        clean_expired_metadata: FileIO | None = None,
    ) -> None:
        """``clean_expired_metadata``: the table's file IO, to also remove unused specs
        and schemas (it reads the kept snapshots' manifest lists); None keeps them."""
        self.clean_io = clean_expired_metadata
        self.now_ms = now_ms
        self.older_than_ms = older_than_ms
        self.retain_last = retain_last
        self.snapshot_ids = tuple(snapshot_ids)
        self.planned: ExpirePlan | None = None
        self.planned_on: TableMetadata | None = None
        self.removed_specs: tuple[int, ...] = ()
        self.removed_schemas: tuple[int, ...] = ()

    def plan(self, md: TableMetadata) -> tuple[list[TableUpdate], list[TableRequirement]]:
        plan = plan_expiration(
            md, self.now_ms, self.older_than_ms, self.retain_last, self.snapshot_ids
        )
        self.planned = plan
        self.planned_on = md
        updates: list[TableUpdate] = [RemoveSnapshotRef(name) for name in plan.refs]
        if plan.snapshot_ids:
            updates.append(RemoveSnapshots(plan.snapshot_ids))
        requirements: list[TableRequirement] = [
            AssertRefSnapshotId(name, ref.snapshot_id) for name, ref in sorted(md.refs.items())
        ]
        specs: tuple[int, ...] = ()
        schemas: tuple[int, ...] = ()
        if self.clean_io is not None:
            specs, schemas = self._unused(md, set(plan.snapshot_ids), self.clean_io)
            if specs:
                updates.append(RemovePartitionSpecs(specs))
                requirements.append(AssertDefaultSpecId(md.default_spec_id))
            if schemas:
                updates.append(RemoveSchemas(schemas))
                requirements.append(AssertCurrentSchemaId(md.current_schema_id))
        self.removed_specs, self.removed_schemas = specs, schemas
        return updates, requirements

    @staticmethod
    def _unused(
        md: TableMetadata, expired: set[int], io: FileIO
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The spec ids and schema ids nothing kept uses once ``expired`` are gone. A
        concurrent commit only adds manifests of kept snapshots or of the default spec
        (asserted), so the answer holds for it too."""
        kept = [s for s in md.snapshots if s.snapshot_id not in expired]
        spec_ids = {md.default_spec_id}
        for s in kept:
            spec_ids.update(m.partition_spec_id for m in read_manifest_list(io, s.manifest_list))
        schema_ids = {md.current_schema_id} | {s.schema_id for s in kept if s.schema_id is not None}
        specs = tuple(sorted(s.spec_id for s in md.partition_specs if s.spec_id not in spec_ids))
        schemas = tuple(sorted(s.schema_id for s in md.schemas if s.schema_id not in schema_ids))
        return specs, schemas
