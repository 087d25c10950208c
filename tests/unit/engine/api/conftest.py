"""One engine and one Step Functions endpoint per test module, driven through boto3 exactly as a
user's code would drive AWS. `pg_conninfo` is declared here again on purpose: this package gets a
fresh database of its own, which no engine of another test package ever runs on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pg import pg_conninfo
from tests.unit.engine.api.support import Endpoint, start_endpoint

__all__ = ["endpoint", "pg_conninfo"]


@pytest.fixture(scope="module")
def endpoint(pg_conninfo: str) -> Iterator[Endpoint]:
    with start_endpoint(pg_conninfo) as running:
        yield running
