"""The Iceberg table format as data: types, schemas, transforms, specs, metadata."""

__all__: list[str] = []
