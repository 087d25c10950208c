"""One engine and REST app with the builder's routes for this package, on a database of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pg import pg_conninfo
from tests.unit.builder.support import BuilderStack, start_builder

__all__ = ["builder", "pg_conninfo"]


@pytest.fixture(scope="package")
def builder(pg_conninfo: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuilderStack]:
    with start_builder(pg_conninfo, tmp_path_factory.mktemp("builder")) as running:
        yield running
