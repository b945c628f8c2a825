"""Maintenance verbs (expire, remove-orphans, compact, rewrite-manifests), each shown
with a progress line while it runs, and ``demo``."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from neve.catalog.config import register_catalog
from neve.cli.change import key_value_pairs
from neve.cli.context import State, err_console, json_option, pass_state
from neve.cli.output import emit_json, result_json

__all__ = ["VERBS"]

T = TypeVar("T")


def _working(label: str, fn: Callable[[], T]) -> T:
    """Run ``fn`` under a spinner with the elapsed time (on a terminal); when it
    succeeds a line saying it is done stays, when it fails only the error does."""
    t0 = time.perf_counter()
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    ) as progress:
        progress.add_task(label, total=None)
        out = fn()
    err_console.print(f"✓ {label}: done in {time.perf_counter() - t0:.2f} s")
    return out


def _working_bar(label: str, unit: str, fn: Callable[[Callable[[int, int], None]], T]) -> T:
    """As :func:`_working`, with a bar of ``done``/``total`` ``unit`` that ``fn`` moves
    through the callback it is given (a spinner until the first call)."""
    t0 = time.perf_counter()
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    ) as progress:
        task = progress.add_task(label, total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        out = fn(advance)
    err_console.print(f"✓ {label}: done in {time.perf_counter() - t0:.2f} s")
    return out


def _report(result: Any, as_json: bool) -> None:
    if as_json:
        emit_json(result_json(result))
    else:
        click.echo(str(result))


def _when(value: str | None) -> int | str | None:
    return int(value) if value is not None and value.isdigit() else value


@click.command()
@click.argument("table")
@click.option("--older-than", help="Expire snapshots older than this time (ISO or epoch ms).")
@click.option("--retain-last", type=int, help="Keep at least this many snapshots per branch.")
@click.option("--snapshot-id", "snapshot_ids", type=int, multiple=True, help="Expire this one.")
@click.option(
    "--clean-expired-metadata", is_flag=True, help="Also drop specs and schemas only they used."
)
@click.option("--dry-run", is_flag=True, help="Say what would go; change nothing.")
@json_option
@pass_state
def expire(
    state: State,
    table: str,
    older_than: str | None,
    retain_last: int | None,
    snapshot_ids: tuple[int, ...],
    clean_expired_metadata: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Expire old snapshots and delete the files only they reached."""
    t = state.table(table)
    result = _working(
        f"expiring snapshots of {t.name}",
        lambda: t.maintenance.expire_snapshots(
            older_than=_when(older_than),
            retain_last=retain_last,
            snapshot_ids=snapshot_ids,
            clean_expired_metadata=clean_expired_metadata,
            dry_run=dry_run,
        ),
    )
    _report(result, as_json)


@click.command("remove-orphans")
@click.argument("table")
@click.option("--older-than", help="Only files older than this (default: 3 days ago).")
@click.option("--location", help="Look below this folder (default: the table's location).")
@click.option("--dry-run", is_flag=True, help="List the orphans; delete nothing.")
@json_option
@pass_state
def remove_orphans(
    state: State,
    table: str,
    older_than: str | None,
    location: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Delete files below the table's location that no snapshot or metadata reaches."""
    t = state.table(table)
    result = _working(
        f"looking for orphan files of {t.name}",
        lambda: t.maintenance.remove_orphan_files(
            older_than=_when(older_than), location=location, dry_run=dry_run
        ),
    )
    _report(result, as_json)


@click.command()
@click.argument("table")
@click.option("--where", "-w", help="Compact only the rows this neve filter selects.")
@click.option("--option", "options", multiple=True, help="A compaction option KEY=VALUE.")
@click.option(
    "--strategy",
    type=click.Choice(["binpack", "sort"]),
    default="binpack",
    show_default=True,
    help="Keep file order, or sort the rows of each file group.",
)
@click.option(
    "--sort-order",
    help="With --strategy sort: 'col desc nulls last, col2' or 'zorder(a, b)' "
    "(default: the table's sort order).",
)
@click.option("--branch", default="main", show_default=True)
@click.option("--dry-run", is_flag=True, help="Say what would be rewritten; change nothing.")
@json_option
@pass_state
def compact(
    state: State,
    table: str,
    where: str | None,
    options: tuple[str, ...],
    strategy: str,
    sort_order: str | None,
    branch: str,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Rewrite small files and files with deletes into files of the target size
    (bin-packed, or sorted); a bar counts the file groups written."""
    t = state.table(table)
    opts = key_value_pairs(options, "--option")
    result = _working_bar(
        f"compacting {t.name}",
        "file groups",
        lambda advance: t.maintenance.rewrite_data_files(
            where=where,
            options=opts,
            branch=branch,
            dry_run=dry_run,
            strategy=strategy,
            sort_order=sort_order,
            progress=advance,
        ),
    )
    _report(result, as_json)


@click.command("rewrite-manifests")
@click.argument("table")
@click.option("--spec-id", type=int, help="Only the manifests of this partition spec.")
@click.option("--branch", default="main", show_default=True)
@json_option
@pass_state
def rewrite_manifests(
    state: State, table: str, spec_id: int | None, branch: str, as_json: bool
) -> None:
    """Rewrite the data manifests clustered by partition (no --dry-run: the Python API
    has none)."""
    t = state.table(table)
    result = _working(
        f"rewriting the manifests of {t.name}",
        lambda: t.maintenance.rewrite_manifests(spec_id=spec_id, branch=branch),
    )
    _report(result, as_json)


@click.command()
@click.option("--root", default=".demo", show_default=True, help="Folder for data and catalog.")
@click.option("--scale", type=float, default=0.1, show_default=True, help="TPC-H scale factor.")
@click.option("--master", default="local[2]", show_default=True, help="Spark master URL.")
@click.option(
    "--register/--no-register",
    default=True,
    show_default=True,
    help="Add the demo's catalog to neve's config file as 'demo'.",
)
def demo(root: str, scale: float, master: str, register: bool) -> None:
    """Run neve's main job (a TPC-H pipeline on Spark), then register its catalog so
    that `neve tables tpch` finds it."""
    # heavy and optional: the demo starts Spark; only this verb needs it
    from neve.demo import run

    folder = Path(root).resolve()
    run(folder, scale, master)
    if register:
        path, is_default = register_catalog(
            "demo", f"sqlite:///{folder}/catalog.db", str(folder / "warehouse")
        )
        how = "the default catalog" if is_default else "use --catalog demo"
        err_console.print(f"registered the demo catalog as 'demo' in {path} ({how})")


VERBS = [expire, remove_orphans, compact, rewrite_manifests, demo]
