"""One engine, REST API and dashboard for this package, on a database of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pg import pg_conninfo
from tests.unit.dashboard.support import DashboardStack, start_dashboard

__all__ = ["board", "pg_conninfo"]


@pytest.fixture(scope="package")
def board(pg_conninfo: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DashboardStack]:
    with start_dashboard(pg_conninfo, tmp_path_factory.mktemp("dashboard")) as running:
        yield running
