"""Verbs that change the catalog or a table's refs: create, create-namespace, drop,
rename, tag, branch, rollback."""

from __future__ import annotations

from typing import Any

import click

from neve.cli.context import State, json_option, pass_state
from neve.cli.output import emit_json, rows_json
from neve.cli.schema_text import parse_schema
from neve.table.table import Table

__all__ = ["VERBS", "key_value_pairs"]


def key_value_pairs(items: tuple[str, ...], what: str) -> dict[str, str]:
    """``("a=1", "b=2")`` -> ``{"a": "1", "b": "2"}`` (a usage error names a bad one)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint=what)
        out[key.strip()] = value.strip()
    return out


def _split(values: tuple[str, ...]) -> list[str]:
    """Repeated options, each also comma-separated: ``-k a,b -k c`` -> ``[a, b, c]``.
    Partition terms keep their commas inside parentheses (``bucket(16, id)``)."""
    out: list[str] = []
    for value in values:
        depth, start = 0, 0
        for i, ch in enumerate(value):
            depth += ch == "("
            depth -= ch == ")"
            if ch == "," and depth == 0:
                out.append(value[start:i].strip())
                start = i + 1
        out.append(value[start:].strip())
    return [v for v in out if v]


def _done(as_json: bool, doc: dict[str, Any], message: str) -> None:
    if as_json:
        emit_json(doc)
    else:
        click.echo(message)


@click.command()
@click.argument("table")
@click.option(
    "--schema",
    "-s",
    "schema_text",
    required=True,
    help='Columns: "id long not null, name string, tags list<string>" (docs/CLI.md).',
)
@click.option(
    "--partition-by", "-p", multiple=True, help="Partition terms: 'day(ts)', 'bucket(16, id)'."
)
@click.option("--sort-by", multiple=True, help="Sort terms: 'id', 'ts desc'.")
@click.option("--primary-key", "-k", multiple=True, help="Key columns (comma-separated).")
@click.option("--property", "props", multiple=True, help="A table property KEY=VALUE.")
@click.option("--format-version", type=click.IntRange(1, 3), help="Iceberg format version.")
@click.option("--location", help="Table location (default: under the warehouse).")
@json_option
@pass_state
def create(
    state: State,
    table: str,
    schema_text: str,
    partition_by: tuple[str, ...],
    sort_by: tuple[str, ...],
    primary_key: tuple[str, ...],
    props: tuple[str, ...],
    format_version: int | None,
    location: str | None,
    as_json: bool,
) -> None:
    """Create a table from a schema written as text."""
    t = state.catalog.create_table(
        table,
        parse_schema(schema_text),
        partition_by=_split(partition_by),
        sort_by=_split(sort_by),
        primary_key=_split(primary_key),
        properties=key_value_pairs(props, "--property"),
        format_version=format_version,
        location=location,
    )
    _done(
        as_json,
        {"table": t.name, "location": t.location, "format_version": t.format_version},
        f"created {t.name} (format v{t.format_version}) at {t.location}",
    )


@click.command("create-namespace")
@click.argument("namespace")
@click.option("--property", "props", multiple=True, help="A namespace property KEY=VALUE.")
@click.option("--exist-ok", is_flag=True, help="Succeed when the namespace exists already.")
@pass_state
def create_namespace(state: State, namespace: str, props: tuple[str, ...], exist_ok: bool) -> None:
    """Create a namespace."""
    properties = key_value_pairs(props, "--property")
    if exist_ok:
        state.catalog.create_namespace_if_not_exists(namespace, properties)
    else:
        state.catalog.create_namespace(namespace, properties)
    click.echo(f"namespace {namespace} is there")


@click.command()
@click.argument("table")
@click.option("--purge", is_flag=True, help="Also delete the table's files.")
@pass_state
def drop(state: State, table: str, purge: bool) -> None:
    """Drop a table from the catalog (its files stay unless --purge)."""
    state.catalog.drop_table(table, purge=purge)
    click.echo(f"dropped {table}" + (" and deleted its files" if purge else ""))


@click.command()
@click.argument("source")
@click.argument("target")
@pass_state
def rename(state: State, source: str, target: str) -> None:
    """Rename a table (namespace.table to namespace.table)."""
    state.catalog.rename_table(source, target)
    click.echo(f"renamed {source} to {target}")


def _refs_json(t: Table, kind: str) -> list[dict[str, Any]]:
    rows = rows_json(t.inspect.refs())
    return [r for r in rows if r["type"] == kind.upper()]


def _ref_group(kind: str) -> click.Group:
    """``neve tag|branch create|list|remove``."""

    plural = "branches" if kind == "branch" else "tags"

    @click.group(kind, help=f"Create, list and remove {plural}.")
    def group() -> None:
        pass

    @group.command("list")
    @click.argument("table")
    @json_option
    @pass_state
    def list_refs(state: State, table: str, as_json: bool) -> None:
        rows = _refs_json(state.table(table), kind)
        if as_json:
            emit_json(rows)
            return
        for r in rows:
            click.echo(f"{r['name']}\t{r['snapshot_id']}")

    list_refs.help = f"List the table's {plural} with their snapshots."

    @group.command("create")
    @click.argument("table")
    @click.argument("name")
    @click.option("--snapshot", type=int, help="The snapshot (default: the current one).")
    @click.option("--max-ref-age-ms", type=int, help="Remove the ref when older than this.")
    @json_option
    @pass_state
    def create_ref(
        state: State,
        table: str,
        name: str,
        snapshot: int | None,
        max_ref_age_ms: int | None,
        as_json: bool,
    ) -> None:
        t = state.table(table)
        if kind == "tag":
            t.create_tag(name, snapshot, max_ref_age_ms=max_ref_age_ms)
        else:
            t.create_branch(name, snapshot, max_ref_age_ms=max_ref_age_ms)
        ref = t.refs()[name]
        _done(
            as_json,
            {"table": t.name, "name": name, "type": kind, "snapshot_id": ref.snapshot_id},
            f"{kind} {name} of {t.name} at snapshot {ref.snapshot_id}",
        )

    create_ref.help = f"Create a {kind} at a snapshot."

    @group.command("remove")
    @click.argument("table")
    @click.argument("name")
    @pass_state
    def remove_ref(state: State, table: str, name: str) -> None:
        t = state.table(table)
        if kind == "tag":
            t.remove_tag(name)
        else:
            t.remove_branch(name)
        click.echo(f"removed {kind} {name} of {t.name}")

    remove_ref.help = f"Remove a {kind}."
    return group


@click.command()
@click.argument("table")
@click.option("--snapshot", type=int, help="Roll back to this snapshot id (an ancestor).")
@click.option("--ref", help="Roll back to the snapshot of this tag or branch.")
@click.option("--to-time", help="Roll back to the snapshot current at this time.")
@click.option("--branch", default="main", show_default=True, help="The branch to move.")
@json_option
@pass_state
def rollback(
    state: State,
    table: str,
    snapshot: int | None,
    ref: str | None,
    to_time: str | None,
    branch: str,
    as_json: bool,
) -> None:
    """Move a branch back to an earlier snapshot (of its own history)."""
    if sum(x is not None for x in (snapshot, ref, to_time)) != 1:
        raise click.UsageError("give exactly one of --snapshot, --ref and --to-time")
    t = state.table(table)
    if to_time is not None:
        t.rollback_to_time(int(to_time) if to_time.isdigit() else to_time, branch)
    else:
        if ref is not None:
            target = t.snapshot_by_name(ref)  # NoSuchSnapshotError names the known refs
            if target is None:
                raise click.UsageError(f"{ref!r} has no snapshot yet")
            snapshot = target.snapshot_id
        assert snapshot is not None
        t.rollback_to_snapshot(snapshot, branch)
    head = t.refs()[branch].snapshot_id
    _done(
        as_json,
        {"table": t.name, "branch": branch, "snapshot_id": head},
        f"{t.name} branch {branch} is at snapshot {head}",
    )


VERBS = [
    create,
    create_namespace,
    drop,
    rename,
    _ref_group("tag"),
    _ref_group("branch"),
    rollback,
]
