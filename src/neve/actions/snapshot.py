"""Producing a snapshot: new manifests for added files, rewritten manifests for removed
files, manifest merging, the manifest list, the summary, and the updates that add the
snapshot and move the branch.

Like Iceberg-Java, the snapshot id and the manifests of added files are fixed once; on a
retry only what depends on the new parent (rewritten and merged manifests, the manifest
list) is produced again.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from neve.actions.base import Action, TableState
from neve.actions.summary import build_summary
from neve.errors import CommitConflictError, NoSuchSnapshotError, ValidationError
from neve.io.fileio import FileIO
from neve.io.locations import manifest_list_path, manifest_path
from neve.planning.manifest_cache import cached_manifest_list, remember_manifest_list
from neve.planning.manifests import read_manifest
from neve.spec.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from neve.spec.manifest_writer import AvroCodec, write_manifest, write_manifest_list
from neve.spec.refs import MAIN_BRANCH, SnapshotRef, SnapshotRefType
from neve.spec.requirements import AssertRefSnapshotId, TableRequirement
from neve.spec.snapshot import Operation, Snapshot
from neve.spec.table_metadata import TableMetadata
from neve.spec.updates import AddSnapshot, SetSnapshotRef, TableUpdate

__all__ = [
    "REBASES",
    "VALIDATES",
    "Rebase",
    "RebasePolicy",
    "SnapshotAction",
    "branch_head",
    "check_branch_target",
    "check_snapshot_properties",
    "file_key",
    "new_snapshot_id",
    "require_branch",
    "write_parent",
]


def new_snapshot_id() -> int:
    """A random positive 63-bit id, as Iceberg-Java generates."""
    return random.getrandbits(63) or 1


class Rebase(Protocol):
    """Carries a change over the commits that landed since its base (``parent``: the
    branch head it now commits onto), before it is validated against them: it may read
    their files and change the action's own (merge a concurrent deletion vector into
    its own, mark rows they added), or raise a typed error where the outcome is not
    well defined. Engines provide it (actions read no data files)."""

    def __call__(self, action: SnapshotAction, md: TableMetadata, parent: Snapshot) -> None: ...


@dataclass(frozen=True)
class RebasePolicy:
    """How a change carries itself over the commits that land between its base and the
    head it commits onto; given to the action when it is made.

    - ``hook``: called on each new head before validation (None: validation only).
    - ``retries_until_timeout``: losing the swap only says others were faster, never that
      the change is wrong (its checks still refuse what cannot rebase), so the commit
      retries until ``commit.retry.total-timeout-ms`` instead of counting
      ``commit.retry.num-retries`` (appends, rebasing row deltas and compactions).
    - ``reapplies``: the hook applies the change to the data files concurrent commits
      added (a delete's condition, an upsert's keys), so under ``serializable`` those
      files are no conflict.
    - ``carries_positions``: the hook carries position deletes committed meanwhile to the
      files a rewrite adds, so those deletes are no conflict (a compaction).
    """

    hook: Rebase | None = None
    retries_until_timeout: bool = True
    reapplies: bool = False
    carries_positions: bool = False


#: The policy of an action that only validates (no hook, Iceberg's retry count).
VALIDATES = RebasePolicy(retries_until_timeout=False)

#: The policy of an append without checks: it rebases onto any newer head.
REBASES = RebasePolicy()


class SnapshotAction(Action):
    """Base of every action that commits a snapshot (append, overwrite, delete)."""

    operation: Operation = Operation.APPEND

    def __init__(
        self,
        table: TableState,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        owned_files: Iterable[str] = (),
        rebase: RebasePolicy = VALIDATES,
        validate_from: int | Literal["head"] | None = "head",
    ) -> None:
        """``rebase``: how the change rebases (:class:`RebasePolicy`). ``validate_from``:
        the snapshot after which commits count as concurrent (a compaction passes the
        snapshot it read); by default the branch head now."""
        self.table = table
        self.io: FileIO = table.io
        self.branch = branch
        self.snapshot_properties = check_snapshot_properties(snapshot_properties)
        self.snapshot_id = new_snapshot_id()
        self.commit_uuid = str(uuid.uuid4())
        # The head this change validates concurrent commits against: the branch head
        # when the change (or the transaction it belongs to) started.
        if validate_from == "head":
            base = write_parent(table.metadata, branch)
            validate_from = base.snapshot_id if base is not None else None
        self.base_snapshot_id: int | None = validate_from
        self.added_files: list[DataFile] = []
        #: Files this change removes, by :func:`file_key` (delete files included: a
        #: Puffin file holds several deletion vectors, told apart by their offsets).
        self.removed_paths: dict[tuple[str, int | None], DataFile] = {}
        #: Data files written for this change: removed when the commit fails.
        self.owned_files = set(owned_files)
        self._added_manifests: list[ManifestFile] | None = None
        self._written: set[str] = set()
        self._final: set[str] = set()
        self._manifest_counter = 0
        #: Snapshots committed earlier in the same transaction: not concurrent changes.
        self.ignore_snapshot_ids: set[int] = set()
        self._attempt = 0
        self.rebase_policy = rebase
        #: The data sequence number of the data files this change adds, when they hold
        #: older rows (a compaction keeping its starting snapshot's); None: the commit's.
        self.data_sequence_number: int | None = None
        self._carried_over: TableMetadata | None = None

    @property
    def always_rebases(self) -> bool:
        return self.rebase_policy.retries_until_timeout

    # -- what subclasses fill in -----------------------------------------------------

    def add_file(self, f: DataFile) -> None:
        self.added_files.append(f)

    def remove_file(self, f: DataFile) -> None:
        self.removed_paths[file_key(f)] = f

    def validate(self, md: TableMetadata, parent: Snapshot | None) -> None:
        """Check concurrent commits between the base snapshot and ``parent``."""

    def carry_over(self, md: TableMetadata) -> None:
        """Run the :attr:`rebase` hook over the commits since the base (once per
        metadata version planned on)."""
        parent = write_parent(md, self.branch)
        hook = self.rebase_policy.hook
        if hook is None or parent is None or parent.snapshot_id == self.base_snapshot_id:
            return
        if self._carried_over is md:
            return  # RowDelta carries over before its own checks, in the same plan
        hook(self, md, parent)
        self._carried_over = md

    def files_changed(self) -> None:
        """The added files changed (a rebase replaced some): the next plan writes the
        manifests of added files again."""
        self._added_manifests = None

    # -- planning --------------------------------------------------------------------

    def plan(self, md: TableMetadata) -> tuple[list[TableUpdate], list[TableRequirement]]:
        self._attempt += 1
        old_ref = md.refs.get(self.branch)
        if old_ref is not None and not old_ref.is_branch:
            raise CommitConflictError(
                f"{self.branch!r} is a tag, not a branch; commit to a branch instead"
            )
        parent = write_parent(md, self.branch)
        if parent is not None and parent.snapshot_id != self.base_snapshot_id:
            self.carry_over(md)
            self.validate(md, parent)
            if self.rebase_policy.hook is not None and not self.ignore_snapshot_ids:
                # carried over and checked up to ``parent``, a snapshot other writers
                # committed: later attempts look only at what lands after it, so a
                # writer that keeps losing does not redo ever more work. (In a
                # transaction whose earlier changes made snapshots, ``parent`` is its
                # own and is made again on retry: there every attempt carries the
                # change over everything since the base; a rebase is idempotent.)
                self.base_snapshot_id = parent.snapshot_id
        seq = md.next_sequence_number()
        manifests = self._manifests(md, parent)
        manifests = self._merge(md, manifests)
        list_path = manifest_list_path(
            md.location, md.properties, self.snapshot_id, self._attempt, self.commit_uuid
        )
        first_row_id = md.next_row_id if md.format_version >= 3 else None
        written = write_manifest_list(
            self.io,
            list_path,
            format_version=md.format_version,
            snapshot_id=self.snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=seq,
            manifests=manifests,
            first_row_id=first_row_id,
            codec=AvroCodec.of(md.props),
        )
        self._written.add(list_path)
        if md.format_version >= 2:  # a v1 list reads back with sequence numbers 0
            remember_manifest_list(list_path, written)
        self._final = {m.manifest_path for m in manifests} | {list_path}
        added_rows = None
        if first_row_id is not None:
            added_rows = sum(
                m.added_rows_count + m.existing_rows_count
                for m in manifests
                if m.content is ManifestContent.DATA and m.first_row_id is None
            )
        summary = build_summary(
            self.added_files,
            list(self.removed_paths.values()),
            parent,
            extra=self.snapshot_properties,
        )
        snapshot = Snapshot(
            snapshot_id=self.snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=seq,
            timestamp_ms=max(int(time.time() * 1000), md.last_updated_ms),
            manifest_list=list_path,
            operation=self.operation,
            summary=summary,
            schema_id=md.current_schema_id,
            first_row_id=first_row_id,
            added_rows=added_rows,
        )
        ref = SnapshotRef(
            self.snapshot_id,
            SnapshotRefType.BRANCH,
            old_ref.min_snapshots_to_keep if old_ref else None,
            old_ref.max_snapshot_age_ms if old_ref else None,
            old_ref.max_ref_age_ms if old_ref else None,
        )
        updates: list[TableUpdate] = [AddSnapshot(snapshot), SetSnapshotRef(self.branch, ref)]
        # The branch must still be where this attempt found it (absent for a new one).
        reqs: list[TableRequirement] = [
            AssertRefSnapshotId(self.branch, old_ref.snapshot_id if old_ref else None)
        ]
        return updates, reqs

    def _new_manifest_path(self, md: TableMetadata) -> str:
        self._manifest_counter += 1
        path = manifest_path(md.location, md.properties, self.commit_uuid, self._manifest_counter)
        self._written.add(path)
        return path

    def _write(
        self,
        md: TableMetadata,
        spec_id: int,
        content: ManifestContent,
        entries: Sequence[ManifestEntry],
    ) -> ManifestFile:
        return write_manifest(
            self.io,
            self._new_manifest_path(md),
            format_version=md.format_version,
            spec=md.spec_by_id(spec_id),
            schema=md.schema(),
            content=content,
            snapshot_id=self.snapshot_id,
            entries=entries,
            codec=AvroCodec.of(md.props),
        )

    def _manifests(self, md: TableMetadata, parent: Snapshot | None) -> list[ManifestFile]:
        if self._added_manifests is None:
            self._added_manifests = []
            groups: dict[tuple[int, ManifestContent], list[ManifestEntry]] = {}
            for f in self.added_files:
                content = (
                    ManifestContent.DATA
                    if f.content is DataFileContent.DATA
                    else ManifestContent.DELETES
                )
                seq = self.data_sequence_number if content is ManifestContent.DATA else None
                groups.setdefault((f.spec_id, content), []).append(
                    ManifestEntry(ManifestEntryStatus.ADDED, self.snapshot_id, seq, None, f)
                )
            for (spec_id, content), entries in groups.items():
                self._added_manifests.append(self._write(md, spec_id, content, entries))
        out = list(self._added_manifests)
        if parent is None:
            if self.removed_paths:
                raise CommitConflictError(
                    f"the branch {self.branch!r} has no snapshot any more, so the files this "
                    "change removes are gone; reload the table and retry"
                )
            return out
        found: set[tuple[str, int | None]] = set()
        contents = {
            ManifestContent.DATA if f.content is DataFileContent.DATA else ManifestContent.DELETES
            for f in self.removed_paths.values()
        }
        for m in cached_manifest_list(self.io, parent.manifest_list):
            if m.content in contents and (m.added_files_count + m.existing_files_count > 0):
                entries = read_manifest(self.io, m, specs_by_id=md.specs_by_id)
                hits = [
                    e for e in entries if e.is_live and file_key(e.data_file) in self.removed_paths
                ]
                if hits:
                    found.update(file_key(e.data_file) for e in hits)
                    out.append(self._rewrite_without(md, m, entries))
                    continue
            if m.added_files_count + m.existing_files_count == 0:
                # only deletes an earlier snapshot recorded: not carried forward (as
                # Iceberg-Java's MergingSnapshotProducer), so the manifest, and the spec
                # it was written with, can be expired with that snapshot
                continue
            out.append(m)
        missing = set(self.removed_paths) - found
        if missing:
            raise CommitConflictError(
                f"{len(missing)} file(s) this change removes are no longer in the table "
                f"(e.g. {sorted(missing)[0][0]}); a concurrent commit removed or replaced "
                "them. Reload the table and run the change again"
            )
        return out

    def _rewrite_without(
        self, md: TableMetadata, m: ManifestFile, entries: Sequence[ManifestEntry]
    ) -> ManifestFile:
        out: list[ManifestEntry] = []
        for e in entries:
            if not e.is_live:
                continue  # deletes recorded by older snapshots are not carried forward
            if file_key(e.data_file) in self.removed_paths:
                out.append(
                    e.with_(status=ManifestEntryStatus.DELETED, snapshot_id=self.snapshot_id)
                )
            else:
                out.append(e.with_(status=ManifestEntryStatus.EXISTING))
        return self._write(md, m.partition_spec_id, m.content, out)

    # -- merging ---------------------------------------------------------------------

    def _merge(self, md: TableMetadata, manifests: list[ManifestFile]) -> list[ManifestFile]:
        """Iceberg-Java's manifest merging: per (content, spec), bin-pack manifests into
        ``commit.manifest.target-size-bytes``; the bin with this commit's new manifest is
        merged only once it holds ``commit.manifest.min-count-to-merge`` manifests."""
        if not md.props.as_bool("commit.manifest-merge.enabled"):
            return manifests
        min_count = md.props.as_int("commit.manifest.min-count-to-merge")
        target = md.props.as_int("commit.manifest.target-size-bytes")
        new_paths = {m.manifest_path for m in (self._added_manifests or [])}
        groups: dict[tuple[ManifestContent, int], list[ManifestFile]] = {}
        for m in manifests:
            groups.setdefault((m.content, m.partition_spec_id), []).append(m)
        out: list[ManifestFile] = []
        for (content, spec_id), group in groups.items():
            if len(group) < min_count:
                out.extend(group)
                continue
            bins: list[list[ManifestFile]] = []
            size = 0
            for m in group:
                if bins and size + m.manifest_length <= target:
                    bins[-1].append(m)
                    size += m.manifest_length
                else:
                    bins.append([m])
                    size = m.manifest_length
            for b in bins:
                has_new = any(m.manifest_path in new_paths for m in b)
                if len(b) == 1 or (has_new and len(b) < min_count):
                    out.extend(b)
                else:
                    out.append(self._merge_bin(md, spec_id, content, b))
        return out

    def _merge_bin(
        self,
        md: TableMetadata,
        spec_id: int,
        content: ManifestContent,
        manifests: Sequence[ManifestFile],
    ) -> ManifestFile:
        entries: list[ManifestEntry] = []
        for m in manifests:
            for e in read_manifest(self.io, m, specs_by_id=md.specs_by_id):
                if e.snapshot_id == self.snapshot_id:
                    if e.status is ManifestEntryStatus.ADDED:
                        # inherit this snapshot's sequence number again (or keep the
                        # data sequence number this change gives its data files)
                        seq = (
                            self.data_sequence_number
                            if e.data_file.content is DataFileContent.DATA
                            else None
                        )
                        entries.append(e.with_(sequence_number=seq, file_sequence_number=None))
                    else:
                        entries.append(e)
                elif e.is_live:
                    entries.append(e.with_(status=ManifestEntryStatus.EXISTING))
        return self._write(md, spec_id, content, entries)

    # -- cleanup ---------------------------------------------------------------------

    def on_success(self, io: FileIO) -> None:
        for p in self._written - self._final:
            io.delete(p)

    def on_failure(self, io: FileIO) -> None:
        for p in self._written | self.owned_files:
            io.delete(p)
        for p in self.owned_files:
            io.remove_empty_parents(p)


def file_key(f: DataFile) -> tuple[str, int | None]:
    """What tells a table's files apart: the path, and for a deletion vector its offset
    in the Puffin file (one Puffin file holds the DVs of many data files)."""
    return (f.file_path, f.content_offset if f.is_deletion_vector else None)


def check_snapshot_properties(properties: Mapping[str, str] | None) -> dict[str, str]:
    """Snapshot summary properties as a dict; keys and values must be strings."""
    out = dict(properties or {})
    for k, v in out.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ValidationError(
                f"snapshot properties are strings; got {k!r}: {v!r} (convert with str())"
            )
    return out


def branch_head(md: TableMetadata, branch: str) -> Snapshot | None:
    """The head of ``branch``; None when main has no snapshot yet or the branch does
    not exist."""
    ref = md.refs.get(branch)
    if ref is None:
        return md.current_snapshot() if branch == MAIN_BRANCH else None
    return md.snapshot_by_id(ref.snapshot_id)


def write_parent(md: TableMetadata, branch: str) -> Snapshot | None:
    """The snapshot a write to ``branch`` builds on: its head, or main's current
    snapshot when the branch does not exist yet (the write creates it there, as
    Iceberg-Java's ``SnapshotUtil.latestSnapshot`` does)."""
    if branch in md.refs:
        return branch_head(md, branch)
    return md.current_snapshot()


def require_branch(md: TableMetadata, branch: str) -> None:
    """Changes that only remove rows need an existing branch: a misspelled name must not
    create an empty one."""
    if branch != MAIN_BRANCH and branch not in md.refs:
        known = ", ".join(sorted(n for n, r in md.refs.items() if r.is_branch))
        raise NoSuchSnapshotError(
            f"no branch named {branch!r} (branches: {known}); check the name, or create "
            "the branch first with create_branch()"
        )


def check_branch_target(md: TableMetadata, branch: str) -> None:
    """Refuse a write to a tag (tags are immutable names for one snapshot)."""
    ref = md.refs.get(branch)
    if ref is not None and not ref.is_branch:
        raise ValidationError(
            f"{branch!r} is a tag; write to a branch (create one from the tag with "
            f"create_branch(name, snapshot_id={ref.snapshot_id}))"
        )
