"""The Table handle: the current metadata version of a catalog table, and the
operations users run on it. Metadata objects are immutable; after a commit the handle
points at the new version."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, overload

import pyarrow as pa

from neve.actions.commit import Committer
from neve.actions.update_schema import UpdateSchema
from neve.actions.update_sort_order import UpdateSortOrder
from neve.actions.update_spec import UpdateSpec
from neve.arrow.engine import ArrowEngine
from neve.engine.protocol import Engine, R
from neve.errors import CommitFailedError, NoSuchSnapshotError, ValidationError
from neve.expressions import BooleanExpression
from neve.io.fileio import FileIO
from neve.planning.changelog import ChangelogPlan, plan_changelog
from neve.spec.partition import PartitionSpec
from neve.spec.refs import MAIN_BRANCH, SnapshotRef
from neve.spec.schema import Schema
from neve.spec.snapshot import Snapshot, SnapshotLogEntry
from neve.spec.sort_order import SortOrder
from neve.spec.table_metadata import TableMetadata
from neve.table.consumers import (
    Consumer,
    consumer_tag,
    find_consumer,
    list_consumers,
    parse_duration_ms,
)
from neve.table.inspect import InspectTable
from neve.table.maintenance import Maintenance
from neve.table.merge import MergeBuilder, MergeResult
from neve.table.scan import IncrementalAppendScan, ScanPlanner, TableScan
from neve.table.transaction import Transaction

__all__ = ["Table", "TableCatalog"]

#: The default engine of tables (stateless).
_ARROW = ArrowEngine()

#: Attempts at moving a consumer's tag when concurrent commits move the table.
_CONSUMER_ATTEMPTS = 5


class TableCatalog(Committer, Protocol):
    """What a table handle needs of the catalog it came from (tables never import
    catalogs): its file IO, loading and committing."""

    @property
    def io(self) -> FileIO: ...


class Table:
    """A table in a catalog."""

    def __init__(
        self,
        identifier: tuple[str, ...],
        metadata: TableMetadata,
        metadata_location: str,
        catalog: TableCatalog,
    ) -> None:
        self.identifier = identifier
        self.catalog = catalog
        self.io: FileIO = catalog.io
        self._metadata = metadata
        self._metadata_location = metadata_location

    def with_metadata(self, metadata: TableMetadata) -> Table:
        """A handle on another version of this table's metadata (same catalog and
        name), e.g. a transaction's staged state, for planning and writing data files
        as that version would. Committing goes through the original handle."""
        other = Table(self.identifier, metadata, self._metadata_location, self.catalog)
        other.io = self.io  # the table's own credentials, when its catalog vends them
        return other

    def set_current(self, metadata: TableMetadata, location: str) -> None:
        """Point this handle at a newer version (after a commit through it)."""
        self._metadata = metadata
        self._metadata_location = location

    def __repr__(self) -> str:
        return f"Table({self.name!r}, snapshot={self._metadata.current_snapshot_id})"

    # -- state -----------------------------------------------------------------------

    @property
    def name(self) -> str:
        return ".".join(self.identifier)

    @property
    def metadata(self) -> TableMetadata:
        return self._metadata

    @property
    def metadata_location(self) -> str:
        """Path of the current metadata JSON file."""
        return self._metadata_location

    @property
    def location(self) -> str:
        return self._metadata.location

    @property
    def format_version(self) -> int:
        return self._metadata.format_version

    @property
    def properties(self) -> Mapping[str, str]:
        return self._metadata.properties

    def refresh(self) -> Table:
        """Reload the current version from the catalog; returns self."""
        fresh = self.catalog.load_table(self.identifier)
        self.set_current(fresh.metadata, fresh.metadata_location)
        return self

    def schema(self) -> Schema:
        return self._metadata.schema()

    def schemas(self) -> dict[int, Schema]:
        return {s.schema_id: s for s in self._metadata.schemas}

    def spec(self) -> PartitionSpec:
        return self._metadata.spec()

    def specs(self) -> dict[int, PartitionSpec]:
        return dict(self._metadata.specs_by_id)

    def sort_order(self) -> SortOrder:
        return self._metadata.sort_order()

    def current_snapshot(self) -> Snapshot | None:
        return self._metadata.current_snapshot()

    def snapshots(self) -> list[Snapshot]:
        return list(self._metadata.snapshots)

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot:
        return self._metadata.snapshot_by_id(snapshot_id)

    def snapshot_by_name(self, name: str) -> Snapshot | None:
        return self._metadata.snapshot_for_ref(name)

    def history(self) -> list[SnapshotLogEntry]:
        """When each snapshot became current on main, oldest first."""
        return list(self._metadata.snapshot_log)

    def refs(self) -> dict[str, SnapshotRef]:
        return dict(self._metadata.refs)

    @property
    def maintenance(self) -> Maintenance:
        """Expire snapshots, remove orphan files, compact
        (``table.maintenance.<action>(...)``), on the pyarrow engine
        (``neve.spark.maintenance`` runs them on Spark)."""
        return Maintenance(self, _ARROW)

    @property
    def inspect(self) -> InspectTable:
        """Metadata tables (snapshots, files, partitions ...) as Arrow tables."""
        return InspectTable(self)

    # -- reading -------------------------------------------------------------------------

    def scan(
        self,
        filter: str | BooleanExpression | None = None,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        as_of: int | str | dt.datetime | None = None,
        ref: str | None = None,
        case_sensitive: bool = True,
        options: dict[str, str] | None = None,
        *,
        start_snapshot_id: int | None = None,
        end_snapshot_id: int | None = None,
        start_time: int | str | dt.datetime | None = None,
        end_time: int | str | dt.datetime | None = None,
    ) -> TableScan:
        """A scan of one snapshot (the head of ``main`` unless ``snapshot_id``,
        ``as_of`` or ``ref`` names another), or with ``start_snapshot_id`` /
        ``end_snapshot_id`` / ``start_time`` / ``end_time`` an incremental append scan:
        the rows appended after the start (exclusive) up to the end (inclusive) on the
        branch ``ref`` (default main). Overwrite and delete snapshots in that range fail
        with NonAppendSnapshotError unless ``options`` skip them
        (``streaming-skip-overwrite-snapshots`` / ``streaming-skip-delete-snapshots``)."""
        incremental = (start_snapshot_id, end_snapshot_id, start_time, end_time)
        if any(x is not None for x in incremental):
            if snapshot_id is not None or as_of is not None:
                raise ValidationError(
                    "an incremental scan (start_/end_snapshot_id, start_/end_time) reads a "
                    "range; leave out snapshot_id and as_of, or leave out the range"
                )
            return IncrementalAppendScan(
                self._metadata,
                self.io,
                start_snapshot_id=start_snapshot_id,
                end_snapshot_id=end_snapshot_id,
                start_time=start_time,
                end_time=end_time,
                branch=ref or MAIN_BRANCH,
                filter=filter,
                columns=columns,
                case_sensitive=case_sensitive,
                options=options,
            )
        scan = TableScan(
            self._metadata,
            self.io,
            filter=filter,
            columns=columns,
            snapshot_id=snapshot_id,
            as_of=as_of,
            ref=ref,
            case_sensitive=case_sensitive,
            options=options,
        )
        if isinstance(self.catalog, ScanPlanner):
            scan.planner = (self.catalog, self.identifier)
        return scan

    def take(
        self,
        row_ids: Sequence[int] | Any,
        columns: Sequence[str] | None = None,
        *,
        snapshot_id: int | None = None,
        as_of: int | str | dt.datetime | None = None,
        ref: str | None = None,
        missing: str = "error",
    ) -> pa.Table:
        """The live rows with these ``_row_id`` values (format v3 row lineage), in the
        order given; ``missing="skip"`` leaves out ids that name no live row instead of
        raising NoSuchRowError. Reads only the pages holding the rows where files have
        a page index (docs/RANDOM-ACCESS.md)."""
        # heavy: the pyarrow data path (see TableScan.to_arrow)
        from neve.arrow.take import take_row_ids

        return take_row_ids(
            self._metadata,
            self.io,
            row_ids,
            columns=columns,
            snapshot_id=snapshot_id,
            as_of=as_of,
            ref=ref,
            missing=missing,
        )

    def take_rows(
        self,
        positions: Sequence[int] | Any,
        columns: Sequence[str] | None = None,
        *,
        snapshot_id: int | None = None,
        as_of: int | str | dt.datetime | None = None,
        ref: str | None = None,
    ) -> pa.Table:
        """The i-th live rows of a snapshot for each i in ``positions``, in that order:
        files in scan order, rows in file order, deletes applied (a sampler's view of
        the table as rows 0 to ``live_row_count() - 1``)."""
        from neve.arrow.take import take_positions  # heavy, as in take

        return take_positions(
            self._metadata,
            self.io,
            positions,
            columns=columns,
            snapshot_id=snapshot_id,
            as_of=as_of,
            ref=ref,
        )

    def live_row_count(
        self,
        snapshot_id: int | None = None,
        as_of: int | str | dt.datetime | None = None,
        ref: str | None = None,
    ) -> int:
        """The live rows of a snapshot, from metadata where its deletes tell (reading
        position delete files where they do not, and data only for equality deletes)."""
        from neve.arrow.take import live_row_count  # heavy, as in take

        return live_row_count(
            self._metadata, self.io, snapshot_id=snapshot_id, as_of=as_of, ref=ref
        )

    def changes(
        self,
        start_snapshot_id: int | None = None,
        end_snapshot_id: int | None = None,
        start_time: int | str | dt.datetime | None = None,
        end_time: int | str | dt.datetime | None = None,
        columns: Sequence[str] | None = None,
        filter: str | BooleanExpression | None = None,
        compute_updates: bool = True,
        net_changes: bool = False,
        identifier_columns: Sequence[str] | None = None,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
    ) -> pa.Table:
        """The changelog of a range of snapshots on ``branch`` (start exclusive, end
        inclusive, default: everything up to the head): the changed rows with
        ``_change_type`` (INSERT, DELETE, UPDATE_BEFORE, UPDATE_AFTER),
        ``_change_ordinal`` and ``_commit_snapshot_id``, as Iceberg-Java's changelog
        view. Updates are paired by the primary key (or ``identifier_columns``);
        ``net_changes`` collapses each key's changes across the range
        (docs/CHANGELOG-READS.md)."""
        # heavy: the pyarrow data path (see TableScan.to_arrow)
        from neve.arrow.changelog import changelog_table

        plan = self.plan_changes(
            start_snapshot_id,
            end_snapshot_id,
            start_time,
            end_time,
            filter=filter,
            identifier_columns=identifier_columns,
            branch=branch,
            case_sensitive=case_sensitive,
        )
        return changelog_table(
            self.io,
            plan,
            columns=columns,
            compute_updates=compute_updates,
            net_changes=net_changes,
        )

    def plan_changes(
        self,
        start_snapshot_id: int | None = None,
        end_snapshot_id: int | None = None,
        start_time: int | str | dt.datetime | None = None,
        end_time: int | str | dt.datetime | None = None,
        *,
        filter: str | BooleanExpression | None = None,
        identifier_columns: Sequence[str] | None = None,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
    ) -> ChangelogPlan:
        """The planned changelog of a range (snapshots and change tasks; reads only
        manifests), for engines that read it themselves (Spark, streaming)."""
        return plan_changelog(
            self._metadata,
            self.io,
            start_snapshot_id=start_snapshot_id,
            end_snapshot_id=end_snapshot_id,
            start_time=start_time,
            end_time=end_time,
            filter=filter,
            identifier_columns=identifier_columns,
            branch=branch,
            case_sensitive=case_sensitive,
        )

    # -- writing (each commits at once) ---------------------------------------------------

    @overload
    def transaction(self) -> Transaction[pa.Table]: ...

    @overload
    def transaction(self, engine: Engine[R]) -> Transaction[R]: ...

    def transaction(self, engine: Engine[Any] | None = None) -> Transaction[Any]:
        """Stage several changes and commit them as one version (``with`` block); rows
        are written by ``engine`` (default: pyarrow; ``neve.spark.SparkEngine(spark)``
        for DataFrames)."""
        return Transaction(self, engine if engine is not None else _ARROW)

    def _now(self) -> Transaction[pa.Table]:
        return Transaction(self, _ARROW, autocommit=True)

    def append(
        self,
        data: pa.Table,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Append rows (a pyarrow Table whose columns match the table's by name). With
        ``write.auto-compact.enabled`` the small files of the partitions it touched are
        compacted afterwards (:func:`neve.table.compaction.auto_compact`)."""
        self._now().append(data, branch=branch, snapshot_properties=snapshot_properties)

    def row_delta(
        self,
        data_files: Sequence[Any] = (),
        delete_files: Sequence[Any] = (),
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Commit data files and delete files written elsewhere as one snapshot."""
        self._now().row_delta(
            data_files, delete_files, branch=branch, snapshot_properties=snapshot_properties
        )

    def delete(
        self,
        filter: str | BooleanExpression,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Delete the rows matching ``filter``: deletion vectors (v3) or position delete
        files (v2) when ``write.delete.mode`` is ``merge-on-read`` (tables neve creates
        at v2 and later), else a copy-on-write rewrite of the files matched partly."""
        self._now().delete(
            filter,
            branch=branch,
            case_sensitive=case_sensitive,
            snapshot_properties=snapshot_properties,
        )

    def update(
        self,
        set: Mapping[str, Any],
        filter: str | BooleanExpression | None = None,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> int:
        """Set columns to values (``set={"status": "shipped"}``) in the rows matching
        ``filter``; returns the number of rows updated."""
        return self._now().update(
            set,
            filter,
            branch=branch,
            case_sensitive=case_sensitive,
            snapshot_properties=snapshot_properties,
        )

    def merge(self, source: pa.Table, on: Sequence[str] | None = None) -> MergeBuilder:
        """A MERGE of ``source`` on ``on`` (default: the primary key): add
        ``when_...`` clauses, then ``execute()`` commits it as one snapshot."""
        return self._now().merge(source, on)

    def upsert(
        self,
        source: pa.Table,
        on: Sequence[str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> MergeResult:
        """Update the rows whose key (default: the primary key) is in ``source``, insert
        the others, as one snapshot (then compacts as :meth:`append` does)."""
        return self._now().upsert(
            source, on, branch=branch, snapshot_properties=snapshot_properties
        )

    def overwrite(
        self,
        data: pa.Table,
        filter: str | BooleanExpression | None = None,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Replace the rows matching ``filter`` (everything when None) with ``data``."""
        self._now().overwrite(
            data,
            filter,
            branch=branch,
            case_sensitive=case_sensitive,
            snapshot_properties=snapshot_properties,
        )

    def dynamic_partition_overwrite(
        self,
        data: pa.Table,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> None:
        """Replace exactly the partitions the rows of ``data`` fall into."""
        self._now().dynamic_partition_overwrite(
            data, branch=branch, snapshot_properties=snapshot_properties
        )

    def update_schema(
        self, allow_incompatible_changes: bool = False, case_sensitive: bool = True
    ) -> UpdateSchema:
        """``with table.update_schema() as u: u.add_column(...)`` commits on exit."""
        return self._now().update_schema(allow_incompatible_changes, case_sensitive)

    def update_spec(self, case_sensitive: bool = True) -> UpdateSpec:
        return self._now().update_spec(case_sensitive)

    def update_sort_order(self, case_sensitive: bool = True) -> UpdateSortOrder:
        return self._now().update_sort_order(case_sensitive)

    def set_properties(self, properties: Mapping[str, str] | None = None, **kwargs: str) -> None:
        self._now().set_properties(properties, **kwargs)

    def remove_properties(self, *keys: str) -> None:
        self._now().remove_properties(*keys)

    def upgrade_format_version(self, version: int) -> None:
        self._now().upgrade_format_version(version)

    def create_branch(self, name: str, snapshot_id: int | None = None, **retention: Any) -> None:
        self._now().create_branch(name, snapshot_id, **retention)

    def create_tag(self, name: str, snapshot_id: int | None = None, **retention: Any) -> None:
        self._now().create_tag(name, snapshot_id, **retention)

    def remove_branch(self, name: str) -> None:
        self._now().remove_branch(name)

    # -- streaming consumers (neve.table.consumers, docs/STREAMING.md) -------------------

    def consumers(self) -> list[Consumer]:
        """The streaming consumers recorded on this table (as of this handle's version;
        ``refresh()`` first for the latest)."""
        return list_consumers(self._metadata)

    def record_consumer(
        self, name: str, snapshot_id: int, expiration: str | int | None = None
    ) -> None:
        """Record that consumer ``name`` has consumed up to ``snapshot_id`` (one commit
        moving its tag). ``expiration`` (``"7d"``, ms) forgets it once that snapshot
        is older than that; None keeps the consumer's current setting."""
        tag = consumer_tag(name)
        age = parse_duration_ms(expiration) if expiration is not None else None
        for attempt in range(_CONSUMER_ATTEMPTS):
            try:
                self._now().set_tag(tag, snapshot_id, max_ref_age_ms=age)
                return
            except CommitFailedError:
                # the tag moved or expired under us: plan again on the fresh version
                if attempt + 1 == _CONSUMER_ATTEMPTS:
                    raise
                self.refresh()

    def remove_consumer(self, name: str) -> None:
        """Forget consumer ``name``: it no longer holds back expiration, and a stream
        started with its id begins where its options say, not where it stopped."""
        tag = consumer_tag(name)
        if find_consumer(self._metadata, name) is None:
            raise NoSuchSnapshotError(
                f"table {self.name} has no consumer {name!r}; table.consumers() lists them"
            )
        self._now().remove_tag(tag)

    def remove_tag(self, name: str) -> None:
        self._now().remove_tag(name)

    def rollback_to_snapshot(self, snapshot_id: int, branch: str = MAIN_BRANCH) -> None:
        self._now().rollback_to_snapshot(snapshot_id, branch)

    def rollback_to_time(self, when: int | str | dt.datetime, branch: str = MAIN_BRANCH) -> None:
        self._now().rollback_to_time(when, branch)

    def set_current_snapshot(self, snapshot_id: int, branch: str = MAIN_BRANCH) -> None:
        self._now().set_current_snapshot(snapshot_id, branch)
