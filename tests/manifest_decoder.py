"""Planning with one manifest decoder for a while: ``NEVE_MANIFEST_DECODER`` set (and
restored after), and the process's decoded manifests dropped on the way in and out,
so the block decodes every manifest with the decoder it names."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from neve.planning.manifest_cache import manifest_cache


@contextmanager
def manifest_decoder(name: str) -> Iterator[None]:
    old = os.environ.get("NEVE_MANIFEST_DECODER")
    os.environ["NEVE_MANIFEST_DECODER"] = name
    manifest_cache().clear()
    try:
        yield
    finally:
        manifest_cache().clear()
        if old is None:
            os.environ.pop("NEVE_MANIFEST_DECODER", None)
        else:
            os.environ["NEVE_MANIFEST_DECODER"] = old
