"""The changes of a transaction that write no data: schema, partition spec and sort
order builders, table properties and format version, branches, tags and rollbacks.
Each is planned into one action and staged like any other change."""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

from neve.actions.base import Action, TableState
from neve.actions.expire import ExpireSnapshots
from neve.actions.metadata import (
    SchemaAction,
    SortOrderAction,
    SpecAction,
    properties_action,
    ref_action,
    upgrade_action,
)
from neve.actions.rewrite_manifests import RewriteManifests
from neve.actions.snapshot import branch_head, require_branch
from neve.actions.update_schema import UpdateSchema
from neve.actions.update_sort_order import UpdateSortOrder
from neve.actions.update_spec import UpdateSpec
from neve.errors import NoSuchSnapshotError, ValidationError
from neve.spec.refs import MAIN_BRANCH, SnapshotRefType
from neve.spec.table_metadata import TableMetadata
from neve.spec.temporal import timestamp_millis

__all__ = ["MetadataChanges"]


class MetadataChanges(ABC):
    """The metadata verbs of :class:`neve.table.transaction.Transaction`."""

    @property
    @abstractmethod
    def metadata(self) -> TableMetadata:
        """The table's metadata as the changes staged so far leave it."""

    @abstractmethod
    def _stage(self, action: Action) -> None: ...

    @abstractmethod
    def _writable(self, branch: str, snapshot_properties: Mapping[str, str] | None) -> None: ...

    @abstractmethod
    def _target(self) -> TableState:
        """The table handle the actions are made on."""

    # -- schema, spec, order, properties ---------------------------------------------

    def update_schema(
        self, allow_incompatible_changes: bool = False, case_sensitive: bool = True
    ) -> UpdateSchema:
        md = self.metadata

        def on_commit(u: UpdateSchema) -> None:
            schema, last_id = u.apply()
            self._stage(SchemaAction(md, schema, last_id))

        u = UpdateSchema(
            md.schema(), md.last_column_id, md.format_version, case_sensitive, on_commit=on_commit
        )
        if allow_incompatible_changes:
            u.allow_incompatible_changes()
        return u

    def update_spec(self, case_sensitive: bool = True) -> UpdateSpec:
        md = self.metadata

        def on_commit(u: UpdateSpec) -> None:
            self._stage(SpecAction(md, u.apply()))

        return UpdateSpec(md, case_sensitive, on_commit=on_commit)

    def update_sort_order(self, case_sensitive: bool = True) -> UpdateSortOrder:
        md = self.metadata

        def on_commit(u: UpdateSortOrder) -> None:
            self._stage(SortOrderAction(u.apply()))

        return UpdateSortOrder(md, case_sensitive, on_commit=on_commit)

    def set_properties(self, properties: Mapping[str, str] | None = None, **kwargs: str) -> None:
        if properties is not None and not isinstance(properties, Mapping):
            raise ValidationError(
                f"set_properties takes a mapping of names to strings, not {properties!r}"
            )
        self._stage(properties_action(updates={**(properties or {}), **kwargs}))

    def remove_properties(self, *keys: str) -> None:
        self._stage(properties_action(removals=keys))

    def upgrade_format_version(self, version: int) -> None:
        self._stage(upgrade_action(version))

    # -- snapshots and refs --------------------------------------------------------

    def create_branch(
        self,
        name: str,
        snapshot_id: int | None = None,
        *,
        min_snapshots_to_keep: int | None = None,
        max_snapshot_age_ms: int | None = None,
        max_ref_age_ms: int | None = None,
    ) -> None:
        md = self.metadata
        sid = snapshot_id if snapshot_id is not None else md.current_snapshot_id
        self._stage(
            ref_action(
                md,
                name,
                sid,
                create=True,
                min_snapshots_to_keep=min_snapshots_to_keep,
                max_snapshot_age_ms=max_snapshot_age_ms,
                max_ref_age_ms=max_ref_age_ms,
            )
        )

    def create_tag(
        self, name: str, snapshot_id: int | None = None, *, max_ref_age_ms: int | None = None
    ) -> None:
        md = self.metadata
        sid = snapshot_id if snapshot_id is not None else md.current_snapshot_id
        self._stage(
            ref_action(
                md,
                name,
                sid,
                ref_type=SnapshotRefType.TAG,
                create=True,
                max_ref_age_ms=max_ref_age_ms,
            )
        )

    def set_tag(self, name: str, snapshot_id: int, *, max_ref_age_ms: int | None = None) -> None:
        """Create the tag ``name`` or move it to ``snapshot_id`` (Iceberg's
        create-or-replace); ``max_ref_age_ms`` replaces the tag's age limit when given."""
        md = self.metadata
        current = md.refs.get(name)
        self._stage(
            ref_action(
                md,
                name,
                snapshot_id,
                ref_type=SnapshotRefType.TAG,
                create=current is None,
                max_ref_age_ms=max_ref_age_ms,
            )
        )

    def remove_branch(self, name: str) -> None:
        self._stage(ref_action(self.metadata, name, None, remove=True))

    def remove_tag(self, name: str) -> None:
        self._stage(
            ref_action(self.metadata, name, None, ref_type=SnapshotRefType.TAG, remove=True)
        )

    def set_current_snapshot(self, snapshot_id: int, branch: str = MAIN_BRANCH) -> None:
        """Point a branch at any known snapshot."""
        self._stage(ref_action(self.metadata, branch, snapshot_id))

    def rollback_to_snapshot(self, snapshot_id: int, branch: str = MAIN_BRANCH) -> None:
        """Point a branch back at one of its ancestors."""
        md = self.metadata
        require_branch(md, branch)
        head = branch_head(md, branch)
        ancestors = {s.snapshot_id for s in md.ancestors(head.snapshot_id if head else None)}
        if snapshot_id not in ancestors:
            raise NoSuchSnapshotError(
                f"snapshot {snapshot_id} is not an ancestor of {branch!r}; use "
                "set_current_snapshot() to move to a snapshot outside its history"
            )
        self._stage(ref_action(md, branch, snapshot_id))

    def rollback_to_time(self, when: int | str | dt.datetime, branch: str = MAIN_BRANCH) -> None:
        """Point a branch at its newest ancestor committed before ``when``."""
        md = self.metadata
        ts = timestamp_millis(when)
        require_branch(md, branch)
        head = branch_head(md, branch)
        for s in md.ancestors(head.snapshot_id if head else None):
            if s.timestamp_ms < ts:
                self._stage(ref_action(md, branch, s.snapshot_id))
                return
        raise NoSuchSnapshotError(
            f"{branch!r} has no snapshot older than {when!r}; pick a later time"
        )

    # -- maintenance of metadata ---------------------------------------------------

    def rewrite_manifests(
        self, spec_id: int | None = None, branch: str = MAIN_BRANCH
    ) -> RewriteManifests:
        """Stage the rewrite of the head's data manifests, clustered by partition;
        returns the action (its ``replaced`` and ``written`` manifests after the commit)."""
        self._writable(branch, None)
        action = RewriteManifests(self._target(), spec_id=spec_id, branch=branch)
        self._stage(action)
        return action

    def expire_snapshots(
        self,
        now_ms: int,
        older_than_ms: int | None = None,
        retain_last: int | None = None,
        snapshot_ids: Sequence[int] = (),
        clean_expired_metadata: bool = False,
    ) -> ExpireSnapshots:
        """Stage the removal of expired snapshots and refs, and with
        ``clean_expired_metadata`` of the specs and schemas only they used (metadata
        only; the files they alone reached are deleted by
        ``table.maintenance.expire_snapshots``). Returns the action, whose
        ``planned_on`` is the version it was last planned on."""
        clean = self._target().io if clean_expired_metadata else None
        action = ExpireSnapshots(now_ms, older_than_ms, retain_last, snapshot_ids, clean)
        self._stage(action)
        return action
