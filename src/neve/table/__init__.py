"""Tables: the user-facing Table (a handle holding one immutable metadata version, moved
to the next by its own commits and refresh()), its
scans and transactions, metadata tables, and table creation."""

__all__: list[str] = []
