"""``neve serve``: run the Iceberg REST catalog server (docs/REST.md) on a SQL
catalog, and say how each engine connects to it."""

from __future__ import annotations

import json
import os
import secrets

import click

from neve.catalog.config import default_entry, lookup
from neve.cli.context import State, pass_state
from neve.errors import CatalogNotConfiguredError, ValidationError

__all__ = ["VERBS", "connect_hints"]


def connect_hints(url: str, warehouse: str) -> str:
    """How Spark, pyiceberg, DuckDB and neve connect to a server at ``url``."""
    return f"""neve REST catalog at {url}
  neve:      neve.connect("{url}", credential="<id>:<secret>")   (or NEVE_URI={url})
  pyiceberg: load_catalog("neve", type="rest", uri="{url}", credential="<id>:<secret>")
  Spark:     --conf spark.sql.catalog.neve=org.apache.iceberg.spark.SparkCatalog \\
             --conf spark.sql.catalog.neve.type=rest \\
             --conf spark.sql.catalog.neve.uri={url} \\
             --conf spark.sql.catalog.neve.credential=<id>:<secret>
  DuckDB:    ATTACH '{warehouse}' AS neve (TYPE ICEBERG, ENDPOINT '{url}',
             CLIENT_ID '<id>', CLIENT_SECRET '<secret>')"""


def _catalog_args(state: State, uri: str | None, warehouse: str | None) -> dict[str, str]:
    """The SQL catalog to serve: ``--uri``/``--warehouse`` of the verb or of ``neve``,
    else the configured catalog when it is a SQL one."""
    uri = uri or state.uri
    warehouse = warehouse or state.warehouse
    if uri is None and state.catalog_name is None:
        try:
            entry = default_entry()
        except CatalogNotConfiguredError:
            return {}
        uri, warehouse = entry.uri, warehouse or entry.warehouse
    elif uri is None and state.catalog_name is not None:
        entry = lookup(state.catalog_name)
        uri, warehouse = entry.uri, warehouse or entry.warehouse
    out = {"uri": uri or "", "warehouse": warehouse or ""}
    if uri and not uri.startswith(("sqlite", "postgres")):
        raise ValidationError(
            f"neve serve serves a SQL catalog (sqlite:// or postgresql://), not {uri!r}"
        )
    return {k: v for k, v in out.items() if v}


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8181, show_default=True, type=int, help="Port to listen on.")
@click.option("--uri", "catalog_uri", help="The SQL catalog to serve (sqlite:// or postgresql://).")
@click.option("--warehouse", "catalog_warehouse", help="Where new tables go.")
@click.option("--name", "catalog_name", help="The catalog name stored in the rows (default neve).")
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False),
    help="Server config file: catalogs, principals, roles and grants (docs/REST.md).",
)
@click.option("--anonymous", is_flag=True, help="Allow requests without a token (local use).")
@click.option("--warehouse-root", help="Serve any warehouse name W as catalog W under this folder.")
@click.option("--workers", default=1, show_default=True, type=int, help="Server processes.")
@pass_state
def serve(
    state: State,
    host: str,
    port: int,
    catalog_uri: str | None,
    catalog_warehouse: str | None,
    catalog_name: str | None,
    config_file: str | None,
    anonymous: bool,
    warehouse_root: str | None,
    workers: int,
) -> None:
    """Serve a SQL catalog over the Iceberg REST protocol (Spark, pyiceberg, DuckDB,
    Trino and neve connect to it)."""
    # heavy: uvicorn and the server load only for this verb
    import uvicorn

    # (the server package imports its app)
    from neve.server.config import CONFIG_ENV, SIGNING_KEY_ENV, load_config

    cat = _catalog_args(state, catalog_uri, catalog_warehouse)
    path = os.path.abspath(config_file) if config_file else None
    root = os.path.abspath(warehouse_root) if warehouse_root else None
    config = load_config(
        path,
        uri=cat.get("uri"),
        warehouse=cat.get("warehouse"),
        name=catalog_name,
        anonymous=True if anonymous else None,
        warehouse_root=root,
    )
    args: dict[str, object] = {**cat, "config": path, "warehouse_root": root}
    if catalog_name:
        args["name"] = catalog_name
    if anonymous:
        args["anonymous"] = True
    os.environ[CONFIG_ENV] = json.dumps(args)
    # one signing key for every worker process, so each accepts the others' tokens
    os.environ.setdefault(SIGNING_KEY_ENV, config.signing_key or secrets.token_urlsafe(32))
    url = f"http://{host}:{port}"
    # plain text, not Rich: the hints are copied from the terminal, unwrapped
    click.echo(connect_hints(url, config.catalog.name), err=True)
    if anonymous:
        click.echo("  (anonymous access is on: no token needed)", err=True)
    uvicorn.run(
        "neve.server.app:create_app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="warning",
        access_log=False,
    )


VERBS = [serve]
