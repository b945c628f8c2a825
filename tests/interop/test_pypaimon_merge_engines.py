"""neve's deduplicate and first-row engines against pypaimon 2.x (the engines it
writes; it writes no deletes, so no row kinds): the same random batches, each one
commit, give the same final rows in a pypaimon primary-key table (local filesystem
catalog) as in a neve table and in the reference model (tests/merge_engine_model.py).

first-row is read with ``deletion-vectors.enabled`` and
``deletion-vectors.merge-on-read``: a plain first-row batch scan skips level-0 files,
and pypaimon writes nothing else (it never compacts)."""

from __future__ import annotations

import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, given, note, settings

from budget import examples
from merge_engine_model import SCHEMA, Config, apply_batch, batches, to_arrow
from neve import SqlCatalog
from paimonengine import paimon_rows

pytestmark = pytest.mark.property

READ_OPTIONS = {
    "deduplicate": {},
    "first-row": {"deletion-vectors.enabled": "true", "deletion-vectors.merge-on-read": "true"},
}


@pytest.mark.parametrize("engine", ["deduplicate", "first-row"])
def test_neve_equals_pypaimon(engine: str) -> None:
    config = Config(engine)

    @settings(
        max_examples=examples(4, 60),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(drawn=batches(config))
    def check(drawn: list[list[dict[str, object]]]) -> None:
        note(f"batches: {drawn}")
        where = tempfile.mkdtemp()
        try:
            cat = SqlCatalog("m", f"sqlite:///{where}/c.db", f"{where}/wh")
            cat.create_namespace("db")
            table = cat.create_table(
                "db.t", SCHEMA, primary_key=["k"], properties=config.properties()
            )
            state: dict[int, dict[str, object]] = {}
            for batch in drawn:
                table.upsert(to_arrow(batch, config))
                state = apply_batch(config, state, batch)
            ours = sorted(table.refresh().scan().to_arrow().to_pylist(), key=lambda r: r["k"])
            cat.dispose()
        finally:
            shutil.rmtree(where, ignore_errors=True)
        rows = [[{c: r[c] for c in SCHEMA.names} for r in b] for b in drawn]
        theirs = paimon_rows({"merge-engine": engine, **READ_OPTIONS[engine]}, rows)
        assert ours == sorted(theirs, key=lambda r: r["k"])
        assert ours == [state[k] for k in sorted(state)]

    check()
