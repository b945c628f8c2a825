"""What ``import neve`` brings with it: every process that uses neve pays for it (the
command, Spark's Python workers, each writer process), so what only one kind of catalog
or one command needs is imported where it is used."""

from __future__ import annotations

import json
import subprocess
import sys

#: Imported only by what needs them: httpx (and the click, rich and pygments its own
#: command line imports) by the REST catalog's client, pyspark by neve.spark, the
#: server by ``neve serve``, botocore by the server's vended credentials.
NOT_ON_IMPORT = ["httpx", "click", "rich", "pygments", "pyspark", "neve.server", "botocore"]


def _modules_after(statement: str) -> set[str]:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            f"{statement}; import json, sys; print(json.dumps(list(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_neve_leaves_what_it_does_not_need() -> None:
    loaded = _modules_after("import neve")
    assert "neve.catalog.rest" in loaded  # the REST catalog class is still importable
    assert sorted(m for m in NOT_ON_IMPORT if m in loaded) == []


def test_a_rest_catalog_client_imports_httpx_when_made() -> None:
    loaded = _modules_after(
        "from neve.catalog.rest_http import RestHttp; RestHttp('http://127.0.0.1:9', {})"
    )
    assert "httpx" in loaded
