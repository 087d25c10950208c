"""Shared test helpers: where the repository's files are; how `pytest -n` shares out the tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
WORKFLOWS = REPO / "workflows"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

SHARED_BY_PACKAGE = ("tests/infra/",)
"""Packages whose session fixtures are shared by many modules (tests/infra: the synthesized apps,
a CDK synth each): their tests all run in one worker, which synthesizes each app once."""


@pytest.fixture
def repo() -> Path:
    return REPO


def xdist_group(nodeid: str) -> str:
    """The tests that run in one worker, one after another: a module's, or a whole package's of
    `SHARED_BY_PACKAGE`."""
    path = nodeid.split("::", 1)[0]
    return next((p for p in SHARED_BY_PACKAGE if path.startswith(p)), path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under pytest-xdist (`make test` runs `pytest -n auto`): each group of `xdist_group` goes
    to one worker whole, as without xdist: its module-scoped fixtures (an engine, a moto context,
    a browser) are set up once. Each worker has a session of its own: its own databases
    (tests/pg.py), servers on ports of their own (port 0), its own browser.

    Workers take the groups in collection order as they become free, and each worker collects
    the groups with a test marked slow first (below): a long group started last would keep one
    worker busy after the others are done."""
    from xdist.scheduler import LoadScopeScheduling  # type: ignore  # untyped, maybe absent

    class ByGroup(LoadScopeScheduling):  # type: ignore[misc,unused-ignore]
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid)

    config.option.loadscopereorder = False  # not by size: in the order collected
    return ByGroup(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker: the groups with a slow test first (a stable sort: groups stay whole)."""
    if not hasattr(config, "workerinput"):
        return
    slow = {xdist_group(item.nodeid) for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: xdist_group(item.nodeid) not in slow)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Every test database dropped before the session (or the xdist worker) ends."""
    pg = sys.modules.get("tests.pg")
    if pg is not None:
        pg.finish()
