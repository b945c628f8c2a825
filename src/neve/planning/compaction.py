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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from neve.errors import ValidationError
from neve.expressions import ALWAYS_TRUE, BooleanExpression
from neve.io.fileio import FileIO
from neve.planning.delete import file_scoped_deletes, whole_file_tasks
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.spec.refs import MAIN_BRANCH
from neve.spec.table_metadata import TableMetadata

__all__ = ["COMPACTION_OPTIONS", "CompactionOptions", "CompactionPlan", "plan_compaction"]

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
)


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

    @classmethod
    def of(cls, md: TableMetadata, options: Mapping[str, str] | None) -> CompactionOptions:
        given = dict(options or {})
        unknown = sorted(set(given) - set(COMPACTION_OPTIONS))
        if unknown:
            raise ValidationError(
                f"unknown rewrite_data_files options {unknown}; use {', '.join(COMPACTION_OPTIONS)}"
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
            md.int_property("write.target-file-size-bytes", 512 << 20),
            minimum=1,
        )
        rewrite_all = str(given.get("rewrite-all", "false")).lower()
        if rewrite_all not in ("true", "false"):
            raise ValidationError(f"option rewrite-all={rewrite_all!r} takes true or false")
        out = cls(
            target=target,
            min_size=number("min-file-size-bytes", int(target * 0.75)),
            max_size=number("max-file-size-bytes", int(target * 1.8)),
            min_input_files=number("min-input-files", 5, minimum=1),
            rewrite_all=rewrite_all == "true",
            max_group_size=number("max-file-group-size-bytes", 100 << 30, minimum=1),
            delete_file_threshold=number("delete-file-threshold", 2**31 - 1, minimum=1),
            delete_ratio_threshold=number("delete-ratio-threshold", 0.3, float),
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
    """Groups of whole-file tasks, each group rewritten into new files together."""

    groups: tuple[tuple[FileScanTask, ...], ...]
    options: CompactionOptions

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
) -> CompactionPlan:
    """The file groups a bin-pack rewrite of the files ``where`` may match rewrites
    (module rules)."""
    o = CompactionOptions.of(md, options)
    scan = ScanPlan(
        md,
        io,
        filter=where,
        ref=branch if branch in md.refs else MAIN_BRANCH,
        case_sensitive=case_sensitive,
    )
    if scan.snapshot() is None:
        return CompactionPlan((), o)
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
    return CompactionPlan(tuple(groups), o)
