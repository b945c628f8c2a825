"""Commits (compare-and-swap of the metadata pointer) for every catalog kind, including
races between threads and between processes. Uses only catalog primitives."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest

from neve.catalog import Catalog, FilesystemCatalog, Identifier
from neve.errors import CommitFailedError, NoSuchTableError, TableAlreadyExistsError
from neve.io.fileio import local_path
from neve.spec.table_metadata import TableMetadata


def _metadata_files(catalog: Catalog, location: str) -> set[str]:
    """Every file in the table's metadata folder (temporary files included)."""
    folder = os.path.join(local_path(location), "metadata")
    return set(os.listdir(folder)) if os.path.isdir(folder) else set()


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def test_commit_swaps_pointer(catalog: Catalog, create_raw: Callable[..., Any]) -> None:
    ident, base, md = create_raw(catalog, "db.t")
    new = catalog.commit_metadata(ident, base, md.with_(properties={"k": "v"}))
    assert new != base
    assert catalog._metadata_location(ident) == new
    assert catalog.read_metadata(new).properties == {"k": "v"}
    if isinstance(catalog, FilesystemCatalog):
        assert (_name(base), _name(new)) == ("v1.metadata.json", "v2.metadata.json")
    else:  # Iceberg-Java's names: <version:05d>-<uuid>.metadata.json
        assert _name(base).startswith("00000-")
        assert _name(new).startswith("00001-")
    newer = catalog.commit_metadata(ident, new, md.with_(properties={"k": "w"}))
    assert _name(newer).startswith("v3." if isinstance(catalog, FilesystemCatalog) else "00002-")
    assert _metadata_files(catalog, md.location) == {_name(base), _name(new), _name(newer)} | (
        {"version-hint.text"} if isinstance(catalog, FilesystemCatalog) else set()
    )


def test_stale_base_fails_and_cleans_up(catalog: Catalog, create_raw: Callable[..., Any]) -> None:
    ident, base, md = create_raw(catalog, "db.t")
    current = catalog.commit_metadata(ident, base, md.with_(properties={"n": "1"}))
    before = _metadata_files(catalog, md.location)
    with pytest.raises(CommitFailedError, match="another writer") as info:
        catalog.commit_metadata(ident, base, md.with_(properties={"n": "2"}))
    assert info.value.retryable
    assert _metadata_files(catalog, md.location) == before
    assert catalog._metadata_location(ident) == current


def test_commit_to_dropped_table(catalog: Catalog, create_raw: Callable[..., Any]) -> None:
    ident, base, md = create_raw(catalog, "db.t")
    catalog._drop_table(ident)
    with pytest.raises(NoSuchTableError):
        catalog.commit_metadata(ident, base, md.with_(properties={"n": "1"}))
    assert not catalog.table_exists(ident)


def test_create_primitive_conflict(catalog: Catalog, create_raw: Callable[..., Any]) -> None:
    ident, base, md = create_raw(catalog, "db.t")
    before = _metadata_files(catalog, md.location)
    with pytest.raises(TableAlreadyExistsError):
        catalog._create_table(ident, md)
    assert _metadata_files(catalog, md.location) == before
    assert catalog._metadata_location(ident) == base


# -- races between threads -----------------------------------------------------------

WRITERS = 6
ROUNDS = 3


def _race_threads(
    catalog: Catalog, ident: Identifier, base: str, md: TableMetadata, round_no: int
) -> tuple[list[str], list[BaseException]]:
    barrier = threading.Barrier(WRITERS)
    won: list[str] = []
    lost: list[BaseException] = []
    lock = threading.Lock()

    def writer(i: int) -> None:
        new_md = md.with_(properties={"round": str(round_no), "writer": str(i)})
        barrier.wait()
        try:
            loc = catalog.commit_metadata(ident, base, new_md)
        except BaseException as exc:
            with lock:
                lost.append(exc)
        else:
            with lock:
                won.append(loc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return won, lost


def test_threads_race_one_wins_per_round(catalog: Catalog, create_raw: Callable[..., Any]) -> None:
    ident, base, md = create_raw(catalog, "db.t")
    kept = {_name(base)}
    for round_no in range(ROUNDS):
        won, lost = _race_threads(catalog, ident, base, md, round_no)
        assert len(won) == 1, lost
        assert len(lost) == WRITERS - 1
        assert all(isinstance(e, CommitFailedError) for e in lost), lost
        assert catalog._metadata_location(ident) == won[0]
        assert catalog.read_metadata(won[0]).properties["round"] == str(round_no)
        kept.add(_name(won[0]))
        files = _metadata_files(catalog, md.location) - {"version-hint.text"}
        assert files == kept  # the losers' files are gone, no temporary files remain
        base = won[0]


def test_threads_race_to_create(catalog: Catalog, make_metadata: Callable[..., Any]) -> None:
    catalog.create_namespace("db")
    ident = ("db", "t")
    location = catalog.default_table_location(ident)
    barrier = threading.Barrier(WRITERS)
    outcomes: list[object] = [None] * WRITERS

    def creator(i: int) -> None:
        md = make_metadata(location).with_(properties={"writer": str(i)})
        barrier.wait()
        try:
            outcomes[i] = catalog._create_table(ident, md)
        except BaseException as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=creator, args=(i,)) for i in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    created = [o for o in outcomes if isinstance(o, str)]
    assert len(created) == 1, outcomes
    assert all(isinstance(o, TableAlreadyExistsError) for o in outcomes if o is not created[0])
    assert catalog._metadata_location(ident) == created[0]
    files = _metadata_files(catalog, location) - {"version-hint.text"}
    assert files == {_name(created[0])}


# -- races between processes ---------------------------------------------------------


def _commit_in_process(
    catalog: Catalog, ident: Identifier, base: str, md: TableMetadata, start_at: float
) -> str:
    """Runs in a worker process: commit at ``start_at``; the error's class name if lost."""
    time.sleep(max(0.0, start_at - time.time()))
    try:
        return "won:" + catalog.commit_metadata(ident, base, md)
    except CommitFailedError:
        return "lost"


def _warm_up() -> int:
    import neve.catalog  # noqa: F401

    return os.getpid()


@pytest.fixture(scope="module")
def process_pool() -> Iterator[ProcessPoolExecutor]:
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        pids = {pool.submit(_warm_up).result() for _ in range(4)}
        assert os.getpid() not in pids
        yield pool


def test_processes_race_one_wins_per_round(
    catalog: Catalog, create_raw: Callable[..., Any], process_pool: ProcessPoolExecutor
) -> None:
    ident, base, md = create_raw(catalog, "db.t")
    kept = {_name(base)}
    for round_no in range(2):
        start_at = time.time() + 0.3
        futures = [
            process_pool.submit(
                _commit_in_process,
                catalog,
                ident,
                base,
                md.with_(properties={"round": str(round_no), "writer": str(i)}),
                start_at,
            )
            for i in range(2)
        ]
        results = [f.result(timeout=120) for f in futures]
        winners = [r[4:] for r in results if r.startswith("won:")]
        assert len(winners) == 1, results
        assert results.count("lost") == 1, results
        assert catalog._metadata_location(ident) == winners[0]
        kept.add(_name(winners[0]))
        assert _metadata_files(catalog, md.location) - {"version-hint.text"} == kept
        base = winners[0]
