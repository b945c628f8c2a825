"""What to read: scan tasks, manifest reading and caching, the delete index, scan
planning."""

__all__: list[str] = []
