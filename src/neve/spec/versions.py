"""The Iceberg format versions neve reads and writes."""

from __future__ import annotations

__all__ = ["SUPPORTED_FORMAT_VERSIONS"]

SUPPORTED_FORMAT_VERSIONS = (1, 2, 3)
