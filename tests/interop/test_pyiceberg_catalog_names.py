"""A database that pyiceberg wrote under its own catalog name: neve, opened under
another name, says where the tables are and how to connect, instead of only that they do
not exist; opened under that name, it reads them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

import neve
from neve.errors import NoSuchNamespaceError, NoSuchTableError


def test_tables_under_another_catalog_name_are_pointed_out(tmp_path: Path) -> None:
    uri, wh = f"sqlite:///{tmp_path}/shared.db", tmp_path / "wh"
    theirs = SqlCatalog("default", uri=uri, warehouse=f"file://{wh}")
    theirs.create_namespace("db")
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    theirs.create_table("db.t", schema=data.schema).append(data)

    ours = neve.connect(uri, warehouse=str(wh))
    with pytest.raises(NoSuchTableError, match=r"catalog name 'default'.*name='default'"):
        ours.load_table("db.t")
    with pytest.raises(NoSuchNamespaceError, match=r"catalog name 'default'"):
        ours.list_tables("db")
    with pytest.raises(NoSuchTableError, match=r"list_tables\('db'\)"):  # truly absent
        ours.load_table("db.nothing")

    named = neve.connect(uri, warehouse=str(wh), name="default")
    assert named.list_tables("db") == [("db", "t")]
    assert named.load_table("db.t").scan().to_arrow().column("id").to_pylist() == [1, 2, 3]
