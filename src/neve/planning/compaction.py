"""Planning a bin-pack compaction (``rewrite_data_files``) as Iceberg-Java plans one:
which data files of the branch head are rewritten, in which groups.

A file is a candidate when it is smaller than ``min-file-size-bytes`` or larger than
``max-file-size-bytes``, when ``delete-file-threshold`` or more delete files apply to
it, or when its file-scoped deletes delete ``delete-ratio-threshold`` of its rows (or
always, with ``rewrite-all``). Candidates are grouped per partition and packed into
groups of at most ``max-file-group-size-bytes``; a group is rewritten when it has
``min-input-files`` files (and more than one), when it holds more than one file and
more than the target size, when it holds more than the maximum file size, or when one
of its files has too many deletes.

The plan also says how each group is written, so every engine writes it the same way:
``strategy`` ``binpack`` (rows in file order) or ``sort`` (rows sorted by
:attr:`CompactionPlan.sort`, a :class:`~neve.spec.sort_order.SortOrder` or a
:class:`ZOrder`), and how it commits (:class:`CompactionOptions`: partial progress,
starting sequence number, dangling deletes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from neve.errors import ValidationError
from neve.expressions import ALWAYS_TRUE, BooleanExpression
from neve.io.fileio import FileIO
from neve.planning.delete import file_scoped_deletes, whole_file_tasks
from neve.planning.manifests import read_manifest, read_manifest_list
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spec.manifest import DataFile, DataFileContent, ManifestEntry
from neve.spec.refs import MAIN_BRANCH
from neve.spec.sort_order import SortOrder
from neve.spec.table_metadata import TableMetadata

__all__ = [
    "COMPACTION_OPTIONS",
    "SORT_OPTIONS",
    "STRATEGIES",
    "ZORDER_OPTIONS",
    "CompactionOptions",
    "CompactionPlan",
    "ZOrder",
    "dangling_deletes",
    "plan_compaction",
]

#: The rewrite strategies (Iceberg-Java's names); z-order is a sort by ``zorder(...)``.
STRATEGIES = ("binpack", "sort")

#: The options ``rewrite_data_files`` takes (Iceberg-Java's names).
COMPACTION_OPTIONS = (
    "target-file-size-bytes",
    "min-file-size-bytes",
    "max-file-size-bytes",
    "min-input-files",
    "rewrite-all",
    "max-file-group-size-bytes",
    "delete-file-threshold",
    "delete-ratio-threshold",
    "partial-progress.enabled",
    "partial-progress.max-commits",
    "partial-progress.max-failed-commits",
    "use-starting-sequence-number",
    "remove-dangling-deletes",
)
#: Options only the sort strategy takes (Iceberg-Java's; both only tune how Spark
#: shuffles, so the pyarrow engine accepts and ignores them).
SORT_OPTIONS = ("compression-factor", "shuffle-partitions-per-file")
#: Options only a z-order sort takes.
ZORDER_OPTIONS = ("var-length-contribution", "max-output-size")


@dataclass(frozen=True)
class ZOrder:
    """A z-order over top-level columns (field ids): rows are sorted by the bits of
    the columns' order-preserving byte forms, interleaved. Strings and binaries
    contribute their first ``var_length_contribution`` bytes, every other type 8; the
    interleaved key is cut at ``max_output_size`` bytes (Iceberg-Java's options)."""

    source_ids: tuple[int, ...]
    var_length_contribution: int = 8
    max_output_size: int = 2**31 - 1


@dataclass(frozen=True)
class CompactionOptions:
    target: int
    min_size: int
    max_size: int
    min_input_files: int
    rewrite_all: bool
    max_group_size: int
    delete_file_threshold: int
    delete_ratio_threshold: float
    partial_progress: bool = False
    max_commits: int = 10
    max_failed_commits: int = 10
    use_starting_sequence_number: bool = True
    remove_dangling_deletes: bool = False
    var_length_contribution: int = 8
    max_output_size: int = 2**31 - 1

    @classmethod
    def of(
        cls,
        md: TableMetadata,
        options: Mapping[str, str] | None,
        strategy: str = "binpack",
        zorder: bool = False,
    ) -> CompactionOptions:
        given = {k: str(v) for k, v in (options or {}).items()}
        valid = list(COMPACTION_OPTIONS)
        if strategy == "sort":
            valid += SORT_OPTIONS
            if zorder:
                valid += ZORDER_OPTIONS
        unknown = sorted(set(given) - set(valid))
        if unknown:
            raise ValidationError(
                f"unknown rewrite_data_files options {unknown} for strategy {strategy!r}"
                f"{' (z-order)' if zorder else ''}; use {', '.join(valid)}"
            )

        def number(key: str, default: Any, kind: type = int, minimum: float = 0) -> Any:
            text = given.get(key)
            if text is None:
                return default
            try:
                value = kind(str(text))
            except ValueError:
                raise ValidationError(f"option {key}={text!r} is not a number") from None
            if value < minimum:
                raise ValidationError(f"option {key}={text!r} must be at least {minimum}")
            return value

        target = number(
            "target-file-size-bytes",
            md.props.as_int("write.target-file-size-bytes"),
            minimum=1,
        )

        def flag(key: str, default: bool) -> bool:
            text = given.get(key, str(default)).lower()
            if text not in ("true", "false"):
                raise ValidationError(f"option {key}={text!r} takes true or false")
            return text == "true"

        max_commits = number("partial-progress.max-commits", 10, minimum=1)
        number("compression-factor", 1.0, float, minimum=1e-9)  # checked, then ignored
        number("shuffle-partitions-per-file", 1, minimum=1)
        out = cls(
            target=target,
            min_size=number("min-file-size-bytes", int(target * 0.75)),
            max_size=number("max-file-size-bytes", int(target * 1.8)),
            min_input_files=number("min-input-files", 5, minimum=1),
            rewrite_all=flag("rewrite-all", False),
            max_group_size=number("max-file-group-size-bytes", 100 << 30, minimum=1),
            delete_file_threshold=number("delete-file-threshold", 2**31 - 1, minimum=1),
            delete_ratio_threshold=number("delete-ratio-threshold", 0.3, float),
            partial_progress=flag("partial-progress.enabled", False),
            max_commits=max_commits,
            max_failed_commits=number("partial-progress.max-failed-commits", max_commits),
            use_starting_sequence_number=flag("use-starting-sequence-number", True),
            remove_dangling_deletes=flag("remove-dangling-deletes", False),
            var_length_contribution=number("var-length-contribution", 8, minimum=1),
            max_output_size=number("max-output-size", 2**31 - 1, minimum=1),
        )
        if not out.min_size <= out.target <= out.max_size:
            raise ValidationError(
                "options need min-file-size-bytes <= target-file-size-bytes <= "
                f"max-file-size-bytes, got {out.min_size}, {out.target}, {out.max_size}"
            )
        if out.delete_ratio_threshold > 1:
            raise ValidationError("option delete-ratio-threshold is a fraction, 0 to 1")
        return out


@dataclass(frozen=True)
class CompactionPlan:
    """Groups of whole-file tasks, each group rewritten into new files together, and
    how: ``sort`` is None for bin-packing (rows in file order), else the order the
    rows of each group are written in. ``snapshot_id``/``sequence_number``: the
    snapshot planned on (the rewrite's starting snapshot)."""

    groups: tuple[tuple[FileScanTask, ...], ...]
    options: CompactionOptions
    sort: SortOrder | ZOrder | None = None
    snapshot_id: int | None = None
    sequence_number: int | None = None

    @property
    def tasks(self) -> list[FileScanTask]:
        return [t for g in self.groups for t in g]


def _too_many_deletes(task: FileScanTask, o: CompactionOptions) -> bool:
    if len(task.delete_files) >= o.delete_file_threshold:
        return True
    deleted = sum(d.record_count for d in file_scoped_deletes(task))
    return task.file.record_count > 0 and deleted / task.file.record_count >= max(
        o.delete_ratio_threshold, 1e-12
    )


def plan_compaction(
    md: TableMetadata,
    io: FileIO,
    where: BooleanExpression = ALWAYS_TRUE,
    options: Mapping[str, str] | None = None,
    *,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
    strategy: str = "binpack",
    sort: SortOrder | ZOrder | None = None,
) -> CompactionPlan:
    """The file groups a rewrite of the files ``where`` may match rewrites (module
    rules); ``sort`` is the order of the sort strategy (resolved by the caller)."""
    if strategy not in STRATEGIES:
        raise ValidationError(
            f"unknown rewrite strategy {strategy!r}; use {' or '.join(STRATEGIES)}"
        )
    if strategy == "sort" and (sort is None or (isinstance(sort, SortOrder) and sort.is_unsorted)):
        raise ValidationError(
            "the sort strategy needs a sort order: the table has none, so pass sort_order= "
            "(e.g. 'id desc nulls last' or 'zorder(a, b)'), or set the table's sort order"
        )
    if strategy == "binpack" and sort is not None:
        raise ValidationError("a sort order is for strategy='sort'; bin-packing keeps file order")
    o = CompactionOptions.of(md, options, strategy, isinstance(sort, ZOrder))
    if isinstance(sort, ZOrder):
        sort = ZOrder(sort.source_ids, o.var_length_contribution, o.max_output_size)
    scan = ScanPlan(
        md,
        io,
        filter=where,
        ref=branch if branch in md.refs else MAIN_BRANCH,
        case_sensitive=case_sensitive,
    )
    start = scan.snapshot()
    if start is None:
        return CompactionPlan((), o, sort)
    by_partition: dict[tuple[int, tuple[Any, ...]], list[FileScanTask]] = {}
    for t in whole_file_tasks(scan.plan_files()):
        size = t.file.file_size_in_bytes
        if o.rewrite_all or size < o.min_size or size > o.max_size or _too_many_deletes(t, o):
            by_partition.setdefault((t.spec_id, t.file.partition), []).append(t)
    groups: list[tuple[FileScanTask, ...]] = []
    for key in sorted(by_partition, key=repr):
        bins: list[list[FileScanTask]] = []
        size = 0
        for t in by_partition[key]:
            n = t.file.file_size_in_bytes
            if bins and size + n <= o.max_group_size:
                bins[-1].append(t)
                size += n
            else:
                bins.append([t])
                size = n
        for b in bins:
            total = sum(t.file.file_size_in_bytes for t in b)
            if (
                o.rewrite_all
                or (len(b) > 1 and len(b) >= o.min_input_files)
                or (len(b) > 1 and total > o.target)
                or total > o.max_size
                or any(_too_many_deletes(t, o) for t in b)
            ):
                groups.append(tuple(b))
    return CompactionPlan(tuple(groups), o, sort, start.snapshot_id, start.sequence_number)


def dangling_deletes(md: TableMetadata, io: FileIO, branch: str = MAIN_BRANCH) -> list[DataFile]:
    """The delete files of ``branch``'s head that apply to no live data file
    (``remove-dangling-deletes``, Iceberg-Java's rules): a deletion vector or
    file-scoped position delete file whose data file is gone; a position delete file
    whose data sequence number is lower than every data file's of its partition (it
    applies to data files of a sequence number up to its own); an equality delete file
    whose data sequence number is at most every data file's of its partition (it
    applies to lower ones; an unpartitioned one, to every partition). A partition
    without data files has only dangling deletes."""
    ref = md.refs.get(branch)
    head = md.snapshot_by_id(ref.snapshot_id) if ref is not None else md.current_snapshot()
    if head is None:
        return []
    live_data: set[str] = set()
    lowest: dict[tuple[int, tuple[Any, ...]], int] = {}
    lowest_anywhere: int | None = None
    deletes: list[ManifestEntry] = []
    for m in read_manifest_list(io, head.manifest_list):
        for e in read_manifest(io, m, specs_by_id=md.specs_by_id):
            if not e.is_live:
                continue
            f = e.data_file
            if f.content is not DataFileContent.DATA:
                deletes.append(e)
                continue
            live_data.add(f.file_path)
            seq = e.sequence_number if e.sequence_number is not None else 0
            key = (f.spec_id, f.partition)
            lowest[key] = min(lowest.get(key, seq), seq)
            lowest_anywhere = seq if lowest_anywhere is None else min(lowest_anywhere, seq)
    out: list[DataFile] = []
    for e in deletes:
        d = e.data_file
        seq = e.sequence_number if e.sequence_number is not None else 0
        if d.referenced_data_file is not None:
            gone = d.referenced_data_file not in live_data
        elif d.content is DataFileContent.POSITION_DELETES:
            low = lowest.get((d.spec_id, d.partition))
            gone = low is None or seq < low
        else:
            unpartitioned = md.spec_by_id(d.spec_id).is_unpartitioned
            low = lowest_anywhere if unpartitioned else lowest.get((d.spec_id, d.partition))
            gone = low is None or seq <= low
        if gone:
            out.append(d)
    return out
