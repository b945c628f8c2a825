"""How hard the property tests try.

``make test`` runs them with a bounded number of examples; ``make test-long`` sets
``NEVE_LONG=1`` and runs the tests marked ``property`` with thousands. ``NEVE_EXAMPLES``
overrides both (for a quick look at one test, or an overnight run).

Import it as ``from budget import examples`` (``tests/`` is on ``sys.path``, see
``strategies.py``).
"""

from __future__ import annotations

import os

__all__ = ["LONG", "examples"]

#: True under ``make test-long``.
LONG = os.environ.get("NEVE_LONG", "") == "1"


def examples(short: int, long: int) -> int:
    """Hypothesis ``max_examples``: ``short`` in ``make test``, ``long`` in ``make
    test-long``, or ``NEVE_EXAMPLES`` when set."""
    override = os.environ.get("NEVE_EXAMPLES")
    if override:
        return int(override)
    return long if LONG else short
