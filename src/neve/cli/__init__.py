"""The ``neve`` command: browse catalogs and tables, read and query them, change and
look after them, from a shell (docs/CLI.md). Everything it does goes through neve's
public Python API; :mod:`neve.cli.main` holds the entry point."""

__all__: list[str] = []
