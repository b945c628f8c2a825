"""What every verb shares: the global options, the catalog they choose, the consoles,
and the ``--json`` option."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click
from rich.console import Console

from neve.catalog.base import Catalog
from neve.catalog.config import default_entry, lookup
from neve.catalog.connect import connect, open_entry
from neve.table.table import Table

__all__ = ["State", "err_console", "json_option", "out_console", "pass_state"]

F = TypeVar("F", bound=Callable[..., Any])

#: Results go to stdout; progress, notes and errors to stderr (so output pipes cleanly).
#: Piped output is laid out 200 columns wide (or $COLUMNS), not Rich's 80.
out_console = Console(highlight=False, soft_wrap=False)
if not out_console.is_terminal:
    out_console = Console(
        highlight=False, soft_wrap=False, width=int(os.environ.get("COLUMNS") or 200)
    )
err_console = Console(stderr=True, highlight=False)


@dataclass
class State:
    """The global options; the catalog is opened on first use."""

    uri: str | None = None
    warehouse: str | None = None
    catalog_name: str | None = None
    debug: bool = False
    #: Catalog properties from ``--property KEY=VALUE`` (e.g. ``s3.endpoint``).
    properties: dict[str, str] = field(default_factory=dict)
    _catalog: Catalog | None = field(default=None, repr=False)

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = self._open()
        return self._catalog

    def _open(self) -> Catalog:
        props = self.properties
        if self.uri:
            return connect(self.uri, self.warehouse, name=self.catalog_name, **props)
        if self.warehouse:
            raise click.UsageError("--warehouse needs --uri (the catalog's database or folder)")
        if self.catalog_name:
            return open_entry(lookup(self.catalog_name), **props)
        if props:
            return open_entry(default_entry(), **props)
        return connect()

    def table(self, name: str) -> Table:
        return self.catalog.load_table(name)


pass_state = click.make_pass_decorator(State)


def json_option(fn: F) -> F:
    """``--json``: print one JSON document (json.loads parses it) instead of tables."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON document instead of a table."
    )(fn)
