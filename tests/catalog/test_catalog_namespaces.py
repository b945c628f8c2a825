"""Namespaces, the same for every catalog kind."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from neve.catalog import Catalog
from neve.errors import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    ValidationError,
)


def test_create_and_list(catalog: Catalog) -> None:
    assert catalog.list_namespaces() == []
    catalog.create_namespace("db")
    catalog.create_namespace(("db", "sub"))
    catalog.create_namespace("other")
    assert catalog.list_namespaces() == [("db",), ("other",)]
    assert catalog.list_namespaces("db") == [("db", "sub")]
    assert catalog.list_namespaces("db.sub") == []
    assert catalog.namespace_exists("db.sub")
    assert not catalog.namespace_exists("db.nope")
    assert not catalog.namespace_exists("nope")


def test_create_existing_fails(catalog: Catalog) -> None:
    catalog.create_namespace("db", {"a": "1"})
    with pytest.raises(NamespaceAlreadyExistsError, match="db"):
        catalog.create_namespace("db")
    catalog.create_namespace_if_not_exists("db", {"a": "2"})
    assert catalog.namespace_properties("db") == {"a": "1"}


def test_child_makes_parent(catalog: Catalog) -> None:
    catalog.create_namespace("a.b.c")
    assert catalog.namespace_exists("a")
    assert catalog.namespace_exists("a.b")
    assert catalog.list_namespaces() == [("a",)]
    assert catalog.list_namespaces("a") == [("a", "b")]
    assert catalog.list_namespaces("a.b") == [("a", "b", "c")]
    with pytest.raises(NamespaceNotEmptyError, match=r"a\.b"):
        catalog.drop_namespace("a")
    catalog.drop_namespace("a.b.c")
    catalog.drop_namespace("a.b")
    catalog.drop_namespace("a")
    assert catalog.list_namespaces() == []


def test_properties(catalog: Catalog) -> None:
    catalog.create_namespace("db", {"owner": "ana", "comment": "x"})
    assert catalog.namespace_properties("db") == {"owner": "ana", "comment": "x"}
    catalog.update_namespace_properties("db", removals=["comment"], updates={"owner": "bo"})
    assert catalog.namespace_properties("db") == {"owner": "bo"}
    catalog.update_namespace_properties("db", updates={"retention": "7d"})
    catalog.update_namespace_properties("db", removals=["not-there"])
    assert catalog.namespace_properties("db") == {"owner": "bo", "retention": "7d"}
    catalog.update_namespace_properties("db", removals=["owner", "retention"])
    assert catalog.namespace_properties("db") == {}
    assert catalog.namespace_exists("db")  # a namespace without properties still exists


def test_properties_both_removed_and_updated(catalog: Catalog) -> None:
    catalog.create_namespace("db", {"k": "v"})
    with pytest.raises(ValidationError, match="k"):
        catalog.update_namespace_properties("db", removals=["k"], updates={"k": "w"})
    assert catalog.namespace_properties("db") == {"k": "v"}


def test_missing_namespace(catalog: Catalog) -> None:
    with pytest.raises(NoSuchNamespaceError, match="nope"):
        catalog.namespace_properties("nope")
    with pytest.raises(NoSuchNamespaceError):
        catalog.update_namespace_properties("nope", updates={"a": "b"})
    with pytest.raises(NoSuchNamespaceError):
        catalog.drop_namespace("nope")
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_tables("nope")
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_namespaces("nope")


def test_drop(catalog: Catalog) -> None:
    catalog.create_namespace("db", {"k": "v"})
    catalog.drop_namespace("db")
    assert not catalog.namespace_exists("db")
    catalog.create_namespace("db")  # can be created again, without the old properties
    assert catalog.namespace_properties("db") == {}


def test_drop_non_empty(catalog: Catalog, create_raw: Callable[..., Any]) -> None:
    create_raw(catalog, "db.events")
    with pytest.raises(NamespaceNotEmptyError, match="events"):
        catalog.drop_namespace("db")
    catalog.drop_table("db.events")
    catalog.drop_namespace("db")
    assert not catalog.namespace_exists("db")


def test_similar_names_stay_apart(catalog: Catalog) -> None:
    # "_" is a LIKE wildcard and SQLite's LIKE ignores case: neither may leak.
    catalog.create_namespace("a_b")
    catalog.create_namespace("axb.c")
    catalog.create_namespace("A")
    catalog.create_namespace("a.b")
    assert catalog.list_namespaces("a_b") == []
    assert catalog.list_namespaces("A") == []
    catalog.drop_namespace("a_b")
    catalog.drop_namespace("A")
    assert catalog.list_namespaces() == [("a",), ("axb",)]


@pytest.mark.parametrize("bad", [("a.b",), ("db", "x.y")])
def test_dotted_levels_rejected(catalog: Catalog, bad: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError, match="contain"):
        catalog.create_namespace(bad)


def test_empty_name_rejected(catalog: Catalog) -> None:
    with pytest.raises(ValidationError):
        catalog.create_namespace("db..x")


def _in_threads(n: int, work: Callable[[int], None]) -> list[BaseException]:
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_siblings_created_at_once(catalog: Catalog) -> None:
    # Each creates the shared parent "a" on the way; none may fail because of it.
    errors = _in_threads(6, lambda i: catalog.create_namespace(("a", f"b{i}")))
    assert errors == []
    assert catalog.list_namespaces("a") == [("a", f"b{i}") for i in range(6)]


def test_same_namespace_created_at_once(catalog: Catalog) -> None:
    errors = _in_threads(6, lambda i: catalog.create_namespace("db", {"by": str(i)}))
    assert len(errors) == 5
    assert all(isinstance(e, NamespaceAlreadyExistsError) for e in errors), errors
    assert set(catalog.namespace_properties("db")) == {"by"}
