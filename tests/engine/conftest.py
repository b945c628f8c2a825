"""The engine suite's Spark-jobs runner on v2 tables runs in ``make test-long`` only
(make test's time budget): on v2 the same runner's verbs stay in make test through the
Spark row-level tests (tests/spark), and the suite runs it on v3 and the other runners
on both versions."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        params = getattr(item, "callspec", None)
        if params is None:
            continue
        if params.params.get("runner") == "spark" and params.params.get("version") == 2:
            item.add_marker(pytest.mark.long)
