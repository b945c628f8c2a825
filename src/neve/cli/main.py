"""The ``neve`` command's entry point: global options, the verbs, and how errors end
the process (exit codes in docs/CLI.md: 0 done, 1 a neve error, 2 a usage error, 3 an
unexpected failure)."""

from __future__ import annotations

import re
import sys
import traceback
from collections.abc import Sequence
from importlib.metadata import version
from typing import TYPE_CHECKING

import click
from rich.table import Table as RichTable

from neve.cli import browse, change, changes, maintain, read, serve
from neve.cli.context import State, err_console, json_option, pass_state
from neve.cli.output import arrow_table, emit_json, rows_json, show
from neve.errors import NeveError

if TYPE_CHECKING:
    from neve.cli.sql import QueryPlan

__all__ = ["EXIT_INTERNAL", "EXIT_NEVE", "EXIT_OK", "EXIT_USAGE", "cli", "main"]

EXIT_OK, EXIT_NEVE, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--uri", envvar=None, help="Catalog URI or folder (else NEVE_URI, else config).")
@click.option("--warehouse", help="Where new tables go (SQL catalogs; with --uri).")
@click.option(
    "--catalog",
    "catalog_name",
    help="A configured catalog's name; with --uri, the catalog name stored in its rows.",
)
@click.option(
    "--property",
    "-P",
    "properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="A catalog property, e.g. s3.endpoint=http://127.0.0.1:9000 (repeatable; "
    "overrides the config file's).",
)
@click.option("--debug", is_flag=True, help="Show the full traceback of an error.")
@click.version_option(version("neve"), prog_name="neve")
@click.pass_context
def cli(
    ctx: click.Context,
    uri: str | None,
    warehouse: str | None,
    catalog_name: str | None,
    properties: tuple[str, ...],
    debug: bool,
) -> None:
    """neve: Iceberg tables from the shell.

    The catalog is --uri/--warehouse, else NEVE_URI/NEVE_WAREHOUSE, else --catalog NAME
    or NEVE_CATALOG from ~/.config/neve/config.yaml or pyiceberg's .pyiceberg.yaml, else
    the config file's default (see docs/CLI.md); --property adds catalog properties
    (object store settings: docs/OBJECT-STORES.md). Tables are named namespace.table.
    """
    props = {}
    for item in properties:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--property")
        props[key.strip()] = value
    ctx.obj = State(
        uri=uri, warehouse=warehouse, catalog_name=catalog_name, debug=debug, properties=props
    )


def _plan_json(plan: QueryPlan) -> list[dict[str, object]]:
    return [
        {
            "table": r.table,
            "filter": r.filter,
            "columns": r.columns,
            "planned_files": r.planned_files,
            "total_files": r.total_files,
        }
        for r in plan.reads
    ]


def _plan_table(plan: QueryPlan) -> RichTable:
    out = RichTable(title="what neve reads", title_justify="left")
    for col in ("table", "filter pushed down", "columns", "files planned"):
        out.add_column(col, overflow="fold")
    for r in plan.reads:
        out.add_row(
            r.table,
            r.filter or "(none)",
            ", ".join(r.columns) if r.columns else "(all)",
            f"{r.planned_files} of {r.total_files}",
        )
    return out


@cli.command()
@click.argument("query")
@click.option("--explain", "only_explain", is_flag=True, help="Show what neve reads; run nothing.")
@click.option("--show-reads", is_flag=True, help="Also print what neve read (to stderr).")
@json_option
@pass_state
def sql(state: State, query: str, only_explain: bool, show_reads: bool, as_json: bool) -> None:
    """Run a SQL query (DuckDB) over neve tables named namespace.table; the WHERE
    filters on each table are pushed into neve's planner."""
    # heavy: sqlglot (and DuckDB) load only for this verb
    from neve.cli.sql import explain, run_query

    if only_explain:
        plan = explain(query, state.catalog)
        if as_json:
            emit_json(_plan_json(plan))
        else:
            show(_plan_table(plan))
        return
    rows, plan = run_query(query, state.catalog)
    if show_reads:
        err_console.print(_plan_table(plan))
    if as_json:
        emit_json(rows_json(rows))
    else:
        show(arrow_table(rows, title=f"{rows.num_rows:,} row{'' if rows.num_rows == 1 else 's'}"))


for _verb in (
    *browse.VERBS,
    *read.VERBS,
    *changes.VERBS,
    *change.VERBS,
    *maintain.VERBS,
    *serve.VERBS,
):
    cli.add_command(_verb)


#: The catalog-name hint of SQL catalogs (neve.catalog.sql) speaks Python; say it in flags.
_NAME_HINT = re.compile(r"neve\.connect\(uri, warehouse, name='([^']*)'\)")


def _for_the_command(message: str) -> str:
    return _NAME_HINT.sub(r"--catalog \1 (with --uri and --warehouse)", message)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command; exits with 0, 1 (a neve error: one line on stderr), 2 (usage)
    or 3 (an unexpected error)."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:  # a global option, but accepted after the verb too
        args = ["--debug", *(a for a in args if a != "--debug")]
    try:
        cli.main(args=args, prog_name="neve", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        err_console.print("aborted")
        sys.exit(EXIT_NEVE)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(EXIT_OK)  # the reader (head, less) stopped reading
    except (NeveError, OSError) as exc:
        if debug:
            traceback.print_exc()
        message = " ".join(str(exc).split()) or type(exc).__name__
        click.echo(f"error: {_for_the_command(message)}", err=True)
        sys.exit(EXIT_NEVE)
    except Exception as exc:
        if debug:
            traceback.print_exc()
        click.echo(
            f"error: unexpected {type(exc).__name__}: {' '.join(str(exc).split())} "
            "(run with --debug for the traceback, and please report it)",
            err=True,
        )
        sys.exit(EXIT_INTERNAL)
    sys.exit(EXIT_OK)
