"""pyiceberg 0.12's ``RestCatalog`` against ``neve serve`` on loopback (client id and
secret through the token endpoint): create, append, overwrite, delete, schema and
partition evolution, concurrent commits from several processes, and server-side scan
planning (``scan-planning-mode=server``). neve's own REST client reads the same rows."""

from __future__ import annotations

import multiprocessing
import uuid
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog as PyRest
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.expressions import GreaterThanOrEqual
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import StringType

import neve
from restserver import NeveServer

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("cat", pa.string()),
        pa.field("x", pa.float64()),
    ]
)
WRITERS, APPENDS = 3, 3


def _py(server: NeveServer, **props: str) -> PyRest:
    return PyRest("neve", uri=server.url, credential="admin:admin-secret", **props)


def _rows(ids: range, cat: str = "a") -> pa.Table:
    return pa.table(
        {"id": list(ids), "cat": [cat] * len(ids), "x": [i / 4 for i in ids]}, schema=SCHEMA
    )


def _ns(py: PyRest) -> str:
    ns = f"py{uuid.uuid4().hex[:8]}"
    py.create_namespace(ns)
    return ns


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["id"])


def test_create_append_overwrite_delete_and_evolve(secured: NeveServer) -> None:
    py = _py(secured)
    ns = _ns(py)
    t = py.create_table(f"{ns}.t", schema=SCHEMA)
    t.append(_rows(range(0, 10)))
    t.append(_rows(range(10, 20), "b"))
    t.overwrite(_rows(range(100, 103), "c"), overwrite_filter="cat = 'b'")
    t.delete("id < 3")
    with t.update_schema() as upd:
        upd.add_column("note", StringType())
        upd.rename_column("x", "value")
    t = py.load_table(f"{ns}.t")
    with t.update_spec() as spec:
        spec.add_field("cat", IdentityTransform(), "cat")
    t = py.load_table(f"{ns}.t")
    t.append(
        pa.table(
            {"id": [200], "cat": ["d"], "value": [1.5], "note": ["é ✓"]},
            schema=t.schema().as_arrow(),
        )
    )
    expected = _sorted(py.load_table(f"{ns}.t").scan().to_arrow().to_pylist())
    assert [r["id"] for r in expected] == [*range(3, 10), 100, 101, 102, 200]
    nv = neve.connect(secured.url, credential="admin:admin-secret").load_table(f"{ns}.t")
    assert nv.schema().column_names == ["id", "cat", "value", "note"]
    assert len(nv.specs()) == 2
    assert _sorted(nv.scan().to_arrow().to_pylist()) == expected
    ops = [s.operation.value for s in nv.snapshots()]
    assert ops[:2] == ["append", "append"] and "delete" in ops


def _append_with_retries(url: str, table: str, writer: int) -> int:
    py = PyRest("neve", uri=url, credential="admin:admin-secret")
    done = 0
    for i in range(APPENDS):
        for _attempt in range(50):
            try:
                py.load_table(table).append(_rows(range(writer * 1000 + i, writer * 1000 + i + 1)))
                done += 1
                break
            except CommitFailedException:
                continue  # another writer won the swap: reload and try again
    return done


@pytest.mark.rest
def test_concurrent_appends_from_several_processes(secured: NeveServer) -> None:
    py = _py(secured)
    ns = _ns(py)
    py.create_table(f"{ns}.t", schema=SCHEMA)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["pyiceberg.catalog.rest", "pyiceberg.table", "pyarrow"])
    with ProcessPoolExecutor(WRITERS, mp_context=ctx) as pool:
        done = list(
            pool.map(
                _append_with_retries, [secured.url] * WRITERS, [f"{ns}.t"] * WRITERS, range(WRITERS)
            )
        )
    assert done == [APPENDS] * WRITERS
    t = py.load_table(f"{ns}.t")
    ids = sorted(t.scan().to_arrow().column("id").to_pylist())
    assert ids == sorted(w * 1000 + i for w in range(WRITERS) for i in range(APPENDS))
    assert len(t.snapshots()) == WRITERS * APPENDS  # every append is one snapshot, none lost


def test_server_side_planning_gives_pyiceberg_the_same_tasks(secured: NeveServer) -> None:
    nv = neve.connect(secured.url, credential="admin:admin-secret")
    ns = f"plan{uuid.uuid4().hex[:8]}"
    nv.create_namespace(ns)
    t = nv.create_table(f"{ns}.t", SCHEMA, partition_by=["cat"])
    for k, cat in enumerate("abcd"):
        t.append(_rows(range(k * 50, k * 50 + 50), cat))
    t.delete("cat = 'b' and id < 60")  # position deletes (merge-on-read, v2)
    client = _py(secured)
    server = _py(secured, **{"scan-planning-mode": "server"})
    assert server.supports_server_side_planning() and not client.supports_server_side_planning()
    for row_filter in [None, GreaterThanOrEqual("id", 120)]:
        scans = []
        for cat in (client, server):
            tbl = cat.load_table(f"{ns}.t")
            scans.append(tbl.scan() if row_filter is None else tbl.scan(row_filter=row_filter))
        local, remote = (list(s.plan_files()) for s in scans)
        assert {f.file.file_path for f in remote} == {f.file.file_path for f in local}
        assert {d.file_path for f in remote for d in f.delete_files} == {
            d.file_path for f in local for d in f.delete_files
        }
        assert _sorted(scans[1].to_arrow().to_pylist()) == _sorted(scans[0].to_arrow().to_pylist())
    # neve's client plans on the server too when told to
    planned = neve.connect(
        secured.url, credential="admin:admin-secret", **{"scan-planning-mode": "server"}
    )
    assert planned.plans_on_server
    got = planned.load_table(f"{ns}.t").scan(filter="id >= 120").to_arrow().to_pylist()
    assert _sorted(got) == _sorted(t.refresh().scan(filter="id >= 120").to_arrow().to_pylist())
