"""``neve serve``: an Iceberg REST catalog server on neve's SQL catalog (docs/REST.md).

Spark with Iceberg-Java, pyiceberg, DuckDB, Trino and neve's own REST client share
tables through it; it keeps them in a SQL catalog (SQLite by default, PostgreSQL for
several server processes), so it persists and several processes can serve one database.
"""

from neve.server.app import ENDPOINTS, RestServer, create_app
from neve.server.config import ServerConfig, load_config

__all__ = ["ENDPOINTS", "RestServer", "ServerConfig", "create_app", "load_config"]
