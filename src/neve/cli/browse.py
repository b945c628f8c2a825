"""Verbs that look: catalogs, namespaces, tables, describe, history, snapshots (with a
chart), files, partitions, refs."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import click
import pyarrow as pa
from rich.table import Table as RichTable
from rich.text import Text

from neve.arrow.pages import describe_pages
from neve.catalog.config import configured_catalogs, default_entry
from neve.cli.context import State, json_option, pass_state
from neve.cli.output import arrow_table, emit_json, key_values, rows_json, show
from neve.errors import NeveError
from neve.spec.merge_engine import merge_engine
from neve.spec.schema import walk_fields
from neve.table.table import Table

__all__ = ["VERBS"]

#: ``scheme://user:password@`` in a URI: the password is not shown.
_PASSWORD = re.compile(r"^([a-z0-9+.-]+://[^:/@]*:)[^@/]*@", re.IGNORECASE)


@click.command()
@json_option
def catalogs(as_json: bool) -> None:
    """List the configured catalogs (neve's config file and pyiceberg's)."""
    entries = configured_catalogs()
    try:
        default: str | None = default_entry().key
    except NeveError:
        default = None
    rows = [
        {
            "name": e.key,
            "default": e.key == default,
            "uri": _PASSWORD.sub(r"\1***@", e.uri),
            "warehouse": e.warehouse,
            "catalog_name": e.name,
            "source": e.source,
        }
        for e in sorted(entries.values(), key=lambda e: e.key)
    ]
    if as_json:
        emit_json(rows)
        return
    out = RichTable(title="catalogs", title_justify="left")
    for col in ("name", "default", "uri", "warehouse", "catalog_name", "source"):
        out.add_column(col, overflow="fold")
    for r in rows:
        out.add_row(
            *("*" if v is True else "" if v in (False, None) else str(v) for v in r.values())
        )
    show(out)


@click.command()
@click.argument("parent", required=False)
@json_option
@pass_state
def namespaces(state: State, parent: str | None, as_json: bool) -> None:
    """List namespaces (all levels, or those below PARENT)."""
    names = [".".join(ns) for ns in _all_namespaces(state, parent)]
    if as_json:
        emit_json(names)
        return
    for n in names:
        click.echo(n)


def _all_namespaces(state: State, parent: str | None) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    todo = list(state.catalog.list_namespaces(parent or ()))
    while todo:
        ns = todo.pop(0)
        out.append(ns)
        todo[:0] = state.catalog.list_namespaces(ns)
    return out


@click.command()
@click.argument("namespace", required=False)
@json_option
@pass_state
def tables(state: State, namespace: str | None, as_json: bool) -> None:
    """List the tables of NAMESPACE (or of every namespace)."""
    spaces = [tuple(namespace.split("."))] if namespace else _all_namespaces(state, None)
    names = [".".join(t) for ns in spaces for t in state.catalog.list_tables(ns)]
    if as_json:
        emit_json(names)
        return
    for n in names:
        click.echo(n)


def _merge_engine(table: Table) -> dict[str, Any]:
    """How rows of one primary key combine (``spec.merge_engine``: Paimon's properties;
    ``deduplicate`` unless set). Properties that do not fit are shown, not refused."""
    try:
        engine = merge_engine(table.properties, table.schema())
    except NeveError as exc:
        return {"kind": table.properties.get("merge-engine", "deduplicate"), "error": str(exc)}
    return {
        "kind": engine.kind,
        "sequence_fields": list(engine.sequence_fields),
        "descending": engine.descending,
        "rowkind_field": engine.rowkind_field,
        "ignore_delete": engine.ignore_delete,
        "aggregates": {col: agg.function for col, agg in engine.aggregates.items()},
    }


def _engine_text(engine: dict[str, Any] | None) -> str:
    if engine is None:
        return "none (no primary key)"
    notes = []
    if engine.get("error"):
        notes.append(f"invalid: {engine['error']}")
    if engine.get("sequence_fields"):
        order = " descending" if engine["descending"] else ""
        notes.append(f"sequence {', '.join(engine['sequence_fields'])}{order}")
    if engine.get("rowkind_field"):
        notes.append(f"row kinds in {engine['rowkind_field']}")
    if engine.get("ignore_delete"):
        notes.append("ignores deletes")
    if engine.get("aggregates"):
        notes.append(", ".join(f"{c}: {f}" for c, f in engine["aggregates"].items()))
    return str(engine["kind"]) + (f" ({'; '.join(notes)})" if notes else "")


def describe_doc(table: Table) -> dict[str, Any]:
    """What ``describe`` shows, as a JSON object."""
    md = table.metadata
    schema = table.schema()
    names = {f.field_id: path for path, f, _ in walk_fields(schema.fields)}
    snap = table.current_snapshot()
    key = [names[i] for i in schema.identifier_field_ids]
    engine = _merge_engine(table) if key else None
    return {
        "name": table.name,
        "uuid": md.table_uuid,
        "format_version": table.format_version,
        "location": table.location,
        "metadata_location": table.metadata_location,
        "current_snapshot_id": snap.snapshot_id if snap else None,
        "rows": int(snap.summary.get("total-records", 0)) if snap else 0,
        "data_files": int(snap.summary.get("total-data-files", 0)) if snap else 0,
        "schema_id": schema.schema_id,
        "schema": [
            {
                "id": f.field_id,
                "name": path,
                "type": str(f.field_type),
                "required": f.required,
                "doc": f.doc,
            }
            for path, f, _ in walk_fields(schema.fields)
        ],
        "partition_spec": {
            "spec_id": table.spec().spec_id,
            "fields": [
                {
                    "field_id": p.field_id,
                    "name": p.name,
                    "transform": str(p.transform),
                    "source_id": p.source_id,
                    "source": names.get(p.source_id),
                }
                for p in table.spec().fields
            ],
        },
        "sort_order": {
            "order_id": table.sort_order().order_id,
            "fields": [
                {
                    "source": names.get(s.source_id),
                    "transform": str(s.transform),
                    "direction": s.direction.value,
                    "null_order": s.null_order.value,
                }
                for s in table.sort_order().fields
            ],
        },
        "primary_key": key,
        "merge_engine": None if engine is None else engine["kind"],
        "merge_engine_settings": engine,
        "properties": dict(sorted(table.properties.items())),
    }


@click.command()
@click.argument("table")
@json_option
@pass_state
def describe(state: State, table: str, as_json: bool) -> None:
    """Schema (with field ids), partition spec, sort order, primary key and properties."""
    doc = describe_doc(state.table(table))
    if as_json:
        emit_json(doc)
        return
    show(
        key_values(
            [
                ("table", doc["name"]),
                ("format version", doc["format_version"]),
                ("location", doc["location"]),
                ("current snapshot", doc["current_snapshot_id"] or "none"),
                ("rows", f"{doc['rows']:,}"),
                ("data files", doc["data_files"]),
                ("primary key", ", ".join(doc["primary_key"]) or "none"),
                ("merge engine", _engine_text(doc["merge_engine_settings"])),
            ]
        )
    )
    schema = RichTable(title=f"schema {doc['schema_id']}", title_justify="left")
    for col, justify in (("id", "right"), ("name", "left"), ("type", "left"), ("", "left")):
        schema.add_column(col, justify=justify)  # type: ignore[arg-type]
    keys = set(doc["primary_key"])
    for f in doc["schema"]:
        notes = ["required" if f["required"] else "optional"]
        if f["name"] in keys:
            notes.append("primary key")
        if f["doc"]:
            notes.append(f["doc"])
        schema.add_row(str(f["id"]), f["name"], f["type"], ", ".join(notes))
    show(schema)
    spec = doc["partition_spec"]
    parts = [f"{p['transform']}({p['source']}) as {p['name']}" for p in spec["fields"]]
    show(key_values([(f"partition spec {spec['spec_id']}", ", ".join(parts) or "unpartitioned")]))
    order = doc["sort_order"]
    sorts = [
        f"{s['transform']}({s['source']}) {s['direction']} {s['null_order']}"
        for s in order["fields"]
    ]
    show(key_values([(f"sort order {order['order_id']}", ", ".join(sorts) or "unsorted")]))
    if doc["properties"]:
        show(key_values(doc["properties"].items(), title="properties"))


def _listing(rows: pa.Table, as_json: bool, title: str, columns: list[str] | None = None) -> None:
    if as_json:
        emit_json(rows_json(rows if columns is None else rows.select(columns)))
    else:
        show(arrow_table(rows, title=title, columns=columns))


@click.command()
@click.argument("table")
@click.option("--plot", is_flag=True, help="Chart rows, files and bytes of main over time.")
@json_option
@pass_state
def history(state: State, table: str, plot: bool, as_json: bool) -> None:
    """When each snapshot became current on main."""
    t = state.table(table)
    if plot and not as_json:
        by_id = {r["snapshot_id"]: r for r in _snapshot_rows(t)}
        rows = [
            {
                **by_id[e.snapshot_id],
                "committed_at": dt.datetime.fromtimestamp(e.timestamp_ms / 1000, dt.timezone.utc),
            }
            for e in t.history()
            if e.snapshot_id in by_id  # expired snapshots stay in the log, without totals
        ]
        if not rows:
            click.echo(f"{t.name} has no history yet")
            return
        show(_chart(t.name, rows, "main"))
        return
    _listing(t.inspect.history(), as_json, f"history of {t.name}")


def _snapshot_rows(t: Table) -> list[dict[str, Any]]:
    out = []
    for s in sorted(t.snapshots(), key=lambda s: (s.timestamp_ms, s.sequence_number)):
        summary = s.summary
        out.append(
            {
                "committed_at": dt.datetime.fromtimestamp(s.timestamp_ms / 1000, dt.timezone.utc),
                "snapshot_id": s.snapshot_id,
                "parent_id": s.parent_snapshot_id,
                "operation": s.operation.value,
                "rows": int(summary.get("total-records", 0)),
                "data_files": int(summary.get("total-data-files", 0)),
                "delete_files": int(summary.get("total-delete-files", 0)),
                "bytes": int(summary.get("total-files-size", 0)),
                "added_rows": int(summary.get("added-records", 0)),
                "deleted_rows": int(summary.get("deleted-records", 0)),
            }
        )
    return out


@click.command()
@click.argument("table")
@click.option("--plot", is_flag=True, help="Chart rows, files and bytes per snapshot over time.")
@json_option
@pass_state
def snapshots(state: State, table: str, plot: bool, as_json: bool) -> None:
    """The table's snapshots with their totals (rows, files, bytes), oldest first."""
    t = state.table(table)
    rows = _snapshot_rows(t)
    if as_json:
        emit_json([{k: _j(v) for k, v in r.items()} for r in rows])
        return
    if not rows:
        click.echo(f"{t.name} has no snapshots yet")
        return
    if plot:
        show(_chart(t.name, rows, "snapshot"))
        return
    out = RichTable(title=f"snapshots of {t.name}", title_justify="left")
    for col in rows[0]:
        out.add_column(col, justify="left" if col in ("committed_at", "operation") else "right")
    for r in rows:
        out.add_row(*(_cell(v) for v in r.values()))
    show(out)


