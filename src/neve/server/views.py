"""The view endpoints (filled in below)."""

from __future__ import annotations

from typing import Any

__all__ = ["HANDLERS"]

HANDLERS: list[tuple[str, str, Any, bool]] = []
