"""Tables: the user-facing Table (an immutable view of one metadata version), its
scans and transactions, metadata tables, and table creation."""

__all__: list[str] = []