def _j(v: Any) -> Any:
    return v.isoformat() if isinstance(v, dt.datetime) else v


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) < 10**15:
        return f"{v:,}"
    return str(v)


_BAR_WIDTH = 16
_SERIES = (("rows", "green"), ("data_files", "cyan"), ("bytes", "magenta"))


def _bar(value: int, top: int, colour: str) -> Text:
    """A bar of eighth-blocks, ``value`` of ``top`` filling the width."""
    eighths = 0 if top <= 0 else round(value / top * _BAR_WIDTH * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + ("" if part == 0 else " ▏▎▍▌▋▊▉"[part])
    return Text(text.ljust(_BAR_WIDTH), style=colour)


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _chart(name: str, rows: list[dict[str, Any]], what: str) -> RichTable:
    """Rows, data files and bytes after each snapshot, in time order: one line per
    snapshot, a bar per measure scaled to its largest value. ``what``: ``snapshot``
    (every snapshot by commit time) or ``main`` (the history of main)."""
    tops = {key: max((r[key] for r in rows), default=0) for key, _ in _SERIES}
    out = RichTable(
        title=(
            f"{name}: rows, data files and bytes per snapshot over time"
            if what == "snapshot"
            else f"{name}: rows, data files and bytes of main over time"
        ),
        title_justify="left",
        caption=(
            f"bars scaled to the largest value: {tops['rows']:,} rows, "
            f"{tops['data_files']:,} data files, {_human_bytes(tops['bytes'])}"
        ),
        caption_justify="left",
    )
    out.add_column(
        "committed at (UTC)" if what == "snapshot" else "current from (UTC)",
        no_wrap=True,
        min_width=19,
    )
    out.add_column("operation", no_wrap=True)
    for measure, width in (("rows", 4), ("files", 5), ("bytes", 10)):
        out.add_column(measure, justify="right", no_wrap=True, min_width=width)
        out.add_column("", no_wrap=True, min_width=_BAR_WIDTH)
    for r in rows:
        out.add_row(
            _cell(r["committed_at"]),
            r["operation"],
            f"{r['rows']:,}",
            _bar(r["rows"], tops["rows"], "green"),
            f"{r['data_files']:,}",
            _bar(r["data_files"], tops["data_files"], "cyan"),
            _human_bytes(r["bytes"]),
            _bar(r["bytes"], tops["bytes"], "magenta"),
        )
    return out


_FILE_COLUMNS = [
    "content",
    "file_path",
    "file_format",
    "spec_id",
    "partition",
    "record_count",
    "file_size_in_bytes",
]


@click.command()
@click.argument("table")
@click.option("--snapshot", type=int, help="Files of this snapshot (default: the current one).")
@click.option(
    "--pages",
    is_flag=True,
    help="Per data file: row groups, pages per column, page sizes, page index present.",
)
@json_option
@pass_state
def files(state: State, table: str, snapshot: int | None, pages: bool, as_json: bool) -> None:
    """The data and delete files of a snapshot."""
    t = state.table(table)
    rows = t.inspect.files(snapshot)
    if pages:
        _pages(t, rows, as_json)
        return
    columns = [c for c in _FILE_COLUMNS if c in rows.column_names]
    _listing(rows, as_json, f"files of {t.name}", columns)


def _pages(t: Table, files: pa.Table, as_json: bool) -> None:
    """The physical layout of the snapshot's Parquet data files (docs/RANDOM-ACCESS.md)."""
    found: list[dict[str, Any]] = []
    for f in files.to_pylist():
        if (
            f.get("content") not in (0, "data", "DATA")
            or str(f["file_format"]).upper() != "PARQUET"
        ):
            continue
        found += [{"file_path": f["file_path"], **r} for r in describe_pages(t.io, f["file_path"])]
    rows = (
        pa.Table.from_pylist(found) if found else pa.table({"file_path": pa.array([], pa.string())})
    )
    _listing(rows, as_json, f"pages of the data files of {t.name}")


@click.command()
@click.argument("table")
@click.option("--snapshot", type=int, help="Partitions of this snapshot (default: current).")
@json_option
@pass_state
def partitions(state: State, table: str, snapshot: int | None, as_json: bool) -> None:
    """Rows and files per partition."""
    t = state.table(table)
    _listing(t.inspect.partitions(snapshot), as_json, f"partitions of {t.name}")


@click.command()
@click.argument("table")
@json_option
@pass_state
def refs(state: State, table: str, as_json: bool) -> None:
    """Branches and tags."""
    t = state.table(table)
    _listing(t.inspect.refs(), as_json, f"refs of {t.name}")


VERBS = [catalogs, namespaces, tables, describe, history, snapshots, files, partitions, refs]
