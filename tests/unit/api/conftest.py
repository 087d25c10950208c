"""One engine and one REST API for this package, on a database of its own (`pg_conninfo` is
declared here again on purpose: no engine of another test package runs on it)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.pg import pg_conninfo
from tests.unit.api.support import Stack, start_stack

__all__ = ["client", "pg_conninfo", "stack"]


@pytest.fixture(scope="package")
def stack(pg_conninfo: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with start_stack(pg_conninfo, tmp_path_factory.mktemp("api")) as running:
        yield running


@pytest.fixture
def client(stack: Stack) -> Iterator[httpx.Client]:
    with stack.client() as http:
        yield http
